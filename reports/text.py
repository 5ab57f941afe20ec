"""Plain-text rendering: human units and aligned tables, and the reports of `estimate` (with its
parallel layout, offload and fit verdict) and `finetune`. `simulate`'s reports are
reports/simulate_text.py's, `plan`'s reports/plan_text.py's. No formulas live here.

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
    None below the smallest factor, and from 1000 of the largest up, which no prefix writes in
    three digits (1e30 tokens were '1000000.00 Y', 8.2e33 FLOP '8219787264000001.00 YFLOP')."""
    for index, (factor, prefix) in enumerate(steps):
        if abs(value) >= factor:
            text = f"{value / factor:.2f}"
            if not index and abs(float(text)) >= 1000:
                return None
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


def tokens(value: float) -> str:
    """A run's tokens as papers count them and `--tokens` reads them (costmodel/sizes.py: k, M, B, T):
    1.5e9 -> '1.50 B tokens'. si() wrote '1.50 G tokens', a suffix for FLOPs, beside `--tokens 1.5B`."""
    return f"{count(value)} tokens"


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


def significant(value: float, digits: int = 3) -> str:
    """`digits` significant figures without an exponent: 0.5587, 12.3; from where those figures reach
    10**digits, whole with separators ($ per million output tokens read '$4.43e+04': now '44,305'); under
    1e-4 with the decimals the figures need (1.2345e-5 -> '0.0000123')."""
    text = f"{value:,.{digits}g}"
    if "e-" in text:  # under 1e-4 (a cent's fraction read '1.23e-05'): as many decimals as the figures need
        return f"{value:,.{digits - 1 - int(text.split('e')[1])}f}"
    return f"{value:,.0f}" if "e+" in text else text


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


def seq_lengths(inputs: dict[str, Any]) -> str:
    """"seq_len N", and an encoder-decoder's decoder length where one was given (estimate's and simulate --train's
    first line)."""
    return f"seq_len {inputs['seq_len']}" + (f", tgt_len {inputs['tgt_len']}" if inputs.get("tgt_len") else "")


def render_estimate(result: dict[str, Any], rows: Sequence[Any]) -> str:
    """The human report of `estimate`: parameters, FLOPs, memory, regime and the block table."""
    i, p, f, m, r = (result[k] for k in ("inputs", "params", "flops", "memory", "regime"))
    lengths = seq_lengths(i)
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
        *([f"  recomputed forward {si(f['recomputed_forward'], 'FLOP'):>14}   (rerun in backward by --recompute "
           f"{i['recompute']}: not in the training line, the model FLOPs; executed, HFU's, adds it)"]
          if "recomputed_forward" in f else []),
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
        f"({m['bytes_per_param']['weights']} B/param"
        + (f"; {m['bytes_per_param']['fp8_weights']} B for the {count(m['fp8_parameters'])} parameters of the FP8 "
           "layers: --fp8-param-gather, no bf16 copy)" if "fp8_parameters" in m else ")"),
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
        ("  crossover n*: none (no attention layer)" if r["crossover_seq_len"] in (None, float("inf")) else
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


def expert_grid(lay: dict[str, Any]) -> str:
    """The ranks the expert-parallel group is drawn from (Layout.expert_ranks): dp, cp x dp with
    context parallelism, tp x ... under parallel folding (etp 1), tp x ... / etp where the experts'
    own tensor parallelism is neither 1 nor tp."""
    etp = lay.get("etp")
    ranks = " x ".join(name for name, used in (("tp", etp is not None and etp != lay["tp"]),
                                                ("cp", lay.get("cp", 1) > 1), ("dp", True)) if used)
    return ranks + (f" / etp {etp}" if etp not in (None, 1, lay["tp"]) else "")


def expert_words(etp: int | None) -> str:
    """How the routed experts meet tensor parallelism, for the layout line: whole (etp 1) or split etp ways."""
    return "" if etp is None else ", experts whole: etp 1" if etp == 1 else f", each expert split {etp} ways: etp {etp}"


def context_words(lay: dict[str, Any]) -> str:
    """How the context-parallel ranks exchange, for the layout line (layout/context.py): --cp-rotate, and the
    heads moved where they are the repeated ones; nothing without context parallelism."""
    if lay.get("cp", 1) == 1 or "cp_rotate" not in lay:
        return ""
    return f", --cp-rotate {lay['cp_rotate']}" + (" of repeated K and V" if lay.get("cp_kv_heads") == "repeated" else "")


def render_parallel(p: dict[str, Any]) -> str:
    """The per-rank memory and communication of a layout (estimate with --dp/--tp/--pp...)."""
    lay = p["layout"]
    head = (f"Parallel layout: {plural(lay['gpus'], 'GPU')} = tp {lay['tp']} x pp {lay['pp']} x dp {lay['dp']}"
            + (f" x cp {lay['cp']}" if lay.get("cp", 1) > 1 else "")
            + (f" (ep {lay['ep']} of {expert_grid(lay)}{expert_words(lay.get('etp'))})"
               if lay.get("ep", 1) > 1 else "") + (f", FP8 {lay['fp8']}" if lay.get("fp8") else "")
            + (" with FP8 parameters" if lay.get("fp8_param_gather") else "")
            + (" (amaxes over TP x CP)" if lay.get("tp_only_amax_red") else "")
            + (f" (fp8_autocast {lay['fp8_autocast']})" if lay.get("fp8_autocast") else "")
            + (", the MoE router unfused (" + ("no aux loss" if lay["moe_router_load_balancing_type"] == "none" else
                                               lay["moe_router_load_balancing_type"]) + ")"
               if lay.get("moe_router_fusion") is False else "")
            + (", the permutations unfused" if lay.get("moe_permute_fusion") is False else "")
            + (", the experts one after another (" + ("SequentialMLP" if lay["framework"] == "megatron" else
                                                     "transformers 4.x's loop") + ")"
               if lay.get("moe_grouped_gemm") is False else "")
            + (f" ({'Megatron-FSDP HFSDP' if lay['framework'] == 'megatron' else 'HSDP'}: {lay['dp_replicate']} replicas "
               f"of shard groups of {lay['dp_shard']})" if lay.get("dp_shard") else "")
            + (" + SP" if lay["sp"] else "") + context_words(lay) + f", ZeRO {lay['zero']}, {lay['framework']} ({p['precision']} "
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


#: A duration's units, largest first: (seconds in one, name).
DURATION_UNITS = ((86400 * 365, "years"), (86400, "days"), (3600, "h"), (60, "min"), (1, "s"), (1e-3, "ms"),
                  (1e-6, "us"))


def seconds(value: float) -> str:
    """A duration in readable units, three figures: 0.0123 -> '12.3 ms'. Where the three figures round up to
    the next unit the next unit writes it (0.9996 s read '1e+03 ms': now '1 s'), and
    a thousand to a million years are whole years with separators (a 100T-token run on one T4 read '6.19e+03
    years': now '6,193 years')."""
    if value == float("inf"):
        return "inf"
    for index, (factor, unit) in enumerate(DURATION_UNITS):
        if value >= factor or factor == DURATION_UNITS[-1][0]:
            text = f"{value / factor:.3g}"
            if index and float(text) * factor >= DURATION_UNITS[index - 1][0]:
                factor, unit = DURATION_UNITS[index - 1]
                text = f"{value / factor:.3g}"
            if factor == DURATION_UNITS[0][0] and 999.5 <= value / factor < 1e6:  # (a million years on: 1.2e+06)
                text = f"{value / factor:,.0f}"
            return f"{text} {unit}"
    raise AssertionError("unreachable")  # the last unit takes every value


def gpu_hours(value: float) -> str:
    """GPU-hours: whole from 100 on, else three figures (a 20-minute run on 8 GPUs read "3" beside $6.58)."""
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def hourly_cost(price: float, dollars_per_hour: float, gpus: int) -> str:
    """'2 GPUs x $2 an hour = $4.00/h', serve's and simulate's words for a deployment's price: the price as
    typed (a million dollars read '$1.23457e+06'), the hour's dollars as dollars() writes them ($0.0001 an
    hour read '$0.00/h', as if free). serve wrote '1 GPU(s)' where simulate wrote '1 GPU' (rounds 19-45)."""
    return f"{plural(gpus, 'GPU')} x ${significant(price, 6)} an hour = {dollars(dollars_per_hour)}/h"


def price_said(cost: dict[str, Any], within: bool = False) -> str:
    """What follows a price the run was not given (costmodel/cost.py price_of's source): a hardware file's
    price_per_gpu_hour read "at $2.99 per GPU-hour" exactly as a typed --price. within: inside parentheses."""
    from costmodel.cost import FILE_PRICE

    if cost.get("price_source") != FILE_PRICE:
        return ""
    return ", the hardware file's price_per_gpu_hour" if within else " (the hardware file's price_per_gpu_hour)"


def dollars(value: float) -> str:
    """$ with thousands separators: 1234567.8 -> '$1,234,568'; below $100 with cents; below half a cent three
    figures, as gpu_hours keeps them ('$0.00431', not a priced run shown as '$0.00')."""
    if 0 < value < 0.005:
        return f"${value:.3g}"
    return f"${value:,.0f}" if value >= 100 else f"${value:,.2f}"


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
                   + ("fits" if v["fits"] else "does NOT fit") + f" in {binary_bytes(v['capacity'])}"
                   + _fit_weights(v.get("weights")) + ".")
        if not v["fits"]:
            out += _fit_options(v, 46, "No single change makes it fit; see `plan` for layouts over more GPUs.")
    return "\n".join(out)


def _fit_weights(weights: dict[str, Any] | None) -> str:
    """The weight format an inference verdict was sized in, and the unquantized need where the
    format alone makes it fit (verdict._quantized_weights)."""
    if weights is None:
        return ""
    whose = "the checkpoint's" if weights["source"] == "checkpoint" else f"--weight-dtype {weights['dtype']}:"
    said = f", its weights {whose} {weights['dtype']}" if weights["source"] == "checkpoint" else \
        f", with {whose[:-1]}"
    if weights.get("unquantized_fits") is False:
        said += (f"; unquantized (--weight-dtype none) it needs {binary_bytes(weights['unquantized_memory'])}, "
                 "which does not fit")
    return said


def _fit_options(verdict: dict[str, Any], width: int, none: str) -> list[str]:
    """The lines under a verdict that does not fit: the changes that would, cheapest first."""
    if not verdict["options"]:
        return [f"  {none}"]
    width = max(width, *(len(o["change"]) for o in verdict["options"]))  # the memories in one column
    return ["  To make it fit (cheapest first; each changes only what it names, the run as given otherwise):"] + [
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
            least = f.get("least")
            # a run already in QLoRA is offered no QLoRA: "nor QLoRA" read as if it were not
            recomputed = not least or least.get("recompute") == "full"
            moe = "full recomputation is not modelled for a mixture of experts"
            head = (("No single change, nor full recomputation, makes it fit" if recomputed else
                     f"No single change makes it fit ({moe})") if i["method"] == "qlora" else
                    f"No single change, nor QLoRA{' with full recomputation' if recomputed else f' ({moe})'}, makes it fit")
            out += _fit_options(f, 30, head
                                + (f": even `{least['change']}` needs {binary_bytes(least['memory'])}; a GPU with more "
                                   "memory than that (finetune sizes one GPU; `estimate --hardware H --gpus N` "
                                   "shards full training)." if least else "."))
    if "time" in r and "not_timed" in r["time"]:
        out += ["", f"Step time: not timed ({r['time']['not_timed']})"]
    elif "time" in r:
        t = r["time"]
        p = t["parts"]
        out += ["", f"Step time on one {r['fit']['hardware']} (kernel-level model): {t['step_seconds']:.3f} s for "
                f"{t['tokens_per_step']:,} tokens ({t['tokens_per_step'] / t['step_seconds']:,.0f} tokens/s); base forward "
                f"{p['base_forward']:.3f} s, backward {p['base_backward']:.3f} s, rerun {p['rerun']:.3f} s, adapters "
                f"{p['adapters']:.3f} s, dequant {p['dequant']:.3f} s, optimizer {p['optimizer']:.4f} s, launches "
                f"{p['launches']:.3f} s; the frozen weights skip {t['skipped_weight_gradient_seconds']:.3f} s of "
                "weight-gradient GEMMs full fine-tuning runs"]
        if "steps" in t:
            # the run's time in its own unit and the GPU-hours and dollars as simulate and plan print them
            # (a 1,000-token run read "0.00 h, 0.00 GPU-hours")
            out.append(f"  {t['tokens']:,.0f} tokens: {plural(t['steps'], 'step')}, {seconds(t['seconds'])}, "
                       f"{gpu_hours(t['gpu_hours'])} GPU-hours" + (f", {dollars(t['dollars'])} at "
                                                                    f"${t['price_per_gpu_hour']:g}/GPU-hour{price_said(t)}"
                                                                    if "dollars" in t else ""))
        out.append(f"  note: {t['counted']}.")
    return "\n".join(out)
