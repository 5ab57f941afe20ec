"""A checkpoint's quantization_config is the default weight format of inference (costmodel/checkpoint.py).

gpt-oss ships its routed experts in MXFP4 and DeepSeek-V3 its linear layers in FP8 with one fp32
scale per 128 x 128 block (their config.json's quantization_config, restored in the presets): an
inference path that is not told --weight-dtype runs them so, --weight-dtype none in --dtype, and the
training paths are unchanged.
"""

from __future__ import annotations

import json

import pytest

import costmodel
from costmodel.checkpoint import checkpoint_weights, inference_weights
from costmodel.config import ConfigError
from costmodel.hf import from_hf_config
from costmodel.presets import load_preset

from cli_run import run_main

pytestmark = pytest.mark.filterwarnings("ignore:model 'gpt-oss")

# gpt-oss-120b: 36 layers of 128 experts, each a gate_up (2 x 2,880 rows of 2,880) and a down
# (2,880 x 2,880) matrix, 3 x 2,880^2 = 24,883,200 values an expert, 114,661,785,600 in all.
EXPERT_VALUES = 36 * 128 * 3 * 2880 * 2880
MXFP4_DATA = EXPERT_VALUES // 2  # two E2M1 values a byte
MXFP4_SCALES = EXPERT_VALUES // 32  # one E8M0 byte per 32 values
MXFP4_UNQUANTIZED = 2 * (116_829_156_672 - EXPERT_VALUES)  # the other parameters in bf16


def test_the_presets_read_their_released_quantization_config():
    assert load_preset("gpt-oss-120b").checkpoint_weights == ("mxfp4", "mxfp4", None)
    assert load_preset("gpt-oss-20b").checkpoint_weights == ("mxfp4", "mxfp4", None)
    assert load_preset("deepseek-v3").checkpoint_weights == ("fp8", "fp8", 128)
    assert load_preset("llama2-7b").checkpoint_weights is None


def test_gpt_oss_120b_weights_default_to_mxfp4():
    default = costmodel.estimate("gpt-oss-120b").to_dict()
    explicit = costmodel.estimate("gpt-oss-120b", weight_dtype="mxfp4").to_dict()
    bf16 = costmodel.estimate("gpt-oss-120b", weight_dtype="none").to_dict()
    weights = default["memory"]["quantized_weights"]
    assert (weights["data"], weights["scales"], weights["unquantized"]) == (
        MXFP4_DATA, MXFP4_SCALES, MXFP4_UNQUANTIZED) == (57_330_892_800, 3_583_180_800, 4_334_742_144)
    assert weights["total"] == explicit["memory"]["quantized_weights"]["total"] == 65_248_815_744
    assert default["memory"]["inference_total"] == explicit["memory"]["inference_total"] == 66_473_569_152  # 66,223,483,776 before session 26's transients
    assert bf16["memory"]["inference_total"] == 234_883_066_752  # bf16 weights; session 26: + the largest no-grad transient (memory.forward_transient)
    assert "quantized_weights" not in bf16["memory"]
    assert default["inputs"]["weight_dtype"] == "mxfp4"
    assert default["inputs"]["weight_dtype_source"] == "checkpoint"
    assert explicit["inputs"]["weight_dtype_source"] == bf16["inputs"]["weight_dtype_source"] == "option"
    # training holds the weights in the training dtype either way
    assert default["memory"]["training_total"] == bf16["memory"]["training_total"] == 1_912_312_118_540


def test_gpt_oss_120b_fits_one_h100_for_inference_by_default(capsys):
    base = ["estimate", "--model", "gpt-oss-120b", "--hardware", "h100-sxm"]
    code, out, _ = run_main([*base, "--json"], capsys)
    inference = json.loads(out)["fit"]["inference"]
    # a generation's: inference_total (66,223,483,776, a plain forward) less 2,047 positions' bf16 logits
    # (vocabulary 201,088): the verdict sizes generate's prefill since session 19's thirteenth round
    # since session 26 the larger of the logits and the prefill's largest no-grad transient
    assert (code, inference["memory"], inference["fits"]) == (0, 66_473_569_152, True)
    assert inference["capacity"] == 76_014_734_540  # floor(0.9 x 81,117 MiB, what the H100 reports) less 512 MiB
    code, out, _ = run_main([*base, "--weight-dtype", "none", "--json"], capsys)
    unquantized = json.loads(out)["fit"]["inference"]
    assert (unquantized["memory"], unquantized["fits"]) == (234_883_066_752, False)  # session 26: + the largest no-grad transient (memory.forward_transient)
    code, text, _ = run_main(base, capsys)
    assert "weights: mxfp4 (the checkpoint's quantization_config; --weight-dtype none for unquantized)" in text
    # session 39 (wt39_user): the verdict names the format that makes it fit and the unquantized need
    assert ("Inference on 1 h100-sxm GPU: 61.91 GiB per GPU fits in 70.79 GiB, its weights the checkpoint's mxfp4; "
            "unquantized (--weight-dtype none) it needs 218.75 GiB, which does not fit.") in text


def test_deepseek_v3_training_is_unchanged_and_inference_is_fp8_blocks():
    result = costmodel.estimate("deepseek-v3").to_dict()
    memory = result["memory"]
    # the values before the preset had its quantization_config (bf16 weights throughout)
    assert memory["training_total"] == 11_024_266_293_516
    assert memory["weights"] == 1_342_052_808_704
    assert costmodel.estimate("deepseek-v3", weight_dtype="none").to_dict()["memory"]["inference_total"] == \
        1_347_565_510_912  # 1,342,726,332,672 before session 26's transients
    assert memory["inference_total"] == 678_663_254_624  # session 26: + the largest no-grad transient (memory.forward_transient)
    assert memory["quantized_weights"]["format"] == "fp8, blocks of 128 x 128"
    assert memory["quantized_weights"]["total"] == \
        costmodel.estimate("deepseek-v3", weight_dtype="fp8", weight_group=128).to_dict()["memory"][
            "quantized_weights"]["total"]


def _tiny_llama(quantization: dict | None) -> dict:
    """A Llama of odd sizes: d 256, 4 heads of 64, 2 KV heads, d_ff 384, 2 layers, 99 tokens."""
    config = {"model_type": "llama", "hidden_size": 256, "intermediate_size": 384, "num_attention_heads": 4,
              "num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": 99,
              "max_position_embeddings": 512}
    return {**config, "quantization_config": quantization} if quantization else config


# Its 7 matrices a layer, (rows R, columns C): q (256, 256), k and v (128, 256), o (256, 256),
# gate and up (384, 256), down (256, 384).
MATRICES = [(256, 256), (128, 256), (128, 256), (256, 256), (384, 256), (384, 256), (256, 384)]


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def test_a_gptq_config_gives_int4_in_groups_of_128():
    cfg = from_hf_config(_tiny_llama({"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False}),
                         "tiny-gptq")
    assert cfg.checkpoint_weights == ("gptq", "int4", 128)
    weights = costmodel.estimate(cfg, seq_len=16).to_dict()["memory"]["quantized_weights"]
    groups = [r * _ceil(c, 128) for r, c in MATRICES]  # an fp16 scale and a 4-bit zero per group
    assert weights["data"] == 2 * sum(r * c // 2 for r, c in MATRICES) == 491_520
    assert weights["scales"] == 2 * sum(2 * g for g in groups) == 15_360
    assert weights["zeros"] == 2 * sum(_ceil(g * 4, 8) for g in groups) == 3_840
    explicit = costmodel.estimate(cfg, seq_len=16, weight_dtype="int4", weight_group=128)
    assert explicit.to_dict()["memory"]["quantized_weights"] == weights


def test_fp8_blocks_keep_one_fp32_scale_per_block():
    cfg = from_hf_config(_tiny_llama({"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
                                      "weight_block_size": [128, 128]}), "tiny-fp8")
    weights = costmodel.estimate(cfg, seq_len=16).to_dict()["memory"]["quantized_weights"]
    assert weights["data"] == 2 * sum(r * c for r, c in MATRICES) == 983_040
    assert weights["scales"] == 2 * sum(4 * _ceil(r, 128) * _ceil(c, 128) for r, c in MATRICES) == 240
    per_row = costmodel.estimate(cfg, seq_len=16, weight_dtype="fp8").to_dict()["memory"]["quantized_weights"]
    assert per_row["scales"] == 2 * sum(4 * r for r, _ in MATRICES) == 14_336


@pytest.mark.parametrize("quantization, expected", [
    ({"quant_method": "awq", "bits": 4, "group_size": 64, "zero_point": True}, ("awq", "int4", 64)),
    ({"quant_method": "gptq", "bits": 8, "group_size": 32}, ("gptq", "int8", 32)),
    ({"quant_method": "gptq", "bits": 4, "group_size": -1}, ("gptq", None, None)),
    ({"quant_method": "gptq", "bits": 3, "group_size": 128}, ("gptq", None, None)),
    ({"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4"},
     ("bitsandbytes", "nf4", None)),
    ({"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "fp4"},
     ("bitsandbytes", None, None)),
    ({"quant_method": "bitsandbytes", "load_in_8bit": True}, ("bitsandbytes", "int8", None)),
    ({"quant_method": "fbgemm_fp8", "activation_scale_ub": 1200.0}, ("fbgemm_fp8", "fp8", None)),
    ({"quant_method": "fp8", "weight_block_size": [128, 64]}, ("fp8", None, None)),
    ({"quant_method": "fp8"}, ("fp8", "fp8", None)),
    ({"quant_method": "compressed-tensors", "config_groups": {"group_0": {
        "weights": {"type": "float", "num_bits": 8, "strategy": "channel"}, "targets": ["Linear"]}}},
     ("compressed-tensors", "fp8", None)),
    ({"quant_method": "compressed-tensors", "config_groups": {"group_0": {
        "weights": {"type": "float", "num_bits": 8, "strategy": "block", "block_structure": [128, 128]}}}},
     ("compressed-tensors", "fp8", 128)),
    ({"quant_method": "compressed-tensors", "config_groups": {"group_0": {
        "weights": {"type": "int", "num_bits": 4, "strategy": "group", "group_size": 128}}}},
     ("compressed-tensors", "int4", 128, "compressed-tensors")),  # symmetric by default: tests/test_compressed_tensors.py
    ({"quant_method": "exl2", "bits": 4.65}, ("exl2", None, None)),
])
def test_quant_methods_map_to_formats_or_to_none(quantization, expected):
    assert checkpoint_weights(quantization, "config.json") == expected


def test_the_resolution_rule():
    cfg = load_preset("gpt-oss-20b")
    assert inference_weights(cfg) == ("mxfp4", None, "checkpoint")
    assert inference_weights(cfg, "none") == (None, None, "option")
    assert inference_weights(cfg, "int4", 64) == ("int4", 64, "option")
    assert inference_weights(load_preset("deepseek-v3"), None, 64) == ("fp8", 64, "checkpoint")
    assert inference_weights(load_preset("llama2-7b")) == (None, None, None)
    with pytest.raises(ConfigError, match="--weight-group applies only"):
        inference_weights(cfg, "none", 32)


def test_an_unknown_quant_method_is_one_line_and_exit_2(tmp_path, capsys):
    """Inference paths refuse it in one line; estimate, whose training figures do not read the
    format, warns and shows its inference unquantized (it refused the whole estimate before)."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_tiny_llama({"quant_method": "exl2", "bits": 4.65})))
    refusal = ("its checkpoint's quantization_config (quant_method 'exl2') is not a format modelled here; "
               "--weight-dtype chooses a format (none: unquantized weights in --dtype).")
    code, out, err = run_main(["simulate", "--config", str(path), "--prompt", "8", "--gen", "2"], capsys)
    lines = err.strip().splitlines()
    assert (code, out, len(lines)) == (2, "", 1), err
    assert lines[0].startswith("error: model ") and lines[0].endswith(refusal), lines[0]
    code, out, err = run_main(["estimate", "--config", str(path), "--seq-len", "16", "--json"], capsys)
    assert code == 0 and err.strip().endswith(refusal[:-1] + ". The inference figures below are unquantized.")
    warned = json.loads(out)
    code, out, _ = run_main(["estimate", "--config", str(path), "--seq-len", "16", "--weight-dtype", "none",
                             "--json"], capsys)
    unquantized = json.loads(out)
    assert code == 0 and unquantized["inputs"]["weight_dtype_source"] == "option"
    assert warned["memory"] == unquantized["memory"] and "weight_dtype_source" not in warned["inputs"]
    # a training path does not read the checkpoint's format, and takes --weight-dtype none as it is
    code, _, err = run_main(["simulate", "--config", str(path), "--train", "--seq-len", "16"], capsys)
    assert code == 0, err
    code, _, err = run_main(["simulate", "--config", str(path), "--train", "--seq-len", "16", "--weight-dtype",
                             "none"], capsys)
    assert code == 0, err


def test_simulate_and_serve_take_the_checkpoint_format():
    default = costmodel.simulate("gpt-oss-20b", "h100-sxm", prompt=1024, gen=128).to_dict()
    explicit = costmodel.simulate("gpt-oss-20b", "h100-sxm", prompt=1024, gen=128, weight_dtype="mxfp4").to_dict()
    bf16 = costmodel.simulate("gpt-oss-20b", "h100-sxm", prompt=1024, gen=128, weight_dtype="none").to_dict()
    assert default["inputs"]["weight_dtype"] == "mxfp4" and default["inputs"]["weight_dtype_source"] == "checkpoint"
    seconds = [run["decode"]["decode_seconds"] for run in (default, explicit, bf16)]
    assert seconds[0] == seconds[1] < seconds[2]  # decoding reads the 4.25-bit experts, not bf16 ones
    from costmodel.serving.replica import build_replica

    hardware = costmodel.hardware.load_hardware("h100-sxm")
    setups = {name: build_replica(load_preset("gpt-oss-20b"), hardware, **extra)[2]
              for name, extra in (("default", {}), ("mxfp4", {"weight_dtype": "mxfp4"}),
                                  ("none", {"weight_dtype": "none"}))}
    assert setups["default"]["weight_dtype"] == "mxfp4"
    assert setups["default"]["weight_dtype_source"] == "checkpoint"
    assert setups["default"]["kv_cache"] == setups["mxfp4"]["kv_cache"] != setups["none"]["kv_cache"]
    assert setups["none"]["weight_dtype"] is None and setups["none"]["weight_dtype_source"] == "option"


def test_plan_serve_takes_the_checkpoint_format():
    # gpt-oss-20b's MXFP4 checkpoint: 13,761,264,768 bytes (tests/test_hf_gpt_oss.py, the model card's 12.8 GiB)
    runs = {name: costmodel.plan("gpt-oss-20b", 1, "h100-sxm", serve=True, **extra).to_dict()
            for name, extra in (("default", {}), ("mxfp4", {"weight_dtype": "mxfp4"}),
                                ("none", {"weight_dtype": "none"}))}
    weights = {name: run["feasible"][0]["per_rank"]["weights"] for name, run in runs.items()}
    assert weights["default"] == weights["mxfp4"] == 13_761_264_768
    assert weights["none"] == 2 * 20_914_757_184  # every parameter in bf16 (tests/published.py FLAGSHIPS)
    assert runs["default"]["inputs"]["weight_dtype"] == "mxfp4"
    assert runs["default"]["inputs"]["weight_dtype_source"] == "checkpoint"
    assert "weight_dtype" not in runs["none"]["inputs"] and runs["none"]["inputs"]["weight_dtype_source"] == "option"
