"""Session 28's unseen training rows (costmodel/published_runs.json sources "olmo-core", "tinyllama",
"gpu-hours-pythia", "gpu-hours-deepseek-v2", "gpu-hours-deepseek-v3", "gpt-neox-20b", "gpu-hours-smollm3"
and "gpu-hours-deepseek-67b"): each row's figure and layout
as its source prints them, and the models as the sources size them."""

from __future__ import annotations

import pytest

from costmodel.config import Workload
from reports.published_runs import other_runs_data, train_setup


def _run(run_id: str) -> tuple[dict, dict]:
    data = other_runs_data()
    run = next(r for r in data["runs"] if r["id"] == run_id)
    return run, data["sources"][run_id.split()[0]]


def _llama_like_ffn(d_model: int, multiplier: float | None = None, multiple_of: int = 256) -> int:
    """OLMo-core's llama_like FFN width (src/olmo_core/nn/transformer/config.py at e27ba7455)."""
    hidden = int(8 * d_model / 3)
    if multiplier is not None:
        hidden = int(multiplier * hidden)
    return multiple_of * ((hidden + multiple_of - 1) // multiple_of)


# allenai/OLMo-core README.md at 3a403459 (figures of e27ba745): tokens/s per device; the scripts at
# e27ba745: (d_model, layers, heads, KV heads, FFN) and rank micro-batch, global batch in sequences of 4,096
OLMO_CORE = {
    "olmo-core olmo2-1b bf16 8xh100": (55_000, (2048, 18, 16, 16, _llama_like_ffn(2048)), 8, 1024),
    "olmo-core olmo2-1b fp8 8xh100": (65_000, (2048, 18, 16, 16, _llama_like_ffn(2048)), 8, 1024),
    "olmo-core olmo2-7b bf16 8xh100": (10_000, (4096, 32, 32, 32, _llama_like_ffn(4096)), 2, 1024),
    "olmo-core olmo2-7b fp8 8xh100": (13_000, (4096, 32, 32, 32, _llama_like_ffn(4096)), 2, 1024),
    "olmo-core llama3-8b bf16 8xh100": (9_500, (4096, 32, 32, 8, _llama_like_ffn(4096, 1.3, 1024)), 2, 1024),
    "olmo-core llama3-8b fp8 8xh100": (12_500, (4096, 32, 32, 8, _llama_like_ffn(4096, 1.3, 1024)), 2, 1024),
    "olmo-core olmo2-13b bf16 8xh100": (4_600, (5120, 40, 40, 40, _llama_like_ffn(5120)), 1, 2048),
    "olmo-core olmo2-13b fp8 8xh100": (5_500, (5120, 40, 40, 40, _llama_like_ffn(5120)), 1, 2048),
}


def test_olmo_core_ffn_widths_and_vocabulary():
    """llama_like's FFN rule gives 5,632, 11,008, 13,824 and the 8B's 14,336; the dolma2 tokenizer's
    100,278 tokens padded to a multiple of 128: 100,352."""
    assert [_llama_like_ffn(d) for d in (2048, 4096, 5120)] == [5632, 11008, 13824]
    assert _llama_like_ffn(4096, 1.3, 1024) == 14336
    assert 128 * ((100278 + 127) // 128) == 100352


@pytest.mark.parametrize("run_id", sorted(OLMO_CORE))
def test_each_olmo_core_row_is_its_table_and_script(run_id):
    """8 GPUs (the launch config's one node), FSDP over all of them, the scripts' micro-batches and
    global batches, 4,096 tokens, torch.compile, no recomputation, the 100,352 vocabulary and an
    untied head; FP8 rows torchao's dynamic tensorwise recipe."""
    published, (d_model, layers, heads, kv_heads, ffn), micro, global_batch = OLMO_CORE[run_id]
    run, source = _run(run_id)
    assert run["published_tokens_per_s_per_gpu"] == published
    estimate, hardware, options = train_setup(run, source)
    layout, workload, cfg = estimate.layout, estimate.workload, estimate.cfg
    assert (layout.tp, layout.pp, layout.dp, layout.zero, layout.framework) == (1, 1, 8, 3, "fsdp2")
    assert (workload.batch, layout.microbatches, workload.seq_len) == (micro, global_batch // (8 * micro), 4096)
    assert (cfg.d_model, cfg.n_decoder_layers, cfg.n_heads, cfg.n_kv_heads, cfg.d_ff) == (d_model, layers, heads, kv_heads, ffn)
    assert (cfg.vocab_size, cfg.tie_embeddings, workload.recompute) == (100352, False, "none")
    assert layout.fp8 == ("tensorwise" if " fp8 " in run_id else None)
    assert hardware.name == "h100-sxm" and options == {"autocast": False, "compiled": True}


def test_the_olmo2_rows_are_the_hf_reader_s_olmo2():
    """The rows' OLMo 2 (config_changes on the llama2-7b preset) equal what costmodel/hf.py reads from
    an Olmo2ForCausalLM config.json of the same sizes, and its parameter count is OLMo-2-1124-7B's
    and -13B's: 2 V d (untied) + L (4 d^2 + 3 d f + 4 d) + d (the norms after each sublayer, the
    whole-projection q and k norms, the final norm)."""
    import dataclasses

    from costmodel.hf import from_hf_config
    from costmodel.estimation import Estimate

    for size, (d, layers, heads, ffn), params in (("7b", (4096, 32, 32, 11008), 7_298_617_344),
                                                  ("13b", (5120, 40, 40, 13824), 13_716_198_400)):
        cfg = train_setup(*_run(f"olmo-core olmo2-{size} bf16 8xh100"))[0].cfg
        hf = from_hf_config({"model_type": "olmo2", "architectures": ["Olmo2ForCausalLM"], "hidden_size": d,
                             "intermediate_size": ffn, "num_hidden_layers": layers, "num_attention_heads": heads,
                             "num_key_value_heads": heads, "vocab_size": 100352, "max_position_embeddings": 4096,
                             "rms_norm_eps": 1e-6, "tie_word_embeddings": False, "attention_bias": False},
                            f"olmo2-{size}")
        assert dataclasses.asdict(cfg) == dataclasses.asdict(hf)
        assert 2 * 100352 * d + layers * (4 * d * d + 3 * d * ffn + 4 * d) + d == params
        assert Estimate(cfg, Workload(seq_len=8)).total("params") == params


def test_tinyllama_row_is_its_readme_and_script():
    """24k tokens/s a GPU on 16 A100-40G; pretrain/tinyllama.py's 512 sequences over 8 devices (64 a
    device: 1,024 on 16, the README's 2,048 x 1,024 tokens) in micro-batches of 8 (the README's 16k
    tokens a GPU); FSDP, bf16-mixed (autocast, bf16 reduce), no checkpointing, flash attention."""
    run, source = _run("tinyllama 1.1b 16xa100-40gb")
    assert run["published_tokens_per_s_per_gpu"] == 24_000
    per_device, micro = 512 // 8, 8
    assert (per_device * 16, micro * 2048, per_device * 16 * 2048) == (1024, 16384, 2_097_152)
    estimate, hardware, options = train_setup(run, source)
    layout, workload, cfg = estimate.layout, estimate.workload, estimate.cfg
    assert (layout.dp, layout.zero, layout.framework, layout.grad_reduce_dtype) == (16, 3, "fsdp2", "bf16")
    assert (workload.batch, layout.microbatches, workload.seq_len, workload.recompute) == (8, 8, 2048, "none")
    assert (cfg.n_decoder_layers, cfg.d_model, cfg.n_heads, cfg.n_kv_heads, cfg.d_ff) == (22, 2048, 32, 4, 5632)
    assert hardware.name == "a100-40gb" and options == {"autocast": True}


def test_pythia_row_is_its_yml():
    """Pythia-1B (models/1B/pythia-1b.yml): 16 layers, 2,048 wide, 8 heads (256 a head), micro-batch
    16 with gas 1 and no TP or PP, so the 1,024-sequence batch takes 64 GPUs (rotary on 64 of each
    head's 256: rotary-pct 0.25); 143,000 steps of
    1,024 x 2,048 tokens; fp16, ZeRO-1, full recomputation; 4,830 A100 GPU-hours."""
    run, source = _run("gpu-hours-pythia 1b 300B tokens")
    assert (run["published_gpu_hours"], run["tokens"]) == (4830, 143_000 * 1024 * 2048)
    assert run["tokens"] == 299_892_736_000
    estimate, hardware, _ = train_setup(run, source)
    layout, workload, cfg = estimate.layout, estimate.workload, estimate.cfg
    assert (layout.dp, 1024 // 16, layout.microbatches, layout.zero, layout.framework) == (64, 64, 1, 1, "deepspeed")
    assert (workload.batch, workload.dtype, workload.recompute) == (16, "fp16", "full")
    assert (cfg.n_decoder_layers, cfg.d_model, cfg.n_heads, cfg.d_head, cfg.rotary_dim) == (16, 2048, 8, 256, 64)
    assert hardware.name == "a100-40gb"


def test_deepseek_rows_are_their_reports():
    """DeepSeek-V2 (its report's section 3.2.3): 172.8K H800 GPU-hours a trillion tokens, PP 16
    zero-bubble, EP 8, ZeRO-1, no TP, 9,216 sequences of 4K (1,024 GPUs assumed); DeepSeek-V3 (its
    README): 2.664M for 14.8T tokens, which is the frontier run's 180K a trillion
    (reports/published_frontier.py) in the same layout: PP 16 DualPipe, EP 64, DP 128, FP8 blockwise."""
    from reports.published_frontier import DEEPSEEK_V3

    run, source = _run("gpu-hours-deepseek-v2 236b per 1T tokens")
    assert (run["published_gpu_hours"], run["tokens"]) == (172_800, 1e12)
    layout = train_setup(run, source)[0].layout
    assert (layout.tp, layout.pp, layout.ep, layout.dp, layout.schedule, layout.zero) == (1, 16, 8, 64, "zb-h1", 1)
    assert layout.microbatches == 9216 // 64 == 144
    run, source = _run("gpu-hours-deepseek-v3 671b 14.8T tokens")
    assert run["published_gpu_hours"] / (run["tokens"] / 1e12) == DEEPSEEK_V3["published"]["gpu_hours_per_trillion_tokens"]
    estimate, hardware, options = train_setup(run, source)
    layout = estimate.layout
    assert (layout.tp, layout.pp, layout.ep, layout.dp, layout.schedule, layout.fp8) == (1, 16, 64, 128, "dualpipev", "blockwise")
    assert (layout.microbatches, estimate.cfg.mtp_layers, hardware.name) == (120, 1, "h800")
    assert options["overlap"].ep == 0.0 and options["overlap"].pp == 1.0  # DualPipeV hides the all-to-all itself


def test_gpt_neox_20b_row_is_its_logged_flops_and_yml():
    """117 TFLOP/s a GPU as GPT-NeoX's 2022 logging counted them (megatron/logging.py get_flops at
    bca3f3da: 6 x the parameters + 60 s h l a token) is 747.38 tokens/s; the 20B's parameters
    (vocabulary 50,257 padded to 128 x TP 2, untied, biases, two LayerNorms a layer) are
    20,554,567,680; configs/20B.yml: TP 2, PP 4, micro-batch 4, 32 micro-batches, ZeRO-1, fp16,
    recomputed, rotary on a quarter of the 96-wide heads."""
    from costmodel.estimation import Estimate

    run, source = _run("gpt-neox-20b 20b 96xa100-40gb")
    h, layers, vocab, s = 6144, 44, 128 * 2 * ((50257 + 255) // 256), 2048
    params = 2 * vocab * h + layers * (3 * h * h + 3 * h + h * h + h + 8 * h * h + 4 * h + h + 4 * h) + 2 * h
    assert (vocab, params) == (50432, 20_554_567_680)
    assert run["published_tokens_per_s_per_gpu"] == round(117e12 / (6 * params + 60 * s * h * layers), 2) == 747.38
    estimate, hardware, options = train_setup(run, source)
    layout, workload, cfg = estimate.layout, estimate.workload, estimate.cfg
    assert Estimate(cfg, Workload(seq_len=8)).total("params") == params
    assert (layout.tp, layout.pp, layout.dp, layout.microbatches, layout.zero, layout.sp) == (2, 4, 12, 32, 1, False)
    assert (workload.batch, workload.dtype, workload.recompute, workload.attention) == (4, "fp16", "full", "eager")
    assert (cfg.d_head, cfg.rotary_dim, cfg.tie_embeddings, hardware.name) == (96, 24, False, "a100-40gb")


def test_smollm3_row_is_its_blog_and_yml():
    """384 H100s for 24 days: 221,184 GPU-hours; stage1_8T.yaml: DP 192 x TP 2 = 384, micro-batch 3
    with no accumulation, so 576 sequences of 4,096 = the blog's 2.36M-token batch (2,359,296),
    4,720,000 steps of it; ZeRO-0, no recomputation, fp32 gradients; 36 layers of 2,048, 16 heads,
    4 KV heads, FFN 11,008, tied 128,256 vocabulary: 3,075,098,624 parameters."""
    from costmodel.estimation import Estimate

    run, source = _run("gpu-hours-smollm3 3b 11.1T tokens")
    assert run["published_gpu_hours"] == 384 * 24 * 24 == 221_184
    assert (192 * 3 * 4096, run["tokens"]) == (2_359_296, 4_720_000 * 2_359_296)
    estimate, hardware, _ = train_setup(run, source)
    layout, workload, cfg = estimate.layout, estimate.workload, estimate.cfg
    assert (layout.tp, layout.dp, layout.microbatches, layout.zero, layout.sp, layout.grad_reduce_dtype) == (2, 192, 1, 0, True, "fp32")
    assert (workload.batch, workload.seq_len, workload.recompute) == (3, 4096, "none")
    assert (cfg.n_decoder_layers, cfg.d_model, cfg.n_heads, cfg.n_kv_heads, cfg.d_ff, cfg.vocab_size) == (36, 2048, 16, 4, 11008, 128256)
    d, f, layers, v = 2048, 11008, 36, 128256
    assert Estimate(cfg, Workload(seq_len=8)).total("params") == v * d + layers * (2 * d * d + 2 * d * 512 + 3 * d * f + 2 * d) + d == 3_075_098_624
    assert hardware.name == "h100-sxm"


def test_deepseek_67b_row_is_the_v2_report_s_figure():
    """300.6K H800 GPU-hours a trillion tokens (DeepSeek-V2's report, beside V2's 172.8K: 42.5% saved,
    1 - 172.8 / 300.6 = 0.4251); the DeepSeek LLM README's 4,608 sequences of 4,096; the layout
    assumed: TP 8 with SP, PP 4 over the 95 layers (24, 24, 24, 23), DP 32, 144 micro-batches of 1."""
    run, source = _run("gpu-hours-deepseek-67b 67b per 1T tokens")
    assert (run["published_gpu_hours"], run["tokens"]) == (300_600, 1e12)
    assert round(1 - 172_800 / 300_600, 3) == 0.425
    estimate, hardware, _ = train_setup(run, source)
    layout, cfg = estimate.layout, estimate.cfg
    assert (layout.tp, layout.sp, layout.pp, layout.dp, layout.microbatches) == (8, True, 4, 32, 144)
    assert (layout.stage_layers, cfg.n_decoder_layers, hardware.name) == ((24, 24, 24, 23), 95, "h800")


# Dao-AILab/flash-attention training/README.md (4a6eaa9f): node tokens/s; its configs at 4a6eaa9f:
# (heads, width, layers), the batch_size an 80 GB GPU takes (gpu_mem = round(81,920 / 1000) = 82),
# global_batch_size, ZeRO-1 (ZeroRedundancyOptimizer) or not (apex FusedAdam)
FLASH_TRAINING = {
    "flash-attention-training gpt3-125m 8xa100-80gb": (1_310_000, [12, 768, 12], 32, 256, 0),
    "flash-attention-training gpt3-355m 8xa100-80gb": (503_000, [16, 1024, 24], 32, 256, 0),
    "flash-attention-training gpt3-760m 8xa100-80gb": (245_000, [16, 1536, 24], 16, 256, 1),
    "flash-attention-training gpt3-1.3b 8xa100-80gb": (169_000, [16, 2048, 24], 8, 512, 1),
    "flash-attention-training gpt3-2.7b 8xa100-80gb": (85_000, [20, 2560, 32], 4, 512, 1),
}


@pytest.mark.parametrize("run_id", sorted(FLASH_TRAINING))
def test_each_flash_attention_training_row_is_its_table_and_config(run_id):
    """The node's tokens/s over 8; the batch sizes the table prints (0.5M and 1M tokens: 256 and 512
    sequences of 2,048); micro-batches as the configs pick them on 80 GB and the accumulation
    Lightning derives; FlashAttention (v1); bf16 autocast; the 2.7B with heads of 128."""
    tokens, gpt, micro, global_batch, zero = FLASH_TRAINING[run_id]
    run, source = _run(run_id)
    assert round(81920 / 1000) == 82
    assert (run["published_tokens_per_s_per_gpu"] * 8, run["gpt"], global_batch * 2048) == (tokens, gpt, {256: 524_288, 512: 1_048_576}[global_batch])
    estimate, hardware, options = train_setup(run, source)
    layout, workload, cfg = estimate.layout, estimate.workload, estimate.cfg
    assert (layout.dp, layout.zero, workload.batch, layout.microbatches) == (8, zero, micro, global_batch // (8 * micro))
    assert (cfg.n_heads, cfg.d_model, cfg.n_decoder_layers, cfg.vocab_size, workload.seq_len) == (*gpt, 50264, 2048)
    assert hardware.name == "a100-80gb" and options == {"autocast": True, "attention_kernel": "flash1"}
