"""The decoding rows the kernel model reads too fast, each with the command that gives its number
and where the time goes (session 29, wt29_eager): the row's `python cli.py simulate` line, the
published and our seconds a token, our step split (one GPU: validate/time_breakdown.decode_step_split
at the middle context; tensor parallel: the rank's kernels and its all-reduces), and what the
published time leaves over ours per unit the code issues (an eager op, a GEMM, an all-reduce):
diagnostics of where a missing cost would have to sit, never a figure the model reads.

    PYTHONPATH=. python validate/off_decode_rows.py
"""

from __future__ import annotations

from typing import Any

#: The rows session 29's brief names (ratio > 1.33 under the kernel model at its start).
ROWS = ("torchao llama2-7b bf16 eager", "torchao llama2-7b fp32 eager", "torchao llama3-8b bf16 eager",
        "torchao llama3-8b fp32 eager", "torchao-h100 llama3.1-8b float8dq-tensor", "torchao llama2-7b int4wo-64",
        "torchao llama3-8b int4wo-64", "gpt-fast llama2-70b int4 g32 tp8", "gpt-fast llama3.1-405b int8 tp8",
        "amd-vllm llama3.1-70b fp8 tp8 batch 128", "rocm-int8 llama2-13b bf16 eager")


def row_command(run: dict[str, Any], source: dict[str, Any]) -> str:
    """The `simulate` line that times a decode row as `python cli.py published` does
    (reports/published_decode.decode_setup, decode_layout): its model, hardware, lengths, dtype,
    attention, cache, CUDA graphs, decoding code, quantization and layout. A source's departures from
    the hardware preset (a power cap, hardware_overrides) and a row's config_changes to its preset have no
    option: they follow as a note."""
    from reports.published_decode import DECODE_QUANTIZATION
    from reports.published_runs import stated

    s = {key: stated(run, source, key) for key in ("prompt", "gen", "batch", "attention", "kv_cache",
                                                     "cuda_graphs", "dtype", "implementation")}
    words = ["python cli.py simulate --model", run.get("preset", run["model"]), "--hardware",
             run.get("hardware", source["hardware"]), "--prompt", str(s["prompt"]), "--gen", str(s["gen"])]
    words += ["--batch", str(s["batch"])] if s["batch"] != 1 else []
    words += ["--dtype", s["dtype"] or "bf16", "--attention", s["attention"], "--kv-cache", s["kv_cache"],
              "--cuda-graphs", "on" if s["cuda_graphs"] else "off", "--decode-code", s["implementation"] or "transformers"]
    words += ["--compile", "--time-model", "kernels"] if stated(run, source, "compiled") else []
    words += ["--eager-prefill"] if stated(run, source, "eager_prefill") else []
    flags = {"weight_dtype": "--weight-dtype", "weight_group": "--weight-group", "fp8_gemm": "--fp8-gemm"}
    for key in DECODE_QUANTIZATION:
        if key in run:
            words += [flags[key], str(run[key])]
    if "weight_dtype" in run and source.get("quantize_head"):
        words.append("--quantize-head")
    if run.get("weight_dtype") in ("int8", "int4") and "quant_layout" in source:
        words += ["--quant-layout", source["quant_layout"]]
    if run["tp"] > 1:
        words += ["--tp", str(run["tp"]), "--all-reduce", source.get("all_reduce", "nccl")]
        words += [] if source.get("vocab_parallel", True) else ["--replicated-vocab"]
    changes = {**source.get("hardware_overrides", {}),
               **({"power_limit_watts": source["power_limit_watts"]} if "power_limit_watts" in source else {})}
    notes = [f"the hardware file with {changes}"] if changes else []
    notes += [f"the model with {run['config_changes']}"] if "config_changes" in run else []  # AutoAWQ's window
    return " ".join(words) + (f"  ({'; '.join(notes)})" if notes else "")


def row_split(run: dict[str, Any], source: dict[str, Any]) -> dict[str, Any]:
    """One row: published and our seconds a token (the rate its source publishes), our split, and
    the published time left over ours per eager op, per GEMM and per all-reduce of one step."""
    from costmodel.eager_ops import step_ops
    from reports.published_decode import decode_layout_run, decode_run, decode_setup
    from validate.time_breakdown import decode_step_split

    cfg, _, s, quantization = decode_setup(run, source)
    # a sequence's rate: one token a step, so these are a step's seconds (at any batch)
    published, ours = 1 / run["published_tokens_per_s"], 1 / decode_run(run, source, "kernels")
    layers = cfg.n_decoder_layers
    out: dict[str, Any] = {"published_s": published, "ours_s": ours, "ratio": published / ours}
    if run["tp"] > 1:
        token = decode_layout_run(run, source, "kernels")["token"]
        out["split"] = {"rank's kernels": token["compute_seconds"], "tp all-reduces": token["tp_all_reduce_seconds"]}
        out["all_reduces"] = 2 * layers
        out["left_per_all_reduce_s"] = (published - ours) / out["all_reduces"]
    else:
        out["split"] = decode_step_split(run, source, context=s["prompt"] + s["gen"] // 2)
    ops = step_ops(cfg, s["implementation"], s["dtype"], s["attention"], s["kv_cache"], quantization)
    if ops is not None and not s["cuda_graphs"]:
        out["ops"] = ops
        out["published_per_op_s"] = published / ops
    return out


def main() -> None:
    from reports.published_runs import other_runs_data

    data = other_runs_data()
    runs = {r["id"]: r for r in data["runs"]}
    for row in ROWS:
        run, source = runs[row], data["sources"][row.split()[0]]
        got = row_split(run, source)
        print(f"{row}: published {got['published_s'] * 1e3:.2f} ms a token, ours {got['ours_s'] * 1e3:.2f} ms "
              f"({got['ratio']:.2f}x)")
        print(f"  {row_command(run, source)}")
        parts = ", ".join(f"{k} {v:.1f}" if k == "weights GB/s" else f"{k} {v * 1e3:.2f} ms"
                          for k, v in got["split"].items())
        print(f"  ours: {parts}")
        if "ops" in got:
            print(f"  eager: {got['ops']:,} ops a step; the published step is {got['published_per_op_s'] * 1e6:.2f} us an op")
        if "all_reduces" in got:
            print(f"  {got['all_reduces']} all-reduces a step; the published time left over ours is "
                  f"{got['left_per_all_reduce_s'] * 1e6:.1f} us an all-reduce if it were theirs")


if __name__ == "__main__":
    main()
