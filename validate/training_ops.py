"""Counts the aten ops one eager training step of a Hugging Face model issues: what
kernel_facts.json "eager_training_ops" states, the host term of an eager training step in the
kernel model (costmodel/eager_ops.training_step_ops, kernel_time.host_bound_seconds).

The step is validate.measure's one_training_step, as benchmarks/gpu_check.py times it: the forward
with the loss (a causal LM's own loss from its labels; BertModel's the sum of its two outputs,
validate/compare.training_loss), backward, torch.optim.AdamW's step and zero_grad(set_to_none=True).
AdamW runs its foreach implementation (foreach=True: the default for CUDA tensors; a CPU's default
is the single-tensor loop, 212 ops a step against foreach's 54 in a two-layer Llama). The count is
the second step's (the first creates the optimizer's state) under a TorchDispatchMode that counts
every op reaching the dispatcher (validate/gpt_fast_ops.DispatchCounter), on torch 2.13 CPU.

What foreach issues: one dispatch per list for each of its nine _foreach ops, two profiler
record_function ops, the step's increment's scalar tensor (lift_fresh), and, because the step
counters stay on the host (capturable=False, the default on CUDA too), two
`_local_scalar_dense` a parameter tensor (`_get_value(step)` for each bias correction,
torch/optim/adam.py _multi_tensor_adam). So the optimizer's ops do grow with the number of
tensors, by 2 each: host-only scalar reads, counted here as ops like the rest (they sit in the
per-layer and per-step counts). zero_grad issues the two profiler ops.

The counts are per layer (a model of two layers less one of one, checked against three) and the
step's own (the embeddings, the final norm, the head or pooler, the loss, the optimizer's fixed
ops); the same at width 48 and 80 and at 8 and 13 tokens. At batch 1 a few copies are views
(contiguous on a tensor whose batch dimension is 1), so batch 1 and batch > 1 (counted at 2,
checked at 3) are stated apart. Tiny models of each family's transformers class with odd sizes.

    python -m validate.training_ops     # prints the counts kernel_facts.json states
"""

from __future__ import annotations

import json
from typing import Any

#: The families gpu_check runs, each from its preset with odd tiny sizes; Llama with as many
#: key/value heads as query heads (the 0.56B model gpu_check builds: repeat_kv is no op then).
FAMILIES = {"gpt2": "gpt2", "llama": "llama2-7b", "bert": "bert-base-uncased"}
ATTENTIONS = ("eager", "sdpa")
DTYPES = ("fp32", "bf16")
#: Token counts: (batch, seq_len) of the batch-1 count and of the batch > 1 count.
SHAPES = {"batch_1": (1, 8), "batch_many": (2, 8)}


def tiny_config(family: str, layers: int, width: int = 48) -> Any:
    """The family's preset at odd tiny sizes: 4 heads, an FFN of 2 * width + 5 (Llama) or
    4 * width + 3, a vocabulary of 99, `layers` layers."""
    from costmodel.presets import load_preset

    cfg = load_preset(FAMILIES[family])
    small = dict(name=f"{family}-tiny", vocab_size=99, d_model=width, n_heads=4, max_positions=64)
    if family == "llama":
        return cfg.replace(n_kv_heads=4, d_ff=2 * width + 5, n_decoder_layers=layers, **small)
    stack = "n_encoder_layers" if cfg.architecture == "encoder" else "n_decoder_layers"
    return cfg.replace(d_ff=4 * width + 3, **{stack: layers}, **small)


def step_count(family: str, layers: int, attention: str, dtype: str, batch: int, seq_len: int = 8,
               width: int = 48) -> int:
    """The ops of one training step (the second: the optimizer's state exists) of the tiny model."""
    import torch

    from validate.compare import TORCH_DTYPES, training_loss
    from validate.gpt_fast_ops import DispatchCounter
    from validate.hf_models import build_hf_model, make_inputs
    from validate.measure.memory import one_training_step

    cfg = tiny_config(family, layers, width)
    torch.manual_seed(0)
    model = build_hf_model(cfg, attention, TORCH_DTYPES[dtype])
    inputs = make_inputs(cfg, batch, seq_len, labels=cfg.head == "lm")
    loss = training_loss(cfg, "hf")
    optimizer = torch.optim.AdamW(model.parameters(), foreach=True)
    one_training_step(model, inputs, optimizer, loss)
    with DispatchCounter() as counter:
        one_training_step(model, inputs, optimizer, loss)
    return counter.count


def counts(family: str, attention: str, dtype: str) -> dict[str, dict[str, int]]:
    """{"batch_1": {"per_layer", "per_step"}, "batch_many": {...}} for one family, attention and dtype."""
    out = {}
    for name, (batch, seq_len) in SHAPES.items():
        one, two = (step_count(family, layers, attention, dtype, batch, seq_len) for layers in (1, 2))
        out[name] = {"per_layer": two - one, "per_step": one - (two - one)}
    return out


def all_counts() -> dict[str, dict[str, dict[str, dict[str, int]]]]:
    """Every family's counts: {family: {attention: {dtype: counts}}}."""
    return {family: {attention: {dtype: counts(family, attention, dtype) for dtype in DTYPES}
                     for attention in ATTENTIONS} for family in FAMILIES}


if __name__ == "__main__":
    print(json.dumps(all_counts(), indent=1))
