"""lit-gpt's decode codes (wt40_litgpt, session 40): the ops and GPU reads of one decoding step of
lit-gpt's generate/base.py at d16f924d and 982abcbc (validate/litgpt_ops.py, kernel_facts.json
eager_step_ops and generate_windows), the window a layer d16f924d's roll check makes, and the
litgpt-quantize rows typed to them."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from costmodel.api import load_model
from costmodel.eager_ops import decode_step_ops, step_syncs

MIRROR = Path("/work/.mirror/Lightning-AI+litgpt/repo")
RUNS = Path(__file__).resolve().parent.parent / "costmodel" / "published_runs.json"


@pytest.mark.parametrize("code, dtype, layers, own, per_layer_syncs", [
    ("lit-gpt-d16f924d", "bf16", 32 * 80, 40, 1), ("lit-gpt-d16f924d", "fp32", 32 * 73, 39, 1),
    ("lit-gpt-982abcbc", "bf16", 32 * 77, 39, 0), ("lit-gpt-982abcbc", "fp32", 32 * 70, 38, 0)])
def test_falcon_7b_step(code, dtype, layers, own, per_layer_syncs):
    """Falcon-7B's 32 layers at the counted ops a layer; multinomial's two reads and the four ops between them
    serial; at d16f924d one read a layer more (32 a step, step_syncs)."""
    cfg = load_model("falcon-7b")
    counted = decode_step_ops(cfg, code, dtype, "sdpa", "static", None, "sampled")
    assert (counted.layers, counted.own, counted.syncs_per_layer) == (layers, own, per_layer_syncs)
    assert (counted.windows.serial, counted.windows.syncs, counted.windows.per_step) == (4, 2, None)
    assert step_syncs(cfg, code, dtype, "sdpa", "static") == 32 * per_layer_syncs
    greedy = decode_step_ops(cfg, code, dtype, "sdpa", "static", None, "greedy")
    assert greedy.windows is None and greedy.total == layers + own  # the entry counts the sampled step only


def test_grouped_heads_not_counted():
    """The count is of one KV head (Falcon-7B's multi-query attention): Llama's grouped heads run other ops."""
    assert decode_step_ops(load_model("llama2-7b"), "lit-gpt-982abcbc", "bf16", "sdpa", "static") is None


def _checkout(commit: str, into: Path) -> Path:
    archive = subprocess.run(["git", "-C", str(MIRROR), "archive", commit, "lit_gpt", "generate"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


@pytest.mark.slow
@pytest.mark.skipif(not MIRROR.exists() or shutil.which("git") is None, reason="no lit-gpt mirror here")
@pytest.mark.parametrize("commit", ["d16f924d", "982abcbc"])
def test_recount(commit, tmp_path):
    """The commit's own model.py and generate() counted again, bf16, match kernel_facts.json."""
    from validate.litgpt_ops import counts

    got = counts(_checkout(commit, tmp_path), commit, "bf16")
    cfg = load_model("falcon-7b")
    counted = decode_step_ops(cfg, f"lit-gpt-{commit}", "bf16", "sdpa", "static", None, "sampled")
    assert (got["per_layer"] * 32, got["per_step"], got["syncs_per_layer"]) == (
        counted.layers, counted.own, counted.syncs_per_layer)
    assert (got["serial_per_step"], got["syncs_per_step"]) == (counted.windows.serial, counted.windows.syncs)


#: tokens/s under the kernel model (reports/published_decode.decode_run), before (main at 35fb4493: the default
#: transformers code, Falcon not counted, per-block launches) -> after (the rows' lit-gpt codes, sampled).
ROWS = {"litgpt-quantize 982abcbc falcon-7b bf16 a100-40gb": (71.21, 56.27),
        "litgpt-quantize 982abcbc falcon-7b fp32 a100-40gb": (39.42, 43.04),
        "litgpt-quantize d16f924d falcon-7b bf16 a100-40gb": (71.21, 53.52)}


@pytest.mark.parametrize("row_id", sorted(ROWS))
def test_rows(row_id):
    """Each row under its commit's code: 982abcbc bf16 1.494 -> 1.181x, fp32 1.067 -> 1.164x (GPU-bound: the host's
    ops stand for the per-block launches), d16f924d 2.715 -> 2.040x (a window a layer)."""
    from reports.published_decode import decode_run

    data = json.loads(RUNS.read_text())
    run = next(run for run in data["runs"] if run["id"] == row_id)
    source = data["sources"]["litgpt-quantize"]
    assert run["implementation"] == f"lit-gpt-{row_id.split()[1]}" and source["sampling"] == "sampled"
    assert decode_run(run, source, "kernels") == pytest.approx(ROWS[row_id][1], abs=0.01)
    before = {**run, "implementation": "transformers"}
    assert decode_run(before, {**source, "sampling": "greedy"}, "kernels") == pytest.approx(ROWS[row_id][0], abs=0.01)



def test_a_window_a_layer(monkeypatch):
    """kernel_time.layer_windows_seconds, on stated kernels (kernel_time.leaves_time stubbed) at 10 us an op:
    2 layers of 150 us of kernels (10 us of them launches) against 20 ops (200 us) each, host-bound windows of
    200 us; the rest 500 us (10 us launches) and 4 serial ops (40 us) against its own 30 ops (300 us), GPU-bound,
    530 us: 930 us. One window for the whole step (the rule without reads) would give max(300 + 500 + 40 - 30,
    70 ops) = 810 us: the reads cost the 120 us by which the rest's kernels no longer hide under the layers' host."""
    from types import SimpleNamespace

    from costmodel import kernel_time
    from costmodel.kernel_time import layer_windows_seconds

    def stub(leaves, subs, timer):
        return kernel_time.LeavesTime(sum(leaf.s for leaf in leaves), sum(leaf.launch for leaf in leaves), [], 0.0)

    monkeypatch.setattr(kernel_time, "leaves_time", stub)
    timer = SimpleNamespace(host_seconds=lambda ops: None if ops is None else ops * 10e-6)
    leaves = [SimpleNamespace(path="decoder.layer.ffn.mlp", s=300e-6, launch=20e-6),
              SimpleNamespace(path="head.lm_head", s=500e-6, launch=10e-6)]
    assert layer_windows_seconds(leaves, {}, timer, 2, 20, 70, 4, 0.0) == pytest.approx(930e-6, rel=1e-12)


@pytest.mark.parametrize("code, layout, refused", [
    ("lit-gpt-d16f924d", ("--pp", "2"), True), ("lit-gpt-d16f924d", ("--dp", "1"), True),
    ("lit-gpt-d16f924d", ("--pp", "2", "--cuda-graphs"), False), ("lit-gpt-982abcbc", ("--pp", "2"), False)])
def test_a_layout_refuses_the_reads_a_layer(code, layout, refused):
    """wt40_review: a layout's eager decode step takes one max(kernels, host) a stage (layout/kernel_step.py), which
    drops d16f924d's window a layer (at --pp 2 it printed 18.5 ms 'host-bound' where one GPU's windows give 18.7):
    refused in one line, exit status 2, as serve refuses the parts it drops; replayed steps (no host term) and
    982abcbc (no read inside the forward) still run."""
    from click.testing import CliRunner

    from cli import cli

    result = CliRunner().invoke(cli, ["simulate", "--model", "falcon-7b", "--hardware", "a100-40gb", "--prompt", "5",
                                      "--gen", "8", "--attention", "sdpa", "--kv-cache", "static", "--decode-code",
                                      code, *layout])
    lines = [line for line in result.output.splitlines() if line.strip()]
    if refused:
        assert result.exit_code == 2 and len(lines) == 1 and "reads the GPU in every layer" in lines[0], result.output
    else:
        assert result.exit_code == 0, result.output


def test_the_host_line_does_not_claim_one_window():
    """wt40_review: simulate's host line said 'a step takes the longer of the two' (18.5 ms of ops, some 14 of
    kernels) above d16f924d's window-a-layer line, where the step is 18.7 ms, longer than both: the line now points
    to the windows; 982abcbc keeps the one-window sentence."""
    from click.testing import CliRunner

    from cli import cli

    def host_lines(code):
        out = CliRunner().invoke(cli, ["simulate", "--model", "falcon-7b", "--hardware", "a100-40gb", "--prompt", "5",
                                       "--gen", "8", "--attention", "sdpa", "--kv-cache", "static", "--decode-code",
                                       code]).output
        return [line for line in out.splitlines() if line.strip().startswith("host")]

    read = host_lines("lit-gpt-d16f924d")
    assert "each layer a window of its own (below)" in read[0] and "longer of the two" not in read[0]
    assert "one a layer (the cache's roll check)" in read[1]
    assert "a step takes the longer of the two" in host_lines("lit-gpt-982abcbc")[0]
