"""Layout.megatron_release: which Megatron-Core release runs Layout.optimizer_step "megatron-lm", as data
(costmodel/megatron_releases.json). core_v0.6.0 scales the gradient buffer by 1 / dp unconditionally
(param_and_grad_buffer.py line 127 at cac60ce4), core_v0.7.0 and r0.8.0 skip the scale when the factor is 1.0
(`if self.gradient_scaling_factor != 1.0`: lines 120-121 at a645f896, 122-123 at baf94af3), so only at dp 1
do they differ: read g and write g of each buffer element once a step."""

from __future__ import annotations

import pytest

from costmodel.config import ConfigError
from costmodel.layout import Layout
from costmodel.layout.megatron_step import DEFAULT_RELEASE, buffer_bytes, releases
from reports.published_runs import other_runs_data
from tests.optimizer_step_runs import row_steps, simulate_optimizer_seconds

A800_DP1 = "flagperf-llama3-a800 llama3-8b pp1dp1tp8 8xa800"


def test_each_release_at_dp_1_and_above():
    """fp32 buffer: zero 4 + NaN norm 4, + the scale's read and write 8 where the release runs it."""
    assert buffer_bytes(4, 1, release="core_v0.6.0") == 16
    assert buffer_bytes(4, 1, release="core_v0.7.0") == 8
    assert buffer_bytes(4, 1, release="core_r0.8.0") == 8
    assert buffer_bytes(4, 1) == 8  # the default: r0.8.0, the newest read
    for release in releases()["releases"]:
        assert buffer_bytes(4, 2, release=release) == 16
    assert DEFAULT_RELEASE == "core_r0.8.0"


def test_the_data_cites_each_releases_line():
    facts = releases()["releases"]
    assert facts["core_v0.6.0"]["commit"].startswith("cac60ce4") and "line 127" in facts["core_v0.6.0"]["source"]
    assert facts["core_r0.8.0"]["commit"].startswith("baf94af3") and "lines 122-123" in facts["core_r0.8.0"]["source"]
    assert facts["core_v0.7.0"]["commit"].startswith("a645f896") and "lines 120-121" in facts["core_v0.7.0"]["source"]


def test_flagperf_sources_name_core_v0_6_0():
    """FlagPerf's Llama 3 README names megatron-core tag core_v0.6.0; the r0.8.0 table keeps the default."""
    sources = other_runs_data()["sources"]
    for name in ("flagperf-llama3", "flagperf-llama3-a800"):
        assert sources[name]["megatron_release"] == "core_v0.6.0"
    assert "megatron_release" not in sources["megatron-core-r0.8.0"]


def test_a800_dp_1_row_pays_the_scale():
    """TP 8 x DP 1: the rank holds 972,697,600 parameters (fp32 buffer); core_v0.6.0's scale adds 8 bytes each at
    the a100-80gb file's memory-bound rate (0.8 x 2.039 TB/s = 1.6312 TB/s): 4.770 ms a step."""
    steps = {release: row_steps(A800_DP1, "flagperf-llama3-a800", ("megatron-lm",), megatron_release=release)["megatron-lm"]
             for release in ("core_v0.6.0", "core_r0.8.0")}
    extra = steps["core_v0.6.0"]["optimizer_seconds"] - steps["core_r0.8.0"]["optimizer_seconds"]
    assert extra == pytest.approx(972_697_600 * 8 / 1.6312e12, rel=1e-9)
    assert steps["core_v0.6.0"]["seconds"] - steps["core_r0.8.0"]["seconds"] == pytest.approx(extra, rel=1e-6)


def test_refused_off_megatron_lm_and_unknown():
    with pytest.raises(ConfigError, match="needs --optimizer-step megatron-lm"):
        Layout(dp=8, framework="megatron", zero=1, megatron_release="core_v0.6.0")
    with pytest.raises(ConfigError, match="megatron_release must be"):
        Layout(dp=8, framework="megatron", zero=1, optimizer_step="megatron-lm", megatron_release="core_v0.5.0")
    layout = Layout(dp=8, framework="megatron", zero=1, optimizer_step="megatron-lm", megatron_release="core_v0.6.0")
    assert layout.to_dict(2)["megatron_release"] == "core_v0.6.0"
    assert "megatron_release" not in Layout(dp=8, framework="megatron", zero=1, optimizer_step="megatron-lm").to_dict(2)


def test_simulate_takes_megatron_release(capsys):
    """llama3-8b on one GPU (dp 1), ZeRO-1: core_v0.6.0 adds 8,030,261,248 x 8 bytes at 0.8 x 3.35 TB/s; a bad
    release: exit 2 with one line."""
    import cli

    base = ["simulate", "--model", "llama3-8b", "--hardware", "h100-sxm", "--train", "--seq-len", "2048", "--batch", "1",
            "--attention", "flash", "--framework", "megatron", "--zero", "1", "--dp", "1", "--optimizer-step",
            "megatron-lm", "--json"]
    seconds = simulate_optimizer_seconds(capsys, base, [[], ["--megatron-release", "core_v0.6.0"]])
    assert seconds[1] - seconds[0] == pytest.approx(8_030_261_248 * 8 / 2.68e12, rel=1e-9)
    assert cli.main(base + ["--megatron-release", "core_v0.5.0"]) == 2
    err = capsys.readouterr().err
    assert "core_v0.5.0" in err and err.count("\n") == 1
