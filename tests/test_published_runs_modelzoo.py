"""The Megatron MoE model zoo's Qwen3 235B-A22B rows among the published runs (yanring/Megatron-MoE-ModelZoo:
the H100 table, the GB200/GB300 tables and the long-context rows): each row's JSON as the page prints it and
the layout train_setup builds from it. Split from tests/test_published_runs.py."""

from __future__ import annotations

import pytest

from reports.published_runs import other_runs_data


def _runs() -> tuple[dict, dict]:
    data = other_runs_data()
    return {r["id"]: r for r in data["runs"]}, data["sources"]


# The Megatron MoE model zoo's Qwen3 235B-A22B table (yanring/Megatron-MoE-ModelZoo 8017e11,
# examples/qwen3/readme.md), typed from its rows: (step seconds, Per GPU TF, TP, EP, PP, EDP, ETP,
# VPP, DP, MBS, GBS, GA, dispatcher, recompute); 256 H100s, sequence 4,096, CP 1, BF16.
MODELZOO = {
    "modelzoo-qwen3 235b deepep tp2 ep32 pp8 vpp4 256xh100":
        (19.7, 245, 2, 32, 8, 1, 1, 4, 16, 1, 2048, 128, "deepep", "layernorm-moe-act"),
    "modelzoo-qwen3 235b deepep tp2 ep32 pp8 vpp4 1f1b-overlap 256xh100":
        (17.6, 276, 2, 32, 8, 1, 1, 4, 16, 1, 2048, 128, "deepep", "layernorm-moe-act"),
    "modelzoo-qwen3 235b deepep tp2 ep8 fsdp 256xh100":
        (17.6, 276, 2, 8, 1, 32, 1, 1, 128, 4, 2048, 4, "deepep", "full"),
    "modelzoo-qwen3 235b a2a tp2 ep8 pp32 vpp3 256xh100":
        (24.2, 200, 2, 8, 32, 1, 1, 3, 4, 1, 2048, 512, "alltoall", "layernorm-moe-act"),
    "modelzoo-qwen3 235b deepep tp4 ep8 pp8 vpp4 256xh100":
        (29.0, 167, 4, 8, 8, 4, 1, 4, 8, 1, 2048, 256, "deepep", "none"),
}


@pytest.mark.parametrize("run_id", sorted(MODELZOO))
def test_each_model_zoo_row_is_its_tables_layout(run_id):
    """The JSON holds the table's row (the step time as tokens/s a GPU: GBS x 4,096 / (s x 256)),
    its EDP and GA follow from the layout as the table prints them, the pipeline split is the
    runtime config's 96 layers (94 + embedding + loss) in PP x VPP chunks, and the built setup is
    that layout: Megatron with the distributed optimizer, sequence parallelism, ETP 1."""
    from reports.published_runs import train_setup

    runs, sources = _runs()
    run, source = runs[run_id], sources["modelzoo-qwen3"]
    seconds, tflops, tp, ep, pp, edp, etp, vpp, dp, micro, global_batch, ga, dispatcher, recompute = MODELZOO[run_id]
    assert run["published_seconds_per_step"] == seconds and run["published_model_tflops_per_gpu"] == tflops
    assert run["published_tokens_per_s_per_gpu"] == pytest.approx(global_batch * 4096 / (seconds * 256), abs=0.05)
    assert (run["tp"], run["ep"], run["pp"], run["etp"], run["dp"], run["gpus"]) == (tp, ep, pp, etp, dp, 256)
    assert 256 // (ep * etp * pp) == edp and tp * pp * dp == 256 and global_batch // (dp * micro) == ga
    assert (run["ep_dispatcher"], run["recompute"], run["seq_len"]) == (dispatcher, recompute, 4096)
    if vpp > 1:
        chunk = 96 // (pp * vpp)  # --num-layers-per-virtual-pipeline-stage NUM_LAYERS / PP / VPP
        assert run["stage_layers"] == [chunk - 1, *[chunk] * (pp * vpp - 2), chunk - 1]
        assert sum(run["stage_layers"]) == 94 and run["virtual_stages"] == vpp
    # the combined 1F1B schedule (--combined-1f1b, ep_a2a) on the "+1f1b overlap" row only
    assert run.get("overlap", {}).get("ep", 0.0) == (1.0 if "1f1b-overlap" in run_id else 0.0)
    estimate, hardware, options = train_setup(run, source)
    layout = estimate.layout
    assert (layout.tp, layout.pp, layout.dp, layout.ep, layout.etp, layout.gpus) == (tp, pp, dp, ep, 1, 256)
    # the 'FSDP On' row: Megatron's custom FSDP (Megatron-FSDP, optim_grads_params) as megatron --zero 3
    zero = 3 if "fsdp" in run_id else 1
    assert (layout.framework, layout.zero, layout.sp, layout.virtual_stages) == ("megatron", zero, True, vpp)
    assert layout.ep_dispatcher == dispatcher and layout.grad_reduce_dtype == "bf16"
    assert estimate.workload.batch * layout.microbatches * layout.dp == global_batch and layout.microbatches == ga
    assert (estimate.cfg.n_layers, estimate.cfg.n_experts, hardware.name) == (94, 128, "h100-sxm")
    assert options["attention_kernel"] == "cudnn"
    # --overlap-param-gather as overlap params 1; Megatron-FSDP gathers under its own prefetch
    assert options["overlap"].params == 1.0 if zero == 1 else "overlap" not in options


# The same page's GB200 and GB300 tables (best_practice/qwen3/readme.md at 798dfb5): (TFLOPS, GPU,
# NNODES, precision, TP, PP, VPP, CP, EP, MBS, GBS); four GPUs a node (sbatch_benchmarking.sh).
MODELZOO_GB = {
    "modelzoo-qwen3-gb 235b bf16 hybridep tp1 pp8 ep8 256xgb200": (750, "gb200", 64, None, 1, 8, 1, 1, 8, 1, 8192),
    "modelzoo-qwen3-gb 235b mxfp8 hybridep tp1 pp1 ep64 64xgb300": (1055, "gb300", 16, "mxfp8", 1, 1, 1, 1, 64, 1, 8192),
}


@pytest.mark.parametrize("run_id", sorted(MODELZOO_GB))
def test_each_model_zoo_blackwell_row_is_its_tables_layout(run_id):
    from reports.published_runs import train_setup

    runs, sources = _runs()
    run, source = runs[run_id], sources["modelzoo-qwen3-gb"]
    tflops, gpu, nodes, fp8, tp, pp, vpp, cp, ep, micro, global_batch = MODELZOO_GB[run_id]
    assert run["published_tflops_per_gpu"] == tflops and run["gpus"] == 4 * nodes
    estimate, hardware, options = train_setup(run, source)
    layout = estimate.layout
    assert (layout.tp, layout.pp, layout.virtual_stages, layout.cp, layout.ep) == (tp, pp, vpp, cp, ep)
    assert layout.dp == 4 * nodes // (tp * pp) and layout.fp8 == fp8 and hardware.name == gpu
    assert estimate.workload.batch == micro and micro * layout.microbatches * layout.dp == global_batch
    assert layout.ep_dispatcher == "hybridep" and layout.grad_reduce_dtype == "bf16"
    # the runtime config's 96 layers (94 + embedding + loss) over PP 8: 11, 12 x 6, 11
    assert run.get("stage_layers") == ([11, *[12] * 6, 11] if pp == 8 else None)
    # MXFP8's flags (sbatch_benchmarking.sh PR=mxfp8): bf16 Adam moments; A2A_OVERLAP=1 on GB300 only
    assert layout.precision_aware_optimizer == ("bf16-moments" if fp8 else None)
    assert options["overlap"].ep == (1.0 if fp8 else 0.0) and options["overlap"].params == 1.0


def test_the_model_zoos_tflops_are_megatrons_causal_count():
    """The page's H100 rows print a step time and TFLOPS per GPU: their product over the step's
    tokens is 1.473e11-1.482e11 FLOPs a token on all five, the model's causal count of Qwen3 235B
    within 0.7% and its dense count 12-14% above: the Blackwell rows' TFLOPS (no step time printed)
    are compared in the causal convention (flops_convention, train_run)."""
    from costmodel.layout.timing import step_time
    from reports.published_runs import train_run, train_setup

    runs, sources = _runs()
    # (seconds, TFLOPS, ..., GBS at index 10): TFLOPS x seconds x 256 GPUs / (GBS x 4,096 tokens)
    implied = [row[1] * 1e12 * row[0] * 256 / (row[10] * 4096) for row in MODELZOO.values()]
    assert min(implied) == pytest.approx(1.4729e11, rel=1e-3) and max(implied) == pytest.approx(1.4824e11, rel=1e-3)
    run, source = runs["modelzoo-qwen3 235b deepep tp2 ep32 pp8 vpp4 256xh100"], sources["modelzoo-qwen3"]
    estimate, hardware, options = train_setup(run, source)
    per_token = {c: step_time(estimate, hardware, time_model="kernels", flops_convention=c, **options).step()["model_flops"]
                 / (2048 * 4096) for c in ("causal", "dense")}
    assert all(abs(f / per_token["causal"] - 1) < 0.007 for f in implied)
    assert all(1.12 < per_token["dense"] / f < 1.14 for f in implied)
    gb = runs["modelzoo-qwen3-gb 235b bf16 hybridep tp1 pp8 ep8 256xgb200"]
    causal, dense = train_run(gb, sources["modelzoo-qwen3-gb"], "kernels"), \
        train_run(gb, dict(sources["modelzoo-qwen3-gb"], flops_convention="dense"), "kernels")
    assert dense / causal == pytest.approx(per_token["dense"] / per_token["causal"], rel=1e-9)


# The same page's long-context rows (best_practice/qwen3/readme.md at 798dfb5; source
# modelzoo-qwen3-long): (forced-balance TFLOPS, dropless TFLOPS, GPU, NNODES, GPUs a node, SEQ_LEN,
# TP, CP, PP, VPP, EP, MBS, GBS); the H100 command's PP 8 VPP 4 EP 8, the GB200 row's own columns.
MODELZOO_LONG = {
    "modelzoo-qwen3-long 235b bf16 deepep tp4 cp1 ep8 pp8 vpp4 16k 256xh100":
        (295, 237, "h100-sxm", 32, 8, 16384, 4, 1, 8, 4, 8, 1, 256),
    "modelzoo-qwen3-long 235b bf16 deepep tp4 cp2 ep8 pp8 vpp4 32k 256xh100":
        (335, 277, "h100-sxm", 32, 8, 32768, 4, 2, 8, 4, 8, 1, 256),
    "modelzoo-qwen3-long 235b bf16 deepep tp4 cp4 ep8 pp8 vpp4 64k 256xh100":
        (368, 320, "h100-sxm", 32, 8, 65536, 4, 4, 8, 4, 8, 1, 256),
    "modelzoo-qwen3-long 235b bf16 deepep tp4 cp8 ep8 pp8 vpp4 128k 256xh100":
        (389, 357, "h100-sxm", 32, 8, 131072, 4, 8, 8, 4, 8, 1, 256),
    "modelzoo-qwen3-long 235b mxfp8 hybridep tp4 cp4 ep32 pp4 vpp12 128k 128xgb200":
        (1150, None, "gb200", 32, 4, 131072, 4, 4, 4, 12, 32, 1, 1024),
}


@pytest.mark.parametrize("run_id", sorted(MODELZOO_LONG))
def test_each_model_zoo_long_context_row_is_its_tables_layout(run_id):
    """The JSON holds the row as printed: dp = GPUs / (TP x PP x CP), EP drawn from tp x cp x dp (ep
    divides the 32 ranks of a stage; at CP 4 on GB200 it needs the CP ranks: tp x dp = 8), the 96
    layers (94 + embedding + loss) in PP x VPP chunks; the H100 rows' recompute modules 'layernorm
    moe' as layernorm-moe (Megatron-Core's whole-MoE-layer checkpoint), the GB200 row's 'moe_act
    layernorm' as layernorm-moe-act; each built with the layout it prints."""
    from reports.published_runs import train_setup

    runs, sources = _runs()
    run, source = runs[run_id], sources["modelzoo-qwen3-long"]
    forced, dropless, gpu, nodes, per_node, seq, tp, cp, pp, vpp, ep, micro, global_batch = MODELZOO_LONG[run_id]
    gpus = nodes * per_node
    assert run["published_tflops_per_gpu"] == forced and run.get("published_dropless_tflops_per_gpu") == dropless
    assert (run["gpus"], run["seq_len"], run["tp"], run.get("cp", 1), run["pp"], run["ep"], run["etp"]) == \
        (gpus, seq, tp, cp, pp, ep, 1)
    assert run["dp"] == gpus // (tp * pp * cp) and (tp * cp * run["dp"]) % ep == 0
    chunk = 96 // (pp * vpp)  # --num-layers-per-virtual-pipeline-stage NUM_LAYERS / PP / VPP
    assert run["stage_layers"] == [chunk - 1, *[chunk] * (pp * vpp - 2), chunk - 1] and sum(run["stage_layers"]) == 94
    estimate, hardware, options = train_setup(run, source)
    layout = estimate.layout
    assert layout.folded and layout.cp_rotate == "ring" and layout.expert_data_parallel == tp * cp * run["dp"] // ep
    if gpu == "h100-sxm":  # DeepEP, BF16 with --tp-comm-overlap (PR=bf16), 'layernorm moe'
        assert (estimate.workload.recompute, layout.ep_dispatcher, layout.fp8, hardware.name) == \
            ("layernorm-moe", "deepep", None, "h100-sxm")
        assert layout.dp == 8 // cp and layout.microbatches == global_batch // layout.dp
        assert options["overlap"].tp == 1.0 and options["overlap"].pp == 1.0 and options["overlap"].params == 1.0
        return
    assert (layout.tp, layout.cp, layout.pp, layout.virtual_stages, layout.ep, layout.dp) == (tp, cp, pp, vpp, ep, 2)
    assert layout.folded and layout.expert_data_parallel == 1 and (layout.tp * layout.dp) % ep != 0
    assert (layout.cp_rotate, layout.fp8, layout.precision_aware_optimizer, layout.ep_dispatcher) == \
        ("ring", "mxfp8", "bf16-moments", "hybridep")
    assert estimate.workload.recompute == "layernorm-moe-act" and hardware.name == "gb200"
    assert micro * layout.microbatches * layout.dp == global_batch and layout.microbatches == 512
    assert options["overlap"].tp == 0.0 and options["overlap"].pp == 1.0 and options["overlap"].params == 1.0
