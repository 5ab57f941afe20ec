"""The ninth new-user round's defects (validate/FINDINGS.md "A new user's ninth round"), each
typed as the user typed it: a serving layout's expert all-to-alls printed as tensor-parallel
all-reduces, `--mtp` silently ignored by inference, a one-GPU training report that did not say
which attention its memory counts."""
import json

import pytest

import cli

EP_SERVE = ["simulate", "--model", "mixtral-8x7b", "--hardware", "h100-sxm", "--ep", "4", "--gpus", "8",
            "--prompt", "512", "--gen", "128", "--batch", "8"]


def _one_line(capsys):
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def _json(args, capsys):
    assert cli.main(args + ["--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_serving_ep_all_to_all_is_not_a_tp_all_reduce(capsys):
    """`simulate --ep 4 --gpus 8` (tp 1) printed "of which tp all-reduces 40.5 us": StepTime.token
    summed the stages' tp, ep and cp collectives under tp_all_reduce_seconds. At tp 1 there is no
    all-reduce; the 40.5 us are the experts' all-to-alls, now reported apart."""
    from costmodel.layout.rank import ParallelEstimate
    from costmodel.layout.timing import step_time

    r = _json(EP_SERVE, capsys)
    token, prefill = r["token"], r["prefill"]
    assert token["tp_all_reduce_seconds"] == 0.0 and prefill["tp_all_reduce_seconds"] == 0.0
    assert token["cp_seconds"] == 0.0 and token["pp_seconds"] == 0.0
    # the figure that was printed as the tp all-reduces (main at b587e21: 4.045570002785883e-05 s)
    assert token["ep_all_to_all_seconds"] == pytest.approx(4.045570002785883e-05, rel=1e-12)
    assert prefill["ep_all_to_all_seconds"] == pytest.approx(0.006808765562512759, rel=1e-12)
    assert token["seconds_per_token"] == pytest.approx(token["compute_seconds"] + token["ep_all_to_all_seconds"],
                                                       rel=1e-15)
    # the one rule: each stage's exposed "ep" of StepTime.stage, summed
    import costmodel
    cfg = costmodel.load_model("mixtral-8x7b")
    from costmodel.hardware import load_hardware
    from costmodel.layout import Layout
    from costmodel.workload import Workload
    workload = Workload(seq_len=512, gen_tokens=128, batch=8, dtype="bf16", precision="pure", attention="sdpa")
    layout = Layout(dp=8, ep=4, framework="deepspeed")
    timer = step_time(ParallelEstimate(cfg, workload, layout, phase="decode"), load_hardware("h100-sxm"))
    assert sum(timer.stage(s)["ep"] for s in timer.estimate.stages) == token["ep_all_to_all_seconds"]
    assert cli.main(EP_SERVE) == 0
    text = capsys.readouterr().out
    assert "tp 1 x pp 1 x dp 8 (ep 4), batch 8 per replica" in text
    assert "of which tp all-reduces 0 us, ep all-to-alls 6.81 ms, pipeline sends 0 us" in text
    assert "  of which tp all-reduces       0 us\n  ep all-to-alls             40.5 us\n" in text


def test_tp_serving_has_no_all_to_all_line(capsys):
    """A tensor-parallel layout without experts' parallelism keeps its one all-reduce line."""
    args = ["simulate", "--model", "llama3-8b", "--hardware", "h100-sxm", "--tp", "2", "--prompt", "512",
            "--gen", "16"]
    assert cli.main(args) == 0
    text = capsys.readouterr().out
    assert "ep all-to-alls" not in text and "of which tp all-reduces" in text
    token = _json(args, capsys)["token"]
    assert token["ep_all_to_all_seconds"] == 0.0 and token["tp_all_reduce_seconds"] > 0


@pytest.mark.parametrize("layout", [[], ["--tp", "8"]])
def test_mtp_without_train_is_refused(layout, capsys):
    """`simulate --model deepseek-v3 --mtp 1` without --train printed the same JSON as without it
    (with_mtp dropped it unless --train): MTP is a training module here, so inference refuses it as
    it refuses --seq-len."""
    args = ["simulate", "--model", "deepseek-v3", "--hardware", "h200", "--prompt", "512", "--gen", "64",
            "--mtp", "1", *layout]
    assert cli.main(args) == 2
    assert _one_line(capsys) == ("error: --mtp: training options, read only with --train; inference takes "
                                 "--prompt, --gen and --batch.")


def test_one_gpu_training_names_its_attention(capsys):
    """`simulate --train` without a layout counted eager attention's n x n tensors (124.09 GiB of
    activations for Llama 3 8B at 4,096) and its header named neither the code nor the kernel,
    while `--dp 1` (sdpa, 26.60 GiB) names both: the header now says impl and attention."""
    args = ["simulate", "--model", "llama3-8b", "--hardware", "h100-sxm", "--train", "--seq-len", "4096",
            "--batch", "1"]
    assert cli.main(args) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first == ("llama3-8b training on h100-sxm (bf16): seq_len 4096, batch 1, impl hf, attention eager, "
                     "recompute none")
    assert _json(args, capsys)["memory"]["activations"] == 133_235_294_220
