"""Eager decoding on a GPU is host-bound (issue 18): the ops one decoding step issues
(kernel_facts.json "eager_step_ops", counted again here: gpt-fast's Transformer on
validate/gpt_fast_ops.py's reproduction of its source lines, Hugging Face generate on transformers'
own Llama, validate/generate_ops.py), the A100 files' sourced dispatch_s_per_op, and the one rule
that combines them with the kernels (kernel_time.host_bound_seconds: the longer of the two, the
host issuing ahead)."""

from __future__ import annotations

import os

import pytest

from costmodel.eager_ops import step_ops
from costmodel.hardware import Hardware, load_hardware
from costmodel.kernel_time import KernelTimer, LeavesTime, host_bound_seconds, kernel_facts
from costmodel.presets import load_preset
from costmodel.roofline import simulate_inference

#: gpt-fast's model.py where a copy is at hand (a pytorch-labs/gpt-fast checkout's model.py, or
#: torchao/_models/llama/model.py): GPT_FAST_MODEL_PY names it.
MODEL_PY = os.environ.get("GPT_FAST_MODEL_PY", "")
A100_DISPATCH_S = 7.1e-6  # FlagGems issue #4558: torch.add of (1, 4096) bf16 tensors on an A100


def _stated(dtype: str, name: str = "gpt-fast", attention: str | None = None) -> dict[str, int]:
    entry = next(e for e in kernel_facts()["eager_step_ops"]["implementations"]
                 if e["name"] == name and e.get("attention") == attention)
    return dict(entry["ops"][dtype])


@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
def test_the_stated_step_ops_are_what_the_reproduction_dispatches(dtype):
    """Counted again with a TorchDispatchMode: per layer (two layers less one) and the step's own."""
    pytest.importorskip("torch")
    from validate.gpt_fast_ops import step_ops as counted

    stated = _stated(dtype)
    stated.pop("int8_kv_per_layer", None)  # torchao's int8 cache's update: tests/test_static_cache.py counts it
    assert counted(dtype) == stated


def test_bf16_dispatches_the_casts_fp32_does_not():
    """x.float() and type_as are no-ops on fp32 tensors: per layer 2 norms x 2 casts, 2 rotary
    calls x 2 casts, and the math attention's 5 casts: 13 more in bf16; the final norm's 2 more."""
    assert _stated("bf16")["per_layer"] - _stated("fp32")["per_layer"] == 2 * 2 + 2 * 2 + 5 == 13
    assert _stated("bf16")["per_step"] - _stated("fp32")["per_step"] == 2


def test_the_reproduction_counts_what_gpt_fast_model_py_dispatches():
    if not os.path.isfile(MODEL_PY):
        pytest.skip("no copy of gpt-fast's model.py at hand (set GPT_FAST_MODEL_PY)")
    from validate.gpt_fast_ops import count_model_file

    for dtype in ("bf16", "fp32"):
        stated = _stated(dtype)
        stated.pop("int8_kv_per_layer", None)  # the bf16 cache's file count
        assert count_model_file(MODEL_PY, dtype) == stated


def test_a_step_of_a_counted_model_issues_its_layers_ops_and_its_own():
    """Llama-2-7B (32 query and KV heads) and Llama-3-8B (8 KV heads), 32 layers each. gpt-fast:
    GQA does not change the count (repeat_interleave expands and copies at any head ratio).
    generate: under eager, repeat_kv's 8 copies per layer where the KV heads are fewer; under sdpa
    none; its static cache is not counted."""
    for name in ("llama2-7b", "llama3-8b"):
        cfg = load_preset(name)
        for attention, kv_cache in (("sdpa", "static"), ("eager", "dynamic")):  # gpt-fast's own cache either way
            assert step_ops(cfg, "gpt-fast", "bf16", attention, kv_cache) == 32 * 126 + 36 == 4068
            assert step_ops(cfg, "gpt-fast", "fp32", attention, kv_cache) == 32 * 113 + 34 == 3650
        assert step_ops(cfg, "gpt-fast", "bf16", "sdpa", "static", {"weight_dtype": "int8"}) is None
        assert step_ops(cfg, "gpt-fast", "bf16", "sdpa", "static", {"kv_dtype": "fp8"}) == 4068  # a lower bound
        # fp16 is a half type as bf16 is: the same casts dispatch, the same count
        assert step_ops(cfg, "gpt-fast", "fp16", "sdpa", "static") == step_ops(cfg, "gpt-fast", "bf16", "sdpa", "static")
        assert step_ops(cfg, "transformers", "bf16", "sdpa", "dynamic") == 32 * 76 + 56 == 2488
        assert step_ops(cfg, "transformers", "fp32", "sdpa", "dynamic") == 32 * 72 + 51 == 2355
        assert step_ops(cfg, "transformers", "bf16", "sdpa", "static") is None
        # flash_attention_2 runs on no CPU: sdpa's count stands for it (kernel_facts.json "stands_for")
        assert step_ops(cfg, "transformers", "bf16", "flash", "dynamic") == 2488
    assert step_ops(load_preset("llama2-7b"), "transformers", "bf16", "eager", "dynamic") == 32 * 92 + 79 == 3023
    assert step_ops(load_preset("llama3-8b"), "transformers", "bf16", "eager", "dynamic") == 32 * 100 + 79 == 3279
    assert step_ops(load_preset("llama3-8b"), "transformers", "fp32", "eager", "dynamic") == 32 * 94 + 74 == 3082
    assert step_ops(load_preset("gpt2"), "gpt-fast", "bf16", "sdpa", "static") is None  # another family
    assert step_ops(load_preset("gpt2"), "transformers", "bf16", "eager", "dynamic") is None


def test_the_a100_files_state_the_sourced_dispatch_time():
    for name in ("a100-80gb", "a100-40gb", "a100-pcie"):
        hardware = load_hardware(name)
        assert hardware.dispatch_s_per_op == A100_DISPATCH_S and "FlagGems issue #4558" in hardware.source
        assert hardware.issues_ahead
    assert load_hardware("h100-sxm").dispatch_s_per_op is None  # no figure for its hosts (it borrows one)


def _timer(hardware: Hardware, **options) -> KernelTimer:
    return KernelTimer(hardware, "bf16", "sdpa", **options)


def test_the_step_takes_the_longer_of_kernels_and_host_not_their_sum():
    """10 ms of kernels with 1 ms of per-block launches: the host's term replaces the launches and
    runs alongside the 9 ms left; 1,000 ops x 7.1 us = 7.1 ms is hidden, 2,000 ops (14.2 ms) are not.
    A sum would give 16.1 ms and 23.2 ms."""
    timer = _timer(load_hardware("a100-80gb"))
    times = LeavesTime(10e-3, 1e-3)
    assert host_bound_seconds(times, 1000, timer) == pytest.approx(9e-3, rel=1e-12)
    assert host_bound_seconds(times, 2000, timer) == pytest.approx(2000 * A100_DISPATCH_S, rel=1e-12)
    assert host_bound_seconds(times, None, timer) == times.seconds  # not counted: unchanged
    for options in ({"cuda_graphs": True}, {"compiled": True}):  # the host replays or runs compiled code
        assert host_bound_seconds(times, 2000, _timer(load_hardware("a100-80gb"), **options)) == times.seconds
    # The H100's file states none: it borrows the project's H200 host's 6.545 us (tests/test_host_op_default.py)
    assert host_bound_seconds(times, 2000, _timer(load_hardware("h100-sxm"))) == 2000 * 6.545241752576789e-06


def test_one_rule_serves_numbers_and_arrays_simulate_and_serve():
    """eager_ops.eager_step_seconds is the rule host_bound_seconds, serve's HostBound and a layout's
    eager stages apply: max(kernels - launches, host), a float for numbers, an array for arrays (serve's
    decode runs). Dyadic seconds, so each value is exact: 0.75 s of kernels less 0.25 s of launches
    against 0.375 s (kernels win, 0.5) and 0.625 s (the host wins)."""
    import numpy as np

    from costmodel.eager_ops import eager_step_seconds
    from costmodel.serving.host_step import HostBound

    assert eager_step_seconds(0.75, 0.25, 0.375) == 0.5 and eager_step_seconds(0.75, 0.25, 0.625) == 0.625
    assert type(eager_step_seconds(np.float64(0.75), 0.0, 1)) is float
    assert eager_step_seconds(np.array([0.5, 1.0]), 0.0, 0.75).tolist() == [0.75, 1.0]

    class Kernels:  # a StepTime built without per-block launches: 0.5 s a step, 0.25 s more per decode step
        def seconds(self, query, context, emitting):
            return 0.5

        def decode_run(self, keys, steps):
            return 0.5 + 0.25 * np.arange(steps)

    bound = HostBound(Kernels(), lambda query, keys, emitting: 3, 0.25)  # 3 ops x 0.25 s = 0.75 s
    assert bound.seconds([1, 1], [7, 9]) == 0.75
    assert bound.decode_run([7, 9], 3).tolist() == [0.75, 0.75, 1.0]


def test_a_cpu_keeps_its_per_leaf_dispatch_and_a_gpu_does_not_add_it_per_leaf():
    """A CPU runs each op in the dispatching thread (KernelTimer.eager_ops, summed per leaf); on a
    GPU the serving step's per-leaf counts are not charged on top of the kernels."""
    cpu = Hardware.from_dict({"name": "cpu", "flops_per_s": {"fp32": 1e11}, "bandwidth_bytes_per_s": 1e10,
                              "memory_bytes": 2**34, "gemm_efficiency_by_rows": {"fp32": {"1": 0.1, "8": 0.5}},
                              "dispatch_s_per_op": 2e-6}, "cpu")
    ops = {"Norm": 6}
    assert not cpu.issues_ahead and KernelTimer(cpu, "fp32", "sdpa", eager_ops=ops).eager_ops == ops
    assert KernelTimer(cpu, "fp32", "sdpa").host_s_per_op is None
    gpu = _timer(load_hardware("a100-80gb"), eager_ops=ops)
    assert gpu.eager_ops is None and gpu.host_s_per_op == A100_DISPATCH_S
    # A CPU measured in bf16 alone has no rows table (it is measured in fp32) but a core count as
    # sm_count: its architecture "cpu", which `hardware --measure` writes, still names it a CPU.
    bf16_cpu = Hardware.from_dict({"name": "cpu", "flops_per_s": {"bf16": 1e11}, "bandwidth_bytes_per_s": 1e10,
                                   "memory_bytes": 2**34, "sm_count": 2, "architecture": "cpu",
                                   "vector_flops_per_s": 5e9,
                                   "dispatch_s_per_op": 2e-6}, "cpu")
    assert not bf16_cpu.issues_ahead
    timer = KernelTimer(bf16_cpu, "bf16", "sdpa", eager_ops=ops)
    assert timer.eager_ops == ops and timer.host_s_per_op is None


def _decode_step(dtype: str, cuda_graphs: bool, implementation: str = "gpt-fast") -> float:
    result = simulate_inference(load_preset("llama2-7b"), load_hardware("a100-80gb"), prompt=6, gen=200, batch=1,
                                dtype=dtype, attention="sdpa", kv_cache="static", cuda_graphs=cuda_graphs,
                                time_model="kernels", implementation=implementation)
    return result["decode"]["first_token"]["seconds"]


@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
def test_eager_gpt_fast_on_an_a100_is_host_bound_and_slower_than_its_graphs(dtype):
    """Llama-2-7B at batch 1: the eager step is its ops at 7.1 us each (more than the kernels' time),
    while CUDA graphs replay the same kernels with no host term."""
    ops = step_ops(load_preset("llama2-7b"), "gpt-fast", dtype, "sdpa", "static")
    eager, graphs = _decode_step(dtype, False), _decode_step(dtype, True)
    assert eager == pytest.approx(ops * A100_DISPATCH_S, rel=1e-12)
    assert graphs < eager
    assert _decode_step(dtype, False, "transformers") < eager  # generate's static cache: not counted


def test_simulate_times_hugging_face_generate_on_an_a100_by_its_host():
    """The default simulate (generate, eager attention, its dynamic cache): Llama-2-7B's step is
    3,023 ops at 7.1 us, 21.5 ms, longer than its 12.5 ms of kernels and launches."""
    result = simulate_inference(load_preset("llama2-7b"), load_hardware("a100-80gb"), prompt=5, gen=200, batch=1,
                                time_model="kernels")
    assert result["inputs"]["implementation"] == "transformers"
    assert result["decode"]["first_token"]["seconds"] == pytest.approx(3023 * A100_DISPATCH_S, rel=1e-12)
    host = result["decode"]["host"]
    assert (host["ops_per_step"], host["bound"]) == (3023, True)
    assert host["seconds_per_step"] == pytest.approx(3023 * A100_DISPATCH_S, rel=1e-12)
    from reports.simulate_text import render_inference

    assert "host: 3,023 eager ops a step (transformers), 21.5 ms to issue" in render_inference(result)
    graphs = simulate_inference(load_preset("llama2-7b"), load_hardware("a100-80gb"), prompt=5, gen=200, batch=1,
                                time_model="kernels", cuda_graphs=True)
    assert graphs["decode"]["first_token"]["seconds"] < 3023 * A100_DISPATCH_S / 1.5
    # An eager step issues one op per tensor, not per row: batch 2 issues the same 3,023 ops, so its
    # step is no shorter than batch 1's (it was 12.5 ms, faster than one sequence, when the host
    # term applied at batch 1 alone).
    batched = simulate_inference(load_preset("llama2-7b"), load_hardware("a100-80gb"), prompt=5, gen=200, batch=2,
                                 time_model="kernels")
    assert batched["decode"]["first_token"]["seconds"] == pytest.approx(3023 * A100_DISPATCH_S, rel=1e-12)
    assert batched["decode"]["host"]["ops_per_step"] == 3023


def test_the_prefill_and_the_uncached_reruns_are_host_bound_too():
    """The prefill and each uncached rerun run the same modules, so they issue at least a cached
    step's ops: none is shorter than 3,023 x 7.1 us. The reruns' sum over 3,000 steps, where the
    long contexts' reruns outgrow the floor, equals the step-by-step sum of max(rerun, host)."""
    import numpy as np

    from costmodel import roofline

    host = 3023 * A100_DISPATCH_S
    result = simulate_inference(load_preset("llama2-7b"), load_hardware("a100-80gb"), prompt=5, gen=3000, batch=1,
                                time_model="kernels")
    assert result["prefill"]["seconds"] == pytest.approx(host, rel=1e-12)  # 12.5 ms of kernels under it
    table = result["generation_table"]
    assert min(row["without_cache_seconds"] for row in table) == pytest.approx(host, rel=1e-12)
    assert table[-1]["without_cache_seconds"] > 10 * host  # context 3,004: the rerun's own time
    roof = roofline.Roofline(load_preset("llama2-7b"), load_hardware("a100-80gb"), "bf16", None, "eager", "dynamic",
                             False, None, "naive")
    contexts = np.arange(6, 3005)  # 2,999 steps: the prefill gives the first of the 3,000 tokens
    reruns = np.asarray(roof.rerun(1, contexts, source_len=1)[1])
    assert reruns[0] < host < reruns[-1]  # the floor binds on a prefix only
    expected = result["prefill"]["seconds"] + np.maximum(reruns, host).sum()
    assert table[-1]["without_cache_cumulative"] == pytest.approx(expected, rel=1e-9)


def _generate_stated(attention: str, dtype: str, kv_heads: int) -> dict[str, int]:
    stated = _stated(dtype, "transformers", attention)
    grouped = stated.pop("grouped_kv_per_layer", 0) if kv_heads < 4 else 0
    stated.pop("grouped_kv_per_layer", None)
    return {"per_layer": stated["per_layer"] + grouped, "per_step": stated["per_step"]}


def test_generate_issues_the_stated_ops_every_step():
    """sdpa, bf16, 2 KV heads of 4: the same count over steps 3-7 and 7-11, and per layer and the
    step's own as stated."""
    pytest.importorskip("transformers")
    from validate.generate_ops import per_step, step_ops as counted

    assert per_step(1, 2, "sdpa", "bf16", 3, 7) == per_step(1, 2, "sdpa", "bf16", 7, 11)
    # one op per tensor, not per row: the same count at batches 2 and 4 (roofline.KernelSteps
    # charges it at any batch)
    assert per_step(1, 2, "sdpa", "bf16") == per_step(1, 2, "sdpa", "bf16", batch=2) == per_step(
        1, 2, "sdpa", "bf16", batch=4)
    assert per_step(1, 2, "eager", "bf16") == per_step(1, 2, "eager", "bf16", batch=2)
    assert counted("sdpa", "bf16", 2) == _generate_stated("sdpa", "bf16", 2)


@pytest.mark.slow
@pytest.mark.parametrize("attention", ["eager", "sdpa"])
@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
@pytest.mark.parametrize("kv_heads", [4, 2])
def test_every_stated_generate_count_is_counted_again(attention, dtype, kv_heads):
    pytest.importorskip("transformers")
    from validate.generate_ops import step_ops as counted

    assert counted(attention, dtype, kv_heads) == _generate_stated(attention, dtype, kv_heads)


def test_an_uncounted_eager_step_on_a_gpu_says_so_and_a_quantized_cache_keeps_the_count():
    """sdpa with a static cache (generate's static cache is not counted): the steps are the kernels'
    and the text says the host's ops are not counted, rather than silently dropping the host term.
    An fp8 KV cache alone keeps the bf16 step's count (a lower bound), and fp16 is bf16's."""
    from reports.simulate_text import render_inference

    def run(**options):
        return simulate_inference(load_preset("llama2-7b"), load_hardware("a100-80gb"), prompt=5, gen=20, batch=1,
                                  time_model="kernels", **options)

    static = run(attention="sdpa", kv_cache="static")
    assert static["decode"]["host"] == {"ops_per_step": None, "seconds_per_step": None, "bound": None}
    assert "host: the eager ops a transformers step issues are not counted" in render_inference(static)
    host = 3023 * A100_DISPATCH_S
    for options in ({"quantization": {"kv_dtype": "fp8"}}, {"dtype": "fp16"}):
        assert run(**options)["decode"]["first_token"]["seconds"] == pytest.approx(host, rel=1e-12)
    assert "host" not in run(cuda_graphs=True)["decode"]  # no host term under graphs: nothing to say


def test_the_decoding_code_is_chosen_on_the_cli_and_in_the_api():
    """`simulate --decode-code gpt-fast` (and costmodel.simulate's decode_code): gpt-fast's
    4,068 ops a step in bf16 at 7.1 us; an unknown code is one error line, exit 2."""
    import json

    import costmodel
    from cli import main

    result = costmodel.simulate("llama2-7b", "a100-80gb", prompt=5, gen=20, attention="sdpa", kv_cache="static",
                                decode_code="gpt-fast")
    assert result.data["decode"]["host"]["ops_per_step"] == 4068
    assert result.data["decode"]["first_token"]["seconds"] == pytest.approx(4068 * A100_DISPATCH_S, rel=1e-12)
    from costmodel.config import ConfigError

    # wt41_hfgen: the releases the HF generate rows name (4.31-4.39) joined the codes
    with pytest.raises(ConfigError, match="--decode-code must be transformers, transformers-4.31, transformers-4.32, "
                       "transformers-4.34, transformers-4.36, transformers-4.39, transformers-4.46, transformers-4.51, gpt-fast, gpt-fast-mixtral, "
                       "tensorrt-llm, autoawq-fused, autoawq-fused-0.1.6, autoawq-fused-d6ac3be, exllama-v1, tinychat-llama, "
                       "tinychat-mpt-falcon, lit-gpt-d16f924d or lit-gpt-982abcbc"):
        # wt40_litgpt: lit-gpt's two codes; wt43_eagerops: AutoAWQ's fused modules' two; wt44_eagerblock: ExLlama v1's
        # and TinyChat's Llama; wt45_eagerhost: AutoAWQ's fused models at d6ac3be, TinyChat's MPT and Falcon
        costmodel.simulate("llama2-7b", "a100-80gb", prompt=5, gen=20, decode_code="vllm")
    assert main(["simulate", "--model", "llama2-7b", "--hardware", "a100-80gb", "--prompt", "5", "--gen", "20",
                 "--attention", "sdpa", "--kv-cache", "static", "--decode-code", "gpt-fast", "--json"]) == 0
    assert main(["simulate", "--model", "llama2-7b", "--decode-code", "vllm"]) == 2
