"""Measured side of costmodel/layout/fsdp_pipeline.py (FINDINGS, wt28_fsdppp). Count FSDP2's all-gathers (fsdp.all_gather_copy_in, one per unit gather) and reduce-scatters
(fsdp.chunk_cat, one per unit reduce) in one step of torch's pipelining: 4 gloo ranks, pp 2 x dp 2,
each local stage 2 Linear units + the stage module as root, reshard_after_forward False.
Run: python validate/distributed/fsdp_pipeline.py LOCAL_STAGES MICROBATCHES (1 4: Schedule1F1B; 4 4: interleaved)."""
import os, sys
from collections import Counter
import torch, torch.distributed as dist, torch.multiprocessing as mp
from torch.utils._python_dispatch import TorchDispatchMode
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.distributed.pipelining import PipelineStage
from torch.distributed.pipelining.schedules import Schedule1F1B, ScheduleInterleaved1F1B

class Count(TorchDispatchMode):
    def __init__(self): super().__init__(); self.c = Counter()
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        ns, name = func.namespace, func.__name__.split(".")[0]
        if ns == "fsdp": self.c[name] += 1
        return func(*args, **(kwargs or {}))

def run(rank, world, local, m, out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(29531 + local))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.set_num_threads(1); torch.manual_seed(0)
    mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("pp", "dp"))
    pp_rank = mesh["pp"].get_local_rank()
    stages, mods = [], []
    for v in range(local):
        idx = v * 2 + pp_rank
        mod = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.Linear(16, 16))
        for layer in mod: fully_shard(layer, mesh=mesh["dp"], reshard_after_forward=False)
        fully_shard(mod, mesh=mesh["dp"], reshard_after_forward=False)
        stages.append(PipelineStage(mod, idx, 2 * local, torch.device("cpu"), group=mesh["pp"].get_group()))
    loss = lambda y, t: ((y - t) ** 2).mean()
    sch = (Schedule1F1B(stages[0], m, loss_fn=loss) if local == 1
           else ScheduleInterleaved1F1B(stages, m, loss_fn=loss))
    x, t = torch.randn(m * 2, 16), torch.randn(m * 2, 16)
    def step():
        args = (x,) if pp_rank == 0 else ()
        kw = dict(target=t, losses=[]) if pp_rank == 1 else {}  # the last stage (2 local - 1) is on pp rank 1
        sch.step(*args, **kw)
    step()  # the first step runs shape inference
    cm = Count()
    with cm: step()
    out.put((rank, local, m, dict(cm.c)))
    dist.destroy_process_group()

if __name__ == "__main__":
    local, m = int(sys.argv[1]), int(sys.argv[2])
    q = mp.get_context("spawn").Queue()
    mp.start_processes(run, args=(4, local, m, q), nprocs=4, join=True, start_method="spawn")
    for _ in range(4): print(q.get())
