"""torchao's own torchtitan training tables among the published runs (costmodel/published_runs.json
sources "torchao-float8-h100" and "torchao-mx-b200", session 27): Llama 3 8B on one node of 8 GPUs,
FSDP2, torch.compile, per-op SAC, local batch 1 at 8,192 tokens, bf16 against the float8 and MX
recipes, as the two README tables and their benchmark scripts state."""

from __future__ import annotations

import pytest

from reports.published_runs import other_runs_data, train_setup

# pytorch/ao torchao/float8/README.md at 8c81863ba (8xH100) and torchao/prototype/mx_formats/README.md
# at d8bb51f63 (8xB200 limited to 750 W): the run's id, its recipe (--fp8), Median tokens/second and
# the table's 'Speedup over baseline' in percent (None: the baseline)
TABLES = {
    "torchao-float8-h100 llama3-8b fsdp compile bf16 8xh100": (None, 6150, None),
    "torchao-float8-h100 llama3-8b fsdp compile float8 tensorwise 8xh100": ("tensorwise", 7689.5, "25.03"),
    "torchao-float8-h100 llama3-8b fsdp compile float8 rowwise 8xh100": ("rowwise", 6768, "10.05"),
    "torchao-mx-b200 llama3-8b fsdp compile bf16 8xb200": (None, 8307.5, None),
    "torchao-mx-b200 llama3-8b fsdp compile float8 tensorwise 8xb200": ("tensorwise", 10417.0, "25.4"),
    "torchao-mx-b200 llama3-8b fsdp compile mxfp8_cublas 8xb200": ("mxfp8", 9969.0, "20.0"),
    "torchao-mx-b200 llama3-8b fsdp compile mxfp8_cublas_rceil 8xb200": ("mxfp8", 9642.0, "16.1"),
    "torchao-mx-b200 llama3-8b fsdp compile float8 rowwise 8xb200": ("rowwise", 8640.5, "4.0"),
}


def test_the_two_tables_are_all_here():
    data = other_runs_data()
    ids = [r["id"] for r in data["runs"] if r["id"].split()[0] in ("torchao-float8-h100", "torchao-mx-b200")]
    assert sorted(ids) == sorted(TABLES)


@pytest.mark.parametrize("run_id", sorted(TABLES))
def test_each_torchao_row_is_its_table_and_script(run_id):
    """The table's figure, its speedup column recomputed from the two figures (a check of the
    transcription, to the table's own rounding); FSDP2 over all 8 GPUs (data_parallel_shard_degree
    -1), one micro-batch of the local batch 1 at seq_len 8192, per-op SAC, torch.compile, the
    recipe the script's converter names; the B200s capped at the first version's 750 W, the H100s
    Meta's variant (torchao's roofline_utils.py at 8c81863ba: 2.4 TB/s; torchtitan's docs/performance.md:
    96 GB of HBM2e, the default 500 W power limit)."""
    recipe, tokens, speedup = TABLES[run_id]
    data = other_runs_data()
    source_name = run_id.split()[0]
    run = next(r for r in data["runs"] if r["id"] == run_id)
    assert run["published_tokens_per_s_per_gpu"] == tokens
    if speedup is not None:
        baseline = TABLES[f"{source_name} llama3-8b fsdp compile bf16 8x{run_id.split()[-1][2:]}"][1]
        assert f"{(tokens / baseline - 1) * 100:.{len(speedup.split('.')[1])}f}" == speedup
    estimate, hardware, options = train_setup(run, data["sources"][source_name])
    layout, workload = estimate.layout, estimate.workload
    assert (layout.tp, layout.pp, layout.cp, layout.dp, layout.zero, layout.framework) == (1, 1, 1, 8, 3, "fsdp2")
    assert (workload.batch, layout.microbatches, workload.seq_len, workload.recompute) == (1, 1, 8192, "torchtitan-op")
    kernel = {"attention_kernel": "cudnn"} if source_name == "torchao-mx-b200" else {}  # torchtitan 6fc499f on sm100
    assert layout.fp8 == recipe and options == {"autocast": False, "compiled": True, **kernel}
    assert (estimate.cfg.d_model, estimate.cfg.n_layers, estimate.cfg.vocab_size) == (4096, 32, 128256)
    b200 = source_name == "torchao-mx-b200"
    assert (hardware.name, hardware.power_limit_watts) == (("b200", 750) if b200 else ("h100-sxm", 500))
    if not b200:
        assert (hardware.bandwidth_bytes_per_s, hardware.memory_bytes) == (2.4e12, 96 * 2**30)


def test_the_h100_rows_run_on_the_torchtitan_rows_hardware():
    """torchao's H100 is the Meta H100 variant the torchtitan source states (the same overrides and
    cap): one H100 for both sources' Llama 3 8B rows, so the two tables are timed alike."""
    sources = other_runs_data()["sources"]
    ours, titan = sources["torchao-float8-h100"], sources["torchtitan"]
    assert ours["hardware_overrides"] == titan["hardware_overrides"]
    assert ours["power_limit_watts"] == titan["power_limit_watts"] == 500
    assert "custom to Meta's H100 variant" in ours["amended"]


def test_the_b200_tables_suspect_figures_name_the_rows_they_are_checked_against():
    """The B200 source's not_modelled quotes the H200 and Megatron-Bridge B200 figures it weighs its
    own against: each must be the figure of the row it names (a transcription check)."""
    data = other_runs_data()
    runs = {r["id"]: r["published_tokens_per_s_per_gpu"] for r in data["runs"] if r["kind"] == "train"
            and "published_tokens_per_s_per_gpu" in r}
    note = data["sources"]["torchao-mx-b200"]["not_modelled"]
    assert runs["torchtitan-h200 llama3.1-8b fsdp compile float8 32 GPUs"] == 10938 and "10,938" in note
    assert runs["megatron-bridge 25.11 llama3-8b fp8-cs 8xb200"] == 30624 and "30,624" in note
    assert f"{30624 / 10417.0:.1f}x" == "2.9x" and "2.9x" in note
