"""Parallel layouts (costmodel/layout): the ZeRO paper's model states, Korthikanti et al.'s Table 2
term by term, and formula == measurement on PyTorch's own distributed code (FSDP2, DTensor tensor
and sequence parallelism, the three pipeline schedules), on gloo and the fake process group.

The measured runs are validate/distributed's (tests/distributed_cases.py; the 2-rank gloo run is
shared with tests/test_distributed_measure.py); the model equals them to the byte for the most
loaded rank (data-parallel rank 0, which holds every padded row).
"""

from __future__ import annotations

import json
import math

import pytest

import cli
from costmodel.config import ConfigError, ModelConfig, Workload
from costmodel.layout import Layout, ParallelEstimate
from costmodel.presets import load_preset
from tests.distributed_cases import TINY, TINY_PP, TINY_TP, WIDE_TP
from tests.published import PUBLISHED

REFERENCE_FP32 = Workload(seq_len=8, batch=2, dtype="fp32", impl="reference", precision="pure")


def parallel(cfg: ModelConfig, workload: Workload, **layout) -> ParallelEstimate:
    return ParallelEstimate(cfg, workload, Layout(**layout))


# ---------------------------------------------------------------------------------------------
# ZeRO (Rajbhandari et al. 2020, section 5.1): model states per device with 2 + 2 + 12 bytes


@pytest.mark.parametrize("name", ["llama2-7b", "gpt2", "mistral-7b", "bert-base-uncased", "t5-small"])
@pytest.mark.parametrize("dp", [1, 3, 8, 64])
def test_zero_model_states_per_device(name, dp):
    """Psi parameters on N = dp devices: stage 0 keeps 16 Psi, P_os 4 Psi + 12 Psi/N, P_os+g
    2 Psi + 14 Psi/N, P_os+g+p 16 Psi/N. Padding: DeepSpeed partitions the flat buffer evenly,
    ceil(Psi/N) per device (its alignment beyond that is not modelled). At stages 2 and 3
    DeepSpeed's step() adds the fp32 gradient partition, 4 Psi/N, beyond the paper (issue 22)."""
    cfg = load_preset(name)
    psi = PUBLISHED[name]
    shard = math.ceil(psi / dp)
    expected = {0: 16 * psi, 1: 4 * psi + 12 * shard, 2: 2 * psi + 14 * shard + 4 * shard,
                3: 16 * shard + 4 * shard}
    for zero, states in expected.items():
        rank = parallel(cfg, Workload(seq_len=8), dp=dp, zero=zero).to_dict()["per_rank"]
        assert rank["weights"] + rank["gradients"] + rank["optimizer"] == states, zero
    # Megatron's distributed optimizer: 2 + 4 + 12/N bytes, on its vocabulary padded to a
    # multiple of 128 (GPT-2: 50,304 rows, not 50,257).
    megatron = parallel(cfg, Workload(seq_len=8), dp=dp, zero=1, framework="megatron").to_dict()["per_rank"]
    padded = megatron["weights"] // 2
    vocabulary = -(-cfg.vocab_size // 128) * 128
    tables = 1 if cfg.tie_embeddings or cfg.head != "lm" else 2
    assert padded == psi + tables * (vocabulary - cfg.vocab_size) * cfg.d_model
    assert (megatron["gradients"], megatron["optimizer"]) == (4 * padded, 12 * math.ceil(padded / dp))


# ---------------------------------------------------------------------------------------------
# Korthikanti et al. 2022, Table 2, under the megatron activation profile

GPT = ModelConfig(name="gpt-like", vocab_size=51200, d_model=768, n_heads=12, d_ff=3072,
                  n_decoder_layers=8, max_positions=4096, position="learned", norm="layernorm",
                  activation="gelu", dropout=0.1, family="gpt")


@pytest.mark.parametrize("t", [1, 2, 4])
@pytest.mark.parametrize("s, b", [(2048, 1), (1024, 3)])
def test_korthikanti_table_2_per_layer(t, s, b):
    h, a = GPT.d_model, GPT.n_heads
    sbh, attention = s * b * h, 5 * a * s * s * b  # 5 a s^2 b
    rows = {  # (sp, recompute): bytes per layer
        (False, "none"): 10 * sbh + 24 * sbh // t + attention // t,
        (True, "none"): 34 * sbh // t + attention // t,
        (False, "selective"): 10 * sbh + 24 * sbh // t,
        (True, "selective"): 34 * sbh // t,
        (False, "full"): 2 * sbh,
    }
    for (sp, recompute), expected in rows.items():
        if sp and t == 1:
            continue
        workload = Workload(seq_len=s, batch=b, dtype="bf16", impl="megatron", recompute=recompute)
        estimate = parallel(GPT, workload, tp=t, sp=sp, framework="megatron")
        assert estimate.numbers["layer.decoder.saved"] == expected, (sp, recompute)


@pytest.mark.parametrize("schedule, v", [("1f1b", 1), ("interleaved", 2), ("interleaved", 4)])
def test_korthikanti_pipeline_first_stage(schedule, v):
    """The first stage holds the activations of L layers under 1F1B (p micro-batches of L/p
    layers) and L (1 + (p - 1)/(p v)) under interleaving (Korthikanti et al. 2022, section 4.2.3)."""
    p, m, s, b = 4, 16, 2048, 1
    cfg = GPT.replace(n_decoder_layers=32)
    workload = Workload(seq_len=s, batch=b, dtype="bf16", impl="megatron")
    estimate = parallel(cfg, workload, pp=p, microbatches=m, schedule=schedule, virtual_stages=v,
                        framework="megatron")
    per_layer = estimate.numbers["layer.decoder.saved"]
    first = estimate.per_stage[0]
    layers_held = sum(k * layers for k, layers in zip(first["micro_batches_in_flight"],
                                                      first["virtual_stage_layers"]))
    if schedule == "1f1b":
        assert layers_held == 32
    else:
        assert layers_held * v * p == 32 * (p * v + p - 1)  # L (1 + (p - 1)/(p v)), times p v
    held = first["micro_batches_in_flight"]
    assert first["activations"] == (layers_held * per_layer + sum(held) * estimate.numbers.get("shared.saved", 0)
                                    + held[0] * estimate.numbers["embedding.saved"])


# ---------------------------------------------------------------------------------------------
# formula == measurement: FSDP2 (validate/distributed/fsdp.py)


def test_fsdp2_state_and_collectives_on_gloo(gloo):
    measured = gloo["fsdp_auto"][0]
    rank = parallel(TINY, REFERENCE_FP32, dp=2, zero=3, framework="fsdp2", device="cpu").per_stage[0]
    assert rank["weights"] == measured["state"]["parameters"]["storage"]
    assert rank["gradients"] == measured["state"]["gradients"]["storage"]
    assert rank["optimizer"] == measured["state"]["optimizer"]["elements"]
    communication = measured["communication"]
    assert rank["communication"]["dp"] == {
        "all_gather": communication["forward"]["dp"]["all_gather"] + communication["backward"]["dp"]["all_gather"],
        "reduce_scatter": communication["backward"]["dp"]["reduce_scatter"],
    }
    # Buffers: the root and one layer gathered, one all-gather and one reduce-scatter buffer
    # (FSDPMemTracker inside a layer's backward, FINDINGS 10.2: 4W(G_root + G_layer) + 2 x 4W
    # G_layer), and RoPE's cos and sin (2 x 64 positions x d_h 8 x 4 bytes). Where the peak of a
    # step falls, and so which of them it holds, depends on the run: the model counts them all.
    root, layer = 2 * 50 * 48 + 24, 5832  # padded shard elements at W = 2 (FINDINGS 10.2)
    assert rank["buffers"] == 4 * 2 * (root + layer) + 2 * 4 * 2 * layer + 2 * 64 * 8 * 4
    peak = measured["memory_peak"]
    assert rank["buffers"] >= peak["Unsharded Param"] + peak["All Gather"] + peak["Reduce Scatter"] + peak["Buffer"]


def test_fsdp2_mixed_precision_resharding_everything_on_gloo(gloo):
    """bf16 all-gathers (param_dtype), fp32 reduce-scatters (reduce_dtype), fp32 state; the root
    gathered again in backward with reshard_after_forward=True."""
    measured = gloo["fsdp_mp_reshard"][0]
    workload = REFERENCE_FP32.replace(dtype="bf16")
    rank = parallel(TINY, workload, dp=2, zero=3, framework="fsdp2", device="cpu",
                    reshard_after_forward=True).per_stage[0]
    assert rank["weights"] == measured["state"]["parameters"]["storage"]
    communication = measured["communication"]
    assert rank["communication"]["dp"] == {
        "all_gather": communication["forward"]["dp"]["all_gather"] + communication["backward"]["dp"]["all_gather"],
        "reduce_scatter": communication["backward"]["dp"]["reduce_scatter"],
    }


@pytest.mark.parametrize("world", [4, 16])
def test_fsdp2_uneven_shards_on_the_fake_process_group(world):
    from validate.distributed.fsdp import FsdpCase, measure_fsdp
    from validate.distributed.launch import run_fake

    measured = run_fake(measure_fsdp, world, [0], FsdpCase(TINY, memory_tracker=False))[0]
    rank = parallel(TINY, REFERENCE_FP32, dp=world, zero=3, framework="fsdp2", device="cpu").per_stage[0]
    assert rank["weights"] == measured["state"]["parameters"]["storage"]
    assert rank["optimizer"] == measured["state"]["optimizer"]["elements"]
    assert rank["communication"]["dp"]["reduce_scatter"] == measured["communication"]["backward"]["dp"]["reduce_scatter"]


# ---------------------------------------------------------------------------------------------
# formula == measurement: DTensor tensor and sequence parallelism


@pytest.mark.parametrize("case, sp", [("tp", False), ("tp_sp", True)])
def test_tensor_parallel_on_gloo(gloo, case, sp):
    measured = gloo[case][0]
    rank = parallel(TINY_TP, REFERENCE_FP32, tp=2, sp=sp, zero=3, framework="fsdp2", device="cpu",
                    loss_parallel=False).per_stage[0]
    state = measured["state"]
    assert rank["weights"] == state["parameters"]["storage"]
    assert rank["gradients"] == state["gradients"]["elements"]
    assert rank["optimizer"] == state["optimizer"]["elements"]
    assert rank["activations"] == measured["saved_bytes"]
    total: dict[str, int] = {}
    for phase in measured["communication"].values():
        for kind, value in phase.get("tp", {}).items():
            total[kind] = total.get(kind, 0) + value
    assert rank["communication"]["tp"] == total


def test_tensor_parallel_four_ranks_with_loss_parallel_on_the_fake_process_group():
    from validate.distributed.launch import run_fake
    from validate.distributed.tensor_parallel import TpCase, measure_tp

    measured = run_fake(measure_tp, 4, [0], TpCase(WIDE_TP, sequence_parallel=True, loss_parallel=True))[0]
    rank = parallel(WIDE_TP, REFERENCE_FP32, tp=4, sp=True, zero=3, framework="fsdp2", device="cpu",
                    loss_parallel=True).per_stage[0]
    assert rank["weights"] == measured["state"]["parameters"]["storage"]
    assert rank["activations"] == measured["saved_bytes"]


@pytest.mark.parametrize("sp", [False, True])
def test_hugging_face_llama_tensor_parallel_on_the_fake_process_group(sp):
    """HF's LlamaForCausalLM under DTensor: its own profile (fp32 RMSNorm upcasts, RoPE's cos/sin
    per forward), split as the reference model is."""
    from validate.distributed.launch import run_fake
    from validate.distributed.tensor_parallel import TpCase, measure_tp

    measured = run_fake(measure_tp, 2, [0], TpCase(TINY_TP, implementation="hf", sequence_parallel=sp))[0]
    rank = parallel(TINY_TP, REFERENCE_FP32.replace(impl="hf"), tp=2, sp=sp, zero=3, framework="fsdp2",
                    device="cpu", loss_parallel=False).per_stage[0]
    assert rank["activations"] == measured["saved_bytes"] == (63_076 if sp else 78_596)
    assert (rank["weights"], rank["gradients"], rank["optimizer"]) == (
        measured["state"]["parameters"]["storage"], measured["state"]["gradients"]["elements"],
        measured["state"]["optimizer"]["elements"])


def test_fsdp2_mixed_precision_four_ranks_on_the_fake_process_group():
    """MixedPrecisionPolicy(bf16, fp32) at W = 4: fp32 shards, bf16 all-gathers, fp32
    reduce-scatters (the model computes in bf16: --dtype bf16)."""
    from validate.distributed.fsdp import FsdpCase, measure_fsdp
    from validate.distributed.launch import run_fake

    measured = run_fake(measure_fsdp, 4, [0], FsdpCase(TINY, mixed_precision=True, memory_tracker=False))[0]
    rank = parallel(TINY, REFERENCE_FP32.replace(dtype="bf16"), dp=4, zero=3, framework="fsdp2",
                    device="cpu").per_stage[0]
    state = measured["state"]
    assert (rank["weights"], rank["gradients"], rank["optimizer"]) == (
        state["parameters"]["storage"], state["gradients"]["storage"], state["optimizer"]["elements"])
    phases = measured["communication"]
    assert rank["communication"]["dp"] == {
        "all_gather": phases["forward"]["dp"]["all_gather"] + phases["backward"]["dp"]["all_gather"],
        "reduce_scatter": phases["backward"]["dp"]["reduce_scatter"]}


@pytest.mark.slow
def test_full_size_llama2_7b_fsdp2_and_tensor_parallel():
    """Llama-2-7B under FakeTensorMode: FSDP2 at W = 8 (the reference model) and HF's class under
    DTensor at t = 8, against the model at the same sizes."""
    from validate.distributed.fsdp import FsdpCase, measure_fsdp
    from validate.distributed.launch import run_fake
    from validate.distributed.tensor_parallel import TpCase, measure_tp

    llama = load_preset("llama2-7b")
    workload = Workload(seq_len=64, batch=1, dtype="fp32", impl="reference", precision="pure")
    measured = run_fake(measure_fsdp, 8, [7], FsdpCase(llama, batch=1, seq_len=64, fake=True,
                                                       memory_tracker=False))[7]
    rank = parallel(llama, workload, dp=8, zero=3, framework="fsdp2", device="cpu").per_stage[0]
    assert rank["weights"] == measured["state"]["parameters"]["storage"] == 3_369_207_808
    assert rank["communication"]["dp"]["all_gather"] == sum(
        phase["dp"]["all_gather"] for phase in measured["communication"].values() if phase)
    measured = run_fake(measure_tp, 8, [0], TpCase(llama, batch=1, seq_len=64, implementation="hf",
                                                    fake=True))[0]
    rank = parallel(llama, workload.replace(impl="hf"), tp=8, zero=3, framework="fsdp2", device="cpu",
                    loss_parallel=False).per_stage[0]
    assert rank["activations"] == measured["saved_bytes"] == 276_710_668
    assert rank["gradients"] == measured["state"]["gradients"]["elements"] == 3_828_891_648


# ---------------------------------------------------------------------------------------------
# The newer families (issue 14) in layouts: experts, latent attention, q/k norms, windows,
# post-sublayer norms and soft-capping, measured on Hugging Face's classes


def _family(case: str, **changes) -> ModelConfig:
    """One of tests/family_odd_configs.py's configs ("family-index"), read as config.json is."""
    from costmodel.hf import from_hf_config
    from tests.family_odd_configs import ODD_FAMILY_CONFIGS

    family, index = case.rsplit("-", 1)
    return from_hf_config(dict(ODD_FAMILY_CONFIGS[family][int(index)], **changes), case)


HF_FP32 = REFERENCE_FP32.replace(impl="hf")


@pytest.mark.parametrize("case", ["mixtral-0", "qwen2_moe-2", "deepseek_v3-0", "gemma2-0", "qwen3-0"])
def test_newer_families_under_fsdp2_on_the_fake_process_group(case):
    """FSDP2 at W = 4 pads each parameter's dim 0: the experts' (E, 2f, d) and (E, d, f) tensors
    by experts, the router (E, d), the latent projections by their output rows."""
    from validate.distributed.fsdp import FsdpCase, measure_fsdp
    from validate.distributed.launch import run_fake

    cfg = _family(case)
    measured = run_fake(measure_fsdp, 4, [0], FsdpCase(cfg, implementation="hf", memory_tracker=False))[0]
    rank = parallel(cfg, HF_FP32, dp=4, zero=3, framework="fsdp2", device="cpu").per_stage[0]
    assert (rank["weights"], rank["gradients"], rank["optimizer"]) == (
        measured["state"]["parameters"]["storage"], measured["state"]["gradients"]["storage"],
        measured["state"]["optimizer"]["storage"])
    phases = measured["communication"]
    assert rank["communication"]["dp"] == {
        "all_gather": phases["forward"]["dp"]["all_gather"] + phases["backward"]["dp"]["all_gather"],
        "reduce_scatter": phases["backward"]["dp"]["reduce_scatter"]}


@pytest.mark.parametrize("case, sp", [("qwen3-0", False), ("qwen3-0", True), ("gemma2-0", False),
                                      ("gemma2-3", False)])
def test_newer_families_under_tensor_parallelism_on_the_fake_process_group(case, sp):
    """DTensor TP at t = 2 on HF's Qwen3 (q/k norms over each local head) and Gemma 2 (post-
    sublayer norms, soft-capped scores; the soft-capped logits are gathered first, so the cap runs
    on the whole vocabulary: -0 and 3 differ in that). Gemma 2 under SP fails in transformers
    (its embedding scale multiplies a DTensor by a tensor)."""
    from validate.distributed.launch import run_fake
    from validate.distributed.tensor_parallel import TpCase, measure_tp

    cfg = _family(case, intermediate_size=38, tie_word_embeddings=False)  # the plans need both
    measured = run_fake(measure_tp, 2, [0], TpCase(cfg, implementation="hf", sequence_parallel=sp))[0]
    rank = parallel(cfg, HF_FP32, tp=2, sp=sp, zero=3, framework="fsdp2", device="cpu",
                    loss_parallel=False).per_stage[0]
    assert rank["activations"] == measured["saved_bytes"]
    assert (rank["weights"], rank["gradients"], rank["optimizer"]) == (
        measured["state"]["parameters"]["storage"], measured["state"]["gradients"]["elements"],
        measured["state"]["optimizer"]["elements"])
    collectives: dict[str, int] = {}
    for phase in measured["communication"].values():
        for kind, value in (phase or {}).get("tp", {}).items():
            collectives[kind] = collectives.get(kind, 0) + value
    assert rank["communication"]["tp"] == collectives


def test_layers_of_different_kinds_go_to_their_stages():
    """Gemma 2's sliding layers are every other one from layer 0 and DeepSeek-V3's first three
    are dense: each pipeline stage holds its own mix, and the stages' parameters add up to the
    model's (the last stage's copy of a tied embedding aside)."""
    gemma = load_preset("gemma2-9b")  # 42 layers, 21 sliding, tied embeddings
    workload = Workload(seq_len=4096, batch=1)
    estimate = parallel(gemma, workload, pp=4, microbatches=8, framework="megatron")
    assert [dict(kinds[0]) for kinds in (stage.kinds for stage in estimate.stages)] == [
        {"layer.decoder.sliding": 6, "layer.decoder.full": 5},  # layers 0-10
        {"layer.decoder.full": 6, "layer.decoder.sliding": 5},  # 11-21
        {"layer.decoder.sliding": 5, "layer.decoder.full": 5},  # 22-31
        {"layer.decoder.sliding": 5, "layer.decoder.full": 5}]  # 32-41
    params = sum(estimate.on_stage(stage, "params") for stage in estimate.stages)
    assert params == costmodel_params(gemma) == 9_241_705_984
    deepseek = load_preset("deepseek-v3")  # 61 layers, the first 3 dense
    estimate = parallel(deepseek, workload, pp=4, microbatches=8, framework="megatron")
    assert [dict(kinds[0]) for kinds in (stage.kinds for stage in estimate.stages)] == [
        {"layer.decoder.dense": 3, "layer.decoder.moe": 13}, {"layer.decoder.moe": 15},
        {"layer.decoder.moe": 15}, {"layer.decoder.moe": 15}]
    assert sum(estimate.on_stage(stage, "params") for stage in estimate.stages) == costmodel_params(deepseek)
    # The most loaded rank is not an end one here: every stage is compared.
    loads = [estimate.memory(stage)["total"] for stage in estimate.stages]
    assert estimate.per_rank["total"] == max(loads)


def costmodel_params(cfg: ModelConfig) -> int:
    import costmodel

    return costmodel.estimate(cfg).to_dict()["params"]["total"]


def test_experts_split_by_tensor_parallelism_as_a_dense_ffn():
    """Without expert parallelism every rank holds every expert at d_x / tp wide: a rank's
    parameters are those of the model with the heads, the widths and the vocabulary divided."""
    mixtral = load_preset("mixtral-8x7b")
    rank = parallel(mixtral, Workload(seq_len=4096, batch=1, precision="pure"), tp=4).per_stage[0]
    quarter = mixtral.replace(n_heads=8, n_kv_heads=2, d_ff=3584, d_expert=3584, vocab_size=8000,
                              d_head=128)
    # By hand: 32 layers x (attention 4096 x (1024 + 2 x 256) + 1024 x 4096, experts 8 x 3 x 4096
    # x 3584, router 8 x 4096, two norms 4096) + embedding and head 2 x 8000 x 4096 + final norm.
    by_hand = 32 * (4096 * 1536 + 1024 * 4096 + 8 * 3 * 4096 * 3584 + 8 * 4096 + 2 * 4096) \
        + 2 * 8000 * 4096 + 4096
    assert rank["weights"] == 2 * costmodel_params(quarter) == 2 * by_hand == 2 * 11_676_684_288


def test_layouts_refuse_what_the_newer_families_do_not_model():
    workload = Workload(seq_len=4096, batch=1)
    with pytest.raises(ConfigError, match="sequence parallelism with a mixture of experts"):
        parallel(load_preset("mixtral-8x7b"), workload, tp=2, sp=True)
    with pytest.raises(ConfigError, match="quantized weights"):
        parallel(load_preset("llama3-8b"), workload.replace(weight_dtype="int4"), tp=2)
    with pytest.raises(ConfigError, match="does not divide the experts' FFN width"):
        parallel(load_preset("qwen3-8b").replace(name="odd", n_experts=4, top_k=2, d_expert=100), workload, tp=8)


# ---------------------------------------------------------------------------------------------
# formula == measurement: torch.distributed.pipelining


@pytest.mark.parametrize("case, schedule, v", [("pp_gpipe", "gpipe", 1), ("pp_1f1b", "1f1b", 1),
                                               ("pp_interleaved", "interleaved", 2)])
def test_pipeline_schedules_on_gloo(gloo, case, schedule, v):
    workload = Workload(seq_len=8, batch=1, dtype="fp32", impl="reference", precision="pure")
    estimate = parallel(TINY_PP, workload, pp=2, microbatches=4, schedule=schedule, virtual_stages=v,
                        zero=3, framework="fsdp2", device="cpu")
    for rank, measured in enumerate(gloo[case]):
        row = estimate.per_stage[rank]
        assert row["activations"] == measured["rank_saved_peak_bytes"], (case, rank)
        assert row["communication"] == measured["communication"]  # {"pp": {"send": .., "recv": ..}}


# ---------------------------------------------------------------------------------------------
# The command line: the JSON contract, invalid layouts


def test_estimate_json_contract_with_a_layout(capsys):
    args = ["estimate", "--model", "llama2-70b", "--seq-len", "4096", "--batch", "1", "--tp", "8", "--pp",
            "4", "--dp", "2", "--sp", "--microbatches", "16", "--schedule", "1f1b", "--zero", "1",
            "--framework", "megatron", "--recompute", "selective", "--json"]
    assert cli.main(args) == 0
    data = json.loads(capsys.readouterr().out)
    p = data["parallel"]
    assert p["layout"]["gpus"] == 64 and p["layout"]["global_batch"] == 32
    assert set(p["per_rank"]) >= {"weights", "gradients", "optimizer", "activations", "buffers", "total"}
    assert [s["layers"] for s in p["stages"]] == [20, 20, 20, 20]
    assert [s["micro_batches_in_flight"] for s in p["stages"]] == [[4], [3], [2], [1]]
    assert set(p["communication"]) == {"tp", "dp", "pp"}
    # Megatron's distributed optimizer: bf16 weights (2), fp32 main gradients (4), 12/dp.
    first = p["stages"][0]
    assert first["gradients"] == 2 * first["weights"]
    assert cli.main(["estimate", "--model", "llama2-7b", "--json"]) == 0
    assert "parallel" not in json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("args, words", [
    (["--tp", "3"], "does not divide the query heads (64)"),
    (["--tp", "16"], "does not divide the key/value heads"),
    (["--pp", "81"], "must not exceed the layers"),
    (["--pp", "4", "--schedule", "interleaved", "--virtual-stages", "2", "--microbatches", "6"], "multiple of pp"),
    (["--tp", "2", "--dp", "2", "--gpus", "8"], "not the 8 GPUs"),
    (["--zero", "2", "--framework", "megatron"], "megatron supports --zero 0, 1, 3"),
    (["--sp"], "needs --tp > 1"),
    (["--pp", "2", "--stage-layers", "10,10"], "add up to 20"),
])
def test_invalid_layouts_are_one_line(args, words, capsys):
    assert cli.main(["estimate", "--model", "llama2-70b", *args]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and words in err


def test_layouts_refuse_what_they_cannot_model():
    with pytest.raises(ConfigError, match="encoder-decoders"):
        Layout(pp=2).check(load_preset("t5-small"))
    with pytest.raises(ConfigError, match="untied"):
        ParallelEstimate(load_preset("gpt2"), Workload(seq_len=8), Layout(pp=2, framework="fsdp2", zero=3))


def test_a_negative_edge_stage_names_the_zero_it_may_hold(capsys):
    """The first and last pipeline stages may hold 0 layers (Llama 3's split), so a negative one
    says so; the message once said every stage must be positive."""
    assert cli.main(["estimate", "--model", "llama2-7b", "--pp", "2", "--stage-layers", "-1,33"]) == 2
    assert "the first and last stages' layers must be 0 or a positive integer, got -1" in capsys.readouterr().err
