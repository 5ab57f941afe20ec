"""The decode crossover batch of a mixture of experts: an expert's weights are read once per step
if any token routes to it (E (1 - (1 - k/E)^b) experts expected, blocks/experts.py experts_touched), so
a step turns compute-bound only once the experts' weights, nearly all of them read, are amortised
over b k / E tokens each."""

import sympy as sp

from costmodel.api import load_model
from costmodel.hardware import load_hardware
from costmodel.roofline import Roofline
from costmodel.roofline_model import first_crossing
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


def test_first_crossing_finds_the_root_of_a_convex_excess():
    """Compute minus memory time of a step that reads 8 (1 - (3/4)^b) experts of 5 bytes each and 3
    more bytes, one FLOP per b: b - 3 - 40 (1 - (3/4)^b) is convex, -3 at 0, and turns positive
    between 42 and 43 (at 42: -1 + 40 (3/4)^42 < 0; at 43: 0.0002 > 0)."""
    def excess(b: float) -> float:
        return b - 3 - 40 * (1 - 0.75 ** b)

    root = first_crossing(excess)
    assert 42 < root < 43 and abs(excess(root)) < 1e-12
    assert first_crossing(lambda b: -1.0 - b) == float("inf")
