"""Experts padded to their capacity (Layout.pad_to_capacity, --pad-to-capacity: Megatron-Core's
moe_pad_expert_input_to_capacity beside moe_expert_capacity_factor; costmodel/layout/experts.py).

Source: NVIDIA/Megatron-LM d98e8a64dd megatron/core/transformer/moe/token_dispatcher.py: the all-to-all
dispatcher's drop_and_pad (lines 445-450, 517-536: capacity x E rows permuted and sent) and
_HybridEPManager's (lines 1113-1127: tokens_per_expert = capacity x ep on every local expert);
moe_utils.py get_capacity (ceil(tokens / experts x c)). Nemotron 3 Super's H100 recipe sets c = 1.10 with
padding (NVIDIA-NeMo/Megatron-Bridge ffeb5a7ae817 recipes/nemotronh/h100/nemotron_3_super.py lines 199-204).
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from costmodel.config import ConfigError, Workload
from costmodel.layout import Layout
from costmodel.layout.experts import expert_load
from costmodel.layout.rank import ParallelEstimate
from costmodel.presets import load_preset
from tests.cli_run import one_error_line

CARDS = "megatron-bridge-cards"
SUPER_H100 = ("nemotron-3-super pretrain bf16 64xh100", "nemotron-3-super perf bf16 64xh100")


def test_padded_experts_run_their_capacity_on_every_rank():
    padded = expert_load(8, 4, None, 1.25, True)
    assert (padded.factor, padded.kept, padded.sent, padded.padded) == (Fraction(5, 4), 1, Fraction(5, 4), True)
    # skewed and capped: expert 0 keeps 2/8 of the slots (19/20 kept in all); padded, every rank still runs
    # c S rows and sends c S (the unpadded most loaded rank: 7/5, sending only the kept 19/20)
    skewed = expert_load(8, 4, (3, 1, 1, 1, 1, 1, 1, 1), 2.0, True)
    assert (skewed.factor, skewed.kept, skewed.sent) == (2, Fraction(19, 20), 2)
    unpadded = expert_load(8, 4, (3, 1, 1, 1, 1, 1, 1, 1), 2.0)
    assert (unpadded.factor, unpadded.kept, unpadded.sent) == (Fraction(7, 5), Fraction(19, 20), Fraction(19, 20))


def _mixtral(**layout) -> ParallelEstimate:
    return ParallelEstimate(load_preset("mixtral-8x7b"), Workload(seq_len=64), Layout(dp=8, ep=8, zero=1, **layout))


def test_the_all_to_all_sends_the_padded_rows():
    """Per layer and micro-batch: 8 E bytes of counts, then dispatch and combine forward and backward of
    S slots of d bf16: padded at c = 1.25 the slots move 1.25 times (sent and received), the counts not."""
    plain, padded = _mixtral(), _mixtral(capacity_factor=1.25, pad_to_capacity=True)
    layers, experts, d, slots = 32, 8, 4096, 64 * 2
    counts = layers * 8 * experts
    tokens = layers * 2 * slots * 2 * d * 2  # (forward + backward) x S x (sent + received) x d x 2 bytes
    assert plain.to_dict()["communication"]["ep"]["all_to_all"] == counts + tokens
    assert padded.to_dict()["communication"]["ep"]["all_to_all"] == counts + tokens * 5 // 4
    assert padded.experts()["load_factor"] == 1.25 and padded.experts()["dropped_fraction"] == 0.0


def test_the_padded_rows_activations_are_kept():
    plain, padded = _mixtral(), _mixtral(capacity_factor=1.25, pad_to_capacity=True)
    saved = sum(count * plain.part(key, "expert_saved") for key, count in plain.layer_runs(plain.stages[0]).items())
    assert padded.per_rank["activations"] - plain.per_rank["activations"] == -(-saved // 4)  # ceil(saved / 4)


def test_the_flex_dispatcher_takes_a_padded_capacity_that_drops_nothing():
    cfg, work = load_preset("qwen3-30b-a3b"), Workload(seq_len=64)
    flex = dict(dp=8, ep=8, zero=1, framework="megatron", ep_dispatcher="hybridep")
    padded = ParallelEstimate(cfg, work, Layout(**flex, capacity_factor=1.1, pad_to_capacity=True))
    plain = ParallelEstimate(cfg, work, Layout(**flex))
    assert padded.load.factor == Fraction(11, 10)
    ep = lambda rank: {k: v for k, v in rank.to_dict()["communication"].items() if k.startswith("ep")}  # noqa: E731
    assert ep(padded) == ep(plain)  # HybridEP moves each token once; the padding is laid out on arrival
    with pytest.raises(ConfigError, match="balanced, dropless routing"):
        ParallelEstimate(cfg, work, Layout(**flex, capacity_factor=0.5, pad_to_capacity=True))


def test_padding_needs_a_capacity():
    with pytest.raises(ConfigError, match="give --capacity-factor too"):
        Layout(dp=8, ep=8, pad_to_capacity=True).check(load_preset("mixtral-8x7b"))
    with pytest.raises(ConfigError, match="pad_to_capacity must be true or false, got 'yes'"):
        Layout(dp=8, ep=8, capacity_factor=1.0, pad_to_capacity="yes").check(load_preset("mixtral-8x7b"))


def test_cli_refuses_in_one_line(capsys):
    base = ["simulate", "--model", "mixtral-8x7b", "--dp", "8", "--ep", "8"]
    line = one_error_line([*base, "--train", "--seq-len", "256", "--pad-to-capacity"], capsys)
    assert line.endswith("give --capacity-factor too.")
    line = one_error_line([*base, "--capacity-factor", "1", "--pad-to-capacity", "--gen", "2"], capsys)
    assert "--pad-to-capacity" in line and "read only with --train" in line


def test_nemotron_3_super_h100_recipe_pads_to_1_10():
    """The recipe's comment: '1.10x capacity gives each expert 10% headroom over the 5,632-token mean': the
    preset's 512 experts, top-22, at the row's 4,096 tokens a rank and EP 32, as tokens_per_expert counts them."""
    from reports.published_runs import other_runs_data, train_setup, train_tokens

    cfg = load_preset("nemotron-3-super")
    assert (cfg.n_experts, cfg.top_k) == (512, 22) and 4096 * 22 // 512 * 32 == 5632
    data = other_runs_data()
    runs, source = {r["id"]: r for r in data["runs"]}, data["sources"][CARDS]
    for name in SUPER_H100:
        run = runs[f"{CARDS} {name}"]
        assert (run["capacity_factor"], run["pad_to_capacity"], run["ep_dispatcher"]) == (1.1, True, "hybridep")
        estimate, _, _ = train_setup(run, source)
        assert estimate.load.factor == Fraction(11, 10) and estimate.load.kept == 1
    # the kernel model's tokens/s per GPU, padded (now) and with the two fields dropped (before: 3,169.7); 3,065.2
    # and 3,169.7 before session 41 timed HybridEP across H100 nodes at its README's rates (layout/hybridep_rates.py)
    run = runs[f"{CARDS} {SUPER_H100[0]}"]
    unpadded = {k: v for k, v in run.items() if k not in ("capacity_factor", "pad_to_capacity")}
    assert train_tokens(unpadded, source, "kernels") == pytest.approx(3445.5, abs=0.05)  # 3451.8 before session 43 (wt43_review); 3453.3 before wt46_mgsoftmax's recomputed launches
    # 3328.2 before session 43 (wt43_review); 3329.6 before wt46_mgsoftmax's recomputed launches
    assert train_tokens(run, source, "kernels") == pytest.approx(3322.3, abs=0.05)
