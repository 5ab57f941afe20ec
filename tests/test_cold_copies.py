"""The paged cache's copies timed cold (issue 19): the hardware file's cold_copies (checked, optional,
round-tripping), the serving step's rule for them (per layer, each copy the step's case runs: calls x
the op's fixed time + its bytes at the op's rate), exactly, the least-squares fit, the
microbenchmark's shape on a tiny run (not its timings: the machine is shared), and GPU files, which
state none, unchanged."""

from __future__ import annotations

import pytest

from costmodel.hardware import Hardware, load_hardware, schema_problems
from costmodel.presets import config_from_dict
from costmodel.serving.steptime import StepTime, serving_profile

TINY = dict(vocab_size=101, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=512, model_type="llama", torch_dtype="float32")
CPU = {"name": "cpu", "flops_per_s": {"fp32": 1e11}, "default_dtype": "fp32", "bandwidth_bytes_per_s": 1e10,
       "vector_flops_per_s": 1e30, "memory_bytes": 2**34, "overhead_s_per_block": 3e-5,
       "gemm_efficiency_by_rows": {"fp32": {"1": 0.05, "4": 0.1, "8": 0.2, "64": 0.8}}, "dispatch_s_per_op": 2e-6}
COLD = {"index_select": {"s_per_call": 1e-4, "bytes_per_s": 4e9}, "clone": {"s_per_call": 3e-4, "bytes_per_s": 2e9}}
#: TINY's copies a key per layer (kernel_facts.json eager_ops "copies", e 4, d_h 16, h 4, h_kv 2):
#: the gather 4 e d_h h_kv = 512 bytes (K and V, each read and written), repeat_kv 2 e d_h (h_kv + h) = 768.
GATHER, REPEAT = 512, 768


def test_the_field_is_optional_checked_and_round_trips():
    data = dict(CPU, cold_copies=COLD)
    assert schema_problems(data) == []
    hw = Hardware.from_dict(data, "cpu")
    assert hw.cold_copies == {"index_select": (1e-4, 4e9), "clone": (3e-4, 2e9)}
    assert hw.to_dict()["cold_copies"] == COLD and Hardware.from_dict(hw.to_dict(), "again") == hw
    plain = Hardware.from_dict(CPU, "cpu")
    assert plain.cold_copies == {} and "cold_copies" not in plain.to_dict()
    assert schema_problems(dict(CPU, cold_copies={"memcpy": {"s_per_call": 0, "bytes_per_s": 1}})) == [
        "cold_copies has an unknown op 'memcpy' (known: index_select, clone)"]
    assert schema_problems(dict(CPU, cold_copies={"clone": {"s_per_call": -1, "bytes_per_s": 0}})) == [
        "cold_copies.clone.s_per_call must be at least 0, got -1",
        "cold_copies.clone.bytes_per_s must be greater than 0, got 0"]
    assert schema_problems(dict(CPU, cold_copies={"clone": {"s_per_call": 1e-4, "rate": 2}})) == [
        "cold_copies.clone has an unknown field 'rate' (known: s_per_call, bytes_per_s)",
        "cold_copies.clone.bytes_per_s is missing"]
    assert schema_problems(dict(CPU, cold_copies=[1])) == [
        "cold_copies must be an object of op: {s_per_call, bytes_per_s}, got [1]"]


def test_a_bad_field_is_one_line_and_exit_status_2(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "bad.json"
    path.write_text(__import__("json").dumps(dict(CPU, cold_copies={"clone": {"s_per_call": 1e-4}})))
    run = subprocess.run([sys.executable, "cli.py", "simulate", "--model", "llama2-7b", "--hardware", str(path)],
                         capture_output=True, text=True)
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert run.stderr.count("\n") == 1 and "cold_copies.clone.bytes_per_s is missing" in run.stderr


def _step(hardware: dict) -> StepTime:
    cfg = config_from_dict(TINY, "tiny", "tiny-llama")
    return StepTime(cfg, Hardware.from_dict(hardware, "cpu"), "fp32", profile=serving_profile(cfg, attention="sdpa"))


def test_a_step_s_copies_are_calls_times_the_fixed_time_plus_bytes_at_the_rate():
    """Per layer (2): 2 calls of each op the step's case runs, every key of the step in each; the
    rest of the step unchanged. A mask and cached keys (two sequences, 10 + 20 keys): both copies;
    one sequence alone (10 keys): no repeat_kv, the gather only; nothing cached (5 + 3 keys): no
    gather, repeat_kv only."""
    cold, flat = _step(dict(CPU, cold_copies=COLD)), _step(CPU)
    both = 2 * ((2 * 1e-4 + GATHER * 30 / 4e9) + (2 * 3e-4 + REPEAT * 30 / 2e9))
    assert cold.eager_step.copy_seconds([1, 1], [10, 20]) == pytest.approx(both, rel=1e-12)
    assert flat.eager_step.copy_seconds([1, 1], [10, 20]) == pytest.approx(2 * (GATHER + REPEAT) * 30 / 1e10, rel=1e-12)
    assert cold.seconds([1, 1], [10, 20]) - flat.seconds([1, 1], [10, 20]) == pytest.approx(
        both - 2 * (GATHER + REPEAT) * 30 / 1e10, rel=1e-9)
    assert cold.eager_step.copy_seconds([1], [10]) == pytest.approx(2 * (2 * 1e-4 + GATHER * 10 / 4e9), rel=1e-12)
    assert cold.eager_step.copy_seconds([5, 3], [5, 3]) == pytest.approx(2 * (2 * 3e-4 + REPEAT * 8 / 2e9), rel=1e-12)
    # a decoding run of the same sequences is charged as its steps one at a time are
    assert list(cold.decode_run([10, 20], 3)) == pytest.approx(
        [cold.seconds([1, 1], [10 + i, 20 + i]) for i in range(3)], rel=1e-12)


def test_an_op_not_measured_keeps_the_bandwidth():
    """A file measuring the clone only: the gather's bytes at the bandwidth, no fixed time."""
    step = _step(dict(CPU, cold_copies={"clone": COLD["clone"]}))
    expected = 2 * (GATHER * 30 / 1e10 + 2 * 3e-4 + REPEAT * 30 / 2e9)
    assert step.eager_step.copy_seconds([1, 1], [10, 20]) == pytest.approx(expected, rel=1e-12)


def test_the_fit_gives_back_a_line_and_refits_a_negative_intercept_through_the_origin():
    from validate.cold_copies import fit_fixed_and_rate

    line = {v: 2e-4 + v / 3e9 for v in (98_304, 196_608, 393_216, 786_432)}
    fixed, rate = fit_fixed_and_rate(line)
    assert fixed == pytest.approx(2e-4, rel=1e-9) and rate == pytest.approx(3e9, rel=1e-9)
    # T = -1e-5 + v / 1e9 at 1e5 and 2e5 bytes: through the origin, slope (sum v T / sum v^2)
    fixed, rate = fit_fixed_and_rate({100_000: 9e-5, 200_000: 1.9e-4})
    assert fixed == 0.0 and rate == pytest.approx((1e10 + 4e10) / (9 + 38), rel=1e-9)
    assert fit_fixed_and_rate({100_000: 2e-4, 200_000: 1e-4}) is None  # no growth with the bytes


def test_the_bytes_are_kernel_facts_per_call():
    """One call (K or V) of the microbenchmark's shapes (4 KV heads, 8 heads, 64 wide, fp32) moves
    half a layer's stated bytes a key: index_select 2 e d_h h_kv = 2,048, clone e d_h (h_kv + h) = 3,072."""
    from validate.cold_copies import copy_bytes

    assert copy_bytes("index_select", 100) == 204_800 and copy_bytes("clone", 100) == 307_200


def test_the_microbenchmark_has_its_shape():
    pytest.importorskip("torch")
    from validate.cold_copies import cold_copies, copy_bytes

    measured = cold_copies(keys=(16, 48), repeats=1, flush_megabytes=1)
    assert set(measured["seconds"]) == {"index_select", "clone"} == set(measured["bytes"])
    assert all(set(by_keys) == {16, 48} and all(t > 0 for t in by_keys.values())
               for by_keys in measured["seconds"].values())
    assert measured["bytes"]["clone"] == {16: copy_bytes("clone", 16), 48: copy_bytes("clone", 48)}
    assert set(measured["fields"]) <= {"index_select", "clone"}
    for op, fields in measured["fields"].items():
        assert fields["s_per_call"] >= 0 and fields["bytes_per_s"] > 0
    assert schema_problems(dict(CPU, cold_copies=measured["fields"])) == []


def test_the_microbenchmark_copies_as_the_engine_does():
    """repeat_kv of the gathered keys viewed [1, h_kv, keys, d_h]: each KV head's keys n_rep times
    over, as torch.repeat_interleave, and one aten clone."""
    torch = pytest.importorskip("torch")
    from torch.utils._python_dispatch import TorchDispatchMode

    from validate.cold_copies import repeat_kv

    gathered = torch.randn(7, 4, 16)  # index_select's output: [keys, h_kv, d_h]
    view = gathered.transpose(0, 1).unsqueeze(0)
    assert torch.equal(repeat_kv(view, 2), torch.repeat_interleave(view, 2, dim=1))

    class Names(TorchDispatchMode):
        seen: list = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            Names.seen.append(func.__name__.split(".")[0])
            return func(*args, **(kwargs or {}))

    with Names():
        repeat_kv(view, 2)
    assert Names.seen.count("clone") == 1


def test_gpu_files_state_none_and_keep_their_step_times():
    """No preset states cold_copies, and a GPU's step has no counted engine ops, so no copies."""
    for name in ("h100-sxm", "a100-80gb"):
        hw = load_hardware(name)
        assert hw.cold_copies == {}
        cfg = config_from_dict(TINY, "tiny", "tiny-llama")
        step = StepTime(cfg, hw, "bf16", profile=serving_profile(cfg, attention="sdpa"))
        assert step.eager_step.copy_seconds([1, 1], [10, 20]) == 0.0
