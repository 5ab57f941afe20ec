"""A new user's twenty-second round (session 26; validate/FINDINGS.md "A new user's twenty-second
round"): Hub config.json files of popular models written as the Hub has them, run through every
command. Each test failed before its fix; the numbers are exact, with their source."""

from __future__ import annotations

import json

import pytest

from tests.cli_run import one_error_line, run_json, run_main

# Qwen/Qwen2.5-7B-Instruct's config.json (max_position_embeddings 32,768) with the rope_scaling its
# model card says to add for 131,072 tokens ("Processing Long Texts"): YaRN x4 over 32,768.
QWEN25_7B_INSTRUCT = {
    "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
    "eos_token_id": 151645, "hidden_act": "silu", "hidden_size": 3584, "initializer_range": 0.02,
    "intermediate_size": 18944, "max_position_embeddings": 32768, "max_window_layers": 28,
    "model_type": "qwen2", "num_attention_heads": 28, "num_hidden_layers": 28, "num_key_value_heads": 4,
    "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 131072, "tie_word_embeddings": False,
    "torch_dtype": "bfloat16", "transformers_version": "4.43.1", "use_cache": True, "use_sliding_window": False,
    "vocab_size": 152064}
YARN_X4 = {"factor": 4.0, "original_max_position_embeddings": 32768, "type": "yarn"}


def _write(tmp_path, name: str, data: dict) -> str:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(data))
    return str(path)


# 1. A YaRN rope_scaling sets the context vLLM serves at (vllm/config.py _get_and_verify_max_len)

def test_yarn_rope_scaling_sets_the_served_context(tmp_path, capsys):
    """`serve --config qwen2.5-7b-instruct+yarn --prompt 60000` was "request 0: prompt 60000 + output
    200 tokens pass the model's context of 32768", and estimate warned past 32,768: vLLM serves this
    config at 4 x 32,768 = 131,072 tokens (Qwen's model card: the same YaRN block for 128K)."""
    path = _write(tmp_path, "qwen25-yarn", {**QWEN25_7B_INSTRUCT, "rope_scaling": YARN_X4})
    served = run_json(["serve", "--config", path, "--hardware", "h100", "--rate", "0.2", "--requests", "2",
                       "--prompt", "60000", "--output", "8"], capsys)
    assert served["setup"]["max_model_len"] == 131_072
    sim = run_json(["simulate", "--config", path, "--hardware", "h100", "--prompt", "60000", "--gen", "8"], capsys)
    assert sim["memory"]["model_context"] == 131_072
    plain = run_json(["simulate", "--config", _write(tmp_path, "qwen25", QWEN25_7B_INSTRUCT), "--hardware",
                      "h100", "--prompt", "2048", "--gen", "8"], capsys)
    assert plain["memory"]["model_context"] == 32_768


def test_contexts_that_already_say_their_scaling_are_kept():
    """DeepSeek-V3 (YaRN x40 over 4,096 = its 163,840), gpt-oss (x32 over 4,096 = 131,072), Llama 3.1
    (llama3: not scaled), Phi-3 128K (longrope: not scaled), Gemma 3 (linear x8: vLLM skips gemma3)."""
    from costmodel.hf_context import served_context
    deepseek = {"rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0,
                                 "original_max_position_embeddings": 4096, "type": "yarn"}}
    assert served_context(deepseek, "deepseek_v3", 163_840, "c") == 163_840
    oss = {"rope_scaling": {"factor": 32.0, "original_max_position_embeddings": 4096, "rope_type": "yarn"}}
    assert served_context(oss, "gpt_oss", 131_072, "c") == 131_072
    llama = {"rope_scaling": {"factor": 8.0, "original_max_position_embeddings": 8192, "rope_type": "llama3"}}
    assert served_context(llama, "llama", 131_072, "c") == 131_072
    assert served_context({"rope_scaling": {"type": "longrope", "long_factor": [1.0]}}, "phi3", 131_072, "c") == 131_072
    assert served_context({"rope_scaling": {"factor": 8.0, "rope_type": "linear"}}, "gemma3_text", 131_072, "c") == 131_072
    assert served_context({"rope_scaling": {"factor": 2.0, "type": "linear"}}, "llama", 4096, "c") == 8192
    assert served_context({"rope_scaling": None}, "qwen3", 40_960, "c") == 40_960


def test_a_broken_rope_factor_is_one_line(tmp_path, capsys):
    path = _write(tmp_path, "bad", {**QWEN25_7B_INSTRUCT, "rope_scaling": {**YARN_X4, "factor": "4x"}})
    line = one_error_line(["estimate", "--config", path], capsys)
    assert line == f"error: {path}: the RoPE scaling's factor must be a positive number, got '4x'."


# 2. Gemma 3 4B/12B/27B's config.json: the text_config leaves its sizes to Gemma3TextConfig

def _gemma3(text_config: dict) -> dict:
    """google/gemma-3-*-it config.json as the Hub has it (the 27B's is quoted in TensorRT-LLM's
    tests/unittest/_torch/modeling/test_modeling_gemma3.py GEMMA3_27B_MINI_CONFIG, 62 layers there 6)."""
    return {"architectures": ["Gemma3ForConditionalGeneration"], "boi_token_index": 255999,
            "eoi_token_index": 256000, "eos_token_id": [1, 106], "image_token_index": 262144,
            "initializer_range": 0.02, "mm_tokens_per_image": 256, "model_type": "gemma3",
            "text_config": {"model_type": "gemma3_text", "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
                            "sliding_window": 1024, **text_config},
            "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0",
            "vision_config": {"hidden_size": 1152, "image_size": 896, "intermediate_size": 4304,
                              "model_type": "siglip_vision_model", "num_attention_heads": 16,
                              "num_hidden_layers": 27, "patch_size": 14, "vision_use_head": False}}


GEMMA3_27B = dict(head_dim=128, hidden_size=5376, intermediate_size=21504, num_attention_heads=32,
                  num_hidden_layers=62, num_key_value_heads=16, query_pre_attn_scalar=168)
GEMMA3_4B = dict(hidden_size=2560, intermediate_size=10240, num_hidden_layers=34)


def test_gemma3_hub_configs_are_read_with_the_class_defaults(tmp_path, capsys):
    """`estimate --config gemma-3-27b-it/config.json` was "text_config: missing field 'vocab_size'":
    the Hub's text_config leaves vocab_size (262,208) and, in the 4B's, the heads (8 query, 4 key/value
    of 256) to Gemma3TextConfig. The language models' parameters are Gemma3ForConditionalGeneration's
    less its vision tower and projector, built on the meta device (transformers 5.24): 27,009,346,304
    of 27,432,406,640 (the Hub's 27.4B) and 3,880,263,168 of 4,300,079,472 (4.3B)."""
    for text, total in ((GEMMA3_27B, 27_009_346_304), (GEMMA3_4B, 3_880_263_168)):
        path = _write(tmp_path, f"gemma3-{total}", _gemma3(text))
        assert run_json(["estimate", "--config", path], capsys)["params"]["total"] == total


# 3. finetune on a quantized checkpoint said nothing of its quantization_config

def test_finetune_says_a_checkpoints_quantization_is_not_read(tmp_path, capsys):
    """`finetune --config Qwen2.5-7B-Instruct-AWQ --method lora` printed a bf16 base (15.26 GiB) with no
    word that the AWQ int4 checkpoint (quantization_config bits 4, group_size 128) was not what it
    counted. The figures are unchanged (the unquantized base's); a note says what was counted."""
    awq = {**QWEN25_7B_INSTRUCT, "torch_dtype": "float16", "quantization_config": {
        "bits": 4, "group_size": 128, "modules_to_not_convert": None, "quant_method": "awq", "version": "gemm",
        "zero_point": True}}
    path = _write(tmp_path, "awq", awq)
    code, out, err = run_main(["finetune", "--config", path, "--method", "lora"], capsys)
    assert code == 0 and err.strip().splitlines() == [
        "note: the checkpoint's quantization_config (int4 g128, quant_method awq) is not read: the frozen base is "
        "counted in bf16 (--dtype); a LoRA on the stored format is not modelled."]
    base = run_json(["finetune", "--config", path, "--method", "lora"], capsys)["memory"]["base_weights"]
    plain = _write(tmp_path, "plain", QWEN25_7B_INSTRUCT)
    assert base == run_json(["finetune", "--config", plain, "--method", "lora"], capsys)["memory"]["base_weights"]
    assert base == 2 * 7_615_616_512  # Qwen2.5-7B's parameters (model card: 7.61B), 2 bytes each
    code, _, err = run_main(["finetune", "--config", plain, "--method", "qlora"], capsys)
    assert code == 0 and "quantization_config" not in err


def test_qlora_on_a_bitsandbytes_nf4_checkpoint_has_no_note(tmp_path, capsys):
    """unsloth/Meta-Llama-3.1-8B-bnb-4bit's quantization_config is QLoRA's own base (nf4, double
    quantization): no note under --method qlora; under --method lora the bf16 base is still said."""
    bnb = {**QWEN25_7B_INSTRUCT, "quantization_config": {
        "_load_in_4bit": True, "_load_in_8bit": False, "bnb_4bit_compute_dtype": "bfloat16",
        "bnb_4bit_quant_storage": "uint8", "bnb_4bit_quant_type": "nf4", "bnb_4bit_use_double_quant": True,
        "llm_int8_enable_fp32_cpu_offload": False, "llm_int8_has_fp16_weight": False, "llm_int8_skip_modules": None,
        "llm_int8_threshold": 6.0, "load_in_4bit": True, "load_in_8bit": False, "quant_method": "bitsandbytes"}}
    path = _write(tmp_path, "bnb", bnb)
    code, _, err = run_main(["finetune", "--config", path, "--method", "qlora"], capsys)
    assert (code, err) == (0, "")
    code, _, err = run_main(["finetune", "--config", path, "--method", "lora"], capsys)
    assert code == 0 and "(nf4, quant_method bitsandbytes) is not read" in err


def test_a_typo_in_the_rope_factor_names_the_factor(tmp_path, capsys):
    """A factor of 1e30 was "model ...: max_positions = 131072000000000002606317546852319232 is beyond
    1,000,000,000": ModelConfig's name for a field the config does not have."""
    path = _write(tmp_path, "big", {**QWEN25_7B_INSTRUCT, "rope_scaling": {"factor": 1e30, "type": "linear"}})
    assert one_error_line(["estimate", "--config", path], capsys) == (
        f"error: {path}: the RoPE scaling's factor 1e+30 makes the context {int(32768 * 1e30):,} tokens, "
        "beyond 1,000,000,000; is it a typo?")


@pytest.mark.parametrize("rope,message", [
    # 1e308 original positions was int()'s OverflowError traceback (review, session 26)
    ({"type": "yarn", "factor": 4, "original_max_position_embeddings": 1e308},
     "the RoPE scaling's original_max_position_embeddings 1e+308 is beyond 1,000,000,000; is it a typo?"),
    ({"type": "yarn", "factor": 1e308, "original_max_position_embeddings": 32768},
     "the RoPE scaling's factor 1e+308 makes the context infinite, beyond 1,000,000,000; is it a typo?"),
])
def test_an_infinite_served_context_is_one_line(tmp_path, capsys, rope, message):
    path = _write(tmp_path, "inf", {**QWEN25_7B_INSTRUCT, "rope_scaling": rope})
    assert one_error_line(["serve", "--config", path, "--hardware", "h100", "--rate", "1", "--requests", "2"],
                          capsys) == f"error: {path}: {message}"


# 4. --config into the local Hub cache: the repository's folder, and the name a snapshot gives

def test_config_in_the_hub_cache_is_read_and_named_org_name(tmp_path, capsys):
    """huggingface-cli download leaves models--Qwen--Qwen3-8B/{refs/main, snapshots/<commit>/config.json}.
    `--config .../models--Qwen--Qwen3-8B` was "is a directory with no config.json", and `--config
    .../snapshots/<commit>` named the model by its commit hash in every header and file."""
    commit = "9c925d64d72725edaf899c6cb9c377fd0709d9c5"
    repo = tmp_path / "models--Qwen--Qwen3-8B"
    (repo / "snapshots" / commit).mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    (repo / "snapshots" / commit / "config.json").write_text(json.dumps(QWEN25_7B_INSTRUCT))
    for path in (repo, repo / "snapshots" / commit, repo / "snapshots" / commit / "config.json"):
        data = run_json(["estimate", "--config", str(path)], capsys)
        assert (data["inputs"]["model"], data["params"]["total"]) == ("Qwen/Qwen3-8B", 7_615_616_512)
    assert one_error_line(["estimate", "--config", str(tmp_path)], capsys) == (
        f"error: {tmp_path}: is a directory with no config.json, not a config file.")



def test_a_refs_main_of_other_bytes_is_one_line(tmp_path, capsys):
    """A refs/main that is not UTF-8 (a truncated or binary file) was UnicodeDecodeError's traceback
    (hub_cache.snapshot_config caught OSError only); now the folder reads as one with no config."""
    repo = tmp_path / "models--Qwen--Qwen3-8B"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_bytes(b"\xff\xfe\xfa")
    assert one_error_line(["estimate", "--config", str(repo)], capsys) == (
        f"error: {repo}: is a directory with no config.json, not a config file.")

# 5. plan --serve's footnote named the last step's context one past the step it times

def test_plan_serve_names_the_context_its_last_step_is_at(capsys):
    """`plan --serve --prompt 512 --gen 64` said "last step: the one at context 576" while its JSON
    (last_step.context) and `simulate` with the layout time the last decode step at 512 + 64 - 1 = 575:
    the 64th token is fed back by no step (the KV cache at n + T - 1, the seventeenth round)."""
    args = ["plan", "--model", "llama3-8b", "--hardware", "h100", "--gpus", "2", "--serve", "--batch", "4",
            "--prompt", "512", "--gen", "64"]
    assert run_json(args, capsys)["feasible"][0]["last_step"]["context"] == 575
    code, out, _ = run_main(args, capsys)
    assert code == 0 and out.rstrip().endswith("last step: the one at context 575, where the memory is sized.")


def _cached_hub_model(tmp_path, monkeypatch) -> None:
    """acme/Foo-7B in a Hub cache under tmp_path (a small Qwen2), offline."""
    commit = "0" * 40
    repo = tmp_path / "hub" / "models--acme--Foo-7B"
    (repo / "snapshots" / commit).mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    small = {**QWEN25_7B_INSTRUCT, "hidden_size": 64, "intermediate_size": 96, "num_attention_heads": 4,
             "num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": 256}
    (repo / "snapshots" / commit / "config.json").write_text(json.dumps(small))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def test_plot_reads_a_hub_id_as_every_other_command(tmp_path, capsys, monkeypatch):
    """`plot memory --model acme/Foo-7B` (and report) was "unknown model 'acme/Foo-7B'. Did you mean
    tiiuae/falcon-7b...", where estimate and sweep read the cached config.json (README: a Hub id is
    read from the local cache)."""
    _cached_hub_model(tmp_path, monkeypatch)
    out = tmp_path / "memory.png"
    code, _, err = run_main(["plot", "memory", "--model", "acme/Foo-7B", "-o", str(out)], capsys)
    assert code == 0 and out.stat().st_size > 0, err


def test_a_figure_of_a_model_named_org_name_is_one_file():
    from reports.made import Made
    assert Made("memory-acme/Foo-7B", "t", "c", None).name == "memory-acme--Foo-7B"


@pytest.mark.slow
def test_report_of_a_model_named_org_name_writes_its_files(tmp_path, capsys, monkeypatch):
    """`report --model acme/Foo-7B` (a cached Hub id that is no preset; and `--config` into the cache,
    now named so) stopped at "figures/memory-acme: no such directory": the model's name, org/name, was
    the file stem. Its figures are now memory-acme--Foo-7B.png, as the Hub cache names the folder."""
    _cached_hub_model(tmp_path, monkeypatch)
    out = tmp_path / "report"
    code, _, err = run_main(["report", "--model", "acme/Foo-7B", "--out", str(out), "--no-measure"], capsys)
    assert code == 0, err
    assert (out / "figures" / "memory-acme--Foo-7B.png").stat().st_size > 0
    assert "figures/memory-acme--Foo-7B.png" in (out / "report.md").read_text()


# 7. serve simulated an engine vLLM v1 refuses to start

def test_serve_says_when_vllm_would_not_start_at_the_models_context(tmp_path, capsys):
    """`serve --config Llama-3.1-8B --hardware l4` served at max_model_len 131,072 with a cache of 3,105
    blocks of 16 (49,680 tokens; 2,894 before session 26's vLLM profile-run peak): vLLM v1 raises at
    start-up unless one max_model_len request fits
    (kv_cache_utils.check_enough_kv_cache_memory; the familiar "decreasing max_model_len" error). A note
    says so; an H100's 28,431 blocks hold 454,896 tokens and say nothing."""
    args = ["serve", "--model", "llama3.1-8b", "--rate", "2", "--requests", "5"]
    setup = run_json([*args, "--hardware", "l4"], capsys)["setup"]
    assert (setup["num_blocks"], setup["block_size"], setup["max_model_len"]) == (3_105, 16, 131_072)
    assert setup["max_model_len_note"].startswith(
        "vLLM v1 would not start this engine: one request of max_model_len 131,072 needs 8,192 blocks, the "
        "cache holds 3,105 (49,680 tokens;")
    code, out, _ = run_main([*args, "--hardware", "l4"], capsys)
    assert code == 0 and "note: vLLM v1 would not start this engine" in out
    assert "max_model_len_note" not in run_json([*args, "--hardware", "h100"], capsys)["setup"]
