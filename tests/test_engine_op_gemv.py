"""Two CPU microbenchmarks of `hardware --measure` for the serving step (issue 19): the engine's host
time per op (engine_s_per_op: a compute-free Llama's steps through transformers' continuous-batching
engine over the ops they dispatch) and a one-row product's efficiency by its inner width
(gemv_efficiency_by_inner: the BLAS's GEMV, whose rate per byte falls with K on a CPU). Their
hardware fields (checked, optional, round-tripping), the rules that use them (the engine's counted
ops take engine_s_per_op; a one-row GEMM takes the GEMV table at its K), exactly, and the
measurements' shapes (not their timings: the machine is shared)."""

from __future__ import annotations

import pytest

from costmodel.hardware import Hardware, schema_problems
from costmodel.kernel_time import Gemm, KernelTimer
from costmodel.presets import config_from_dict
from costmodel.serving.steptime import StepTime, serving_profile

TINY = dict(vocab_size=101, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=512, model_type="llama", torch_dtype="float32")
CPU = {"name": "cpu", "flops_per_s": {"fp32": 1e11}, "default_dtype": "fp32", "bandwidth_bytes_per_s": 1e30,
       "vector_flops_per_s": 1e30, "memory_bytes": 2**34, "overhead_s_per_block": 3e-5,
       "gemm_efficiency_by_rows": {"fp32": {"1": 0.05, "4": 0.1, "8": 0.2, "64": 0.8}}, "dispatch_s_per_op": 2e-6,
       "module_s_per_op": 6e-6}
GEMV = {"fp32": {"256": 0.02, "1024": 0.04}}
#: TINY's weights a one-token step multiplies by: per layer q 64x64, k and v 64x32, o 64x64, gate and
#: up 64x96, down 96x64 (30,720); two layers and the head 64x101 (6,464).
TINY_WEIGHTS = 2 * (64 * 64 + 2 * 64 * 32 + 64 * 64 + 3 * 64 * 96) + 64 * 101


def test_the_fields_are_optional_checked_and_round_trip():
    data = dict(CPU, engine_s_per_op=9e-6, gemv_efficiency_by_inner=GEMV)
    assert schema_problems(data) == []
    hw = Hardware.from_dict(data, "cpu")
    assert hw.engine_s_per_op == 9e-6 and hw.gemv_efficiency_by_inner == {"fp32": ((256, 0.02), (1024, 0.04))}
    assert Hardware.from_dict(hw.to_dict(), "again") == hw
    plain = Hardware.from_dict(CPU, "cpu")
    assert plain.engine_s_per_op is None and plain.gemv_efficiency_by_inner == {}
    assert "engine_s_per_op" not in plain.to_dict() and "gemv_efficiency_by_inner" not in plain.to_dict()
    assert schema_problems(dict(CPU, engine_s_per_op=0)) == ["engine_s_per_op must be greater than 0, got 0"]
    assert schema_problems(dict(CPU, gemv_efficiency_by_inner={"fp32": {"0": 0.1}})) == [
        "gemv_efficiency_by_inner.fp32 has an inner width '0' that is not a whole number of at least 1"]
    assert schema_problems(dict(CPU, gemv_efficiency_by_inner={"fp32": {"512": 1.5}})) == [
        "gemv_efficiency_by_inner.fp32.512 must be at most 1, got 1.5"]
    assert schema_problems(dict(CPU, gemv_efficiency_by_inner={"fp64": {"512": 0.1}})) == [
        "gemv_efficiency_by_inner has an unknown dtype 'fp64' (known: fp32, tf32, bf16, fp16, fp8, int8, mxfp8, fp4)"]


def test_the_engine_s_counted_ops_take_its_own_time_per_op():
    """engine_op_s: engine_s_per_op where stated, else eager_op_s (module_s_per_op, else the add's)."""
    assert Hardware.from_dict(dict(CPU, engine_s_per_op=9e-6), "cpu").engine_op_s == 9e-6
    assert Hardware.from_dict(CPU, "cpu").engine_op_s == 6e-6
    hw = Hardware.from_dict(dict(CPU, engine_s_per_op=9e-6), "cpu")
    assert KernelTimer(hw, "fp32", "sdpa", eager_ops={"Norm": 6}).dispatch_s == 9e-6
    assert KernelTimer(hw, "fp32", "sdpa").dispatch_s == 6e-6  # no counted engine ops: module code's


def _decode_step(hardware: dict) -> float:
    cfg = config_from_dict(TINY, "tiny", "tiny-llama")
    step = StepTime(cfg, Hardware.from_dict(hardware, "cpu"), "fp32", profile=serving_profile(cfg, attention="sdpa"))
    return step.seconds([1], [10])


def test_a_serving_step_charges_its_ops_at_the_engine_s_time():
    """The decode step of one sequence alone dispatches 185 counted ops (tests/test_module_per_op.py):
    at 9 us instead of the module code's 6, 185 x 3 us more, nothing else moved."""
    base = _decode_step(CPU)
    assert _decode_step(dict(CPU, engine_s_per_op=9e-6)) == pytest.approx(base + 185 * 3e-6, rel=1e-12)


def test_a_one_row_product_takes_the_gemv_table_at_its_inner_width():
    """Log-linear in K between the measured widths, the end values outside; two rows and more keep the
    rows table; a file without the table keeps the rows table at one row."""
    hw = Hardware.from_dict(dict(CPU, gemv_efficiency_by_inner=GEMV), "cpu")
    timer = KernelTimer(hw, "fp32", "sdpa")
    assert timer.rows_efficiency(1, 512) == pytest.approx(0.03, rel=1e-12)  # halfway in log K
    assert timer.rows_efficiency(1, 64) == 0.02 and timer.rows_efficiency(1, 8192) == 0.04
    assert timer.rows_efficiency(2, 512) == pytest.approx(0.05 + 0.05 * 0.5, rel=1e-12)  # the rows table
    flops = 2 * 512 * 512
    assert timer.gemm_seconds(Gemm(1, 512, 512)) == pytest.approx(flops / (1e11 * 0.03), rel=1e-12)
    assert KernelTimer(Hardware.from_dict(CPU, "cpu"), "fp32", "sdpa").gemm_seconds(Gemm(1, 512, 512)) == \
        pytest.approx(flops / (1e11 * 0.05), rel=1e-12)


def test_a_decode_step_s_gemvs_move_by_the_table_and_nothing_else():
    """TINY's one-token step: every product has K 64 or 96, under the table's first width, so at
    0.02 of the peak instead of the rows table's 0.05: its 2 x TINY_WEIGHTS FLOPs x (1/0.02 - 1/0.05)
    / peak more, exactly (the bandwidth is unbounded here, so the FLOPs set each product's time)."""
    base = _decode_step(CPU)
    more = 2 * TINY_WEIGHTS * (1 / 0.02 - 1 / 0.05) / 1e11
    assert _decode_step(dict(CPU, gemv_efficiency_by_inner=GEMV)) == pytest.approx(base + more, rel=1e-9)


def test_the_measurements_have_their_shapes():
    """gemm_rates times the chain at its rows and one row at each width; the GEMV table is each
    width's one-row rate over the chain's best, at most 1; the engine's time per op is a positive
    time per op of its counted steps (a compute-free Llama: under a millisecond an op)."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from validate.calibrate import engine_seconds_per_op, gemm_rates, gemv_efficiency_by_inner

    rates = gemm_rates((1, 4), (256, 1024), repeats=1, megabytes=4)
    assert set(rates) == {"chain", 256, 1024}
    assert set(rates["chain"]) == {1, 4} and set(rates[256]) == {1} == set(rates[1024])
    table = gemv_efficiency_by_inner(rates)
    assert set(table) == {"256", "1024"} and all(0 < e <= 1 for e in table.values())
    assert table["256"] == min(1.0, rates[256][1] / max(rates["chain"].values()))
    engine = engine_seconds_per_op(runs=1)
    # the trace's 10 steps but the first; the median step's 221 ops (counted: validate/eager_op_counts.py)
    assert engine["steps"] == 9 and engine["ops"] == 221 and 0 < engine["seconds_per_op"] < 1e-3


def test_the_engine_s_figure_alone_charges_the_engine_s_ops():
    """A file stating engine_s_per_op without dispatch_s_per_op or module_s_per_op: the engine's ops
    are charged at it (the review found them charged nothing: the op time was gated on eager_op_s)."""
    bare = {k: v for k, v in CPU.items() if k not in ("dispatch_s_per_op", "module_s_per_op")}
    hw = Hardware.from_dict(dict(bare, engine_s_per_op=9e-6), "cpu")
    timer = KernelTimer(hw, "fp32", "sdpa", eager_ops={"Norm": 6})
    assert timer.dispatch_s == 9e-6 and timer.eager_ops == {"Norm": 6}
    assert KernelTimer(hw, "fp32", "sdpa").eager_ops is None  # not the engine's ops: no op time stated
    assert _decode_step(dict(bare, engine_s_per_op=9e-6)) == pytest.approx(
        _decode_step(dict(bare, dispatch_s_per_op=9e-6)), rel=1e-12)


def test_more_rows_never_take_less_time_than_one_row_of_the_same_weights():
    """With the GEMV table, a two-row product at the rows table's efficiency could finish before one
    row (K 256: one row at 0.02 of the peak, two rows at 0.05 + 0.05 x 1/2 = 0.075): it now takes at
    least the one-row product's time (the same weights read); without the table, the rows table alone."""
    hw = Hardware.from_dict(dict(CPU, gemv_efficiency_by_inner=GEMV), "cpu")
    timer = KernelTimer(hw, "fp32", "sdpa")
    one = 2 * 256 * 256 / (1e11 * 0.02)
    assert timer.gemm_compute_seconds(Gemm(1, 256, 256)) == pytest.approx(one, rel=1e-12)
    assert timer.gemm_compute_seconds(Gemm(2, 256, 256)) == pytest.approx(one, rel=1e-12)
    assert 2 * 8 * 256 * 256 / (1e11 * 0.2) < one  # the rows table's 8 rows, bounded by one row too
    assert timer.gemm_compute_seconds(Gemm(8, 256, 256)) == pytest.approx(one, rel=1e-12)
    one_wide, eight_wide = 2 * 1024**2 / (1e11 * 0.04), 2 * 8 * 1024**2 / (1e11 * 0.2)  # K 1024: rows win
    assert eight_wide > one_wide and timer.gemm_compute_seconds(Gemm(8, 1024, 1024)) == pytest.approx(eight_wide, rel=1e-12)
    plain = KernelTimer(Hardware.from_dict(CPU, "cpu"), "fp32", "sdpa")
    assert plain.gemm_compute_seconds(Gemm(2, 256, 256)) == pytest.approx(2 * one * 0.02 / 0.075, rel=1e-12)
