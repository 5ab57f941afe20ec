"""The caches that made `published` faster (wt46_fastpub, validate/FINDINGS.md) return what a fresh
computation returns, for every input they are keyed on: a cache that handed one row's figure to another
would move a published ratio without any formula changing."""

import numpy as np
import pytest

from costmodel.api import load_model
from costmodel.config import ConfigError, Workload
from costmodel.decode_sums import Rates, StepSums, step_sums
from costmodel.evaluate import Sweep
from costmodel.hardware import load_hardware
from costmodel.roofline import Roofline
from costmodel.roofline_model import crossover_terms
from costmodel.tree import CostModel


def test_crossover_cache_keys_model_dtype_context_and_rates():
    """decode_crossover_batch through crossover_terms' cache, interleaving models, dtypes, contexts and
    machines, equals each figure computed with the cache emptied first, bit for bit; and the figures
    differ where their inputs do (a stale entry would repeat one)."""
    h100, a100 = "h100-sxm", "a100-80gb"
    cases = [(name, hw, dtype, context) for name in ("llama2-7b", "mixtral-8x7b") for hw in (h100, a100)
             for dtype in ("bf16", "fp32") for context in (None, 1, 64)]

    def crossover(name, hw, dtype, context):
        return Roofline(load_model(name), load_hardware(hw), dtype, attention="flash").decode_crossover_batch(context)

    cached = [crossover(*case) for case in cases]
    fresh = []
    for case in cases:
        crossover_terms.cache_clear()
        fresh.append(crossover(*case))
    assert cached == fresh
    assert len(set(cached)) > len(cases) // 2  # weights-only and context 1 may agree; nothing else does
    by_case = dict(zip(cases, cached))
    assert by_case[("llama2-7b", h100, "bf16", 1)] != by_case[("llama2-7b", h100, "fp32", 1)]
    assert by_case[("llama2-7b", h100, "bf16", 1)] != by_case[("llama2-7b", a100, "bf16", 1)]
    assert by_case[("llama2-7b", h100, "bf16", 64)] != by_case[("llama2-7b", h100, "bf16", 1)]


def test_step_sums_shared_per_config_and_options():
    """step_sums hands one StepSums per (config, phase, attention, cache, mla), and its seconds are a
    fresh StepSums' exactly."""
    cfg = load_model("llama2-7b")
    assert step_sums(cfg, "decode", "flash", "dynamic") is step_sums(cfg, "decode", "flash", "dynamic")
    assert step_sums(cfg, "decode", "flash", "dynamic") is not step_sums(cfg, "rerun", "flash", "dynamic")
    other = cfg.replace(n_decoder_layers=cfg.n_decoder_layers + 1)
    assert step_sums(other, "decode", "flash", "dynamic") is not step_sums(cfg, "decode", "flash", "dynamic")
    rates = Rates(989e12, 67e12, 3.35e12, 5e-6)
    workload = {"batch": 8, "source_len": 1, "bytes_per_element": 2}
    for model in (cfg, other):
        for phase in ("decode", "rerun"):
            assert (step_sums(model, phase, "flash", "dynamic").seconds(100, 2100, rates, **workload)
                    == StepSums(model, phase, "flash", "dynamic").seconds(100, 2100, rates, **workload))
    assert (step_sums(other, "decode", "flash", "dynamic").seconds(100, 2100, rates, **workload)
            > step_sums(cfg, "decode", "flash", "dynamic").seconds(100, 2100, rates, **workload))


def test_sweep_results_read_only_and_broadcast():
    """A Sweep's results: float64 of the sweep's shape, read-only, a constant broadcast over the points."""
    cfg = load_model("gpt2")
    model = CostModel(cfg)
    sweep = Sweep(model, {"flops": model.total("flops_matmul"), "params": model.total("params")})
    out = sweep(n=np.array([128, 256, 512]), b=2)
    assert out["flops"].shape == out["params"].shape == (3,)
    assert out["flops"].dtype == np.float64 and not out["flops"].flags.writeable
    assert not out["params"].flags.writeable and len(set(out["params"].tolist())) == 1
    assert out["params"][0] == 124_439_808  # GPT-2 small with its tied head (HF's num_parameters())
    one = sweep(n=128, b=2)
    assert one["flops"].shape == () and not one["flops"].flags.writeable
    assert float(one["flops"]) == out["flops"][0]


def test_spelled_choices_after_the_fast_path():
    """A choice string in another case is spelled as its list spells it; None stays None; an unhashable
    value is still one ConfigError line."""
    workload = Workload(dtype="BF16", attention="SDPA", kv_cache="Static")
    assert (workload.dtype, workload.attention, workload.kv_cache) == ("bf16", "sdpa", "static")
    assert Workload().kv_dtype is None
    with pytest.raises(ConfigError, match="kv_dtype must be one of"):
        Workload(kv_dtype=["fp8"])
