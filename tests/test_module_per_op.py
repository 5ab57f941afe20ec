"""The host's time per op in eager module code (issue 19): validate/calibrate.py's microbenchmark
(transformers' Llama decoder layers on one token, their forward over the aten ops it dispatches),
its op count derived from the counts the serving step charges (kernel_facts.json "eager_ops"), the
hardware file's module_s_per_op, and the rule that a counted eager implementation's ops take it in
place of a bare op's dispatch_s_per_op (Hardware.eager_op_s), on a CPU per leaf and on a GPU in
the host term, exactly."""

from __future__ import annotations

import pytest

from costmodel.hardware import Hardware, hardware_names, load_hardware, schema_problems
from costmodel.kernel_time import KernelTimer, LeavesTime, host_bound_seconds, kernel_facts
from costmodel.presets import config_from_dict
from costmodel.serving.steptime import StepTime, serving_profile

TINY = dict(vocab_size=101, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=512, model_type="llama", torch_dtype="float32")
CPU = {"name": "cpu", "flops_per_s": {"fp32": 1e11}, "default_dtype": "fp32", "bandwidth_bytes_per_s": 1e30,
       "vector_flops_per_s": 1e30, "memory_bytes": 2**34, "overhead_s_per_block": 3e-5,
       "gemm_efficiency_by_rows": {"fp32": {"1": 0.05, "4": 0.1, "8": 0.2, "64": 0.8}}, "dispatch_s_per_op": 2e-6}
#: The attention module's own body without a cache (no mask: one token, sdpa's grouped heads):
#: q, k and v's view and transpose (6), the sdpa call (1), the output's view, transpose and view (3).
ATTENTION_BODY_NO_CACHE = 10


def module_ops(layers: int) -> int:
    """module_stack's ops per forward from the serving step's counts (kernel_facts.json "eager_ops",
    transformers' Llama in the engine): the rotary tables once, and per layer two norms, q/k/v,
    rotary, the attention body (here without the paged cache), the output, two residuals, the MLP."""
    ops = next(e for e in kernel_facts()["eager_ops"]["implementations"] if e["name"] == "transformers-llama-paged-sdpa")["ops"]
    per_layer = (2 * ops["Norm"] + ops["QKVProjection"] + ops["RotaryEmbedding"] + ATTENTION_BODY_NO_CACHE
                 + ops["AttentionOutput"] + 2 * ops["Residual"] + ops["FeedForward"])
    return ops["RotaryTables"] + layers * per_layer


@pytest.mark.parametrize("width", [8, 32, 64])
def test_the_module_stack_dispatches_the_ops_the_engine_s_leaves_count(width):
    """The same ops at every width (148 for two layers): what the forward's time is divided by."""
    torch = pytest.importorskip("torch")
    from validate.calibrate import MODULE_LAYERS, count_aten_ops, module_stack

    stack = module_stack(width)
    hidden, position = torch.randn(1, 1, width), torch.zeros(1, 1, dtype=torch.long)
    with torch.no_grad():
        assert count_aten_ops(lambda: stack(hidden, position)) == module_ops(MODULE_LAYERS) == 148


def test_the_microbenchmark_returns_a_time_per_op_at_each_width():
    """Host time, not kernels: the products are at most 64 x 192 on one row. Not a timing
    assertion (the machine is shared): each is a positive time under a millisecond an op, the
    forward's median over the exact op count; validate/FINDINGS.md has the figures by width."""
    pytest.importorskip("torch")
    from validate.calibrate import MODULE_LAYERS, MODULE_WIDTH, module_s_per_op, module_seconds_per_op

    for width in (8, 32, 64):
        measured = module_seconds_per_op(repeats=21, width=width)
        assert measured["ops"] == module_ops(MODULE_LAYERS) and measured["width"] == width
        assert 0 < measured["seconds_per_op"] < 1e-3
        assert measured["seconds_per_op"] == measured["forward_s"] / measured["ops"]
    assert MODULE_WIDTH == 32 and 0 < module_s_per_op(repeats=21) < 1e-3


def test_the_field_is_optional_checked_and_round_trips():
    assert schema_problems(dict(CPU, module_s_per_op=6e-6)) == []
    assert schema_problems(dict(CPU, module_s_per_op=-1)) == ["module_s_per_op must be greater than 0, got -1"]
    assert schema_problems(dict(CPU, module_s_per_op=0)) == ["module_s_per_op must be greater than 0, got 0"]
    hw = Hardware.from_dict(dict(CPU, module_s_per_op=6e-6), "cpu")
    assert hw.module_s_per_op == 6e-6 and hw.to_dict()["module_s_per_op"] == 6e-6
    assert Hardware.from_dict(hw.to_dict(), "again") == hw
    plain = Hardware.from_dict(CPU, "cpu")
    assert plain.module_s_per_op is None and "module_s_per_op" not in plain.to_dict()


def test_an_eager_op_takes_the_module_figure_where_stated_else_the_dispatch():
    assert Hardware.from_dict(dict(CPU, module_s_per_op=6e-6), "cpu").eager_op_s == 6e-6
    assert Hardware.from_dict(CPU, "cpu").eager_op_s == 2e-6
    only_module = {k: v for k, v in CPU.items() if k != "dispatch_s_per_op"}
    assert Hardware.from_dict(dict(only_module, module_s_per_op=6e-6), "cpu").eager_op_s == 6e-6
    assert Hardware.from_dict(only_module, "cpu").eager_op_s is None


def _decode_step(hardware: dict) -> float:
    cfg = config_from_dict(TINY, "tiny", "tiny-llama")
    step = StepTime(cfg, Hardware.from_dict(hardware, "cpu"), "fp32", profile=serving_profile(cfg, attention="sdpa"))
    return step.seconds([1], [10])


def test_a_cpu_step_charges_its_ops_at_the_module_figure():
    """tests/test_cpu_kernel_model.py's decode step (185 ops: one sequence alone, no mask) with a
    module figure of 6 us beside the 2 us dispatch: 185 x 4 us more, nothing else moved; with the
    module figure alone (no dispatch_s_per_op) the same seconds."""
    base = _decode_step(CPU)
    assert _decode_step(dict(CPU, module_s_per_op=6e-6)) == pytest.approx(base + 185 * 4e-6, rel=1e-12)
    only_module = {k: v for k, v in CPU.items() if k != "dispatch_s_per_op"}
    assert _decode_step(dict(only_module, module_s_per_op=6e-6)) == pytest.approx(base + 185 * 4e-6, rel=1e-12)
    timer = KernelTimer(Hardware.from_dict(dict(CPU, module_s_per_op=6e-6), "cpu"), "fp32", "sdpa",
                        eager_ops={"Norm": 6})
    assert timer.dispatch_s == 6e-6 and timer.eager_ops == {"Norm": 6} and timer.host_s_per_op is None


def test_a_gpu_host_term_takes_the_module_figure_where_a_file_states_it():
    """A measured CUDA file (hardware --measure --device cuda writes both): an eager step's host
    time is its ops at the module figure; the presets state none, so theirs stay as they were."""
    a100 = load_hardware("a100-80gb").to_dict()
    measured = Hardware.from_dict(dict(a100, module_s_per_op=1.2e-5), "measured")
    timer = KernelTimer(measured, "bf16", "sdpa")
    times = LeavesTime(1e-3, 0, [])
    assert timer.host_s_per_op == 1.2e-5 and timer.host_seconds(1000) == pytest.approx(1.2e-2, rel=1e-12)
    assert host_bound_seconds(times, 1000, timer) == pytest.approx(1.2e-2, rel=1e-12)
    assert KernelTimer(load_hardware("a100-80gb"), "bf16", "sdpa").host_s_per_op == 7.1e-6
    for options in ({"cuda_graphs": True}, {"compiled": True}):
        assert KernelTimer(measured, "bf16", "sdpa", **options).host_s_per_op is None
    for name in hardware_names():
        if name != "local":
            assert load_hardware(name).module_s_per_op is None
