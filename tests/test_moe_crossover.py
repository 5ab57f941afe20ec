"""The decode crossover batch of a mixture of experts: an expert's weights are read once per step
if any token routes to it (min(E, b k) experts), so a step turns compute-bound only once the
experts' weights, all of them read, are amortised over b k / E tokens each."""

import sympy as sp

from costmodel.api import load_model
from costmodel.hardware import load_hardware
from costmodel.roofline import Roofline
from costmodel.roofline_model import linear_pieces
from costmodel import symbols as S


def _matmul_seconds(roof: Roofline, batch: float, context: int) -> tuple[float, float]:
    model = roof.decoder_tree()
    subs = {**roof._values(1, 1, 1, context), S.b: sp.Float(batch)}
    return (float(model.total("flops_matmul").xreplace(subs)) / roof.flops_per_s,
            float(model.total("bytes_matmul").xreplace(subs)) / roof.bytes_per_s)


def test_mixtral_crossover_agrees_with_its_own_step():
    # It said batch 30 (the experts' weights, min(8, 2b) of them, fell out of the linear fit),
    # while a decode step at batch 512 is still memory-bound.
    roof = Roofline(load_model("mixtral-8x7b"), load_hardware("h100-sxm"), attention="flash",
                    kv_cache="static")
    crossover = roof.decode_crossover_batch(1)
    compute, memory = _matmul_seconds(roof, 512, 1)
    assert compute < memory and crossover > 512
    compute, memory = _matmul_seconds(roof, crossover, 1)
    assert abs(compute - memory) < 1e-12 * memory  # the crossover is where the two times meet
    compute, memory = _matmul_seconds(roof, crossover * 1.01, 1)
    assert compute > memory


def test_linear_pieces_split_at_every_expert_read():
    b = S.b
    pieces = linear_pieces(3 + 5 * sp.Min(8, 2 * b) + b, b)
    assert [(lo, hi) for lo, hi, _ in pieces] == [(0.0, 4.0), (4.0, float("inf"))]
    assert [sp.expand(p) for _, _, p in pieces] == [3 + 11 * b, 43 + b]
