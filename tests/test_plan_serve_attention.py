"""`plan --serve` runs the attention kernel the user names (flash unless named, as `serve`), so a
model whose Hugging Face class refuses sdpa (gpt_oss, mpt) finds a layout under flash; and its
closing line says why nothing fits: the model's refusal where no layout was set aside for memory,
the memory sentence where every layout needed more memory than any count up to 1,024x holds."""

from __future__ import annotations

import dataclasses
import json

import pytest

import cli
from costmodel.hardware import load_hardware
from costmodel.layout.plan import plan_serving
from costmodel.presets import load_preset
from costmodel.spec import DEFAULT_SERVE_ATTENTION


def _plan(capsys, *args: str) -> tuple[int, str]:
    code = cli.main(["plan", "--serve", "--gpus", "1", "--hardware", "h100-sxm", *args])
    return code, capsys.readouterr().out


@pytest.mark.parametrize("model, extra", [("gpt-oss-20b", ("--weight-dtype", "mxfp4")), ("mpt-7b", ())])
def test_a_model_that_refuses_sdpa_finds_a_layout_under_flash(capsys, model, extra):
    code, out = _plan(capsys, "--model", model, "--attention", "flash", *extra, "--json")
    data = json.loads(out)
    assert code == 0 and data["feasible"] and data["inputs"]["attention"] == "flash"
    code, out = _plan(capsys, "--model", model, *extra, "--json")  # flash when no --attention is given
    assert code == 0 and json.loads(out)["feasible"] == data["feasible"]


@pytest.mark.parametrize("model, extra", [("gpt-oss-20b", ("--weight-dtype", "mxfp4")), ("mpt-7b", ())])
def test_sdpa_refused_on_every_layout_says_so_not_memory(capsys, model, extra):
    code, out = _plan(capsys, "--model", model, "--attention", "sdpa", *extra)
    assert code == 1 and "No layout fits." in out
    assert "No layout was set aside for memory; the layouts were unsupported: attention 'sdpa'" in out
    assert "No count up to" not in out and "more memory" not in out
    code, out = _plan(capsys, "--model", model, "--attention", "sdpa", *extra, "--json")
    nearest = json.loads(out)["nearest"]
    assert len(nearest["unsupported"]) == 1 and "smallest_memory" not in nearest and "gpus" not in nearest


def test_a_model_that_fits_nowhere_still_gets_the_memory_sentence():
    from reports.plan_text import _nearest

    tiny = dataclasses.replace(load_hardware("h100-sxm"), memory_bytes=2**26, memory_reserve_bytes=0, device_memory_bytes=0)
    result = plan_serving(load_preset("llama2-7b"), tiny, 1, 32, 2048, 256, "bf16")
    nearest = result["nearest"]
    assert not result["feasible"] and "unsupported" not in nearest and "gpus" not in nearest
    assert nearest["smallest_memory"] > nearest["memory_capacity"]
    assert _nearest(nearest, serve=True)[-1] == ("No count up to 1,024 times as many GPUs fits; use a GPU "
                                                 "with more memory or quantized weights.")


def test_the_default_kernel_is_serves_and_keeps_llama2_70b_as_it_was():
    """flash, as `serve`; llama2-70b's layouts under it are those sdpa gave before --attention passed through."""
    assert DEFAULT_SERVE_ATTENTION == "flash"
    cfg, hardware = load_preset("llama2-70b"), load_hardware("h100-sxm")
    default = plan_serving(cfg, hardware, 8, 32, 2048, 256, "bf16")
    assert default == plan_serving(cfg, hardware, 8, 32, 2048, 256, "bf16", attention="sdpa")
    # eager steps, host-bound (wt27_tphost): tp 2 x dp 4, 4 x dp 2 and 8 tie at generate's 6,136 ops x 6.545 us
    # (borrowed); the tie goes to the most replicas (was tp 8 alone, with no host term)
    assert default["feasible"][0]["layout"] == {"tp": 2, "pp": 1, "dp": 4, "batch": 32, "batch_per_replica": 8}
    assert [e["time_per_output_token"] for e in default["feasible"][:3]] == pytest.approx([6136 * 6.545241752576789e-06] * 3,
                                                                                         rel=1e-12)
    eager = plan_serving(cfg, hardware, 8, 32, 2048, 256, "bf16", attention="eager")
    assert eager["feasible"][0]["time_per_output_token"] > default["feasible"][0]["time_per_output_token"]
