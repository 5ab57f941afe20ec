"""ZeRO-Offload and ZeRO-Infinity for full training (costmodel/offload.py): device, host and NVMe
bytes and PCIe traffic per rank, and DeepSpeed's own estimators beside them.

DeepSpeed does not install on every machine, so its estimators' outputs are recorded here as data:
produced by deepspeed 0.19.8 (the PyPI sdist, imported on the CPU with DS_ACCELERATOR=cpu) with
    from deepspeed.runtime.zero.stage_1_and_2 import estimate_zero2_model_states_mem_needs as z2
    from deepspeed.runtime.zero.stage3 import estimate_zero3_model_states_mem_needs as z3
    z2(total_params, gpus_per_node, nodes, cpu_offload)
    z3(total_params, largest_layer_params, gpus_per_node, nodes, cpu_offload, cpu_offload_params, zero_init)
for llama3-8b, llama3-70b, gpt2, llama2-7b and gpt2-xl's parameter counts.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from cli import cli
from reports.text import binary_bytes
from costmodel.config import ConfigError, Workload
from costmodel.estimation import Estimate
from costmodel.layout import Layout
from costmodel.offload import deepspeed_zero2, deepspeed_zero3
from costmodel.presets import load_preset

# (total_params, gpus_per_node, nodes, cpu_offload, (host bytes per node, bytes per GPU))
DEEPSPEED_ZERO2 = [
    (8030261248, 8, 1, True, (385452539904, 16060522496)),
    (8030261248, 8, 1, False, (385452539904, 34128610304)),
    (70553706496, 8, 4, True, (13546311647232, 141107412992)),
    (70553706496, 8, 4, False, (3386577911808, 180793872896)),
    (124439808, 1, 1, True, (2986555392, 248879616)),
    (124439808, 1, 1, False, (746638848, 2488796160)),
    (6738415616, 4, 3, True, (485165924352, 13476831232)),
    (6738415616, 4, 3, False, (161721974784, 23584454656)),
    (1557611200, 2, 1, True, (37382668800, 3115222400)),
    (1557611200, 2, 1, False, (18691334400, 17133723200)),
]
# (total, largest_layer, gpus_per_node, nodes, cpu_offload, cpu_offload_params, zero_init, (host, GPU, largest bytes))
DEEPSPEED_ZERO3 = [
    (8030261248, 525336576, 8, 1, True, True, True, (216817053696, 2101346304, 2101346304)),
    (8030261248, 525336576, 8, 1, True, True, False, (385452539904, 2101346304, 2101346304)),
    (8030261248, 525336576, 8, 1, True, False, True, (192726269952, 4108911616, 2101346304)),
    (8030261248, 525336576, 8, 1, True, False, False, (385452539904, 4108911616, 2101346304)),
    (8030261248, 525336576, 8, 1, False, False, True, (25216155648, 20169434112, 2101346304)),
    (8030261248, 525336576, 8, 1, False, False, False, (385452539904, 20169434112, 2101346304)),
    (70553706496, 1050673152, 8, 4, True, True, True, (476237518848, 4202692608, 4202692608)),
    (70553706496, 1050673152, 8, 4, True, True, False, (3386577911808, 4202692608, 4202692608)),
    (70553706496, 1050673152, 8, 4, True, False, True, (423322238976, 8612299264, 4202692608)),
    (70553706496, 1050673152, 8, 4, True, False, False, (3386577911808, 8612299264, 4202692608)),
    (70553706496, 1050673152, 8, 4, False, False, True, (50432311296, 43889152512, 4202692608)),
    (70553706496, 1050673152, 8, 4, False, False, False, (3386577911808, 43889152512, 4202692608)),
    (124439808, 38597376, 1, 1, True, True, True, (3359874816, 154389504, 154389504)),
    (124439808, 38597376, 1, 1, True, True, False, (3359874816, 154389504, 154389504)),
    (124439808, 38597376, 1, 1, True, False, True, (2986555392, 403269120, 154389504)),
    (124439808, 38597376, 1, 1, True, False, False, (2986555392, 403269120, 154389504)),
    (124439808, 38597376, 1, 1, False, False, True, (231584256, 2394306048, 154389504)),
    (124439808, 38597376, 1, 1, False, False, False, (746638848, 2394306048, 154389504)),
    (6738415616, 131072000, 4, 3, True, True, True, (60645740544, 524288000, 524288000)),
    (6738415616, 131072000, 4, 3, True, True, False, (161721974784, 524288000, 524288000)),
    (6738415616, 131072000, 4, 3, True, False, True, (53907324928, 1647357269, 524288000)),
    (6738415616, 131072000, 4, 3, True, False, False, (161721974784, 1647357269, 524288000)),
    (6738415616, 131072000, 4, 3, False, False, True, (3145728000, 10631911424, 524288000)),
    (6738415616, 131072000, 4, 3, False, False, False, (161721974784, 10631911424, 524288000)),
    (1557611200, 80411200, 2, 1, True, True, True, (42055502400, 321644800, 321644800)),
    (1557611200, 80411200, 2, 1, True, True, False, (42055502400, 321644800, 321644800)),
    (1557611200, 80411200, 2, 1, True, False, True, (37382668800, 1879256000, 321644800)),
    (1557611200, 80411200, 2, 1, True, False, False, (37382668800, 1879256000, 321644800)),
    (1557611200, 80411200, 2, 1, False, False, True, (964934400, 14340145600, 321644800)),
    (1557611200, 80411200, 2, 1, False, False, False, (18691334400, 14340145600, 321644800)),
]


@pytest.mark.parametrize("case", DEEPSPEED_ZERO2)
def test_deepspeed_zero2_estimator_as_deepspeed_computes_it(case):
    *args, expected = case
    assert deepspeed_zero2(*args) == expected


@pytest.mark.parametrize("case", DEEPSPEED_ZERO3)
def test_deepspeed_zero3_estimator_as_deepspeed_computes_it(case):
    *args, expected = case
    assert deepspeed_zero3(*args) == expected


def parallel(model: str, **layout) -> dict:
    estimate = Estimate(load_preset(model), Workload(seq_len=2048, batch=1), Layout(**layout))
    return estimate.to_dict()["parallel"]


P_8B = 8_030_261_248  # llama3-8b's parameters (Hugging Face's LlamaForCausalLM)
S_8B = P_8B // 8  # each of 8 ranks' partition: 1,003,782,656


def test_zero_infinity_on_nvme_exact_bytes():
    p = parallel("llama3-8b", dp=8, zero=3, offload="params", offload_device="nvme")
    assert p["per_rank"]["weights"] == p["per_rank"]["gradients"] == p["per_rank"]["optimizer"] == 0
    o = p["offload"]
    assert o["partition_params"] == S_8B == 1_003_782_656
    assert o["host_bytes_per_rank"] == 4 * S_8B  # the fp32 gradient partition
    assert o["nvme_bytes_per_rank"] == (12 + 2) * S_8B  # fp32 master + moments, bf16 weights
    assert o["host_bytes_per_node"] == 8 * 4 * S_8B
    assert o["pcie_bytes_per_step"] == (2 * 2 + 2) * S_8B == 6_022_695_936  # weights read twice, grads down
    assert o["nvme_bytes_per_step"] == (2 * 12 + 3 * 2) * S_8B == 30_113_479_680


@pytest.mark.parametrize("offload, per_param", [("optimizer", 16), ("params", 18)])
def test_zero3_host_per_node_is_deepspeeds_before_its_buffer_factor(offload, per_param):
    """DeepSpeed's zero_init row: 16 (or 18 with parameters) bytes per parameter per node, x1.5."""
    p = parallel("llama3-8b", dp=8, zero=3, offload=offload)
    ours, theirs = p["offload"]["host_bytes_per_node"], p["deepspeed_estimator"]
    assert ours == per_param * P_8B
    assert ours * 3 // 2 == theirs["host_bytes_per_node"]
    assert theirs["largest_layer_params"] == 525_336_576  # the embedding table, 128,256 x 4,096
    if offload == "optimizer":  # on the GPU: the bf16 partition (theirs adds 4 x the largest layer)
        assert p["per_rank"]["weights"] + 4 * 525_336_576 == theirs["bytes_per_gpu"]


def test_zero2_offload_keeps_bf16_weights_on_the_gpu_as_deepspeed_says():
    p = parallel("llama3-8b", dp=4, zero=2, offload="optimizer")
    assert p["per_rank"]["weights"] == 2 * P_8B == p["deepspeed_estimator"]["bytes_per_gpu"]
    assert p["per_rank"]["gradients"] == p["per_rank"]["optimizer"] == 0
    # One node of 4 GPUs: DeepSpeed's max(4 x gpus, 16) x 1.5 is ours x 1.5.
    assert p["offload"]["host_bytes_per_node"] * 3 // 2 == p["deepspeed_estimator"]["host_bytes_per_node"]
    assert p["offload"]["pcie_bytes_per_step"] == (2 + 2) * P_8B // 4


def test_zero1_offload_keeps_the_full_gradients():
    plain, offloaded = parallel("llama3-8b", dp=2, zero=1), parallel("llama3-8b", dp=2, zero=1, offload="optimizer")
    assert offloaded["per_rank"]["gradients"] == plain["per_rank"]["gradients"] == 2 * P_8B
    assert offloaded["per_rank"]["optimizer"] == 0 < plain["per_rank"]["optimizer"]
    assert "offload" not in plain and "deepspeed_estimator" not in plain


def test_host_per_node_counts_the_ranks_on_a_node():
    p = parallel("llama3-8b", dp=16, zero=3, offload="optimizer", gpus_per_node=4)
    assert p["offload"]["ranks_per_node"] == 4 and p["offload"]["nodes"] == 4
    assert p["offload"]["host_bytes_per_node"] == 4 * 16 * (P_8B // 16)
    assert p["deepspeed_estimator"]["host_bytes_per_node"] == deepspeed_zero3(P_8B, 525_336_576, 4, 4, True, False)[0]


@pytest.mark.parametrize("layout, words", [
    (dict(dp=2, zero=2, offload="params"), "needs --zero 3"),
    (dict(dp=2, offload="optimizer"), "needs ZeRO"),
    (dict(dp=2, zero=2, offload="optimizer", offload_device="nvme"), "nvme needs --zero 3"),
    (dict(dp=2, zero=1, offload_device="nvme"), "--offload-device needs --offload"),
    (dict(dp=2, zero=1, gpus_per_node=4), "--gpus-per-node needs --offload"),
    (dict(dp=2, zero=1, offload="optimizer", framework="megatron"), "use --framework deepspeed"),
])
def test_offloads_deepspeed_refuses_are_refused(layout, words):
    with pytest.raises(ConfigError, match=words):
        Layout(**layout)


def test_estimate_offload_options_and_fit(tmp_path):
    runner = CliRunner()
    args = ["estimate", "--model", "llama3-8b", "--seq-len", "2048", "--dp", "1", "--zero", "2",
            "--hardware", "h100-sxm", "--json"]
    plain = json.loads(runner.invoke(cli, args).output)
    offloaded = json.loads(runner.invoke(cli, args + ["--offload", "optimizer"]).output)
    assert plain["fit"]["training"]["fits"] is False
    assert offloaded["fit"]["training"]["fits"] is True  # 14.96 GiB of weights and the activations
    text = runner.invoke(cli, args[:-1] + ["--offload", "params", "--zero", "3", "--offload-device", "nvme"]).output
    assert "Offloaded (ZeRO-Infinity): the optimizer state and parameters on nvme" in text
    assert "DeepSpeed 0.19.8's estimator" in text
    bad = runner.invoke(cli, args + ["--offload", "params"])
    assert bad.exit_code == 2 and "needs --zero 3" in bad.output


def test_zero2_offload_text_names_no_largest_layer():
    """ZeRO-2's DeepSpeed estimator takes no largest layer (the text once formatted its None and
    crashed); its host figure is estimate_zero2_model_states_mem_needs' for 8 GPUs on one node."""
    args = ["estimate", "--model", "llama2-7b", "--tp", "2", "--dp", "4", "--zero", "2", "--offload", "optimizer"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    figures = json.loads(CliRunner().invoke(cli, args + ["--json"]).output)["parallel"]["deepspeed_estimator"]
    assert figures["largest_layer_params"] is None and figures["total_params"] == 6_738_415_616
    line = next(x for x in result.output.splitlines() if x.startswith("DeepSpeed"))
    assert "largest layer" not in line and "x1.5 on the host)" in line
    host, _ = deepspeed_zero2(6_738_415_616, num_gpus_per_node=8)
    assert f"{binary_bytes(host)} per node" in line

def _ds_model_to_params(model) -> tuple[int, int]:
    """DeepSpeed's model_to_params (stage3.py): unique parameters, and the most one module holds itself."""
    total = sum({p.data_ptr(): p.numel() for p in model.parameters()}.values())
    largest = max(sum(p.numel() for p in m.parameters(recurse=False)) for m in model.modules())
    return total, largest


REAL_SHAPED = {  # odd sizes, but a vocabulary as much larger than a layer's blocks as real models'
    "llama": dict(model_type="llama", vocab_size=997, hidden_size=48, num_attention_heads=6,
                  num_key_value_heads=2, intermediate_size=37, num_hidden_layers=2, max_position_embeddings=64),
    "gpt2-tied": dict(model_type="gpt2", vocab_size=997, n_embd=48, n_head=6, n_layer=2, n_positions=64, n_inner=37),
    "mixtral": dict(model_type="mixtral", vocab_size=99, hidden_size=48, num_attention_heads=6,
                    num_key_value_heads=2, head_dim=10, intermediate_size=37, num_local_experts=5,
                    num_experts_per_tok=2, num_hidden_layers=2, max_position_embeddings=64),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(REAL_SHAPED))
def test_largest_layer_is_deepspeeds_on_real_models(name):
    from costmodel.hf import from_hf_config
    from validate.hf_models import build_hf_model

    cfg = from_hf_config(REAL_SHAPED[name], name=name)
    estimate = Estimate(cfg, Workload(seq_len=8))
    assert (estimate.total("params"), estimate.largest_module_params()) == _ds_model_to_params(build_hf_model(cfg))


@pytest.mark.slow
def test_a_tiny_vocabulary_leaves_the_largest_layer_unknown():
    """GPT-2 with 99 tokens of 48: c_attn (48 x 144 + 144) holds more than the embedding; the tree
    does not split a block into modules, so it says it does not know rather than give 4,752."""
    from costmodel.hf import from_hf_config
    from validate.hf_models import build_hf_model

    config = dict(REAL_SHAPED["gpt2-tied"], vocab_size=99)
    cfg = from_hf_config(config, name="tiny-vocab")
    assert _ds_model_to_params(build_hf_model(cfg))[1] == 48 * 144 + 144
    assert Estimate(cfg, Workload(seq_len=8)).largest_module_params() is None
    p = Estimate(cfg, Workload(seq_len=8), Layout(dp=2, zero=3, offload="optimizer")).to_dict()["parallel"]
    assert "omitted" in p["deepspeed_estimator"]


def test_finetune_optimizer_on_nvme_moves_the_hosts_bytes():
    from costmodel.finetune import finetune_memory
    from costmodel.lora_adapters import FineTune

    cfg, workload = load_preset("llama3-8b"), Workload(seq_len=2048, batch=1, attention="sdpa")
    host = finetune_memory(cfg, workload, FineTune(offload_optimizer=True))
    nvme = finetune_memory(cfg, workload, FineTune(offload_optimizer=True, offload_device="nvme"))
    assert host.host > 0 and host.nvme == 0
    assert (nvme.host, nvme.nvme, nvme.nvme_bytes_per_step) == (0, host.host, 2 * host.host)
    assert nvme.total == host.total and nvme.pcie_bytes_per_step == host.pcie_bytes_per_step
    with pytest.raises(ConfigError, match="needs --offload-optimizer"):
        FineTune(offload_device="nvme")


def test_the_fit_verdict_offers_offload():
    from costmodel.layout import ParallelEstimate
    from costmodel.verdict import verdict

    cfg, workload = load_preset("llama3-8b"), Workload(seq_len=2048, attention="sdpa")
    result = verdict(cfg, workload, None, 80 * 2**30)
    assert result["fits"] is False  # 2 + 2 + 12 bytes a parameter: 119.66 GiB of model states
    options = {o["change"]: o for o in result["options"]}
    for change, layout in (("--dp 1 --zero 2 --offload optimizer", Layout(zero=2, offload="optimizer")),
                           ("--dp 1 --zero 3 --offload params", Layout(zero=3, offload="params"))):
        assert options[change]["memory"] == ParallelEstimate(cfg, workload, layout).per_rank["total"] <= 80 * 2**30
