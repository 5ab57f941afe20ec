"""Plain-text rendering of an Estimate: human units, aligned tables. No formulas live here.

Kept free of pandas and matplotlib so that `estimate` starts fast.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

from costmodel.checkpoint import weights_note


#: Decimal prefixes (counts, FLOPs, FLOP/s, bytes per second), largest first.
SI_PREFIXES = ((1e24, "Y"), (1e21, "Z"), (1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"),
               (1e6, "M"), (1e3, "k"))
#: Parameter counts as people write them (6.74 B).
COUNT_SUFFIXES = ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K"))
#: Binary units of bytes.
BINARY_UNITS = ((2**80, "YiB"), (2**70, "ZiB"), (2**60, "EiB"), (2**50, "PiB"), (2**40, "TiB"),
                (2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB"))


def _scaled(value: float, steps: tuple[tuple[float, str], ...]) -> tuple[str, str] | None:
    """value / factor with two decimals and its prefix, for the largest factor <= |value| (the
    next one up where the rounding reaches 1000: 999,999 -> '1.00' 'M', not '1000.00' 'k');
    None below the smallest factor."""
    for index, (factor, prefix) in enumerate(steps):
        if abs(value) >= factor:
            text = f"{value / factor:.2f}"
            if index and abs(float(text)) >= 1000:
                factor, prefix = steps[index - 1]
                text = f"{value / factor:.2f}"
            return text, prefix
    return None


def si(value: float, unit: str = "") -> str:
    """1234567 -> '1.23 M', 1.6125e18 FLOP -> '1.61 EFLOP' (decimal prefixes up to Y)."""
    scaled = _scaled(value, SI_PREFIXES)
    if scaled is None:
        return f"{value:g} {unit}".rstrip()
    return f"{scaled[0]} {scaled[1]}{unit}"


def count(value: float) -> str:
    """Parameters: 6738415616 -> '6.74 B'."""
    scaled = _scaled(value, COUNT_SUFFIXES)
    return f"{value:g}" if scaled is None else f"{scaled[0]} {scaled[1]}"


def binary_bytes(value: float) -> str:
    """Bytes in binary units: 13476831232 -> '12.55 GiB'."""
    scaled = _scaled(value, BINARY_UNITS)
    return f"{value:g} B" if scaled is None else f"{scaled[0]} {scaled[1]}"


def plural(number: int, noun: str, nouns: str | None = None) -> str:
    """1 -> '1 batch size', 11 -> '11 batch sizes', 1280000 -> '1,280,000 points'."""
    return f"{number:,} {noun if number == 1 else nouns or noun + 's'}"


def rate(value: float) -> str:
    """A rate with its precision: 3,565 -> '3,565'; 12.4 -> '12.4'; 0.0213 -> '0.0213'."""
    if value >= 100 or value == 0:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def exact_number(exact: str, value: float) -> str:
    """A rational from sympy as a reader wants it: '24704' -> '24,704'; '7168/3' ->
    '7168/3, about 2,389.3'."""
    if exact.lstrip("-").isdigit():
        return f"{int(exact):,}"
    return f"{exact}, about {value:,.1f}"


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], align: str | None = None) -> str:
    """An aligned text table; align is one character per column, 'l' or 'r'."""
    rows = [[str(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    align = align or "l" + "r" * (len(headers) - 1)

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            c.ljust(w) if a == "l" else c.rjust(w) for c, w, a in zip(cells, widths, align)
        ).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def mtp_note(inputs: dict[str, Any]) -> str:
    """", MTP 1": the multi-token prediction depths a training run counts (--mtp), "" without."""
    return f", MTP {inputs['mtp']}" if inputs.get("mtp") else ""


def per_layer_labels(per_layer: dict[str, int]) -> dict[str, int]:
    """The Parameters rows of params.per_layer ("decoder", "decoder.mamba", ...): "per mamba layer"
    where one stack has kinds of layer (the kind names it, and fits the column), "per decoder mamba
    layer" where both stacks appear, "per decoder layer" for a stack of one kind."""
    stacks = {key.split(".")[0] for key in per_layer}
    return {"per " + (key.replace(".", " ") if len(stacks) > 1 else key.split(".")[-1]) + " layer": value
            for key, value in per_layer.items()}


def render_estimate(result: dict[str, Any], rows: Sequence[Any]) -> str:
    """The human report of `estimate`: parameters, FLOPs, memory, regime and the block table."""
    i, p, f, m, r = (result[k] for k in ("inputs", "params", "flops", "memory", "regime"))
    lengths = f"seq_len {i['seq_len']}" + (f", tgt_len {i['tgt_len']}" if i["tgt_len"] else "")
    out = [
        f"{i['model']} ({i['architecture']}, {i['family']}): {lengths}, batch {i['batch']}, "
        f"{i['dtype']}, impl {i['impl']}, attention {i['attention']}, recompute {i['recompute']}" + mtp_note(i)
        + (f", {i['gen_tokens']} generated tokens" if i["gen_tokens"] else ""),
        *([note] if (note := weights_note(i.get("weight_dtype"), i.get("weight_dtype_source"))) else []),
        "",
        "Parameters",
        f"  total              {count(p['total']):>12}  ({p['total']:,})",
        *([f"  active per token   {count(p['active']):>12}  ({p['active']:,}; routed experts a "
           "token skips left out)"] if "active" in p else []),
        f"  embeddings         {count(p['embeddings']):>12}",
        f"  output head        {count(p['head']):>12}"
        + ("  (tied to the embeddings: counted once, above)" if not p["head"] and i["architecture"] != "encoder"
           else ""),
        *([f"  MTP depths         {count(p['mtp']):>12}  (--mtp {i['mtp']}; the output head "
           "shared, counted above)"] if p.get("mtp") else []),
    ]
    for label, value in per_layer_labels(p["per_layer"]).items():
        out.append(f"  {label:<19}{count(value):>12}" if len(label) <= 19 else f"  {label}  {count(value)}")
    tokens_note = "per target token" if i["tgt_len"] else "per token"
    out += [
        "",
        f"FLOPs (matmul, 2*m*n*k as FlopCounterMode counts them; whole batch; the head's logits at {f['logits']})",
        f"  forward            {si(f['forward'], 'FLOP'):>14}   {tokens_note} {si(f['forward_per_token'], 'FLOP')}",
        f"  training (fwd+bwd) {si(f['training'], 'FLOP'):>14}   {tokens_note} {si(f['training_per_token'], 'FLOP')}",
        f"  other ops, forward {si(f['other_forward'], 'FLOP'):>14}   (norms, softmax, activations, adds)",
        *([f"  windowed kernel    {si(f['windowed_kernel_forward'], 'FLOP'):>14}   (forward if the "
           "sliding layers computed only their windows; eager computes every score)"]
          if "windowed_kernel_forward" in f else []),
        *([f"  decode step        {si(f['decode_step']['forward'], 'FLOP'):>14}   at context "
           f"{f['decode_step']['context']}; absorbed MLA {si(f['decode_step']['forward_absorbed'], 'FLOP')}"]
          if "decode_step" in f else []),
        "",
        "Memory",
        f"  weights            {binary_bytes(m['weights']):>12}   "
        f"({m['bytes_per_param']['weights']} B/param)",
        f"  gradients          {binary_bytes(m['gradients']):>12}   "
        f"({m['bytes_per_param']['gradients']} B/param)",
        f"  optimizer states   {binary_bytes(m['optimizer']):>12}   "
        f"({m['bytes_per_param']['optimizer']} B/param: {m['bytes_per_param']['note']})",
        f"  activations        {binary_bytes(m['activations']):>12}   (saved for backward)",
        *([f"  {'':<19}{'':>12}   for comparison only, Korthikanti et al. 2022's formula for GPT "
           f"layers: {binary_bytes(m['korthikanti_2022_activations'])} ({m['korthikanti_2022_variant']}); "
           "the figure above is this model's code"] if "active" not in p else []),
        *([f"  quantized weights  {binary_bytes(m['quantized_weights']['total']):>12}   "
           f"({m['quantized_weights']['format']}: data {binary_bytes(m['quantized_weights']['data'])}, "
           f"scales {binary_bytes(m['quantized_weights']['scales'])}, zeros "
           f"{binary_bytes(m['quantized_weights']['zeros'])}, tables "
           f"{binary_bytes(m['quantized_weights']['tables'])}, unquantized "
           f"{binary_bytes(m['quantized_weights']['unquantized'])})"]
          if "quantized_weights" in m else []),
        f"  KV cache           {binary_bytes(m['kv_cache']):>12}"
        + (f"   ({m['kv_cache_dtype']})" if "kv_cache_dtype" in m else "")
        + (f"   ({m['kv_cache_note']})" if "kv_cache_note" in m else ""),
        f"  training total     {binary_bytes(m['training_total']):>12}",
        f"  inference total    {binary_bytes(m['inference_total']):>12}   (weights, KV cache, buffers, ids and logits of the larger "
        f"phase; the prefill's logits at {m['logits']['inference_total']})",
        *([f"  generation         {binary_bytes(m['generate_total']):>12}   (the same with the prefill's logits at "
           f"{m['logits']['generate_total']}: what simulate and the fit verdict size)"]
          if i["architecture"] != "encoder" else []),  # an encoder generates nothing: no such line
        "",
        "Regime",
        f"  attention (n^2 d)  {si(r['attention_flops'], 'FLOP'):>14}   "
        f"{100 * r['attention_share']:.1f}% of the layers' matmuls",
        f"  projections + FFN  {si(r['projection_ffn_flops'], 'FLOP'):>14}",
        f"  dominant: {r['dominant']}",
        ("  crossover n*: none (no attention layer)" if r["crossover_seq_len"] == float("inf") else
         f"  crossover n* = {r['crossover_formula']} = "
         f"{exact_number(r['crossover_seq_len_exact'], r['crossover_seq_len'])} tokens"),
        "",
        "Per block (summed over layers)" + ("; saved: what each block holds for backward, a layer's "
                                            "blocks once, as full recomputation rebuilds one layer at a time"
                                            if i["recompute"] == "full" else ""),
    ]
    if "parallel" in result:
        out[-1:-1] = [render_parallel(result["parallel"]), ""]
    out.append(
        table(
            ["block", "x", "params", "fwd FLOPs", "share", "other FLOPs", "saved", "KV cache"],
            (
                [
                    row.path,
                    row.count,
                    count(row.params) if row.params else "",
                    si(row.flops_forward) if row.flops_forward else "",
                    f"{100 * row.flops_forward / f['forward']:.1f}%" if row.flops_forward else "",
                    si(row.flops_other) if row.flops_other else "",
                    binary_bytes(row.saved_bytes) if row.saved_bytes else "",
                    binary_bytes(row.kv_cache_bytes) if row.kv_cache_bytes else "",
                ]
                for row in rows
            ),
        )
    )
    return "\n".join(out)


def render_parallel(p: dict[str, Any]) -> str:
    """The per-rank memory and communication of a layout (estimate with --dp/--tp/--pp...)."""
    lay = p["layout"]
    head = (f"Parallel layout: {plural(lay['gpus'], 'GPU')} = tp {lay['tp']} x pp {lay['pp']} x dp {lay['dp']}"
            + (f" x cp {lay['cp']}" if lay.get("cp", 1) > 1 else "")
            + (f" (ep {lay['ep']} of {'tp x dp, experts whole: etp 1' if lay.get('etp') else 'dp'})"
               if lay.get("ep", 1) > 1 else "") + (f", FP8 {lay['fp8']}" if lay.get("fp8") else "")
            + (f" (HSDP: {lay['dp_replicate']} replicas of shard groups of {lay['dp_shard']})" if lay.get("dp_shard") else "")
            + (" + SP" if lay["sp"] else "") + f", ZeRO {lay['zero']}, {lay['framework']} ({p['precision']} "
            f"precision{', gradients reduced in ' + lay['grad_reduce_dtype'] if lay.get('grad_reduce_dtype') else ''}"
            f"{', precision-aware optimizer ' + lay['precision_aware_optimizer'] if lay.get('precision_aware_optimizer') else ''}); {plural(lay['microbatches'], 'micro-batch', 'micro-batches')} of {lay['micro_batch']} per step "
            f"(global batch {lay['global_batch']:,})"
            + (f", {lay['schedule']}" + (f" x {plural(lay['virtual_stages'], 'virtual stage')}" if lay["virtual_stages"] > 1 else "")
               if lay["pp"] > 1 else ""))
    keys = ("weights", "gradients", "optimizer", "activations", "buffers", "total")
    rows = ([str(row["stage"]), str(row["layers"]), ",".join(map(str, row["micro_batches_in_flight"])),
             *(binary_bytes(row[k]) for k in keys)] for row in p["stages"])
    lines = [head, "Memory per rank, by pipeline stage (the most loaded rank of each: data-parallel rank 0)",
             table(["stage", "layers", "in flight", *keys], rows)]
    lines.append(f"Most loaded rank: stage {p['per_rank']['stage']}, {binary_bytes(p['per_rank']['total'])}")
    if "experts" in p:
        x = p["experts"]
        lines.append(f"Experts: ep {x['ep']}, {x['experts_per_rank']} a rank, gradients over {x['expert_data_parallel']} "
                     f"ranks; the most loaded EP rank ({x['most_loaded_ep_rank']}) takes {x['load_factor']:.3g}x the "
                     f"balanced tokens; {100 * x['dropped_fraction']:.3g}% dropped"
                     + (f"; the {x['ep_dispatcher']} dispatcher (a token once per target node and rank)"
                        if x.get("ep_dispatcher", "alltoall") != "alltoall" else ""))
    lines.append("Communication per rank per step (payload; wire bytes with ring factors)")
    comm, wire = p["communication"], p["wire"]
    lines.append(table(["group", "collective", "payload", "wire"],
                       ([group, kind, binary_bytes(value),
                         binary_bytes(wire[group][kind]) if kind in wire.get(group, {}) else "by node (time)"]
                        for group, kinds in comm.items() for kind, value in kinds.items()), align="llrr")
                 if comm else "  none (one GPU)")
    if "offload" in p:
        lines += render_offload(p["offload"], p.get("deepspeed_estimator"))
    return "\n".join(lines)


def render_offload(o: dict[str, Any], deepspeed: dict[str, Any] | None) -> list[str]:
    """ZeRO-Offload/Infinity: where the offloaded state lives and what crosses PCIe and NVMe."""
    what = "optimizer state" if o["offload"] == "optimizer" else "optimizer state and parameters"
    lines = [f"Offloaded ({'ZeRO-Offload' if o['offload'] == 'optimizer' else 'ZeRO-Infinity'}): the {what} "
             f"on {o['device']}; each rank's partition {o['partition_params']:,} parameters",
             f"  host memory {binary_bytes(o['host_bytes_per_rank'])} per rank, "
             f"{binary_bytes(o['host_bytes_per_node'])} per node ({plural(o['ranks_per_node'], 'rank')}; "
             f"{plural(o['nodes'], 'node')})"]
    if o["device"] == "nvme":
        lines.append(f"  NVMe {binary_bytes(o['nvme_bytes_per_rank'])} per rank, "
                     f"{binary_bytes(o['nvme_bytes_per_node'])} per node; "
                     f"{binary_bytes(o['nvme_bytes_per_step'])} read and written per rank per step")
    lines.append(f"  PCIe {binary_bytes(o['pcie_bytes_per_step'])} per rank per step")
    if deepspeed is not None and "omitted" in deepspeed:
        lines.append(f"DeepSpeed {deepspeed['version']}'s estimator left out: {deepspeed['omitted']}.")
    elif deepspeed is not None:
        largest = deepspeed["largest_layer_params"]  # ZeRO-3's estimator only; ZeRO-2's has none
        lines.append(f"DeepSpeed {deepspeed['version']}'s estimator (model states only, x{deepspeed['additional_buffer_factor']} "
                     "on the host"
                     + (f", {plural(largest, 'parameter')} in its largest layer" if largest is not None else "")
                     + ("; it has no NVMe case: its CPU figure" if o["device"] == "nvme" else "") + "): "
                     f"{binary_bytes(deepspeed['bytes_per_gpu'])} per GPU, "
                     f"{binary_bytes(deepspeed['host_bytes_per_node'])} per node")
    return lines


def seconds(value: float) -> str:
    """A duration in readable units."""
    if value == float("inf"):
        return "inf"
    for limit, factor, unit in ((86400 * 365, 86400 * 365, "years"), (86400, 86400, "days"),
                                (3600, 3600, "h"), (60, 60, "min"), (1, 1, "s"), (1e-3, 1e-3, "ms")):
        if value >= limit:
            return f"{value / factor:.3g} {unit}"
    return f"{value / 1e-6:.3g} us"


def render_parallel_training(r: dict[str, Any]) -> str:
    """`simulate --train` with a layout: the step and where its time goes, then each rank's memory."""
    i, step, p = r["inputs"], r["step"], r["parallel"]
    exposed = step["exposed_communication_seconds"]
    out = [
        f"{i['model']} training on {p['layout']['gpus']} x {i['hardware']} ({i['dtype']}): seq_len "
        f"{i['seq_len']}, " + (f"impl {i['impl']}, attention {i['attention']}, " if "attention" in i else "")
        + f"recompute {i['recompute']}" + mtp_note(i),
        "",
        f"  {'step':<22}{seconds(step['seconds']):>10}   {rate(step['tokens_per_second'])} tokens/s "
        f"({rate(step['tokens_per_second'] / p['layout']['gpus'])} a GPU); MFU {100 * step['mfu']:.1f}% ({step.get('flops_convention', 'dense')} model FLOPs over the {i['dtype']} datasheet peak{'' if p['layout'].get('fp8') is None else ', as FP8 runs are reported: it may pass 100%'}), HFU {100 * step['hfu']:.1f}% "
        f"({step['tflops_per_gpu']:.0f} TFLOP/s per GPU"
        + (" with recomputation)" if i["recompute"] != "none" else ")"),
        f"  {'compute':<22}{seconds(step['compute_seconds']):>10}   (the slowest stage's micro-batches)",
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
    if "mfu_measured" in r:
        out.append(f"  MFU of the measured step: {100 * r['mfu_measured']:.1f}%")
    out += _train_cost(r)
    fits = "fits" if r["fits"] else "does NOT fit"
    out += ["", render_parallel(p),
            f"The most loaded rank {fits} in {binary_bytes(r['memory_capacity'])}."]
    return "\n".join(out)


def latent_form(inputs: dict[str, Any]) -> str:
    """ ", latent attention absorbed": the form a decode ran latent attention in (simulate's --mla,
    naive by default; plan --serve's and serve's, absorbed), "" for a model without it."""
    return f", latent attention {inputs['mla']}" if inputs.get("mla") else ""


def weight_group(inputs: dict[str, Any]) -> str:
    """ " g128": the values per scale of the run's quantized weights, typed or the format's default
    (costmodel/quantization.WEIGHT_DTYPES: int4's 128, nf4's 64); "" where it scales per row."""
    from costmodel.quantization import WEIGHT_DTYPES

    dtype = inputs.get("weight_dtype")
    group = inputs.get("weight_group") or WEIGHT_DTYPES.get(dtype, (0, None))[1] if dtype else None
    return f" g{group}" if group else ""


def render_parallel_decode(r: dict[str, Any]) -> str:
    """Inference with a layout: the prefill, the generation and its mean step (the time per
    output token), the step at the last context and its all-reduces, memory per rank."""
    i, token, rank, lay = r["inputs"], r["token"], r["per_rank"], r["layout"]
    ep = f" (ep {lay['ep']})" if (lay.get("ep") or 1) > 1 else ""
    return "\n".join([
        f"{i['model']} serving on {lay['gpus']} x {i['hardware']} ({i['dtype']}): tp {lay['tp']} x pp "
        f"{lay['pp']} x dp {lay['dp']}{ep}, batch {i['batch']} per replica, context {i['seq_len'] + i['gen']:,}",
        *([f"prompt {i['seq_len']}, generate {i['gen']}, attention {i['attention']}{latent_form(i)}, "
           f"{i['kv_cache']} KV cache"
           + (f" in {i['kv_dtype']}" if i.get("kv_dtype") else "")
           + (f", weights {i['weight_dtype']}" if i.get("weight_dtype") else "")
           + weight_group(i)
           + (", CUDA graphs" if i.get("cuda_graphs") else "")
           + (", compiled" if i.get("compiled") else "")] if "kv_cache" in i else []),
        *([note] if (note := weights_note(i.get("weight_dtype"), i.get("weight_dtype_source"))) else []),
        *([f"  {'prefill (first token)':<24}{seconds(r['prefill']['seconds']):>10}   "
           f"of which tp all-reduces {seconds(r['prefill']['tp_all_reduce_seconds'])}"
           + (f", ep all-to-alls {seconds(r['prefill']['ep_all_to_all_seconds'])}" if ep else "")
           + f", pipeline sends {seconds(r['prefill']['pp_seconds'])}"] if "prefill" in r else []),
        *(_generation_lines(r["generation"], i["gen"], 24) if "generation" in r else []),
        *([f"  {'time per output token':<24}{seconds(tpot):>10}   the decode steps' mean (plan --serve ranks by it)"]
          if (tpot := r.get("generation", {}).get("time_per_output_token")) is not None else []),
        *([f"  {'last step':<24}{seconds(token['seconds_per_token']):>10}   "
           f"{rate(token['tokens_per_second'])} tokens/s over the replicas, a step at context {i['seq_len'] + i['gen']:,}",
           f"  {'of which tp all-reduces':<24}{seconds(token['tp_all_reduce_seconds']):>10}",
           *([f"  {'ep all-to-alls':<24}{seconds(token['ep_all_to_all_seconds']):>10}"] if ep else []),
           f"  {'pipeline sends':<24}{seconds(token['pp_seconds']):>10}"]
          # --gen 0 or 1: the prefill alone gives the tokens; no decode step runs (a "last step" then
          # contradicted the line above it, "no decode step")
          if i["gen"] > 1 or "prefill" not in r else []),
        f"Memory of the most loaded rank: weights {binary_bytes(rank['weights'])}, KV cache "
        f"{binary_bytes(rank['kv_cache'])}, ids and logits {binary_bytes(rank['transient'])}, total "
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
        f"{i['kv_cache']} KV cache"
        + (f" in {i['kv_dtype']}" if i.get("kv_dtype") else "")
        + (f", weights {i['weight_dtype']}" if i.get("weight_dtype") else "")
        + weight_group(i)
        + (", CUDA graphs" if i.get("cuda_graphs") else "")
        + (", compiled" if i.get("compiled") else ""),
        *([note] if (note := weights_note(i.get("weight_dtype"), i.get("weight_dtype_source"))) else []),
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
            *([f"  host: {d['host']['ops_per_step']:,} eager ops a step ({i.get('implementation', 'transformers')}), "
               f"{seconds(d['host']['seconds_per_step'])} to issue; the GPU runs behind them, a step takes the "
               "longer of the two" + (" (host-bound: the first step's kernels take less)" if d["host"]["bound"] else "")]
              if d.get("host") and d["host"]["ops_per_step"] is not None else []),
            *([f"  host: the eager ops a {i.get('implementation', 'transformers')} step issues are not counted for this "
               "model, attention or cache (kernel_facts.json \"eager_step_ops\"): the steps are the kernels' alone, "
               "though an eager step on a GPU is often host-bound (docs/time.md)"]
              if d.get("host") and d["host"]["ops_per_step"] is None and d["host"].get("op_time_stated", True)
              else []),
            *([f"  host: {i['hardware']}'s file states no host time an eager op takes (dispatch_s_per_op, "
               "module_s_per_op: the A100 files' only): the steps are the kernels' alone, though an eager step on "
               "a GPU is often host-bound (docs/time.md); --cuda-graphs times a step without it"]
              if d.get("host") and not d["host"].get("op_time_stated", True) else []),
            f"  {_crossover(d['crossover_batch_weights_only'])} "
            f"(weights only: 2 FLOPs and {_weight_bytes(i)} per parameter per token); with this "
            f"context's KV cache {_crossover(d['crossover_batch_at_context'], again=True)}",
        ]
    m = r["memory"]
    out += ["", f"Memory: {binary_bytes(m['bytes'])} at batch {i['batch']} ("
            + ("fits" if m["fits"] else "does NOT fit")
            + f" in {binary_bytes(hw['serving_memory_bytes'])} usable): weights {binary_bytes(m['weights'])}, KV "
            f"cache {binary_bytes(m['kv_bytes_per_token'])} per token per sequence, the prefill's logits at "
            f"{m['logits']}; " + _fit_limits(m, hw)]
    if "decode" in r:
        steps = r["generation_table"]
        out += [
            *(["", "Generation step by step (step k feeds token k, attending to prompt + k keys; seconds per "
               "step, and cumulative including the prefill)",
               table(
                   ["step", "context", "with KV cache", "cumulative", "without cache", "cumulative"],
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
    return [f"  {'generation':<{width}}{seconds(d['decode_seconds']):>10}   {gen:,} token{'s' if gen != 1 else ''} "
            f"a sequence: {counted}"
            + (f"; decode rate {rate(d['decode_tokens_per_second'])} tokens/s" if steps else ""),
            f"  {'prefill + generation':<{width}}{seconds(d['end_to_end_seconds']):>10}   "
            f"end-to-end rate {rate(d['end_to_end_tokens_per_second'])} tokens/s (every new token, "
            "the first included, over the prefill and the steps)"]


def _fit_limits(m: dict[str, Any], hw: dict[str, Any]) -> str:
    """What bounds inference memory, in words: the weights alone, the prompt's prefill, or the
    largest batch and the longest context."""
    usable = hw.get("serving_memory_bytes", hw["memory_bytes"])
    capacity = binary_bytes(usable)
    if m["weights"] > usable:
        return (f"the weights alone ({binary_bytes(m['weights'])}) exceed {capacity}: spread them over "
                "GPUs (--tp)")
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
    lines = [f"  {'time to train':<22}{seconds(r['train_seconds']):>10}   on {si(r['inputs']['tokens'])} tokens"
             + (f", {cost['gpus']:,} GPU" + ("s" if cost["gpus"] != 1 else "") if cost else "")]
    if cost:
        lines.append(f"  {'GPU-hours':<22}{cost['gpu_hours']:>10,.0f}   total {si(cost['flops'], 'FLOP')} "
                     "(model FLOPs, recomputation aside)")
        if cost.get("dollars") is not None:
            lines.append(f"  {'cost':<22}{dollars(cost['dollars']):>10}   at ${cost['price_per_gpu_hour']:g} "
                         "per GPU-hour")
    return lines


def dollars(value: float) -> str:
    """$ with thousands separators: 1234567.8 -> '$1,234,568'; below $100 with cents."""
    return f"${value:,.0f}" if value >= 100 else f"${value:,.2f}"


def render_training(r: dict[str, Any]) -> str:
    """The human report of `simulate --train`."""
    i, m = r["inputs"], r["memory"]
    out = [
        f"{i['model']} training on {i['hardware']} ({i['dtype']}): seq_len {i['seq_len']}, "
        f"batch {i['batch']}, impl {i['impl']}, attention {i['attention']}, recompute {i['recompute']}" + mtp_note(i),
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


def render_fit(fit: dict[str, Any]) -> str:
    """estimate --hardware: fits / does not fit for training and inference, and what would."""
    out = []
    for phase in ("training", "inference"):
        v = fit.get(phase)
        if v is None:
            continue
        where = f"{plural(v['gpus'], fit['hardware'] + ' GPU')}" + (f" ({v['split']})" if "split" in v else "")
        if "refused" in v:  # estimate --cp: a training layout simulate refuses to serve
            out.append(f"{phase.capitalize()} on {where}: not sized; {v['refused'].removeprefix('layout: ')}")
            continue
        out.append(f"{phase.capitalize()} on {where}: {binary_bytes(v['memory'])} per GPU "
                   + ("fits" if v["fits"] else "does NOT fit") + f" in {binary_bytes(v['capacity'])}.")
        if not v["fits"]:
            out += _fit_options(v, 46, "No single change makes it fit; see `plan` for layouts over more GPUs.")
    return "\n".join(out)


def _fit_options(verdict: dict[str, Any], width: int, none: str) -> list[str]:
    """The lines under a verdict that does not fit: the changes that would, cheapest first."""
    if not verdict["options"]:
        return [f"  {none}"]
    return ["  To make it fit (cheapest first):"] + [
        f"    {o['change']:<{width}} {binary_bytes(o['memory']):>12}   {o['cost']}" for o in verdict["options"]]


def render_finetune(r: dict[str, Any]) -> str:
    """`finetune`: the step's memory by part, then whether it fits."""
    i, m = r["inputs"], r["memory"]
    out = [f"{i['model']}: {i['method']} r={i['rank']} on {', '.join(i['targets'])} ({i['adapter_dtype']} adapters), "
           f"{i['optimizer']}" + (" offloaded" if i["offload_optimizer"] else "")
           + f"; seq_len {i['seq_len']:,}, batch {i['batch']}, {i['dtype']}, attention {i['attention']}, "
           f"recompute {i['recompute']}",
           f"  parameters         {count(m['params']):>12}   trainable {count(m['trainable_params'])} "
           f"({m['trainable_params']:,}, {100 * m['trainable_params'] / m['params']:.3f}%)",
           f"  base weights       {binary_bytes(m['base_weights']):>12}   "
           + ("nf4 with double quantization (norms and embeddings in " + i["dtype"] + ")"
              if i["method"] == "qlora" else f"frozen, {i['dtype']}, no gradients"),
           f"  adapters           {binary_bytes(m['adapters']):>12}",
           f"  adapter gradients  {binary_bytes(m['gradients']):>12}",
           f"  optimizer          {binary_bytes(m['optimizer']):>12}"
           + (f"   (on NVMe: {binary_bytes(m['nvme'])}, {binary_bytes(m['nvme_bytes_per_step'])} read and written "
              f"a step; PCIe {binary_bytes(m['pcie_bytes_per_step'])} a step)" if m.get("nvme") else
              f"   (on the host: {binary_bytes(m['host'])}; PCIe {binary_bytes(m['pcie_bytes_per_step'])} a step)"
              if i["offload_optimizer"] else ""),
           f"  activations        {binary_bytes(m['activations']):>12}   (saved for backward, adapters' included)",
           f"  total on the GPU   {binary_bytes(m['total']):>12}"]
    out += [f"  note: {note}" for note in m["notes"]]
    if "fit" in r:
        f = r["fit"]
        out += ["", f"On one {f['hardware']}: {binary_bytes(f['memory'])} "
                + ("fits" if f["fits"] else "does NOT fit") + f" in {binary_bytes(f['capacity'])}."]
        if not f["fits"]:
            out += _fit_options(f, 30, "No single change, nor QLoRA with full recomputation, makes it fit.")
    return "\n".join(out)
