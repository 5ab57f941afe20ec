"""The output head quantized as gpt-fast and torchao quantize it (--quantize-head, Workload.quantize_head;
costmodel/quantization.py's docstring), checked against gpt-fast's README: its Memory Bandwidth column
is the model's bytes x its tokens/s (generate.py at 9ac48bc, where the rows come from: model_size =
sum(p.numel() * p.dtype.itemsize for p in chain(model.parameters(), model.buffers())), taken before
setup_caches makes the KV cache), so bandwidth / tokens/s is the bytes of the quantized checkpoint,
head included."""

from __future__ import annotations

import pytest

from costmodel.config import ConfigError
from costmodel.presets import load_preset
from costmodel.tree import CostModel, model_values, profile_for, workload_values
from costmodel.workload import Workload
from reports.published_runs import other_runs_data

#: gpt-fast README (first commit 9ac48bc, unchanged at 32971d3), the A100 'Benchmarks' table:
#: (run id in published_runs.json, Memory Bandwidth GB/s).
BANDWIDTH = {"gpt-fast llama2-7b int8": 1069.20, "gpt-fast llama2-70b int8": 1322.58,
             "gpt-fast llama2-7b int4 g32": 862.69, "gpt-fast llama2-70b int4 g32": 1097.66}
PARTS = ("weight_data_bytes", "weight_scale_bytes", "weight_zero_bytes", "weight_unquantized_bytes")


def _parts(model: str, head: bool, **quantization) -> dict[str, int]:
    cfg = load_preset(model)
    workload = Workload(seq_len=5, gen_tokens=200, dtype="bf16", quantize_head=head, **quantization)
    tree = CostModel(cfg, profile_for(cfg, workload), "decode")
    values = {**model_values(cfg), **workload_values(cfg, workload)}
    return {part: int(tree.total(part).subs(values)) for part in PARTS}


def _gpt_fast_bytes(run: dict, head: bool) -> int:
    """gpt-fast's model_size for a run: our parts in gpt-fast's layout (--quant-layout gpt-fast,
    quantization.QUANT_LAYOUTS: int8 with a bf16 scale per row, WeightOnlyInt8Linear's `scales`;
    int4 with scales_and_zeros, a bf16 pair per group, 4 bytes; tests/test_quant_layout.py)."""
    group = {"weight_group": run["weight_group"]} if "weight_group" in run else {}
    p = _parts(run["model"], head, weight_dtype=run["weight_dtype"], quant_layout="gpt-fast", **group)
    return sum(p.values())


def _runs() -> dict[str, dict]:
    return {r["id"]: r for r in other_runs_data()["runs"] if r["id"] in BANDWIDTH}


def test_llama2_7b_int8_bytes_with_the_head_in_int8():
    """Llama-2-7B in gpt-fast's int8: 32 layers' 202,375,168 linear weights in one byte, the head's
    32000 x 4096 too, 32 x 42,496 + 32,000 bf16 row scales; the embedding (131,072,000) and the norms
    (266,240) in bf16: 6,872,537,600 bytes; 6,872,537,600 x 155.58 = 1,069.23 GB/s, published 1,069.20."""
    run = _runs()["gpt-fast llama2-7b int8"]
    assert _gpt_fast_bytes(run, head=True) == 32 * 202_375_168 + 131_072_000 + 2 * (32 * 42_496 + 32_000) \
        + 2 * (131_072_000 + 266_240) == 6_872_537_600
    assert _gpt_fast_bytes(run, head=False) == 6_872_537_600 + 131_072_000 - 2 * 32_000


@pytest.mark.parametrize("run_id", ["gpt-fast llama2-7b int8", "gpt-fast llama2-70b int4 g32"])
def test_gpt_fasts_bandwidth_column_is_the_bytes_with_the_head_quantized(run_id):
    """bytes x tokens/s = the column, to its rounding (tokens/s to 0.01: +- bytes x 0.005; the
    column to 0.01 GB/s), with the head quantized (7B int8: +0.003%, 70B int4: +0.002%); without,
    off by the head's extra bytes (7B int8: +1.9%, 70B int4: +0.83%), far outside it."""
    run = _runs()[run_id]
    tokens, published = run["published_tokens_per_s"], BANDWIDTH[run_id]
    for head, matches in ((True, True), (False, False)):
        bytes_ = _gpt_fast_bytes(run, head)
        slack = bytes_ * 0.005 / 1e9 + 0.005
        assert (abs(bytes_ * tokens / 1e9 - published) <= slack) is matches, (head, bytes_ * tokens / 1e9)


@pytest.mark.parametrize("run_id", ["gpt-fast llama2-7b int4 g32", "gpt-fast llama2-70b int8"])
def test_the_other_two_rows_are_nearer_the_bytes_with_the_head_quantized(run_id):
    """Two rows match to the rounding neither way: with the head quantized our count of gpt-fast's
    bytes is 0.19% (7B int4) and 0.17% (70B int8) above the column's, without it 4.3% and 0.55%
    above; what the extra 8.5 MB and 117 MB are is not known here (the rows may come from another
    build than the bandwidth's model_size)."""
    run = _runs()[run_id]
    implied = BANDWIDTH[run_id] * 1e9 / run["published_tokens_per_s"]
    with_head, without = (_gpt_fast_bytes(run, head) / implied - 1 for head in (True, False))
    assert 0 < with_head < 0.002 < 0.005 < without


def test_the_published_gpt_fast_and_torchao_sources_state_it():
    """Every gpt-fast and torchao source that has quantized rows says quantize_head, with its quote."""
    sources = other_runs_data()["sources"]
    for name in ("gpt-fast", "gpt-fast-mixtral", "gpt-fast-amd", "torchao", "torchao-h100", "rocm-int8"):
        assert sources[name]["quantize_head"] is True and "quantize_head_source" in sources[name], name


def test_default_unchanged_and_bad_uses_refused():
    """No flag: the head stays bf16 (the integrations' default); the flag without a format, with
    mxfp4 (routed experts only), or on a tied head: one ConfigError each."""
    p = _parts("llama2-7b", head=False, weight_dtype="int8")
    assert p["weight_unquantized_bytes"] == 2 * (2 * 131_072_000 + 266_240)
    with pytest.raises(ConfigError, match="applies only with a weight_dtype"):
        Workload(quantize_head=True)
    with pytest.raises(ConfigError, match="routed experts only"):
        Workload(weight_dtype="mxfp4", quantize_head=True)
    with pytest.raises(ConfigError, match="ties its head"):
        _parts("gpt2", head=True, weight_dtype="int8")


def _simulate(*args: str):
    import json

    from click.testing import CliRunner

    import cli

    result = CliRunner().invoke(cli.cli, ["simulate", "-m", "llama2-7b", "--hardware", "a100-80gb", "--prompt", "5",
                                          "--gen", "20", *args, "--json"])
    return result.exit_code, (json.loads(result.output) if result.exit_code == 0 else result.output)


def test_simulate_quantize_head_reads_the_head_in_int8():
    """simulate --quantize-head: the head's 32000 x 4096 in one byte and 32,000 fp32 row scales
    instead of two bytes: 262,144,000 - 131,200,000 = 130,944,000 fewer weight bytes; without a
    --weight-dtype it is refused (exit 2, one line)."""
    code, plain = _simulate("--weight-dtype", "int8")
    code_head, head = _simulate("--weight-dtype", "int8", "--quantize-head")
    assert code == code_head == 0
    assert plain["memory"]["weights"] - head["memory"]["weights"] == 262_144_000 - 131_072_000 - 4 * 32_000
    assert _simulate("--quantize-head")[0] == 2
