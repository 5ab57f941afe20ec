"""NeMo's own pre-training tables among the published runs (costmodel/published_runs.json sources
"nemo-24.07" and "nemo-25.02", session 25; "nemo-25.04", session 26): each row as its page prints it, the layout train_setup
builds from it and the models' sizes their configs state."""

from __future__ import annotations

import pytest

from costmodel.config import Workload
from reports.published_runs import other_runs_data


def _runs() -> tuple[dict, dict]:
    data = other_runs_data()
    return {r["id"]: r for r in data["runs"]}, data["sources"]


# NeMo's pre-training tables (published_runs.json "nemo-24.07", "nemo-25.02" cite each): tokens/s and
# model TFLOP/s per GPU, GPUs, TP, PP, CP, VP, EP, MBS, GBS, sequence, as the page prints them; then
# the recipe's Overlap (tp, pp, params) and recomputation, as the source's "assumed" reads them.
NEMO = {
    # NVIDIA/NeMo docs/source/performance/performance_summary.md at 8e3d65dcf, NeMo 24.07, DGX-H100 (FP8)
    "nemo-24.07 gpt3-5b 64xh100": (23406, 765, 64, 1, 1, 1, 1, 1, 4, 2048, 2048, (0.0, 0.0, 1.0), "none"),
    "nemo-24.07 gpt3-20b 64xh100": (5851, 750, 64, 2, 1, 1, 1, 1, 2, 256, 2048, (1.0, 0.0, 1.0), "none"),
    "nemo-24.07 gpt3-175b 128xh100": (716, 771, 128, 4, 8, 1, 6, 1, 1, 256, 2048, (0.0, 1.0, 1.0), "none"),
    "nemo-24.07 gpt3-175b 512xh100": (825, 888, 512, 4, 8, 1, 6, 1, 2, 2048, 2048, (0.0, 1.0, 1.0), "none"),
    "nemo-24.07 llama2-7b 8xh100": (16934, 780, 8, 1, 1, 1, 1, 1, 1, 128, 4096, (0.0, 0.0, 1.0), "none"),
    "nemo-24.07 llama2-13b 16xh100": (8715, 760, 16, 1, 4, 1, 10, 1, 1, 128, 4096, (0.0, 1.0, 1.0), "none"),
    "nemo-24.07 llama2-70b 64xh100": (1728, 768, 64, 4, 4, 1, 20, 1, 1, 128, 4096, (1.0, 1.0, 1.0), "none"),
    "nemo-24.07 nemotron-8b 64xh100": (12507, 643, 64, 2, 1, 1, 1, 1, 4, 256, 4096, (1.0, 0.0, 1.0), "none"),
    "nemo-24.07 nemotron-22b 64xh100": (4312, 562, 64, 2, 4, 1, 10, 1, 2, 256, 4096, (1.0, 1.0, 1.0), "none"),
    # nemotron_340b.yaml at the launcher's tag 24.07: selective checkpointing, no TP or P2P overlap
    "nemo-24.07 nemotron-340b 128xh100": (326, 686, 128, 8, 8, 1, 12, 1, 1, 32, 4096, (0.0, 0.0, 1.0), "selective"),
    "nemo-24.07 llama3-8b 8xh100": (12273, 711, 8, 1, 1, 2, 1, 1, 1, 128, 8192, (0.0, 0.0, 1.0), "none"),
    "nemo-24.07 llama3-70b 64xh100": (1524, 734, 64, 4, 4, 2, 5, 1, 1, 128, 8192, (1.0, 1.0, 1.0), "none"),
    # docs.nvidia.com NeMo Framework 'Performance', NeMo 25.02, DGX-B200 (FP8); scripts at NeMo v2.2.0
    "nemo-25.02 gpt3-175b 512xb200": (1600, 1722, 512, 4, 4, 1, 6, 1, 2, 2048, 2048, (1.0, 1.0, 1.0), "none"),
    "nemo-25.02 llama3-8b 8xb200": (26006, 1506, 8, 1, 1, 1, 1, 1, 2, 128, 8192, (0.0, 0.0, 1.0), "none"),
    "nemo-25.02 llama3-70b 64xb200": (3062, 1474, 64, 2, 4, 2, 5, 1, 1, 128, 8192, (1.0, 1.0, 1.0), "none"),
    "nemo-25.02 llama3.1-405b 128xb200": (625, 1658, 128, 4, 8, 2, 8, 1, 1, 64, 8192, (1.0, 1.0, 1.0), "none"),
    "nemo-25.02 nemotron-15b 64xb200": (14760, 1387, 64, 1, 1, 1, 1, 1, 2, 256, 4096, (0.0, 0.0, 1.0), "none"),
    "nemo-25.02 nemotron-340b 128xb200": (602, 1268, 128, 8, 4, 1, 12, 1, 1, 32, 4096, (1.0, 1.0, 1.0), "none"),
    "nemo-25.02 mixtral-8x7b 64xb200": (15457, 1282, 64, 1, 1, 1, 1, 8, 2, 256, 4096, (0.0, 0.0, 1.0), "none"),
    # printed 'GBS 1 | MBS 64'; GA 16 over DP 4 and the v2.2.0 CSV make it GBS 64, MBS 1
    "nemo-25.02 mixtral-8x22b 256xb200": (2232, 824, 256, 2, 4, 8, 14, 8, 1, 64, 65536, (0.0, 1.0, 1.0), "none"),
}


@pytest.mark.parametrize("run_id", sorted(NEMO))
def test_each_nemo_row_is_expressed_as_its_page_states_it(run_id):
    """The JSON holds the page's row and the built setup is that layout: Megatron with the
    distributed optimizer (ZeRO-1), sequence parallelism where TP > 1, the interleaved schedule
    where VP > 1, FP8 as delayed scaling, the ring CP, cuDNN's attention, the recipe's overlap."""
    from reports.published_runs import train_setup

    runs, sources = _runs()
    run, source = runs[run_id], sources[run_id.split()[0]]
    tokens, tflops, gpus, tp, pp, cp, vp, ep, micro, global_batch, seq_len, overlap, recompute = NEMO[run_id]
    assert (run["published_tokens_per_s_per_gpu"], run["published_model_tflops_per_gpu"]) == (tokens, tflops)
    estimate, hardware, options = train_setup(run, source)
    layout, workload = estimate.layout, estimate.workload
    assert (layout.tp, layout.pp, layout.cp, layout.ep, layout.virtual_stages, layout.gpus) == (tp, pp, cp, ep, vp, gpus)
    assert workload.batch == micro and workload.batch * layout.microbatches * layout.dp == global_batch
    assert (workload.seq_len, workload.recompute, workload.attention) == (seq_len, recompute, "flash")
    assert layout.schedule == ("interleaved" if vp > 1 else "1f1b") and layout.sp == (tp > 1)
    # both releases' FP8 is Transformer Engine's delayed scaling (fp8_hybrid, amax history 1024, 'max')
    assert (layout.framework, layout.zero, layout.fp8, layout.cp_rotate) == ("megatron", 1, "delayed", "ring")
    assert hardware.name == ("b200" if run_id.startswith("nemo-25.02") else "h100-sxm")
    # 24.07: Apex's DistributedFusedAdam reduces in fp32 (the default); v2.2.0: grad_reduce_in_fp32 False
    assert layout.grad_reduce_dtype == ("bf16" if run_id.startswith("nemo-25.02") else None)
    hidden = options.pop("overlap")
    assert (hidden.tp, hidden.pp, hidden.params, hidden.dp, hidden.ep) == (*overlap, 2 / 3, 0.0)
    # v2.2.0 sets no grad_sync_func (its DDP config has no align_grad_reduce): each chunk's reduce
    # starts in its own last backward; NeMo 24.07's Apex optimizer passes one (Megatron's default)
    assert hidden.align_grad == (not (run_id.startswith("nemo-25.02") and vp > 1))
    assert options == {"autocast": False, "attention_kernel": "cudnn"}


# NeMo 25.04's DGX-GB200 table (published_runs.json "nemo-25.04"; scripts at NeMo v2.3.0, 2b03b748): tokens/s
# and model TFLOP/s per GPU (None where the stored copy cuts the cell), GPUs, TP, PP, CP, VP, EP, MBS, GBS,
# sequence as the page prints them, then the recipe's Overlap (tp, pp, params) as the source's "assumed" reads them.
NEMO_25_04 = {
    "nemo-25.04 gpt3-175b 128xgb200": (1804, 1942, 128, 4, 4, 1, 12, 1, 2, 256, 2048, (1.0, 1.0, 1.0)),
    "nemo-25.04 llama3-8b 8xgb200": (33099, 1917, 8, 1, 1, 1, 1, 1, 2, 128, 8192, (0.0, 0.0, 1.0)),
    "nemo-25.04 llama3.1-405b 128xgb200": (665, 1763, 128, 4, 8, 2, 8, 1, 1, 64, 8192, (1.0, 1.0, 1.0)),
    "nemo-25.04 nemotron-15b 64xgb200": (17809, 1674, 64, 1, 1, 1, 1, 1, 2, 256, 4096, (0.0, 0.0, 1.0)),
    "nemo-25.04 nemotron-340b 128xgb200": (737, 1551, 128, 8, 4, 1, 12, 1, 1, 32, 4096, (1.0, 1.0, 1.0)),
    "nemo-25.04 mixtral-8x7b 64xgb200": (19275, 1598, 64, 1, 1, 1, 1, 8, 2, 256, 4096, (0.0, 0.0, 1.0)),
    # printed 'GBS 1 | MBS 64' as on the 25.02 page; GA 16 over DP 4 makes it GBS 64, MBS 1
    "nemo-25.04 mixtral-8x22b 256xgb200": (2731, None, 256, 2, 4, 8, 14, 8, 1, 64, 65536, (0.0, 1.0, 1.0)),
}


@pytest.mark.parametrize("run_id", sorted(NEMO_25_04))
def test_each_nemo_25_04_row_is_expressed_as_its_page_states_it(run_id):
    """The GB200 rows: Megatron ZeRO-1, sequence parallelism where TP > 1, the interleaved schedule
    where VP > 1, the page's per-tensor current scaling with FP8 parameters, each chunk's gradient
    reduce from its own last backward (no align_grad_reduce in r0.12's DDP config), no recomputation."""
    from reports.published_runs import train_setup

    runs, sources = _runs()
    run = runs[run_id]
    tokens, tflops, gpus, tp, pp, cp, vp, ep, micro, global_batch, seq_len, overlap = NEMO_25_04[run_id]
    assert (run["published_tokens_per_s_per_gpu"], run.get("published_model_tflops_per_gpu")) == (tokens, tflops)
    estimate, hardware, options = train_setup(run, sources["nemo-25.04"])
    layout, workload = estimate.layout, estimate.workload
    assert (layout.tp, layout.pp, layout.cp, layout.ep, layout.virtual_stages, layout.gpus) == (tp, pp, cp, ep, vp, gpus)
    assert workload.batch == micro and workload.batch * layout.microbatches * layout.dp == global_batch
    assert (workload.seq_len, workload.recompute) == (seq_len, "none")
    assert layout.schedule == ("interleaved" if vp > 1 else "1f1b") and layout.sp == (tp > 1)
    assert (layout.framework, layout.zero, layout.fp8, layout.fp8_param_gather) == ("megatron", 1, "current", True)
    assert (hardware.name, layout.grad_reduce_dtype, layout.cp_rotate) == ("gb200", "bf16", "ring")
    hidden = options.pop("overlap")
    assert (hidden.tp, hidden.pp, hidden.params, hidden.dp, hidden.align_grad) == (*overlap, 2 / 3, vp == 1)
    assert options == {"autocast": False, "attention_kernel": "cudnn"}


def test_the_nemo_25_04_fsdp_row_is_megatron_fsdp_without_fp8_parameters():
    """LLAMA3-70B's 'FSDP 1' on 64 GB200s (TP 1, PP 1, MBS 1, GBS 128, GA 2): Megatron-FSDP over every
    GPU (set_primary_perf_configs: fsdp 'megatron', optim_grads_params), which turns fp8_param_gather off."""
    from reports.published_runs import train_setup

    runs, sources = _runs()
    run = runs["nemo-25.04 llama3-70b fsdp 64xgb200"]
    assert (run["published_tokens_per_s_per_gpu"], run["published_model_tflops_per_gpu"]) == (4035, 1943)
    estimate, hardware, options = train_setup(run, sources["nemo-25.04"])
    layout = estimate.layout
    assert (layout.tp, layout.pp, layout.cp, layout.dp, layout.microbatches, estimate.workload.batch) == (1, 1, 1, 64, 2, 1)
    assert (layout.framework, layout.zero, layout.fp8, layout.fp8_param_gather) == ("megatron", 3, "current", False)
    assert hardware.name == "gb200" and options == {"autocast": False, "attention_kernel": "cudnn"}


def test_the_nemo_models_have_the_sizes_their_configs_state():
    """Each GPT3 and Nemotron model of the NeMo rows against its parameter count by hand, exactly:
    a GPT layer 12 h^2 + 13 h (biases, two LayerNorms), the tied embedding V h, learned positions
    s h and the final LayerNorm 2 h; a Nemotron layer without biases, squared-ReLU (two matrices)
    and two LayerNorms, its output untied. The vocabularies padded to 128 x TP as Megatron does
    (GPT-2's 50,257: 50,304 at TP 1, 50,432 at TP 2, 50,688 at TP 4; Llama 3's 128,256: 128,512 at
    TP 4), so a missed padding or a wrong width, depth or head count would miss."""
    from costmodel.estimation import Estimate
    from reports.published_runs import train_setup

    def gpt(layers: int, h: int, vocab: int) -> int:
        return layers * (12 * h * h + 13 * h) + vocab * h + 2048 * h + 2 * h

    def nemotron(layers: int, h: int, kv_width: int, ffn: int) -> int:
        return layers * (2 * h * h + 2 * h * kv_width + 2 * h * ffn + 4 * h) + 2 * 256_000 * h + 2 * h

    expected = {
        "nemo-24.07 gpt3-5b 64xh100": gpt(24, 4096, 50304),
        "nemo-24.07 gpt3-20b 64xh100": gpt(44, 6144, 50432),
        "nemo-24.07 gpt3-175b 128xh100": gpt(96, 12288, 50688),
        "nemo-25.02 gpt3-175b 512xb200": gpt(96, 12288, 50688),
        "nemo-24.07 nemotron-8b 64xh100": nemotron(32, 4096, 4096, 16384),
        "nemo-24.07 nemotron-22b 64xh100": nemotron(40, 6144, 6144, 24576),
        "nemo-25.02 nemotron-15b 64xb200": nemotron(32, 6144, 8 * 128, 24576),
        "nemo-25.02 nemotron-340b 128xb200": nemotron(96, 18432, 8 * 192, 73728),
        "nemo-25.04 gpt3-175b 128xgb200": gpt(96, 12288, 50688),
        "nemo-25.04 nemotron-15b 64xgb200": nemotron(32, 6144, 8 * 128, 24576),
        "nemo-25.04 nemotron-340b 128xgb200": nemotron(96, 18432, 8 * 192, 73728),
    }
    assert expected["nemo-24.07 gpt3-5b 64xh100"] == 5_047_558_144
    assert expected["nemo-24.07 gpt3-175b 128xh100"] == 174_609_555_456
    assert expected["nemo-24.07 nemotron-8b 64xh100"] == 8_540_135_424
    runs, sources = _runs()

    def params(run_id: str) -> int:
        estimate, _, _ = train_setup(runs[run_id], sources[run_id.split()[0]])
        return Estimate(estimate.cfg, Workload(seq_len=8)).total("params")

    for run_id, count in expected.items():
        assert params(run_id) == count, run_id
    # Llama 3.1 405B at TP 4: 256 padded rows in the embedding and in the output layer, 2 x 256 x 16,384 more
    llama = runs["nemo-25.02 llama3.1-405b 128xb200"]
    unpadded = {k: v for k, v in llama.items() if k != "config_changes"}
    padding = params("nemo-25.02 llama3.1-405b 128xb200") - params_of(unpadded, sources["nemo-25.02"])
    assert padding == 2 * 256 * 16384
    # the recipe's account_for_embedding/loss_in_pipeline_split: 126 layers + 2 over PP 8 x VP 8 chunks
    assert llama["stage_layers"] == [1, *[2] * 62, 1]
    gb200 = runs["nemo-25.04 llama3.1-405b 128xgb200"]  # the same padding and split at 25.04 (v2.3.0's recipe)
    assert params("nemo-25.04 llama3.1-405b 128xgb200") == params("nemo-25.02 llama3.1-405b 128xb200")
    assert gb200["stage_layers"] == llama["stage_layers"]


def params_of(run: dict, source: dict) -> int:
    from costmodel.estimation import Estimate
    from reports.published_runs import train_setup

    estimate, _, _ = train_setup(run, source)
    return Estimate(estimate.cfg, Workload(seq_len=8)).total("params")
