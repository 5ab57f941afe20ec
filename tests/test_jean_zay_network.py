"""Jean Zay's network on the BLOOM rows (wt32_oldmeg, session 32): the sources "bloom", "gpu-hours-bloom" and
"bloom-prequel" ran on Jean Zay's A100 80GB nodes, whose BLOOM training README states '8 GPUs per node Using
NVLink 4 inter-gpu connects, 4 OmniPath links' (bigscience-workshop/bigscience train/tr11-176B-ml/README.md at
e726b159); an Omni-Path link is 100 Gb/s, so 50 GB/s a node of 8 and 6.25 GB/s a GPU between nodes, a quarter of
the a100-80gb preset's one 200 Gb/s HDR HCA a GPU (Selene's, Narayanan et al. 2021)."""

import pytest

from reports.published_runs import train_step, other_runs_data, run_hardware

JEAN_ZAY = ("bloom", "gpu-hours-bloom", "bloom-prequel")
ROW = "bloom-prequel h14336 l72 dp8 tp8 pp6 mbs4 384xa100-80gb 02-21"


def test_the_bloom_sources_state_jean_zays_network():
    sources = other_runs_data()["sources"]
    for name in JEAN_ZAY:
        network = run_hardware(sources[name])
        assert network.inter_node_bandwidth_bytes_per_s == 4 * 100e9 / 8 / 8 == 6.25e9  # 4 x 100 Gb/s, 8 GPUs
        assert network.gpus_per_node == 8 and network.intra_node_bandwidth_bytes_per_s == 300e9  # the preset's NVLink
        assert "4 OmniPath links" in sources[name]["hardware_overrides"]["interconnect"]["source"]
    # the preset they replace: one 200 Gb/s HCA a GPU, four times Jean Zay's
    bare = {k: v for k, v in sources["bloom"].items() if k != "hardware_overrides"}
    assert run_hardware(bare).inter_node_bandwidth_bytes_per_s == 25e9


def test_the_prequel_rows_data_parallel_reduce_takes_four_times_as_long():
    """DP 8 TP 8 PP 6, 64 micro-batches of 4: the BF16_Optimizer's bf16 all-reduce of the rank's gradient
    after the last backward is NIC-bound, 1.194 -> 4.776 s (x 4.0); the pipeline sends 0.272 -> 0.876 s;
    the step 96.063 -> 100.273 s (kernel model; published 121.48 s; 98.572 -> 102.783 before session 43)."""
    data = other_runs_data()
    run = next(r for r in data["runs"] if r["id"] == ROW)
    source = data["sources"]["bloom-prequel"]
    step, _ = train_step(run, source, "kernels")
    before, _ = train_step(run, {k: v for k, v in source.items() if k != "hardware_overrides"}, "kernels")
    exposed, was = step["exposed_communication_seconds"], before["exposed_communication_seconds"]
    assert was["dp"] == pytest.approx(1.1942, abs=1e-4) and exposed["dp"] == pytest.approx(4.7758, abs=1e-4)
    assert exposed["dp"] / was["dp"] == pytest.approx(4.0, rel=1e-3)  # bandwidth-bound (less the fixed latencies)
    assert was["pp"] == pytest.approx(0.2718, abs=1e-4) and exposed["pp"] == pytest.approx(0.8763, abs=1e-4)
    assert exposed["tp"] == was["tp"]  # inside the node: unchanged
    # 98.572 and 102.783 before session 43's Megatron attention bytes and one QKV GEMM (facts.json
    # fused_scale_mask_softmax, fused_qkv; wt43_review): the compute 2.509 s shorter, the network's cost the same
    # 96.063 and 100.273 before session 44's Megatron dense-path passes (facts.json megatron_dense_passes: the Q/K/V
    # bias pass, the split's cat, the context's copy): the compute 0.373 s longer
    # 96.436 and 100.646 before wt46_mgsoftmax (the causal softmax's loads to the diagonal, the recomputed launches)
    assert before["seconds"] == pytest.approx(96.263, abs=1e-3) and step["seconds"] == pytest.approx(100.473, abs=1e-3)
