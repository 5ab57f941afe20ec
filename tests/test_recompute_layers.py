"""Full recomputation of N layers (--recompute full --recompute-layers N; Workload.recompute_layers):
Megatron-Core's block method, the first N layers of each pipeline stage recompute their forward
and keep only their input, the others keep everything (megatron/core/transformer/
transformer_config.py recompute_method "block"; Megatron-Bridge's 25.11 Llama 3 8B H100 FP8-CS
recipe, recompute_num_layers 5). Each figure is exact against the same model under "none" and
"full"."""

from __future__ import annotations

import pytest

from costmodel.config import ConfigError, Workload
from costmodel.hardware import load_hardware
from costmodel.layout import Layout, ParallelEstimate
from costmodel.layout.kernel_step import KernelStepTime
from costmodel.presets import load_preset

CFG = load_preset("llama2-7b")  # 32 layers, all alike


def _estimate(recompute: str, layers: int | None = None, **layout) -> ParallelEstimate:
    workload = Workload(seq_len=1024, batch=2, dtype="bf16", impl="megatron", attention="flash",
                        recompute=recompute, recompute_layers=layers)
    return ParallelEstimate(CFG, workload, Layout(**{"microbatches": 4, **layout}))


def test_the_first_n_layers_of_each_stage_recompute():
    one = _estimate("full", 5)
    assert one.stages[0].kinds == ((("layer.decoder.recomputed", 5), ("layer.decoder", 27)),)
    two = _estimate("full", 5, pp=2)  # 16 layers a stage, 5 of each recomputed
    assert [s.kinds for s in two.stages] == [((("layer.decoder.recomputed", 5), ("layer.decoder", 11)),)] * 2
    chunks = _estimate("full", 5, pp=2, virtual_stages=2, schedule="interleaved")  # 8 a chunk
    assert chunks.layer_runs(chunks.stages[0]) == {"layer.decoder.recomputed": 10, "layer.decoder": 6}
    assert _estimate("full", 32).stages[0].kinds == ((("layer.decoder.recomputed", 32),),)


def test_memory_n_layers_keep_their_input_the_others_everything():
    none, full, part = _estimate("none"), _estimate("full"), _estimate("full", 5)
    stage = none.stages[0]
    kept, checkpointed = none.part("layer.decoder", "saved"), full.part("layer.decoder", "saved")
    rebuilt = full._largest_layer("rebuilt")
    assert kept > checkpointed > 0 and rebuilt > 0
    assert part.part("layer.decoder.recomputed", "saved") == checkpointed
    assert part.part("layer.decoder", "saved") == kept
    assert part.activations(part.stages[0]) == none.activations(stage) - 5 * kept + 5 * checkpointed + rebuilt
    # every layer recomputed: the same memory as --recompute full
    every = _estimate("full", 32)
    assert every.activations(every.stages[0]) == full.activations(full.stages[0])


def test_time_n_layers_rerun_their_forward_the_others_nothing():
    hardware = load_hardware("h100-sxm")
    none, full, part = (KernelStepTime(e, hardware) for e in (_estimate("none"), _estimate("full"),
                                                             _estimate("full", 5)))
    assert part.part_seconds["layer.decoder.recomputed"] == full.part_seconds["layer.decoder"]
    assert part.part_seconds["layer.decoder"] == none.part_seconds["layer.decoder"]
    stage = part.estimate.stages[0]
    # and each rerun leaf's launches once more (StepTime.compute, since wt46_mgsoftmax): 5 layers' worth
    reruns = 5 * part.part_reruns["layer.decoder.recomputed"] * part.overhead_s
    assert part.part_reruns["layer.decoder"] == 0 and reruns > 0
    assert part.compute(stage) - none.compute(none.estimate.stages[0]) == pytest.approx(
        5 * (full.part_seconds["layer.decoder"][0] - none.part_seconds["layer.decoder"][0]) + reruns, rel=1e-12)


def test_only_the_recomputed_layers_rerun_their_tensor_parallel_collectives():
    """tp 2 with sequence parallelism: a recomputed layer's forward re-runs its 2 reduce-scatters
    and 2 all-gathers; 5 of the 32 layers do."""
    full, part = _estimate("full", tp=2, sp=True), _estimate("full", 5, tp=2, sp=True)
    boundary = full.numbers["boundary"]
    assert full.recomputed_collectives(full.stages[0]) == [("reduce_scatter", 64, boundary),
                                                           ("all_gather", 64, boundary)]
    assert part.recomputed_collectives(part.stages[0]) == [("reduce_scatter", 10, boundary),
                                                           ("all_gather", 10, boundary)]


@pytest.mark.parametrize("recompute, layers, model, message", [
    ("none", 5, "llama2-7b", "applies to recompute 'full'"),
    ("selective", 5, "llama2-7b", "applies to recompute 'full'"),
    ("full", 0, "llama2-7b", "recompute_layers"),
    ("full", 33, "llama2-7b", "more than the model's 32 layers"),
    ("full", 2, "gemma2-9b", "layers are all of one kind"),
])
def test_bad_requests_are_refused_in_a_sentence(recompute, layers, model, message):
    with pytest.raises(ConfigError, match=message):
        workload = Workload(seq_len=256, recompute=recompute, recompute_layers=layers)
        ParallelEstimate(load_preset(model), workload, Layout()).activations
        ParallelEstimate(load_preset(model), workload, Layout()).stages


def test_the_cli_takes_recompute_layers(capsys):
    import cli

    args = ["simulate", "--model", "llama2-7b", "--train", "--seq-len", "1024", "--batch", "2", "--dp", "1",
            "--microbatches", "4", "--recompute", "full", "--json"]
    assert cli.main(args + ["--recompute-layers", "5"]) == 0
    assert cli.main(args[:-1] + ["--recompute-layers", "40"]) == 2
    assert "more than the model's 32 layers" in capsys.readouterr().err


def test_hardware_flops_count_the_recomputed_layers_of_every_stage():
    """HFU: pp 2 recomputes 5 layers on each stage, 10 in all: twice pp 1's recomputed FLOPs."""
    from costmodel.layout.time import StepTime

    hardware = load_hardware("h100-sxm")

    def recomputed_flops(pp: int) -> float:  # the step's hardware FLOPs, all GPUs, beyond "none"'s
        total = []
        for recompute, layers in (("full", 5), ("none", None)):
            step = StepTime(_estimate(recompute, layers, pp=pp), hardware).step()
            total.append(step["tflops_per_gpu"] * 1e12 * step["seconds"] * pp)
        return total[0] - total[1]

    assert StepTime(_estimate("full", 5, pp=2), hardware).recomputed_layers_share() == 2
    assert StepTime(_estimate("full", 5), hardware).recomputed_layers_share() == 1
    assert recomputed_flops(2) == pytest.approx(2 * recomputed_flops(1), rel=1e-9)
