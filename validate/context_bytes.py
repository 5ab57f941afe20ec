"""Counts the bytes one eager decoding step of Hugging Face generate moves for each cached key
(the part of a step that grows with the context), from the release first on the path: 4.51.3
(Qwen3 under flash_attention_2, the qwen3-speed-hf rows), 4.46.0 (Qwen2 under its
Qwen2FlashAttention2, the qwen2.5-speed-hf rows) or the installed 5.x (sdpa). What it settles:
whether anything but the DynamicCache's torch.cat (and 4.46's repeat_kv) reads or writes bytes in
proportion to the context each step: the mask building, generate's bookkeeping of the ids and
the attention mask, the position ids, the stopping criteria.

A TorchDispatchMode sums, over every aten op that reaches the dispatcher, the bytes of its tensor
inputs and outputs: a view (an op whose result aliases an input without writing it:
transpose, expand, slice...) moves none; an input broadcast by a stride of 0 (expand) counts
its distinct elements once; an in-place op reads its inputs and writes its result. A step's bytes
are the difference between generate(max_new_tokens=K_LONG) and K_SHORT over the steps between
(validate/generate_ops.py's method), at two prompt lengths: the difference over the extra prompt
tokens is the bytes a step moves per cached key, per layer the difference between models of two
layers and one, the rest the step's own (generate's loop and the model outside its layers).

The flash kernel does not run on a CPU (flash_attn needs CUDA): under 4.51.3 and 4.46.0 it is
stood in by one clone of the query (as validate/generate_ops_446.py does), and the keys and values
it is handed are recorded (FLASH_READS: bytes per key and layer, what the kernel reads); the
stand-in reads none of them itself. Greedy, as validate/generate_ops.py's counts: the speed
benchmarks' checkpoints sample (top-k, top-p: over the vocabulary, not the context) and Qwen2.5's
adds a repetition penalty over the ids (4.46.0 generation/logits_process.py
RepetitionPenaltyLogitsProcessor: a gather, a where and a scatter of one fp32 score per id, about
70 B a token of the context a step; not counted here).

Run with a release first on the path (validate/generate_ops_451.py says how to unpack a wheel):
`PYTHONPATH=DIR:$PWD python -m validate.context_bytes [flash|sdpa]` (flash: the stood-in call of the
rows; the installed 5.x runs sdpa either way).
"""

from __future__ import annotations

import collections
from typing import Any

#: Prompt lengths whose steps are compared (the tiny model's positions stop at 64).
PROMPTS = (8, 40)

#: Views whose schema declares no alias (reshape's copy-free result: _unsafe_view).
VIEWS = ("_unsafe_view", "_reshape_alias")
#: Ops that take a tensor for its dtype and device only (they write their result, read nothing).
READS_NOTHING = ("new_ones", "new_zeros", "new_empty", "new_full", "empty_like", "zeros_like", "ones_like",
                 "full_like")
#: Ops that read only the source elements their indices select (the first argument is the source).
READS_SELECTED = ("index", "index_select", "gather")
#: Ops that write only the elements their indices select (a static cache's write of the new token,
#: `cache[:, :, pos] = k`): the indices and the values read, the values written, not the whole target.
WRITES_SELECTED = ("index_put_", "index_put")


def distinct_bytes(tensor: Any) -> int:
    """Bytes of a tensor's distinct elements: a dimension broadcast by a stride of 0 counts once."""
    import math

    repeated = math.prod(size for size, stride in zip(tensor.shape, tensor.stride()) if stride == 0 and size > 1)
    return tensor.numel() // max(repeated, 1) * tensor.element_size()


class ByteCounter:
    """A TorchDispatchMode (built lazily: torch is imported on use) summing each op's bytes, and
    the bytes by op name."""

    def __new__(cls):
        from torch.utils._python_dispatch import TorchDispatchMode
        from torch.utils._pytree import tree_leaves

        import torch

        class Mode(TorchDispatchMode):
            def __init__(self):
                super().__init__()
                self.bytes = 0
                self.by_op: collections.Counter = collections.Counter()

            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                out = func(*args, **(kwargs or {}))
                returns = func._schema.returns
                name = func._schema.name.split("::")[-1]
                if name in VIEWS or (returns and all(r.alias_info is not None and not r.alias_info.is_write
                                                     for r in returns)):
                    return out  # a view: no bytes
                tensors = [t for t in tree_leaves((args, kwargs or {})) if isinstance(t, torch.Tensor)]
                outs = [t for t in tree_leaves(out) if isinstance(t, torch.Tensor)]
                written = sum(distinct_bytes(t) for t in outs)
                if name in READS_NOTHING:
                    moved = written
                elif name in READS_SELECTED:  # the indices, and as many source elements as it writes
                    moved = sum(distinct_bytes(t) for t in tensors[1:]) + 2 * written
                elif name in WRITES_SELECTED:  # the indices and values read, the values written
                    moved = sum(distinct_bytes(t) for t in tensors[1:]) + distinct_bytes(tensors[-1])
                else:
                    moved = sum(distinct_bytes(t) for t in tensors) + written
                self.bytes += moved
                self.by_op[str(func)] += moved
                return out

        return Mode()


#: Bytes per cached key and layer the stood-in flash call is handed (its K and V), filled by
#: the stand-in; the real kernel reads them.
FLASH_READS: list[int] = []


def step_bytes(model: Any, prompt: int, long: int, short: int) -> tuple[float, collections.Counter]:
    """Bytes per decoding step of model.generate over a `prompt`-token prompt (greedy), and by op."""
    import torch

    from validate import generate_ops as g

    ids = torch.tensor([[1 + (i * 7) % (g.SIZES["vocab_size"] - 2) for i in range(prompt)]])
    runs = {}
    for k in (short, long):
        with torch.no_grad(), ByteCounter() as mode:
            out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=k, do_sample=False)
        if out.shape[1] != prompt + k:
            raise RuntimeError(f"generate stopped after {out.shape[1] - prompt} of {k} tokens.")
        runs[k] = (mode.bytes, mode.by_op)
    steps = long - short
    by_op = collections.Counter({op: (runs[long][1][op] - runs[short][1].get(op, 0)) / steps for op in runs[long][1]})
    return (runs[long][0] - runs[short][0]) / steps, by_op


def stand_in_flash() -> None:
    """flash_attn_func replaced by one clone of the query, recording the bytes of the keys and
    values it is handed (4.51.3 and 4.46.0 import it at module level only where flash_attn is
    installed)."""
    import torch
    import transformers.modeling_flash_attention_utils as flash_utils

    def flash(q, k, v, *args, **kwargs):
        FLASH_READS.append((distinct_bytes(k) + distinct_bytes(v)) // k.shape[1])
        return torch.ops.aten.clone(q)

    flash_utils.flash_attn_func = flash
    flash_utils._flash_supports_window_size = False


def tiny(layers: int, release: str, attention: str) -> Any:
    """The tiny model of validate/generate_ops.py (2 KV heads of 4, bf16) as the release runs the
    rows (`attention` "flash": 4.46.0's Qwen2FlashAttention2, 4.51.3's Qwen3 under
    flash_attention_2, the call stood in), or under sdpa (Qwen2 under 4.46.0, else Qwen3)."""
    from validate import generate_ops as g

    if attention == "sdpa":
        return g.tiny_model(layers, 2, "sdpa", "bf16", "qwen2" if release == "4.46.0" else "qwen3")
    if release == "4.46.0":
        from transformers.models.qwen2 import modeling_qwen2

        stand_in_flash()
        import transformers.modeling_flash_attention_utils as flash_utils
        modeling_qwen2._flash_attention_forward = flash_utils._flash_attention_forward
        model = g.tiny_model(layers, 2, "sdpa", "bf16", "qwen2")
        for layer in model.model.layers:
            layer.self_attn.__class__ = modeling_qwen2.Qwen2FlashAttention2
            layer.self_attn._flash_attn_uses_top_left_mask = False
        model.config._attn_implementation = "flash_attention_2"
        return model
    if release == "4.51.3":
        stand_in_flash()
        model = g.tiny_model(layers, 2, "sdpa", "bf16", "qwen3")
        model.config._attn_implementation = "flash_attention_2"
        return model
    return g.tiny_model(layers, 2, "sdpa", "bf16", "qwen3")


def counts(attention: str = "flash") -> dict[str, Any]:
    """Bytes a step moves per cached key: per layer, the step's own, what flash is handed per key
    and layer, and the ops whose bytes grow with the context (per key, per layer and per step)."""
    import transformers

    from validate import generate_ops as g

    release = transformers.__version__
    slope = {}
    ops = {}
    for layers in (1, 2):
        model = tiny(layers, release, attention)
        runs = {p: step_bytes(model, p, g.K_LONG, g.K_SHORT) for p in PROMPTS}
        (few, few_ops), (many, many_ops) = runs[PROMPTS[0]], runs[PROMPTS[1]]
        span = PROMPTS[1] - PROMPTS[0]
        slope[layers] = (many - few) / span
        ops[layers] = {op: (many_ops[op] - few_ops.get(op, 0)) / span for op in many_ops
                       if many_ops[op] != few_ops.get(op, 0)}
    per_layer = slope[2] - slope[1]
    layer_ops = {op: ops[2].get(op, 0) - ops[1].get(op, 0) for op in set(ops[1]) | set(ops[2])}
    step_ops = {op: ops[1].get(op, 0) - layer_ops.get(op, 0) for op in ops[1]}
    flash = sorted(set(FLASH_READS))
    return {"transformers": release, "attention": attention, "per_layer": per_layer, "per_step": slope[1] - per_layer,
            "flash_handed_per_key_layer": flash[-1] if flash else None,
            "per_layer_ops": {op: b for op, b in sorted(layer_ops.items()) if b},
            "per_step_ops": {op: b for op, b in sorted(step_ops.items()) if b}}


if __name__ == "__main__":  # python -m validate.context_bytes [flash|sdpa]
    import json
    import sys

    print(json.dumps(counts(*sys.argv[1:2]), indent=1))
