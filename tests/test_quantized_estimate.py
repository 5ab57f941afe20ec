"""Quantized inference memory: the estimate's weights by part against what the libraries store.

The cost tree's --weight-dtype formats (costmodel/quantization.py) are checked where a library
that stores that layout runs on this CPU (validate/FINDINGS.md section 12): bitsandbytes' LLM.int8
(int8, one fp32 absmax per row) and NF4 with and without double quantisation, on a tiny Llama
checkpoint saved and reloaded through transformers' integration. Data, scales, zeros and tables
must be equal; the unquantized part (embeddings, head, norms in bf16) plus the model's buffers
(RoPE's fp32 inverse frequencies) must equal what the library leaves unquantized. int4 follows
GPTQ/AWQ's published layout and fp8 torchao's (measured only where torchao is installed), and the
fp8 KV cache transformers' QuantizedCache (tests/test_hf_families_measure.py).
"""

from __future__ import annotations

import pytest

from costmodel.config import ConfigError, Workload
from costmodel.estimation import Estimate
from costmodel.hf import from_hf_config
from costmodel.tree import CostModel, profile_for

QUANT_MODEL = dict(model_type="llama", vocab_size=320, hidden_size=256, intermediate_size=384,
                   num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=64,
                   tie_word_embeddings=False, max_position_embeddings=64)
SCHEMES = {  # validate/quantized.py's scheme -> the workload that models it
    "bnb-int8": dict(weight_dtype="int8"),
    "bnb-nf4": dict(weight_dtype="nf4", double_quant=False),
    "bnb-nf4-double": dict(weight_dtype="nf4"),
    "torchao-fp8": dict(weight_dtype="fp8"),
}


def quantized(workload: dict) -> dict:
    cfg = from_hf_config(QUANT_MODEL, name="tiny-llama")
    return Estimate(cfg, Workload(seq_len=8, dtype="bf16", **workload)).memory_numbers()[
        "quantized_weights"]


def test_layouts_by_hand():
    # 14 matrices, N = 983,040 values, 3,584 output rows (FINDINGS 12's table)
    # unquantized: FINDINGS' 330,496 bytes less RoPE's two fp32 buffers of d_h / 2 (buffers, not
    # weights: the estimate counts them with the buffers)
    assert quantized(SCHEMES["bnb-int8"]) == {
        "format": "int8, per output row", "data": 983_040, "scales": 14_336, "zeros": 0, "tables": 0,
        "unquantized": 330_496 - 2 * 4 * 32, "total": 983_040 + 14_336 + 330_240}
    nf4 = quantized(SCHEMES["bnb-nf4-double"])
    assert (nf4["data"], nf4["scales"], nf4["tables"]) == (491_520, 15_600, 15_288)
    int4 = quantized(dict(weight_dtype="int4"))  # GPTQ: fp16 scale + 4-bit zero per 128 columns
    groups = 983_040 // 128
    assert (int4["data"], int4["scales"], int4["zeros"]) == (491_520, 2 * groups, groups // 2)


@pytest.mark.parametrize("bad", [dict(weight_dtype="int3"), dict(weight_dtype="mxfp4", weight_group=64),
                                 dict(weight_group=64), dict(kv_dtype="int4"),
                                 dict(weight_dtype="int8", double_quant=False),
                                 dict(expert_load=(1, -1)), dict(expert_load=())])
def test_bad_quantization_options_are_one_sentence(bad):
    with pytest.raises(ConfigError):
        Workload(**bad)


@pytest.mark.slow
@pytest.mark.parametrize("scheme", sorted(SCHEMES))
def test_weights_by_part_equal_the_library_storage(scheme, tmp_path):
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    for module in {"bnb": ("bitsandbytes", "accelerate"), "torchao": ("torchao",)}[scheme.split("-")[0]]:
        pytest.importorskip(module)
    from validate.hf_families import build_hf_from_dict
    from validate.quantized import load_quantized, storage_by_part

    torch.manual_seed(0)
    build_hf_from_dict(QUANT_MODEL, dtype=torch.bfloat16).save_pretrained(tmp_path)
    measured = storage_by_part(load_quantized(str(tmp_path), scheme))
    formula = quantized(SCHEMES[scheme])
    cfg = from_hf_config(QUANT_MODEL, name="tiny-llama")
    workload = Workload(seq_len=8, dtype="bf16", **SCHEMES[scheme])
    buffers = Estimate(cfg, workload).number(
        CostModel(cfg, profile_for(cfg, workload), phase="prefill").total("buffer_bytes"))
    for part in ("data", "scales", "zeros", "tables"):
        assert measured.get(part, 0) == formula[part], part
    assert measured["unquantized"] == formula["unquantized"] + buffers
