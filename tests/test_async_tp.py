"""torchtitan's Async TP (costmodel/layout/async_tp.py; `simulate --async-tp`, a row's "async_tp"): the share
of the tensor-parallel bytes torch's micro-pipeline pass fuses into the compiled blocks' matmuls, hidden as
Overlap.tp; the embedding's, the head's and the loss's collectives, outside the blocks, exposed."""

from __future__ import annotations

from dataclasses import replace

import pytest

import cli
from costmodel.config import ConfigError
from costmodel.layout import Layout, async_tp
from reports.published_runs import other_runs_data, train_setup

ROW = "torchtitan-405b-2024 llama3.1-405b fsdp16 tp8 float8 asynctp 128xh100"


def _estimate():
    data = other_runs_data()
    run = next(r for r in data["runs"] if r["id"] == ROW)
    return train_setup(run, data["sources"]["torchtitan-405b-2024"])


def test_the_fused_share_of_the_405b_at_tp_8():
    """Llama 3.1 405B, one stage of 126 layers, batch 2 x 8,192 tokens x 16,384 x 2 B = 536,870,912 bytes a
    collective. A micro-batch reduce-scatters 506 times (252 row outputs, the embedding's, 253 gradients of
    the gathers: the layers' 252 and the head's) and all-gathers 506 times, full recomputation 252 more of
    each, the loss 196,608 bytes: 1,516 x 536,870,912 + 196,608. Not fused: the 252 sublayers' backward
    reduce-scatters of their input gradients (sums of dgrads, no single producer matmul), and outside the
    compiled blocks the embedding's and the head's collectives, two each, and the loss's; the rest, 1,260."""
    estimate, _, options = _estimate()
    x = 536_870_912
    assert estimate.numbers["boundary"] == 2 * 8192 * 16384 * 2 == x
    assert estimate.layer_count(estimate.stages[0], "sublayers") == 252
    share = 1260 * x / (1516 * x + 196_608)
    assert async_tp.fused_share(estimate) == pytest.approx(share, rel=1e-12)
    assert options["overlap"].tp == pytest.approx(share, rel=1e-12)


def test_async_tp_is_torchtitans_compiled_sequence_parallel_tp():
    estimate, _, _ = _estimate()
    async_tp.check(estimate.layout, compiled=True)
    megatron = Layout(tp=8, sp=True, framework="megatron", zero=1)
    for layout, compiled in ((estimate.layout, False), (megatron, True), (replace(estimate.layout, sp=False), True)):
        with pytest.raises(ConfigError, match="enable_async_tensor_parallel"):
            async_tp.check(layout, compiled)


def test_the_cli_flag(capsys):
    base = ["simulate", "--train", "-m", "llama3-8b", "--tp", "8", "--sp", "--dp", "2", "--framework", "fsdp2",
            "--zero", "3", "--seq-len", "8192", "--batch", "1", "--recompute", "full", "--json"]
    assert cli.main([*base, "--async-tp"]) == 2
    assert "Async TP requires --training.compile" in capsys.readouterr().err
    assert cli.main([*base, "--async-tp", "--compile", "--tp-overlap", "0.5"]) == 2
    assert "give one of them" in capsys.readouterr().err
    import json

    assert cli.main([*base, "--compile"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert cli.main([*base, "--compile", "--async-tp"]) == 0
    fused = json.loads(capsys.readouterr().out)
    assert fused["step"]["seconds"] < plain["step"]["seconds"]
    assert fused["step"]["hidden_communication_seconds"] > plain["step"]["hidden_communication_seconds"]
