"""ExLlamaV2's EXL2 weight format (--weight-dtype exl2 --weight-bits B): what its file stores, read
from turboderp/exllamav2 at v0.0.6 (tag 4a5920a0, 2023-10-14: the release oobabooga's comparison ran).

Storage. conversion/quantize.py stores each decoder linear layer's matrix (K input rows by N output
columns, as ExLlamaV2 keeps it) at a mix of 2-8-bit groups that conversion/optimize.py chooses by
measurement (QParams options in conversion/qparams.py), as
  q_weight     uint32: 32 input rows at b bits take b uint32 rows (cuda/q_matrix.cu's shuffle_kernel);
  q_scale      4 bits a group a column (MatrixView_q4_row in q_gemm_kernel.cuh);
  q_scale_max  one fp16 a group; q_groups two uint16 a group (its bits and first row);
  q_perm, q_invperm  one uint16 an input row each (exllamav2/ext.py make_q_matrix).
optimize.py picks, layer by layer, the settings whose summed `QParams.total_bits` over all decoder
layers' weights stays at or under the target `-b` (convert.py, default 4.125); total_bits counts
q_weight, q_scale_max, q_groups and q_scale (its q_invperm line, `total_bits ++ rows * 32`, adds
nothing). So B, the file's bits a weight, holds the values, scales and groups: the "data" part here,
N K B / 8 bytes a matrix; q_perm and q_invperm, 4 bytes an input row, are its "tables" part. Checked
against oobabooga's own Model size column (tests/test_expressible_exl2_rtn.py): within 0.1%.

The head. convert.py quantizes lm_head at -hb (head_bits, default 6; oobabooga's files: 'head_bits=6
(default value)'): qparams_headoptions[6] = QParams(32, [8, 6], [0.15, 0.85], 4), HEAD_QPARAMS here;
its bits a weight are total_bits(shape) / (K N) (head_bits: the converter's own arithmetic, its
rounding included). The embedding stays fp16.

The kernel (cuda/q_gemm.cu gemm_half_q_half_cuda): up to MAX_Q_GEMM_ROWS = 50 rows (config.h)
gemm_half_q_half_kernel runs in launches of up to BLOCK_M_SIZE_MAX = 8 rows, on a grid of (N / 512,
rows / 8, K / 128) blocks of 128 threads, each reading its 128 x 512 slice of q_weight (and its groups'
scales, and 128 entries of q_perm to gather the input) once for its rows, the partial sums added into
the output by atomicAdd: the weight read once every 8 rows. Above 50 rows `b->reconstruct(temp_dq)`
writes the fp16 matrix and cublasHgemm multiplies it (QUANT_LAYOUT_FACTS["exl2"].dequant_rows = 51).
Its speed: kernel_facts.json "weight_only_gemv" and "weight_only_by_rows", kernel "exllamav2".

Launches a layer at one token (exllamav2/attn.py and mlp.py, cuda/q_attn.cu and q_mlp.cu): an RMS norm,
the q, k and v products, two RoPE kernels, flash_attn_func, the o product (added into the residual
in place), an RMS norm, gate and up, the SiLU-and-multiply kernel, down (added in place): 13. The
rows price them as the tensorrt-llm code's leaves (published_runs.json "oobabooga-quant-2023").
"""

from __future__ import annotations

from typing import Any

#: convert.py's -b default (bits a weight); its stated range (a warning outside: 'target bitrate
#: {bits} will likely not be attainable').
DEFAULT_BITS = 4.125
BITS_RANGE = (2.0, 8.0)
#: qparams_headoptions[6] (convert.py's -hb default 6): group size, bits, their shares, scale bits.
HEAD_QPARAMS = {"group_size": 32, "bits": (8, 6), "bits_prop": (0.15, 0.85), "scale_bits": 4}
#: Bytes an input row of q_perm and q_invperm (uint16 each).
PERM_BYTES = 4


def total_bits(rows: int, columns: int, qparams: dict[str, Any] = HEAD_QPARAMS) -> int:
    """QParams.total_bits (conversion/qparams.py at v0.0.6) of a (rows = K input, columns = N output)
    matrix: its q_weight at each bit width's share of the 128-row groups, q_scale_max, q_groups and
    q_scale; Python's round() as the converter's."""
    group = qparams["group_size"]
    groups = (rows + group - 1) // group
    g128 = (rows + 128 - 1) // 128
    bits_groups = [max(round(g128 * p), 1) * 128 // group for p in qparams["bits_prop"]]
    bits_groups[-1] -= sum(bits_groups) - groups
    total, left = 0, rows
    for count, bits in zip(bits_groups, qparams["bits"]):
        taken = min(group * count, left)
        left -= taken
        total += taken * columns * bits  # q_weight
    return total + groups * 16 + groups * (16 + 16) + groups * columns * qparams["scale_bits"]


def head_bits(out_features: int, in_features: int) -> Any:
    """Bits a weight of the head's matrix (out_features = vocabulary, in_features = width) at
    HEAD_QPARAMS, exact (a sympy Rational)."""
    import sympy as sp

    return sp.Rational(total_bits(in_features, out_features), in_features * out_features)


def check_bits(bits: Any) -> Any:
    """--weight-bits as an exact number (sympy Rational of its decimal), or an error sentence."""
    import sympy as sp

    from .errors import ConfigError

    if isinstance(bits, bool) or not isinstance(bits, (int, float)) or not BITS_RANGE[0] <= bits <= BITS_RANGE[1]:
        raise ConfigError(f"workload: weight_bits must be a number of bits a weight from {BITS_RANGE[0]:g} to "
                          f"{BITS_RANGE[1]:g} (EXL2's converter's -b range), got {bits!r}.")
    return sp.Rational(repr(float(bits)))
