"""reports/: the seeds' claims checked on the cost tree, the claims command, and the tiny models'
measurements the report compares with the formulas.

Every number asserted here is written out with where it comes from, so a wrong formula or a lost
measurement fails a test.
"""

from __future__ import annotations

import json

import pytest

from tests.cli_run import run_main


# ---------------------------------------------------------------------------------------------
# The claims, from the cost tree


@pytest.fixture(scope="module")
def claims():
    from reports.claims import check_claims

    return {c.key: c for c in check_claims(measure=False)}


def test_every_claim_holds_on_the_tree(claims):
    assert len(claims) == 11
    assert [k for k, c in claims.items() if not c.holds] == []


def test_output_projection_claims(claims):
    # 32,000 x 512 multiplications per token (the seeds' 16.4M).
    assert claims["output-projection"].numbers["multiplications_per_token"] == 32_000 * 512 == 16_384_000
    # Six encoder layers at n = 50, per token: QKV + out 4 d^2, FFN 2 d d_ff, attention 2 n d
    # multiplications: 6 * (4*512^2 + 2*512*2048 + 2*50*512) = 19,181,568.
    assert claims["output-projection-vs-layers"].numbers["six_layers_multiplications_per_token"] == (
        6 * (4 * 512**2 + 2 * 512 * 2048 + 2 * 50 * 512)) == 19_181_568


def test_attention_matrices_six_gib(claims):
    # 12 layers x 8 heads x 4096^2 probabilities x 4 bytes = 6.0 GiB.
    assert claims["attention-matrices"].numbers["bytes"] == 12 * 8 * 4096**2 * 4 == 6_442_450_944
    assert 6_442_450_944 == 6 * 2**30


def test_llama_parameter_rule(claims):
    numbers = claims["llama2-7b-params"].numbers
    assert numbers["rule_layers"] == 12 * 32 * 4096**2 == 6_442_450_944
    assert numbers["rule_embeddings"] == 2 * 32000 * 4096 == 262_144_000
    assert numbers["exact"] == 6_738_415_616  # LlamaForCausalLM (docs/design.md)


def test_backward_and_training_ratios(claims):
    numbers = claims["backward-2x"].numbers
    assert numbers["backward"] == 2 * numbers["forward"]
    # GPT-2 at n = 1024: 2 n (L (4 d^2 + 2 d d_ff) + d V) + L 4 n^2 d, b = 1.
    n, L, d, d_ff, V = 1024, 12, 768, 3072, 50257
    assert numbers["forward"] == 2 * n * (L * (4 * d * d + 2 * d * d_ff) + d * V) + L * 4 * n * n * d
    assert claims["training-3x"].numbers["training"] == 3 * numbers["forward"]


def test_attention_vs_rnn_and_table1(claims):
    numbers = claims["attention-vs-rnn"].numbers
    assert numbers["attention_flops"] == 4 * 50**2 * 512 == 5_120_000
    assert numbers["recurrent_flops"] == 4 * 50 * 512**2 == 52_428_800
    assert numbers["breakeven_n"] == 512
    from reports.claims import table1

    rows = {r.layer.strip(): r for r in table1()}
    assert rows["self-attention"].flops_long == 4 * 4096**2 * 512
    assert rows["+ Q, K, V and output projections"].flops_translation == 4 * 50**2 * 512 + 8 * 50 * 512**2
    assert rows["convolutional (k = 3)"].flops_translation == 2 * 50 * 3 * 512**2
    assert rows["recurrent"].sequential == "O(n)"


def test_ffn_and_kv_claims(claims):
    assert claims["ffn-2x-projections"].numbers["ratio"] == "2"
    assert claims["kv-cache-size"].numbers["numbers"] == str(2 * 32 * 4096) + "*n"
    generation = claims["kv-cache-generation"].numbers
    assert generation["without_cache_leading"] == "4*L_dec*d/3"
    assert generation["with_cache_leading"] == "2*L_dec*d"


def test_claims_command_marks_and_exit_status(capsys, monkeypatch):
    code, out, _ = run_main(["claims", "--no-measure"], capsys)
    assert code == 0
    assert out.count("\u2713") == 11 and "\u2717" not in out
    assert "11 of 11 claims hold." in out and "Table 1" in out

    import reports.claims as claims_module

    original = claims_module.check_claims

    def one_fails(measure=True, progress=None):
        checked = original(measure=False)
        broken = claims_module.Claim("broken", "A claim that fails.", "test", "0", "", False)
        return [*checked, broken]

    monkeypatch.setattr(claims_module, "check_claims", one_fails)
    code, out, err = run_main(["claims", "--no-measure"], capsys)
    assert code == 1
    assert "\u2717 12. A claim that fails." in out
    assert err.strip() == "error: 1 of 12 claims fail: broken."


def test_claims_json(capsys):
    code, out, _ = run_main(["claims", "--no-measure", "--json"], capsys)
    assert code == 0
    data = json.loads(out)
    assert {c["key"]: c["holds"] for c in data}["attention-matrices"] is True
    assert {c["key"]: c["numbers"] for c in data}["attention-matrices"]["bytes"] == 6_442_450_944


# ---------------------------------------------------------------------------------------------
# Measurements (torch; tiny models on CPU tensors)


@pytest.mark.slow
@pytest.mark.parametrize("name, source", [("llama2-7b", 1), ("transformer-base", 7)])
def test_generation_flops_equal_the_measurement(name, source):
    from reports.generation import generation_curves
    from reports.measured import measure_generation, tiny
    from reports.series import load_model

    small = tiny(load_model(name))
    measured = measure_generation(small, 6, source)
    curves = generation_curves(small, 6, source)
    assert measured["without_cache"] == [int(x) for x in curves.without_cache_step]
    assert measured["with_cache"] == [int(x) for x in curves.with_cache_step]
    assert measured["with_cache"][0] == measured["without_cache"][0]  # the same prefill
    d, L, d_ff, V = 64, 2, small.d_ff, 101
    if name == "llama2-7b":
        # Step 5 with a cache: 2 L (q, k, v, o, 3 d d_ff) + attention 4 L t d + head 2 d V.
        assert measured["with_cache"][4] == 2 * L * (4 * d * d + 3 * d * d_ff) + 4 * L * 5 * d + 2 * d * V
    else:
        # Step 5 with a cache: self-attention q, k, v, o (4 d^2) and cross-attention q, o (2 d^2)
        # for one token, attention over 5 self and 7 cross keys, FFN 2 d d_ff, head 2 d V.
        assert measured["with_cache"][4] == (
            2 * L * (6 * d * d + 2 * d * d_ff) + 4 * L * (5 + 7) * d + 2 * d * V)
        # Without a cache step 5 re-runs the decoder over 5 tokens, cross K, V over 7 source tokens.
        assert measured["without_cache"][4] == (
            2 * 5 * L * (6 * d * d + 2 * d * d_ff) + 2 * 7 * L * 2 * d * d
            + 4 * L * (5 * 5 + 5 * 7) * d + 2 * 5 * d * V)


@pytest.mark.slow
def test_validation_points_are_exact_for_llama():
    from reports.measured import validation_points
    from reports.series import load_model

    points = validation_points([load_model("llama2-7b")], progress=lambda message: None,
                               full_size=False)
    quantities = {p.quantity for p in points}
    assert quantities == {"params", "forward_flops", "training_flops", "activation_bytes",
                          "kv_cache_bytes"}
    assert [p for p in points if p.measured != p.formula] == []
    assert {p.model: p.measured for p in points if p.quantity == "params"}["llama2-7b"] == 6_738_415_616
