"""The GPU-hours rows among the published runs (issue 18): whole pretraining runs' GPU-hours from the
Llama model cards and BLOOM's papers, each as its card states it and as the CLI command a user types.
Split from tests/test_published_runs.py."""

from __future__ import annotations

import json

import pytest

import cli
from reports.published_runs import other_runs_data


def _runs() -> tuple[dict, dict]:
    data = other_runs_data()
    return {r["id"]: r for r in data["runs"]}, data["sources"]


# GPU-hours of whole pretraining runs (issue 18), typed from the model cards at llama-models
# a9c89c4 (published_runs.json "sources" cite each): (GPU-hours, tokens, hardware, the card's watts).
CARD_GPU_HOURS = {
    # models/llama2/MODEL_CARD.md, 'CO2 emissions during pretraining': 184320, 368640, 1720320 GPU
    # hours at 400 W; 2.0T tokens ('Llama 2 family of models')
    "gpu-hours-llama2 7b 2.0T tokens": (184_320, 2.0e12, "a100-80gb", 400),
    "gpu-hours-llama2 13b 2.0T tokens": (368_640, 2.0e12, "a100-80gb", 400),
    "gpu-hours-llama2 70b 2.0T tokens": (1_720_320, 2.0e12, "a100-80gb", 400),
    # models/llama3_1/MODEL_CARD.md, 'Training Energy Use': 1.46M, 7.0M, 30.84M GPU hours on
    # H100-80GB (TDP of 700W); '~15 trillion tokens'
    "gpu-hours-llama3.1 8b 15T tokens": (1_460_000, 15e12, "h100-sxm", 700),
    "gpu-hours-llama3.1 70b 15T tokens": (7_000_000, 15e12, "h100-sxm", 700),
    "gpu-hours-llama3.1 405b 15T tokens": (30_840_000, 15e12, "h100-sxm", 700),
    # Luccioni et al. (arXiv 2211.02001) Table 1: 1,082,990 GPU hours; BLOOM (arXiv 2211.05100): 366B
    # tokens; no power cap stated (the A100s' 400 W)
    "gpu-hours-bloom 176b 366B tokens": (1_082_990, 366e9, "a100-80gb", None),
}

# Each row as a user types it (README "Published runs", docs/checked.md): `simulate --train
# --tokens`, whose --json "cost" "gpu_hours" the row must equal.
_LLAMA2 = "--hardware a100-80gb --train --seq-len 4096 --batch 1 --dtype bf16 --attention flash --impl megatron "
_LLAMA31 = "--hardware h100-sxm --train --seq-len 8192 --batch 1 --dtype bf16 --attention flash --impl megatron "
_FSDP = "--framework fsdp2 --zero 3 "
_EDGES = ",".join(["0"] + ["1"] * 126 + ["0"])  # Llama 3's first and last chunks without layers
CARD_COMMANDS = {
    "gpu-hours-llama2 7b 2.0T tokens":
        f"--model llama2-7b {_LLAMA2}{_FSDP}--dp 1024 --global-batch 1024 --tokens 2e12",
    "gpu-hours-llama2 13b 2.0T tokens":
        f"--model llama2-13b {_LLAMA2}{_FSDP}--dp 1024 --global-batch 1024 --tokens 2e12",
    "gpu-hours-llama2 70b 2.0T tokens":  # torchtitan's llama2_70b.toml: 16 sequences a replica, full recomputation
        f"--model llama2-70b {_LLAMA2.replace('--batch 1 ', '--batch 16 ')}{_FSDP}--tp 8 --sp --dp 64 --recompute full "
        "--global-batch 1024 --tokens 2e12",
    "gpu-hours-llama3.1 8b 15T tokens":
        f"--model llama3-8b {_LLAMA31}{_FSDP}--dp 2048 --global-batch 2048 --tokens 15e12",
    "gpu-hours-llama3.1 70b 15T tokens":  # torchtitan's llama3_70b.toml: 8 sequences a replica, full recomputation
        f"--model llama3-70b {_LLAMA31.replace('--batch 1 ', '--batch 8 ')}{_FSDP}--tp 8 --sp --dp 256 --recompute full "
        "--global-batch 2048 --tokens 15e12",
    "gpu-hours-llama3.1 405b 15T tokens":
        f"--model llama3.1-405b {_LLAMA31}--framework megatron --zero 1 --tp 8 --sp --pp 16 --dp 128 "
        f"--schedule interleaved --virtual-stages 8 --pp-overlap 0 --overlap-grad-reduce --stage-layers {_EDGES} "
        "--global-batch 2048 --tokens 15e12",  # --pp-overlap 0: the row's stated exposed sends (megatron's
    # default hides them); --overlap-grad-reduce: FSDP's reduce under the backward (megatron's default: after it)
    # {config}: bloom-560m's config.json at BLOOM's sizes (BLOOM_176B below), as a user writes it
    "gpu-hours-bloom 176b 366B tokens":
        "--config {config} --hardware {hardware} --train --seq-len 2048 --batch 2 --dtype bf16 --attention eager "
        "--impl megatron --recompute full --framework deepspeed --zero 1 --tp 4 --pp 12 --dp 8 "
        "--stage-layers 5,6,6,6,6,6,6,6,6,6,6,5 --global-batch 2048 --tokens 366e9",
}
BLOOM_176B = {"hidden_size": 14336, "n_head": 112, "n_layer": 70, "hidden_dropout": 0.1, "attention_dropout": 0.1}


def test_the_gpu_hours_rows_hold_their_cards_figures():
    """Seven rows, each its source's GPU-hours, tokens, GPU and watts; the Llama cards' totals add
    up from them (Llama 2's 3,311,616 with the unreleased 34B's 1,038,336 of the paper's Table 2;
    Llama 3.1's 39.3M)."""
    from reports.published_runs import TRAIN_UNITS, train_setup

    runs, sources = _runs()
    cards = ("gpu-hours-llama2", "gpu-hours-llama3.1", "gpu-hours-bloom")  # session 28's are in test_published_runs_pubtrain28.py
    hours_rows = {run_id: run for run_id, run in runs.items()
                  if "published_gpu_hours" in run and run_id.split()[0] in cards}
    assert sorted(hours_rows) == sorted(CARD_GPU_HOURS)
    for run_id, (hours, tokens, hardware_name, watts) in CARD_GPU_HOURS.items():
        run, source = hours_rows[run_id], sources[run_id.split()[0]]
        assert (run["published_gpu_hours"], run["tokens"]) == (hours, tokens)
        assert source.get("power_limit_watts") == watts and source["not_modelled"] and source["assumed"]
        estimate, hardware, _ = train_setup(run, source)
        assert hardware.name == hardware_name and hardware.clock_scale == 1.0  # the card's watts: the preset's
        assert estimate.layout.gpus == run["gpus"]
        if estimate.layout.framework == "fsdp2":  # the layout assumed: one micro-batch a step, no accumulation
            assert estimate.layout.microbatches == 1  # (one sequence a replica; the 70Bs' torchtitan recipe: 16 or 8)
            assert estimate.layout.dp * estimate.workload.batch == run["global_batch"]
        assert TRAIN_UNITS["published_gpu_hours"][0] == "GPU-hours"
    llama2 = (CARD_GPU_HOURS[f"gpu-hours-llama2 {size} 2.0T tokens"][0] for size in ("7b", "13b", "70b"))
    assert sum(llama2) + 1_038_336 == 3_311_616
    llama31 = (CARD_GPU_HOURS[f"gpu-hours-llama3.1 {size} 15T tokens"][0] for size in ("8b", "70b", "405b"))
    assert sum(llama31) == 39_300_000
    # BLOOM's layout is the tr11 README's, the throughput row's, with the attention dropout its source states
    bloom, _, _ = train_setup(runs["gpu-hours-bloom 176b 366B tokens"], sources["gpu-hours-bloom"])
    throughput, _, _ = train_setup(runs["bloom 176b 384 GPUs"], sources["bloom"])
    assert bloom.layout == throughput.layout and bloom.workload == throughput.workload
    assert (bloom.cfg.dropout, bloom.cfg.attention_dropout) == (0.1, 0.1)
    assert bloom.cfg == throughput.cfg  # one model for the one run, both rows (tr11: both dropouts 0.1)


def test_the_405b_gpu_hours_row_runs_table_4s_16k_layout():
    """The same layout as the 'llama3 405b 16k GPUs' throughput row: TP 8 PP 16 DP 128, interleaved
    V = 8 with empty edge chunks, 16 micro-batches of one 8,192-token sequence."""
    from reports.published_runs import train_setup

    runs, sources = _runs()
    hours, _, _ = train_setup(runs["gpu-hours-llama3.1 405b 15T tokens"], sources["gpu-hours-llama3.1"])
    speed, _, _ = train_setup(runs["llama3 405b 16k GPUs"], sources["llama3"])
    assert hours.layout == speed.layout and hours.workload == speed.workload
    assert hours.layout.stage_layers == (0, *[1] * 126, 0)


@pytest.mark.parametrize("run_id", sorted(CARD_COMMANDS))
def test_each_gpu_hours_row_is_its_cli_command(run_id, capsys, tmp_path):
    """The row's GPU-hours, under both time models, are those of the command the docs print."""
    from pathlib import Path

    import costmodel
    from reports.published_runs import run_hardware, train_gpu_hours

    runs, sources = _runs()
    run, source = runs[run_id], sources[run_id.split()[0]]
    config = tmp_path / "bloom-176b.json"
    preset = json.loads((Path(costmodel.__file__).parent / "presets" / "bloom-560m.json").read_text())
    config.write_text(json.dumps({**preset, **BLOOM_176B}))
    # {hardware}: the a100-80gb file with Jean Zay's network (the source's hardware_overrides), as a user writes it
    hardware = tmp_path / "jean-zay-a100-80gb.json"
    hardware.write_text(json.dumps(run_hardware(sources["gpu-hours-bloom"]).to_dict()))
    command = CARD_COMMANDS[run_id].format(config=config, hardware=hardware).split()
    for model in ("roofline", "kernels"):
        assert cli.main(["simulate", *command, "--time-model", model, "--json"]) == 0
        cost = json.loads(capsys.readouterr().out)["cost"]
        assert cost["tokens"] == run["tokens"]
        assert train_gpu_hours(run, source, model) == pytest.approx(cost["gpu_hours"], rel=1e-12)


def test_a_gpu_hours_row_counts_as_a_speed_inverted():
    """A GPU-hours row is a cost: 125 of ours for 100 published is our speed at 0.8 of theirs,
    summed apart from the rates."""
    from reports.published_runs import speed_ratios

    tables = {"narayanan_2021_table_1": [], "korthikanti_2022_table_5": [],
              "other_runs": [{"unit": "GPU-hours", "published": 100, "roofline": 125, "kernels": 80,
                              "not_expressible": None},
                             {"unit": "tokens/s per GPU", "published": 100, "roofline": 125, "kernels": 80,
                              "not_expressible": None}]}
    assert speed_ratios(tables, "roofline") == [1.25] and speed_ratios(tables, "roofline", costs=True) == [0.8]
    assert speed_ratios(tables, "kernels") == [0.8] and speed_ratios(tables, "kernels", costs=True) == [1.25]
    from reports.published_runs import summary

    totals = summary(tables)  # the runs' rates apart from the whole runs' GPU-hours
    assert list(totals) == ["roofline", "kernels", "roofline, GPU-hours", "kernels, GPU-hours"]
    assert (totals["kernels"]["lowest"], totals["kernels, GPU-hours"]["highest"]) == (0.8, 1.25)
    assert all(t["comparisons"] == 1 for t in totals.values())


def test_a_gpu_hours_row_the_cli_cannot_express_says_so():
    """A named attention kernel (LLaMA-65B's flash1) has no `simulate` option: not expressible."""
    from costmodel.config import ConfigError
    from reports.published_runs import train_gpu_hours

    runs, sources = _runs()
    run = dict(runs["llama 65b 2048 GPUs"], tokens=1.4e12)
    with pytest.raises(ConfigError, match="attention_kernel"):
        train_gpu_hours(run, sources["llama"], "kernels")


def test_the_python_api_gives_a_gpu_hours_row_too():
    """costmodel.simulate with a layout and tokens (it passed the price where the FLOP convention
    goes, so it failed: 'flops convention must be one of dense, causal, got None'): the Llama 2 7B
    row's GPU-hours under the default (kernel) model, and dollars at the price given."""
    import costmodel
    from reports.published_runs import train_gpu_hours

    runs, sources = _runs()
    run = runs["gpu-hours-llama2 7b 2.0T tokens"]
    result = costmodel.simulate("llama2-7b", hardware="a100-80gb", train=True, seq_len=4096, attention="flash",
                                impl="megatron", tokens=2e12, price=2.0,
                                layout={"dp": 1024, "framework": "fsdp2", "zero": 3, "microbatches": 1}).to_dict()
    hours = train_gpu_hours(run, sources["gpu-hours-llama2"], "kernels")
    assert result["time_model"] == "kernels" and result["step"]["flops_convention"] == "dense"
    assert result["cost"]["gpu_hours"] == pytest.approx(hours, rel=1e-12)
    assert result["cost"]["dollars"] == pytest.approx(2.0 * hours, rel=1e-12)
