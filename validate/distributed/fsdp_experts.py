"""Expert parallelism under FSDP2 measured, as torchtitan wraps it: the experts' own fully_shard over
the ranks that hold the same experts (dp_shard_mod_ep), the rest over all ranks, on gloo.

torchtitan's apply_fsdp (torchtitan/models/llama4/infra/parallelize.py; used by deepseek_v3/infra/
parallelize.py at 3e3a19f): with ep > 1 the routed experts, already EP-sharded on dim 0 (E / ep a
rank), get fully_shard(experts, mesh=dp_mod_ep_mesh, reshard_after_forward=...,
shard_placement_fn=Shard(1) when dp_mod_ep_mesh.size() * ep_degree > num_experts); then the block
(here: the router) fully_shard over the whole data-parallel mesh. The mesh is (dp / ep, ep), the ep
ranks neighbours (torchtitan's dp_shard_mod_ep x dp_shard_in_ep order).

measure_fsdp_experts(rank, world, case, ep) runs one forward and backward of
validate/distributed/experts.py's all-to-all layer under that wrapping and returns every
collective's payload by group ("ep": the token exchange, "edp": the experts' all-gathers and
reduce-scatters, "dp": the router's) and its EP group's tokens per expert (the model's --expert-load:
each group routes its own tokens).
"""

from __future__ import annotations

from dataclasses import asdict

import torch
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor import Shard

from .comm import CommRecorder
from .experts import ExpertCase, ExpertParallelMoE, GroupedExperts, recorded_step


def measure_fsdp_experts(rank: int, world_size: int, case: ExpertCase, ep: int) -> dict:
    edp = world_size // ep
    mesh = init_device_mesh("cpu", (edp, ep), mesh_dim_names=("dp_shard_mod_ep", "ep"))
    world = init_device_mesh("cpu", (world_size,), mesh_dim_names=("dp",))
    torch.manual_seed(case.seed)  # the same router on every rank
    layer = ExpertParallelMoE(case, mesh["ep"].get_group())
    torch.manual_seed(case.seed + 1 + rank % ep)  # the same experts on the ranks that share them
    layer.experts = GroupedExperts(layer.local, case.d, case.d_x)
    dim1 = edp * ep > case.experts
    fully_shard(layer.experts, mesh=mesh["dp_shard_mod_ep"], reshard_after_forward=True,
                shard_placement_fn=(lambda param: Shard(1)) if dim1 else None)
    fully_shard(layer, mesh=world, reshard_after_forward=True)
    torch.manual_seed(case.seed + 100 + rank)  # each rank its own tokens
    x = torch.randn(case.batch, case.seq_len, case.d, requires_grad=True)
    recorder = CommRecorder({"ep": mesh["ep"].get_group(), "edp": mesh["dp_shard_mod_ep"].get_group(),
                             "dp": world.get_group()})
    counts = recorded_step(recorder, layer, x, group=mesh["ep"].get_group())  # tokens per expert over the EP group
    records = [{"phase": r.phase, "kind": r.kind, "payload": r.payload_bytes, "dtype": r.dtype,
                "group": r.group} for r in recorder.records]
    return {"case": asdict(case), "ep": ep, "dim1": dim1, "records": records, "counts": counts.tolist()}
