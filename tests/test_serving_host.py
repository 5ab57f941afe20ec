"""serve's eager steps on a GPU weigh the host as simulate's do (costmodel/serving/host_step.py): where
the scheduler's code has counted ops (static: Hugging Face generate's kernel_facts.json eager_step_ops;
hf-fifo and hf-prefill-first: transformers' engine's eager_ops per leaf), a step takes the longer of its
kernels less their per-block launches (each kernel keeping graph_kernel_s since session 39) and its ops at the
hardware's op time (the A100 files' 7.1 us, the other GPUs the borrowed 6.545 us of kernel_facts.json
"eager_host_op_default"). vLLM's eager steps
(--cuda-graphs off) keep their per-block launches: vLLM's ops are not counted."""

from __future__ import annotations

import numpy as np
import pytest

from costmodel.hardware import load_hardware
from costmodel.presets import load_preset
from costmodel.roofline import simulate_inference
from costmodel.serving.replica import build_replica
from costmodel.serving.host_step import HostBound

H200_HOST_S = 6.545241752576789e-06  # kernel_facts.json eager_host_op_default (benchmarks/h200-measured.json)
A100_HOST_S = 7.1e-06  # the A100 files' dispatch_s_per_op (FlagGems issue #4558)
#: generate's decode step of Llama-3-8B under sdpa in bf16 (kernel_facts.json eager_step_ops, eager_ops.step_ops)
LLAMA3_8B_GENERATE_OPS = 2_488
#: transformers' engine's ops (kernel_facts.json eager_ops) of Llama-3-8B's step, 32 layers: per layer two
#: norms 2 x 6, q/k/v 12, rotary 16, the attention module 30 (a mask, keys cached), o 4, two adds 2, FFN 14
#: = 90; the step's own: embedding 1, rotary tables 8, final norm 6, head 4 = 19
ENGINE_MASKED = 32 * 90 + 19  # 2,899
ENGINE_ALONE = ENGINE_MASKED - 32 * (30 - 23)  # one sequence decoding alone: no mask, 23 ops a layer: 2,675
ENGINE_FIRST_CHUNKS = ENGINE_MASKED - 32 * (30 - 28)  # nothing cached yet: 28 a layer: 2,835


def _replica(scheduler: str, hardware: str = "h100-sxm", **options):
    return build_replica(load_preset("llama3-8b"), load_hardware(hardware), scheduler=scheduler, attention="sdpa",
                         **options)


def test_static_decode_step_is_generates_host_as_simulate_has_it():
    """Batch 4 at 301 keys: host-bound at 2,488 x 6.545 us = 16.28 ms, the float simulate's one-GPU
    eager step gives (its decode.host and first step)."""
    _, step, setup = _replica("static")
    assert isinstance(step, HostBound) and setup["host"]["code"] == "generate" and setup["host"]["op_time_borrowed"]
    seconds = step.seconds(np.ones(4, dtype=np.int64), np.full(4, 301))
    assert seconds == LLAMA3_8B_GENERATE_OPS * H200_HOST_S
    sim = simulate_inference(load_preset("llama3-8b"), load_hardware("h100-sxm"), prompt=300, gen=4, batch=4,
                             dtype="bf16", attention="sdpa", time_model="kernels")
    assert sim["decode"]["host"]["ops_per_step"] == LLAMA3_8B_GENERATE_OPS
    assert sim["decode"]["first_token"]["seconds"] == seconds
    assert step.decode_run(np.full(4, 301), 3).tolist() == [seconds] * 3


def test_kernel_bound_steps_are_their_kernels_without_launches():
    """A prefill of 8,192 tokens runs longer than its 2,488 ops: the kernels of a step model built with no
    per-block launch overhead, to the float."""
    _, step, _ = _replica("static")
    query, keys = np.array([8_192]), np.array([8_192])
    assert step.step.timer.launch_s == 0.0  # the kernels' step model: no per-block launches
    assert step.seconds(query, keys) == step.step.seconds(query, keys) > LLAMA3_8B_GENERATE_OPS * H200_HOST_S


#: the kernels one step of Llama-3-8B under sdpa launches (launches_of over its leaves: 32 layers x 15 + embedding,
#: final norm, head), each keeping h100-sxm.json's graph_kernel_s (1.3 us) on the GPU's side in an eager step
LLAMA3_8B_STEP_KERNELS = 483
H100_GRAPH_KERNEL_S = 1.3e-06  # costmodel/hardware/h100-sxm.json graph_kernel_s


@pytest.mark.parametrize("query,keys", [([8_192], [8_192]), ([1] * 64, [2_001] * 64)])
def test_a_gpu_bound_eager_step_keeps_its_kernels_stream_cost(query, keys):
    """A GPU-bound eager step (a prefill of 8,192 tokens; 64 sequences decoding at 2,001 keys) is its kernels without
    per-block launches plus 483 x 1.3 us = 0.628 ms (KernelTimer.stream_seconds, the rule simulate's eager steps
    take since session 38); before session 39 serve's eager steps dropped it."""
    from costmodel.serving.replica import replica_profile
    from costmodel.serving.kernel_steptime import KernelStepTime

    cfg, hardware = load_preset("llama3-8b"), load_hardware("h100-sxm")
    assert hardware.graph_kernel_s == H100_GRAPH_KERNEL_S
    _, step, _ = _replica("static")
    bare = KernelStepTime(cfg, hardware.replace(overhead_s_per_block=0.0), "bf16",
                          profile=replica_profile(cfg, "static", attention="sdpa"))  # no stream cost
    query, keys = np.array(query), np.array(keys)
    assert step.seconds(query, keys) > LLAMA3_8B_GENERATE_OPS * H200_HOST_S  # GPU-bound
    assert step.seconds(query, keys) == pytest.approx(
        bare.seconds(query, keys) + LLAMA3_8B_STEP_KERNELS * H100_GRAPH_KERNEL_S, rel=1e-12)


def test_a_gpu_bound_eager_decode_step_is_simulates_and_a_graph_gains_nothing():
    """64 sequences at 2,001 keys: serve's static step is simulate's eager decode step to rounding (both keep the
    1.3 us a kernel) and simulate --cuda-graphs' step (the kernels plus graph_kernel_s a kernel) is no faster.
    Before session 39 serve's step was 0.628 ms (483 x 1.3 us) under both."""
    _, step, _ = _replica("static")
    seconds = step.seconds(np.ones(64, dtype=np.int64), np.full(64, 2_001))
    runs = [simulate_inference(load_preset("llama3-8b"), load_hardware("h100-sxm"), prompt=2_000, gen=2, batch=64,
                               dtype="bf16", attention="sdpa", time_model="kernels", cuda_graphs=graphs,
                               implementation="transformers")["decode"]["first_token"]["seconds"]
            for graphs in (False, True)]
    assert seconds == pytest.approx(runs[0], rel=1e-12) and seconds == pytest.approx(runs[1], rel=1e-12)


def test_a_host_bound_eager_step_is_its_ops_whatever_its_kernels_keep():
    """One sequence decoding at 301 keys: 2,488 ops x 6.545 us, as before session 39."""
    _, step, _ = _replica("static")
    assert step.seconds(np.ones(1, dtype=np.int64), np.full(1, 301)) == LLAMA3_8B_GENERATE_OPS * H200_HOST_S


@pytest.mark.parametrize("query,keys,emitting,ops", [
    ([1, 1], [100, 300], 2, ENGINE_MASKED),
    ([1], [100], 1, ENGINE_ALONE),
    ([5, 7], [5, 7], 2, ENGINE_FIRST_CHUNKS),
    ([5, 7], [5, 7], 0, ENGINE_FIRST_CHUNKS - 4),  # no token emitted: no head
])
def test_hf_engine_counts_its_leaves_ops_by_the_steps_case(query, keys, emitting, ops):
    _, step, setup = _replica("hf-fifo")
    assert setup["host"]["code"] == "engine"
    assert step.ops(np.array(query), np.array(keys), emitting) == ops
    assert step.seconds(query, keys, emitting) == max(step.step.seconds(query, keys, emitting), ops * H200_HOST_S)


def test_an_a100_file_keeps_its_own_op_time():
    _, step, setup = _replica("hf-prefill-first", "a100-80gb")
    assert step.seconds([1, 1], [100, 300]) == ENGINE_MASKED * A100_HOST_S and not setup["host"]["op_time_borrowed"]


@pytest.mark.parametrize("scheduler,options", [("vllm", {"cuda_graphs": "off"}), ("sarathi", {}), ("orca", {}),
                                               ("vllm", {})])
def test_vllm_family_steps_take_no_host_term(scheduler, options):
    _, step, setup = _replica(scheduler, **options)
    assert not isinstance(step, HostBound) and "host" not in setup


def test_no_host_term_where_none_applies():
    """The roofline (it counts no ops); a model whose generate step's ops are not counted (DeepSeek-V2-Lite's
    latent attention)."""
    _, step, _ = _replica("static", time_model="roofline")
    assert not isinstance(step, HostBound)
    _, step, _ = build_replica(load_preset("deepseek-v2-lite"), load_hardware("h100-sxm"), scheduler="static")
    assert not isinstance(step, HostBound)


def test_serve_text_names_the_host(capsys):
    from tests.cli_run import run_main

    code, out, _ = run_main(["serve", "--model", "llama3-8b", "--hardware", "h100-sxm", "--scheduler", "static",
                             "--attention", "sdpa", "--rate", "1", "--requests", "4"], capsys)
    assert code == 0 and ("host: each eager step takes the longer of its kernels and Hugging Face generate's counted "
                          "ops at 6.55 us each (host time an op: 6.55 us, borrowed") in out
