"""A new user's tenth round (issue 18, session 17): the ninth round's leftovers and the model types
this session added, typed with --config as a user brings them (validate/FINDINGS.md "A new user's
tenth round"). Each test failed before its fix; the numbers are exact."""

from __future__ import annotations

import json

import pytest

from tests.cli_run import run_main
from costmodel.api import load_model
from costmodel.errors import ConfigError
from costmodel.hardware import load_hardware


def test_plan_states_the_sdpa_fallback_once_as_a_note(capsys):
    """plan tried each framework and printed one "warning:" a framework; estimate and simulate say
    it once as "note:". One note now, naming the frameworks whose default gives way."""
    code, out, err = run_main(["plan", "--model", "gemma2-2b", "--gpus", "2", "--seq-len", "512", "--top", "1"], capsys)
    assert code == 0
    lines = err.strip().splitlines()
    assert lines == ["note: attention eager: gemma2's Hugging Face class has no sdpa path in transformers 5.24, "
                     "so deepspeed's and fsdp2's default sdpa gives way to eager, what transformers picks for it "
                     "when none is requested; --attention picks another."]
    # one framework named: the sentence estimate and simulate print
    code, out, err = run_main(["plan", "--model", "gemma2-2b", "--gpus", "2", "--seq-len", "512", "--top", "1",
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
    code, out, err = run_main(args, capsys)
    assert code == 2 and out == ""
    assert err.strip() == (f"error: layout: multi-token prediction (--mtp) is Megatron-Core's; {framework} trains "
                           "the Hugging Face class, which builds no MTP depths; add --framework megatron.")


def test_mtp_under_megatron_still_runs(capsys):
    code, out, _ = run_main(["estimate", "--model", "llama3-8b", "--seq-len", "1024", "--dp", "2", "--framework",
                         "megatron", "--mtp", "1", "--json"], capsys)
    # 8,030,261,248 + one depth's 251,678,720 (the ninth round's figure)
    assert code == 0 and json.loads(out)["params"]["total"] == 8_281_939_968


def test_estimate_names_a_hybrids_layers_inside_the_column(capsys):
    """"per decoder.mamba layer" overflowed the 19-character column; the kind names the row now."""
    code, out, _ = run_main(["estimate", "--model", "nemotron-3-nano", "--seq-len", "1024"], capsys)
    assert code == 0
    rows = [line for line in out.splitlines() if line.startswith("  per ")]
    assert rows == ["  per mamba layer         38.74 M", "  per attention layer     23.40 M",
                    "  per moe layer            1.30 B"]
    code, out, _ = run_main(["estimate", "--model", "t5-small"], capsys)
    assert [line for line in out.splitlines() if line.startswith("  per ")] == [
        "  per encoder layer        3.15 M", "  per decoder layer        4.20 M"]


def test_a_router_with_one_replica_is_refused(capsys):
    code, out, err = run_main(["serve", "--model", "llama3-8b", "--router", "least-outstanding", "--requests", "4",
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


# Released config.json files as a user brings them (the fields that shape the model; copied from the
# released files as quoted in public repositories where one was found, else written from the model
# card). Each total is exact: transformers 5.24's class built from the same dict on the meta device
# counts the same (sum of numel, measured in this session); the card's figure in billions beside it.
def _granite_hybrid(hidden, heads, kv, experts, top_k, shared, expert_width, mamba_heads, **extra):
    types = ["attention" if i in (5, 15, 25, 35) else "mamba" for i in range(40)]  # 36 mamba, 4 attention
    return dict(model_type="granitemoehybrid", architectures=["GraniteMoeHybridForCausalLM"], hidden_size=hidden,
                num_hidden_layers=40, num_attention_heads=heads, num_key_value_heads=kv, num_local_experts=experts,
                num_experts_per_tok=top_k, shared_intermediate_size=shared, intermediate_size=expert_width,
                mamba_n_heads=mamba_heads, mamba_d_head=64, mamba_d_state=128, mamba_n_groups=1, mamba_d_conv=4,
                mamba_expand=2, vocab_size=100352, tie_word_embeddings=True, position_embedding_type="nope",
                max_position_embeddings=131072, layer_types=types, hidden_act="silu", **extra)


def _granite_moe(hidden, layers, heads, experts):
    return dict(model_type="granitemoe", architectures=["GraniteMoeForCausalLM"], hidden_size=hidden,
                num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=8, intermediate_size=512,
                num_local_experts=experts, num_experts_per_tok=8, vocab_size=49155, tie_word_embeddings=True,
                max_position_embeddings=4096, hidden_act="silu", embedding_multiplier=12.0,
                attention_multiplier=0.015625, residual_multiplier=0.22, logits_scaling=6.0)


RELEASED = {
    # ibm-granite/granite-4.0-h-small: "32B total, 9B active" (model card)
    "granite-4.0-h-small": (_granite_hybrid(4096, 32, 8, 72, 10, 1536, 768, 128, embedding_multiplier=12,
                                            attention_multiplier=0.0078125, residual_multiplier=0.22, logits_scaling=8),
                            32_207_337_984, "32"),
    # ibm-granite/granite-4.0-h-tiny: "7B total, 1B active"
    "granite-4.0-h-tiny": (_granite_hybrid(1536, 12, 4, 64, 6, 1024, 512, 48), 6_939_037_248, "7"),
    # ibm-granite/granite-4.0-h-micro: dense, "3B"; its config ships num_local_experts 0 and
    # num_experts_per_tok 0 (refused before the fix)
    "granite-4.0-h-micro": (_granite_hybrid(2048, 32, 8, 0, 0, 8192, 8192, 64), 3_191_396_096, "3"),
    # ibm-ai-platform/Bamba-9B: 9.78B (model card)
    "bamba-9b": (dict(model_type="bamba", hidden_size=4096, num_hidden_layers=32, num_attention_heads=32,
                      num_key_value_heads=8, intermediate_size=14336, mamba_n_heads=128, mamba_d_head=64,
                      mamba_d_state=128, mamba_n_groups=1, mamba_expand=2, mamba_d_conv=4,
                      attn_layer_indices=[9, 18, 27], vocab_size=128256, tie_word_embeddings=False),
                 9_780_235_392, "9.78"),
    # mistralai/Mamba-Codestral-7B-v0.1: "Number of parameters: 7,285,403,648" (model card)
    "mamba-codestral-7b": (dict(model_type="mamba2", hidden_size=4096, num_hidden_layers=64, num_heads=128,
                                head_dim=64, expand=2, n_groups=8, state_size=128, vocab_size=32768,
                                tie_word_embeddings=False), 7_285_403_648, "7.285403648"),
    # state-spaces/mamba2-2.7b (vocabulary 50277 padded to a multiple of 16: 50288), tied: 2.7B
    "mamba2-2.7b": (dict(model_type="mamba2", hidden_size=2560, num_hidden_layers=64, num_heads=80, head_dim=64,
                         expand=2, n_groups=1, state_size=128, vocab_size=50288, tie_word_embeddings=True),
                    2_702_599_680, "2.7"),
    # ibm-granite/granite-3.0-3b-a800m and -1b-a400m: 3.3B and 1.3B total (model cards)
    "granite-3.0-3b-a800m": (_granite_moe(1536, 32, 24, 40), 3_298_793_472, "3.3"),
    "granite-3.0-1b-a400m": (_granite_moe(1024, 24, 16, 32), 1_334_628_352, "1.3"),
    # baidu/ERNIE-4.5-21B-A3B-PT: "21B total, 3B activated" (model card)
    "ernie-4.5-21b-a3b": (dict(model_type="ernie4_5_moe", hidden_size=2560, intermediate_size=12288,
                               num_attention_heads=20, num_key_value_heads=4, head_dim=128, num_hidden_layers=28,
                               vocab_size=103424, use_bias=False, tie_word_embeddings=True, moe_num_experts=64,
                               moe_layer_start_index=1, moe_layer_end_index=27, moe_intermediate_size=1536, moe_k=6,
                               moe_layer_interval=1, moe_num_shared_experts=2, hidden_act="silu"),
                          21_825_437_888, "21.8"),
}


@pytest.mark.parametrize("name", RELEASED)
def test_a_released_config_reads_to_its_published_size(name, tmp_path):
    fields, exact, published = RELEASED[name]
    from costmodel.config import Workload
    from costmodel.estimation import Estimate

    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(fields))
    total = Estimate(load_model(str(path)), Workload(seq_len=64)).total("params")
    assert total == exact
    decimals = len(published.partition(".")[2])  # the card's figure, in billions, at its own rounding
    assert f"{total / 1e9:.{decimals}f}" == published


def test_granite_micro_runs_every_command(tmp_path, capsys):
    """The dense Granite 4.0-H (no experts) through estimate, training, decode and plan --serve."""
    path = tmp_path / "granite-4.0-h-micro.json"
    path.write_text(json.dumps(RELEASED["granite-4.0-h-micro"][0]))
    for args in (["estimate"], ["simulate", "--train", "--seq-len", "1024"], ["simulate", "--prompt", "256",
                                                                              "--gen", "8"],
                 ["plan", "--serve", "--gpus", "1", "--top", "1"]):
        code, out, err = run_main([*args, "--config", str(path)], capsys)
        assert code == 0 and "Traceback" not in err, (args, err)
    code, out, _ = run_main(["estimate", "--config", str(path), "--json"], capsys)
    weights = json.loads(out)["memory"]["weights"]
    assert weights == 2 * 3_191_396_096


def test_no_fallback_note_for_a_model_without_attention(tmp_path, capsys):
    """mamba2's class runs neither sdpa nor flash (facts.json, its PreTrainedModel flags), and has
    no attention layer: the frameworks' kernels give way to nothing, so no note."""
    path = tmp_path / "mamba2-2.7b.json"
    path.write_text(json.dumps(RELEASED["mamba2-2.7b"][0]))
    code, _, err = run_main(["plan", "--config", str(path), "--gpus", "2", "--seq-len", "512", "--top", "1"], capsys)
    assert code == 0 and "note:" not in err
    code, _, err = run_main(["simulate", "--config", str(path), "--train", "--dp", "2", "--seq-len", "512"], capsys)
    assert code == 0 and "note:" not in err
