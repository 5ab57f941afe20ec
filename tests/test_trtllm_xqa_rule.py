"""TensorRT-LLM's precompiled XQA rule (kernel_facts.json "decode_attention_kernels" "trtllm_xqa_precompiled"):
before its JIT XQA, DecoderXQARunner::shouldUse took a decode call only at 8 query heads a KV head (1, 2, 4 or 8
KV heads, heads of 128, fp16 or bf16); every other grouping ran the masked MHA ("trtllm-mmha"). The rows of the
sources that state a release of that rule name their decode kernel by it (wt37_trtllm: modelopt-v0.11's Llama3-8B,
32 query and 8 KV heads, did not)."""

from __future__ import annotations

from costmodel.attention_kernels import trtllm_xqa_jit_serves, trtllm_xqa_serves
from costmodel.kernel_rates import kernel_facts
from reports.published_decode import decode_setup
from reports.published_runs import other_runs_data

#: the sources whose rows state a TensorRT-LLM release of the precompiled rule, and that release (their "source")
RELEASES = {"trtllm-v0.8.0": "0.8", "trtllm-v0.9.0": "0.9", "modelopt-v0.11": "0.9"}


def test_the_rule_as_decoderXQARunner_states_it():
    rule = kernel_facts()["decode_attention_kernels"]["trtllm_xqa_precompiled"]
    # 'if (nbQHeadsPerKV != 8 || (nbKVHeads != 1 && nbKVHeads != 2 && nbKVHeads != 4 && nbKVHeads != 8))'
    assert (rule["query_heads_per_kv"], rule["kv_heads"], rule["head_dims"]) == ([8], [1, 2, 4, 8], [128])
    assert rule["dtypes"] == ["fp16", "bf16"] and set(RELEASES.values()) <= set(rule["releases"])
    assert "619534789" in rule["source"] and "nbQHeadsPerKV != 8" in rule["source"]


def test_which_groupings_it_serves():
    assert trtllm_xqa_serves(64, 8, 128, "fp16")  # Llama-2-70B on one GPU
    assert trtllm_xqa_serves(8, 1, 128, "bf16")  # Llama-2-70B at TP 8: a rank's 8 query heads and 1 KV head
    assert not trtllm_xqa_serves(32, 8, 128, "fp16")  # Llama3-8B, Mistral-7B: 4 a KV head
    assert not trtllm_xqa_serves(32, 32, 128, "fp16")  # Llama-2-7B: no grouping
    assert not trtllm_xqa_serves(128, 16, 128, "fp16")  # 8 a KV head, but 16 KV heads
    assert not trtllm_xqa_serves(64, 8, 64, "fp16")  # heads of 64
    assert not trtllm_xqa_serves(64, 8, 128, "fp32")


def test_the_rows_of_those_releases_name_their_decode_kernel_by_it():
    data = other_runs_data()
    counted = {True: 0, False: 0}
    for run in data["runs"]:
        name = run["id"].split()[0]
        if name not in RELEASES:
            continue
        cfg, _, settings, _ = decode_setup(run, data["sources"][name])
        per_rank = (cfg.n_heads // run["tp"], max(1, cfg.n_kv_heads // run["tp"]))  # KV heads replicated past tp
        xqa = trtllm_xqa_serves(*per_rank, cfg.d_head, settings["dtype"])
        # XQA's calls are timed as the default fused call (each KV head loaded once); the rest as the masked MHA
        assert settings["decode_kernel"] == (None if xqa else "trtllm-mmha"), run["id"]
        counted[xqa] += 1
    # XQA: trtllm-v0.8.0's 12 and trtllm-v0.9.0's 4 Llama-2-70B rows; the masked MHA: their Llama-2-7b rows
    # (12 and 4) and modelopt-v0.11's 9 Llama3-8B rows
    assert counted == {True: 16, False: 25}


# v0.11.0 (NVIDIA/TensorRT-LLM at 05316d33): the JIT XQA by default, its own rule (kernel_facts "trtllm_xqa_jit").
# H100 SXM5: 132 SMs (NVIDIA H100 Tensor Core GPU Architecture whitepaper, 'H100 SXM5: 132 SMs').
H100_SXM_SMS = 132


def test_the_jit_rule_as_v0_11_states_it():
    rule = kernel_facts()["decode_attention_kernels"]["trtllm_xqa_jit"]
    # 'if (head_grp_size * xqaParams.beam_width > 32)', 'head_size % 16 != 0 || head_size < 16 || head_size > 256'
    assert (rule["max_query_heads_per_kv"], rule["head_dim_multiple"], rule["head_dim_range"]) == (32, 16, [16, 256])
    assert (rule["enable_min_block_factor"], rule["min_sm"], rule["releases"]) == (4.0, 80, ["0.11"])
    assert "3160107549" in rule["source"] and "default to JIT impl" in rule["source"]
    # the head rule takes Llama3-8B's 4 query heads a KV head, which the precompiled rule refused
    assert trtllm_xqa_jit_serves(32, 8, 128, "fp16", 32, H100_SXM_SMS)
    assert not trtllm_xqa_serves(32, 8, 128, "fp16")
    assert not trtllm_xqa_jit_serves(32, 32, 128, "fp16", 64, H100_SXM_SMS)  # vanilla MHA at beam 1
    assert not trtllm_xqa_jit_serves(64, 1, 128, "fp16", 64, H100_SXM_SMS)  # 64 a KV head
    assert not trtllm_xqa_jit_serves(32, 8, 80 + 8, "fp16", 64, H100_SXM_SMS)  # heads not a multiple of 16
    # mayHavePerfGain: 8 KV heads x batch x 4.0 >= 132 SMs from batch 5; batch 1 needs multi-block mode's count
    assert [trtllm_xqa_jit_serves(32, 8, 128, "fp16", b, H100_SXM_SMS) for b in (1, 4, 5)] == [False, False, True]
    assert trtllm_xqa_jit_serves(32, 8, 128, "fp16", 1, H100_SXM_SMS, multi_block_count=5)


def test_the_v0_11_rows_batch_32_and_64_run_the_jit_xqa():
    # modelopt-v0.15 (TensorRT-LLM v0.11): batch 32 and 64 take the JIT XQA, timed as the default fused call; batch
    # 1 is left as typed (multi-block mode, which decides it, is set by a build call not read: FINDINGS)
    data = other_runs_data()
    rows = [r for r in data["runs"] if r["id"].split()[0] == "modelopt-v0.15"]
    assert len(rows) == 9
    for run in rows:
        cfg, _, settings, _ = decode_setup(run, data["sources"]["modelopt-v0.15"])
        assert settings["decode_kernel"] is None, run["id"]
        serves = trtllm_xqa_jit_serves(cfg.n_heads, cfg.n_kv_heads, cfg.d_head, settings["dtype"], run["batch"],
                                       H100_SXM_SMS)
        assert serves == (run["batch"] > 1), run["id"]
