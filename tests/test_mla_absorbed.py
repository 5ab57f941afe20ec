"""Latent attention's absorbed form (DeepSeek-V2 section 2.1.2; vLLM's MLA backend) as the tree's
own leaves: the naive form's numbers stay what they were, the absorbed form's FLOPs and cache reads
are the hand-derived ones, and serving uses it by default."""

import sys
from fractions import Fraction
from pathlib import Path

import pytest
import sympy as sp

from costmodel import symbols as S
from costmodel.config import ConfigError, Workload
from costmodel.hf import from_hf_config
from costmodel.tree import CostModel, model_values, profile_for

sys.path.insert(0, str(Path(__file__).parent))
from family_odd_configs import _deepseek_v3  # noqa: E402

QUANTITIES = ("flops_matmul", "bytes_matmul", "flops_other", "bytes_other", "kv_cache_bytes")
# The odd DeepSeek-V3 (tests/family_odd_configs.py): d 48, h 6, 3 layers, r_q 20, r_kv 12,
# d_r 4, d_h - d_r 6, d_v 7.
D, H, LAYERS, RQ, RKV, DR, NOPE, DV = 48, 6, 3, 20, 12, 4, 6, 7
B, N, C, E = 3, 5, 37, 2


@pytest.fixture(scope="module")
def cfg():
    return from_hf_config(_deepseek_v3()[0], "odd-deepseek-v3")


def totals(cfg, phase: str, attention: str, mla: str | None, n: int = N, c: int = C) -> list[int]:
    changes = {} if mla is None else {"mla": mla}
    profile = profile_for(cfg, None, attention=attention, dropout=False, kv_cache="static", **changes)
    model = CostModel(cfg, profile, phase=phase)
    at = {**{k: sp.Integer(v) for k, v in model_values(cfg).items()},
          S.b: B, S.n: n, S.c: c, S.T: 0, S.s: n, S.e: E}
    return [int(model.total(q).xreplace(at)) for q in QUANTITIES]


# The tree's numbers before the absorbed form existed (branch i19 at d051da5), b 3, n 5, c 37, bf16.
BEFORE = {
    ("prefill", "eager"): [1453500, 244092, 65445, 116742, 1440],
    ("prefill", "flash"): [1453500, 238692, 65445, 100542, 1440],
    ("decode", "eager"): [955980, 292236, 25185, 44622, 10656],
    ("decode", "flash"): [955980, 284244, 25185, 20646, 10656],
    ("chunk", "eager"): [2286396, 389244, 125925, 220422, 10656],
    ("chunk", "flash"): [2286396, 349284, 125925, 100542, 10656],
}


# The odd config's routed experts (2 MoE layers of E 8, top 3, d_x 16): since the expected count of
# experts touched replaced min(E, T k) (blocks/experts.py experts_touched), each MoE layer reads
# E (1 - (1 - k/E)^T) experts' weights, not min(E, T k): T = b = 3 tokens in a decode step, b n = 15
# in a prefill or a chunk.
MOE_LAYERS, EXPERTS, TOP_K, EXPERT_WIDTH = 2, 8, 3, 16


def experts_read_before_less_now(tokens: int) -> Fraction:
    """Bytes the MoE layers read fewer than before: min(E, T k) - E (1 - (1 - k/E)^T) experts,
    each 3 d d_x weights of e bytes, in each MoE layer."""
    now = EXPERTS * (1 - (1 - Fraction(TOP_K, EXPERTS)) ** tokens)
    return (min(EXPERTS, tokens * TOP_K) - now) * 3 * D * EXPERT_WIDTH * E * MOE_LAYERS


@pytest.mark.parametrize("phase,attention", sorted(BEFORE))
def test_naive_is_the_tree_as_it_was(cfg, phase, attention):
    """Every quantity as before the absorbed form, but the routed experts' weight bytes (decode:
    min(8, 9) = 8 experts then, 8 (1 - (5/8)^3) = 6.05 now: 18,000 bytes fewer)."""
    tokens = B if phase == "decode" else B * N
    before = list(BEFORE[phase, attention])
    before[1] = int(before[1] - experts_read_before_less_now(tokens))
    assert experts_read_before_less_now(3) == 18000  # 1.953125 experts x 2,304 x 2 bytes x 2 layers
    assert totals(cfg, phase, attention, None) == before
    assert totals(cfg, phase, attention, "naive") == before


def attention_flops(q_tokens: int, keys: int, absorbed: bool) -> int:
    """Per layer, one sequence: the latent projections, the core and the output projection."""
    query = 2 * q_tokens * (D * RQ + RQ * H * (NOPE + DR))
    latent = 2 * q_tokens * D * (RKV + DR)
    out = 2 * q_tokens * H * DV * D
    if absorbed:  # W_UK on the queries, W_UV on the output; scores in r_kv + d_r, values r_kv
        return (query + latent + 2 * q_tokens * H * RKV * (NOPE + DV)
                + 2 * H * q_tokens * keys * (RKV + DR) + 2 * H * q_tokens * keys * RKV + out)
    # naive: every key's latent up-projected to h (nope + d_v); scores in d_h, values d_v
    return (query + latent + 2 * keys * RKV * H * (NOPE + DV)
            + 2 * H * q_tokens * keys * (NOPE + DR) + 2 * H * q_tokens * keys * DV + out)


@pytest.mark.parametrize("phase,n", [("decode", 1), ("chunk", N)])
def test_absorbed_flops_are_the_hand_derived_ones(cfg, phase, n):
    naive = totals(cfg, phase, "flash", "naive")[0]
    absorbed = totals(cfg, phase, "flash", "absorbed")[0]
    saved = LAYERS * B * (attention_flops(n, C, False) - attention_flops(n, C, True))
    assert absorbed == naive - saved
    assert (phase, absorbed) in (("decode", 393408), ("chunk", 1967040))


def test_absorbed_decode_reads_each_cached_latent_once(cfg):
    # A fused kernel reads r_kv + d_r per key per layer (the values are the latent's first r_kv);
    # nothing else grows with the context.
    at = [totals(cfg, "decode", "flash", "absorbed", n=1, c=c)[1] for c in (C, C + 1)]
    assert at[1] - at[0] == LAYERS * E * B * (RKV + DR)
    naive = [totals(cfg, "decode", "flash", "naive", n=1, c=c)[1] for c in (C, C + 1)]
    assert naive[1] - naive[0] > at[1] - at[0]


def test_cache_and_training_do_not_change(cfg):
    assert totals(cfg, "decode", "flash", "absorbed")[4] == BEFORE["decode", "flash"][4]
    naive = CostModel(cfg, profile_for(cfg, Workload(mla="naive")), phase="train")
    absorbed = CostModel(cfg, profile_for(cfg, Workload(mla="absorbed")), phase="train")
    assert naive.total("flops_matmul") == absorbed.total("flops_matmul")


def test_bad_form_is_refused():
    with pytest.raises(ConfigError, match="mla"):
        Workload(mla="folded")


def test_serving_runs_the_absorbed_form_by_default(cfg):
    from costmodel.hardware import load_hardware
    from costmodel.serving.replica import build_replica
    from costmodel.serving.steptime import StepTime, serving_profile

    hardware = load_hardware("h100-sxm")
    _, step, setup = build_replica(cfg, hardware, num_blocks=64, cuda_graphs="off", sampling=None)  # the forward
    assert setup["mla"] == "absorbed"
    naive = StepTime(cfg, hardware, profile=serving_profile(cfg, mla="naive"))
    absorbed = StepTime(cfg, hardware, profile=serving_profile(cfg, mla="absorbed"))
    assert step.seconds([1, 1], [50, 60]) == absorbed.seconds([1, 1], [50, 60])
    assert naive.seconds([1] * 64, [32768] * 64) > absorbed.seconds([1] * 64, [32768] * 64)
    with pytest.raises(ConfigError, match="--mla must be naive or absorbed"):
        build_replica(cfg, hardware, mla="folded")


def test_serve_command_takes_mla(tmp_path, capsys):
    import json

    from cli import main

    path = tmp_path / "config.json"
    path.write_text(json.dumps(_deepseek_v3()[0]))
    args = ["serve", "--config", str(path), "--rate", "20", "--requests", "20", "--prompt", "24",
            "--output", "8", "--num-blocks", "64", "--json"]
    runs = {}
    for form in ("absorbed", "naive"):
        assert main([*args, "--mla", form]) == 0
        runs[form] = json.loads(capsys.readouterr().out)
    assert runs["absorbed"]["setup"]["mla"] == "absorbed" and runs["naive"]["setup"]["mla"] == "naive"
    assert main([*args, "--mla", "folded"]) == 2


def test_simulate_takes_mla(tmp_path, capsys):
    import json

    from cli import main

    path = tmp_path / "config.json"
    path.write_text(json.dumps(_deepseek_v3()[0]))
    args = ["simulate", "--config", str(path), "--prompt", "40", "--gen", "8", "--json"]
    flops = {}
    for form in ("naive", "absorbed"):
        assert main([*args, "--mla", form]) == 0
        flops[form] = json.loads(capsys.readouterr().out)
    assert flops["absorbed"] != flops["naive"]
    assert main([*args]) == 0 and json.loads(capsys.readouterr().out) == flops["naive"]  # transformers' form


@pytest.mark.parametrize("command", [
    ["simulate", "--prompt", "40", "--gen", "8"],
    ["serve", "--rate", "1", "--requests", "2"],
    ["plan", "--serve", "--gpus", "1"],
])
def test_mla_on_a_model_without_latent_attention_is_one_line(command, capsys):
    """--mla typed for Llama was dropped without a word; now it is refused, and left untyped it is fine."""
    from cli import main

    args = [command[0], "--model", "llama3-8b", "--hardware", "h100-sxm", *command[1:]]
    assert main([*args, "--mla", "naive"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: --mla: llama3-8b has no latent attention (its config has no kv_lora_rank), so there is "
                   "no form to choose; the option is for DeepSeek-V2/V3-style models."]
    assert main(args) == 0


def test_plan_serve_layouts_use_the_absorbed_form(cfg):
    from costmodel.hardware import load_hardware
    from costmodel.layout.plan import plan_serving

    # the odd config with a long context (at 48 keys the step is all launch overhead)
    long = from_hf_config(dict(_deepseek_v3()[0], max_position_embeddings=65536, kv_lora_rank=256,
                               num_attention_heads=16), "odd-deepseek-v3-long")
    hardware = load_hardware("h100-sxm")
    token = {form: plan_serving(long, hardware, 1, 4, 32768, 8, "bf16", mla=form)["feasible"][0]
             ["time_per_output_token"] for form in ("naive", "absorbed")}
    default = plan_serving(long, hardware, 1, 4, 32768, 8, "bf16")["feasible"][0]["time_per_output_token"]
    assert default == token["absorbed"] < token["naive"]


def test_naive_serving_step_reads_the_latent_weights_once(cfg):
    # With compute free, a decode step's busy time is its bytes over the bandwidth: k sequences'
    # step equals the decode tree's bytes at b = k (weights once), not k times the MLA weights.
    import dataclasses

    from costmodel.hardware import load_hardware
    from costmodel.serving.steptime import StepTime, serving_profile

    base = load_hardware("h100-sxm")
    memory_bound = dataclasses.replace(base, flops_per_s={k: 1e30 for k in base.flops_per_s},
                                       vector_flops_per_s=1e30, overhead_s_per_block=0.0,
                                       efficiency={"compute": 1.0, "memory": 1.0})
    profile = serving_profile(cfg, mla="naive")
    step = StepTime(cfg, memory_bound, profile=profile, time_model="roofline")
    model = CostModel(cfg, profile, phase="decode")
    for k, c in ((1, 9), (4, 20)):
        at = {**{s: sp.Integer(v) for s, v in model_values(cfg).items()}, S.b: k, S.n: 1, S.c: c, S.T: 0,
              S.s: 1, S.e: 2}
        moved = int((model.total("bytes_matmul") + model.total("bytes_other")).xreplace(at))
        assert step.seconds([1] * k, [c] * k) * memory_bound.bandwidth_bytes_per_s == pytest.approx(moved, rel=1e-12)


def test_naive_serving_step_reads_the_latent_weights_once_with_the_kernel_model(cfg):
    # The kernel model's decode step of k naive-MLA sequences equals its decode tree's leaves at
    # b = k (the up-projection's weights read once), not k single-sequence steps.
    from costmodel.hardware import load_hardware
    from costmodel.kernel_time import KernelTimer, inference_subs, leaves_time
    from costmodel.serving.steptime import StepTime, serving_profile

    hardware = load_hardware("h100-sxm")
    profile = serving_profile(cfg, mla="naive")
    step = StepTime(cfg, hardware, profile=profile)
    assert step.time_model == "kernels"
    leaves = CostModel(cfg, profile, phase="decode").leaves
    for k, c in ((1, 9), (4, 20), (3, 257)):
        expected = leaves_time(leaves, inference_subs(cfg, "bf16", k, 1, context=c), KernelTimer(hardware, "bf16", "flash"))
        assert step.seconds([1] * k, [c] * k) == pytest.approx(expected.seconds, rel=1e-12)
    assert step.seconds([1] * 4, [20] * 4) < 4 * step.seconds([1], [20])
