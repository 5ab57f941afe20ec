"""The kernel model on a CPU (issue 19): a measured GEMM efficiency by rows and a dispatch time per
eager op as hardware-file fields (costmodel/hardware.py), the GEMM time they give
(kernel_time.KernelTimer) and a serving step's seconds from them (serving/steptime.py), exactly."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import cli
from costmodel.hardware import Hardware, hardware_names, load_hardware, schema_problems, time_model_for
from costmodel.kernel_time import Gemm, KernelTimer
from costmodel.presets import config_from_dict
from costmodel.serving.steptime import StepTime, serving_profile

TINY = dict(vocab_size=101, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=512, model_type="llama", torch_dtype="float32")
ROWS = {"1": 0.05, "4": 0.1, "8": 0.2, "64": 0.8}
CPU = {"name": "cpu", "flops_per_s": {"fp32": 1e11}, "default_dtype": "fp32", "bandwidth_bytes_per_s": 1e10,
       "memory_bytes": 2**34, "overhead_s_per_block": 3e-5, "gemm_efficiency_by_rows": {"fp32": ROWS},
       "dispatch_s_per_op": 2e-6}


def test_the_two_fields_are_optional_checked_and_round_trip():
    minimal = {k: CPU[k] for k in ("name", "flops_per_s", "bandwidth_bytes_per_s", "memory_bytes")}
    assert schema_problems(CPU) == [] and schema_problems(minimal) == []
    bad = dict(CPU, dispatch_s_per_op=-1, gemm_efficiency_by_rows={"fp32": {"0": 0.5, "two": 0.2, "8": 1.5},
                                                                    "fp9": {"1": 0.1}, "bf16": {}})
    assert schema_problems(bad) == [
        "dispatch_s_per_op must be at least 0, got -1",
        "gemm_efficiency_by_rows.fp32 has a row count '0' that is not a whole number of at least 1",
        "gemm_efficiency_by_rows.fp32 has a row count 'two' that is not a whole number of at least 1",
        "gemm_efficiency_by_rows.fp32.8 must be at most 1, got 1.5",
        "gemm_efficiency_by_rows has an unknown dtype 'fp9' (known: fp32, tf32, bf16, fp16, fp8, int8, mxfp8, fp4)",
        "gemm_efficiency_by_rows.bf16 must be a non-empty object of rows: efficiency, got {}"]
    assert schema_problems(dict(CPU, gemm_efficiency_by_rows=[1])) == [
        "gemm_efficiency_by_rows must be an object of dtype: {rows: efficiency}, got [1]"]
    hw = Hardware.from_dict(CPU, "cpu")
    assert hw.gemm_efficiency_by_rows == {"fp32": ((1, 0.05), (4, 0.1), (8, 0.2), (64, 0.8))}
    assert hw.dispatch_s_per_op == 2e-6
    assert Hardware.from_dict(hw.to_dict(), "again") == hw
    plain = Hardware.from_dict(minimal, "minimal")
    assert plain.gemm_efficiency_by_rows == {} and plain.dispatch_s_per_op is None
    assert "gemm_efficiency_by_rows" not in plain.to_dict() and "dispatch_s_per_op" not in plain.to_dict()


def test_a_bad_field_is_one_line_and_exit_2(tmp_path, capsys):
    path = tmp_path / "cpu.json"
    path.write_text(json.dumps(dict(CPU, gemm_efficiency_by_rows={"fp32": {"8": 0}})))
    assert cli.main(["hardware", "--show", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "gemm_efficiency_by_rows.fp32.8 must be greater than 0, got 0" in err


def test_the_rows_table_makes_the_kernel_model_the_default_without_sm_count():
    hw = Hardware.from_dict(CPU, "cpu")
    assert hw.sm_count == 0 and time_model_for(hw) == "kernels"
    assert time_model_for(Hardware.from_dict(dict(CPU, gemm_efficiency_by_rows={}), "no rows")) == "roofline"


def test_a_gemm_at_the_measured_efficiency_for_its_rows():
    timer = KernelTimer(Hardware.from_dict(CPU, "cpu"), "fp32")
    assert [timer.rows_efficiency(m) for m in (1, 4, 8, 64, 1000)] == [0.05, 0.1, 0.2, 0.8, 0.8]
    # log-linear between the measured counts: 2 rows is halfway from 1 to 4, 16 a third of 8 -> 64
    assert timer.rows_efficiency(2) == pytest.approx(0.075, rel=1e-12)
    assert timer.rows_efficiency(16) == pytest.approx(0.2 + 0.6 / 3, rel=1e-12)
    # 5 rows of 512 x 512: 2,621,440 FLOPs at 0.1 + 0.1 log2(5/4) of 1e11 (compute-bound: its
    # 1,069,056 bytes take 1.07e-4 s at 1e10 B/s)
    gemm = Gemm(5, 512, 512)
    efficiency = 0.1 + 0.1 * math.log(5 / 4) / math.log(2)
    assert timer.gemm_seconds(gemm) == pytest.approx(2 * 5 * 512 * 512 / (1e11 * efficiency), rel=1e-12)
    # a single row is bound by its weights' bytes here: 4 (512 + 512 + 512^2) / 1e10
    assert timer.gemm_seconds(Gemm(1, 512, 512)) == pytest.approx(4 * (512 + 512 + 512**2) / 1e10, rel=1e-12)


def test_the_gpu_presets_keep_tiles_and_one_launch_per_leaf():
    """No preset states a GEMM efficiency by rows, and none charges eager ops per leaf: a GPU's
    host issues ahead, so the A100 files' dispatch_s_per_op (issue 18, a published figure) times
    an eager step's host alongside its kernels (kernel_time.host_bound_seconds), not per leaf."""
    for name in hardware_names():
        if name == "local":
            continue
        hw = load_hardware(name)
        timer = KernelTimer(hw, hw.default_dtype, eager_ops={"Norm": 6})  # fp16 on a V100 or T4
        assert hw.gemm_efficiency_by_rows == {} and hw.issues_ahead
        assert hw.dispatch_s_per_op is None or (name.startswith("a100") and hw.dispatch_s_per_op == 7.1e-6)
        assert timer.gemm_rows == () and timer.eager_ops is None


def _decode_step(hardware: dict, context: int = 10) -> float:
    cfg = config_from_dict(TINY, "tiny", "tiny-llama")
    step = StepTime(cfg, Hardware.from_dict(hardware, "cpu"), "fp32", profile=serving_profile(cfg, attention="sdpa"))
    return step.seconds([1], [context])


def test_a_decode_step_from_the_rows_table_and_the_ops():
    """One sequence decoding at 10 keys on a 2-layer Llama (d 64, 4 heads of 16, 2 KV heads, FFN 96,
    vocabulary 101), on a CPU whose bandwidth and vector rate are made so large that only the
    GEMMs, the attention call and the dispatch take time:
    - GEMMs: one row through 2 x (64 x 64 + 2 x 64 x 32 + 64 x 64 + 3 x 64 x 96) + 101 x 64 =
      67,904 weights: 135,808 FLOPs at 0.05 of 1e11;
    - attention: 2 layers x 4 heads x 10 keys x 2 x (16 + 16) = 5,120 FLOPs at the peak;
    - ops: 1 + 8 + 2 x (6 + 12 + 16 + 23 + 4 + 1 + 6 + 14 + 1) + 6 + 4 = 185 at 2 us: a sequence
      decoding alone passes no mask, so its attention module runs 23 ops, not the 30 of a masked
      step (kernel_facts.json eager_ops "cases"; 199 ops in all for a masked step)."""
    fast = dict(CPU, bandwidth_bytes_per_s=1e30, vector_flops_per_s=1e30)
    expected = 135_808 / (1e11 * 0.05) + 5_120 / 1e11 + 185 * 2e-6
    assert _decode_step(fast) == pytest.approx(expected, rel=1e-12)
    # without a dispatch time each leaf that launches a kernel pays 30 us once: the embedding, 2 x 9
    # per layer (two norms, qkv, rope, the attention call, out, two residuals, the MLP), the final
    # norm and the head (the rotary tables' leaf holds no kernel)
    no_dispatch = {k: v for k, v in fast.items() if k != "dispatch_s_per_op"}
    assert _decode_step(no_dispatch) == pytest.approx(expected - 185 * 2e-6 + 21 * 3e-5, rel=1e-12)


def test_a_mixed_step_charges_the_ops_once_and_its_gemms_at_their_rows():
    """A chunk of 5 tokens at 5 keys beside a decode at 10: 6 rows through every weight matrix but
    the head (2 rows: the two sequences' last tokens); the attention as transformers' engine runs
    a masked step, one call per layer of the step's 6 queries against its 15 keys, not causal
    (kernel_facts.json eager_ops "packed_attention"); the same 199 ops (one batched step: the
    counts of a step with a mask and cached keys)."""
    fast = dict(CPU, bandwidth_bytes_per_s=1e30, vector_flops_per_s=1e30)
    cfg = config_from_dict(TINY, "tiny", "tiny-llama")
    step = StepTime(cfg, Hardware.from_dict(fast, "cpu"), "fp32", profile=serving_profile(cfg, attention="sdpa"))
    rows6 = 0.1 + 0.1 * math.log(6 / 4) / math.log(2)
    rows2 = 0.05 + 0.05 * math.log(2) / math.log(4)
    gemms = 2 * 6 * 61_440 / (1e11 * rows6) + 2 * 2 * 6_464 / (1e11 * rows2)
    pairs = 4 * 6 * 15  # per head every one of the 6 queries against every one of the 15 keys
    attention = 2 * 2 * pairs * 32 / 1e11
    assert step.seconds([5, 1], [5, 10]) == pytest.approx(gemms + attention + 199 * 2e-6, rel=1e-12)


def test_the_paged_paths_copies_are_charged_by_the_step_not_the_attention_leaf():
    """transformers' paged sdpa path gathers every key the step reads and copies it per query head
    (kernel_facts.json "eager_ops" "copies": 2 e d_h (3 h_kv + h) bytes a key): 2 x 4 x 16 x
    (3 x 2 + 4) = 1,280 bytes a key here, charged by the step (eager_step.py copy_seconds, the one
    place) at the bandwidth where the hardware measures no cold copy, with the eager ops only; the
    weighted-sum leaf keeps its attention call alone."""
    from costmodel.kernel_time import AttentionCall

    cfg = config_from_dict(TINY, "tiny", "tiny-llama")
    profile = serving_profile(cfg, attention="sdpa")
    step = StepTime(cfg, Hardware.from_dict(CPU, "cpu"), "fp32", profile=profile)
    (leaf,) = [k for k, _ in step.groups["context"] if k.leaf.path.endswith("weighted_sum")]
    for n, c in ((1, 10), (5, 5), (64, 300)):
        assert [type(k) for k in leaf(n, c)] == [AttentionCall]
    # two sequences at 10 keys (a mask, keys cached: every copy), 2 layers
    assert step.eager_step.copy_seconds([1, 1], [10, 10]) == pytest.approx(2 * 1_280 * 20 / 1e10, rel=1e-12)
    plain = StepTime(cfg, Hardware.from_dict({k: v for k, v in CPU.items() if k != "dispatch_s_per_op"}, "cpu"),
                     "fp32", profile=profile)
    assert plain.eager_step.copy_seconds([1, 1], [10, 10]) == 0.0
    slow_memory = dict(CPU, vector_flops_per_s=1e30)
    eager, launches = (StepTime(cfg, Hardware.from_dict(hw, "cpu"), "fp32", profile=profile).seconds([1], [10])
                       for hw in (slow_memory, {k: v for k, v in slow_memory.items() if k != "dispatch_s_per_op"}))
    assert eager - launches == pytest.approx(185 * 2e-6 - 21 * 3e-5 + 2 * 5_120 / 1e10, rel=1e-9)
    # the charged case (a mask, keys cached): two sequences at 10 keys each, every copy (2 layers x
    # 1,280 x 20 bytes) and 199 ops; the packed call beside them is compute at the peak
    slow = StepTime(cfg, Hardware.from_dict(slow_memory, "cpu"), "fp32", profile=profile)
    packed = slow.packing_seconds(np.array([1, 1]), np.array([10, 10]))
    assert slow.eager_step.case_seconds([1, 1], [10, 10]) == 0.0
    assert slow.seconds([1, 1], [10, 10]) - launches_of_two(cfg, profile, slow_memory) - packed == pytest.approx(
        199 * 2e-6 - 21 * 3e-5 + 2 * 1_280 * 20 / 1e10, rel=1e-9)


def launches_of_two(cfg, profile, hardware: dict) -> float:
    """Two sequences decoding at 10 keys each, each leaf paying one launch (no dispatch time)."""
    no_dispatch = {k: v for k, v in hardware.items() if k != "dispatch_s_per_op"}
    return StepTime(cfg, Hardware.from_dict(no_dispatch, "cpu"), "fp32", profile=profile).seconds([1, 1], [10, 10])


def test_a_step_is_charged_the_attention_modules_ops_and_copies_of_its_case():
    """transformers' paged sdpa path runs the attention module three ways (kernel_facts.json
    eager_ops "cases", counted by tests/test_eager_ops.py; the copies' bytes counted in
    validate/FINDINGS.md 'Issue 19, round 7'): the leaf is charged the first; the step adds the
    difference of its own, per layer (2 here): its ops beyond 30 at 2 us; and the copies it runs
    for every key of the step at 1e10 B/s (gather: 4 e d_h h_kv = 512 bytes a key; repeat_kv:
    2 e d_h (h_kv + h) = 768), none of those it skips."""
    cfg = config_from_dict(TINY, "tiny", "tiny-llama")
    step = StepTime(cfg, Hardware.from_dict(CPU, "cpu"), "fp32", profile=serving_profile(cfg, attention="sdpa"))
    eager = step.eager_step
    # a mask and keys read from the cache (a decode beside a chunk; two decodes): what is charged
    assert [eager.case(q, c) for q, c in (([5, 1], [5, 10]), ([1, 1], [10, 20]), ([3], [9]))] == ["mask_cached"] * 3
    assert eager.case_seconds([5, 1], [5, 10]) == 0.0 and eager.case_seconds([3], [9]) == 0.0
    # one sequence decoding alone: no mask, 23 ops, no repeat_kv copies of its 10 keys
    assert eager.case([1], [10]) == "no_mask"
    assert eager.case_seconds([1], [10]) == pytest.approx(2 * -7 * 2e-6, rel=1e-12)
    assert eager.copy_seconds([1], [10]) == pytest.approx(2 * 512 * 10 / 1e10, rel=1e-12)
    # every sequence's first chunk: nothing read from the cache, 28 ops, no gather of its 8 keys
    assert eager.case([5, 3], [5, 3]) == "mask_nothing_cached"
    assert eager.case_seconds([5, 3], [5, 3]) == pytest.approx(2 * -2 * 2e-6, rel=1e-12)
    assert eager.copy_seconds([5, 3], [5, 3]) == pytest.approx(2 * 768 * 8 / 1e10, rel=1e-12)
    # a decoding run of one sequence is charged as its steps one at a time are
    assert list(step.decode_run([10], 3)) == pytest.approx([step.seconds([1], [10 + i]) for i in range(3)], rel=1e-12)
    # without a counted implementation (no dispatch time: no eager ops) nothing is added
    plain = StepTime(cfg, Hardware.from_dict({k: v for k, v in CPU.items() if k != "dispatch_s_per_op"}, "cpu"),
                     "fp32", profile=serving_profile(cfg, attention="sdpa"))
    assert plain.eager_step.seconds([1], [10]) == 0.0 and plain.eager_step.layers == 0


# ---------------------------------------------------------------------------------------------
# The attention call's measured efficiency by query rows (attention_efficiency_by_queries)

QUERIES = {"1": 0.1, "16": 0.5, "256": 0.6}


def test_the_attention_table_is_optional_checked_and_round_trips(tmp_path, capsys):
    cpu = dict(CPU, attention_efficiency_by_queries={"fp32": QUERIES})
    assert schema_problems(cpu) == []
    bad = dict(CPU, attention_efficiency_by_queries={"fp32": {"0": 0.5, "one": 0.2, "16": 1.5, "64": "x"},
                                                     "fp9": {"1": 0.1}, "bf16": {}})
    assert schema_problems(bad) == [
        "attention_efficiency_by_queries.fp32 has a query count '0' that is not a whole number of at least 1",
        "attention_efficiency_by_queries.fp32 has a query count 'one' that is not a whole number of at least 1",
        "attention_efficiency_by_queries.fp32.16 must be at most 1, got 1.5",
        "attention_efficiency_by_queries.fp32.64 must be a number, got 'x'",
        "attention_efficiency_by_queries has an unknown dtype 'fp9' (known: fp32, tf32, bf16, fp16, fp8, int8, mxfp8, fp4)",
        "attention_efficiency_by_queries.bf16 must be a non-empty object of queries: efficiency, got {}"]
    assert schema_problems(dict(CPU, attention_efficiency_by_queries=[[1, 0.1]])) == [
        "attention_efficiency_by_queries must be an object of dtype: {queries: efficiency}, got [[1, 0.1]]"]
    hw = Hardware.from_dict(cpu, "cpu")
    assert hw.attention_efficiency_by_queries == {"fp32": ((1, 0.1), (16, 0.5), (256, 0.6))}
    assert Hardware.from_dict(hw.to_dict(), "again") == hw
    assert Hardware.from_dict(CPU, "cpu").attention_efficiency_by_queries == {}
    assert "attention_efficiency_by_queries" not in Hardware.from_dict(CPU, "cpu").to_dict()
    # a bad value in a file: one line, exit 2
    path = tmp_path / "cpu.json"
    path.write_text(json.dumps(dict(CPU, attention_efficiency_by_queries={"fp32": {"4": -0.2}})))
    assert cli.main(["hardware", "--show", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "attention_efficiency_by_queries.fp32.4 must be greater than 0, got -0.2" in err


def test_an_attention_call_at_the_measured_efficiency_for_its_queries():
    from costmodel.kernel_time import AttentionCall

    fast = dict(CPU, bandwidth_bytes_per_s=1e30, attention_efficiency_by_queries={"fp32": QUERIES})
    timer = KernelTimer(Hardware.from_dict(fast, "cpu"), "fp32")
    assert [timer.attention_efficiency(9999, n_q) for n_q in (1, 16, 256, 4096)] == [0.1, 0.5, 0.6, 0.6]
    # log-linear in the queries: 4 is halfway from 1 to 16 (the keys do not enter)
    assert timer.attention_efficiency(10, 4) == pytest.approx(0.3, rel=1e-12)
    assert timer.attention_efficiency(5000, 4) == pytest.approx(0.3, rel=1e-12)
    # 4 queries (the last of 300 positions) of 8 heads of 64: every key is in the kernel's blocks,
    # 2 x 8 x 4 x 300 x 128 FLOPs at 0.3 of 1e11
    call = AttentionCall(batch=1, heads=8, n_q=4, n_kv=300, head_dim=64)
    assert timer.attention_seconds(call) == pytest.approx(2 * 8 * 4 * 300 * 128 / (1e11 * 0.3), rel=1e-12)
    # 256 causal queries against 256 keys: 128 x 128 + 128 x 256 pairs per head, at 0.6
    square = AttentionCall(batch=2, heads=8, n_q=256, n_kv=256, head_dim=64)
    assert timer.attention_seconds(square) == pytest.approx(
        2 * 2 * 8 * (128 * 128 + 128 * 256) * 128 / (1e11 * 0.6), rel=1e-12)
    # without the table the CPU's call runs at the peak (no published figure for it), as before
    plain = KernelTimer(Hardware.from_dict(dict(CPU, bandwidth_bytes_per_s=1e30), "cpu"), "fp32")
    assert plain.attention_seconds(call) == pytest.approx(2 * 8 * 4 * 300 * 128 / 1e11, rel=1e-12)
    # a given compute efficiency scales the table, as it does the rows table (both are fractions
    # of the large-GEMM rate the calibration measured)
    from costmodel.hardware import Efficiency

    given = KernelTimer(Hardware.from_dict(fast, "cpu"), "fp32", efficiency=Efficiency(compute=0.5, memory=1.0))
    assert given.attention_efficiency(10, 4) == pytest.approx(0.15, rel=1e-12)
    # another dtype than the table's: the table does not apply
    bf16 = dict(fast, flops_per_s={"fp32": 1e11, "bf16": 2e11})
    assert KernelTimer(Hardware.from_dict(bf16, "cpu"), "bf16").attention_efficiency(10, 4) == 1.0


def test_a_mixed_step_times_each_sequences_attention_at_its_queries():
    """test_a_mixed_step_charges_the_ops_once_and_its_gemms_at_their_rows' step with the table:
    the packed call's 6 x 15 pairs per head at the efficiency for its 6 queries; a decode-only step
    of two sequences, the packed 2 x 30 at 2 queries' (a mask: two sequences)."""
    fast = dict(CPU, bandwidth_bytes_per_s=1e30, vector_flops_per_s=1e30)
    measured = dict(fast, attention_efficiency_by_queries={"fp32": QUERIES})
    cfg = config_from_dict(TINY, "tiny", "tiny-llama")
    profile = serving_profile(cfg, attention="sdpa")
    plain, timed = (StepTime(cfg, Hardware.from_dict(hw, "cpu"), "fp32", profile=profile) for hw in (fast, measured))
    six = 0.1 + 0.4 * math.log(6) / math.log(16)
    assert timed.seconds([5, 1], [5, 10]) - plain.seconds([5, 1], [5, 10]) == pytest.approx(
        2 * 2 * 4 * 90 * 32 * (1 / six - 1) / 1e11, rel=1e-9)
    two = 0.1 + 0.4 * math.log(2) / math.log(16)
    assert timed.seconds([1, 1], [10, 20]) - plain.seconds([1, 1], [10, 20]) == pytest.approx(
        2 * 2 * 4 * 60 * 32 * (1 / two - 1) / 1e11, rel=1e-9)
    # one sequence decoding alone passes no mask: its own causal call, 1 x 10 at 1 query's 0.1
    assert timed.seconds([1], [10]) - plain.seconds([1], [10]) == pytest.approx(
        2 * 2 * 4 * 10 * 32 * (1 / 0.1 - 1) / 1e11, rel=1e-9)


def test_no_gpu_preset_states_an_attention_table():
    """So their attention keeps kernel_facts.json's figures (python cli.py published does not move)."""
    for name in hardware_names():
        if name != "local":
            hw = load_hardware(name)
            assert hw.attention_efficiency_by_queries == {} and KernelTimer(hw, hw.default_dtype).attention_queries == ()


def test_steady_decoding_packs_its_steps_as_one_step_at_a_time_does():
    """decode_run (the engine loop's vectorised steady decoding) adds each step's packed call as
    seconds() does (two sequences: a mask, so the engine packs them)."""
    cfg = config_from_dict(TINY, "tiny", "tiny-llama")
    compute_bound = dict(CPU, bandwidth_bytes_per_s=1e30, vector_flops_per_s=1e30,
                         attention_efficiency_by_queries={"fp32": QUERIES})
    step = StepTime(cfg, Hardware.from_dict(compute_bound, "cpu"), "fp32", profile=serving_profile(cfg, attention="sdpa"))
    run = step.decode_run([10, 20, 30], 3)
    assert list(run) == pytest.approx([step.seconds([1, 1, 1], [10 + i, 20 + i, 30 + i]) for i in range(3)],
                                      rel=1e-12)
    # 3 queries x 60 keys per head at 3 queries' efficiency against 60 causal pairs at 1 query's
    three = 0.1 + 0.4 * math.log(3) / math.log(16)
    assert step.packing_seconds(np.array([1, 1, 1]), np.array([10, 20, 30])) == pytest.approx(
        2 * 2 * 4 * 32 * (180 / three - 60 / 0.1) / 1e11, rel=1e-9)
    assert step.packing_seconds(np.array([1]), np.array([10])) == 0.0


def test_a_rows_table_in_one_dtype_serves_the_kernel_model_in_that_dtype_only():
    """A CPU calibrated in fp32 (rows table in fp32, no sm_count): fp32 runs take the kernel
    model; bf16 runs the roofline, instead of cuBLAS's tiles on one 'SM' at no measured rate."""
    from costmodel.hardware import time_model_for
    from costmodel.serving.steptime import KernelStepTime, RooflineStepTime

    cpu = Hardware.from_dict(dict(CPU, flops_per_s={"fp32": 1e11, "bf16": 5e10}), "cpu")
    assert (time_model_for(cpu, None, "fp32"), time_model_for(cpu, None, "float32")) == ("kernels", "kernels")
    assert time_model_for(cpu, None, "bf16") == "roofline" and time_model_for(cpu) == "kernels"
    cfg = config_from_dict(TINY, "tiny", "tiny-llama")
    profile = serving_profile(cfg, attention="sdpa")
    assert type(StepTime(cfg, cpu, "fp32", profile=profile)) is KernelStepTime
    assert type(StepTime(cfg, cpu, "bf16", profile=profile)) is RooflineStepTime
