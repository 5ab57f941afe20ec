"""The nanotron ZeRO-1 rows' `"overlap": {"dp": 0.0}` (session 28: nanotron builds no DDP with
accumulate_grad_in_fp32 and ZeRO-1, trainer.py make_ddp at c2528430, so the fp32 gradients are reduced
after the backward) is what a user types as `simulate --dp-overlap 0` ("0: reduced after backward"), and
the book's cluster is a hardware file's `cluster`, its ZeRO-1 `--zero-optimizer nanotron`
(session 30), its loss nanotron's sharded_cross_entropy, Megatron's passes on fp32 logits, `--unfused-loss`
(session 31): the command gives the row's step to the float, and
with --overlap-grad-reduce (2/3: --framework megatron's default is Megatron-LM's, after the backward,
since session 29) the step the row had before."""

from __future__ import annotations

import json

import cli
from costmodel.hardware import load_hardware
from reports.published_rows import run_model
from reports.published_runs import other_runs_data, train_run

ROW = "nanotron-playbook llama-3.57b dp128 tp4 pp1 gas1 mbs2 zero1 512xh100"


def test_dp_overlap_zero_on_the_command_line_is_the_row(tmp_path, capsys):
    data = other_runs_data()
    source, run = data["sources"]["nanotron-playbook"], next(r for r in data["runs"] if r["id"] == ROW)
    assert run["overlap"] == {"dp": 0.0} and source["hardware_overrides"] == {"cluster": "hf-h100-efa"}
    config = run_model(run)
    (tmp_path / "model.json").write_text(json.dumps(config.to_dict()))
    (tmp_path / "hw.json").write_text(json.dumps(dict(load_hardware("h100-sxm").to_dict(), name="hf-h100",
                                                      cluster="hf-h100-efa")))
    command = ["simulate", "--train", "--config", str(tmp_path / "model.json"), "--hardware", str(tmp_path / "hw.json"),
               "--tp", "4", "--sp", "--dp", "128", "--zero", "1", "--framework", "megatron", "-n", "4096", "-b", "2",
               "--global-batch", "256", "--attention", "flash", "--impl", "megatron", "--grad-reduce-dtype", "fp32",
               "--flops-convention", "dense", "--zero-optimizer", "nanotron", "--unfused-loss", "--json"]
    steps = []
    for extra in (["--dp-overlap", "0"], ["--overlap-grad-reduce"]):
        assert cli.main(command + extra) == 0
        steps.append(json.loads(capsys.readouterr().out)["step"])
    exposed, hidden = steps
    # the row's 132.5 TFLOP/s a GPU (MFU x the 989.4 datasheet peak), its 0.3967 s step; 0.3341 s hidden
    # (nanotron's ZeRO-1, --zero-optimizer nanotron: session 30; its loss, --unfused-loss: session 31)
    assert exposed["mfu"] * 989.4 == train_run(run, source, "kernels")
    assert (round(exposed["seconds"], 4), round(hidden["seconds"], 4)) == (0.3951, 0.3334)  # (0.3967, 0.3342) before s43
    bare = dict({k: v for k, v in run.items() if k != "overlap"}, overlap_grad_reduce=True)
    assert hidden["mfu"] * 989.4 == train_run(bare, source, "kernels")
