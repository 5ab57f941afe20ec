"""The eighth new-user round's defects (validate/FINDINGS.md "Issue 18: the eighth new-user round"),
each typed as the user typed it: `--framework fsdp2` without `--zero` refused a `--zero 0` nobody
typed, and DeepSpeed's pipeline engine was timed under schedules it does not run."""
import json

import pytest

import cli
from costmodel.config import ConfigError
from costmodel.layout import Layout

TRAIN = ["simulate", "--model", "llama3-8b", "--hardware", "h100-sxm", "--train", "--seq-len", "4096",
         "--batch", "1", "--gpus", "8"]


def _one_line(capsys):
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def _json(args, capsys):
    assert cli.main(args + ["--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_fsdp2_without_zero_is_fully_shard_default(capsys):
    """`--framework fsdp2` alone said "fsdp2 supports --zero 2, 3 ..., not 0" (Layout's zero
    defaulted to 0 whatever the framework); it is now fully_shard's default, ZeRO 3."""
    alone = _json(["estimate", "--model", "llama3-8b", "--gpus", "8", "--framework", "fsdp2"], capsys)
    typed = _json(["estimate", "--model", "llama3-8b", "--gpus", "8", "--framework", "fsdp2", "--zero", "3"], capsys)
    assert alone["parallel"]["layout"]["zero"] == 3
    assert alone["parallel"] == typed["parallel"]
    # the weights' fp32 shard: 8,030,261,248 parameters x 4 B / 8 ranks (FSDP2 pads each tensor's rows)
    assert abs(alone["parallel"]["per_rank"]["weights"] - 8_030_261_248 * 4 / 8) < 1e6
    assert Layout(framework="fsdp2").zero == 3 and Layout().zero == 0 and Layout(framework="megatron").zero == 0


def test_simulate_fsdp2_without_zero_runs(capsys):
    alone = _json(TRAIN + ["--framework", "fsdp2"], capsys)
    typed = _json(TRAIN + ["--framework", "fsdp2", "--zero", "3"], capsys)
    assert alone == typed


@pytest.mark.parametrize("schedule", ["interleaved", "zbv", "zb-h1", "gpipe"])
def test_deepspeed_pipeline_runs_1f1b_only(schedule, capsys):
    """`--pp 2 --schedule zbv` (the default framework, deepspeed) was timed as DeepSpeed's pipeline
    engine under a zero-bubble V schedule; its engine builds schedule.TrainSchedule (1F1B) only."""
    args = TRAIN + ["--pp", "2", "--microbatches", "4", "--schedule", schedule]
    assert cli.main(args) == 2
    assert _one_line(capsys) == (f"error: layout: deepspeed's pipeline engine runs the 1f1b schedule only, not "
                                 f"'{schedule}' (DeepSpeed's PipelineEngine builds schedule.TrainSchedule); add "
                                 "--framework megatron or fsdp2 for another.")
    assert cli.main(args + ["--framework", "megatron"]) == 0
    capsys.readouterr()


def test_the_api_refuses_it_too():
    import costmodel

    with pytest.raises(ConfigError, match="runs the 1f1b schedule only"):
        costmodel.estimate("llama3-8b", layout={"pp": 2, "microbatches": 4, "schedule": "interleaved",
                                                "virtual_stages": 2})


def test_plan_ranks_no_interleaved_deepspeed_layout(capsys):
    """plan listed DeepSpeed layouts under "interleaved x2" (Llama 2 70B, 64 H100s, pp 4: its
    third row, 8 x 4 x 2 deepspeed, 1.2 min, 41.0%); now 168 layouts, every deepspeed one 1F1B."""
    data = _json(["plan", "--model", "llama2-70b", "--hardware", "h100-sxm", "--gpus", "64", "--seq-len", "4096",
                  "--global-batch", "1024", "--framework", "deepspeed", "--pp", "4"], capsys)
    schedules = {row["layout"]["schedule"] for row in data["feasible"] + data["infeasible"]}
    assert schedules == {"1f1b"}
    megatron = _json(["plan", "--model", "llama2-70b", "--hardware", "h100-sxm", "--gpus", "64", "--seq-len", "4096",
                      "--global-batch", "1024", "--framework", "megatron", "--pp", "4"], capsys)
    assert "interleaved" in {row["layout"]["schedule"] for row in megatron["feasible"]}
