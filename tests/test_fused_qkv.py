"""gpt-fast's and torchao's Q, K and V as the one GEMM their model.py stores (`self.wqkv =
nn.Linear(config.dim, total_head_dim)`, then `.split`): kernel_facts.json "fused_projections",
kernel_shapes.fused_gemm, KernelTimer(fused_qkv=...). Counts from the model file: a layer runs wqkv,
wo, w1, w3 and w2 (5 GEMMs, not transformers' 7) and 12 kernels under CUDA graphs (not 14)."""

from __future__ import annotations

import pytest

from costmodel.hardware import load_hardware
from costmodel.kernel_facts_file import fuses_qkv, kernel_facts
from costmodel.kernel_shapes import Gemm, fused_gemm
from costmodel.kernel_time import KernelTimer, inference_subs, leaf_kernels, leaves_time
from costmodel.presets import load_preset
from costmodel.roofline import Roofline, simulate_inference


def test_the_fact_names_gpt_fasts_and_tensorrt_llms_code_only():
    fact = kernel_facts()["fused_projections"]
    # session 40 (wt40_litgpt): lit-gpt's CausalSelfAttention holds one `attn` Linear for q, k and v at both commits
    # wt43_eagerops: AutoAWQ's fused codes (fused_utils.fuse_qkv: one qkv WQLinear)
    assert fact["implementations"] == {"gpt-fast": ["qkv"], "gpt-fast-mixtral": ["qkv"], "tensorrt-llm": ["qkv"],
                                       "autoawq-fused": ["qkv"], "autoawq-fused-0.1.6": ["qkv"],
                                       # wt45_eagerhost: AutoAWQ's MPT and Falcon blocks at d6ac3be (Wqkv,
                                       # query_key_value: one WQLinear each)
                                       "autoawq-fused-d6ac3be": ["qkv"],
                                       # wt44_eagerblock: TinyChat's make_quant_attn (one qkv WQLinear)
                                       "tinychat-llama": ["qkv"],
                                       # wt45_eagerhost: TinyChat's MPT (Wqkv) and Falcon (query_key_value)
                                       "tinychat-mpt-falcon": ["qkv"],
                                       "lit-gpt-d16f924d": ["qkv"], "lit-gpt-982abcbc": ["qkv"]}
    assert "self.wqkv = nn.Linear(config.dim, total_head_dim, bias=False)" in fact["source"]
    assert "self.qkv = ColumnLinear(hidden_size, hidden_size + 2 * tp_size" in fact["source_tensorrt_llm"]
    assert (fuses_qkv("gpt-fast"), fuses_qkv("gpt-fast-mixtral"), fuses_qkv("tensorrt-llm"), fuses_qkv("transformers"),
            fuses_qkv(None)) == (True, True, True, False, False)


def test_one_gemm_of_the_summed_outputs_and_stored_bytes():
    # Llama-3-8B at one token: q 4,096, k and v 1,024 each of 4,096 inputs -> wqkv's 6,144 outputs
    q, k, v = Gemm(1, 4096, 4096), Gemm(1, 1024, 4096), Gemm(1, 1024, 4096)
    assert fused_gemm([q, k, v]) == Gemm(1, 6144, 4096)
    # int4 (odd sizes): each matrix's stored bytes add; the first reader quantizes an fp8 input
    parts = [Gemm(3, 40, 96, weight_bytes=2000.0, weight_dtype="int4"),
             Gemm(3, 8, 96, weight_bytes=448.0, weight_dtype="int4")]
    assert fused_gemm(parts) == Gemm(3, 48, 96, weight_bytes=2448.0, weight_dtype="int4")
    fp8 = [Gemm(1, 40, 96, weight_dtype="fp8", quantizes_input=True), Gemm(1, 8, 96, weight_dtype="fp8")]
    assert fused_gemm(fp8).quantizes_input and fused_gemm(fp8).n == 48
    with pytest.raises(ValueError, match="one input"):
        fused_gemm([Gemm(1, 40, 96), Gemm(1, 40, 97)])


def _step_kernels(fused: bool) -> tuple[int, int, float]:
    """Llama-2-7B's decode step at context 100 on an A100 under CUDA graphs: its kernels, its GEMMs
    and its seconds (the kernel model's leaves)."""
    hardware = load_hardware("a100-80gb")
    roof = Roofline(load_preset("llama2-7b"), hardware, "bf16", None, "sdpa", "static", True, None, "naive")
    leaves, _ = roof.step_leaves()
    subs = inference_subs(roof.cfg, "bf16", 1, 1, context=100)
    timer = KernelTimer(hardware, "bf16", "sdpa", cuda_graphs=True, fused_qkv=fused)
    gemms = sum(int(leaf.count.xreplace(subs)) * sum(isinstance(k, Gemm) for k in
                leaf_kernels(leaf, subs, True, fused_qkv=fused)) for leaf in leaves)
    times = leaves_time(leaves, subs, timer)
    return sum(row.count * row.kernels for row in times.leaves), gemms, times.seconds


def test_gpt_fasts_llama2_7b_step_runs_12_kernels_a_layer():
    fused, separate = _step_kernels(True), _step_kernels(False)
    # gpt-fast: wqkv, wo, w1, w3, w2 (5 GEMMs) a layer and the head; transformers' q, k, v apart (7)
    assert (fused[0], fused[1]) == (32 * 12 + 3, 32 * 5 + 1) == (387, 161)
    assert (separate[0], separate[1]) == (32 * 14 + 3, 32 * 7 + 1) == (451, 225)
    # two kernels fewer a layer, each a graph gap (1.34 us) and a DRAM start (1.96 us); the bytes are
    # the same but wqkv reads its 4,096-element input once, not three times (16 KiB fewer a layer)
    a100 = load_hardware("a100-80gb")
    saved = 64 * (a100.graph_kernel_s + a100.dram_kernel_startup_s)
    assert separate[2] - fused[2] == pytest.approx(saved + 32 * 2 * 2 * 4096 / a100.gemv_bandwidth_bytes_per_s,
                                                   rel=1e-9)


def test_simulate_reads_the_decoding_code():
    """simulate --decode-code gpt-fast runs wqkv; transformers' generate its three projections."""
    a100 = load_hardware("a100-80gb")
    step = {code: simulate_inference(load_preset("llama2-7b"), a100, prompt=6, gen=2, batch=1, dtype="bf16",
                                     attention="sdpa", kv_cache="static", cuda_graphs=True, time_model="kernels",
                                     implementation=code)["decode"]["first_token"]["seconds"]
            for code in ("gpt-fast", "transformers")}
    assert step["transformers"] - step["gpt-fast"] == pytest.approx(
        64 * (a100.graph_kernel_s + a100.dram_kernel_startup_s) + 64 * 2 * 4096 / a100.gemv_bandwidth_bytes_per_s,
        rel=1e-9)


def test_a_tensor_parallel_rank_runs_its_wqkv_shard_as_one_gemm():
    """gpt-fast's tp.py shards wqkv as one colwise linear (shard_qkv): Llama-2-70B int4 g32 at tp 8, a
    rank's (64 + 2 x 8) x 128 / 8 = 1,280 outputs of 8,192 inputs, one GEMM a layer."""
    from costmodel.config import Workload
    from costmodel.layout import Layout, ParallelEstimate
    from costmodel.layout.kernel_step import rank_kernels
    from reports.published_decode import decode_setup
    from reports.published_runs import other_runs_data

    data = other_runs_data()
    run = next(r for r in data["runs"] if r["id"] == "gpt-fast llama2-70b int4 g32 tp8")
    cfg, _, s, quantization = decode_setup(run, data["sources"]["gpt-fast"])
    workload = Workload(seq_len=1, gen_tokens=200, batch=1, dtype="bf16", attention="sdpa", precision="pure",
                        kv_cache="static", **quantization)
    estimate = ParallelEstimate(cfg, workload, Layout(tp=8, all_reduce="intra-node", vocab_parallel=False),
                                phase="decode")
    qkv = {fused: [k for key, _, _, kernels in rank_kernels(estimate, True, False, fused_qkv=fused)
                   for k in kernels if isinstance(k, Gemm) and k.k == 8192 and k.n in (1024, 128, 1280)]
           for fused in (True, False)}
    assert [(g.m, g.n, g.k) for g in qkv[True]] == [(1, 1280, 8192)]
    assert [(g.m, g.n, g.k) for g in qkv[False]] == [(1, 1024, 8192), (1, 128, 8192), (1, 128, 8192)]
    assert qkv[True][0].weight_bytes == sum(g.weight_bytes for g in qkv[False])
