"""TensorRT-LLM v0.6.1's generation-phase attention, the masked MHA (kernel_facts.json
"decode_attention_kernels" "trtllm-mmha"): one thread block per (query head, sequence), each loading its
KV head's whole cache itself, its products FP32 FMAs on the CUDA cores (decoderMaskedMultiheadAttention-
Template.h at 138f96d). Exact bytes and FLOPs of a single-query call under it, the prefill left to the
fused kernel, both decode paths (simulate and the layout model) alike, and the TensorRT-LLM rows stating it."""

from __future__ import annotations

import pytest

from costmodel.config import ConfigError, Workload
from costmodel.hardware import load_hardware
from costmodel.kernel_time import AttentionCall, KernelTimer
from costmodel.presets import load_preset

H100 = load_hardware("h100-sxm")
# h100-sxm.json: 3.35 TB/s at its memory efficiency 0.8; the FP32 non-tensor peak 67 TFLOP/s at its compute
# efficiency 0.7 (KernelTimer.bandwidth, .vector: every memory-bound kernel's rates)
BANDWIDTH, VECTOR = 3.35e12 * 0.8, 67e12 * 0.7


def _timers() -> tuple[KernelTimer, KernelTimer]:
    return (KernelTimer(H100, "fp16", "flash"), KernelTimer(H100, "fp16", "flash", decode_kernel="trtllm-mmha"))


def test_a_grouped_decode_call_loads_the_shared_cache_once_per_query_head():
    """4 sequences, 8 query heads sharing 1 KV head, 1,000 cached keys, heads of 128, fp16: each query head's
    block loads the 1,000 keys and values (8 x 1,000 x 256 x 2 bytes a sequence) where FlashAttention-style
    decoding loads them once; the products, 2 x 4 x 8 x 1,000 x 256 FLOPs, at the vector rate."""
    call = AttentionCall(batch=4, heads=8, n_q=1, n_kv=1000, head_dim=128, kv_heads=1)
    flash, mmha = _timers()
    queries_and_output = 4 * 2 * 8 * 1 * 256  # bytes: q and the output, fp16
    assert call.moved_bytes(2) == queries_and_output + 4 * 2 * 1 * 1000 * 256 == 2_064_384
    compute, moved = mmha.attention_terms(call)
    assert moved == pytest.approx((queries_and_output + 4 * 2 * 8 * 1000 * 256) / BANDWIDTH, rel=1e-12)
    assert moved * BANDWIDTH == pytest.approx(16_400_384, abs=1e-3)
    assert compute == pytest.approx(2 * 4 * 8 * 1000 * 256 / VECTOR, rel=1e-12)  # 16,384,000 FLOPs
    assert flash.attention_terms(call)[1] * BANDWIDTH == pytest.approx(2_064_384, abs=1e-3)
    # an 8-bit cache read as stored: the per-query-head loads at 1 byte an element
    quantized = AttentionCall(batch=4, heads=8, n_q=1, n_kv=1000, head_dim=128, kv_heads=1, kv_element_bytes=1)
    assert mmha.attention_terms(quantized)[1] * BANDWIDTH == pytest.approx(queries_and_output + 4 * 8 * 1000 * 256)


def test_the_prefill_and_ungrouped_heads_are_timed_as_before():
    """The kernel is the generation phase's: a prompt's call (n_q > 1) runs the context FMHA, timed by the fused
    kernel's figures; with as many KV heads as query heads (Llama-2-7B) the loads are the same bytes."""
    flash, mmha = _timers()
    prefill = AttentionCall(batch=2, heads=8, n_q=512, n_kv=512, head_dim=128, kv_heads=1)
    assert mmha.attention_terms(prefill) == flash.attention_terms(prefill)
    ungrouped = AttentionCall(batch=2, heads=8, n_q=1, n_kv=700, head_dim=128)
    assert mmha.attention_terms(ungrouped)[1] == flash.attention_terms(ungrouped)[1]
    windowed = AttentionCall(batch=1, heads=8, n_q=1, n_kv=5000, head_dim=128, kv_heads=2, window=1000)
    assert mmha.attention_terms(windowed)[1] * BANDWIDTH == pytest.approx(2 * 8 * 256 + 2 * 8 * 1000 * 256)


def test_an_unknown_decode_kernel_is_refused():
    with pytest.raises(ConfigError, match="decode attention kernel 'xqa' is not known; known: trtllm-mmha"):
        KernelTimer(H100, "fp16", "flash", decode_kernel="xqa")


def test_simulate_and_the_layout_model_time_the_kernel_alike():
    """Llama-3-8B (32 query heads, 8 KV heads, 32 layers, heads of 128), batch 4, prompt 512, one decode step
    at 513 keys, bf16 on one H100: the step is longer by the 24 extra loads of each KV head's cache, 32 x 4 x 24 x
    513 x 256 x 2 bytes at the bandwidth, in simulate_inference and in the layout model (tp 1) alike."""
    from costmodel.layout import Layout
    from costmodel.layout.timing import simulate_decode
    from costmodel.roofline import simulate_inference

    cfg = load_preset("llama3-8b")
    assert (cfg.n_heads, cfg.n_kv_heads, cfg.n_layers, cfg.d_model // cfg.n_heads) == (32, 8, 32, 128)
    workload = Workload(seq_len=512, gen_tokens=2, batch=4, dtype="bf16", attention="flash", precision="pure",
                        kv_cache="static")
    steps = {}
    for kernel in (None, "trtllm-mmha"):
        layout = simulate_decode(cfg, workload, Layout(tp=1), H100, cuda_graphs=True, time_model="kernels",
                                 implementation="gpt-fast", decode_kernel=kernel)
        alone = simulate_inference(cfg, H100, prompt=512, gen=2, batch=4, dtype="bf16", attention="flash",
                                   kv_cache="static", cuda_graphs=True, time_model="kernels", implementation="gpt-fast",
                                   decode_kernel=kernel)
        assert alone["decode"]["decode_seconds"] == pytest.approx(layout["generation"]["decode_seconds"], rel=1e-12)
        steps[kernel] = (layout["prefill"]["seconds"], layout["generation"]["decode_seconds"])
    assert steps["trtllm-mmha"][0] == steps[None][0]  # the prompt's attention: the context FMHA's, as before
    assert steps["trtllm-mmha"][1] - steps[None][1] == pytest.approx(32 * 4 * 24 * 513 * 256 * 2 / BANDWIDTH, rel=1e-9)


def test_the_roofline_leaves_the_decode_kernel_to_the_kernel_model():
    from costmodel.layout import Layout
    from costmodel.layout.timing import simulate_decode

    cfg = load_preset("llama3-8b")
    workload = Workload(seq_len=512, gen_tokens=2, batch=4, dtype="bf16", attention="flash", precision="pure",
                        kv_cache="static")
    times = [simulate_decode(cfg, workload, Layout(tp=1), H100, time_model="roofline", decode_kernel=kernel)
             ["token"]["seconds_per_token"] for kernel in (None, "trtllm-mmha")]
    assert times[0] == times[1]


def test_serves_step_and_static_batches_take_the_kernel():
    """serve's kernel-model step (benchmarks/published_trtllm_static.py's static batches): the same decode step,
    4 sequences at 513 keys, longer by the same extra loads; the roofline refuses the kernel in one line."""
    import numpy as np

    from costmodel.serving.replica import build_replica
    from costmodel.serving.steptime import StepTime

    cfg = load_preset("llama3-8b")
    seconds = [StepTime(cfg, H100, "bf16", None, None, 1, 1, "kernels", decode_kernel=kernel)
               .seconds(np.array([1] * 4), np.array([513] * 4)) for kernel in (None, "trtllm-mmha")]
    assert seconds[1] - seconds[0] == pytest.approx(32 * 4 * 24 * 513 * 256 * 2 / BANDWIDTH, rel=1e-9)
    with pytest.raises(ConfigError, match="decode kernel trtllm-mmha is the kernel model's"):
        build_replica(cfg, H100, scheduler="static", max_num_seqs=4, num_blocks=10**6, host=False,
                      time_model="roofline", decode_kernel="trtllm-mmha")
