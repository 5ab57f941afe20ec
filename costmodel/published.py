"""Published formulas shown beside ours for comparison, never used as our numbers.

Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models", Table 2:
activation bytes per layer with 2-byte activations and 1-byte dropout masks, s tokens, b
sequences, hidden size h, a heads (our n, b, d, h):
  attention  11 sbh + 5 as^2 b   (QKV input 2, Q and K 4, V 2, output-projection input 2, its
                                  dropout mask 1; softmax output 2, its dropout mask 1, dropout
                                  output 2, all times as^2 b)
  MLP        19 sbh              (input 2, GeLU input 8, GeLU output 8, dropout mask 1)
  two norms   4 sbh
  total      sbh (34 + 5 as/h); selective recomputation drops the as^2 b terms: 34 sbh; full
             recomputation keeps the layer input: 2 sbh.
In a dtype of e bytes the 2-byte terms scale and the masks stay 1 byte: sbh (16 e + 2) +
as^2 b (2 e + 1), selective sbh (16 e + 2), full e sbh; at e = 2 these are the paper's numbers.
"""

from __future__ import annotations

import sympy as sp

from . import symbols as S

KORTHIKANTI = "Korthikanti et al. 2022"


def korthikanti_activation_bytes(layers: int, recompute: str = "none",
                                attention: str = "eager") -> tuple[sp.Expr, str]:
    """Table 2's activation bytes for `layers` layers at one length, for a recomputation
    strategy and an attention kernel, in the activation dtype (e bytes; masks 1 byte), and which
    variant it is. A fused kernel (sdpa, flash) keeps no a s^2 b matrix (the softmax, its mask and
    the dropout output are Table 2's only s^2 terms), as selective recomputation keeps none: Table
    2's selective row is the one that applies; so for attention "none" (a stack without attention
    layers, whatever --attention says)."""
    sbh = S.n * S.b * S.d
    attention_matrices = S.h * S.b * S.n**2
    if recompute == "full":
        return layers * S.e * sbh, "full recomputation: e*sbh per layer"
    per_layer = (16 * S.e + 2) * sbh
    if recompute == "selective":
        return layers * per_layer, "selective recomputation: (16e + 2)*sbh per layer, 34*sbh in 2 bytes"
    if attention in ("sdpa", "flash", "none"):
        kept = "no attention layer keeps" if attention == "none" else f"{attention} attention keeps"
        return layers * per_layer, (f"{kept} no as^2*b matrix, as the selective row: "
                                    "(16e + 2)*sbh per layer, 34*sbh in 2 bytes")
    per_layer += (2 * S.e + 1) * attention_matrices
    return layers * per_layer, "(16e + 2)*sbh + (2e + 1)*as^2*b per layer, sbh(34 + 5as/h) in 2 bytes"


# ---------------------------------------------------------------------------------------------
# Published training runs, set beside the layout model's predictions (reports/published_runs.py).
# GPT models: vocabulary 51,200, sequence 2,048, learned positions, LayerNorm, GeLU, d_ff = 4h,
# biases, the output layer tied to the embedding; A100 80GB SXM (Selene: 8 a node, NVLink 3,
# one 200 Gb/s HDR InfiniBand HCA a GPU); mixed precision at 312 TFLOP/s.

#: Narayanan et al. 2021 (arXiv 2104.04473), Table 1 (weak scaling, full recomputation, fp16):
#: (billions, heads, hidden, layers, tp, pp, GPUs, batch, TFLOP/s per GPU, % of peak), and from
#: the authors' script examples/sc21/run_table_1.sh (NVIDIA/Megatron-LM): the micro-batch and
#: the interleaved stages per rank (1: not interleaved).
NARAYANAN_TABLE_1 = (
    (1.7, 24, 2304, 24, 1, 1, 32, 512, 137, 44, 16, 1),
    (3.6, 32, 3072, 30, 2, 1, 64, 512, 138, 44, 16, 1),
    (7.5, 32, 4096, 36, 4, 1, 128, 512, 142, 46, 16, 1),
    (18.4, 48, 6144, 40, 8, 1, 256, 1024, 135, 43, 8, 1),
    (39.1, 64, 8192, 48, 8, 2, 512, 1536, 138, 44, 4, 1),
    (76.1, 80, 10240, 60, 8, 4, 1024, 1792, 140, 45, 2, 3),
    (145.6, 96, 12288, 80, 8, 8, 1536, 2304, 148, 47, 2, 2),
    (310.1, 128, 16384, 96, 8, 16, 1920, 2160, 155, 50, 1, 2),
    (529.6, 128, 20480, 105, 8, 35, 2520, 2520, 163, 52, 1, 3),
    (1008.0, 160, 25600, 128, 8, 64, 3072, 3072, 163, 52, 1, 1),
)

#: The data-parallel implementation each row of Table 1 ran, as the authors' script states it
#: (NVIDIA/Megatron-LM examples/sc21/run_table_1.sh, commit de7dc40, 2021-08-10, "scripts for sc21":
#: `DDP=torch` for 1.7B to 18B, the unpipelined rows; `DDP=local` for 39B to 1T, the pipelined ones;
#: CONFIG.sh passes it as --DDP-impl). A setting of the script, not a per-row constant of ours.
NARAYANAN_DDP = {1.7: "torch", 3.6: "torch", 7.5: "torch", 18.4: "torch",
                 39.1: "local", 76.1: "local", 145.6: "local", 310.1: "local", 529.6: "local", 1008.0: "local"}

#: The fraction of the last micro-batch's compute each implementation reduces the gradients under
#: (layout/time.py Overlap.dp), from the code of those runs (Megatron-LM, commit cbad126 of March 2021):
#: - "local": Megatron's own DDP; train_step calls allreduce_params(reduce_after=False) after
#:   forward_backward_func returns, over the flattened gradients: after the whole backward, 0;
#: - "torch": torch.nn.parallel.DistributedDataParallel; schedules.py
#:   forward_backward_no_pipelining runs every micro-batch but the last under model.no_sync() and
#:   the last outside it "(want to synchronize gradients)", so DDP's bucketed all-reduces (25 MB
#:   buckets) start as the last backward produces gradients: the DDP convention of Overlap, its
#:   backward, 2/3 of its compute. Not modelled: the bucket DDP reduces last (the tied embedding's,
#:   whose gradient is complete only when the backward ends) is exposed: the word embedding's shard
#:   and the positions, 2.3-7.2% of these rows' gradient bytes, 4-11 ms a step (0.1% of it).
#:   Korthikanti et al. have no data parallelism.
NARAYANAN_DP_OVERLAP = {"local": 0.0, "torch": 2 / 3}


#: Korthikanti et al. 2022 (arXiv 2205.05198), Tables 3 and 5 (no data parallelism, tp 8,
#: interleaving with 3 stages a rank for 175B and 530B): (name, heads, hidden, layers, pp, GPUs,
#: global batch, micro-batch, interleaved stages, seconds per iteration with full recomputation,
#: with sequence parallelism and selective recomputation ("present work"), its MFU and HFU in %).
KORTHIKANTI_TABLE_5 = (
    ("22B", 64, 6144, 48, 1, 8, 4, 4, 1, 1.42, 1.10, 41.5, 43.7),
    ("175B", 96, 12288, 96, 8, 64, 64, 1, 3, 18.13, 13.75, 51.4, 52.8),
    ("530B", 128, 20480, 105, 35, 280, 280, 1, 3, 49.05, 37.83, 56.0, 57.0),
    ("1T", 160, 25600, 128, 64, 512, 512, 1, 1, 94.42, 71.49, 56.3, 57.0),
)


def narayanan_parameters(layers: int, hidden: int, vocabulary: int = 51200, sequence: int = 2048) -> float:
    """Narayanan et al. 2021, Eq. (2): P = 12 l h^2 (1 + 13/(12h) + (V + s)/(12 l h)); it leaves
    out the final LayerNorm's 2h."""
    return 12 * layers * hidden**2 * (1 + 13 / (12 * hidden) + (vocabulary + sequence) / (12 * layers * hidden))
