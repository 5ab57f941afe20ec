"""A new user's tenth round (issue 18, session 17): the ninth round's leftovers and the model types
this session added, typed with --config as a user brings them (validate/FINDINGS.md "A new user's
tenth round"). Each test failed before its fix; the numbers are exact."""

from __future__ import annotations

import json

import pytest

import cli
from costmodel.api import load_model
from costmodel.errors import ConfigError
from costmodel.hardware import load_hardware


def _run(args, capsys):
    code = cli.main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_plan_states_the_sdpa_fallback_once_as_a_note(capsys):
    """plan tried each framework and printed one "warning:" a framework; estimate and simulate say
    it once as "note:". One note now, naming the frameworks whose default gives way."""
    code, out, err = _run(["plan", "--model", "gemma2-2b", "--gpus", "2", "--seq-len", "512", "--top", "1"], capsys)
    assert code == 0
    lines = err.strip().splitlines()
    assert lines == ["note: attention eager: gemma2's Hugging Face class has no sdpa path in transformers 5.24, "
                     "so deepspeed's and fsdp2's default sdpa gives way to eager, what transformers picks for it "
                     "when none is requested; --attention picks another."]
    # one framework named: the sentence estimate and simulate print
    code, out, err = _run(["plan", "--model", "gemma2-2b", "--gpus", "2", "--seq-len", "512", "--top", "1",
                           "--framework", "fsdp2"], capsys)
    assert err.strip().splitlines() == [
        "note: attention eager: gemma2's Hugging Face class has no sdpa path in transformers 5.24, so fsdp2's "
        "default sdpa gives way to eager, what transformers picks for it when none is requested; --attention "
        "picks another."]


@pytest.mark.parametrize("framework", ["deepspeed", "fsdp2"])
@pytest.mark.parametrize("command", ["estimate", "simulate"])
def test_mtp_under_a_hugging_face_framework_is_refused(command, framework, capsys):
    """Hugging Face's classes build no MTP depths (DeepseekV3ForCausalLM drops the checkpoint's
    layer 61 on load), so --mtp under DeepSpeed or FSDP2 is one sentence, exit 2."""
    args = [command, "--model", "llama3-8b", "--seq-len", "1024", "--dp", "2", "--framework", framework,
            "--mtp", "1"] + (["--train"] if command == "simulate" else [])
    code, out, err = _run(args, capsys)
    assert code == 2 and out == ""
    assert err.strip() == (f"error: layout: multi-token prediction (--mtp) is Megatron-Core's; {framework} trains "
                           "the Hugging Face class, which builds no MTP depths; add --framework megatron.")


def test_mtp_under_megatron_still_runs(capsys):
    code, out, _ = _run(["estimate", "--model", "llama3-8b", "--seq-len", "1024", "--dp", "2", "--framework",
                         "megatron", "--mtp", "1", "--json"], capsys)
    # 8,030,261,248 + one depth's 251,678,720 (the ninth round's figure)
    assert code == 0 and json.loads(out)["params"]["total"] == 8_281_939_968


def test_estimate_names_a_hybrids_layers_inside_the_column(capsys):
    """"per decoder.mamba layer" overflowed the 19-character column; the kind names the row now."""
    code, out, _ = _run(["estimate", "--model", "nemotron-3-nano", "--seq-len", "1024"], capsys)
    assert code == 0
    rows = [line for line in out.splitlines() if line.startswith("  per ")]
    assert rows == ["  per mamba layer         38.74 M", "  per attention layer     23.40 M",
                    "  per moe layer            1.30 B"]
    code, out, _ = _run(["estimate", "--model", "t5-small"], capsys)
    assert [line for line in out.splitlines() if line.startswith("  per ")] == [
        "  per encoder layer        3.15 M", "  per decoder layer        4.20 M"]


def test_a_router_with_one_replica_is_refused(capsys):
    code, out, err = _run(["serve", "--model", "llama3-8b", "--router", "least-outstanding", "--requests", "4",
                           "--rate", "1"], capsys)
    assert code == 2 and out == ""
    assert err.strip() == ("error: --router least-outstanding spreads arrivals over replicas; there is one replica, "
                           "so nothing is routed: add --replicas (or a larger --disaggregate pool), or leave --router out.")
    from costmodel.serving.api import serve

    with pytest.raises(ConfigError, match="each pool has one replica"):
        serve("llama3-8b", rate=1.0, requests=4, router="round-robin", disaggregate=(1, 1))


def test_roofline_step_reads_a_norms_weight_whole_under_tp():
    """The roofline step time divided every leaf by tp, a norm's weight too; vLLM's RMSNorm is whole
    on every GPU (the layout model's split, what serve's memory reads since the ninth round).
    Llama 3 8B: 65 norms (32 layers x 2 + the final) x 4,096 x 2 bytes = 532,480 B a rank at
    tp 1 and tp 2 (was 266,240 at tp 2); the GEMMs' weights halve (13,958,643,712 -> 6,979,321,856)."""
    from costmodel.serving.steptime import RooflineStepTime

    cfg, hw = load_model("llama3-8b"), load_hardware("h100-sxm")
    for tp, matmul in ((1, 13_958_643_712), (2, 6_979_321_856)):
        step = RooflineStepTime(cfg, hw, tp=tp)
        q = step._evaluate("tokens", 0, 0).reshape(-1, 4) / tp  # n = 0: the weights alone
        assert (round(q[:, 1].sum()), round(q[:, 3].sum())) == (matmul, 65 * 4096 * 2)
