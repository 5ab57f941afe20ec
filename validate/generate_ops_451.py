"""Counts the aten ops and the host syncs of one decoding step of Qwen3-MoE under transformers 4.51.3
(kernel_facts.json "eager_step_ops", the entry "transformers-4.51"): its Qwen3MoeSparseMoeBlock loops
over every routed expert (`for expert_idx in range(self.num_experts)`, models/qwen3_moe/
modeling_qwen3_moe.py lines 252-289; the same in 4.52.4; 4.53.0 loops over the hit experts, 5.x
runs grouped_mm), each with a torch.where (aten nonzero: its output's size is read on the host,
a device-to-host sync on a GPU). The counts grow by the same ops for every expert, so they are
counted as validate/generate_ops.py counts 5.24's (generate's steps between 3 and 7 new tokens,
per layer the difference between one and two layers, sdpa, bf16, 2 KV heads of 4), at 4 and at 8
experts: per expert the difference over 4 experts more, per layer the rest.

transformers 4.51.3 is not installed: unpack its wheel (`pip download transformers==4.51.3 --no-deps
-d DIR`, unzip) to a folder, blank its dependency check (dependency_versions_check.py's two
require_version calls: tokenizers and huggingface_hub are newer here) and put the folder first:
`PYTHONPATH=DIR:$PWD python -m validate.generate_ops_451`. It refuses another version."""

from __future__ import annotations

from typing import Any

EXPERTS = (4, 8)


def counted(layers: int, experts: int) -> tuple[float, dict[str, float]]:
    """Ops per decoding step (all, and by aten op name) of a tiny qwen3_moe of `layers` layers and
    `experts` experts (validate/generate_ops.py's sizes), sdpa, bf16, 2 KV heads of 4."""
    import collections

    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    from validate import generate_ops as g

    class Names(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.names: collections.Counter = collections.Counter()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.names[str(func)] += 1
            return func(*args, **(kwargs or {}))

    g.FAMILIES["qwen3_moe"] = dict(g.FAMILIES["qwen3_moe"], num_experts=experts)
    model = g.tiny_model(layers, 2, "sdpa", "bf16", "qwen3_moe")
    ids = torch.tensor([g.PROMPT])
    runs = {}
    for k in (g.K_SHORT, g.K_LONG):
        with torch.no_grad(), Names() as mode:
            model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=k, do_sample=False)
        runs[k] = mode.names
    steps = g.K_LONG - g.K_SHORT
    names = {name: (runs[g.K_LONG][name] - runs[g.K_SHORT].get(name, 0)) / steps for name in runs[g.K_LONG]}
    return sum(names.values()), names


#: The ops F.one_hot issues on a CPU only (its range check: aten/src/ATen/native/Onehot.cpp reads
#: self.min() and self.max() with .item() where the device is not CUDA, "rely on device asserts from
#: scatter to avoid sync here"): the router's one_hot a layer; on a GPU the layer issues these fewer.
CPU_ONLY = ("aten.aminmax.default", "aten._local_scalar_dense.default")


def counts() -> dict[str, Any]:
    """per_layer (without the experts, as a GPU issues it: the CPU's count less CPU_ONLY's ops a
    layer), per_expert, per_step and the syncs (nonzero) an expert."""
    import transformers

    if transformers.__version__ != "4.51.3":
        import sys

        print(f"error: transformers 4.51.3 must come first on the path, found {transformers.__version__}.", file=sys.stderr)
        raise SystemExit(2)
    few, many = EXPERTS
    runs = {(layers, e): counted(layers, e) for layers in (1, 2) for e in EXPERTS}
    per_layer = {e: runs[2, e][0] - runs[1, e][0] for e in EXPERTS}
    per_expert = (per_layer[many] - per_layer[few]) / (many - few)
    one, two = runs[1, many][1], runs[2, many][1]
    syncs = ((two.get("aten.nonzero.default", 0) - one.get("aten.nonzero.default", 0)) / many)
    cpu_only = sum(two.get(name, 0) - one.get(name, 0) for name in CPU_ONLY)
    return {"per_layer": per_layer[few] - per_expert * few - cpu_only, "per_expert": per_expert,
            "per_step": runs[1, few][0] - per_layer[few], "syncs_per_expert": syncs, "cpu_only_per_layer": cpu_only}


if __name__ == "__main__":
    import json

    print(json.dumps(counts()))
