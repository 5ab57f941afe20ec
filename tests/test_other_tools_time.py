"""Other tools' time and serving figures beside ours (validate/other_tools_time.py): our side of
validate/other_tools_time.json is what the costmodel API gives today, and each tool's figure is
restated from the tool's own source at the version the record names:
- Calculon (llm.py get_total_time): the step is fw + bw + optimizer + recompute + the exposed
  recompute communication + bubble + exposed TP, PP and DP communication;
- llm-analysis 0.2.2 (analysis.py train): latency_per_iter = num_flops_total_per_micro_batch /
  (tp x pp x peak x flops_efficiency) x gradient_accumulation_steps, nothing else;
- LLM-Viewer (model_analyzer.py _analyze_to_results, roofline_model.py): a layer's time is
  max(OPs / peak, bytes / bandwidth), the total one layer's times the layer count plus lm_head;
  its flash attention's bytes are Q, O "initialized and saved" as n x n, and K and V re-read
  ceil(n / 128) times at num_attention_heads;
- DeepSpeed (stage_1_and_2.py, stage3.py at the record's commit): 2 P + 18 P / N without offload
  for ZeRO-2, 4 x the largest layer + 18 P / N for ZeRO-3;
- vLLM (worker/cache_engine.py get_cache_block_size at 017e7a4, worker.py's
  determine_num_available_blocks): blocks = available // (dtype x layers x 2 x block_size x KV
  heads x head size), available = total x utilization - weights - non-torch - activation peak.
None of the tools is needed to run these tests.
"""

from __future__ import annotations

import json
import math

import pytest

from costmodel.offload import deepspeed_zero2, deepspeed_zero3
from costmodel.presets import load_preset
from validate import other_tools_time as ott

RECORD = json.loads(ott.RECORD.read_text())
KORTHIKANTI = "gpt3-175b Korthikanti step split"
LLAMA70B = "llama2-70b tp8 pp4 dp2 sp selective step split"
A100_PEAK, A100_BANDWIDTH = 312e12, 2039e9  # LLM-Viewer's nvidia_A100_80G, llm-analysis's a100-sxm-80gb peak
GIB = 2**30


def split(case: str, tool: str) -> dict:
    return RECORD["cases"][case]["tools"][tool]


def test_the_record_names_each_tools_version_and_every_case():
    versions = RECORD["versions"]
    assert versions["llm-analysis"] == "0.2.2"
    assert all(len(versions[name]) == 40 for name in ("LLM-Viewer", "Calculon", "DeepSpeed"))
    assert set(RECORD["cases"]) == set(ott.CASES)
    assert set(RECORD["layers"]) == set(ott.LAYER_CASES)
    assert all(set(RECORD["layers"][name]["tools"]) == {"LLM-Viewer", "llm-analysis"} for name in ott.LAYER_CASES)
    assert set(RECORD["deepspeed"]) == set(ott.DEEPSPEED_CASES)
    for name in ott.CASES:
        assert set(RECORD["cases"][name]["tools"]) == {"Calculon", "llm-analysis", "llm-analysis at our HFU"}


def test_our_side_of_the_record_is_the_costmodel_today():
    for name in ott.CASES:
        ours = ott.ours_split(name)
        assert ours.keys() == RECORD["cases"][name]["ours"].keys()
        for key, value in ours.items():
            assert value == (None if value is None else pytest.approx(RECORD["cases"][name]["ours"][key], rel=1e-9)), \
                (name, key)
    for name in ott.DEEPSPEED_CASES:
        assert ott.ours_deepspeed(name) == RECORD["deepspeed"][name]["ours"], name


def test_our_layer_groups_and_kv_sizing_are_the_costmodel_today():
    for name in ott.LAYER_CASES:
        ours, recorded = ott.ours_layers(name), RECORD["layers"][name]["ours"]
        assert ours.pop("prefill") == pytest.approx(recorded["prefill"], rel=1e-9), name
        assert ours == pytest.approx({k: v for k, v in recorded.items() if k != "prefill"}, rel=1e-9), name
    assert ott.ours_vllm() == RECORD["vllm"]["ours"]


def test_calculon_and_our_step_are_the_sums_of_their_parts():
    for name in ott.CASES:
        raw = split(name, "Calculon")["raw"]
        parts = ("fw_time", "bw_time", "optim_step_time", "fw_offload_exposed_time", "bw_offload_exposed_time",
                 "recompute_time", "recomm_exposed_time", "bubble_time", "tp_comm_exposed_time",
                 "pp_comm_exposed_time", "dp_comm_exposed_time")
        assert raw["total_time"] == pytest.approx(sum(raw[p] for p in parts), rel=1e-12)
        ours = RECORD["cases"][name]["ours"]
        assert ours["seconds"] == pytest.approx(sum(ours[p] for p in ("compute", "tp_comm", "pp_comm", "dp_comm",
                                                                      "bubble", "optimizer", "other")), rel=1e-12)
    # ours' "other" at Llama-2-70B is the contention of the DP collectives it overlaps with backward
    assert round(RECORD["cases"][LLAMA70B]["ours"]["other"], 4) == 0.0258  # 0.026 before wt44_review's Megatron passes


def test_korthikanti_step_ours_and_calculon_within_one_percent_by_different_parts():
    ours, calculon = RECORD["cases"][KORTHIKANTI]["ours"], split(KORTHIKANTI, "Calculon")
    published = 13.75  # Korthikanti et al. 2022, Table 5, 175B with SP + selective recomputation
    # ours 0.992 of the published step before Megatron's one QKV GEMM, FusedScaleMaskSoftmax's bytes and its dense
    # passes (wt43_review, wt44_review: ours 13.642 -> 13.175 s), the totals then 4 ms apart; now 0.46 s
    # 0.958 before session 45's Copy rate for the write-dominated score GEMMs (ours 13.175 -> 13.163 s)
    # 0.957 before wt46_mgsoftmax's causal softmax loads to the diagonal and recomputed launches (13.163 -> 13.089 s)
    assert round(ours["seconds"] / published, 3) == 0.952 and round(calculon["seconds"] / published, 3) == 0.992
    # the totals agree to 4 ms, the parts do not: Calculon's compute (fw + bw + its selective
    # recompute) is 0.78 s less than ours, its exposed TP communication (rs/ag at 300 GB/s x 0.65,
    # plus SP's all-gather redone in backward, "recomm") 0.82 s more; the bubble agrees to 2 ms
    # (both (pp - 1) / (v m) of a stage's micro-batch: 7 / (3 x 64) x ...), no DP (dp 1)
    # 0.004 before wt44_review, -0.463 before session 45, -0.475 before wt46_mgsoftmax
    assert round(ours["seconds"] - calculon["seconds"], 3) == -0.549
    # 10.78 before; 10.33 before session 45; 10.32 before wt46_mgsoftmax
    assert round(calculon["compute"] + calculon["recompute"], 3) == 10.0 and round(ours["compute"], 2) == 10.25
    assert round(calculon["tp_comm"], 3) == 3.023 and round(ours["tp_comm"], 3) == 2.2
    # 0.477 before wt44_review, 0.461 before session 45, 0.46 before wt46_mgsoftmax
    assert round(calculon["bubble"], 3) == 0.479 and round(ours["bubble"], 3) == 0.458
    assert ours["bubble"] / (ours["seconds"] - ours["bubble"]) == pytest.approx(7 / (3 * 64), rel=0.02)
    assert ours["dp_comm"] == calculon["dp_comm"] == 0


def test_llm_analysis_step_is_its_flops_over_the_model_parallel_gpus_at_one_efficiency():
    for name in ott.CASES:
        for label in ("llm-analysis", "llm-analysis at our HFU"):
            raw = split(name, label)["raw"]
            restated = (raw["num_flops_total_per_micro_batch"]
                        / (raw["tp_size"] * raw["pp_size"] * A100_PEAK * raw["flops_efficiency"])
                        * raw["gradient_accumulation_steps"])
            assert raw["latency_per_iter"] == pytest.approx(restated, rel=1e-12)
            # no bubble, no communication, no optimizer: one part
            assert {k for k, v in split(name, label).items() if v is not None and k != "raw"} == {"seconds", "compute"}
    # at its default flops_efficiency 1 the published GPT-3 step is 0.52x; at our HFU (0.5226) its
    # time is ours to 0.01%, because its FLOPs (with the recomputed attention core) are our executed ones to
    # 0.01%: the whole split is in the efficiency a user must already know
    assert round(split(KORTHIKANTI, "llm-analysis")["seconds"] / 13.75, 3) == 0.518
    assert split(KORTHIKANTI, "llm-analysis at our HFU")["raw"]["flops_efficiency"] == 0.5226
    ours = RECORD["cases"][KORTHIKANTI]["ours"]
    # equal to ours to 1e-4 when recorded; the tool is not rerun here, and since wt44_review's Megatron passes our
    # step is 3.4% shorter (HFU 0.5226 -> 0.5411), so its run at the old HFU reads 1.035x ours; 1.036x after session
    # 45's Copy rate for the score GEMMs (13.175 -> 13.163 s); 1.042x after wt46_mgsoftmax (13.163 -> 13.089 s)
    assert round(split(KORTHIKANTI, "llm-analysis at our HFU")["seconds"] / ours["seconds"], 3) == 1.042
    # at Llama-2-70B its 16 n d^2 MLP (other_tools.py) leaves it 19% under ours even at our HFU (0.813 when
    # recorded; 0.812 since wt29_bias's FlashAttention-2 A100 backward made our step 0.14% longer, the
    # tool's figure kept at the HFU it was run at)
    ours70 = RECORD["cases"][LLAMA70B]["ours"]
    assert round(split(LLAMA70B, "llm-analysis at our HFU")["seconds"] / ours70["seconds"], 3) == 0.816  # 0.812 before wt44_review


def test_calculon_counts_llama2_70b_k_and_v_at_full_width():
    """Calculon's Llm.Application has no KV heads or gated FFN: given SwiGLU's weights as one FFN
    of 1.5 x 28,672 = 43,008 (the same FLOPs and weights), its attention block still charges K and
    V as d x d each: 2 n x 2 d (d - d_kv) = 962,072,674,304 FLOPs a layer's forward more than
    Llama-2-70B's GQA (8 KV heads of 128)."""
    cfg = load_preset("llama2-70b")
    n, d, d_kv, heads = 4096, cfg.d_model, cfg.n_kv_heads * cfg.d_model // cfg.n_heads, cfg.n_heads
    app = ott.CASES[LLAMA70B]["calculon"]["application"]
    assert (app["hidden"], app["feedforward"], app["attn_heads"], app["num_blocks"]) == (d, 43008, heads, 80)
    calculon_matmuls = 2 * n * (3 * d * d + d * d + 2 * d * app["feedforward"]) + 2 * 2 * n * n * d
    llama_matmuls = 2 * n * (d * (d + 2 * d_kv) + d * d + 3 * d * cfg.d_ff) + 2 * 2 * n * n * d
    assert calculon_matmuls - llama_matmuls == 2 * n * 2 * d * (d - d_kv) == 962_072_674_304
    # Calculon's block_fw_flops is one TP rank's (tp 8): its matmuls / 8 and its elementwise ops
    block = split(LLAMA70B, "Calculon")["raw"]["block_fw_flops"]
    assert calculon_matmuls // 8 == 1_065_151_889_408 and 0 < block - calculon_matmuls // 8 < 0.0011 * block
    assert round(calculon_matmuls / llama_matmuls, 3) == 1.127
    # so its step is 1.37x ours: 1.22x the compute (1.23x before wt29_bias's FlashAttention-2 A100
    # backward; 1.127 of it FLOPs), TP and DP communication
    # 1.5x and 2.2x, its bubble scaling with its slower micro-batch
    ours, calculon = RECORD["cases"][LLAMA70B]["ours"], split(LLAMA70B, "Calculon")
    assert round(calculon["seconds"] / ours["seconds"], 2) == 1.38  # 1.37 before wt44_review's Megatron passes
    assert round(calculon["compute"] / ours["compute"], 2) == 1.23  # 1.22 before


def viewer(case: str) -> dict:
    return RECORD["layers"][case]["tools"]["LLM-Viewer"]


def test_llm_viewer_layer_time_is_the_roofline_of_its_ops_and_bytes():
    for case in ott.LAYER_CASES:
        raw = viewer(case)["raw"]
        for stage in ("prefill", "decode"):
            layers = raw["layers"][stage]
            for name, row in layers.items():
                assert row["inference_time"] == pytest.approx(
                    max(row["OPs"] / A100_PEAK, row["memory_access"] / A100_BANDWIDTH), rel=1e-12), (case, name)
            total = sum(r["inference_time"] * (1 if k == "lm_head" else raw["num_layers"]) for k, r in layers.items())
            assert raw["total"][stage]["inference_time"] == pytest.approx(total, rel=1e-12)


def test_llm_viewer_flash_attention_bytes_store_an_n_by_n_output_and_every_query_heads_kv():
    """LLM-Viewer's prefill fused_attention: o_numel = n x n x b x h x 2 bytes stored twice, and K
    and V read ceil(n / 128) times with num_attention_heads. FlashAttention-2's output is b x n x h x
    d_h, and a GQA layer reads h_kv heads: so its attention is memory-bound (4.35 s at 64 x 4,096)
    where ours is compute-bound at the attention kernel's measured rate (1.46 s: the kernel model's
    causal flash kernel; before session 32 the record held the roofline's blocks, 3.14 s, as ours)."""
    cfg = load_preset("llama3-8b")
    b, n, h, d_h = 64, 4096, cfg.n_heads, cfg.d_model // cfg.n_heads
    q = n * d_h * b * h * 2
    o_twice = 2 * (n * n * b * h * 2)
    kv = math.ceil(n / 128) * n * d_h * b * h * 2 * 2
    row = viewer("llama3-8b batch 64 at 4096 by layer")["raw"]["layers"]["prefill"]["fused_attention"]
    assert row["memory_access"] == q + o_twice + kv == 277_025_390_592 and row["bound"] == "memory"
    ours = RECORD["layers"]["llama3-8b batch 64 at 4096 by layer"]["ours"]["prefill"]["attention"]
    assert round(viewer("llama3-8b batch 64 at 4096 by layer")["prefill"]["attention"], 2) == 4.35
    assert round(ours, 2) == 1.46
    # decode: the cache read at 32 heads, 4x Llama 3's 8 KV heads
    decode = viewer("llama3-8b batch 64 at 4096 by layer")["raw"]["layers"]["decode"]["fused_attention"]
    cache_at_query_heads = n * d_h * b * h * 2 * 2
    assert decode["memory_access"] - cache_at_query_heads == 34_078_720
    assert cache_at_query_heads == 4 * (n * d_h * b * cfg.n_kv_heads * 2 * 2)


def test_the_measured_gemm_times_support_ours_not_the_datasheet_roofline():
    """Every projection is compute-bound at 2,048 tokens in both: LLM-Viewer at 100% of 312
    TFLOP/s, ours at the kernel model's rate for the shape. Vidur's measured A100 80GB kernel
    times of the same layer (validate/vidur_profiles.json: attn_pre_proj 0.97925 ms, attn_post_proj
    0.301 ms, mlp_up_proj 1.6935 + mlp_down_proj 0.8505 + mlp_act 0.135 ms, x 32 layers) are
    1.18-1.28x ours and 1.37-1.49x LLM-Viewer's. (Until session 32 simulate's prefill_blocks were the
    roofline's at 0.7 of the peak, read here as the kernel model's: 0.97-1.08x of the measured.)"""
    case = "llama2-7b prefill 2048 + decode by layer"
    ours, theirs = RECORD["layers"][case]["ours"]["prefill"], viewer(case)["prefill"]
    measured = ott.measured_layers(case)
    assert measured == pytest.approx({"qkv": 0.979_25 * 32e-3, "out": 0.301 * 32e-3,
                                      "mlp": (1.6935 + 0.8505 + 0.135) * 32e-3}, rel=1e-12)
    assert theirs["qkv"] == pytest.approx(3 * 32 * 2 * 2048 * 4096**2 / A100_PEAK, rel=1e-12)
    assert [round(ours[g] / measured[g], 2) for g in ("qkv", "out", "mlp")] == [0.78, 0.85, 0.82]
    assert [round(theirs[g] / measured[g], 2) for g in ("qkv", "out", "mlp")] == [0.67, 0.73, 0.67]
    # llm-analysis's infer(): its MLP is 16 n d^2 at 100% of the peak whatever the FFN
    # (get_num_flops_fwd_per_layer_mlp; its bundled Llama-2-7B has two matrices of 16,384):
    # 0.66x the measured MLP; its "attn" is the whole attention block, its lm_head all 2,048 positions
    la = RECORD["layers"][case]["tools"]["llm-analysis"]["prefill"]
    assert la["mlp"] == pytest.approx(16 * 2048 * 4096**2 * 32 / A100_PEAK, rel=1e-12)
    assert round(la["mlp"] / measured["mlp"], 2) == 0.66
    assert la["lm_head"] == pytest.approx(2 * 2048 * 4096 * 32000 / A100_PEAK, rel=1e-12)
    big = RECORD["layers"]["llama3-8b batch 64 at 4096 by layer"]["tools"]["llm-analysis"]["prefill"]
    assert big["mlp"] == pytest.approx(16 * 64 * 4096 * 4096**2 * 32 / A100_PEAK, rel=1e-12)  # d_ff 14,336 unused
    # the decode step: LLM-Viewer reads the weights and cache at the datasheet's 2,039 GB/s (7.0 ms);
    # ours is the eager host's time per op at batch 1 (17.7 ms; gpt-fast's graph-captured rate is
    # other_tools.py's published comparison)
    assert round(viewer(case)["decode_seconds"] * 1e3, 1) == 7.0
    assert RECORD["layers"][case]["ours"]["decode_host_bound"] is True


def test_deepspeed_zero2_estimate_equals_ours_and_zero3_leaves_out_a_bf16_partition():
    P, largest = 8_030_261_248, 525_336_576  # Llama-3-8B, its vocabulary table (128,256 x 4,096)
    z2, z3 = (RECORD["deepspeed"][f"llama3-8b ZeRO-{z} dp8"] for z in (2, 3))
    assert z2["ours"]["total_params"] == z3["ours"]["total_params"] == P
    assert z3["ours"]["largest_layer_params"] == largest
    # DeepSpeed, restated (and as costmodel/offload.py writes it): 2 P + 18 P / 8 (2 bf16 gradient,
    # 4 fp32 gradient, 4 fp32 master, 8 Adam bytes a parameter of the partition)
    assert z2["tools"]["DeepSpeed"] == 2 * P + int(18 * P / 8) == deepspeed_zero2(P, 8, 1, cpu_offload=False)[1]
    assert z2["ours"]["model_states"] == z2["tools"]["DeepSpeed"] == 34_128_610_304
    # ZeRO-3: 4 x largest layer + 18 P / 8. stage3.py holds, at the step, the bf16 parameter partition
    # (ds_tensor), the bf16 gradient partition (grad_partitions_flat_buffer), the fp32 master and
    # its fp32 gradient (_prepare_fp32_grad_for_sub_group) and Adam's m and v: 20 P / 8, ours
    assert z3["tools"]["DeepSpeed"] == 4 * largest + int(18 * P / 8) == deepspeed_zero3(P, largest, 8, 1,
                                                                                         cpu_offload=False)[1]
    assert z3["ours"]["model_states"] == 20 * P // 8 == 20_075_653_120
    assert z3["tools"]["DeepSpeed"] - z3["ours"]["model_states"] == 4 * largest - 2 * P // 8 == 93_780_992


def test_vllm_kv_blocks_from_its_logged_budget_and_ours_term_by_term():
    log, ours = RECORD["vllm"]["log"]["gib"], RECORD["vllm"]["ours"]
    cfg = load_preset("llama3-8b")
    block_bytes = 2 * cfg.n_decoder_layers * 2 * 16 * cfg.n_kv_heads * (cfg.d_model // cfg.n_heads)
    assert block_bytes == ours["kv_bytes_per_token"] * 16 == 2 * 2**20
    # vLLM's own sum, at the log's two decimals
    assert round(log["instance_can_use"] - log["model_weights"] - log["non_torch_memory"] - log["activation_peak"]
                 - log["available_kv_cache_memory"], 2) == -0.01
    blocks = [math.floor((log["available_kv_cache_memory"] + e) * GIB // block_bytes) for e in (-0.005, 0.005)]
    assert blocks == [27_281, 27_287]
    # ours, term by term: the weights equal (16,060,522,496 B prints 14.96 GiB); the rest does not
    assert round(ours["weight_bytes"] / GIB, 2) == log["model_weights"]
    # the total the device reports (h100-sxm's device_memory_bytes, read off this log): 81,117 MiB
    assert ours["memory_bytes"] == 81_117 * 2**20 and round(ours["memory_bytes"] / GIB, 2) == log["total_gpu_memory"]
    assert round(ours["memory_bytes"] * 0.9 / GIB, 2) == log["instance_can_use"] == 71.29
    assert ours["memory_reserve_bytes"] == GIB // 2 and log["non_torch_memory"] == 1.79
    # vLLM v0.6's profile run (profile_run.json): 256 dummy prompts of 32 tokens, logits for the last
    # of each, bf16 (2 B) plus the sampler's fp32/int64/bool working set at its top-k/top-p peak
    # (30 B a logit), beside the 8,192 x 4,096 bf16 hidden states, the ids and RoPE's buffer
    assert ours["activation_bytes"] == 256 * cfg.vocab_size * (2 + 30) + 8192 * 4096 * 2 + 66_048 == 1_117_848_064
    assert log["activation_peak"] == 1.26 and round(ours["activation_bytes"] / GIB, 3) == 1.041  # 0.22 GiB under
    # what is left apart is the non-torch term: 1.29 GiB, 660 blocks of ours' 771 over
    assert ours["num_blocks"] == 28_055 and round(ours["num_blocks"] / 27_284 - 1, 3) == 0.028


def test_vllm_block_counts_it_logged_at_tp_1_and_4_against_ours():
    """vLLM 0.2.x's logged blocks (PR #2031): ours is 2.2% over at Llama-2-7B tp 1, as at Llama 3
    8B above; at Llama-2-70B tp 4 ours is 1.53x: that vLLM's profile counted every non-weight,
    non-KV byte the device held, 13.6 GiB a GPU more than ours by its blocks (20,865 x 16 x
    81,920 B = 25.47 GiB of KV against ours' 39.07), which no term ours can source explains (the
    A100 80GB file states no device total; ours' profile run is v0.6's, 0.3 GiB a GPU here)."""
    rows = {row["model"]: row for row in RECORD["vllm"]["blocks"]}
    assert [ott.ours_vllm(log)["num_blocks"] for log in ott.VLLM_BLOCK_LOGS] == [rows["llama2-7b"]["ours"],
                                                                                rows["llama2-70b"]["ours"]]
    assert (rows["llama2-7b"]["blocks"], rows["llama2-7b"]["ours"]) == (7_351, 7_510)
    assert (rows["llama2-70b"]["blocks"], rows["llama2-70b"]["ours"]) == (20_865, 32_007)
    assert round(rows["llama2-70b"]["blocks"] * 16 * 81_920 / GIB, 2) == 25.47


def test_every_table_5_row_ours_and_calculon_against_the_published_step():
    """Korthikanti et al. 2022's Table 5, 22B to 1T, full recomputation and SP + selective: ours
    (the kernel model) is 0.94-0.98x of all eight published steps (0.96-1.04x before wt44_review, 0.95-0.99x before
    wt46_mgsoftmax), Calculon (its own model and execution files for each row) 0.91-1.03x; both are sums of their
    parts."""
    rows = RECORD["korthikanti"]
    assert [(r["model"], r["recompute"], r["published"]) for r in rows] == [
        ("22B", "full", 1.42), ("22B", "present", 1.1), ("175B", "full", 18.13), ("175B", "present", 13.75),
        ("530B", "full", 49.05), ("530B", "present", 37.83), ("1T", "full", 94.42), ("1T", "present", 71.49)]
    for row in rows:
        calculon = row["tools"]["Calculon"]["raw"]
        parts = ("fw_time", "bw_time", "optim_step_time", "recompute_time", "recomm_exposed_time", "bubble_time",
                 "tp_comm_exposed_time", "pp_comm_exposed_time", "dp_comm_exposed_time")
        assert calculon["total_time"] == pytest.approx(sum(calculon[p] for p in parts), rel=1e-12)
    ours = [round(r["ours"]["seconds"] / r["published"], 2) for r in rows]
    theirs = [round(r["tools"]["Calculon"]["seconds"] / r["published"], 2) for r in rows]
    # [1.04, 1.03, 1.0, 0.99, 0.98, 0.96, 0.99, 1.0] before; [0.99, 0.97, 0.97, 0.96, 0.97, 0.95, 0.98, 0.99] before
    # wt46_mgsoftmax
    assert ours == [0.98, 0.95, 0.97, 0.95, 0.97, 0.94, 0.98, 0.98]
    # Megatron's one QKV GEMM, FusedScaleMaskSoftmax's bytes and its dense passes (wt43_review, wt44_review); 22B full 1.03 before session 33's embedding gradient
    assert theirs == [0.98, 1.03, 0.99, 0.99, 1.02, 0.91, 0.95, 0.92]
    compute = [round((r["tools"]["Calculon"]["compute"] + r["tools"]["Calculon"]["recompute"]) / r["ours"]["compute"], 2)
               for r in rows]
    # [0.97, 0.89, 0.98, 0.93, 0.93, 0.89, 0.91, 0.88] before wt44_review; 530B present 0.9 before session 45's Copy rate;
    # [1.03, 0.97, 1.01, 0.97, ...] before wt46_mgsoftmax
    assert compute == [1.04, 0.99, 1.01, 0.98, 0.94, 0.91, 0.92, 0.89]
    tp = [round(r["tools"]["Calculon"]["tp_comm"] / r["ours"]["tp_comm"], 2) for r in rows if r["recompute"] == "present"]
    assert tp == [1.52, 1.37, 1.39, 1.34]
    # our side is the costmodel today
    from reports.published_runs import korthikanti_runs

    today = [ott.split_of(cfg, workload, layout)["seconds"] for _, _, cfg, workload, layout in korthikanti_runs()]
    assert today == pytest.approx([r["ours"]["seconds"] for r in rows], rel=1e-9)


def test_a_tool_not_installed_is_said_once_and_skipped_with_its_variants(capsys):
    """run_each (the split and layer cases' one loop): Calculon missing is printed once, its "at" variant
    not run, the other tools' results kept."""
    from validate import other_tools_peers as peers

    def missing():
        raise peers.Missing("no checkout")

    ran = []
    skipped: set[str] = set()
    out = ott.run_each({"Calculon": missing, "Calculon at our HFU": lambda: ran.append(1), "llm-analysis": lambda: 7},
                       skipped)
    assert out == {"llm-analysis": 7} and skipped == {"Calculon"} and ran == []
    assert capsys.readouterr().out == "skipped Calculon: not installed (no checkout)\n"


def without_ours(record):
    """The record's JSON as main() writes it, every "ours" left out: the tools' side."""
    def strip(value):
        if isinstance(value, dict):
            return {key: strip(item) for key, item in value.items() if key != "ours"}
        return [strip(item) for item in value] if isinstance(value, list) else value

    return json.dumps(strip(record), indent=1, sort_keys=True)


def ours_slots(record):
    """Every "ours" in the record, flattened to (where, value) pairs."""
    slots = {}

    def walk(value, where):
        if isinstance(value, dict):
            for key, item in value.items():
                walk(item, where + (key,))
        elif isinstance(value, list):
            for i, item in enumerate(value):
                walk(item, where + (i,))
        elif "ours" in where:
            slots[where] = value

    walk(record, ())
    return slots


def test_ours_only_rewrites_our_side_and_leaves_the_tools_byte_identical(tmp_path, monkeypatch, capsys):
    """`--ours-only` on a record whose every "ours" is stale: each is recomputed (the committed
    record's figures, which test_our_side_of_the_record_is_the_costmodel_today holds to the API),
    and the rest of the file, the tools' figures, published steps, logs and versions, is written
    byte for byte as it was; a record of other cases is refused in one line, the file untouched."""
    stale = json.loads(ott.RECORD.read_text())
    for case in (*stale["cases"].values(), *stale["korthikanti"], *stale["layers"].values(),
                 *stale["deepspeed"].values(), stale["vllm"], *stale["vllm"]["blocks"]):
        case["ours"] = "stale"
    path = tmp_path / "other_tools_time.json"
    path.write_text(json.dumps(stale, indent=1, sort_keys=True) + "\n")
    monkeypatch.setattr(ott, "RECORD", path)
    assert ott.main(["--ours-only"]) == 0
    written = json.loads(path.read_text())
    assert without_ours(written) == without_ours(RECORD) == without_ours(stale)
    assert all(f'"{tool}": {{' in without_ours(written) for tool in ("Calculon", "llm-analysis", "LLM-Viewer"))
    ours, recorded = ours_slots(written), ours_slots(RECORD)
    # 2 step splits and 8 Table 5 rows of 13 figures, 2 layer cases of 9 groups + 5, 2 DeepSpeed cases of 6,
    # vLLM's 9 KV-sizing figures and 2 block counts
    assert ours.keys() == recorded.keys() and len(ours) == 10 * 13 + 2 * 14 + 2 * 6 + 9 + 2 == 181
    assert "stale" not in ours.values()
    assert [where for where, value in ours.items()
            if value != (value if value is None or isinstance(value, (bool, str)) else pytest.approx(recorded[where], rel=1e-9))] == []
    assert capsys.readouterr().out == f"wrote {path}\n"
    stale["korthikanti"].pop()
    text = json.dumps(stale, indent=1, sort_keys=True) + "\n"
    path.write_text(text)
    assert ott.main(["--ours-only"]) == 2
    assert capsys.readouterr().err == ("error: other_tools_time.json holds other cases than other_tools_time.py: run "
                                       "--write with the tools\n")
    assert path.read_text() == text
