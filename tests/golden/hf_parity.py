"""Golden measurements of Hugging Face's own classes built from the odd ModelConfigs of
tests/odd_configs.py (Llama, Mistral, Qwen2, GPT-2, BERT, T5), and the formulas' answers in the
same shape.

One record per config and dtype (fp32, bf16): the parameters, and at each workload the forward
and backward matmul FLOPs (eager attention, FlopCounterMode) and, where the model caches, the KV
cache after a prefill and GEN_TOKENS decode steps. Record again with
    PYTHONPATH=$PWD python -m tests.golden.hf_parity
"""

from __future__ import annotations

import dataclasses
from typing import Any

from costmodel.config import ModelConfig, Workload
from costmodel.estimation import Estimate
from tests.golden import fingerprint, write
from tests.odd_configs import odd_configs

NAME = "hf_parity"
WORKLOADS = ((2, 10, 7), (3, 13, 13))  # (batch, seq_len, decoder length of encoder-decoders)
DTYPES = ("fp32", "bf16")
GEN_TOKENS = 3
CASES = [(f"{cfg.name}-{dtype}", cfg, dtype) for cfg in odd_configs() for dtype in DTYPES]


def described(cfg: ModelConfig) -> dict[str, Any]:
    """The fields that make this config what it is: those that differ from ModelConfig's
    defaults (a field added later with a default does not make every record stale)."""
    defaults = {f.name: f.default for f in dataclasses.fields(ModelConfig) if f.init}
    return {name: value for name, value in cfg.to_dict().items() if value != defaults[name]}


def workload(cfg: ModelConfig, dtype: str, batch: int, seq_len: int, tgt_len: int) -> Workload:
    encoder_decoder = cfg.architecture == "encoder-decoder"
    # the GEN_TOKENS decode steps measured feed back all but the last of a generation of GEN_TOKENS + 1
    return Workload(seq_len=seq_len, batch=batch, dtype=dtype, gen_tokens=GEN_TOKENS + 1,
                    tgt_len=tgt_len if encoder_decoder else None)


def formula(cfg: ModelConfig, dtype: str) -> dict[str, Any]:
    """The estimate's answers, shaped as a golden record."""
    out: dict[str, Any] = {"config": fingerprint(described(cfg))}
    for batch, seq_len, tgt_len in WORKLOADS:
        estimate = Estimate(cfg, workload(cfg, dtype, batch, seq_len, tgt_len))
        out["params"] = estimate.total("params")
        row = {"flops_forward": estimate.total("flops_matmul"),
               "flops_backward": estimate.total("flops_matmul_backward")}
        if cfg.has_kv_cache:
            row["kv_cache"] = estimate.memory_numbers()["kv_cache"]
        out[f"b{batch}_n{seq_len}"] = row
    return out


def measure(cfg: ModelConfig, dtype: str) -> dict[str, Any]:
    """The class a user trains, built once under FakeTensorMode and measured, shaped as a golden
    record."""
    import torch

    from validate.hf_models import build_hf_model, fake_mode, make_inputs
    from validate.measure import count_parameters, kv_cache_bytes, matmul_flops

    out: dict[str, Any] = {"config": fingerprint(described(cfg))}
    with fake_mode():
        model = build_hf_model(cfg, "eager", {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype])
        out["params"] = count_parameters(model)
        for batch, seq_len, tgt_len in WORKLOADS:
            tgt = workload(cfg, dtype, batch, seq_len, tgt_len).tgt_len
            inputs = make_inputs(cfg, batch, seq_len, tgt_len=tgt, labels=cfg.family != "bert")
            flops = matmul_flops(model, inputs, backward=True)
            row = {"flops_forward": flops.forward, "flops_backward": flops.backward}
            if cfg.has_kv_cache:
                prompt = make_inputs(cfg, batch, seq_len, tgt_len=tgt)
                row["kv_cache"] = kv_cache_bytes(model, prompt, gen_tokens=GEN_TOKENS)
            out[f"b{batch}_n{seq_len}"] = row
    return out


if __name__ == "__main__":
    write(NAME, {name: measure(cfg, dtype) for name, cfg, dtype in CASES})
