"""Generation steps summed in closed form (costmodel/decode_sums.py) equal the step-by-step sum.

Exact integers for every leaf's FLOPs and bytes (the closed form and the sum of each step's exact
value), on odd configs whose caps switch inside the summed range: sliding windows of 3 and 4 keys
on all or some layers, and MoE layers that touch E (1 - (1 - k/E)^tokens) experts. Roofline seconds
agree with simulate's step-by-step path to float rounding, over ranges where kernels turn from
memory- to compute-bound.
"""

from __future__ import annotations

import pytest

import costmodel.roofline as sim
from costmodel.decode_sums import NoClosedForm, StepSums
from costmodel.hardware import load_hardware
from costmodel.presets import config_from_dict, load_preset

from tests.family_odd_configs import _D

ODD = {
    "gemma2-window-3-some-layers": dict(_D, model_type="gemma2", num_key_value_heads=2, head_dim=10,
                                        num_hidden_layers=3, sliding_window=3, query_pre_attn_scalar=12),
    "mistral-window-4": dict(_D, model_type="mistral", num_key_value_heads=2, head_dim=10,
                             sliding_window=4),
    "mixtral-window-4-experts": dict(_D, model_type="mixtral", num_key_value_heads=2, head_dim=10,
                                     num_local_experts=5, num_experts_per_tok=2, sliding_window=4),
    "qwen2-moe": dict(_D, model_type="qwen2_moe", num_key_value_heads=2, num_experts=6,
                      num_experts_per_tok=2, moe_intermediate_size=16,
                      shared_expert_intermediate_size=24, mlp_only_layers=[1]),
}


def odd_config(name: str):
    return config_from_dict(ODD[name], "tests/test_decode_sums.py", name)


def exact_step_sum(sums: StepSums, lo: int, hi: int, **workload) -> dict:
    total: dict = {}
    for context in range(lo, hi + 1):
        for key, value in sums.at(context, **workload).items():
            if not key.startswith("break|"):
                total[key] = total.get(key, 0) + value
    return total


@pytest.mark.parametrize("name", sorted(ODD))
@pytest.mark.parametrize("phase", ["decode", "rerun"])
@pytest.mark.parametrize("batch", [1, 3])
def test_closed_form_equals_the_step_sum_exactly(name, phase, batch):
    sums = StepSums(odd_config(name), phase)
    workload = dict(batch=batch, source_len=1, bytes_per_element=2)
    closed = sums.totals(2, 37, **workload)
    assert_sums_equal(sums, closed, exact_step_sum(sums, 2, 37, **workload))
    # FLOPs and bytes: integers, but the routed experts' weight bytes, an expectation over the
    # routing (blocks/experts.py experts_touched: 5 (1 - (3/5)^T) of 5 experts at T tokens)
    assert all(type(v) is int for k, v in closed.items() if not k.endswith("experts|bytes_matmul"))


def assert_sums_equal(sums: StepSums, closed: dict, exact: dict) -> None:
    """Every quantity exactly, but a rerun's experts' weight bytes (a power of the context below
    40 E tokens, summed in float64: decode_sums.StepSums.arrays) to double precision."""
    assert closed.keys() == exact.keys()
    powered = sums.powered  # none in a cached decode step: its power is of b, not of c
    assert {k: v for k, v in closed.items() if k not in powered} == {k: v for k, v in exact.items() if k not in powered}
    for name in powered:
        assert closed[name] == pytest.approx(float(exact[name]), rel=1e-13, abs=0)


def test_caps_cut_the_range_where_they_switch():
    workload = dict(batch=1, source_len=1, bytes_per_element=2)
    # Mistral's window of 4 keys: a decode step's keys are min(c, 4).
    assert StepSums(odd_config("mistral-window-4"), "decode").pieces(2, 37, **workload) == [(2, 4), (5, 37)]
    # 5 experts, top-2: a prefix of n tokens touches 5 (1 - (3/5)^n) experts, the exponent held at
    # 40 x 5 = 200 tokens from there on (blocks/experts.py experts_touched); at batch 4, from n = 50.
    experts = StepSums(odd_config("mixtral-window-4-experts"), "rerun")
    assert experts.pieces(1, 300, **workload) == [(1, 200), (201, 300)]
    assert experts.pieces(1, 300, **{**workload, "batch": 4}) == [(1, 50), (51, 300)]
    # the first piece's expert bytes, not a polynomial, are summed step by step (in float64), every
    # other quantity in closed form; the second piece wholly in closed form
    bytes_matmul = "decoder.layer.ffn.experts|bytes_matmul"
    assert experts.powered == {bytes_matmul}
    assert experts.newton(1, 200, **workload)[1] == [bytes_matmul] and experts.newton(201, 300, **workload)[1] == []
    totals = experts.totals(1, 300, **workload)
    assert_sums_equal(experts, totals, exact_step_sum(experts, 1, 300, **workload))
    assert type(totals[bytes_matmul]) is float and type(totals["decoder.layer.ffn.experts|flops_matmul"]) is int
    # a cached decode step's b tokens: the power is of b, not of the context, so nothing is powered
    assert StepSums(odd_config("mixtral-window-4-experts"), "decode").powered == frozenset()
    # only a powered quantity may be summed step by step: any other without a closed form on a
    # piece raises, and roofline.generation_seconds takes the step-by-step path for the whole range
    experts.powered = frozenset()
    with pytest.raises(NoClosedForm, match="experts.bytes_matmul is not a polynomial"):
        experts.totals(1, 300, **workload)


def test_encoder_decoder_steps_attend_to_the_source():
    sums = StepSums(load_preset("t5-small"), "decode")
    workload = dict(batch=2, source_len=13, bytes_per_element=4)
    assert sums.totals(1, 29, **workload) == exact_step_sum(sums, 1, 29, **workload)


@pytest.mark.parametrize("model,batch,lo,hi", [
    ("mistral-7b", 3, 4000, 4300),  # the window (4096) inside the range
    ("llama3-8b", 1, 1, 1500),  # reruns turn compute-bound as the prefix grows
    ("t5-small", 2, 1, 700),
    # 8 experts, top-2: a rerun's prefix touches 8 (1 - (3/4)^c) of them, summed step by step up to
    # c = 40 x 8 = 320 (blocks/experts.py experts_touched), in closed form beyond
    ("mixtral-8x7b", 1, 300, 400),
    # 64 experts, top-6, batch 3: step by step up to c = 40 x 64 / 3 = 853, MLA's reruns around it
    ("deepseek-v2-lite", 3, 1, 1000),
])
def test_roofline_seconds_equal_the_step_by_step_path(model, batch, lo, hi):
    cfg, hardware = load_preset(model), load_hardware("h100-sxm")
    roof = sim.Roofline(cfg, hardware)
    rates = sim.Rates(roof.flops_per_s, roof.vector_flops_per_s, roof.bytes_per_s, roof.overhead_s)
    source = 11 if cfg.architecture == "encoder-decoder" else 1
    workload = dict(batch=batch, source_len=source, bytes_per_element=2)
    with_cache, without_cache = sim.stepwise_generation_seconds(roof, batch, lo, hi, source)
    assert StepSums(cfg, "decode").seconds(lo, hi, rates, **workload) == pytest.approx(with_cache, rel=1e-12)
    assert StepSums(cfg, "rerun").seconds(lo, hi, rates, **workload) == pytest.approx(without_cache, rel=1e-12)


def test_simulate_generation_equals_the_step_by_step_sum():
    """333 new tokens: the prefill's first, then 332 decode steps at contexts 4,001 .. 4,332."""
    cfg, hardware = load_preset("gemma2-9b"), load_hardware("h100-sxm")
    result = sim.simulate_inference(cfg, hardware, prompt=4000, gen=333, batch=2, time_model="roofline")
    with_cache, without_cache = sim.stepwise_generation_seconds(sim.Roofline(cfg, hardware), 2, 4001, 4332)
    assert result["decode"]["decode_seconds"] == pytest.approx(with_cache, rel=1e-12)
    last = result["generation_table"][-1]
    assert (last["step"], last["context"]) == (332, 4332)
    assert last["without_cache_cumulative"] - result["prefill"]["seconds"] == pytest.approx(without_cache, rel=1e-12)


def test_a_hundred_million_generated_tokens_answer_at_once():
    import time
    import tracemalloc

    cfg, hardware = load_preset("llama3-8b"), load_hardware("h100-sxm")
    sim.simulate_inference(cfg, hardware, prompt=2048, gen=10, batch=1)  # compiled and cached
    tracemalloc.start()
    started = time.perf_counter()
    result = sim.simulate_inference(cfg, hardware, prompt=2048, gen=100_000_000, batch=1)
    seconds = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert result["generation_table"][-1]["step"] == 99_999_999  # the prefill gives the first token
    assert peak < 20 * 2**20  # step by step, 10^8 steps took 24 GB at once, 100 MB in chunks
    assert seconds < 20  # step by step in chunks: minutes (benchmarks/bench_long_generation.py)


def test_a_cost_without_a_closed_form_is_summed_step_by_step(monkeypatch):
    """Where a step's cost is not piecewise polynomial in its context (a rounding, say), the sum
    falls back to the step-by-step path: the same seconds."""
    from costmodel import decode_sums

    cfg, hardware = load_preset("mistral-7b"), load_hardware("h100-sxm")
    closed = sim.simulate_inference(cfg, hardware, prompt=4090, gen=17, batch=2)

    def refuse(*args, **kwargs):
        raise decode_sums.NoClosedForm("a rounding of the context.")

    monkeypatch.setattr(decode_sums.StepSums, "seconds", refuse)
    stepped = sim.simulate_inference(cfg, hardware, prompt=4090, gen=17, batch=2)
    assert stepped["decode"]["decode_seconds"] == pytest.approx(closed["decode"]["decode_seconds"], rel=1e-12)
    assert stepped["generation_table"][-1]["without_cache_cumulative"] == pytest.approx(
        closed["generation_table"][-1]["without_cache_cumulative"], rel=1e-12)


def test_the_kernel_models_generation_is_its_curve_summed_step_by_step():
    """Under the kernel-level model the decode steps are timed at the shown contexts and linear in
    between: simulate's sum (simulate.linear_sum, in closed form) equals np.interp summed over every
    step, and the uncached reruns stay the roofline's closed form."""
    import numpy as np

    cfg, hardware = load_preset("llama2-7b"), load_hardware("h100-sxm")
    # CUDA graphs: eager, every step here would be the host's 3,023 ops at the 6.545 us the H100
    # borrows (a flat curve), over the kernels' 9-10 ms
    result = sim.simulate_inference(cfg, hardware, prompt=100, gen=1000, batch=3, time_model="kernels",
                                    cuda_graphs=True)
    contexts = [100 + row["step"] for row in result["generation_table"]]
    roof = sim.Roofline(cfg, hardware, attention="eager", cuda_graphs=True)
    xs, ys = sim.KernelSteps(roof, cuda_graphs=True).decode_curve(3, contexts, 1)
    assert xs == contexts and len(xs) == 8
    every_step = float(np.interp(np.arange(101, 1100), xs, ys).sum())  # 999 steps: contexts 101 .. 1,099
    assert result["decode"]["decode_seconds"] == pytest.approx(every_step, rel=1e-12)
    assert sim.linear_sum((xs, ys), 90, 1200) == pytest.approx(float(np.interp(np.arange(90, 1201), xs, ys).sum()),
                                                               rel=1e-12)
    _, without_cache = sim.stepwise_generation_seconds(roof, 3, 101, 1099)
    last = result["generation_table"][-1]
    assert last["without_cache_cumulative"] - result["prefill"]["seconds"] == pytest.approx(without_cache, rel=1e-12)
