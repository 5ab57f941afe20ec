"""The published Hugging Face generate decoding rows (eager, no CUDA graphs, transformers' own
modelling code) beside the model's step, so that the gap can be read per token, per op and per
layer (session 41, wt41_hfgen): for each row its source, the transformers release the source
names, model, batch, dtype and GPU, the published and our milliseconds a token, our kernels
alone (the same row replayed from CUDA graphs: no host term), the ops one step issues as the
model counts them (eager_ops.step_ops) and the host's time an op the hardware file gives.

Diagnostics only: nothing here is read by the model, and no figure here sets one (the rows are
not fitted). Run: PYTHONPATH=. python validate/hf_generate_rows.py [--by source|release|gpu|dtype|batch|implementation]
"""

from __future__ import annotations

import statistics
import sys
from typing import Any

#: The sources whose decode rows run Hugging Face generate eagerly (their implementation a
#: transformers one, no CUDA graphs, no vLLM engine), each with the transformers release its
#: text names (costmodel/published_runs.json: the source's own words; "4.32 assumed": optimum's GPTQ
#: benchmark of 08-09/2023 names none, 4.32.0 the first release with the GPTQ integration it runs; None
#: where nothing is named or assumed).
SOURCES = {
    "autogptq-readme": None, "bnb-benchmarking-0.45": "4.46.3", "evalscope-qwq-hf": "4.46",
    "hamel-latency-2023-hf": "4.31", "oobabooga-quant-2023": "4.34", "optimum-gptq-bench": "4.32 assumed",
    "premai-a100": "4.34.1", "premai-v2": "4.39.3", "qwen2.5-speed-hf": "4.46.0",
    "qwen3-speed-hf": "4.51.3", "tinychat-b76fab6": "4.36.2",
}


#: What --by groups the rows by (a row's keys).
GROUPS = ("source", "release", "gpu", "dtype", "batch", "implementation", "model", "attention")


def hf_rows() -> list[dict[str, Any]]:
    """Each HF generate decode row: published and modelled milliseconds a token, kernels alone,
    ops a step, the host's seconds an op, and the gap (published - ours) a token, an op and a layer."""
    from costmodel.eager_ops import step_ops
    from reports.published_decode import decode_run, decode_setup
    from reports.published_runs import other_runs_data

    data = other_runs_data()
    rows = []
    for run in data["runs"]:
        name = run["id"].split()[0]
        if run["kind"] != "decode" or name not in SOURCES:
            continue
        source = data["sources"][name]
        cfg, hardware, s, quantization = decode_setup(run, source)
        if not s["implementation"].startswith("transformers") or s["cuda_graphs"]:
            continue  # the source's other engines (TinyChat, TensorRT-LLM, ExLlama...)
        ops = step_ops(cfg, s["implementation"], s["dtype"], s["attention"], s["kv_cache"], quantization,
                       s["sampling"])
        published = 1e3 / run["published_tokens_per_s"]
        ours = 1e3 / decode_run(run, source, "kernels")
        kernels = 1e3 / decode_run(dict(run, cuda_graphs=True), source, "kernels")
        gap = published - ours
        rows.append({"run": run["id"], "source": name, "release": SOURCES[name], "model": cfg.name,
                     "layers": cfg.n_layers, "hidden": cfg.d_model,
                     "batch": s["batch"], "dtype": s["dtype"],
                     "weight_dtype": quantization.get("weight_dtype"), "attention": s["attention"],
                     "gpu": hardware.name, "implementation": s["implementation"], "published_ms": published,
                     "ours_ms": ours, "kernels_ms": kernels, "ratio": published / ours, "ops": ops,
                     "host_us_per_op": hardware.eager_op_s * 1e6, "gap_ms": gap,
                     "gap_us_per_op": None if ops is None else gap * 1e3 / ops,
                     "gap_us_per_layer": gap * 1e3 / cfg.n_layers})
    return rows


def main(argv: list[str]) -> None:
    by = argv[argv.index("--by") + 1] if "--by" in argv and argv.index("--by") + 1 < len(argv) else None
    if "--by" in argv and by not in GROUPS:
        print(f"error: --by must be one of {', '.join(GROUPS)}.", file=sys.stderr)
        raise SystemExit(2)
    rows = hf_rows()
    if by is None:
        print(f"{'run':58s} {'gpu':10s} {'ops':>5s} {'us/op':>5s} {'pub ms':>7s} {'ours':>6s} {'kern':>6s} "
              f"{'ratio':>5s} {'gap ms':>6s} {'gap us/op':>9s}")
        for r in rows:
            per_op = "-" if r["gap_us_per_op"] is None else f"{r['gap_us_per_op']:.2f}"
            print(f"{r['run'][:58]:58s} {r['gpu'][:10]:10s} {r['ops'] or '-':>5} {r['host_us_per_op']:5.2f} "
                  f"{r['published_ms']:7.2f} {r['ours_ms']:6.2f} {r['kernels_ms']:6.2f} {r['ratio']:5.2f} "
                  f"{r['gap_ms']:6.2f} {per_op:>9s}")
    groups: dict[Any, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault(r[by or "source"], []).append(r)
    print(f"\n{'group':24s} {'rows':>4s} {'median ratio':>12s} {'median gap ms':>13s} {'gap ms range':>16s}")
    for key, group in sorted(groups.items(), key=lambda item: str(item[0])):
        gaps = [r["gap_ms"] for r in group]
        print(f"{str(key):24s} {len(group):4d} {statistics.median(r['ratio'] for r in group):12.2f} "
              f"{statistics.median(gaps):13.2f} {min(gaps):7.2f}-{max(gaps):<8.2f}")
    print(f"{'all':24s} {len(rows):4d} {statistics.median(r['ratio'] for r in rows):12.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
