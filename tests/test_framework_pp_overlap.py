"""The pipeline sends' overlap a framework gives when none is stated (costmodel/layout/overlap.py
framework_pp_overlap): Megatron-LM's overlap_p2p_comm is on by default on the interleaved schedule
('--no-overlap-p2p-communication', action='store_false', dest='overlap_p2p_comm', megatron/training/
arguments.py at c230e0d7 and d98e8a64d), so `simulate --framework megatron --schedule interleaved`
hides them unless --pp-overlap says otherwise; 1F1B and the other frameworks send blocking."""

import json

import cli
from costmodel.layout.overlap import framework_overlap, framework_pp_overlap
from costmodel.layout.spec import Layout

LAYOUT = ("simulate -m llama3-70b --train --framework megatron --tp 8 --pp 4 --dp 2 --microbatches 16 "
          "--hardware h100-sxm --json").split()


def _step(capsys, *extra: str) -> dict:
    assert cli.main([*LAYOUT, *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_megatron_interleaved_hides_its_sends_by_default_and_nothing_else_does():
    assert framework_pp_overlap("megatron", "interleaved", 4) == 1.0
    assert framework_pp_overlap("megatron", "1f1b", 4) == 0.0
    assert framework_pp_overlap("megatron", "interleaved", 1) == 0.0  # no pipeline, no sends
    assert framework_pp_overlap("deepspeed", "1f1b", 4) == 0.0
    assert framework_pp_overlap("fsdp2", "1f1b", 4) == 0.0
    # a stated share is kept, whatever the framework's; the other fields are the stated ones
    interleaved = Layout(tp=1, pp=4, dp=1, microbatches=8, framework="megatron", schedule="interleaved",
                         virtual_stages=2)
    assert framework_overlap(interleaved).pp == 1.0
    assert framework_overlap(interleaved, {"pp": 0.0}).pp == 0.0
    assert framework_overlap(interleaved, {"dp": 0.0}).dp == 0.0
    assert framework_overlap(Layout(tp=1, pp=4, dp=1, microbatches=8, framework="megatron")).pp == 0.0


def test_the_cli_default_is_megatrons_overlap_p2p_comm(capsys):
    """Llama 3 70B, TP 8 x PP 4 (VP 5) x DP 2, 16 micro-batches on H100s: the default equals
    --pp-overlap 1 (the sends hidden: 0 s exposed, 1.4938 s a step), --pp-overlap 0 exposes them
    (0.0333 s of sends, 1.5229 s a step: the figure the CLI gave before this default; 1.4927 and 1.5218 s
    before session 31's loss traffic, blocks/head.py fused_loss_bytes); each with
    --overlap-grad-reduce, the gradient reduction under the backward (Megatron-LM's default, after it,
    is tests/test_framework_dp_overlap.py's)."""
    interleaved = ["--schedule", "interleaved", "--virtual-stages", "5", "--overlap-grad-reduce"]
    default, hidden, exposed = _step(capsys, *interleaved), _step(capsys, *interleaved, "--pp-overlap", "1"), \
        _step(capsys, *interleaved, "--pp-overlap", "0")
    assert default["step"] == hidden["step"]
    assert default["inputs"]["overlap"]["pp"] == 1.0
    assert default["step"]["exposed_communication_seconds"]["pp"] == 0.0
    assert round(default["step"]["seconds"], 4) == 1.4799  # 1.4938 before session 43 (wt43_review)
    assert round(exposed["step"]["exposed_communication_seconds"]["pp"], 4) == 0.0333
    assert round(exposed["step"]["seconds"], 4) == 1.5090  # 1.5229 before session 43 (wt43_review)
    # 1F1B: Megatron-LM turns overlap_p2p_comm off without virtual stages; the sends stay exposed
    plain = _step(capsys)
    assert plain["inputs"]["overlap"]["pp"] == 0.0
    assert plain["step"]["exposed_communication_seconds"]["pp"] > 0.0


def test_published_rows_take_the_framework_default_unless_they_state_their_sends():
    """Every interleaved Megatron training row of costmodel/published_runs.json hides its pipeline
    sends (194 stating overlap pp 1, session 34's 43 DGX Cloud and MLPerf rows and session 37's two MLPerf v5.1 405B rows among them (overlap_p2p_comm true), Nemotron-4 340B's report row and AMD Primus's two Mixtral rows by
    the default: Primus's trainer_base.yaml sets overlap_p2p_comm true) but four that state them exposed:
    Llama 3 405B's two Table 4 rows and its GPU-hours row (the paper's asynchronous point-to-point
    sends not modelled) and NeMo 24.07's Nemotron-340B (its yaml's overlap_p2p_comm False)."""
    from reports.published_runs import other_runs_data, train_setup

    data = other_runs_data()
    hidden, exposed = [], []
    for run in data["runs"]:
        source = data["sources"][run["id"].split()[0]]
        if run["kind"] == "decode" or run.get("schedule", source.get("schedule")) != "interleaved":
            continue
        estimate, _, options = train_setup(run, source)
        if estimate.layout.framework != "megatron":
            continue
        (hidden if "overlap" in options and options["overlap"].pp == 1.0 else exposed).append(run["id"])
    assert sorted(exposed) == ["gpu-hours-llama3.1 405b 15T tokens", "llama3 405b 16k GPUs", "llama3 405b 8k GPUs",
                               "nemo-24.07 nemotron-340b 128xh100"]
    # session 37: MLPerf v5.1's two NVIDIA Llama 3.1 405B rows (overlap pp 1 stated); session 40: MLPerf v5.0's 12 405B
    # rows and v4.1's 5 and v3.0's 5 GPT-3 rows, interleaved with overlap_p2p_comm true (wt40_unseent)
    # session 41: DGX Cloud's 8 interleaved Grok-1 and Maverick rows (wt41_unseent2), the framework's default sends
    # session 45 (wt45_unseent): 11 interleaved Megatron-LM rows (CI 7B vp8 3, CI 12 x 512 vp3 6, the Llama example's 70B and 405B)
    # session 46 (wt46_unseent): the Megatron-Core MoE report's 9 interleaved rows, overlap pp 1 stated
    assert len(hidden) == 247
    assert {"nemotron-4 340b 6144 GPUs", "primus-projection mixtral-8x22b pp4 vp2 ep8 64xmi355x",
            "primus-projection-repo mixtral-8x22b mbs2 pp4 vp2 ep8 64xmi355x"} <= set(hidden)
