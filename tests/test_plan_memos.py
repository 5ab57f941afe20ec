"""The memos that make `plan` fast return what the code they stand for computes: the compiled
module's code object kept beside it (compiled._code), a pipeline's stages placed once per
pipeline (layout/rank.py _stages), on_stage's sums kept with the part numbers (PartNumbers.sums)."""

from __future__ import annotations

import importlib.util

from costmodel import compiled
from costmodel.config import Workload
from costmodel.layout.rank import ParallelEstimate
from costmodel.layout.spec import Layout
from costmodel.presets import load_preset


def _module(path, value: int) -> None:
    path.write_text(f"CONSTANTS = {{}}\n\n\ndef evaluate(values):\n    return {{'x': {value}}}\n")


def test_the_code_object_is_kept_and_follows_its_source(tmp_path):
    path = tmp_path / "layout_test.py"
    _module(path, 1)
    assert compiled._load("layout_test", path).evaluate({}) == {"x": 1}
    stored = path.with_suffix(".code")
    assert stored.read_bytes().startswith(importlib.util.MAGIC_NUMBER)
    _module(path, 2)  # a module rebuilt at the same path: its hash differs, so it is compiled again
    assert compiled._load("layout_test", path).evaluate({}) == {"x": 2}
    # The kept code is what runs while the source's hash matches (here: another source's code).
    header = importlib.util.MAGIC_NUMBER + compiled.hashlib.sha256(path.read_bytes()).digest()
    other = tmp_path / "other.py"
    _module(other, 3)
    stored.write_bytes(header + compiled.marshal.dumps(compile(other.read_bytes(), str(other), "exec")))
    assert compiled._load("layout_test", path).evaluate({}) == {"x": 3}
    stored.write_bytes(header + b"not marshal")  # unreadable: compiled from the source again
    assert compiled._load("layout_test", path).evaluate({}) == {"x": 2}


def test_stages_and_sums_match_the_layout_s_own_rules():
    cfg = load_preset("llama2-7b")  # 32 layers
    workload = Workload(seq_len=2048, batch=1, attention="sdpa")
    layout = Layout(dp=2, tp=2, pp=4, microbatches=8, schedule="interleaved", virtual_stages=2,
                    framework="megatron")
    estimate = ParallelEstimate(cfg, workload, layout)
    stages = estimate.stages
    for rank, stage in enumerate(stages):
        assert stage.layers == (4, 4)  # 32 layers over 8 virtual stages
        assert stage.in_flight == layout.in_flight(rank)
        assert (stage.first, stage.last) == (rank == 0, rank == 3)
    # A second layout with the same pipeline shares the placed stages.
    other = ParallelEstimate(cfg, workload, Layout(dp=2, tp=2, pp=4, microbatches=8, schedule="interleaved",
                                                   virtual_stages=2, framework="megatron", zero=1))
    assert other.stages == stages and other.numbers is estimate.numbers
    first = stages[0]
    assert estimate.part("layer.decoder", "params") > 0 and estimate.part("embedding", "params") > 0
    expected = 8 * estimate.part("layer.decoder", "params") + estimate.part("shared", "params") \
        + estimate.part("embedding", "params")
    assert estimate.on_stage(first, "params") == expected
    estimate.numbers.sums.clear()
    assert other.on_stage(first, "params") == expected  # computed again, the same
    assert other.on_stage(first, "saved", per_stage=True) == 8 * estimate.part("layer.decoder", "saved") \
        + 2 * estimate.part("shared", "saved") + estimate.part("embedding", "saved")
