"""compressed-tensors checkpoints (quant_method "compressed-tensors", costmodel/checkpoint.py): W4A16
(symmetric int4, groups of 128, "pack-quantized"), W8A8 (int8 per channel) and FP8-dynamic, as RedHatAI
(Neural Magic) ships Llama 3.1 8B Instruct, read into the formats and bytes vLLM allocates for them
(compressed_tensors_wNA16.py create_weights: weight_packed int32 (R, C / 8), weight_scale in the model's
dtype (R, C / g), weight_shape int64 (2,), weight_zero_point only where asymmetric). And serve's
--block-size against the sizes vLLM takes (spec.VLLM_BLOCK_SIZES)."""

from __future__ import annotations

import json

import pytest

import costmodel
from costmodel.checkpoint import checkpoint_weights
from costmodel.hf import from_hf_config
from costmodel.presets import load_preset
from tests.test_checkpoint_weights import MATRICES, _ceil, _tiny_llama

from cli_run import run_main

# The quantization_config of each checkpoint's config.json, in the structure llm-compressor writes (typed
# from the model pages, not fetched byte for byte): huggingface.co/RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w4a16
# ("Symmetric per-group quantization ... a linear scaling per group of 128 parameters"; "Only the weights of
# the linear operators within transformers blocks are quantized"), ...-quantized.w8a8 ("INT8" weights and
# activations) and ...-FP8-dynamic.
W4A16 = {"quant_method": "compressed-tensors", "format": "pack-quantized", "quantization_status": "compressed",
         "ignore": ["lm_head"], "kv_cache_scheme": None,
         "config_groups": {"group_0": {"targets": ["Linear"], "input_activations": None, "output_activations": None,
                                       "weights": {"num_bits": 4, "type": "int", "symmetric": True, "strategy": "group",
                                                   "group_size": 128, "dynamic": False, "actorder": None,
                                                   "block_structure": None, "observer": "minmax"}}}}
W8A8 = {"quant_method": "compressed-tensors", "format": "int-quantized", "quantization_status": "compressed",
        "ignore": ["lm_head"], "kv_cache_scheme": None,
        "config_groups": {"group_0": {"targets": ["Linear"], "output_activations": None,
                                      "input_activations": {"num_bits": 8, "type": "int", "symmetric": True,
                                                            "strategy": "token", "dynamic": True},
                                      "weights": {"num_bits": 8, "type": "int", "symmetric": True, "strategy": "channel",
                                                  "group_size": None, "dynamic": False}}}}
FP8_DYNAMIC = {"quant_method": "compressed-tensors", "format": "float-quantized", "quantization_status": "compressed",
               "ignore": ["lm_head"], "kv_cache_scheme": None,
               "config_groups": {"group_0": {"targets": ["Linear"], "output_activations": None,
                                             "input_activations": {"num_bits": 8, "type": "float", "symmetric": True,
                                                                   "strategy": "token", "dynamic": True},
                                             "weights": {"num_bits": 8, "type": "float", "symmetric": True,
                                                         "strategy": "channel", "dynamic": False}}}}


def _with(weights: dict, **top) -> dict:
    group = {**W4A16["config_groups"]["group_0"], "weights": {**W4A16["config_groups"]["group_0"]["weights"], **weights}}
    return {**W4A16, "config_groups": {"group_0": group}, **top}


@pytest.mark.parametrize("quantization, expected", [
    (W4A16, ("compressed-tensors", "int4", 128, "compressed-tensors")),
    (W8A8, ("compressed-tensors", "int8", None)),
    (FP8_DYNAMIC, ("compressed-tensors", "fp8", None)),
    (_with({"symmetric": False}), ("compressed-tensors", "int4", 128)),  # a packed zero a group: GPTQ's bytes
    (_with({"num_bits": 8}), ("compressed-tensors", "int8", 128, "compressed-tensors")),  # W8A16
    (_with({"actorder": "group"}), ("compressed-tensors", None, None)),  # a g_idx of C int32: not modelled
    (_with({"strategy": "channel", "group_size": None}), ("compressed-tensors", None, None)),  # int4 per row
    (_with({}, sparsity_config={"format": "sparse-24-bitmask", "sparsity_structure": "2:4"}),
     ("compressed-tensors", None, None)),
    (_with({}, format="marlin-24"), ("compressed-tensors", None, None)),
])
def test_configs_map_to_formats(quantization, expected):
    assert checkpoint_weights(quantization, "config.json") == expected


def _weights(quantization: dict, **options) -> dict:
    cfg = from_hf_config(_tiny_llama(quantization), "tiny-ct")
    return costmodel.estimate(cfg, seq_len=16, **options).to_dict()["memory"]["quantized_weights"]


def test_w4a16_stores_a_scale_a_group_and_no_zero():
    """2 layers of the 7 matrices: half a byte a value; a 2-byte weight_scale per group of 128 columns of a
    row; 16 bytes of weight_shape a matrix; no weight_zero_point (symmetric). GPTQ's layout would count
    3,840 bytes of packed zeros more and 224 bytes of weight_shape less."""
    weights = _weights(W4A16)
    assert weights["data"] == 2 * sum(r * c // 2 for r, c in MATRICES) == 491_520
    assert weights["scales"] == 2 * sum(2 * r * _ceil(c, 128) for r, c in MATRICES) + 2 * 7 * 16 == 15_584
    assert weights["zeros"] == 0
    asymmetric = _weights(_with({"symmetric": False}))
    assert (asymmetric["scales"], asymmetric["zeros"]) == (15_360, 2 * sum(r * _ceil(c, 128) // 2 for r, c in MATRICES))
    assert asymmetric["zeros"] == 3_840
    # --weight-dtype given: the option's format in the default (GPTQ's) layout, as before
    assert _weights(W4A16, weight_dtype="int4")["zeros"] == 3_840


def test_w8a8_and_fp8_dynamic_keep_a_scale_a_row():
    """Both: one byte a value and one 4-byte scale per output row (vLLM's fp32 channel scales)."""
    for quantization in (W8A8, FP8_DYNAMIC):
        weights = _weights(quantization)
        assert weights["data"] == 2 * sum(r * c for r, c in MATRICES) == 983_040
        assert weights["scales"] == 2 * sum(4 * r for r, _ in MATRICES) == 14_336
        assert weights["zeros"] == 0


def test_llama_3_1_8b_w4a16_bytes():
    """Llama 3.1 8B: 32 layers of 4096 x (2 x 4096 + 2 x 1024) + 3 x 4096 x 14336 = 218,103,808 quantized
    values, 6,979,321,856 in all: 3,489,660,928 bytes of weight_packed, 54,525,952 groups of 128 (2 bytes
    each: 109,051,904) and 224 matrices' weight_shape (3,584 bytes); the head and embedding stay bf16."""
    cfg = load_preset("llama3.1-8b")
    weights = costmodel.estimate(cfg, seq_len=16, weight_dtype="int4",
                                 quant_layout="compressed-tensors").to_dict()["memory"]["quantized_weights"]
    assert weights["data"] == 3_489_660_928
    assert weights["scales"] == 109_051_904 + 3_584
    assert weights["zeros"] == 0


def test_simulate_runs_a_w4a16_config_and_refuses_a_sparse_one_in_one_line(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_tiny_llama(W4A16)))
    code, out, err = run_main(["simulate", "--config", str(path), "--prompt", "16", "--gen", "4", "--json"], capsys)
    assert code == 0, err
    run = json.loads(out)
    assert run["inputs"]["quant_layout"] == "compressed-tensors"
    # 491,520 + 15,584 quantized, the embedding and head 2 x 99 x 256 x 2 and 5 norms of 256 x 2 in bf16
    assert run["memory"]["weights"] == 491_520 + 15_584 + 2 * 99 * 256 * 2 + 5 * 256 * 2 == 611_040
    path.write_text(json.dumps(_tiny_llama(_with({}, sparsity_config={"format": "sparse-24-bitmask"}))))
    code, out, err = run_main(["simulate", "--config", str(path), "--prompt", "16", "--gen", "4"], capsys)
    assert code == 2
    assert "quant_method 'compressed-tensors'" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("size", [7, 512])
def test_serve_refuses_a_block_size_vllm_does_not_take(size, capsys):
    code, _, err = run_main(["serve", "--model", "llama3-8b", "--rate", "1", "--block-size", str(size)], capsys)
    assert code == 2
    assert f"--block-size {size}: vLLM takes 1, 8, 16, 32, 64, 128, 256" in err
    assert len(err.strip().splitlines()) == 1
