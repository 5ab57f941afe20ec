"""The Python API: costmodel.simulate (a function; the roofline's module is costmodel.roofline) and costmodel.plan,
and results that print as text rather than <... object at 0x...>."""

from __future__ import annotations

import costmodel
import cli


def test_simulate_is_a_function_beside_the_roofline_module(capsys):
    from costmodel import roofline, roofline_training

    assert callable(costmodel.simulate) and roofline.simulate_inference and roofline_training.simulate_training
    run = costmodel.simulate("llama3-8b", hardware="h100-sxm", train=True, attention="sdpa", seq_len=4096,
                             tokens=2e12, price=2.5)
    assert cli.main(["simulate", "--model", "llama3-8b", "--hardware", "h100-sxm", "--train", "--attention",
                     "sdpa", "--seq-len", "4096", "--tokens", "2e12", "--price", "2.5", "--json"]) == 0
    import json

    assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(run.to_dict()))
    assert repr(run).startswith("llama3-8b training on h100-sxm") and "<pre>" in run._repr_html_()
    cost = run.to_dict()["cost"]
    assert cost["dollars"] == cost["gpu_hours"] * 2.5 and cost["gpus"] == 1


def test_plan_prints_its_table_and_gives_days_gpu_hours_and_dollars(capsys):
    assert cli.main(["plan", "--model", "llama2-7b", "--gpus", "8", "--tokens", "1e12", "--price", "2.5",
                     "--tp", "1", "--pp", "1", "--top", "3"]) == 0
    header = capsys.readouterr().out.splitlines()[3]
    assert header.split()[-4:] == ["to", "train", "GPU-hours", "dollars"]
    result = costmodel.plan("llama2-7b", gpus=8, tokens=1e12, price=2.5, tp=1, pp=1)
    best = result.best
    cost = best["cost"]
    assert cost["gpu_hours"] == cost["train_seconds"] * 8 / 3600 and cost["dollars"] == cost["gpu_hours"] * 2.5
    assert cost["train_days"] == cost["train_seconds"] / 86400
    text = repr(result)
    assert "days" in text and "GPU-hours" in text and "dollars" in text and "$" in text


def test_plan_ranks_by_cost_across_gpu_counts():
    result = costmodel.plan("llama2-7b", gpus=[8, 16], rank_by="cost", dp=8)
    per_token = [e["layout"]["tp"] * e["layout"]["pp"] * e["layout"]["dp"] / e["tokens_per_second"]
                 for e in result.feasible]
    assert per_token == sorted(per_token)
    assert {e["layout"]["tp"] * e["layout"]["pp"] * e["layout"]["dp"] for e in result.feasible} == {8, 16}


def test_an_estimate_prints_its_numbers():
    estimate = costmodel.estimate("llama2-7b")
    assert repr(estimate).startswith("<Estimate 'llama2-7b': 6,738,415,616 parameters")
    assert "Parameters" in estimate._repr_html_()
