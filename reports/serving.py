"""The `serve` command: parse, call costmodel.serving, format; and the setup lines `plan --serve --rate`'s
table shares (reports/serving_capacity.py). Registered by cli/__init__.py, its choices costmodel/spec.py's;
bad input is one line and exit status 2."""

from __future__ import annotations

import json
import math
from typing import Any

import click

from costmodel.attention_kernels import DEFAULT_SERVING_BACKEND
from costmodel.checkpoint import weights_note
from costmodel.config import ConfigError
from costmodel.json_units import JSON_UNITS
from costmodel.spec import (CUDA_GRAPHS, DEFAULT_HARDWARE, DEFAULT_SCHEDULER, DEFAULT_SERVE_ATTENTION, DEFAULT_SERVE_MLA, DTYPES,
                            DEFAULT_FP8_GEMM, DEFAULT_GEN_TOKENS, FP8_GEMMS,
                            DEFAULT_QUANT_LAYOUT, KV_DTYPES, MAMBA_SSM_CACHE_DTYPES, MLA_FORMS, QUANT_LAYOUTS, ROUTERS, SCHEDULERS, VLLM_BLOCK_SIZES,
                            SERVE_ATTENTIONS, WEIGHT_DTYPE_CHOICES, WEIGHT_DTYPE_DEFAULT)

from .options import LENGTH, PRICE, RATE, SECONDS_NUMBER, decode_code_option, not_replica_options
from .output import DtypeChoice, ReportInputError, atomic_file, check_destination, figure_format, finite, write_text
from .text import hourly_cost, plural, price_said, seconds, significant


def _ms(value: float) -> str:
    return f"{'-':>9}" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{1e3 * value:9.1f}"


def _duration(value: float) -> str:
    """A run's seconds: 205.1 s, or milliseconds under a second (a one-request trace said "over 0.0 s"); from an
    hour on with separators and in words too (`--rate 1e-9` said "over 1039403764.9 s": now "1,039,403,764.9 s,
    33 years")."""
    if value < 1:
        return f"{1e3 * value:.1f} ms"
    return f"{value:,.1f} s" + (f", {seconds(value)}" if value >= 3600 else "")


def load_source(setup: dict[str, Any]) -> str:
    """Where the requests came from: the load generator in words."""
    if setup.get("load") == "concurrency":
        lengths = f"trace {setup['trace']}'s lengths" if setup["trace"] else f"seed {setup['seed']}"
        return f"{setup['concurrency']} concurrent clients, closed loop ({lengths})"
    return f"trace {setup['trace']}" if setup["trace"] else f"Poisson {setup['rate']:g} req/s (seed {setup['seed']})"


def render_setup(summary: dict[str, Any], requests: str | None = None) -> list[str]:
    """The deployment a run simulated, one line per part; `requests` replaces the load's line (--rates)."""
    from costmodel.serving.schedulers import NO_TOKEN_BUDGET  # not at import: costmodel.serving pulls in sympy

    setup = summary["setup"]
    kv = setup["kv_cache"]
    source = load_source(setup)
    lines = [
        f"{setup['model']} on {plural(setup['replicas'], 'replica')} ({setup['router']}"
        + (f"; {setup['disaggregate'][0]} prefill + {setup['disaggregate'][1]} decode" if setup["disaggregate"] else "")
        + f") of {setup['tp']} x {setup['hardware']}"
        + (f" per stage, {setup['pp']} pipeline stages " if setup.get("pp", 1) > 1 else " ")
        + f"({setup['dtype']}), scheduler {setup['scheduler']}: {setup['scheduler_source']}",
        f"budgets: max-num-seqs {setup['max_num_seqs']}, max-batched-tokens "
        f"{'none' if setup['max_batched_tokens'] >= NO_TOKEN_BUDGET else setup['max_batched_tokens']} "
        f"({setup['budget_source']})"
        + (f"; {setup['num_scheduler_steps']} decode steps per decision" if setup.get("num_scheduler_steps", 1) > 1
           else ""),
        # the release whose constants ran: only the JSON named it (v0.3.0's 5,119 sequences, v0.4.0's 4,095)
        *([f"SGLang release: {setup['engine_release']} ({setup['engine_release_source']})"]
          if setup.get("engine_release") else []),
        f"CUDA graphs: {setup['cuda_graphs']} ({setup['cuda_graphs_source']})" if setup.get("cuda_graphs_source")
        else f"CUDA graphs: {setup.get('cuda_graphs', 'off')}",
        *([f"host time a step: {setup['host_time']} ({setup['host_fixed_ms']:g} ms + {setup['host_per_sequence_us']:g} "
           f"us a sequence"
           + (f" from {small[2]} sequences, below it straight from {small[1]:g} ms at {small[0]}"
              if (small := setup.get("host_small_batch")) else "")
           + f"; shares serial {setup['host_shares']['serial']:g}, once a decision "
           f"{setup['host_shares']['decision']:g}, overlapped {setup['host_shares']['overlapped']:g}: "
           "costmodel/serving/host_time.json)"
           + (f", from --host-time {setup['host_time_asked']}" if setup.get("host_time_asked") else "")]
          if setup.get("host_time", "none") != "none" else
          [f"host time a step: none (--host-time {setup['host_time_asked']} on the {setup['scheduler']} scheduler's "
           f"engine, {setup['host_time_engine']}: host_time.json's release rules give it no profile, so the steps are "
           "the GPU's kernels alone)"] if setup.get("host_time_asked") else []),
        f"KV cache per replica: {setup['num_blocks']:,} blocks of {setup['block_size']} tokens "
        + (f"as --num-blocks sets them (the memory budget would hold {kv['num_blocks']:,}: "
           if setup['num_blocks'] != kv['num_blocks'] else "(")
        + f"{kv['kv_bytes_per_token']:,} B per token per GPU; weights {kv['weight_bytes'] / 2**30:.1f} GiB and "
        f"activations {kv['activation_bytes'] / 2**30:.2f} GiB per GPU; {kv['gpu_memory_utilization']:.0%} of "
        f"{kv['memory_bytes'] / 2**30:.4g} GiB"
        + (f" less the {reserve / 2**20:,.0f} MiB reserve)" if (reserve := kv.get("memory_reserve_bytes")) else ")")
        + (" (SGLang's pool: the fraction of the memory free before the weights, less them)"
           if kv.get("rule") == "sglang" else "")
        + (f"; {setup['kv_paging']} ({kv['paged_block_bytes']:,} B per block per GPU)" if setup.get("kv_paging")
           else ""),
        *([f"recurrent states: {kv['state_bytes_per_request']:,} B per request per GPU, "
           f"{kv['state_blocks_per_request']:,} blocks each while it runs: at most {kv['state_slots']:,} "
           f"request{'' if kv['state_slots'] == 1 else 's'} at once"
           + (f" (vLLM's layout, SSM state {setup['mamba_ssm_cache_dtype']})" if setup.get("state_layout") == "vllm"
              else " (transformers' layout)" if setup.get("state_layout") else "")]
          if kv.get("state_bytes_per_request") else []),
        *([note] if (note := weights_note(setup.get("weight_dtype"), setup.get("weight_dtype_source"))) else []),
        *([setup["weights_note"]] if setup.get("weights_note") else []),
        *([code_line(setup["decode_code"], setup["scheduler"])] if setup.get("decode_code") else []),
        *([host_line(setup["host"], setup.get("decode_code"))] if setup.get("host") else []),
        *([fp8_gemm_line(setup)] if setup.get("fp8_gemm_runs") else []),
        *([f"{setup['attention_note']}"] if setup.get("attention_note") else []),
        *backend_line(setup.get("attention_backend")),
        *([f"note: {setup['max_model_len_note']}"] if setup.get("max_model_len_note") else []),
        *([f"prefix caching: off ({setup['prefix_caching_note']})"] if setup.get("prefix_caching_note")
          else ["prefix caching: on (blocks of a shared prefix computed once, reused while cached)"]
          if setup.get("prefix_caching") else []),
        f"requests: {requests or str(summary['requests']) + ' from ' + source}; prompt {setup['prompt']}, output "
        f"{setup['output']} token{'' if str(setup['output']) == '1' else 's'}",
    ]
    return lines


def code_line(code: str, scheduler: str) -> str:
    """The code that decodes (decode_codes.serving_code): the scheduler's engine's, or the one typed."""
    from costmodel.decode_codes import scheduler_code

    why = (f"the {scheduler} scheduler's engine's" if code == scheduler_code(scheduler) else
           f"--decode-code, on the {scheduler} scheduler's schedule")
    return f"decode code: {code} ({why}: its KV cache's heads, its quantized-cache reads; costmodel/decode_codes.json)"


def host_line(host: dict[str, Any], decode_code: str | None = None) -> str:
    """An eager step's host on a GPU (costmodel/serving/host_step.py): whose counted ops, at which time."""
    from costmodel.decode_codes import runs_classes

    code = ("transformers' engine's" if host["code"] != "generate" else "Hugging Face generate's"
            if decode_code is None or runs_classes(decode_code) else f"{decode_code}'s decoding loop's")
    return (f"host: each eager step takes the longer of its kernels and {code} counted ops at "
            f"{host['op_seconds'] * 1e6:.2f} us each" + (f" ({host['op_time_note']})" if host.get("op_time_note") else ""))


def fp8_gemm_line(setup: dict[str, Any]) -> str:
    """Which way fp8 weights multiply here (costmodel/quantized_matmul.py, runs_w8a8): W8A8 at the FP8
    peak, or weight-only where the hardware has no FP8 peak (vLLM runs FP8 checkpoints on compute
    capability >= 7.5 as W8A16 with its FP8 Marlin kernel)."""
    if setup["fp8_gemm_runs"] == "w8a8":
        why = f"{setup['hardware']} has an FP8 peak" if setup["fp8_gemm"] == "auto" else "--fp8-gemm w8a8"
        return f"fp8 GEMMs: w8a8 ({why}): weights and activations in FP8 at the FP8 peak"
    why = f"{setup['hardware']} has no FP8 peak" if setup["fp8_gemm"] == "auto" else "--fp8-gemm w8a16"
    return (f"fp8 GEMMs: w8a16 ({why}): weight-only, dequantized in the kernel, the product at the "
            f"{setup['dtype']} peak (vLLM's FP8 Marlin)")


def render_serve(summary: dict[str, Any]) -> str:
    lines = [
        *render_setup(summary),
        "",
        f"{'(ms)':<10}{'mean':>9}{'p50':>9}{'p90':>9}{'p99':>9}",
    ]
    for name in ("queueing", "ttft", "tpot", "itl", "e2e"):
        row = summary[name]
        lines.append(f"{name.upper() if name != 'queueing' else name:<10}" + "".join(_ms(row[k]) for k in
                                                                                      ("mean", "p50", "p90", "p99")))
    tp, good = summary["throughput"], summary["goodput"]
    lines += [
        "",
        f"throughput: {tp['requests_per_s']:.2f} req/s, {tp['output_tokens_per_s']:,.0f} output tokens/s, "
        f"{tp['total_tokens_per_s']:,.0f} tokens/s over {_duration(summary['duration_s'])}",
    ]
    if "cost" in summary:
        lines.append(cost_line(summary["cost"]))
    if good["slo_ttft_s"] is not None or good["slo_tpot_s"] is not None:
        bounds = ", ".join(f"{name} <= {good[key]:g} s" for name, key in (("TTFT", "slo_ttft_s"), ("TPOT", "slo_tpot_s"))
                           if good[key] is not None)  # only the SLOs given
        lines.append(f"goodput: {good['requests_per_s']:.2f} req/s ({good['fraction_meeting_slo']:.1%} within {bounds})")
    states = summary["setup"]["kv_cache"].get("state_bytes_per_request")
    pool = "pool blocks (KV and states)" if states else "KV blocks"
    lines.append(f"{pool} in use: mean {summary['kv_use']['mean_over_time']:.1%}, max {summary['kv_use']['max']:.1%}; "
                 f"sequences per step: mean {summary['batch']['mean_sequences_over_time']:.1f}, max "
                 f"{summary['batch']['max_sequences']}; {summary['steps']:,} steps; preemptions {summary['preemptions']}")
    return "\n".join(lines)


SUSTAINED_BASIS = {"offered": "the offered rate, which the replicas keep up with",
                   "run": "the run's throughput (no offered rate shown kept up with: a queue, --rate inf, a trace "
                          "or a closed loop, or arrivals that end before the first finish)"}


def cost_line(cost: dict[str, Any]) -> str:
    """serve's cost (costmodel/cost.py serving_cost, over the rate the deployment sustains:
    serving/metrics.sustained_output) in one line."""
    per_million = cost["dollars_per_million_output_tokens"]
    hourly = hourly_cost(cost["price_per_gpu_hour"], cost["dollars_per_hour"], cost["gpus"])
    over = (f" at {significant(cost['output_tokens_per_s'])} output tokens/s, {SUSTAINED_BASIS[cost['basis']]}"
            if cost.get("basis") else " at this throughput")
    return (f"cost: {hourly}{price_said(cost)}; "
            + (f"${significant(per_million, 4)} per million output tokens{over} (the GPUs billed idle or busy)"
               if per_million is not None else "no output tokens, so no price per token"))


def _dollars(value: float | None) -> str:
    return "-" if value is None else significant(value)


def timeline_figure(steps: Any, title: str) -> Any:
    """KV blocks in use and sequences per step over time (one line per replica)."""
    from .figures import pyplot

    plt = pyplot()
    fig, (kv, batch) = plt.subplots(2, 1, figsize=(8, 5), sharex=True)
    for replica, rows in steps.groupby("replica"):
        kv.plot(rows["start_s"], 100 * rows["kv_use"], lw=0.8, label=f"replica {replica}")
        batch.plot(rows["start_s"], rows["sequences"], lw=0.8)
    kv.set_ylabel("KV blocks in use (%)")
    batch.set_ylabel("sequences per step")
    batch.set_xlabel("time (s)")
    kv.set_title(title)
    if steps["replica"].nunique() > 1:
        kv.legend()
    return fig


def latency_figure(rows: list[dict[str, Any]], title: str) -> Any:
    """p50 and p99 TTFT and TPOT against the request rate."""
    from .figures import pyplot

    plt = pyplot()
    fig, (ttft, tpot) = plt.subplots(1, 2, figsize=(9, 3.6))
    rates = [r["rate"] for r in rows]
    for ax, name in ((ttft, "ttft"), (tpot, "tpot")):
        for p in ("p50", "p99"):
            ax.plot(rates, [1e3 * r[name][p] for r in rows], marker="o", label=p)
        ax.set_xlabel("request rate (req/s)")
        ax.set_ylabel(f"{name.upper()} (ms)")
        ax.set_yscale("log")
        ax.legend()
    fig.suptitle(title)
    fig.tight_layout()
    return fig


@click.command()
@click.option("--model", "-m", "model", type=str, help="A preset name or alias (see `models`).")
@click.option("--config", "config", type=str, help="A Hugging Face config.json or a ModelConfig JSON file.")
@click.option("--hardware", "hardware_name", default=DEFAULT_HARDWARE, show_default=True,
              help="A hardware preset (see `hardware`; any case) or a path to a hardware file (docs/time.md).")
@click.option("--rate", type=RATE, default=None, help="Poisson arrivals, requests per second (or --trace).")
@click.option("--concurrency", type=int, default=None,
              help="A closed loop of N clients, each sending its next request when its previous one finishes "
                   "(vLLM benchmark_serving --max-concurrency, AIPerf --concurrency); instead of --rate.")
@click.option("--requests", "count", type=int, default=1000, show_default=True,
              help="With --rate or --concurrency: how many.")
@click.option("--trace", type=str, default=None, help='JSONL: {"arrival": s, "prompt_tokens": N, "output_tokens": M}.')
@click.option("--prompt", default="512", show_default=True,
              help="Prompt tokens: N, uniform:LOW:HIGH, lognormal:MEDIAN:SIGMA[:LOW:HIGH], histogram:FILE.json.")
@click.option("--output", "--gen", "output_tokens", default=str(DEFAULT_GEN_TOKENS), show_default=True,
              help="Output tokens, as --prompt (--gen: simulate's and plan's name).")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--scheduler", type=click.Choice(SCHEDULERS), default=DEFAULT_SCHEDULER, show_default=True,
              help=f"How each step is batched: {SCHEDULERS.described()}.")
@click.option("--max-num-seqs", type=int, default=None, help="Sequences per step (default per scheduler).")
@click.option("--max-batched-tokens", type=LENGTH, default=None, help="Token budget per step (chunk size).")
@click.option("--block-size", type=int, default=None,
              help="Tokens per KV block [default: 16; 1 under --scheduler sglang, whose pool pages single tokens].")
@click.option("--gpu-memory-utilization", type=float, default=None,
              help="The fraction of GPU memory the engine plans with (default: the hardware file's "
              "serving_memory_utilization, 0.9 in every preset: vLLM's default).")
@click.option("--num-blocks", type=int, default=None, help="KV blocks per replica (default: from memory).")
@click.option("--tp", type=int, default=1, show_default=True, help="Tensor-parallel GPUs per replica.")
@click.option("--prefix-caching/--no-prefix-caching", default=None,
              help="Reuse a trace's shared-prefix blocks (vLLM's automatic prefix caching; default: on for vllm).")
@click.option("--num-scheduler-steps", type=int, default=1, show_default=True,
              help="vllm-v0 only: decode steps run per scheduling decision (vLLM v0.6's multi-step scheduling).")
@click.option("--engine-release", type=str, default=None,
              help="The sglang scheduler's SGLang release, whose constants it runs: v0.3.0 or v0.4.0 (default).")
@click.option("--host-time", type=str, default="none", show_default=True,
              help="An engine's host (CPU) time a step beside the GPU's kernels (costmodel/serving/host_time.json: "
                   "vllm-v0.5.4, vllm-v0.6.0, vllm-v1 beside vllm and vllm-v0; sarathi-serve, Vidur's profile of "
                   "Sarathi-Serve's engine, beside sarathi and vllm-v0): fixed + per sequence, "
                   "serial, once per decision or overlapped with the next step as that version runs it; or a "
                   "release, vllm==0.6.3, which takes its engine's profile by host_time.json's release rules "
                   "(the engine --scheduler models: vllm-v0 V0, vllm V1; a V0 run with chunked prefill, timed "
                   "by --scheduler vllm, names its version instead).")
@click.option("--mamba-ssm-cache-dtype", type=click.Choice(MAMBA_SSM_CACHE_DTYPES), default="auto", show_default=True,
              help="vllm, vllm-v0: a hybrid's Mamba-2 / Gated DeltaNet SSM state in the model dtype (auto) or "
                   "float32, as vLLM's option.")
@click.option("--pp", type=int, default=1, show_default=True,
              help="Pipeline stages per replica (pp batches in flight, as vLLM's pipeline parallelism).")
@click.option("--replicas", type=int, default=1, show_default=True, help="Replicas behind the router.")
@not_replica_options
@click.option("--router", type=click.Choice(ROUTERS), default=None,
              help=f"How arrivals are spread over two or more replicas (default: {ROUTERS[0]}).")
@click.option("--disaggregate", type=str, default=None,
              help="P:D: P prefill-only and D decode-only replicas, the KV cache sent between them (replaces --replicas).")
@click.option("--dtype", type=DtypeChoice(DTYPES), default=None, help="Default: the hardware's.")
@click.option("--weight-dtype", type=click.Choice(WEIGHT_DTYPE_CHOICES), default=None, help=WEIGHT_DTYPE_DEFAULT)
@click.option("--weight-group", type=click.IntRange(min=1), default=None,
              help="Values per scale of --weight-dtype (int4 128, nf4 64 by default); with --tp, whole groups "
                   "on each row-parallel shard.")
@click.option("--quant-layout", type=click.Choice(QUANT_LAYOUTS), default=DEFAULT_QUANT_LAYOUT, show_default=True,
              help=f"How int8 and int4 weights are stored: {QUANT_LAYOUTS.described()}.")
@click.option("--kv-dtype", type=click.Choice(KV_DTYPES), default=None,
              help=f"A quantized KV cache ({KV_DTYPES.listed()}: one byte per element and two fp32 scales per "
                   "layer): the blocks a replica holds (default: the model's dtype).")
@click.option("--fp8-gemm", type=click.Choice(FP8_GEMMS), default=DEFAULT_FP8_GEMM, show_default=True,
              help=f"With --weight-dtype fp8, how its GEMMs multiply: {FP8_GEMMS.described()}.")
@click.option("--attention", type=click.Choice(SERVE_ATTENTIONS), default=None,
              help=f"The attention kernel (default: {DEFAULT_SERVE_ATTENTION}; sdpa on Volta and Turing GPUs, where "
                   "FlashAttention-2 does not run).")
@click.option("--attention-backend", type=str, default=None,
              help="The engine's attention backend, whose kernel's published figures time the step's attention: "
                   "flash-attn2 (default: FlashAttention-2, vLLM's FLASH_ATTN before v0.7) or flash-attn3 (Hopper: "
                   "vLLM's FLASH_ATTN from v0.7.0); flashinfer and xformers are refused (no published kernel rates; "
                   "kernel_facts.json serving_attention_backends).")
@click.option("--mla", type=click.Choice(MLA_FORMS), default=DEFAULT_SERVE_MLA, show_default=True,
              help="Latent attention (DeepSeek): absorbed, as vLLM's MLA backend runs it, or naive (transformers').")
@click.option("--time-model", type=click.Choice(("roofline", "kernels")), default=None,
              help="Step times from the kernel-level model (default where the hardware file has sm_count) or the roofline.")
@click.option("--max-capture-len", type=LENGTH, default=None,
              help="--scheduler vllm-v0: vLLM's max_seq_len_to_capture (--max-seq-len-to-capture): a decode step "
                   "whose longest sequence is longer runs eagerly, not from its CUDA graph (default vLLM's 8,192).")
@click.option("--cuda-graphs", type=click.Choice(CUDA_GRAPHS), default="auto", show_default=True,
              help="Steps replayed from CUDA graphs (graph_kernel_s per kernel, no launch overhead): auto, the "
                   "engine's default (vllm-v0, trtllm: decode-only steps; vllm: piecewise, attention eager; the others "
                   "eager); on (an error where the engine has none); off (eager everywhere).")
@decode_code_option("", None, "Default (decode_codes.serving_code, plan --serve's rule): the --scheduler's engine's "
                    "(vllm for vllm, vllm-v0, sarathi and orca; tensorrt-llm for trtllm; transformers for static, "
                    "hf-fifo and hf-prefill-first); a typed code keeps the scheduler's schedule (static with "
                    "tensorrt-llm: TensorRT-LLM's static batches); hf-fifo and hf-prefill-first run transformers only.")
@click.option("--slo-ttft", type=SECONDS_NUMBER, default=None, help="Seconds, for goodput.")
@click.option("--slo-tpot", type=SECONDS_NUMBER, default=None, help="Seconds per output token, for goodput.")
@click.option("--csv", "csv_path", type=str, default=None, help="Write the per-request table here.")
@click.option("--steps-csv", type=str, default=None, help="Write the per-step KV and batch timeline here.")
@click.option("--plot", "plot_path", type=str, default=None,
              help="Save a figure here (.png, .svg or .pdf): the KV and batch timeline, or latency vs rate with --rates.")
@click.option("--rates", type=str, default=None, help="Comma-separated rates: p50/p99 TTFT and TPOT at each.")
@click.option("--price", type=PRICE, default=None,
              help="Dollars per GPU-hour (default: the hardware file's price_per_gpu_hour, if it has one): the "
                   "deployment's $/h and $ per million output tokens at the output rate it sustains (the offered "
                   "rate where it keeps up, else the run's throughput).")
@click.option("--json", "as_json", is_flag=True, help="The summary as JSON on stdout.")
def serve(model, config, hardware_name, rate, concurrency, count, trace, prompt, output_tokens, seed, scheduler, max_num_seqs,
          max_batched_tokens, block_size, gpu_memory_utilization, num_blocks, tp, replicas, dtype, weight_dtype,
          kv_dtype, attention, attention_backend, slo_ttft, slo_tpot, csv_path, steps_csv, plot_path, rates, as_json, router,
          disaggregate, mla, pp, prefix_caching, time_model, fp8_gemm, weight_group, num_scheduler_steps,
          cuda_graphs, max_capture_len, quant_layout, mamba_ssm_cache_dtype, price, host_time, decode_code,
          engine_release) -> None:
    """Serve a stream of requests on an engine replica, simulated step by step (continuous
    batching, paged KV cache): latency percentiles, throughput and goodput."""
    from costmodel.serving import serve as run_serve

    if (model is None) == (config is None):
        raise ReportInputError("give exactly one of --model NAME or --config PATH.")
    if concurrency is not None:
        if rate is not None or rates is not None:  # named as the user gave it
            raise ReportInputError(f"--concurrency and {'--rate' if rate is not None else '--rates'} are two load "
                                   "generators: give one of them.")
        if concurrency < 1:
            raise ReportInputError(f"--concurrency must be a positive number of clients, got {concurrency}.")
    if rates is not None:
        if rate is not None or trace is not None:
            raise ReportInputError("--rates replaces --rate and --trace: give one of the three.")
        try:
            chosen = [float(x) for x in rates.split(",")]
        except ValueError:
            raise ReportInputError(f"--rates must be comma-separated numbers, got {rates!r}.") from None
        bad = next((x for x in chosen if not x > 0), None)  # nan, 0, negative (inf: every request at 0)
        if bad is not None:  # named as --rates, not the --rate the first run would name
            raise ReportInputError(f"--rates must be positive numbers of requests per second, got {bad}.")
        if len(set(chosen)) < len(chosen):  # else the same run twice, two equal rows
            raise ReportInputError(f"--rates {rates!r}: a rate is given twice.")
        tables = [name for name, path in (("--csv", csv_path), ("--steps-csv", steps_csv)) if path]
        if tables:
            raise ReportInputError(f"{' and '.join(tables)}: one run's tables, not written with --rates (its rows "
                                   f"are in --json); give --rate for one run's.")
        rate = chosen[0]
    if concurrency is None and (rate is None) == (trace is None):
        raise ReportInputError("give exactly one of --rate (requests per second), --concurrency N or --trace FILE.")
    if block_size is None:
        from costmodel.serving.replica import default_block_size

        block_size = default_block_size(scheduler)
    if scheduler in ("vllm", "vllm-v0") and block_size >= 1 and block_size not in VLLM_BLOCK_SIZES:
        raise ReportInputError(f"--block-size {block_size}: vLLM takes {', '.join(map(str, VLLM_BLOCK_SIZES))} tokens "
                               f"a block (its CacheConfig's BlockSize; `vllm serve` refuses others), --scheduler {scheduler}.")
    if plot_path is not None:
        figure_format(plot_path, "--plot")
    for path in (csv_path, steps_csv, plot_path):  # every output checked before the run: none half-written
        if path:
            check_destination(path)
    pools = None
    if disaggregate is not None:
        try:
            pools = tuple(int(x) for x in disaggregate.split(":"))
        except ValueError:
            raise ReportInputError(f"--disaggregate must be PREFILL:DECODE replica counts, got {disaggregate!r}.") from None
    if click.get_current_context().get_parameter_source("mla") == click.core.ParameterSource.COMMANDLINE:
        _refuse_mla_without_latent(model, config)
    options = dict(price=price, disaggregate=pools, requests=count, prompt=prompt, output=output_tokens, seed=seed, replicas=replicas, router=router,
                   slo_ttft=slo_ttft, slo_tpot=slo_tpot, scheduler=scheduler, max_num_seqs=max_num_seqs,
                   max_batched_tokens=max_batched_tokens, block_size=block_size,
                   gpu_memory_utilization=gpu_memory_utilization, num_blocks=num_blocks, tp=tp, pp=pp,
                   prefix_caching=prefix_caching, num_scheduler_steps=num_scheduler_steps, dtype=dtype,
                   weight_dtype=weight_dtype, weight_group=weight_group, kv_dtype=kv_dtype, attention=attention,
                   mla=mla, **({"attention_backend": attention_backend} if attention_backend is not None else {}),
                   **({"quant_layout": quant_layout} if quant_layout != DEFAULT_QUANT_LAYOUT else {}),
                   time_model=time_model, fp8_gemm=fp8_gemm, cuda_graphs=cuda_graphs,
                   **({"host_time": host_time} if host_time != "none" else {}),
                   **({"decode_code": decode_code} if decode_code is not None else {}),
                   **({"engine_release": engine_release} if engine_release is not None else {}),
                   **({"max_capture_len": max_capture_len} if max_capture_len is not None else {}),
                   **({"mamba_ssm_cache_dtype": mamba_ssm_cache_dtype} if mamba_ssm_cache_dtype != "auto" else {}))
    if rates is not None:
        _latency_vs_rate(model or config, hardware_name, chosen, options, plot_path, as_json)
        return
    try:
        run = run_serve(model or config, hardware_name, rate=rate, trace=trace, concurrency=concurrency, **options)
    except ConfigError as error:
        raise ReportInputError(str(error)) from None
    if csv_path:
        write_text(csv_path, run.requests.to_csv(index=False))
    if steps_csv:
        write_text(steps_csv, run.steps.to_csv(index=False))
    summary = run.summary()
    if plot_path:
        setup = summary["setup"]
        figure = timeline_figure(run.steps, f"{setup['model']} on {setup['tp']} x {setup['hardware']}, "
                                            f"{setup['scheduler']}")
        save_figure(figure, plot_path)
    click.echo(json.dumps(run.to_dict(), indent=2) if as_json else render_serve(summary))


def save_figure(figure: Any, path: str) -> None:
    """A figure written atomically (reports/output.atomic_file), in the format its suffix names."""
    with atomic_file(path) as stream:
        figure.savefig(stream, format=figure_format(path, "--plot"))


def _refuse_mla_without_latent(model: str | None, config: str | None) -> None:
    """A typed --mla on a model without latent attention: one line (spec.mla_not_applicable)."""
    from costmodel.api import load_model
    from costmodel.presets import load_config_file
    from costmodel.spec import mla_not_applicable

    try:
        why = mla_not_applicable(load_model(model) if model is not None else load_config_file(config))
    except ConfigError as error:
        raise ReportInputError(str(error)) from None
    if why is not None:
        raise ReportInputError(f"--mla: {why}")


def _latency_vs_rate(model: str, hardware_name: str, rates: list[float], options: dict[str, Any],
                     plot_path: str | None, as_json: bool) -> None:
    from costmodel.serving import serve as run_serve
    from costmodel.serving.api import json_rate

    rows, first = [], None
    try:
        for rate in rates:
            summary = run_serve(model, hardware_name, rate=rate, **options).summary()
            first = first or summary
            rows.append({"rate": rate, **{k: summary[k] for k in ("ttft", "tpot", "e2e", "throughput", "goodput", "cost")
                                          if k in summary}})
    except ConfigError as error:
        raise ReportInputError(str(error)) from None
    if plot_path:
        save_figure(latency_figure(rows, f"{model} on {hardware_name}, {options['scheduler']}"), plot_path)
    if as_json:  # the deployment and the load, as `serve --json` names them, then a row per rate
        setup = {k: v for k, v in first["setup"].items() if k != "rate"}  # each row names its own
        sweep = {"setup": setup, "requests": first["requests"], "rates": [{**row, "rate": json_rate(row["rate"])}
                                                                           for row in rows], "units": JSON_UNITS["serve"]}
        click.echo(json.dumps(finite(sweep, nan=True), indent=2))
        return
    setup = first["setup"]
    load = f"{first['requests']} at each rate, Poisson (seed {setup['seed']})" if "seed" in setup else None
    slo = first["goodput"]["slo_ttft_s"] is not None or first["goodput"]["slo_tpot_s"] is not None
    click.echo("\n".join(render_setup(first, load)) + "\n")
    click.echo(f"{'req/s':>7}{'TTFT p50':>10}{'TTFT p99':>10}{'TPOT p50':>10}{'TPOT p99':>10}{'out tok/s':>11}"
               + (f"{'goodput':>9}" if slo else "") + (f"{'$/M out':>9}" if "cost" in first else "") + "  (ms)")
    for r in rows:
        click.echo(f"{r['rate']:>7g}" + "".join(_ms(r[n][p]) + " " for n in ("ttft", "tpot") for p in ("p50", "p99"))
                   + f"{r['throughput']['output_tokens_per_s']:>10,.0f}"
                   + (f"{r['goodput']['fraction_meeting_slo']:>9.0%}" if slo else "")
                   + (f"{_dollars(r['cost']['dollars_per_million_output_tokens']):>9}" if "cost" in r else ""))
    if "cost" in first:  # the price is over the rate sustained, not the out tok/s column (the run's, drain included)
        click.echo("$/M out over the output tokens/s each rate sustains: " + ", ".join(
            f"{r['cost']['output_tokens_per_s']:,.0f} at {r['rate']:g} ({r['cost']['basis']})" for r in rows)
            + "; offered: the rate x the mean output tokens, kept up with; run: the out tok/s column")


def backend_line(backend: str | None) -> list[str]:
    """The line naming an attention backend other than the default (serve's setup, plan --serve --rate's)."""
    if backend in (None, DEFAULT_SERVING_BACKEND):
        return []
    return [f"attention backend: {backend} (its kernel's published figures; kernel_facts.json serving_attention_backends)"]
