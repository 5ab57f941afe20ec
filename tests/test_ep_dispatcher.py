"""The flex dispatcher (--ep-dispatcher deepep / hybridep: Megatron-Core's MoEFlexTokenDispatcher on
DeepEP's or HybridEP's kernels): a token once per target node over the inter-node link and once
per target rank over NVLink (costmodel/layout/experts.py, "The flex dispatcher"). The expected
copies are exact rationals, checked against every routing of small layouts enumerated by brute
force, against a hand count, and against DeepSeek-V3's group-limited routing in closed form."""

from __future__ import annotations

from fractions import Fraction
from itertools import combinations
from math import comb

import pytest
from click.testing import CliRunner

import cli
from costmodel.collectives import nccl_facts, within_node
from costmodel.config import ConfigError, Workload
from costmodel.hardware import load_hardware
from costmodel.layout import Layout, ParallelEstimate
from costmodel.layout.experts import FlexCopies, flex_copies
from costmodel.layout.timing import step_time
from costmodel.presets import load_preset


def brute_force(n_experts: int, top_k: int, groups: int, chosen: int, ep: int, local: int) -> tuple[Fraction, Fraction]:
    """Every routing of a token, equally likely (a chosen-subset of the groups, then a top_k-subset
    of their experts), from every source rank: the mean of the remote nodes it is sent to and of
    the ranks the forwarders (the same in-node index as the source) pass it on to over NVLink."""
    per_group, per_rank = n_experts // groups, n_experts // ep
    remote = nvlink = Fraction(0)
    routings = 0
    for picked in combinations(range(groups), chosen):
        pool = [e for g in picked for e in range(g * per_group, (g + 1) * per_group)]
        for experts in combinations(pool, top_k):
            routings += 1
            ranks = {e // per_rank for e in experts}
            for source in range(ep):
                node, index = divmod(source, local)
                remote += len({r // local for r in ranks} - {node})
                nvlink += sum(1 for r in ranks if r % local != index)
    sources = routings * ep
    return remote / sources, nvlink / sources


@pytest.mark.parametrize("case", [
    (8, 3, 4, 2, 4, 2),   # groups of 2 experts, a node of 2 ranks holds 2 whole groups
    (6, 2, 1, 1, 6, 3),   # no group limit: 6 experts on 6 ranks in 2 nodes
    (12, 3, 3, 2, 6, 3),  # nodes of 6 experts straddle groups of 4 (the nodes are not alike)
    (12, 5, 4, 3, 4, 1),  # one rank a node: no NVLink forwarding
    (10, 4, 5, 3, 5, 5),  # one node: nothing crosses the inter-node link
])
def test_expected_copies_equal_every_routing_enumerated(case):
    copies = flex_copies(*case)
    assert (copies.remote_nodes, copies.nvlink) == brute_force(*case)


def test_a_hand_count():
    """4 experts on 4 ranks, 2 a node, top 2 of 4 (6 pairs). A token touches a node unless both its
    experts are on the other one: 1 - 1/6 = 5/6 a node, 5/3 nodes; the source's own node is one of
    two, so 5/6 remote. It always touches 2 distinct ranks, and a rank is its node's forwarder
    half the time: 2 x 1/2 = 1 NVLink copy."""
    assert flex_copies(4, 2, 1, 1, 4, 2) == FlexCopies(remote_nodes=Fraction(5, 6), nvlink=Fraction(1),
                                                       nodes=Fraction(5, 3), ranks=Fraction(2))


def test_deepseek_v3_on_four_nodes_in_closed_form():
    """DeepSeek-V3 (256 experts, top 8 within the best 4 of 8 groups of 32: its config.json's
    n_group 8, topk_group 4) on EP 32 of 8-GPU nodes: each node holds 2 whole groups (64 experts).
    g of its groups chosen (hypergeometric over C(8, 4) = 70: g = 0, 1, 2 in 15, 40, 15 ways), it is
    missed with probability C(128 - 32 g, 8) / C(128, 8). The nodes a token reaches: 4 x (1 - that
    mean), about 2.93; remote 3/4 of them, about 2.20 (against 8 x 24/32 = 6 off-node copies of a
    token under the all-to-all: 0.366 of them)."""
    missed = sum(Fraction(ways * comb(128 - 32 * g, 8), 70 * comb(128, 8)) for g, ways in ((0, 15), (1, 40), (2, 15)))
    copies = flex_copies(256, 8, 8, 4, 32, 8)
    assert copies.nodes == 4 * (1 - missed)
    assert copies.remote_nodes == 3 * (1 - missed)
    assert round(float(copies.nodes), 4) == 2.9282 and round(float(copies.remote_nodes), 4) == 2.1962
    assert round(float(copies.remote_nodes / 6), 3) == 0.366
    cfg = load_preset("deepseek-v3")
    assert (cfg.expert_groups, cfg.expert_groups_per_token) == (8, 4)


def _odd_moe():
    """Qwen3-MoE's family at odd small sizes (tests/test_parallel_folding.py): d 64, 6 experts of
    width 24, top 2, 2 layers."""
    return load_preset("qwen3-30b-a3b").replace(name="odd-moe", d_model=64, n_heads=4, n_kv_heads=2, d_head=16,
                                                d_ff=40, d_expert=24, n_experts=6, top_k=2, n_decoder_layers=2,
                                                vocab_size=256)


def _estimate(dispatcher: str, **workload) -> ParallelEstimate:
    layout = Layout(dp=6, ep=6, framework="megatron", zero=1, ep_dispatcher=dispatcher)
    return ParallelEstimate(_odd_moe(), Workload(seq_len=12, batch=1, dtype="bf16", impl="megatron",
                                                 attention="flash", **workload), layout)


def test_payloads_in_bytes():
    """A rank's 12 tokens of 64 bf16 values (128 bytes), top 2: the all-to-all dispatches and
    combines its 24 slots forward and backward (4 x 24 x 128 = 12,288 a layer) and sends the 6
    experts' int64 counts (48); the flex dispatcher hands each dispatch and combine the 12 tokens
    once (4 x 12 x 128 = 6,144 a layer) and keeps the counts' exchange. Two layers."""
    alltoall = _estimate("alltoall").communication(_estimate("alltoall").stages[0])["ep"]
    flex = _estimate("deepep").communication(_estimate("deepep").stages[0])["ep"]
    assert alltoall == {"all_to_all": 2 * (48 + 12_288)} == {"all_to_all": 24_672}
    assert flex == {"all_to_all": 96, "flex": 2 * 6_144} == {"all_to_all": 96, "flex": 12_288}
    assert "flex" not in _estimate("deepep").wire({"ep": flex})["ep"]  # its wire bytes need the hardware


def test_full_recomputation_runs_the_forward_exchange_again():
    """Three passes (forward, re-run, backward) of a dispatch and a combine: 6 x 12 x 128 a layer."""
    estimate = _estimate("hybridep", recompute="full")
    assert estimate.communication(estimate.stages[0])["ep"] == {"all_to_all": 2 * 2 * 48, "flex": 2 * 9_216}


def test_time_is_the_copies_at_the_hardware_rates():
    """On H100 nodes of 8 the 6 ranks share a node: every copy is NVLink, (L - 1)/L of the 2.x
    distinct ranks a token touches, at the in-node all-to-all's rate (within_node, whose payload P
    puts P (L - 1)/L on the wire)."""
    hardware = load_hardware("h100-sxm")
    estimate = _estimate("deepep")
    timer = step_time(estimate, hardware, time_model="roofline")
    copies = flex_copies(6, 2, 1, 1, 6, 6)
    assert copies.remote_nodes == 0 and copies.nvlink == Fraction(5, 6) * (6 * (1 - Fraction(comb(5, 2), comb(6, 2))))
    wire = 12_288 * copies.nvlink
    assert timer.flex_dispatch(12_288) == pytest.approx(within_node(hardware, "all_to_all", float(wire * 6 / 5), 6))
    counts = timer.collective("ep", "all_to_all", 96)
    assert timer.stage(estimate.stages[0])["ep"] == pytest.approx(counts + timer.flex_dispatch(12_288))


def test_across_nodes_the_remote_copies_take_the_inter_node_rate():
    """EP 16 on two H200 nodes (the tiny model with 16 experts) on HybridEP: the remote copies at the NIC's
    rate times NCCL's inter-node efficiency, the NVLink ones as above, one latency (DeepEP's internode
    kernels take their measured rates instead: tests/test_deepep_internode.py; so does HybridEP where its
    README times the GPU, H100 across nodes since session 41: tests/test_hybridep_rates.py, so this test
    moved from h100-sxm to h200, the link rule's case)."""
    hardware = load_hardware("h200")
    cfg = _odd_moe().replace(n_experts=16)
    layout = Layout(dp=16, ep=16, framework="megatron", zero=1, ep_dispatcher="hybridep")
    estimate = ParallelEstimate(cfg, Workload(seq_len=12, batch=1, dtype="bf16", impl="megatron", attention="flash"),
                                layout)
    timer = step_time(estimate, hardware, time_model="roofline")
    copies = flex_copies(16, 2, 1, 1, 16, 8)
    inter = hardware.link(16) * float(nccl_facts()["inter_node_efficiency"]["value"])
    expected = (float(1000 * copies.remote_nodes) / inter
                + within_node(hardware, "all_to_all", float(1000 * copies.nvlink * 8 / 7), 8)
                + hardware.collective_latency_s)
    assert timer.flex_dispatch(1000) == pytest.approx(expected)


def test_refusals():
    with pytest.raises(ConfigError, match="needs --ep above 1"):
        Layout(dp=2, ep_dispatcher="deepep")
    with pytest.raises(ConfigError, match="ep_dispatcher must be"):
        Layout(dp=2, ep=2, ep_dispatcher="nvshmem")
    with pytest.raises(ConfigError, match="flex token dispatcher .* add --framework megatron or fsdp2 \\(here deepspeed\\)"):
        Layout(dp=2, ep=2, ep_dispatcher="deepep")  # Megatron-Core's dispatcher (and AutoModel's), not DeepSpeed's (review)
    with pytest.raises(ConfigError, match="balanced, dropless routing"):
        _estimate("deepep", expert_load=(3, 1, 1, 1, 1, 1))
    with pytest.raises(ConfigError, match="exceeds expert_groups"):
        _odd_moe().replace(expert_groups=2, expert_groups_per_token=3)
    with pytest.raises(ConfigError, match="must divide n_experts"):
        _odd_moe().replace(expert_groups=4)


@pytest.mark.parametrize("args, message", [
    (["--dp", "8", "--ep-dispatcher", "deepep"], "--ep-dispatcher deepep says how expert-parallel ranks exchange tokens"),
    (["--dp", "8", "--ep", "8", "--ep-dispatcher", "deepep", "--capacity-factor", "0.5"], "balanced, dropless"),
])
def test_cli_refuses_in_one_line(args, message):
    result = CliRunner().invoke(cli.cli, ["simulate", "--train", "--model", "qwen3-30b-a3b", "--hardware", "h100-sxm",
                                           "--framework", "megatron", "--zero", "1", *args])
    assert result.exit_code == 2 and message in result.output and len(result.output.strip().splitlines()) == 1


def test_the_recipes_dispatcher_on_published_rows():
    """The 26.04.01 DeepSeek-V3 B200 row's recipe (21d102f5e DEEPSEEK_V3_PRETRAIN_CONFIG_B200_FP8_MX_V2)
    sets moe_flex_dispatcher_backend "deepep"; its GB200 row's (GB200_FP8_MX_V2) "hybridep", as does
    the 26.06 GB200 row's at 63b08b397 (the commit that printed the 26.06 table), with three more
    26.06 GB200 rows and 26.06.01's and 26.08's (381d0b825, 4ab94dfad); 26.06.01's DeepSeek-V3 perf
    recipe names none itself, but the recipe it starts from (recipes/deepseek/h100/deepseek_v3.py
    deepseek_v3_pretrain_1024gpu_h100_bf16_config at 381d0b825) sets "hybridep" and applies it on any
    GPU of compute capability 8-10. 26.02's and 26.02.01's DeepSeek-V3 configs (v0.3.0, v0.3.1,
    cfeddcd94) "hybridep", as do Nemotron 3 Nano's (flex, its perf configs' backend) and 26.06's Qwen3
    30B-A3B H100 config (63b08b397); rows whose recipes set none or were not read stay on the all-to-all. 25.09's H100 row DeepEP (the
    release branch's run_script.py at a28844195: enable_deepep on H100, the flex dispatcher), its
    token-drop GB200 row the all-to-all; 25.11's GB200 rows HybridEP (97ad8cc6f
    deepseek_llm_pretrain.py: the GB200 base config's backend, every precision), its B200 row (no
    backend named) the all-to-all. Nemotron 3 Super's 14 rows and Ultra's one: "hybridep" in every
    recipe read from v0.4.0 to 067f987df (the source's 'assumed')."""
    import json
    from pathlib import Path

    from reports.published_runs import train_setup

    data = json.loads((Path(__file__).parents[1] / "costmodel" / "published_runs.json").read_text())
    runs = {run["id"]: run for run in data["runs"]}
    source = data["sources"]["megatron-bridge-moe"]
    for row, dispatcher in (("26.04.01 deepseek-v3 mxfp8 256xb200", "deepep"),
                            ("26.04.01 deepseek-v3 mxfp8 256xgb200", "hybridep"),
                            ("26.06 deepseek-v3 mxfp8 256xgb200", "hybridep"),
                            ("26.06.01 deepseek-v3 mxfp8 256xgb200", "hybridep"),
                            ("26.02 deepseek-v3 mxfp8 256xb200", "hybridep"),
                            ("26.02.01 deepseek-v3 mxfp8 256xgb200", "hybridep"),
                            ("26.06 qwen3-30b-a3b fp8 16xh100", "hybridep"),
                            ("26.06 nemotron-3-nano fp8 16xh100", "hybridep"),
                            ("26.08 deepseek-v3 mxfp8 256xgb200", "hybridep"),
                            ("26.06.01 gpt-oss-120b mxfp8 64xgb200", "hybridep"),
                            ("26.04.01 gpt-oss-120b bf16 64xgb200", "alltoall"),
                            ("25.09 deepseek-v3 fp8 1024xh100", "deepep"),
                            ("25.09 deepseek-v3 fp8 256xgb200", "alltoall"),
                            ("25.11 deepseek-v3 bf16 256xgb200", "hybridep"),
                            ("25.11 deepseek-v3 fp8-mx 256xgb200", "hybridep"),
                            ("25.11 deepseek-v3 fp8-mx 256xb200", "alltoall"),
                            ("26.08 nemotron-3.5-lightning mxfp8 8xgb200", "hybridep")):
        estimate, _, _ = train_setup(runs[f"megatron-bridge-moe {row}"], source)
        assert estimate.layout.ep_dispatcher == dispatcher
    # + 16 read in session 16 (recipes2): 26.06.01's DeepSeek-V3 GB200 row, 26.02's and 26.02.01's
    # DeepSeek-V3 GB200 and B200 rows, Nemotron 3 Nano's 10 and 26.06's Qwen3 30B-A3B H100 row
    # + 5 of the Megatron MoE model zoo's Qwen3 235B table (session 24: DeepEP on 4, all-to-all on 1)
    # + 1 in session 24: Nemotron 3.5 Lightning's (067f987df _build_nemotron_3_nano_gb200_mxfp8: "hybridep")
    # + 1, the model zoo's long-context GB200 row (HybridEP; the four H100 long-context rows take their source's DeepEP)
    # + 1, DeepSeek-V4 Flash's 26.08 GB200 row (its recipe's hybridep, read in session 24: wt24_dsv4b)
    # + 28 of Megatron-Bridge's model verification cards (session 25, wt25_cards: every card row but GPT-OSS
    # 120B's two and 20B's all-to-all rows and the dense Qwen3 8B) and the DeepSeek-V3 GB200 guide's 13
    # (its Dispatcher column: AlltoAll, DeepEP, HybridEP)
    # + 9, the Megatron-Core MoE report's Table 11 (session 46, wt46_unseent: HybridEP on GB200/GB300, DeepEP on H100)
    assert sum(1 for run in data["runs"] if run.get("ep_dispatcher")) == 14 + 11 + 3 + 15 + 16 + 5 + 1 + 1 + 1 + 28 + 13 + 9
    assert all(run["ep_dispatcher"] == "hybridep" for run in data["runs"] if "nemotron-3" in run["id"]
               and run.get("ep_dispatcher"))


def test_estimate_prints_the_flex_payload_without_a_ring_factor():
    """The text report lists ep.flex's payload (a rank's 4,096 tokens of Qwen3 30B-A3B) and says its
    wire bytes depend on the node (the time model's hardware)."""
    result = CliRunner().invoke(cli.cli, ["estimate", "--model", "qwen3-30b-a3b", "--seq-len", "4096", "--dp", "16",
                                          "--ep", "16", "--zero", "1", "--framework", "megatron",
                                          "--ep-dispatcher", "deepep"])
    assert result.exit_code == 0
    line = next(line for line in result.output.splitlines() if line.startswith("ep     flex"))
    # 48 MoE layers x 2 passes x (dispatch + combine) x 4,096 tokens x 2,048 x 2 bytes = 3 GiB
    assert line.split() == ["ep", "flex", "3.00", "GiB", "by", "node", "(time)"]
    assert 48 * 2 * 2 * 4096 * 2048 * 2 == 3 * 2**30


def test_deepep_refuses_an_nvlink_domain_beyond_its_eight_peers_without_a_measured_rate():
    """DeepEP's internode kernels forward to at most 8 NVLink peers (LEGACY_NUM_MAX_NVL_PEERS at
    dd758caf); over a wider NVLink domain its intranode kernels run (pull request #218), with a
    measured rate only at EP 32 on GB200 (kernel_facts.json "deepep_nvlink_domain"): EP 16 on a
    GB200 NVL72 rack is refused (hybridep runs), and so is a group wider than one domain."""
    args = ["simulate", "--train", "--model", "qwen3-30b-a3b", "--hardware", "gb200", "--seq-len", "4096", "--dp", "16",
            "--ep", "16", "--framework", "megatron", "--zero", "1", "--ep-dispatcher"]
    refused = CliRunner().invoke(cli.cli, [*args, "deepep"])
    assert refused.exit_code == 2 and "a measured rate only at ep 32 on gb200, not ep 16 on gb200" in refused.output
    assert CliRunner().invoke(cli.cli, [*args, "hybridep"]).exit_code == 0
    # estimate's fit verdict on that GPU refuses it too (it said "fits"; review)
    fit = ["estimate", *args[2:], "deepep"]
    refused = CliRunner().invoke(cli.cli, fit)
    assert refused.exit_code == 2 and "a measured rate only at ep 32 on gb200" in refused.output
    assert CliRunner().invoke(cli.cli, [*fit[:-1], "hybridep"]).exit_code == 0
    # EP 128 over 128 GB200s: 72 ranks a domain, the group across two: the internode kernels' 8 peers
    wide = [*args[:9], "128", "--ep", "128", *args[12:], "deepep"]
    refused = CliRunner().invoke(cli.cli, wide)
    assert refused.exit_code == 2 and "at most 8 NVLink peers" in refused.output


def test_deepep_over_the_nvl72_domain_at_its_measured_rates():
    """DeepSeek-V3 at EP 32 in one GB200 NVL72 domain: a token reaches 16 (1 - C(120, 8) / C(128, 8))
    distinct ranks, its own included (a rank's 8 experts lie in a group of 4 ranks, chosen half the
    time; 6.5965), the bytes DeepEP's test_intranode.py divides by a kernel's time. A micro-batch's
    flex payload P (dispatch and combine, forward and backward) runs half at the dispatch's 400 GB/s
    and half at the combine's 190 GB/s: P x 6.5965 / 2 x (1/400 + 1/190) / 1e9 seconds."""
    from costmodel.hardware import load_hardware
    from costmodel.layout.time import StepTime
    from costmodel.presets import load_preset as preset

    copies = flex_copies(256, 8, 8, 4, 32, 32)
    assert copies.ranks == 16 * (1 - Fraction(comb(120, 8), comb(128, 8)))
    assert (copies.remote_nodes, copies.nodes) == (0, 1) and copies.nvlink == copies.ranks * 31 / 32
    layout = Layout(dp=32, ep=32, framework="megatron", zero=1, ep_dispatcher="deepep")
    estimate = ParallelEstimate(preset("deepseek-v3"), Workload(seq_len=4096, batch=1, dtype="bf16", impl="megatron",
                                                                 attention="flash"), layout)
    step = StepTime(estimate, load_hardware("gb200"))
    payload = 2 * 2 * 4096 * 7168 * 2  # one MoE layer: forward and backward, a dispatch and a combine each
    seconds = payload * float(copies.ranks) / 2 * (1 / 400e9 + 1 / 190e9)
    assert step.flex_dispatch(payload) == pytest.approx(seconds, rel=1e-12)
    assert round(step.flex_dispatch(payload) * 1e3, 3) == 6.014  # ms: 774.7 MB at 400 GB/s (1.937) and at 190 GB/s (4.077)
