"""What FasterTransformer's unfused context attention would add to its GPT-6.7B rows (a diagnostic; rows unchanged).

    PYTHONPATH=. python validate/ft_unfused_context.py

The "fastertransformer-gpt" rows (costmodel/published_runs.json) were typed with the context (prefill)
attention as one fused call ("attention": "flash"). The code the guide's tables measured runs it unfused:
the GPT-6.7B table first appears at NVIDIA/FasterTransformer 952a1f2 (v5.0 beta, 2021-09-30), whose
src/fastertransformer/layers/attention_layers/GptContextAttentionLayer.cc runs Q K^T as cublas
stridedBatchedGemm (line 100), invokeMaskedSoftMax (line 123: the scale and the causal mask inside the
softmax) and P V as stridedBatchedGemm (line 162); the GPT-175B table (0280a66, v4.0, 2021-04-04) the same in
fastertransformer/open_decoder.h (cublasGemmStridedBatchedEx, attn_softmax_kernelLauncher,
cublasGemmStridedBatchedEx, lines 871-893). GPT's fused context MHA came with 18aaefc (2022-12-14).
The decode steps keep the fused masked multi-head attention kernel, which the model's attention option
cannot say apart from the prefill's (an "eager" row would unfuse the steps too), so this script prices the
difference with the model's own kernels: per layer, the tree's eager scores GEMM (its separate scale and
mask pass left out: FT folds them into the softmax), softmax and weighted-sum GEMM, against the fused call,
times the layers, added to the row's end-to-end seconds. Ratios are ours / published speed.
"""

from __future__ import annotations

from typing import Any

from costmodel.kernel_time import KernelTimer, inference_subs, kernels_seconds, leaf_kernels
from costmodel.roofline import Roofline
from reports.published_decode import decode_run, decode_setup
from reports.published_runs import other_runs_data

SOURCE = "fastertransformer-gpt"
CORE = ("scores", "softmax", "weighted_sum")


def context_attention_seconds(run: dict[str, Any], attention: str) -> float:
    """One tensor-parallel-free row's prefill attention seconds (all layers) under `attention`: "flash", the
    fused call; "eager", FT's unfused kernels (the scores GEMM without the tree's separate scale/mask pass)."""
    data = other_runs_data()
    cfg, hardware, s, _ = decode_setup(run, data["sources"][SOURCE])
    roof = Roofline(cfg, hardware, s["dtype"], attention=attention, kv_cache=s["kv_cache"], decode_code=s["implementation"])
    timer = KernelTimer(hardware, s["dtype"], attention, fused_qkv=True)
    subs = inference_subs(cfg, s["dtype"], s["batch"], s["prompt"], source_len=s["prompt"])
    seconds = 0.0
    for leaf in roof.prefill_model.leaves:
        if leaf.path.rsplit(".", 1)[-1] in CORE:
            kernels = leaf_kernels(leaf, subs, timer.fused_attention, fused_qkv=True)
            if attention == "eager" and leaf.path.endswith("scores"):
                kernels = [k for k in kernels if type(k).__name__ == "Gemm"]
            seconds += kernels_seconds(kernels, timer, False)
    return seconds * cfg.n_layers


def rows() -> list[dict[str, Any]]:
    """Each GPT-6.7B row (tp 1): the fused and unfused attention seconds, the row's ratio and the ratio with
    the unfused attention's extra seconds added."""
    data = other_runs_data()
    out = []
    for run in data["runs"]:
        if run["id"].startswith(f"{SOURCE} gpt-6.7b"):
            fused, unfused = context_attention_seconds(run, "flash"), context_attention_seconds(run, "eager")
            ours = run["gen"] / decode_run(run, data["sources"][SOURCE], "kernels")
            published = run["published_latency_s"]
            out.append({"id": run["id"], "fused_s": fused, "unfused_s": unfused, "ratio": published / ours,
                        "ratio_unfused": published / (ours + unfused - fused)})
    return out


def main() -> int:
    for row in rows():
        print(f"{row['id']:50s} fused {row['fused_s'] * 1e3:7.2f} ms, unfused {row['unfused_s'] * 1e3:7.2f} ms; "
              f"ours / published {row['ratio']:.3f} -> {row['ratio_unfused']:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
