"""`plan`: every layout of a model on N GPUs, ranked; with --serve, serving layouts; with --serve
--rate, the deployments that meet p99 SLOs (reports/serving.py's capacity search)."""

from __future__ import annotations

import json

import click
from click.core import ParameterSource

from costmodel import spec
from costmodel.config import ConfigError
from costmodel.cost import check_tokens
from costmodel.sizes import LENGTH_FORMS, SizeError, parse_length

from .inputs import InputError, finite, load_model, with_mtp
from .options import (nodes_hint, ATTENTION_HELP, FP8_HELP, IMPL_HELP, choice_option, decode_code_option, dtype_option,
                      hardware_option, json_option, model_options, mtp_option, optimizer_option,
                      refuse_mla_without_latent, refuse_typed, LENGTH, PRICE, RATE, SECONDS_NUMBER, TOKENS, untimed_offload_option)

#: The options each mode of plan reads and the others would ignore (parameter name: option).
SERVE_ONLY = {"prompt": "--prompt", "gen": "--gen", "kv_cache": "--kv-cache", "mla": "--mla",
              "slo_ttft": "--slo-ttft", "slo_tpot": "--slo-tpot", "requests": "--requests",
              "mamba_ssm_cache_dtype": "--mamba-ssm-cache-dtype", "attention_backend": "--attention-backend",
              "decode_code": "--decode-code", "scheduler": "--scheduler", "engine_release": "--engine-release"}
TRAINING_ONLY = {"seq_len": "--seq-len", "global_batch": "--global-batch", "impl": "--impl", "zero": "--zero",
                 "sp": "--sp", "framework": "--framework", "ep": "--ep", "etp": "--etp", "cp": "--cp", "cp_rotate": "--cp-rotate",
                 "dp_shard": "--dp-shard",
                 "schedule": "--schedule",
                 "fp8": "--fp8", "recompute": "--recompute", "mtp": "--mtp", "flops_convention": "--flops-convention",
                 "fp8_param_gather": "--fp8-param-gather", "tp_only_amax_red": "--tp-only-amax-red",
                 "no_align_grad_reduce": "--no-align-grad-reduce", "grad_reduce_dtype": "--grad-reduce-dtype",
                 "overlap_grad_reduce": "--overlap-grad-reduce", "pure_precision": "--pure-precision",
                 "optimizer": "--optimizer"}
SEARCH_IGNORES = {"batch": "--batch", "dtype": "--dtype", "attention": "--attention", "kv_cache": "--kv-cache",
                  "dp": "--dp", "gpus": "--gpus", "rank_by": "--rank-by", "tokens": "--tokens", "compiled": "--compile"}


def refuse_other_modes(ctx: click.Context, serve: bool, rate: float | None) -> None:
    """One line naming the options typed that this mode of plan would ignore."""
    if not serve:
        refuse_typed(ctx, SERVE_ONLY, "serving options (--serve); a training plan takes --seq-len and "
                     "--global-batch.")
        return
    refuse_typed(ctx, TRAINING_ONLY, "training options, which --serve ignores; a serving plan takes --batch, "
                 "--prompt and --gen.")
    if rate is None:
        refuse_typed(ctx, {k: SERVE_ONLY[k] for k in ("slo_ttft", "slo_tpot", "requests", "mamba_ssm_cache_dtype",
                                                      "attention_backend", "scheduler", "engine_release")},
                     "the capacity search's options: add --rate.")
        return
    refuse_typed(ctx, SEARCH_IGNORES, "the capacity search (--serve --rate) does not read them: it searches "
                 "GPU counts and replicas in the hardware's dtype (`serve` takes --dtype and --attention "
                 "for one deployment; --tokens prices a training run).")


def serving_lengths(prompt: str | None, gen: str, rate: float | None) -> tuple:
    """--prompt and --gen as the mode reads them: the capacity search (--rate) draws each request's
    lengths from a distribution, as serve's --prompt and --output do (a length mix typed there said
    "'uniform:128:1024' is not a valid integer range"); a plan of --batch sequences takes one length."""
    if rate is not None:
        from costmodel.serving.api import as_lengths

        try:
            for value, option in ((prompt, "--prompt"), (gen, "--gen")):
                if value is not None:
                    as_lengths(value, option)
        except ConfigError as error:
            raise InputError(str(error)) from None
        return prompt or "512", gen
    counts = []
    for value, option, least in ((prompt, "--prompt", 1), (gen, "--gen", 0)):
        if value is None:
            counts.append(None)
            continue
        try:
            count = int(value) if value.strip().lstrip("-").isdigit() else parse_length(value)  # -1: the least's line
        except (SizeError, ValueError):
            raise InputError(f"{option} {value!r}: a length mix is read by the capacity search (--serve --rate); "
                             f"without --rate give {LENGTH_FORMS}.") from None
        if count < least:
            raise InputError(f"{option} must be at least {least} tokens, got {count}.")
        counts.append(count)
    return tuple(counts)


@click.command()
@model_options
@hardware_option()
@click.option("--gpus", type=str, default=None, help="How many GPUs of that kind; several counts comma-separated (8,16,32) to compare them (required unless --serve --rate).")
@click.option("--seq-len", "-n", type=LENGTH, default=None, help="Training: tokens per sequence (default 2048 or the context).")
@click.option("--global-batch", type=int, default=None, help="Training: sequences per step (default 8 x gpus).")
@click.option("--serve", is_flag=True, help="Plan serving instead: layouts for --batch sequences of --prompt + --gen tokens.")
@click.option("--batch", "-b", type=int, default=None, help="Training: fix the micro-batch; --serve: the sequences served at once (default 32).")
@click.option("--prompt", type=str, default=None,
              help="--serve: prompt tokens (default 2048, or what the context leaves after --gen; with --rate 512); "
                   "with --rate also a length mix as serve's --prompt: uniform:LOW:HIGH, "
                   "lognormal:MEDIAN:SIGMA[:LOW:HIGH] or histogram:FILE.json.")
@click.option("--gen", "--output", "--gen-tokens", "gen", type=str, default=str(spec.DEFAULT_GEN_TOKENS), show_default=True,
              help="--serve: generated tokens (--output: serve's name); with --rate a length mix too, as --prompt.")
@dtype_option(None, "Weights and activations (default: the hardware's, bf16 for the GPU presets, fp16 on "
              "V100 and T4, which have no bf16 tensor cores).")
@choice_option("--impl", spec.IMPLEMENTATIONS, "Only this activation profile: " + IMPL_HELP)
@choice_option("--attention", spec.ATTENTIONS, "Only this kernel: " + ATTENTION_HELP)
@choice_option("--kv-cache", spec.KV_CACHES, "--serve: dynamic (torch.cat copies the cache each step) or static "
               "(written in place).", spec.DEFAULT_KV_CACHE)
@click.option("--tp", type=int, default=None, help="Only this tensor-parallel size.")
@click.option("--pp", type=int, default=None, help="Only this pipeline size.")
@click.option("--dp", type=int, default=None, help="Only this data-parallel size.")
@click.option("--zero", type=click.IntRange(0, 3), default=None, help="Only this ZeRO stage.")
@click.option("--dp-shard", type=int, default=None, help="Hybrid sharding (FSDP2's HSDP, or Megatron-FSDP's HFSDP "
              "with --framework megatron --zero 3): shard groups of this many data-parallel ranks in every layout "
              "(default: all of dp).")
@click.option("--sp/--no-sp", default=None, help="Only with (or without) sequence parallelism.")
@choice_option("--framework", spec.FRAMEWORK_NAMES, "Only this framework.")
@click.option("--ep", type=int, default=None, help="Only this expert-parallel size (a mixture of experts).")
@click.option("--etp", type=int, default=None, help="Only this size of the experts' own tensor parallelism (Megatron-Core; "
              "default: 1 beside --tp, and 2, 4, 8 and tp where they divide the grid: docs/layouts.md).")
@click.option("--cp", type=int, default=None, help="Only this context-parallel size (default: 1, and sizes that "
              "keep at least 4096 tokens a rank).")
@choice_option("--cp-rotate", spec.CP_ROTATES, "How every layout with context parallelism moves keys and values "
               f"(default {spec.CP_ROTATES[0]}, under DeepSpeed a2a; a2a: DeepSpeed-Ulysses' or Megatron-Core's head-parallel "
               "all-to-alls, docs/layouts.md); only layouts with --cp above 1.", hints=spec.CP_ROTATE_HINTS)
@choice_option("--schedule", spec.SCHEDULES, "Only this pipeline schedule (default: 1f1b and interleaved).")
@choice_option("--fp8", spec.FP8_RECIPES, "Train every layout with this FP8 recipe (docs/layouts.md).")
@choice_option("--recompute", spec.RECOMPUTES, "Only this recomputation.")
@optimizer_option
@click.option("--fp8-param-gather", is_flag=True, default=False,
              help="Every layout holds Megatron-Core's FP8 parameters (--fp8 current or delayed; only --framework "
                   "megatron --zero 1 or 2 layouts take them), or gathers FSDP2's in float8 (--framework fsdp2 "
                   "--fp8 tensorwise), as simulate's option.")
@click.option("--tp-only-amax-red", is_flag=True, default=False,
              help="Every layout all-reduces delayed scaling's amaxes over TP x CP (--fp8 delayed; megatron "
                   "layouts), as simulate's option.")
@click.option("--no-align-grad-reduce", is_flag=True, default=False,
              help="Megatron's interleaved layouts start each chunk's gradient reduce as its last backward ends "
                   "(the other layouts have no chunks to align), as simulate's option.")
@click.option("--overlap-grad-reduce", is_flag=True, default=False,
              help="Megatron's layouts reduce their gradients under the last micro-batch's backward, as "
                   "Megatron-LM's --overlap-grad-reduce and NeMo's and Megatron-Bridge's recipes do (default: "
                   "Megatron-LM's, after the backward; the other frameworks' already overlap), as simulate's option.")
@choice_option("--grad-reduce-dtype", spec.GRAD_REDUCE_DTYPES, "Every layout reduces its gradients in this dtype "
               "(--dtype bf16; megatron and fsdp2 layouts, the others are not candidates; default each framework's), "
               "as simulate's.")
@click.option("--pure-precision", is_flag=True, default=False,
              help="Every layout trains the model built in --dtype (bf16 or fp16) so: weights, gradients and AdamW's "
                   "moments in it, no fp32 master (--framework fsdp2; the other frameworks' layouts are not "
                   "candidates), as simulate's option.")
@click.option("--tokens", type=TOKENS, default=None, help="Training: tokens to train on (a number, 1e12, or one with k, M, B (G) or T: 15T): each layout's days, GPU-hours and FLOPs.")
@click.option("--compile", "compiled", is_flag=True, help="torch.compile's fusions, as simulate --compile (the "
              "kernel-level model; training, or --serve without --rate).")
@choice_option("--flops-convention", spec.FLOPS_CONVENTIONS, "Training: the model FLOPs MFU (and the run's FLOPs) "
               f"count: {spec.FLOPS_CONVENTIONS.phrase()}, as simulate's.")
@click.option("--price", type=PRICE, default=None, help="Dollars per GPU-hour (default: the hardware file's price_per_gpu_hour, if it has one): training with --tokens, or --serve --rate's $/h and $/M out columns ($/M out over the offered output rate a deployment keeps up with).")
@choice_option("--rank-by", spec.RANK_BY, f"{spec.RANK_BY.described()}.", "time")
@mtp_option
@click.option("--top", type=click.IntRange(min=1), default=10, show_default=True,
              help="Rows of the ranked table; typed beside --json, the feasible rows it keeps (else all).")
@choice_option("--time-model", spec.TIME_MODELS, "kernels (the default) or roofline, as simulate's (docs/time.md).")
@untimed_offload_option
@json_option('{"feasible": [...], "infeasible": [...]} on stdout.')
@click.option("--rate", type=RATE, default=None,
              help="--serve: requests per second to serve within --slo-ttft/--slo-tpot (a capacity search; "
                   "--hardware may list presets).")
@click.option("--slo-ttft", type=SECONDS_NUMBER, default=None, help="--serve --rate: p99 time to first token, seconds.")
@click.option("--slo-tpot", type=SECONDS_NUMBER, default=None, help="--serve --rate: p99 time per output token, seconds.")
@click.option("--requests", type=int, default=300, show_default=True, help="--serve --rate: requests simulated per point.")
@choice_option("--weight-dtype", spec.WEIGHT_DTYPE_CHOICES, "--serve: quantized weights, each tensor-parallel "
               f"rank's shards as stored (as simulate's). {spec.WEIGHT_DTYPE_DEFAULT}")
@click.option("--weight-group", type=click.IntRange(min=1), default=None, help="--serve: values per scale of --weight-dtype.")
@click.option("--quantize-head", is_flag=True, default=False,
              help="--serve: the output head in --weight-dtype too (gpt-fast's, torchao's); default bf16.")
@choice_option("--quant-layout", spec.QUANT_LAYOUTS, "--serve, --weight-dtype int8 or int4: how the weights are "
               "stored (gptq's by default; gpt-fast's, torchao's: bf16 scales, tinygemm's int4).")
@choice_option("--kv-dtype", spec.KV_DTYPES, "--serve: a quantized KV cache.")
@choice_option("--fp8-gemm", spec.FP8_GEMMS, "--serve, --weight-dtype fp8: how its GEMMs multiply.")
@choice_option("--mla", spec.MLA_FORMS, "--serve: latent attention (DeepSeek) absorbed, as vLLM runs it, or naive "
               "(see simulate).", spec.DEFAULT_SERVE_MLA)
@click.option("--cuda-graphs", type=click.Choice(spec.CUDA_GRAPHS), default=None,
              help="--serve: steps replayed from CUDA graphs. With --rate as serve's (default auto: the engine's); "
                   "without, on times each layout's decode step replayed from a graph, as simulate --cuda-graphs "
                   "(default auto: eager, as Hugging Face generate runs).")
@choice_option("--mamba-ssm-cache-dtype", spec.MAMBA_SSM_CACHE_DTYPES, "--serve --rate: a hybrid's Mamba-2 / "
               "Gated DeltaNet SSM state in vLLM's cache in the model dtype (auto, the default) or float32, as serve's.")
@click.option("--attention-backend", type=str, default=None,
              help="--serve --rate: the engine's attention backend, whose kernel's published figures time each "
                   "step's attention, as serve's: flash-attn2 (default) or flash-attn3 (Hopper).")
@decode_code_option("--serve: ", None, "Default, one rule for both modes and serve's (decode_codes.serving_code): "
                    "without --rate Hugging Face generate's (transformers, as simulate's default), with --rate the "
                    "search's vllm scheduler's engine's (vllm).")
@click.option("--scheduler", type=click.Choice(spec.PLAN_SCHEDULERS), default=None,
              help="--serve --rate: the engine whose scheduler the search runs, as serve's: vllm (vLLM's v1, the "
                   "default) or sglang (SGLang's, at --engine-release; its pool pages single tokens, no --pp).")
@click.option("--engine-release", type=str, default=None,
              help="--serve --rate --scheduler sglang: the SGLang release whose constants it runs, v0.3.0 or v0.4.0 "
                   "(default), as serve's.")
@click.option("--ray", "ray_address", type=str, default=None,
              help="--serve --rate: run the search's configurations as Ray tasks in the cluster at this address "
                   "('local' starts one here; needs pip install '.[ray]') instead of a local process pool.")
def plan(model, config, hardware_name, gpus, seq_len, global_batch, serve, batch, prompt, gen, dtype, impl,
         attention, kv_cache, tp, pp, dp, zero, dp_shard, sp, framework, ep, etp, cp, cp_rotate, schedule, fp8, recompute, optimizer,
         fp8_param_gather, tp_only_amax_red, no_align_grad_reduce, grad_reduce_dtype, overlap_grad_reduce, pure_precision, mtp, tokens,
         flops_convention, compiled, price,
         rank_by, top, time_model, as_json, rate, slo_ttft, slo_tpot, requests, weight_dtype, weight_group, quantize_head,
         quant_layout, kv_dtype, fp8_gemm, mla, mamba_ssm_cache_dtype, attention_backend, scheduler, engine_release,
         ray_address, cuda_graphs, decode_code) -> None:
    """Every layout of a model on N GPUs: those that do not fit (and why, in a word), the rest
    ranked by step time (training) or time per output token (--serve); with --tokens, the days,
    GPU-hours, FLOPs and dollars of the run. With --serve --rate: the deployments (GPUs, tp,
    replicas, budgets) that meet p99 SLOs, simulated (docs/serving.md). Exit status 0 when a
    layout fits (or a deployment meets the SLOs), 1 when none does (the table or --json still
    printed whole: "feasible" empty), 2 for bad input."""
    from costmodel.planning import plan as make_plan

    # --top typed beside --json keeps that many feasible rows (it was read by the table only: --top 1
    # --json printed all 1,342 of Llama 2 7B's on 8 GPUs); untyped, --json keeps every one
    json_top = top if click.get_current_context().get_parameter_source("top") == ParameterSource.COMMANDLINE else None
    if rate is not None:  # a bad number is named first, before what is missing (the SLOs, --serve)
        from costmodel.serving.capacity import check_target_numbers

        try:
            check_target_numbers(rate, slo_ttft, slo_tpot)
        except ConfigError as error:
            raise InputError(str(error)) from None
    if rate is None or serve:  # (--rate without --serve: its own line below)
        refuse_other_modes(click.get_current_context(), serve, rate)
    prompt, gen = serving_lengths(prompt, gen, rate)
    cfg = with_mtp(load_model(model, config), None if serve else mtp)
    refuse_mla_without_latent(click.get_current_context(), cfg)
    if rate is not None:
        for name, given in (("--quantize-head", quantize_head), ("--quant-layout", quant_layout is not None)):
            if given:
                raise InputError(f"{name}: not modelled by the --rate capacity search (plan --serve without --rate).")
        if not serve:
            raise InputError("--rate plans serving: add --serve.")
        from costmodel.serving.kvcache import check_engine_cache
        from reports.serving_capacity import plan_capacity_command

        try:  # a refusal of the model itself: one line, not one per deployment searched
            check_engine_cache(cfg)
        except ConfigError as error:
            raise InputError(str(error)) from None
        met = plan_capacity_command(cfg, hardware_name, rate, slo_ttft, slo_tpot, requests, prompt, gen, tp,
                              top, as_json, mla=mla, pp=pp, ray_address=ray_address, price=price, json_top=json_top,
                              cuda_graphs=cuda_graphs or "auto", weight_dtype=weight_dtype,
                              weight_group=weight_group, kv_dtype=kv_dtype,
                              fp8_gemm=fp8_gemm or spec.DEFAULT_FP8_GEMM, time_model=time_model,
                              decode_code=decode_code, scheduler=scheduler or "vllm",
                              **({"engine_release": engine_release} if engine_release is not None else {}),
                              **({"mamba_ssm_cache_dtype": mamba_ssm_cache_dtype} if mamba_ssm_cache_dtype else {}),
                              **({"attention_backend": attention_backend} if attention_backend else {}))
        if not met:  # no deployment meets the targets: 1, as when no layout fits below (README, "Exit status")
            click.get_current_context().exit(1)
        return
    if cuda_graphs is not None and not serve:
        raise InputError(spec.CUDA_GRAPHS_NEED_SERVE)
    if ray_address is not None:
        raise InputError("--ray runs the capacity search: add --serve --rate.")
    if gpus is None:
        raise InputError("--gpus is required (how many GPUs of that kind).")
    try:
        counts = [int(x) for x in gpus.split(",")]
    except ValueError:
        raise InputError(nodes_hint(gpus, hardware_name) or
                         f"--gpus {gpus!r}: give a whole number, or several separated by commas.") from None
    try:
        check_tokens(tokens)
        if recompute is not None:  # a module recomputation the model has no part for: one line, not a search
            from costmodel.module_recompute import check_recomputed_modules

            check_recomputed_modules(cfg, recompute)
        result = make_plan(cfg, counts if len(counts) > 1 else counts[0], hardware_name, serve=serve,
                           seq_len=seq_len, global_batch=global_batch, batch=batch, prompt=prompt, gen=gen,
                           dtype=dtype, impl=impl, attention=attention, kv_cache=kv_cache, tokens=tokens,
                           price=price, rank_by=rank_by, time_model=time_model, mla=mla, tp=tp, pp=pp, dp=dp,
                           zero=zero, dp_shard=dp_shard, sp=sp, framework=framework, recompute=recompute,
                           ep=ep, etp=etp, cp=cp, **({"cp_rotate": cp_rotate} if cp_rotate else {}),
                           schedule=schedule, fp8=fp8, fp8_param_gather=fp8_param_gather,
                           tp_only_amax_red=tp_only_amax_red, no_align_grad_reduce=no_align_grad_reduce,
                           grad_reduce_dtype=grad_reduce_dtype, overlap_grad_reduce=overlap_grad_reduce,
                           pure_precision=pure_precision,
                           weight_dtype=weight_dtype, weight_group=weight_group,
                           quantize_head=quantize_head, quant_layout=quant_layout, kv_dtype=kv_dtype, fp8_gemm=fp8_gemm, cuda_graphs=cuda_graphs or "auto",
                           flops_convention=flops_convention or "dense", compiled=compiled,
                           optimizer=optimizer, decode_code=decode_code)
    except ConfigError as error:
        raise InputError(str(error)) from None
    for warning in result.warnings:
        click.echo(f"warning: {warning}", err=True)
    for note in result.notes:
        click.echo(f"note: {note}", err=True)
    if as_json:
        chosen = dict(result.to_dict())  # a copy: the table's counts read the result's own lists
        if json_top is not None:
            chosen["feasible"] = chosen["feasible"][:json_top]
        click.echo(json.dumps(finite(chosen), indent=2))
    else:
        click.echo(result.text(top))
    if not result.feasible:
        click.get_current_context().exit(1)
