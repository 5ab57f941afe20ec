"""Plain-text rendering of `simulate`'s reports: inference (the prefill, the generation step by
step, what bounds memory), one GPU's training step, and both with a parallel layout (the step and
where its time goes; serving on tp x pp x dp). No formulas live here; the units and tables are
reports/text.py's. Kept free of pandas and matplotlib, as text.py is."""

from __future__ import annotations

from typing import Any

from costmodel.checkpoint import weights_note

from .text import (binary_bytes, dollars, gpu_hours, hourly_cost, mtp_note, price_said, rate, render_parallel, seconds,
                   seq_lengths, si, tokens,
                   significant, table)


def render_parallel_training(r: dict[str, Any]) -> str:
    """`simulate --train` with a layout: the step and where its time goes, then each rank's memory."""
    i, step, p = r["inputs"], r["step"], r["parallel"]
    exposed = step["exposed_communication_seconds"]
    out = [
        f"{i['model']} training on {p['layout']['gpus']} x {i['hardware']} ({i['dtype']}): {seq_lengths(i)}, " + (f"impl {i['impl']}, attention {i['attention']}, " if "attention" in i else "")
        + f"recompute {i['recompute']}" + mtp_note(i) + attention_why(i),
        *_verdict_first(r, p["per_rank"]["total"], "the most loaded rank"),
        "",
        f"  {'step':<22}{seconds(step['seconds']):>10}   {rate(step['tokens_per_second'])} tokens/s "
        f"({rate(step['tokens_per_second'] / p['layout']['gpus'])} a GPU); MFU {100 * step['mfu']:.1f}% ({step.get('flops_convention', 'dense')} model FLOPs over the {i['dtype']} datasheet peak{'' if p['layout'].get('fp8') is None else ', as FP8 runs are reported: it may pass 100%'}), HFU {100 * step['hfu']:.1f}% "
        f"({step['tflops_per_gpu']:,.0f} TFLOP/s per GPU"
        + (" with recomputation)" if i["recompute"] != "none" else ")"),
        f"  {'compute':<22}{seconds(step['compute_seconds']):>10}   (the slowest stage's micro-batches"
        + ("; their kernels, the host's ops below standing for the launches)" if "host_wait_seconds" in step else ")"),
        *_by_block(step),
        f"  {'exposed communication':<22}{seconds(sum(exposed.values())):>10}   "
        + ", ".join(f"{group} {seconds(value)}" for group, value in exposed.items()),
        f"  {'pipeline bubble':<22}{seconds(step['bubble_seconds']):>10}   "
        f"({100 * step['bubble_fraction']:.1f}% of the ideal step)",
        f"  {'optimizer step':<22}{seconds(step['optimizer_seconds']):>10}",
    ]
    if step.get("gradient_accumulation_seconds"):  # fp16 Megatron: each later micro-batch's in-place add
        out.append(f"  {'gradient accumulation':<22}{seconds(step['gradient_accumulation_seconds']):>10}")
    if step.get("overlap_contention_seconds"):  # compute slowed under the hidden collectives
        out.append(f"  {'overlap contention':<22}{seconds(step['overlap_contention_seconds']):>10}   "
                   f"(compute under {seconds(step['hidden_communication_seconds'])} of hidden communication)")
    if step.get("fsdp_copy_seconds"):  # FSDP2's copy-in / copy-out around its collectives (layout/fsdp_copies.py)
        out.append(f"  {'FSDP2 copies':<22}{seconds(step['fsdp_copy_seconds']):>10}   (FSDP2's copies into and out of "
                   "its collectives' buffers)")
    if step.get("dtensor_copy_seconds"):  # DTensor's cat around sequence-sharded TP collectives (dtensor_copies.py)
        out.append(f"  {'DTensor copies':<22}{seconds(step['dtensor_copy_seconds']):>10}   (DTensor's copies around "
                   "each sequence-sharded tensor-parallel collective)")
    host = step.get("host")
    if host:  # an eager step whose counted ops the kernel model weighs (layout/kernel_step.py)
        out.append(f"  {'host (eager ops)':<22}{seconds(host['seconds_per_step']):>10}   "
                   f"({host['ops_per_step']:,.0f} ops issued on the busiest rank's host; the kernels take "
                   f"{seconds(host['kernels_seconds'])}: the step is the longer, "
                   + (f"host-bound: {seconds(step.get('host_wait_seconds', 0.0))} past the kernels)" if host['bound']
                      else "kernel-bound)"))
        if host.get("op_time_note"):
            out.append(f"  {'':<22}{'':>10}   {host['op_time_note']}")
    if step.get("host_sync_seconds"):  # the MoE layers' host syncs (layout/host_syncs.py)
        out.append(f"  {'host syncs (MoE)':<22}{seconds(step['host_sync_seconds']):>10}   (each MoE layer's "
                   "device-to-host sync: the host's calls past the GPU's work)")
    if step.get("host_syncs_note"):
        out.append(f"  {step['host_syncs_note']}")
    if "mfu_measured" in r:
        out.append(f"  MFU of the measured step: {100 * r['mfu_measured']:.1f}%")
    out += _train_cost(r)
    fits = "fits" if r["fits"] else "does NOT fit"
    # where it does not fit, the two commands that answer "what does": a bare "does NOT fit" after a
    # priced run (1T tokens of llama3.1-70b on 256 H100s at dp 256, ZeRO 0) left the user there
    # a hardware file is named by its path (a file's name, "my-h100", is no preset those commands read)
    named = i.get("hardware_file", i["hardware"])
    advice = "" if r["fits"] else (f": `plan --hardware {named} --gpus {p['layout']['gpus']}` ranks the layouts "
                                   f"that fit; `estimate --hardware {named}` with this layout says what to change")
    out += ["", render_parallel(p),
            f"The most loaded rank {fits} in {binary_bytes(r['memory_capacity'])}{advice}."]
    return "\n".join(out)


def _by_block(step: dict[str, Any], shown: int = 4) -> list[str]:
    """The compute's largest blocks (the kernel model's compute_by_block_seconds), as shares of it."""
    blocks = step.get("compute_by_block_seconds")
    if not blocks:
        return []
    total = step["compute_seconds"]
    top = ", ".join(f"{path} {seconds(value)} ({100 * value / total:.0f}%)"
                    for path, value in list(blocks.items())[:shown])
    rest = len(blocks) - shown
    return [f"  {'':<22}{'':>10}   by block: {top}" + (f"; {rest} more in --json's compute_by_block_seconds"
                                                       if rest > 0 else "")]


def _verdict_first(r: dict[str, Any], needed: int, what: str) -> list[str]:
    """simulate --train's verdict before its times, where the memory does not fit: the step, the time
    to train and the dollars that follow are those of a run that cannot start (said again, with the
    memory by part, at the end)."""
    return _does_not_fit(r["fits"], needed, r["memory_capacity"], what, "of the GPU", "times and cost")


def _does_not_fit(fits: bool, needed: int, capacity: int, what: str, usable: str, shown: str) -> list[str]:
    """The line under a simulate report's title where its memory does not fit (none where it does):
    the `shown` figures below are those of a run that cannot start."""
    if fits:
        return []
    return [f"DOES NOT FIT: {what} needs {binary_bytes(needed)}, more than the {binary_bytes(capacity)} {usable}; "
            f"the {shown} below are for a run that cannot start (memory at the end)."]


def attention_why(inputs: dict[str, Any]) -> str:
    """ "; eager attention: the default without a layout ...": which attention a run timed and why, where
    none was typed (defaults.attention_source, simulate's inputs "attention_source"); "" otherwise."""
    return f"; {inputs['attention_source']}" if inputs.get("attention_source") else ""


def latent_form(inputs: dict[str, Any]) -> str:
    """ ", latent attention absorbed": the form a decode ran latent attention in (simulate's --mla,
    naive by default; plan --serve's and serve's, absorbed), "" for a model without it."""
    return f", latent attention {inputs['mla']}" if inputs.get("mla") else ""


def weight_group(inputs: dict[str, Any]) -> str:
    """ " g128": the values per scale of the run's quantized weights, typed or the format's default
    (costmodel/quantization.WEIGHT_DTYPES: int4's 128, nf4's 64); "" where it scales per row."""
    from costmodel.quantization import WEIGHT_DTYPES

    dtype = inputs.get("weight_dtype")
    if dtype == "exl2":  # its groups are its converter's; its bits a weight are the figure (costmodel/exl2.py)
        from costmodel.exl2 import DEFAULT_BITS

        return f" at {inputs.get('weight_bits') or DEFAULT_BITS:g} bits a weight"
    group = inputs.get("weight_group") or WEIGHT_DTYPES.get(dtype, (0, None))[1] if dtype else None
    return f" g{group}" if group else ""


def _rank_host_lines(token: dict[str, Any], i: dict[str, Any]) -> list[str]:
    """An eager step's host term on each rank (layout/kernel_step.KernelStepTime.token), where weighed."""
    host = token.get("host")
    if not host:
        return []
    bound = 'host-bound' if host['bound'] else 'kernel-bound'
    if "ops_per_rank" in host:  # a pipeline: each rank issues its stage's share, the stages one after the other
        return [f"  host: {host['ops_per_step']:,} eager ops a step ({i.get('implementation', 'transformers')}) over "
                f"the pipeline's stages, up to {host['ops_per_rank']:,} on one rank's host, "
                f"{seconds(host['seconds_per_step'])} to issue stage after stage; the stages' kernels and exposed "
                f"communication take {seconds(host['kernels_seconds'])}: each stage is the longer of its two, {bound}",
                *([f"  {host['op_time_note']}"] if host.get("op_time_note") else [])]
    return [f"  host: {host['ops_per_step']:,} eager ops a step ({i.get('implementation', 'transformers')}) on each "
            f"rank's host, {seconds(host['seconds_per_step'])} to issue; the rank's kernels and exposed communication "
            f"take {seconds(host['kernels_seconds'])}: the step is the longer, {bound}",
            *([f"  {host['op_time_note']}"] if host.get("op_time_note") else [])]


def render_parallel_decode(r: dict[str, Any]) -> str:
    """Inference with a layout: the prefill, the generation and its mean step (the time per
    output token), the step at the last context and its all-reduces, memory per rank."""
    i, token, rank, lay = r["inputs"], r["token"], r["per_rank"], r["layout"]
    last = i["seq_len"] + max(i["gen"] - 1, 0)  # the last step's keys: the last token is never fed back
    ep = f" (ep {lay['ep']})" if (lay.get("ep") or 1) > 1 else ""
    return "\n".join([
        f"{i['model']} serving on {lay['gpus']} x {i['hardware']} ({i['dtype']}): tp {lay['tp']} x pp "
        f"{lay['pp']} x dp {lay['dp']}{ep}, batch {i['batch']} per replica, context {last:,}",
        *([f"prompt {i['seq_len']}, generate {i['gen']}, attention {i['attention']}{latent_form(i)}, "
           f"{i['kv_cache']} KV cache"
           + (f" in {i['kv_dtype']}" if i.get("kv_dtype") else "")
           + (f", weights {i['weight_dtype']}" if i.get("weight_dtype") else "")
           + weight_group(i)
           + (", CUDA graphs" if i.get("cuda_graphs") else "")
           + (", compiled" if i.get("compiled") else "") + (" (the prefill eager)" if i.get("eager_prefill") else "")
           + attention_why(i)] if "kv_cache" in i else []),
        *([note] if (note := weights_note(i.get("weight_dtype"), i.get("weight_dtype_source"))) else []),
        *_does_not_fit(r["fits"], rank["total"], r["memory_capacity"], "the most loaded rank",
                       "a GPU serves with", "times"),
        *([f"  {'prefill (first token)':<24}{seconds(r['prefill']['seconds']):>10}   "
           f"of which tp all-reduces {seconds(r['prefill']['tp_all_reduce_seconds'])}"
           + (f", ep all-to-alls {seconds(r['prefill']['ep_all_to_all_seconds'])}" if ep else "")
           + f", pipeline sends {seconds(r['prefill']['pp_seconds'])}"] if "prefill" in r else []),
        *(_generation_lines(r["generation"], i["gen"], 24) if "generation" in r else []),
        *_generation_cost(r, 24),
        *([f"  {'time per output token':<24}{seconds(tpot):>10}   the decode steps' mean (plan --serve ranks by it)"]
          if (tpot := r.get("generation", {}).get("time_per_output_token")) is not None else []),
        *([f"  {'last step':<24}{seconds(token['seconds_per_token']):>10}   "
           f"{rate(token['tokens_per_second'])} tokens/s over the replicas, a step at context {last:,}",
           f"  {'of which tp all-reduces':<24}{seconds(token['tp_all_reduce_seconds']):>10}",
           *([f"  {'ep all-to-alls':<24}{seconds(token['ep_all_to_all_seconds']):>10}"] if ep else []),
           f"  {'pipeline sends':<24}{seconds(token['pp_seconds']):>10}", *_rank_host_lines(token, i)]
          # --gen 0 or 1: the prefill alone gives the tokens; no decode step runs (a "last step" then
          # contradicted the line above it, "no decode step")
          if i["gen"] > 1 or "prefill" not in r else []),
        f"Memory of the most loaded rank: weights {binary_bytes(rank['weights'])}, KV cache "
        f"{binary_bytes(rank['kv_cache'])}, ids, logits and transients {binary_bytes(rank['transient'])}, total "
        f"{binary_bytes(rank['total'])} "
        f"({'fits' if r['fits'] else 'does NOT fit'} in {binary_bytes(r['memory_capacity'])})"
        + (f"; the prefill's logits at {r['logits']}" if "logits" in r else ""),
        *([f"Each of the {lay['dp']} data-parallel replicas holds the whole model (--gpus alone sets dp, as "
           "Megatron-LM derives it); --tp or --pp splits it over the GPUs."]
          if not r["fits"] and lay["dp"] > 1 and lay["tp"] == lay["pp"] == 1 and lay.get("ep", 1) == 1 else []),
    ])


def _timing(label: str, t: dict[str, Any], note: str = "") -> str:
    return (f"  {label:<22}{seconds(t['seconds']):>10}   {t['bound']}-bound, "
            f"{t['intensity_flops_per_byte']:.1f} FLOP/B, compute busy {100 * t['compute_busy_fraction']:.0f}%, "
            f"memory busy {100 * t['memory_busy_fraction']:.0f}%{note}")


def _weight_bytes(inputs: dict[str, Any]) -> str:
    """The bytes a decode step reads per parameter, as the crossover batch counts them."""
    if inputs.get("weight_dtype"):
        return f"the {inputs['weight_dtype']} weights as stored, the rest {inputs['dtype']},"
    return f"{inputs['dtype']} bytes"


def render_inference(r: dict[str, Any]) -> str:
    """The human report of `simulate` for inference."""
    i, hw = r["inputs"], r["hardware"]
    out = [
        f"{i['model']} on {i['hardware']} ({i['dtype']}, peak {si(hw['peak_flops_per_s'], 'FLOP/s')} matmul, "
        f"{si(hw['vector_flops_per_s'], 'FLOP/s')} vector, "
        f"{si(hw['bandwidth_bytes_per_s'], 'B/s')}, efficiency compute {i['compute_efficiency']:g} / "
        f"memory {i['memory_efficiency']:g}; ridge {hw['ridge_flops_per_byte']:.3g} FLOP/B)"
        + (f"\n{i['dtype_note']}" if i.get("dtype_note") else ""),
        f"prompt {i['prompt']}, generate {i['gen']}, batch {i['batch']}, attention {i['attention']}{latent_form(i)}, "
        + (f"{i['kv_cache']} KV cache" + (f" of {i['cache_size']:,} tokens, attended whole at every step (--cache-size)"
                                          if i.get("cache_size") else "") if i.get("kv_cache_held", True) else
           "no KV cache (the class holds none: every decode step reruns the decoder over the prompt and the "
           "tokens so far)")
        + (f" in {i['kv_dtype']}" if i.get("kv_dtype") else "")
        + (f", weights {i['weight_dtype']}" if i.get("weight_dtype") else "")
        + weight_group(i)
        + (", CUDA graphs" if i.get("cuda_graphs") else "")
        + (", compiled" if i.get("compiled") else "") + (" (the prefill eager)" if i.get("eager_prefill") else "")
        + attention_why(i),
        *([note] if (note := weights_note(i.get("weight_dtype"), i.get("weight_dtype_source"))) else []),
        *_does_not_fit(r["memory"]["fits"], r["memory"]["bytes"], hw["serving_memory_bytes"],
                       f"batch {i['batch']}", "a GPU serves with", "times"),
        ("times: the kernel-level model (docs/time.md); the bounds, intensities and busy shares, and "
         "the uncached steps, are the roofline's" if i.get("time_model") == "kernels" else
         "times: the roofline (docs/time.md): --time-model roofline, or a hardware file without sm_count, "
         "which the kernel-level model needs"),
        "",
        _timing("prefill", r["prefill"]),
    ]
    if "decode" in r:
        d, steps = r["decode"], r["generation_table"]
        out += [
            *([_timing("first decode step", d["first_token"], f"; context {steps[0]['context']:,}"),
               _timing("last decode step", d["last_token"], f"; context {steps[-1]['context']:,}")] if steps else []),
            *_generation_lines(d, i["gen"]),
            *_generation_cost(r),
            *([f"  host: {d['host']['ops_per_step']:,} eager ops a step ({i.get('implementation', 'transformers')}), "
               f"{seconds(d['host']['seconds_per_step'])} to issue; the GPU runs behind them, "
               + ("each layer a window of its own (below)" if d["host"].get("syncs_per_layer") else
                  "a step takes the longer of the two"
                  + (" (host-bound: the first step's kernels take less)" if d["host"]["bound"] else ""))]
              if d.get("host") and d["host"]["ops_per_step"] is not None else []),
            *([f"  host syncs: {d['host']['syncs_per_step']:,} a step inside the layers (a loop over every expert, "
               "a torch.where each): the host cannot run ahead across them; each window between two takes the "
               "longer of its ops and its kernels, here charged as the step's longer (a lower bound)"]
              if d.get("host") and d["host"].get("syncs_per_step") and not d["host"].get("syncs_per_layer") else []),
            *([f"  host syncs: {d['host']['syncs_per_step']:,} a step, one a layer (the cache's roll check): the host "
               "cannot run ahead past a layer, so each layer is a window of its own, the longer of its ops and its "
               "kernels, and the rest of the step one more"]
              if d.get("host") and d["host"].get("syncs_per_layer") else []),
            *([f"  {d['host']['op_time_note']}"] if d.get("host") and d["host"].get("op_time_note") else []),
            *([f"  host: the eager ops a {i.get('implementation', 'transformers')} step issues are not counted for this "
               "model, attention or cache (kernel_facts.json \"eager_step_ops\"): the steps are the kernels' alone, "
               "though an eager step on a GPU is often host-bound (docs/time.md)"]
              if d.get("host") and d["host"]["ops_per_step"] is None else []),
            f"  {_crossover(d['crossover_batch_weights_only'])} "
            f"(weights only: 2 FLOPs and {_weight_bytes(i)} per parameter per token); "
            + ("with this context's KV cache " if i.get("kv_cache_held", True) else "rerunning this context ")
            + _crossover(d['crossover_batch_at_context'], again=True),
        ]
    m = r["memory"]
    out += ["", f"Memory: {binary_bytes(m['bytes'])} at batch {i['batch']} ("
            + ("fits" if m["fits"] else "does NOT fit")
            + f" in {binary_bytes(hw['serving_memory_bytes'])} usable): weights {binary_bytes(m['weights'])}, KV "
            f"cache {binary_bytes(m['kv_bytes_per_token'])} per token per sequence"
            + (f" ({binary_bytes(m['kv_bytes_per_token_past_windows'])} past the sliding windows)"
               if m["kv_bytes_per_token_past_windows"] != m["kv_bytes_per_token"] else "") + ", the prefill's logits at "
            f"{m['logits']}; " + _fit_limits(m, hw)]
    if "decode" in r:
        steps = r["generation_table"]
        out += [
            *(["", "Generation step by step (step k feeds token k, attending to "
               + (f"the static cache's {i['cache_size']:,} keys whatever the context" if i.get("cache_size")
                  else "prompt + k keys") + "; seconds per step, and cumulative including the prefill)",
               table(
                   ["step", "context", "with KV cache", "cumulative", "without cache", "cumulative"]
                   if i.get("kv_cache_held", True) else  # the class's own steps are the reruns
                   ["step", "context", "rerun", "cumulative", "rerun (roofline)", "cumulative"],
                   ([row["step"], row["context"], seconds(row["with_cache_seconds"]),
                     seconds(row["with_cache_cumulative"]), seconds(row["without_cache_seconds"]),
                     seconds(row["without_cache_cumulative"])] for row in r["generation_table"]),
               )] if steps else []),
        ]
    return "\n".join(out)


def _generation_lines(d: dict[str, Any], gen: int, width: int = 22) -> list[str]:
    """The generation's steps and its two rates (costmodel/roofline.generation_rates): the decode
    steps' own, and end to end, the prefill included (what gpt-fast and vLLM's latency benchmark
    publish)."""
    steps = d["decode_steps"]
    counted = (f"{steps:,} decode step{'s' if steps != 1 else ''} after the prefill's first token"
               if steps else "no decode step: the prefill gives the one token")
    # the sequences the rates are summed over (batch, x dp with a layout): "decode rate 1,491 tokens/s"
    # at batch 32 read as one user's rate; each sequence's own is the rate over them
    sequences = round(d["end_to_end_tokens_per_second"] * d["end_to_end_seconds"] / gen)

    def over(tokens_per_second: float, why: str = "") -> str:
        each = f"{rate(tokens_per_second / sequences)} each" if sequences > 1 else ""
        return (f" over the {sequences:,} sequences" if sequences > 1 else "") + (
            f" ({'; '.join(part for part in (each, why) if part)})" if each or why else "")

    return [f"  {'generation':<{width}}{seconds(d['decode_seconds']):>10}   {gen:,} token{'s' if gen != 1 else ''} "
            f"a sequence: {counted}"
            + (f"; decode rate {rate(d['decode_tokens_per_second'])} tokens/s"
               f"{over(d['decode_tokens_per_second'])}" if steps else ""),
            f"  {'prefill + generation':<{width}}{seconds(d['end_to_end_seconds']):>10}   "
            f"end-to-end rate {rate(d['end_to_end_tokens_per_second'])} tokens/s"
            + over(d["end_to_end_tokens_per_second"],
                   "every new token, the first included, over the prefill and the steps")]


def _generation_cost(r: dict[str, Any], width: int = 22) -> list[str]:
    """simulate --price on inference: the GPUs' dollars an hour over the end-to-end rate
    (costmodel/cost.serving_cost, the formula serve --price uses)."""
    cost = r.get("cost")
    if not cost or "dollars_per_million_output_tokens" not in cost:
        return []
    per_million = cost["dollars_per_million_output_tokens"]
    # ',.4g' read '$2.608e+04' for a long prompt's few tokens: serve's rule (significant) instead
    return [f"  {'cost':<{width}}{'$' + significant(per_million, 4):>10}   per million generated tokens at the "
            f"end-to-end rate ({hourly_cost(cost['price_per_gpu_hour'], cost['dollars_per_hour'], cost['gpus'])}"
            f"{price_said(cost, within=True)})"]


def _fit_limits(m: dict[str, Any], hw: dict[str, Any]) -> str:
    """What bounds inference memory, in words: the weights alone, the prompt's prefill, or the
    largest batch and the longest context."""
    usable = hw.get("serving_memory_bytes", hw["memory_bytes"])
    capacity = binary_bytes(usable)
    if m["weights"] > usable:
        return (f"the weights alone ({binary_bytes(m['weights'])}) exceed {capacity}: spread them over "  # and, as
                "GPUs (--tp) or store them in fewer bytes (--weight-dtype; `estimate --hardware` lists what fits)")  # serve
    if m.get("max_batch") == 0 and m.get("one_sequence_over_bytes"):
        return (f"one sequence of this prompt does not fit: it needs "
                f"{binary_bytes(m['one_sequence_over_bytes'])} more than the {capacity} usable")
    if not m.get("prefill_fits", True):
        return (f"the prefill of this prompt ({binary_bytes(m['bytes_by_phase']['prefill'])}) does not "
                f"fit in {capacity} at this batch; fits batch <= {m['max_batch']:,}")
    past = (f"; the model's context stops at {m['model_context']:,} tokens"
            if m.get("model_context") and m["max_context"] > m["model_context"] else "")
    return (f"fits batch <= {m['max_batch']:,} at this context, "
            + (f"decoding to a context <= {m['max_context']:,} after this prompt at this batch (the prefill's "
               f"ids and KV cache grow with a longer prompt){past}" if m["max_context"] != float("inf") else
               "decoding any number of tokens at this batch ("
               + ("a fixed recurrent state per sequence" if m.get("fixed_state") else
                  "every layer's sliding window caps its cache") + f"){past}"))


def _crossover(batch: float, again: bool = False) -> str:
    """Where a decode step turns compute-bound, in words (the roofline's crossover batch)."""
    subject = "it" if again else "decode"
    if batch == float("inf"):
        return f"{subject} stays memory-bound at any batch"
    if batch <= 1:
        return f"{subject} is compute-bound at any batch (crossover {batch:.2g} < 1)"
    return f"{subject} turns compute-bound at batch {batch:,.0f}"


def _train_cost(r: dict[str, Any]) -> list[str]:
    """The lines for --tokens: time to train, GPU-hours, total FLOPs and, with a price, dollars."""
    if "train_seconds" not in r:
        return []
    cost = r.get("cost", {})
    lines = [f"  {'time to train':<22}{seconds(r['train_seconds']):>10}   on {tokens(r['inputs']['tokens'])}"
             + (f", {cost['gpus']:,} GPU" + ("s" if cost["gpus"] != 1 else "") if cost else "")]
    if cost:
        lines.append(f"  {'GPU-hours':<22}{gpu_hours(cost['gpu_hours']):>10}   total {si(cost['flops'], 'FLOP')} "
                     "(model FLOPs, recomputation aside)")
        if cost.get("dollars") is not None:
            lines.append(f"  {'cost':<22}{dollars(cost['dollars']):>10}   at ${cost['price_per_gpu_hour']:g} "
                         f"per GPU-hour{price_said(cost)}")
    measured = r.get("cost_at_step_time")
    if measured:  # --step-time with --tokens: the run at the measured step too, so no reader takes one for the other
        lines[0] += " at the predicted step"
        lines.append(f"  {'at --step-time':<22}{seconds(measured['train_seconds']):>10}   the measured "
                     f"{seconds(measured['step_seconds'])} step: {gpu_hours(measured['gpu_hours'])} GPU-hours"
                     + (f", {dollars(measured['dollars'])}" if measured.get("dollars") is not None else ""))
    return lines


def render_training(r: dict[str, Any]) -> str:
    """The human report of `simulate --train`."""
    i, m = r["inputs"], r["memory"]
    out = [
        f"{i['model']} training on {i['hardware']} ({i['dtype']}): {seq_lengths(i)}, "
        f"batch {i['batch']}, impl {i['impl']}, attention {i['attention']}, recompute {i['recompute']}" + mtp_note(i)
        + attention_why(i),
        *_verdict_first(r, m["total"], "one GPU"),
        "times: the roofline (docs/time.md), one GPU's training without a layout; --dp 1 for the kernel-level model",
        "",
        _timing("step", r["step"]),
        f"  {'throughput':<22}{rate(r['tokens_per_second']):>10}   tokens/s; MFU at this step time "
        f"{100 * r['mfu_predicted']:.1f}% ({r.get('flops_convention', 'dense')} model FLOPs)"
        + (f"; MFU of the measured step {100 * r['mfu_measured']:.1f}%" if "mfu_measured" in r else ""),
    ]
    out += _train_cost(r)
    out += [
        "",
        f"Memory that must fit: weights {binary_bytes(m['weights'])} + gradients "
        f"{binary_bytes(m['gradients'])} + optimizer {binary_bytes(m['optimizer'])} + activations "
        f"{binary_bytes(m['activations'])} = {binary_bytes(m['total'])} "
        f"({'fits' if r['fits'] else 'does NOT fit'} in {binary_bytes(r['memory_capacity'])})",
    ]
    return "\n".join(out)
