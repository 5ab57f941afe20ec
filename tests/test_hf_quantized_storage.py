"""Quantized weights stored the way each library's format lays them out, byte by byte.

A tiny Llama checkpoint is loaded with bitsandbytes (int8, nf4, nf4 with double quantisation),
optimum-quanto (int8, float8, int4) and torchao (int8 weight-only, float8); the storage of each part
(data, scales, zero points, tables, the unquantized rest) must equal the layout written here, and the
model must still run on this CPU. Optional libraries: pip install bitsandbytes accelerate
optimum-quanto torchao (a scheme whose library is missing is skipped).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from validate.hf_families import build_hf_from_dict  # noqa: E402

QUANT_MODEL = dict(model_type="llama", vocab_size=320, hidden_size=256, intermediate_size=384,
                   num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=64,
                   tie_word_embeddings=False, max_position_embeddings=64)
LIBRARIES = {"bnb": ("bitsandbytes", "accelerate"), "quanto": ("optimum.quanto",),
             "torchao": ("torchao",)}


def quantized_linears(c):
    """(out, in) of every nn.Linear the integrations quantize: q, k, v, o, gate, up, down."""
    d, h, hkv, dh, f = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"], \
        c["head_dim"], c["intermediate_size"]
    layer = [(h * dh, d), (hkv * dh, d), (hkv * dh, d), (d, h * dh), (f, d), (f, d), (d, f)]
    return layer * c["num_hidden_layers"]


def quantized_layout(scheme, c):
    """Bytes by part, from each format's layout (out x in = N elements per weight, bf16 model).

    bitsandbytes int8 (LLM.int8): int8 N + fp32 row absmax (SCB) per output row.
    bitsandbytes nf4: N/2 packed + fp32 absmax per block of 64 + the 16-entry fp32 code (64 B).
    nf4 + double quantisation: absmax as uint8 (N/64) + fp32 absmax per 256 blocks + fp32 offset
    + the 16-entry code and the 256-entry fp32 code of the second quantisation (1,092 B of tables).
    quanto int8 / float8: N + one bf16 scale per output row; int4: N/2 + bf16 scale and shift per
    group of 128 (TinyGemm layout, both in _scale_shift); every QLinear adds input_scale and
    output_scale buffers (fp32 scalars, 8 B, counted with the unquantized tensors).
    torchao int8 weight-only: N + fp32 scale + int8 zero point per row; float8: N + fp32 scale/row.
    Unquantized: embeddings, lm_head, RMSNorm weights (bf16) and RoPE's two fp32 inv_freq buffers.
    """
    lin = quantized_linears(c)
    N = sum(o * i for o, i in lin)
    rows = sum(o for o, _ in lin)
    d, V, L = c["hidden_size"], c["vocab_size"], c["num_hidden_layers"]
    unquantized = 2 * (2 * V * d + (2 * L + 1) * d) + 2 * 4 * (c["head_dim"] // 2)
    parts = {
        "bnb-int8": {"data": N, "scales": 4 * rows},
        "bnb-nf4": {"data": N // 2, "scales": 4 * N // 64, "tables": 64 * len(lin)},
        "bnb-nf4-double": {"data": N // 2,
                           "scales": N // 64 + sum(4 * -(-o * i // (64 * 256)) for o, i in lin),
                           "tables": (64 + 1024 + 4) * len(lin)},
        "quanto-int8": {"data": N, "scales": 2 * rows},
        "quanto-fp8": {"data": N, "scales": 2 * rows},
        "quanto-int4": {"data": N // 2, "scales": 2 * 2 * N // 128},
        "torchao-int8": {"data": N, "scales": 4 * rows, "zeros": rows},
        "torchao-fp8": {"data": N, "scales": 4 * rows},
    }[scheme]
    quanto_buffers = 8 * len(lin) if scheme.startswith("quanto") else 0
    return {"unquantized": unquantized + quanto_buffers, **parts}


@pytest.fixture(scope="module")
def quant_checkpoint(tmp_path_factory):
    path = tmp_path_factory.mktemp("tiny-llama")
    torch.manual_seed(0)
    build_hf_from_dict(QUANT_MODEL, dtype=torch.bfloat16).save_pretrained(path)
    return str(path)


@pytest.mark.slow
@pytest.mark.parametrize("scheme", ["bnb-int8", "bnb-nf4", "bnb-nf4-double", "quanto-int8",
                                    "quanto-fp8", "quanto-int4", "torchao-int8", "torchao-fp8"])
def test_quantized_weight_storage(scheme, quant_checkpoint):
    for module in LIBRARIES[scheme.split("-")[0]]:
        pytest.importorskip(module)
    from validate.quantized import load_quantized, storage_by_part

    model = load_quantized(quant_checkpoint, scheme)
    assert storage_by_part(model) == quantized_layout(scheme, QUANT_MODEL)
    with torch.no_grad():  # and it runs on this CPU
        assert model(input_ids=torch.arange(8).reshape(1, 8)).logits.shape == (1, 8, 320)


def rank_config(c, tp):
    """The shapes one tensor-parallel rank's layers hold (gpt-fast's tp.py, Megatron's split): q, k,
    v, gate and up column-parallel (heads and intermediate / tp), o and down row-parallel (their
    inputs / tp). A Llama built with these sizes has exactly the rank's shards as its linears."""
    return {**c, "num_attention_heads": c["num_attention_heads"] // tp,
            "num_key_value_heads": c["num_key_value_heads"] // tp,
            "intermediate_size": c["intermediate_size"] // tp}


@pytest.mark.slow
@pytest.mark.parametrize("scheme, weight_dtype", [("bnb-int8", "int8"), ("bnb-nf4-double", "nf4")])
def test_a_tensor_parallel_ranks_quantized_shards_as_bitsandbytes_stores_them(scheme, weight_dtype, tmp_path):
    """A tp 2 rank's quantized matrices (ParallelEstimate, costmodel/layout/rank.py) against the
    storage bitsandbytes gives the rank's shards, quantized on their own as gpt-fast quantizes
    then shards (an int8 row keeps its own absmax; nf4's blocks of 64 run over the shard). Measured
    without torch.distributed: the bytes of a shard depend on its shape only, so a model built at
    the rank's sizes holds them (the collectives are not what is measured here)."""
    for module in LIBRARIES["bnb"]:
        pytest.importorskip(module)
    from costmodel.config import Workload
    from costmodel.hf import from_hf_config
    from costmodel.layout.rank import ParallelEstimate
    from costmodel.layout.serving_memory import serving_memory
    from costmodel.layout.spec import Layout
    from validate.quantized import load_quantized, storage_by_part

    tp, c = 2, QUANT_MODEL
    torch.manual_seed(0)
    build_hf_from_dict(rank_config(c, tp), dtype=torch.bfloat16).save_pretrained(tmp_path)
    measured = storage_by_part(load_quantized(str(tmp_path), scheme))
    quantized = sum(v for k, v in measured.items() if k != "unquantized")
    cfg = from_hf_config(c, "tiny-llama")
    workload = Workload(seq_len=8, batch=1, precision="pure", weight_dtype=weight_dtype)
    estimate = ParallelEstimate(cfg, workload, Layout(tp=tp, framework="deepspeed"), phase="decode")
    d, V, L = c["hidden_size"], c["vocab_size"], c["num_hidden_layers"]
    replicated = 2 * ((2 * L + 1) * d + 2 * (V // tp) * d)  # bf16 norms whole, embedding and head shards
    assert serving_memory(estimate)["weights"] - replicated == quantized
