"""Pure-precision training in a layout (Layout.pure_precision, `--pure-precision`): a model built in bf16
and trained so, as PyTorch's FSDP and torch's AdamW run it (costmodel/layout/frameworks.py
Framework.pure_precision). Bytes a parameter exact, the step time moved only by the optimizer's and the
gradient reduction's bytes, and the held state measured with MemTracker on a tiny bf16 model."""

from __future__ import annotations

import pytest

from costmodel import symbols as S
from costmodel.config import ConfigError, Workload
from costmodel.hardware import load_hardware
from costmodel.layout import Layout, ParallelEstimate
from costmodel.layout.timing import step_time
from costmodel.precision import param_bytes
from costmodel.presets import load_preset
from tests.cli_run import one_error_line

LLAMA3_8B = 8_030_261_248  # LlamaForCausalLM from Meta-Llama-3-8B's config (the llama3-8b preset)
WORKLOAD = Workload(seq_len=8192, batch=2, dtype="bf16", impl="hf", attention="flash", recompute="full")


def test_adamw_bytes_a_parameter_mixed_16_pure_8():
    # ZeRO's 2 + 2 + 12 (fp32 master, fp32 m and v) against a bf16 model's 2 + 2 + 2 + 2
    for precision, total in (("mixed", 16), ("pure", 8)):
        assert param_bytes(precision, "adamw").total.subs(S.e, 2) == total
    assert param_bytes("pure", "adamw").step_traffic.subs(S.e, 2) == 14  # read 2+2+4, write 2+4
    assert param_bytes("fsdp2", "adamw").step_traffic.subs(S.e, 2) == 28  # fp32 shard: read 16, write 12


def _estimate(pure: bool, dp: int = 1, **layout) -> ParallelEstimate:
    extra = {} if pure else {"grad_reduce_dtype": "bf16"}  # the same bf16 reduce-scatter either way
    return ParallelEstimate(load_preset("llama3-8b"), WORKLOAD,
                            Layout(framework="fsdp2", dp=dp, microbatches=4, pure_precision=pure, **extra, **layout))


def test_a_rank_holds_two_bytes_a_copy_no_master():
    pure, fp32_shards = _estimate(True).per_stage[0], _estimate(False).per_stage[0]
    # one GPU on CUDA: torch's AdamW keeps its `step` counters on the host, so state is bytes x P exactly
    assert (pure["weights"], pure["gradients"], pure["optimizer"]) == (2 * LLAMA3_8B, 2 * LLAMA3_8B, 4 * LLAMA3_8B)
    assert (fp32_shards["weights"], fp32_shards["gradients"], fp32_shards["optimizer"]) == \
        (4 * LLAMA3_8B, 4 * LLAMA3_8B, 8 * LLAMA3_8B)
    assert _estimate(True).to_dict()["precision"] == "pure"


def test_step_time_moves_by_the_optimizer_bytes_alone():
    a100 = load_hardware("a100-80gb")
    for dp in (1, 4):
        pure = step_time(_estimate(True, dp), a100).step()
        fp32_shards = step_time(_estimate(False, dp), a100).step()
        # the optimizer's pass moves 14 bytes a parameter where the fp32 shard's moves 28 (the same bf16 reduce-scatter)
        assert pure["optimizer_seconds"] == pytest.approx(fp32_shards["optimizer_seconds"] / 2, rel=1e-12)
        assert fp32_shards["seconds"] - pure["seconds"] == pytest.approx(
            fp32_shards["optimizer_seconds"] - pure["optimizer_seconds"], rel=1e-9)
    # against FSDP2's default fp32 reduce: the reduce-scatter's bytes halve too (4 dp ranks)
    default = ParallelEstimate(load_preset("llama3-8b"), WORKLOAD, Layout(framework="fsdp2", dp=4, microbatches=4))
    assert default.communication(default.stages[0])["dp"]["reduce_scatter"] == \
        2 * _estimate(True, 4).communication(_estimate(True, 4).stages[0])["dp"]["reduce_scatter"]


def test_torch_optimizer_passes_move_the_shards_element_size():
    a100 = load_hardware("a100-80gb")
    for step in ("torch-foreach", "torch-fused"):
        pure = step_time(_estimate(True, optimizer_step=step), a100)
        fp32_shards = step_time(_estimate(False, optimizer_step=step), a100)
        assert pure.step_traffic() * 2 == fp32_shards.step_traffic()  # 92 / 46 and 40 / 20 bytes
    assert step_time(_estimate(True, optimizer_step="torch-foreach"), a100).step_traffic() == 46  # 20 elements read or written + the clip's 3


@pytest.mark.parametrize("layout, dtype, words", [
    ({"framework": "deepspeed"}, "bf16", "add --framework fsdp2"),
    ({"framework": "megatron"}, "bf16", "add --framework fsdp2"),
    ({"framework": "fsdp2", "grad_reduce_dtype": "fp32"}, "bf16", "--grad-reduce-dtype fp32"),
    ({"framework": "fsdp2"}, "fp32", "in fp32 every copy is fp32 already"),
])
def test_refused_where_the_framework_keeps_a_master(layout, dtype, words):
    with pytest.raises(ConfigError, match=words):
        ParallelEstimate(load_preset("llama3-8b"), WORKLOAD.replace(dtype=dtype), Layout(pure_precision=True, **layout))


def test_the_command_prints_one_line_and_exits_2(capsys):
    line = one_error_line(["simulate", "--model", "llama3-8b", "--train", "--seq-len", "2048", "--framework",
                           "deepspeed", "--pure-precision"], capsys)
    assert "deepspeed keeps an fp32 master copy" in line


@pytest.mark.slow
def test_memtracker_measures_the_pure_state_exactly():
    """torch's AdamW on a tiny Llama built in bf16 (CPU): MemTracker's Parameter, Gradient and Optstate
    after the step equal the rank's weights, gradients and optimizer (2 + 2 + 4 bytes a parameter and
    torch's fp32 `step` counter a tensor, held on the CPU device: Layout device cpu)."""
    import torch
    from torch.distributed._tools.mem_tracker import MemTracker

    from validate.compare import build, training_loss

    cfg = load_preset("llama2-7b").replace(name="llama-64", vocab_size=1000, d_model=64, n_heads=4, n_kv_heads=2,
                                           d_ff=170, n_decoder_layers=2, max_positions=512)
    workload = Workload(seq_len=32, batch=2, dtype="bf16", impl="hf")
    torch.manual_seed(0)
    model, inputs, _ = build(cfg, workload, "hf")
    optimizer = torch.optim.AdamW(model.parameters())
    tracker = MemTracker()
    tracker.track_external(model, optimizer)
    with tracker:
        training_loss(cfg, "hf")(model(**inputs)).backward()
        optimizer.step()
        (held,) = tracker.get_tracker_snapshot().values()
    measured = {str(getattr(k, "value", k)): v for k, v in held.items()}
    assert {t.dtype for state in optimizer.state.values() for t in (state["exp_avg"], state["exp_avg_sq"])} == \
        {torch.bfloat16}
    rank = ParallelEstimate(cfg, workload, Layout(framework="fsdp2", dp=1, device="cpu", pure_precision=True)).per_stage[0]
    assert (measured["Parameter"], measured["Gradient"], measured["Optstate"]) == \
        (rank["weights"], rank["gradients"], rank["optimizer"]) == (436_352, 436_352, 872_788)


def test_the_api_takes_it_as_a_layout_field():
    import costmodel

    data = costmodel.simulate("llama3-8b", "a100-80gb", train=True, seq_len=2048, batch=1,
                              layout={"framework": "fsdp2", "dp": 1, "pure_precision": True}).to_dict()
    assert data["parallel"]["precision"] == "pure" and data["parallel"]["layout"]["pure_precision"] is True
    assert data["parallel"]["per_rank"]["optimizer"] == 4 * LLAMA3_8B


def test_estimates_whole_model_and_ranks_count_the_same_pure_bytes(capsys):
    from tests.cli_run import run_json

    line = one_error_line(["estimate", "--model", "llama3-8b", "--framework", "fsdp2", "--dp", "4", "--precision", "pure"],
                          capsys)
    assert line.endswith("add --pure-precision for its ranks to keep pure.")
    data = run_json(["estimate", "--model", "llama3-8b", "--framework", "fsdp2", "--dp", "4", "--pure-precision"], capsys)
    assert data["parallel"]["precision"] == "pure"
    assert (data["memory"]["weights"], data["memory"]["optimizer"]) == (2 * LLAMA3_8B, 4 * LLAMA3_8B)
    assert data["parallel"]["per_rank"]["optimizer"] == 4 * LLAMA3_8B // 4  # each of 4 ranks a quarter (no padding)
