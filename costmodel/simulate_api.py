"""`simulate` as a function: roofline time of inference or a training step on a hardware preset,
with or without a parallel layout, as the `simulate` command computes it.

    import costmodel
    run = costmodel.simulate("llama3-8b", hardware="h100-sxm", train=True, attention="sdpa", tokens=1e12)
    run                                  # the command's text
    run.to_dict()["cost"]["gpu_hours"]   # `simulate --json`
"""

from __future__ import annotations

import html
from typing import Any

from . import spec
from .json_units import JSON_UNITS
from .config import ConfigError
from .plain import plain_arguments


class SimulationResult:
    """What `simulate` reports: .to_dict() is `simulate --json`; printing shows its text."""

    def __init__(self, data: dict[str, Any], train: bool, parallel: bool, warnings: list[str]):
        self.data, self.train, self.parallel, self.warnings = data, train, parallel, warnings

    def to_dict(self) -> dict[str, Any]:
        """Every number, exactly as `simulate --json` prints it (an unbounded figure, a crossover that never
        comes, as null: JSON has no infinity)."""
        from .plain import finite

        return finite({**self.data, "units": JSON_UNITS["simulate"]})  # as `simulate --json` prints it

    def text(self) -> str:
        """The `simulate` command's text."""
        from .tools_path import tool

        simulate_text = tool("reports.simulate_text")

        if self.parallel:
            return (simulate_text.render_parallel_training(self.data) if self.train
                    else simulate_text.render_parallel_decode(self.data))
        return simulate_text.render_training(self.data) if self.train else simulate_text.render_inference(self.data)

    def __repr__(self) -> str:
        return self.text()

    def _repr_html_(self) -> str:
        return f"<pre>{html.escape(self.text())}</pre>"


def training_inputs(cfg: Any, workload: Any, overlap: Any, graph_scopes: tuple[str, ...] = ()) -> dict[str, Any]:
    """What a training step with a layout ran with, beside its model and workload (simulate --json's and
    SimulationResult.to_dict()'s inputs alike): the code it was timed as (the framework's unless given), the
    optimizer, what a Megatron-Core run captures in CUDA graphs, and the overlap conventions it was timed under
    (--dp-overlap, --no-align-grad-reduce...), so two outputs tell why their steps differ."""
    import dataclasses

    return {"tgt_len": workload.tgt_len, "impl": workload.impl, "attention": workload.attention, "mtp": cfg.mtp_layers,
            "optimizer": workload.optimizer, "cuda_graph_scope": list(graph_scopes),
            "overlap": dataclasses.asdict(overlap)}


def decode_inputs(workload: Any, cuda_graphs: bool, compiled: bool = False, latent: bool = False) -> dict[str, Any]:
    """What a decode with a layout ran with, for its report's second line: the attention, the
    KV cache (dynamic or static), whether its steps replay a CUDA graph and torch.compile's fusions,
    and, where the model has latent attention (latent: cfg.mla), its form (naive or absorbed)."""
    return {"attention": workload.attention, "kv_cache": workload.kv_cache, "cuda_graphs": bool(cuda_graphs),
            "compiled": bool(compiled), "mla": workload.mla if latent else None}


@plain_arguments
def simulate(model: Any, hardware: str = spec.DEFAULT_HARDWARE, *, train: bool = False, prompt: int | None = None,
             gen: int = spec.DEFAULT_GEN_TOKENS, batch: int = 1, dtype: str | None = None, attention: str | None = None,
             kv_cache: str = "dynamic", seq_len: int | None = None, tgt_len: int | None = None,
             recompute: str = "none", impl: str | None = None,
             tokens: float | None = None, price: float | None = None, step_time: float | None = None,
             layout: Any = None, weight_dtype: str | None = None, weight_bits: float | None = None,
             kv_dtype: str | None = None,
             fp8_gemm: str = spec.DEFAULT_FP8_GEMM,
             decode_code: str = spec.DEFAULT_DECODE_CODE, cuda_graphs: bool = False,
             cache_size: int | None = None, compiled: bool = False, eager_prefill: bool = False) -> SimulationResult:
    """Inference (prompt, gen; price: the dollars per million generated tokens, data["cost"], as `simulate
    --price`) or a training step (train=True: seq_len, tgt_len (an encoder-decoder's decoder tokens, default
    seq_len), recompute, impl; tokens and price for the time,
    GPU-hours, FLOPs and dollars of a run) on `hardware`; layout: a
    costmodel.layout.Layout or a dict of its fields for per-GPU time and memory. Inference, on
    one GPU or with a layout (each tensor-parallel rank's shards): weight_dtype and kv_dtype
    quantize the weights and the cache (`simulate --weight-dtype/--kv-dtype`; weight_bits: EXL2's bits a weight,
    `--weight-bits`, with weight_dtype="exl2"), fp8_gemm says how
    fp8 weights multiply (spec.FP8_GEMMS); decode_code whose decoding loop an eager step's host
    time counts (spec.DECODE_CODES, `simulate --decode-code`). The defaults are the command's: the
    hardware spec.DEFAULT_HARDWARE, and impl and attention the layout's framework's code (defaults.implied:
    sdpa under DeepSpeed and FSDP2, flash under Megatron), eager and hf without a layout. Inference:
    cuda_graphs replays each decode step from a CUDA graph (`simulate --cuda-graphs`), cache_size is a
    static cache's allocated tokens that every step attends whole (`--kv-cache static --cache-size`, one GPU),
    compiled times torch.compile's fused kernels (`simulate --compile`, the kernel-level model) and
    eager_prefill, with compiled, runs the prefill eager beside the compiled steps (`--eager-prefill`).
    Every choice keyword takes any case, as the command's choices do ("BF16", "Static"; plain_arguments)."""
    from . import roofline as sim
    from .api import generation_start, load_model, make_layout, make_workload
    from .checkpoint import inference_options
    from .config import require_decoder
    from .defaults import attention_source, has_attention, implied
    from .flash_support import runs_flash
    from .errors import graphs_replayed
    from .hardware import load_hardware

    cuda_graphs = graphs_replayed("cuda_graphs", cuda_graphs)  # "off" (the command's word) replayed graphs
    cfg = load_model(model)
    chosen = load_hardware(hardware)
    dtype = dtype or chosen.default_dtype
    chosen.require_peak(spec.CANONICAL_DTYPE.get(dtype, dtype))
    from .cost import add_generation_cost, check_price, check_run_inputs

    check_run_inputs(tokens, price if train else None, step_time)
    if not train:
        check_price(price)  # inference's price needs no tokens: it costs the generated tokens (as the command's)
    if not train:
        require_decoder(cfg)
        if gen < 0:
            raise ConfigError(f"gen must be at least 0, got {gen}.")
        if prompt is not None:  # the prompt is the workload's seq_len, which its refusal named ("seq_len must be ...")
            from .errors import check_int

            check_int("simulate", "prompt", prompt)
    if train and weight_dtype == spec.UNQUANTIZED:
        weight_dtype = None  # unquantized weights: what training holds anyway
    quantization = {"weight_dtype": weight_dtype, "kv_dtype": kv_dtype}
    if fp8_gemm != spec.DEFAULT_FP8_GEMM:
        quantization["fp8_gemm"] = fp8_gemm
    if weight_bits is not None:  # (Workload checks it applies: exl2)
        quantization["weight_bits"] = weight_bits
    if train and (weight_dtype or kv_dtype or weight_bits is not None or fp8_gemm != spec.DEFAULT_FP8_GEMM):
        raise ConfigError("weight_dtype, weight_bits, kv_dtype and fp8_gemm apply to inference, not to train=True.")
    if train and compiled:  # the command's compiled training step (a layout's kernel model) is not this function's
        raise ConfigError("compiled: this function times a compiled decode; a compiled training step is "
                          "`simulate --train --compile` with a layout.")
    # a keyword this mode does not read is refused, as the command refuses a typed option
    # (cli/simulate.py refuse_other_mode): seq_len=4096 without train=True ran a 2,048-token prompt
    unread = ({"prompt": prompt is not None, "gen": gen != 128, "kv_cache": kv_cache != spec.DEFAULT_KV_CACHE,
               "decode_code": decode_code != spec.DEFAULT_DECODE_CODE, "cuda_graphs": bool(cuda_graphs),
               "cache_size": cache_size is not None, "eager_prefill": bool(eager_prefill)} if train else
              {"seq_len": seq_len is not None, "tgt_len": tgt_len is not None,
               "recompute": recompute != spec.DEFAULT_RECOMPUTE,
               "impl": impl is not None, "tokens": tokens is not None, "step_time": step_time is not None})
    if any(unread.values()):
        names = ", ".join(name for name, given in unread.items() if given)
        raise ConfigError(f"{names}: read only with train=True; inference takes prompt, gen and batch." if not train
                          else f"{names}: inference keywords, which train=True ignores; a training step takes "
                          "seq_len and batch.")
    source = None
    if not train:  # the weights' format: the checkpoint's unless weight_dtype says (checkpoint.py)
        quantization = inference_options(cfg, quantization)
        source = quantization.pop("weight_dtype_source")
    chosen_layout = make_layout(layout)
    framework = chosen_layout.framework if chosen_layout is not None else None
    code = implied(framework, impl, attention, cfg.family, runs_flash(chosen))
    why = (attention_source(framework, impl, attention, cfg.family, runs_flash(chosen), inference=not train)
           if has_attention(cfg) else None)
    impl, attention = code["impl"], code["attention"]
    if chosen_layout is not None:
        from .layout import timing as parallel_time

        chosen_layout.check(cfg, inference=not train)
        if train:
            chosen_layout.check_schedule()
        if train:
            workload, warnings = make_workload(cfg, seq_len, holds_cache=False, batch=batch, dtype=dtype,
                                               tgt_len=tgt_len, recompute=recompute, attention=attention, impl=impl)
            from .layout.overlap import framework_overlap

            # the framework's overlap, as the command's defaults (Megatron's sends and gradient reduction)
            overlap = framework_overlap(chosen_layout)
            data = parallel_time.simulate_training(cfg, workload, chosen_layout, chosen, tokens=tokens,
                                                   step_seconds=step_time, price=price, overlap=overlap)
        else:
            workload, warnings = make_workload(cfg, prompt, batch=batch, dtype=dtype, attention=attention,
                                               gen_tokens=gen, precision="pure", kv_cache=kv_cache,
                                               **quantization)
            sim.refuse_layout_cache_size(cache_size)
            data = parallel_time.simulate_decode(cfg, workload, chosen_layout, chosen, cuda_graphs=bool(cuda_graphs),
                                                 compiled=bool(compiled), implementation=decode_code,
                                                 eager_prefill=bool(eager_prefill))
        data["inputs"] = {"model": cfg.name, **chosen.input_fields(), "dtype": workload.dtype,
                          "seq_len": workload.seq_len, "gen": workload.gen_tokens, "batch": workload.batch,
                          "recompute": workload.recompute, "tokens": tokens}
        if train:  # the code the step was timed as, the optimizer, the overlap: as the command's
            data["inputs"].update(training_inputs(cfg, workload, overlap))
        else:
            data["inputs"].update({**{k: v for k, v in quantization.items() if v is not None},
                                   **decode_inputs(workload, cuda_graphs, bool(compiled), latent=bool(cfg.mla)),
                                   "implementation": decode_code, **({"eager_prefill": True} if eager_prefill else {})})
    elif train:
        workload, warnings = make_workload(cfg, seq_len, holds_cache=False, batch=batch, dtype=dtype,
                                           tgt_len=tgt_len, recompute=recompute, attention=attention, impl=impl)
        from .roofline_training import simulate_training

        data = simulate_training(cfg, workload, chosen, tokens=tokens, step_seconds=step_time, price=price)
    else:
        workload, warnings = make_workload(cfg, prompt, batch=batch, dtype=dtype, attention=attention,
                                           gen_tokens=gen, **generation_start(cfg), **quantization)
        data = sim.simulate_inference(cfg, chosen, prompt=workload.seq_len, gen=gen, batch=batch,
                                      dtype=workload.dtype, attention=attention, kv_cache=kv_cache,
                                      quantization=quantization, implementation=decode_code,
                                      cuda_graphs=bool(cuda_graphs), cache_size=cache_size, compiled=bool(compiled),
                                      eager_prefill=bool(eager_prefill))
    if not train:  # dollars per million generated tokens at the end-to-end rate, as `simulate --price`
        add_generation_cost(data, chosen, price)
    if source:
        data["inputs"]["weight_dtype_source"] = source
    if why is not None:  # which attention was timed and why, where none was given (as the CLI's)
        data["inputs"]["attention_source"] = why
    return SimulationResult(data, train, chosen_layout is not None, warnings)
