"""Plain-text rendering of `plan`'s result: the ranked layouts (training or serving), how many
were set aside and why, and what would fit when nothing does. Apart from reports/text.py and
simulate_text.py (the other commands' renderings) to keep each module short; no formulas live here.
"""

from __future__ import annotations

from typing import Any

from .simulate_text import latent_form, weight_group
from .text import binary_bytes, dollars, gpu_hours, plural, price_said, rate, seconds, si, table, tokens


def render_plan(result: dict[str, Any], serve: bool, top: int, capacity: int) -> str:
    """`plan`: the best layouts, then how many were set aside and why."""
    feasible, infeasible = result["feasible"], result["infeasible"]
    reasons: dict[str, int] = {}
    for entry in infeasible:
        reasons[entry["reason"]] = reasons.get(entry["reason"], 0) + 1
    i = result["inputs"]
    several = isinstance(i["gpus"], list)
    gpus = ", ".join(f"{g:,}" for g in i["gpus"]) if several else f"{i['gpus']:,}"
    # several counts: each its own global batch, named by its count ("64, 64" read as a typo: 8,16 GPUs)
    global_batch = (", ".join(f"{b:,} ({g} GPUs)" for g, b in i["global_batch"].items()) if several and not serve
                    else f"{i.get('global_batch') or 0:,}")
    group = weight_group(i)
    checkpoint = " (the checkpoint's; --weight-dtype none for unquantized)" \
        if i.get("weight_dtype_source") == "checkpoint" else ""
    quantized = (f", {i['weight_dtype']}{group} weights{checkpoint}" if i.get("weight_dtype") else "") + \
        (f", {i['kv_dtype']} KV cache" if i.get("kv_dtype") else "") + \
        (f", {i['kv_cache']} KV cache" if i.get("kv_cache") == "static" else "") + \
        (", CUDA graphs" if i.get("cuda_graphs") else "")
    fp8 = f", FP8 {i['fp8']}" if i.get("fp8") else ""  # a training recipe (--fp8): every layout runs it
    fp8 += "".join(f", {label}" for key, label in (  # settings every layout holds (layout/plan.py SETTINGS)
        ("fp8_param_gather", "FP8 parameters"), ("tp_only_amax_red", "amaxes over TP x CP"),
        ("no_align_grad_reduce", "gradient reduces not aligned"),
        ("overlap_grad_reduce", "gradient reduces under the backward"), ("pure_precision", "pure precision")) if i.get(key))
    fp8 += f", gradients reduced in {i['grad_reduce_dtype']}" if i.get("grad_reduce_dtype") else ""
    fp8 += f", MTP {i['mtp']}" if i.get("mtp") else ""  # multi-token prediction (--mtp): every layout counts it
    asked = (f"{i['model']} on {gpus} x {i['hardware']}, {i['dtype']}{fp8}{quantized}: "
             + (f"{plural(i['batch'], 'sequence')} of prompt {i['seq_len']:,} + {i['gen']:,} generated tokens"
                if serve else f"global batch {global_batch} of {i['seq_len']:,} tokens")
             + (f", {i['attention']} attention" if serve and i.get("attention") else "")
             + (latent_form(i) if serve else "")
             + (f"; time model {i['time_model']}" if i.get("time_model") else "")
             + (", compiled" if i.get("compiled") else "")
             + ("; ranked by cost (GPU-seconds per token)" if i.get("rank_by") == "cost" else "")
             + (f"; MFU of {i['flops_convention']} model FLOPs" if i.get("flops_convention", "dense") != "dense"
                else ""))
    out = [asked, f"{plural(len(feasible) + len(infeasible), 'layout')}: {len(feasible):,} fit in "
           f"{binary_bytes(capacity)} a GPU"
           + (", " + ", ".join(f"{count:,} set aside for {reason}" for reason, count in reasons.items())
              if reasons else ""), ""]
    if not feasible:
        return "\n".join(out + ["No layout fits.", *_nearest(result.get("nearest") or {}, serve)])
    if serve:
        rows = ([str(rank + 1), f"{e['layout']['tp']} x {e['layout']['pp']} x {e['layout']['dp']}",
                 binary_bytes(e["per_rank"]["weights"]), binary_bytes(e["per_rank"]["kv_cache"]),
                 binary_bytes(e["per_rank"]["transient"]),
                 binary_bytes(e["per_rank"]["total"]), seconds(e["time_per_output_token"]),
                 seconds(e["last_step"]["seconds"]), seconds(e["tp_all_reduce_seconds"]),
                 rate(e["tokens_per_second"])]
                for rank, e in enumerate(feasible[:top]))
        out.append(table(["rank", "tp x pp x dp", "weights", "KV cache", "transients", "memory", "per token",
                          "last step", "all-reduce", "tokens/s"], rows))
        out.append("transients: the ids and the larger of the logits and the forward's largest no-grad tensor (the "
                   "FFN's hidden ones, an eager softmax's scores) of the phase that peaks; "
                   "per token: the mean of the generation's decode steps, each at its own context, as "
                   f"`simulate` with the layout, `--batch` each replica's share of the {i['batch']:,} sequences "
                   f"(batch / dp) and `--attention {i.get('attention') or 'flash'}"
                   + (f" --mla {i['mla']}" if i.get("mla") else "") + "` times them; last step: the one at context "
                   f"{feasible[0]['last_step']['context']:,}, where the memory is sized.")
        out += _whole_prefill(feasible[:top], i, capacity)
        return "\n".join(out)
    rows = []
    for i, e in enumerate(feasible[:top]):
        lay, split = e["layout"], e["split"]
        schedule = (lay["schedule"] + (f" x{lay['virtual_stages']}" if lay["virtual_stages"] > 1 else "")
                    if lay["pp"] > 1 else "")
        rows.append([str(i + 1), f"{lay['tp']} x {lay['pp']} x {lay['dp']}{other_sizes(lay)}", lay["framework"],
                     str(lay["zero"]), "yes" if lay["sp"] else "", schedule,
                     f"{lay['batch']} x {lay['microbatches']}", lay["recompute"],
                     binary_bytes(e["per_rank"]["total"]), seconds(e["step_time"]), seconds(split["compute"]),
                     seconds(split["communication"]), seconds(split["bubble"]), f"{100 * e['mfu']:.1f}%"])
        if "cost" in e:
            c = e["cost"]
            # the run's time in its own unit (a "days" column read 0.0 for a 100M-token fine-tune of 28 min)
            rows[-1] += [seconds(c["train_seconds"]), gpu_hours(c["gpu_hours"])]
            if c["dollars"] is not None:
                rows[-1].append(dollars(c["dollars"]))
    headers = ["rank", "tp x pp x dp", "framework", "zero", "sp", "schedule", "b x m", "recompute",
               "memory", "step", "compute", "exposed comm", "bubble", "MFU"]
    align = "lllrllrlrrrrrr"
    if feasible and "cost" in feasible[0]:
        headers += ["to train", "GPU-hours"] + (["dollars"] if feasible[0]["cost"]["dollars"] is not None else [])
        align += "rrr"
    out.append(table(headers, rows, align=align))
    if feasible and "cost" in feasible[0]:
        c = feasible[0]["cost"]
        out.append(f"To train on {tokens(c['tokens'])} ({si(c['flops'], 'FLOP')}, recomputation aside)"
                   + (f" at ${c['price_per_gpu_hour']:g} per GPU-hour{price_said(c)}" if c["price_per_gpu_hour"] else
                      "; --price (dollars per GPU-hour) adds dollars"))
    return "\n".join(out)


def _whole_prefill(shown: list[dict[str, Any]], inputs: dict[str, Any], capacity: int) -> list[str]:
    """plan --serve sizes a prefill one chunk of the engine's token budget at a time; `simulate` with
    the same layout prefills the whole batch at once (generate) and says "DOES NOT FIT" where that
    is more than a GPU holds: the rows shown where the two verdicts part, each with simulate's figure; where
    both fit, the rows whose figures differ (34.43 GiB here, 34.76 in simulate's `ids, logits and transients`
    were unsaid)."""
    def listed(rows: list[tuple[int, dict[str, Any]]]) -> str:
        return ", ".join(f"rank {rank} ({binary_bytes(e['per_rank']['whole_prefill_total'])})" for rank, e in rows)

    rows = list(enumerate(shown, 1))
    over = [(rank, e) for rank, e in rows if e["per_rank"].get("whole_prefill_total", 0) > capacity]
    more = [(rank, e) for rank, e in rows if e["per_rank"].get("whole_prefill_total", 0) > e["per_rank"]["total"]]
    if not more:
        return []
    said = (f"and does not fit there: {listed(over)}" if over else
            f"and needs more there: {listed(more)}, each within the {binary_bytes(capacity)} a GPU holds")
    return [f"memory: a prefill's transients are one chunk's of {inputs['prefill_chunk']:,} tokens at a time (vLLM's "
            "max_num_batched_tokens on this GPU), as an engine prefills; `simulate` with the layout prefills the whole "
            f"batch at once, as generate does, {said}."]


def other_sizes(lay: dict[str, Any]) -> str:
    """The layout's sizes beyond tp x pp x dp, as the table and the sentences name them: expert,
    context and hybrid-shard groups, and a folded expert grid (" (cp 8)"; "" where there are none)."""
    rotate = lay.get("cp_rotate")  # --cp-rotate ring or a2a typed: named beside cp ("(cp 4 a2a)"), torch's allgather not
    return ("".join(f" ({name} {lay[name]}{f' {rotate}' if name == 'cp' and rotate not in (None, 'allgather') else ''})"
                    for name in ("ep", "cp", "dp_shard") if (lay.get(name) or 1) > 1)
            + ("" if lay.get("etp") is None else " (etp 1: folded)" if lay["etp"] == 1 else f" (etp {lay['etp']})"))


def _layout_words(lay: dict[str, Any]) -> str:
    # the framework too: ZeRO 3 is DeepSpeed's, FSDP2's or Megatron-FSDP's, gigabytes apart a rank;
    # cp and ep too: "On 16 GPUs it fits: tp 2 x pp 1 x dp 1" hid the cp 8 that made the 16
    return (f"tp {lay['tp']} x pp {lay['pp']} x dp {lay['dp']}{other_sizes(lay)}"
            + (f", {lay['framework']}" if lay.get("framework") else "")
            + (f", ZeRO {lay['zero']}" if "zero" in lay else "")
            + (f", recompute {lay['recompute']}, micro-batch {lay['batch']}" if "recompute" in lay else ""))


def _nearest(nearest: dict[str, Any], serve: bool) -> list[str]:
    """What would make a plan feasible: the least memory a layout needed, and a GPU count that fits."""
    out = []
    if "smallest_memory" in nearest:
        out.append(f"The leanest layout ({_layout_words(nearest['smallest_layout'])}) needs "
                   f"{binary_bytes(nearest['smallest_memory'])} per GPU; a GPU holds "
                   f"{binary_bytes(nearest['memory_capacity'])}.")
    if "gpus" in nearest:
        out.append(f"On {nearest['gpus']:,} GPUs it fits: {_layout_words(nearest['layout'])}, "
                   f"{binary_bytes(nearest['per_rank'])} per GPU"
                   + (f", global batch {nearest['global_batch']:,}" if "global_batch" in nearest else "")
                   # the global batch it was sized at: a plan's default grows with the GPUs (8 a GPU)
                   # `plan --gpus 512` alone planned training where a serving plan was asked for
                   + f" (`plan{' --serve' if serve else ''} --gpus {nearest['gpus']}"
                   + (f" --global-batch {nearest['global_batch']}" if "global_batch" in nearest else "")
                   + (f" --batch {nearest['layout']['batch']}" if serve and "batch" in nearest["layout"] else "") + "`).")
    elif "unsupported" in nearest and "smallest_memory" not in nearest:
        out.append("No layout was set aside for memory; the layouts were unsupported: "
                   + " ".join(nearest["unsupported"]))
    elif nearest:
        kept = " ".join(f"--{size} {value}" for size, value in nearest.get("kept", {}).items())
        out.append("No count up to 1,024 times as many GPUs fits"
                   + (f" with {kept} as given (leave them out to let plan choose)" if kept else "")
                   + "; use a GPU with more memory" + (" or quantized weights." if serve else " or a shorter sequence.")
                   + (" The other layouts were unsupported: " + " ".join(nearest["unsupported"])
                      if "unsupported" in nearest else ""))
    if "offload" in nearest:  # not timed, so never ranked: what estimate's verdict offers on the same GPUs
        o = nearest["offload"]
        lay = o["layout"]
        options = (f"--dp {lay['dp']} --zero 3 --offload {o['offload']} --recompute {lay['recompute']} "
                   f"--batch {lay['batch']}")
        out.append(f"On these GPUs DeepSpeed's {'ZeRO-Offload' if o['offload'] == 'optimizer' else 'ZeRO-Infinity'} "
                   f"fits, which plan does not time (the host's share of the step is not modelled): {options}, "
                   f"attention {lay['attention']}, {binary_bytes(o['per_rank'])} per GPU (`estimate --hardware` "
                   f"with the plan's --seq-len and {options}): the first of ZeRO-Offload and ZeRO-Infinity that "
                   f"fits in the leanest DeepSpeed layout (ZeRO 3, full recomputation and micro-batch 1 unless given); "
                   f"`estimate` lists the changes to a run as given, its recomputation and batch kept.")
    return out
