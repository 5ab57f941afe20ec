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


def test_facts_are_one_object_per_table_and_follow_a_rewritten_table(tmp_path, monkeypatch):
    import json
    import os

    from costmodel import facts

    first = facts.facts_for("hf", "llama")
    assert facts.facts_for("hf", "llama") is first  # built once: plan asks for it per layout
    assert first.kv_cache_held is True
    rows = [row for row in facts.table() if row["fact"] != "kv_cache_held"]
    rows.append({"fact": "kv_cache_held", "impl": "hf", "families": ["llama"], "value": False, "source": "a test"})
    table = tmp_path / "facts.json"
    table.write_text(json.dumps(rows))
    monkeypatch.setenv("COSTMODEL_FACTS", str(table))
    assert facts.facts_for("hf", "llama").kv_cache_held is False  # the table in force, not the memo
    rows[-1]["value"] = True
    table.write_text(json.dumps(rows))
    os.utime(table, ns=(1, 1))  # rewritten: a new modification time, so read again
    assert facts.facts_for("hf", "llama").kv_cache_held is True


def test_busbw_by_bisection_is_the_segment_the_scan_took():
    from costmodel.collectives import interpolated_busbw

    curve = [(1e3, 1e9), (1e6, 50e9), (1e8, 200e9), (1e9, 300e9)]
    assert interpolated_busbw(curve, 500.0) == 0.5e9  # below the smallest size: latency-bound, scaled
    assert interpolated_busbw(curve, 1e6) == 50e9  # a measured size: its own value (the segment ending there)
    assert interpolated_busbw(curve, 1e7) == 50e9 + 0.5 * 150e9  # halfway in log between 1e6 and 1e8
    assert interpolated_busbw(curve, 1e12) == 300e9  # beyond the largest: the largest's


def test_a_plan_s_trees_and_dimensions_are_built_once_per_model():
    from costmodel.layout.parts import model_dimensions, part_expressions
    from costmodel.tree import shared_model

    cfg = load_preset("gpt2")
    assert model_dimensions(cfg) is model_dimensions(cfg) and model_dimensions(cfg) == cfg.dimensions()
    assert model_dimensions(load_preset("llama2-13b"))["d"] == 5120 and model_dimensions(cfg)["d"] == 768
    shared_model.cache_clear()
    workload = Workload(seq_len=1024, batch=1, attention="sdpa")
    # two part structures (sp off and on: another cache key) read one cost tree
    exprs = [part_expressions(cfg, workload, Layout(dp=4 // tp, tp=tp, sp=sp, framework="megatron"), "train")[0]
             for tp, sp in ((1, False), (2, True))]
    assert shared_model.cache_info().misses == 1 and shared_model.cache_info().hits == 1
    assert exprs[0]["layer.decoder.params"] == exprs[1]["layer.decoder.params"]
