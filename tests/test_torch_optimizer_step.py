"""Layout.optimizer_step: torchtitan's optimizer step as its code runs it (costmodel/layout/torch_optimizer.py):
clip_grad_norm_(foreach=True) over the fp32 gradient (a norm and a scale: 12 bytes a parameter) and torch's
AdamW, foreach at torchtitan 9dec370 (eight passes, 80 bytes) and fused from 6e4988550 on (28 bytes)."""

from __future__ import annotations

import pytest

from costmodel.config import ConfigError
from costmodel.layout import Layout
from costmodel.layout.torch_optimizer import step_bytes
from reports.published_runs import other_runs_data
from tests.optimizer_step_runs import row_steps, simulate_optimizer_seconds

ROW = "torchtitan llama3.1-8b fsdp 8 GPUs"


def test_bytes_a_parameter_of_each_step():
    """foreach AdamW: (1+1) + (2+1) + (1+1) + (2+1) + (1+1) + (1+1) + (1+1) + (3+1) = 20 fp32 elements = 80
    bytes, the clipping's _foreach_norm (read 4) and _foreach_mul_ (read 4, write 4) 12 more; fused AdamW 28 + 12;
    "fused" leaves the one fused pass to ParamBytes.step_traffic (None)."""
    assert step_bytes(Layout(dp=8, framework="fsdp2", zero=3, optimizer_step="torch-foreach")) == 92
    assert step_bytes(Layout(dp=8, framework="fsdp2", zero=3, optimizer_step="torch-fused")) == 40
    assert step_bytes(Layout(dp=8, framework="fsdp2", zero=3)) is None


def test_refused_off_fsdp2_and_unknown_names():
    with pytest.raises(ConfigError, match="needs --framework fsdp2"):
        Layout(dp=8, framework="megatron", optimizer_step="torch-foreach")
    with pytest.raises(ConfigError, match="optimizer_step must be"):
        Layout(dp=8, framework="fsdp2", zero=3, optimizer_step="adam")


def test_the_sources_state_whose_optimizer_their_torchtitan_ran():
    """9dec370 (docs/performance.md's runs): foreach; 820504e, e7c0cae, 6fc499f: fused (the default since
    2025-02-24); torchao's float8 table (torchtitan "0.0.2", no commit) keeps the one fused pass."""
    sources = other_runs_data()["sources"]
    assert sources["torchtitan"]["optimizer_step"] == "torch-foreach"
    for name in ("torchtitan-asynctp", "torchtitan-h200", "torchao-mx-b200"):
        assert sources[name]["optimizer_step"] == "torch-fused"
    assert "optimizer_step" not in sources["torchao-float8-h100"]


def test_torchtitan_8b_step_on_8_gpus():
    """The 8B row's rank updates 8,030,261,248 / 8 fp32 parameters at the kernel model's bandwidth: one fused pass
    14.64 ms, torch's foreach AdamW with the clipping 48.10 ms (92 / 28 of it); the step 2.6243 -> 2.6577 s (2.6237 -> 2.6572
    before the embedding's zeroed gradient, 0.547 ms: costmodel/embedding_grad.py; 2.6173 -> 2.6508 before session 31's
    loss traffic, blocks/head.py fused_loss_bytes)."""
    seconds = row_steps(ROW, "torchtitan", ("fused", "torch-foreach"))
    assert seconds["fused"]["optimizer_seconds"] == pytest.approx(0.014638, rel=1e-4)
    assert seconds["torch-foreach"]["optimizer_seconds"] == pytest.approx(0.014638 * 92 / 28, rel=1e-4)
    assert seconds["fused"]["seconds"] == pytest.approx(2.6265, abs=1e-4)  # 2.6243 before wt46_mgsoftmax (rerun launches)
    assert seconds["torch-foreach"]["seconds"] == pytest.approx(2.6600, abs=1e-4)  # 2.6577 before wt46_mgsoftmax (rerun launches)


def test_to_dict_names_a_torch_step_only():
    assert Layout(dp=8, framework="fsdp2", zero=3, optimizer_step="torch-fused").to_dict(2)["optimizer_step"] == "torch-fused"
    assert "optimizer_step" not in Layout(dp=8, framework="fsdp2", zero=3).to_dict(2)


def test_simulate_takes_optimizer_step(capsys):
    """--optimizer-step on the command line: the optimizer's seconds 92 / 28 of the fused pass's; off FSDP2 exit 2."""
    import cli

    base = ["simulate", "--model", "llama3-8b", "--hardware", "h100-sxm", "--train", "--seq-len", "8192", "--batch", "2",
            "--attention", "flash", "--framework", "fsdp2", "--zero", "3", "--dp", "8", "--json"]
    seconds = simulate_optimizer_seconds(capsys, base, [[], ["--optimizer-step", "torch-foreach"]])
    assert seconds[1] == pytest.approx(seconds[0] * 92 / 28, rel=1e-9)
    assert cli.main(["simulate", "--model", "llama3-8b", "--train", "--framework", "megatron", "--dp", "8",
                     "--optimizer-step", "torch-foreach"]) == 2
    assert "needs --framework fsdp2" in capsys.readouterr().err
