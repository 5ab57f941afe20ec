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


T5 = ["--model", "t5-small", "--prompt", "512", "--gen", "10"]
ON_A_LAYOUT = ("error: layout: inference on a layout (--tp, --pp, --dp) is modelled for decoder-only models; "
               "'t5-small' is encoder-decoder: leave the layout out (one GPU).")


@pytest.mark.parametrize("layout", [["--tp", "2"], ["--dp", "1"]])
def test_an_encoder_decoder_on_a_layout_is_refused(layout, capsys):
    """simulate --model t5-small --tp 1 --dp 1 held 48.02 MiB of weights a rank (its decoder's
    layers: the encoder and the shared embedding were dropped; 60,506,624 parameters are 115.41
    MiB) and decoded at context 522, the source read as the decoder's prompt."""
    assert cli.main(["simulate", *T5, *layout]) == 2
    assert _one_line(capsys) == ON_A_LAYOUT


def test_plan_serve_refuses_an_encoder_decoder(capsys):
    """plan --serve --model t5-small --gpus 2 listed tp 2 at 61.40 MiB a GPU."""
    assert cli.main(["plan", "--serve", "--model", "t5-small", "--gpus", "2"]) == 2
    assert _one_line(capsys) == ON_A_LAYOUT


@pytest.mark.parametrize("split", [["--gpus", "2"], ["--tp", "2"]])
def test_estimate_serves_an_encoder_decoder_whole_on_each_gpu(split, capsys):
    """estimate --hardware h100-sxm --gpus 2 said 'tensor parallel: 61.40 MiB per GPU' for T5-small; now
    a whole copy on each: its one-GPU inference total, 121,013,248 B of weights (60,506,624 x 2 B) among
    166,503,424 B."""
    data = _json(["estimate", "--model", "t5-small", "--seq-len", "512", "--hardware", "h100-sxm", *split], capsys)
    assert data["memory"]["weights"] == 60_506_624 * 2
    assert data["fit"]["inference"]["memory"] == data["memory"]["inference_total"] == 166_503_424
    assert data["fit"]["inference"]["split"] == "a whole copy on each"


def test_an_encoder_decoder_generation_checks_the_decoder_it_runs(capsys):
    """simulate --model t5-small --prompt 512 --gen 10 warned 'target length 522 is beyond the context'
    while it timed the decoder from its start token (contexts 2 to 10, decoder_prompt 1)."""
    assert cli.main(["simulate", *T5, "--json"]) == 0
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert captured.err == ""
    assert data["inputs"]["decoder_prompt"] == 1 and data["decode"]["decode_steps"] == 9
    assert cli.main(["simulate", "--model", "t5-small", "--prompt", "512", "--gen", "600"]) == 0
    assert ("warning: target length 601 is beyond the context of model 't5-small' (512 tokens)."
            in capsys.readouterr().err)
