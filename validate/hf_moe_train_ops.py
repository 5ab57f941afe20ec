"""Counts the aten ops one training forward and backward of transformers 4.51.3's Qwen2MoeSparseMoeBlock and
Qwen3MoeSparseMoeBlock dispatch per routed expert (kernel_facts.json "hf_moe_training_loop";
costmodel/layout/hf_moe_loop.py): the block loops over every expert (`for expert_idx in range(self.num_experts)`,
models/qwen2_moe/modeling_qwen2_moe.py lines 619-631, models/qwen3_moe/modeling_qwen3_moe.py the same loop), each
with torch.where(expert_mask[expert_idx]) (aten nonzero, a device-to-host sync on a GPU), its own gate, up and
down products at its own tokens and an index_add_. Counted on the CPU under a TorchDispatchMode on one block of a
tiny config (hidden 64, expert width 32, top-2, 256 tokens: every expert is hit), bf16, at 4 and at 8 experts:
per expert the difference over 4 experts more; forward (with autograd recording, as training runs it) and the
backward (loss = sum of the block's output) separately; nonzero counted as the syncs.

transformers 4.51.3 is not installed: unpack its wheel as validate/generate_ops_451.py says and put the folder
first: `PYTHONPATH=DIR:$PWD python -m validate.hf_moe_train_ops`. It refuses another version."""

from __future__ import annotations

import collections
import sys

EXPERTS = (4, 8)
TOKENS = 256
#: the aten ops one more expert adds, as counted (both families alike); kernel_facts.json "hf_moe_training_loop"
PER_EXPERT = {
    "forward": {"index": 2, "index_add_": 1, "mm": 3, "mul": 2, "nonzero": 1, "select": 1, "silu": 1, "t": 3,
                "unbind": 1, "unsqueeze": 2, "view": 1},
    "backward": {"add": 3, "detach": 3, "expand": 1, "index_put": 2, "index_select": 1, "mm": 6, "mul": 4,
                 "new_zeros": 2, "silu_backward": 1, "squeeze": 2, "sum": 1, "t": 12, "view": 1}}
#: ops that launch no kernel on a GPU (views and metadata); nonzero's count and copy to the host taken as one kernel
NO_KERNEL = frozenset({"select", "unbind", "unsqueeze", "view", "t", "detach", "expand", "squeeze"})


def kernels(side: str) -> int:
    """The GPU kernels of one more expert's ops (PER_EXPERT less the views)."""
    return sum(n for name, n in PER_EXPERT[side].items() if name not in NO_KERNEL)


def counted(family: str, experts: int) -> dict[str, collections.Counter]:
    """aten ops by name in the forward and the backward of one MoE block of `experts` experts."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    class Names(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.names: collections.Counter = collections.Counter()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.names[str(func.overloadpacket.__name__)] += 1
            return func(*args, **(kwargs or {}))

    torch.manual_seed(0)
    if family == "qwen2_moe":
        from transformers.models.qwen2_moe.configuration_qwen2_moe import Qwen2MoeConfig as Config
        from transformers.models.qwen2_moe.modeling_qwen2_moe import Qwen2MoeSparseMoeBlock as Block
        extra = {"shared_expert_intermediate_size": 32}
    else:
        from transformers.models.qwen3_moe.configuration_qwen3_moe import Qwen3MoeConfig as Config
        from transformers.models.qwen3_moe.modeling_qwen3_moe import Qwen3MoeSparseMoeBlock as Block
        extra = {}
    config = Config(hidden_size=64, moe_intermediate_size=32, num_experts=experts, num_experts_per_tok=2, **extra)
    block = Block(config).to(torch.bfloat16)
    x = torch.randn(1, TOKENS, 64, dtype=torch.bfloat16, requires_grad=True)
    forward, backward = Names(), Names()
    with forward:
        out, _ = block(x)
    loss = out.float().sum()
    with backward:
        loss.backward()
    return {"forward": forward.names, "backward": backward.names}


def per_expert(family: str) -> dict[str, tuple[int, int, int]]:
    """(ops per expert, ops at 4 experts less 4 x per expert, syncs per expert) for forward and backward."""
    low, high = (counted(family, e) for e in EXPERTS)
    out = {}
    for side in ("forward", "backward"):
        a, b = sum(low[side].values()), sum(high[side].values())
        each, rest = divmod(b - a, EXPERTS[1] - EXPERTS[0])
        assert rest == 0, (family, side, a, b)
        sync = (high[side]["nonzero"] - low[side]["nonzero"]) // (EXPERTS[1] - EXPERTS[0])
        out[side] = (each, a - EXPERTS[0] * each, sync)
        diff = {k: (high[side][k] - low[side][k]) // 4 for k in high[side] if high[side][k] != low[side][k]}
        print(family, side, out[side], dict(sorted(diff.items())))
        if diff != PER_EXPERT[side]:
            raise AssertionError(f"{family} {side}: counted {diff}, PER_EXPERT states {PER_EXPERT[side]}")
    return out


def main() -> int:
    import transformers

    if transformers.__version__ != "4.51.3":
        print(f"error: transformers 4.51.3 must come first on the path, found {transformers.__version__}.",
              file=sys.stderr)
        return 2
    for family in ("qwen2_moe", "qwen3_moe"):
        per_expert(family)
    return 0


if __name__ == "__main__":
    sys.exit(main())
