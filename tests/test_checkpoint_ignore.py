"""A quantized checkpoint's ignore list keeps some of its weights in the unquantized dtype
(costmodel/checkpoint_ignore.py): compressed-tensors' `ignore`, transformers' `modules_to_not_convert`,
read into weight kinds that the decode weights' one byte count reads."""

from __future__ import annotations

import json

import pytest

import costmodel
from costmodel.checkpoint_ignore import matches, module_names
from costmodel.hf import from_hf_config
from costmodel.presets import load_preset

from cli_run import run_json, run_main

# moonshotai/Kimi-K2-Thinking's quantization_config (its config.json, quoted in full by a public EXAONE
# quantization guide: int4 in groups of 32, symmetric, pack-quantized, four ignore entries).
KIMI_THINKING_QUANTIZATION = {
    "config_groups": {"group_0": {"input_activations": None, "output_activations": None, "targets": ["Linear"],
                                  "weights": {"actorder": None, "block_structure": None, "dynamic": False,
                                              "group_size": 32, "num_bits": 4, "observer": "minmax",
                                              "observer_kwargs": {}, "strategy": "group", "symmetric": True,
                                              "type": "int"}}},
    "format": "pack-quantized",
    "ignore": ["lm_head", "re:.*self_attn.*", "re:.*shared_experts.*", "re:.*mlp\\.(gate|up|gate_up|down)_proj.*"],
    "kv_cache_scheme": None, "quant_method": "compressed-tensors", "quantization_status": "compressed"}


def kimi_thinking() -> dict:
    """Kimi-K2-Thinking's config.json as this project reads it: Kimi K2's fields (the kimi-k2 preset, whose
    sizes Kimi-K2-Thinking shares) with the Thinking checkpoint's quantization_config."""
    from pathlib import Path

    data = json.loads((Path(costmodel.__file__).parent / "presets" / "kimi-k2.json").read_text())
    return {**data, "quantization_config": KIMI_THINKING_QUANTIZATION}


def decode_weights(cfg, **options) -> int:
    return costmodel.simulate(cfg, "h100-sxm", batch=1, prompt=16, gen=2, **options).to_dict()["memory"]["weights"]


def test_kimi_k2_thinking_keeps_attention_shared_experts_and_the_dense_layer_in_bf16():
    cfg = from_hf_config(kimi_thinking(), "kimi-k2-thinking")
    assert cfg.checkpoint_weights == ("compressed-tensors", "int4", 32, "compressed-tensors",
                                      ("attention", "dense_mlp", "shared_experts"))
    from costmodel.serving.replica import replica_profile  # serve's and plan --serve's replicas read it too

    assert replica_profile(cfg).weight_format.kept == ("attention", "dense_mlp", "shared_experts")
    assert replica_profile(cfg, weight_dtype="int4").weight_format.kept == ()


def test_kimi_k2_thinking_decode_weights_move_by_exactly_the_kept_matrices(tmp_path, capsys):
    """Before: every linear int4 (580,970,628,736 B, wt38_configs). The kept matrices, counted from
    DeepseekV3ForCausalLM's modules by wt38_configs: 61 layers x 101,122,048 latent-attention values, 60 x
    44,040,192 shared-expert values, 396,361,728 in the dense layer's MLP, 488 matrices (61 x 5 + 60 x 3 + 3).
    Each was counted at compressed-tensors' symmetric int4 in groups of 32 (half a byte a value, a bf16
    scale per 32 values, a 16-byte int64 weight_shape a matrix) and is now 2 bytes a value."""
    cfg = from_hf_config(kimi_thinking(), "kimi-k2-thinking")
    kept_values = 61 * 101_122_048 + 60 * 44_040_192 + 396_361_728
    assert kept_values == 9_207_218_176
    int4_bytes = kept_values // 2 + kept_values // 32 * 2 + 488 * 16
    assert decode_weights(cfg) == 580_970_628_736 - int4_bytes + 2 * kept_values == 594_205_997_056
    # an asked-for format quantizes as it says: the list is the checkpoint's, not the option's
    path = tmp_path / "config.json"
    path.write_text(json.dumps(kimi_thinking()))
    asked = run_json(["simulate", "--config", str(path), "--hardware", "h100-sxm", "--weight-dtype", "int4",
                      "--weight-group", "32", "--quant-layout", "compressed-tensors"], capsys)
    assert asked["memory"]["weights"] == 580_970_628_736 and "weight_kept" not in asked["inputs"]


# A Llama of odd small sizes: d 64, 4 heads of 16 (2 KV heads), d_ff 96, 3 layers, vocabulary 99, untied.
TINY_LLAMA = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 64,
              "intermediate_size": 96, "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 3,
              "vocab_size": 99, "max_position_embeddings": 256, "rms_norm_eps": 1e-6, "tie_word_embeddings": False}
GPTQ = {"quant_method": "gptq", "bits": 4, "group_size": 32}


def gptq_int4(values: int, group: int = 32) -> int:
    """GPTQ's int4 bytes of `values` (qweight: half a byte a value; an fp16 scale and a 4-bit zero a group)."""
    return values // 2 + values // group * 2 + values // group // 2


def test_a_gptq_checkpoint_with_modules_to_not_convert_keeps_its_attention():
    attention = 3 * (64 * 64 + 32 * 64 + 32 * 64 + 64 * 64)  # q, k, v, o of 3 layers
    mlp = 3 * 3 * 64 * 96
    other = 2 * (2 * 99 * 64 + 2 * 3 * 64 + 64)  # embeddings, head, norms in bf16
    plain = from_hf_config({**TINY_LLAMA, "quantization_config": GPTQ}, "tiny")
    assert decode_weights(plain) == gptq_int4(attention) + gptq_int4(mlp) + other == 79_520
    kept = from_hf_config({**TINY_LLAMA, "quantization_config": {
        **GPTQ, "modules_to_not_convert": ["model.layers.*.self_attn", "lm_head"]}}, "tiny")
    assert kept.checkpoint_weights == ("gptq", "int4", 32, None, ("attention",))
    assert decode_weights(kept) == 2 * attention + gptq_int4(mlp) + other == 131_936


def test_an_fp8_checkpoint_with_an_ignore_list():
    """compressed-tensors FP8 in 128 x 128 blocks (llm-compressor's FP8_BLOCK) with attention ignored, and
    transformers' fp8 whose modules_to_not_convert names only the router and the head (MiniMax-M2's: nothing
    quantized here stays unquantized, so nothing moves)."""
    fp8_block = {"quant_method": "compressed-tensors", "format": "float-quantized",
                 "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
                     "type": "float", "num_bits": 8, "strategy": "block", "block_structure": [128, 128]}}},
                 "ignore": ["lm_head", "re:.*self_attn.*"]}
    cfg = from_hf_config({**kimi_thinking(), "quantization_config": fp8_block}, "k")
    assert cfg.checkpoint_weights == ("compressed-tensors", "fp8", 128, None, ("attention",))
    minimax = {"activation_scheme": "dynamic", "fmt": "float8_e4m3fn", "quant_method": "fp8",
               "weight_block_size": [128, 128], "modules_to_not_convert": ["gate", "e_score_correction_bias", "lm_head"]}
    assert from_hf_config({**kimi_thinking(), "quantization_config": minimax}, "k").checkpoint_weights \
        == ("fp8", "fp8", 128)


def test_gpt_oss_keeps_what_mxfp4_never_quantizes():
    assert load_preset("gpt-oss-20b").checkpoint_weights == ("mxfp4", "mxfp4", None)


def test_the_transformers_rule_is_transformers_own():
    """matches() for modules_to_not_convert agrees with transformers 5.24's should_convert_module on
    every module name of Kimi K2's first two layers, for gpt-oss's and MiniMax-M2's lists."""
    quantizers_utils = pytest.importorskip("transformers.quantizers.quantizers_utils")
    names = [name for found in module_names(load_preset("kimi-k2")).values() for name in found
             if name.startswith(("model.layers.0.", "model.layers.1."))]
    for entries in (["model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"],
                    ["gate", "e_score_correction_bias", "lm_head"], ["mlp.experts", "layers.1"], ["down_proj"]):
        for name in names:
            assert matches("fp8", name, entries) == (not quantizers_utils.should_convert_module(name, entries))


@pytest.mark.parametrize("entries, says", [
    (["lm_head", "re:.*(self_attn"], "quantization_config.ignore entry 're:.*(self_attn' is not a valid regular"),
    (["lm_head", 7], "quantization_config.ignore must be a list of module names or patterns, got"),
    ("lm_head", "quantization_config.ignore must be a list of module names or patterns, got 'lm_head'"),
])
def test_a_malformed_ignore_list_is_one_line_and_status_2(tmp_path, capsys, entries, says):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**kimi_thinking(), "quantization_config": {**KIMI_THINKING_QUANTIZATION,
                                                                          "ignore": entries}}))
    code, out, err = run_main(["simulate", "--config", str(path), "--hardware", "h100-sxm"], capsys)
    assert code == 2 and says in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_a_list_that_splits_a_kind_is_not_modelled(tmp_path, capsys):
    """The first layer's modules only: its attention kept, the other 60 layers' quantized: not modelled."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**kimi_thinking(), "quantization_config": {
        **KIMI_THINKING_QUANTIZATION, "ignore": ["lm_head", "re:model\\.layers\\.0\\..*"]}}))
    code, out, err = run_main(["simulate", "--config", str(path), "--hardware", "h100-sxm"], capsys)
    assert code == 2 and "quant_method 'compressed-tensors') is not a format modelled here" in err
    assert decode_weights(from_hf_config(json.loads(path.read_text()), "k"), weight_dtype="none") > 0


@pytest.mark.slow
def test_kimi_k2_thinking_decode_weights_equal_the_class_quantized_as_its_list_says():
    """DeepseekV3ForCausalLM (transformers 5.24) built from the same fields on the meta device; each of its
    Linear weights that compressed-tensors' rule (an exact name, or re.match of an "re:" entry) does not
    ignore stored as symmetric int4 in groups of 32 (half a byte a value, a bf16 scale a group, a 16-byte
    weight_shape), each routed expert of its fused 3-D parameters as one matrix of them, every other
    parameter in bf16: 594,205,997,056 bytes, ours. (The checkpoint stores an expert's gate and up as two
    matrices, 16 more bytes of weight_shape each: 60 x 384 x 16 = 368,640 B the class's fused gate_up and
    ours leave out.)"""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    import re

    data = {k: v for k, v in kimi_thinking().items() if k not in ("quantization_config", "model_type", "auto_map")}
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(transformers.DeepseekV3Config(**data),
                                                              dtype=torch.bfloat16)

    def ignored(name: str) -> bool:
        return any(re.match(entry[3:], name) if entry.startswith("re:") else entry == name
                   for entry in KIMI_THINKING_QUANTIZATION["ignore"])

    def int4(rows: int, cols: int) -> int:
        return rows * cols // 2 + rows * cols // 32 * 2 + 16

    total = 0
    for name, module in model.named_modules():
        for parameter_name, parameter in module.named_parameters(recurse=False):
            if isinstance(module, torch.nn.Linear) and parameter_name == "weight" and not ignored(name):
                total += int4(*parameter.shape)
            elif parameter.dim() == 3 and not ignored(name):
                total += parameter.shape[0] * int4(*parameter.shape[1:])
            else:
                total += 2 * parameter.numel()
    assert total == decode_weights(from_hf_config(kimi_thinking(), "kimi-k2-thinking")) == 594_205_997_056


def test_a_family_whose_names_are_not_known_reads_only_a_list_of_the_head():
    """GPT-2's modules (transformer.h.N.attn.c_attn) are not Llama's: a list naming only lm_head changes
    nothing; one naming anything else is not modelled (its format none: simulate's one line)."""
    gpt2 = {"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4, "vocab_size": 99, "n_positions": 64}
    head_only = from_hf_config({**gpt2, "quantization_config": {**GPTQ, "modules_to_not_convert": ["lm_head"]}}, "g")
    assert head_only.checkpoint_weights == ("gptq", "int4", 32)
    other = from_hf_config({**gpt2, "quantization_config": {**GPTQ, "modules_to_not_convert": ["attn"]}}, "g")
    assert other.checkpoint_weights == ("gptq", None, None)
