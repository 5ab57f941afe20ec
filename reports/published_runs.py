"""Published training runs beside the layout model: Narayanan et al. 2021 (Table 1) and
Korthikanti et al. 2022 (Table 5), the data in costmodel/published.py.

Each run is rebuilt as a ModelConfig (GPT: learned positions, LayerNorm, GeLU, tied output layer)
and a Layout with its own sizes (Megatron's conventions, its activation profile, fp16/bf16 on the
a100-80gb preset at its default efficiencies: 0.7 of the matmul peak, 0.8 of the bandwidth), and
the step time, TFLOP/s per GPU, MFU and HFU come from costmodel.layout.time. `python cli.py
published` prints the tables the README quotes.
"""

from __future__ import annotations

from typing import Any

from costmodel.config import ModelConfig, Workload
from costmodel.hardware import load_hardware
from costmodel.layout import Layout, ParallelEstimate
from costmodel.layout.time import StepTime
from costmodel.published import KORTHIKANTI_TABLE_5, NARAYANAN_TABLE_1, narayanan_parameters

VOCABULARY, SEQUENCE = 51200, 2048


def gpt(name: str, heads: int, hidden: int, layers: int) -> ModelConfig:
    return ModelConfig(name=name, family="gpt", vocab_size=VOCABULARY, d_model=hidden, n_heads=heads,
                       d_ff=4 * hidden, n_decoder_layers=layers, max_positions=SEQUENCE,
                       position="learned", norm="layernorm", activation="gelu", dropout=0.1)


def _step(cfg: ModelConfig, workload: Workload, layout: Layout) -> dict[str, Any]:
    estimate = ParallelEstimate(cfg, workload, layout)
    return StepTime(estimate, load_hardware("a100-80gb")).step()


def narayanan() -> list[dict[str, Any]]:
    """Table 1 (full recomputation, fp16): parameters and TFLOP/s per GPU, published and ours."""
    rows = []
    for billions, heads, hidden, layers, tp, pp, gpus, batch, tflops, peak, micro, v in NARAYANAN_TABLE_1:
        cfg = gpt(f"gpt-{billions}b", heads, hidden, layers)
        dp = gpus // (tp * pp)
        layout = Layout(tp=tp, pp=pp, dp=dp, microbatches=batch // (micro * dp), framework="megatron",
                        schedule="interleaved" if v > 1 else "1f1b", virtual_stages=v)
        workload = Workload(seq_len=SEQUENCE, batch=micro, dtype="fp16", impl="megatron", recompute="full")
        step = _step(cfg, workload, layout)
        from costmodel.estimation import Estimate

        params = Estimate(cfg, Workload(seq_len=8)).total("params")
        rows.append({"model": f"{billions}B", "params": params,
                     "params_eq2": round(narayanan_parameters(layers, hidden)),
                     "layout": f"{tp} x {pp} x {dp}", "gpus": gpus, "batch": batch,
                     "tflops_published": tflops, "tflops_ours": step["tflops_per_gpu"],
                     "seconds_ours": step["seconds"], "bubble": step["bubble_fraction"]})
    return rows


def korthikanti() -> list[dict[str, Any]]:
    """Table 5: seconds per iteration (full recomputation; sequence parallelism + selective
    recomputation), MFU and HFU of the latter, published and ours."""
    rows = []
    for name, heads, hidden, layers, pp, gpus, batch, micro, v, full_s, present_s, mfu, hfu in KORTHIKANTI_TABLE_5:
        cfg = gpt(name, heads, hidden, layers)
        common = dict(tp=8, pp=pp, dp=1, microbatches=batch // micro, framework="megatron",
                      schedule="interleaved" if v > 1 else "1f1b", virtual_stages=v)
        ours = {}
        for key, recompute, sp in (("full", "full", False), ("present", "selective", True)):
            workload = Workload(seq_len=SEQUENCE, batch=micro, dtype="bf16", impl="megatron", recompute=recompute)
            ours[key] = _step(cfg, workload, Layout(sp=sp, **common))
        rows.append({"model": name, "gpus": gpus, "full_published": full_s, "full_ours": ours["full"]["seconds"],
                     "present_published": present_s, "present_ours": ours["present"]["seconds"],
                     "mfu_published": mfu, "mfu_ours": 100 * ours["present"]["mfu"],
                     "hfu_published": hfu, "hfu_ours": 100 * ours["present"]["hfu"]})
    return rows
