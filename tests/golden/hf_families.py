"""Golden measurements of the odd family configs (tests/family_odd_configs.py), and the formulas'
answers in the same shape.

One record per case: the parameters, and at each workload (b, n) the forward and backward matmul
FLOPs, the bytes saved for backward in bf16 and in fp32, and the KV cache after the prefill and
after each of GEN_TOKENS decode steps. `measure(config)` builds the class a user trains once per
dtype and measures everything in one training pass per workload (validate.measure.matmul_flops
with saved=True); `formula(config)` asks the estimate for the same numbers. The fast tier checks
formula == the golden file; the slow tier re-measures and checks measurement == the golden file,
so a stale file fails.

Record again (about 5 minutes on 2 cores) after a change to the configs or to the pinned torch or
transformers:
    PYTHONPATH=$PWD python -m tests.golden.hf_families
"""

from __future__ import annotations

import contextlib
import copy
from typing import Any

from costmodel.config import Workload
from costmodel.estimation import Estimate
from costmodel.hf import from_hf_config
from tests.family_odd_configs import MOE_FAMILIES, odd_family_cases
from tests.golden import fingerprint, write

NAME = "hf_families"
WORKLOADS = ((2, 10), (1, 7))  # (b, n): b = 1 keeps some views; n = 10 passes every window
GEN_TOKENS = 3
CASES = odd_family_cases()


def estimate(config: dict, batch: int, seq_len: int, dtype: str, gen_tokens: int = 0) -> Estimate:
    cfg = from_hf_config(config, name="odd")
    return Estimate(cfg, Workload(seq_len=seq_len, batch=batch, dtype=dtype, gen_tokens=gen_tokens))


def formula(config: dict[str, Any]) -> dict[str, Any]:
    """The estimate's answers, shaped as a golden record."""
    out: dict[str, Any] = {"config": fingerprint(config),
                           "params": estimate(config, 1, 4, "bf16").total("params")}
    for b, n in WORKLOADS:
        bf16, fp32 = estimate(config, b, n, "bf16"), estimate(config, b, n, "fp32")
        out[f"b{b}_n{n}"] = {
            "flops_forward": bf16.total("flops_matmul"),
            "flops_backward": bf16.total("flops_matmul_backward"),
            "saved_bf16": bf16.total("saved_bytes"),
            "saved_fp32": fp32.total("saved_bytes"),
            # t decode steps (measured) feed back all but the last of a generation of t + 1 tokens
            "kv_cache": [estimate(config, b, n, "bf16", t + 1).memory_numbers()["kv_cache"]
                         for t in range(GEN_TOKENS + 1)],
        }
    return out


@contextlib.contextmanager
def built(config: dict, dtype: Any):
    """The class a user trains, built from the dict in train mode: under FakeTensorMode, except
    experts in fp32 (real tensors: the fake grouped_mm takes only bf16). The class gets a copy:
    transformers rewrites some fields of the dict it is given (rope_scaling)."""
    import torch

    from validate.hf_families import build_hf_from_dict
    from validate.hf_models import fake_mode

    real = config["model_type"] in MOE_FAMILIES and dtype == torch.float32
    with contextlib.nullcontext() if real else fake_mode():
        torch.manual_seed(0)
        yield build_hf_from_dict(copy.deepcopy(config), dtype=dtype)


def measure(config: dict[str, Any]) -> dict[str, Any]:
    """Hugging Face's class measured, shaped as a golden record: built once in bf16 (parameters,
    FLOPs and saved bytes in one training pass per workload, then the cache in eval mode) and
    once in fp32 (saved bytes)."""
    import torch

    from validate.hf_families import family_inputs
    from validate.measure import (
        cache_after_each_step, count_parameters, matmul_flops, saved_activation_bytes,
    )

    out: dict[str, Any] = {"config": fingerprint(config)}
    with built(config, torch.bfloat16) as model:
        out["params"] = count_parameters(model)
        for b, n in WORKLOADS:
            flops = matmul_flops(model, family_inputs(config, b, n, labels=True), backward=True,
                                 saved=True)
            out[f"b{b}_n{n}"] = {"flops_forward": flops.forward, "flops_backward": flops.backward,
                                 "saved_bf16": flops.saved.total_bytes}
        model.eval()
        for b, n in WORKLOADS:
            out[f"b{b}_n{n}"]["kv_cache"] = cache_after_each_step(
                model, family_inputs(config, b, n), GEN_TOKENS)
    with built(config, torch.float32) as model:  # saved bytes only: a forward, no FLOP counter
        for b, n in WORKLOADS:
            out[f"b{b}_n{n}"]["saved_fp32"] = saved_activation_bytes(
                model, family_inputs(config, b, n, labels=True)).total_bytes
    for b, n in WORKLOADS:  # the formula's key order, so the file reads alike
        row = out[f"b{b}_n{n}"]
        out[f"b{b}_n{n}"] = {key: row[key] for key in
                             ("flops_forward", "flops_backward", "saved_bf16", "saved_fp32", "kv_cache")}
    return out


if __name__ == "__main__":
    write(NAME, {name: measure(config) for name, config in CASES})
