"""Where session 24's merged branches meet (validate/FINDINGS.md "Where the merged branches meet"):
each test failed before its fix; numbers are exact integers with their arithmetic."""

from __future__ import annotations

from tests import cli_run
from tests.cli_run import run_json, run_main


def one_error_line(args: list[str], capsys) -> str:
    """cli_run.one_error_line, the command's `warning:` lines aside."""
    return cli_run.one_error_line(args, capsys, warnings=True)


# 1. DeepSeek-V4 with FP8 weights on FP8 tensor cores: its compressor leaf holds weight products beside
#    its indexer's scores against the n / 4 compressed entries, so no one FP8 share of the leaf's FLOPs
#    (a ValueError traceback before).

def test_deepseek_v4_w8a8_is_refused_in_one_line(capsys):
    line = one_error_line(["simulate", "-m", "deepseek-v4-flash", "--hardware", "b200", "--prompt", "4096",
                           "--gen", "128", "--weight-dtype", "fp8"], capsys)
    assert "W8A8" in line and "decoder.csa_layer.self_attention.compressor" in line and "--fp8-gemm w8a16" in line


# 2. Serving a model whose full layers have their own KV heads (h_kvg, split under tp since wt24_user)
#    at a tp where the windowed and the full layers split differently: the KV bytes a GPU holds per
#    token are the split tree's, not the whole's over one "ways" ratio (refused "24/7 ways" before).

#: Gemma4TextConfig's defaults with keys as values on the full layers (tests/test_smoke18_defects.py):
#: 25 sliding layers of 4 KV heads of 256, 5 full layers of 2 KV heads of 512.
GEMMA4_GLOBAL_KV = dict(model_type="gemma4_text", vocab_size=262144, hidden_size=2304, intermediate_size=9216,
                        num_hidden_layers=30, num_attention_heads=8, num_key_value_heads=4, head_dim=256,
                        global_head_dim=512, attention_k_eq_v=True, num_global_key_value_heads=2,
                        sliding_window=512, hidden_size_per_layer_input=0, max_position_embeddings=131072)


def test_serve_splits_the_full_layers_kv_heads_as_the_tree_does(tmp_path, capsys):
    """At tp 4 a GPU holds one of the 4 sliding heads and one of the 2 full-layer heads (replicated
    over two GPUs, vLLM's QKVParallelLinear): K and V in bf16, 25 x 1 x 256 x 2 x 2 + 5 x 1 x 512 x 2 x 2
    bytes a token, not the whole 122,880 over 4 (30,720); at tp 2 the two split alike, 61,440."""
    import json

    path = tmp_path / "config.json"
    path.write_text(json.dumps(GEMMA4_GLOBAL_KV))
    def per_token(tp: int) -> int:
        return run_json(["serve", "--config", str(path), "--hardware", "h100", "--rate", "4", "--requests", "4",
                         "--prompt", "64", "--output", "4", "--scheduler", "orca", "--tp", str(tp)],
                        capsys)["setup"]["kv_cache"]["kv_bytes_per_token"]
    assert [per_token(tp) for tp in (2, 4)] == [25 * 2 * 256 * 4 + 5 * 1 * 512 * 4,
                                                25 * 1 * 256 * 4 + 5 * 1 * 512 * 4] == [61_440, 35_840]


# 3. plan --serve --rate (the capacity search) with a model no engine serves: one line, exit 2, as serve
#    and plan --serve say it; before, every configuration was set aside for that one reason ("not
#    feasible: 27", exit 1 for OpenAI GPT; exit 0 and a reason cut to "model 'deepseek-v4-flash'").

RATE = ["--rate", "1", "--slo-ttft", "2", "--slo-tpot", "0.1", "--requests", "20"]


def test_capacity_search_refuses_a_model_without_a_cache(tmp_path, capsys):
    import json

    path = tmp_path / "config.json"
    path.write_text(json.dumps(dict(model_type="openai-gpt", vocab_size=40478, n_embd=768, n_head=12, n_layer=12,
                                    n_positions=512)))
    line = one_error_line(["plan", "--config", str(path), "--hardware", "a100-80gb", "--serve", "--prompt", "256",
                           "--gen", "64", *RATE], capsys)
    assert "openai_gpt's Hugging Face class holds no KV cache" in line


def test_capacity_search_refuses_deepseek_v4_chunks(capsys):
    line = one_error_line(["plan", "-m", "deepseek-v4-flash", "--hardware", "b200", "--serve", "--prompt", "1024",
                           "--gen", "64", *RATE], capsys)
    assert "a prefill chunk against a cache (serving) is not modelled for DeepSeek-V4" in line


# 4. The layout line under context parallelism beside expert parallelism names the ranks Megatron-Core's
#    expert grid draws EP from (Layout.expert_ranks): "of dp" before, though ep 4 > dp 2.

def test_the_layout_line_names_the_expert_grid(capsys):
    from tests.cli_run import run_main

    common = ["simulate", "-m", "qwen3-30b-a3b", "--train", "--hardware", "h100", "--framework", "megatron",
              "--zero", "1", "--ep", "4", "--seq-len", "8192"]
    _, out, _ = run_main([*common, "--dp", "2", "--cp", "2"], capsys)
    assert "dp 2 x cp 2 (ep 4 of cp x dp)" in out
    _, out, _ = run_main([*common, "--dp", "1", "--cp", "2", "--tp", "2", "--sp", "--etp", "1"], capsys)
    assert "(ep 4 of tp x cp x dp, experts whole: etp 1)" in out


# 5. Parallel folding at dp 1 (tp 4 x dp 1, ep 2, etp 1): Megatron-Core's expert_data_parallel_size is
#    world / (etp x ep x pp) = 2, so two ranks hold the same experts and reduce their gradients; the
#    memory sharded them over the 2, but no collective ran (the data-parallel ones ran only where
#    dp x cp > 1).

def test_folding_at_dp_1_reduces_the_experts_gradients(capsys):
    """Qwen3-30B-A3B's 48 layers x 128 experts x 3 x 2,048 x 768 = 28,991,029,248 expert parameters, a
    rank's E / 2 of them, 14,495,514,624: their fp32 gradients reduce-scattered (4 bytes each) and their
    bf16 weights all-gathered (2 bytes) over the 2 ranks, the distributed optimizer's pair."""
    result = run_json(["simulate", "-m", "qwen3-30b-a3b", "--train", "--hardware", "h100", "--framework", "megatron",
                       "--zero", "1", "--dp", "1", "--tp", "4", "--sp", "--etp", "1", "--ep", "2",
                       "--seq-len", "4096"], capsys)
    local = 48 * 128 * 3 * 2048 * 768 // 2
    assert local == 14_495_514_624
    assert result["parallel"]["communication"]["edp"] == {"reduce_scatter": 4 * local, "all_gather": 2 * local}
    assert "dp" not in result["parallel"]["communication"]


def test_the_capacity_search_forks_no_pool_from_a_process_with_torch(monkeypatch):
    """plan --serve --rate's searches ran in a forked pool whatever the process held; forked from a
    test worker that had loaded torch (its thread pools' locks), a child waited forever and the
    fast tier hung at 98% (session 24). With torch loaded the searches run one by one, and give the
    pool's answer."""
    import multiprocessing

    import torch  # noqa: F401  (what the test workers hold)

    from costmodel.hardware import load_hardware
    from costmodel.presets import load_preset
    from costmodel.serving.capacity import Target, fork_is_safe, plan_capacity

    assert not fork_is_safe()
    target = Target(rate=2.0, slo_ttft=2.0, slo_tpot=0.1, requests=20, prompt="128", output="16", seed=0)
    options = dict(tps=[1], max_num_seqs=[64], max_batched_tokens=[512, 2048])
    serial = plan_capacity(load_preset("gpt2"), [load_hardware("h100-sxm")], target, processes=1, **options)

    def no_fork(method):
        raise AssertionError(f"a {method} pool was started")

    monkeypatch.setattr(multiprocessing, "get_context", no_fork)
    pooled = plan_capacity(load_preset("gpt2"), [load_hardware("h100-sxm")], target, processes=2, **options)
    assert pooled == serial and len(pooled["feasible"]) + len(pooled["infeasible"]) == 2


def test_a_config_path_with_a_null_byte_is_one_error_line(capsys):
    """The full run's random command lines (tests/test_robustness.py) found `estimate --config
    '\\x00'` a ValueError traceback from open(); it is one line naming the path."""
    assert one_error_line(["estimate", "--config", "\x00"], capsys) == \
        "error: '\\x00': not a file name (it holds a null byte)."
