"""What a decoding row's siblings in the same published table say about its gap (wt46_decodeout, session 46):
rows outside `published`'s 0.75-1.33x band beside rows of the same page run on the same machine. A diagnosis:
no rate of the model is set from it.

    PYTHONPATH=. python validate/decode_same_source.py

Qwen3's speed page (QwenLM/Qwen3 c7f51a1, docs/source/getting_started/speed_benchmark.md): the same H20 96GB
ran each model under transformers 4.51.3 (eager) and SGLang 0.4.6.post1 (CUDA graphs). At one input token a
step is (prompt + generation) / speed / generation (the page's metric), and a step of either engine reads the
model's weights once; the transformers step therefore bounds the rate the H20 streamed them at from below.
"""

from __future__ import annotations

from reports.published_decode import decode_setup
from reports.published_runs import other_runs_data
from validate.time_breakdown import decode_step_split

QWEN3_MODELS = ("4b", "8b", "14b", "32b")


def published_step_s(run: dict, source: dict) -> float:
    """Seconds a step of a Qwen3 speed-page row (rate prompt_and_generation: reports/published_decode.sequence_rate
    counts the prompt's tokens over the end-to-end seconds): the end-to-end seconds, (prompt + generation) / speed,
    over the generation's steps (the prefill inside: one token's at one input token)."""
    assert source["rate"] == "prompt_and_generation", source["rate"]
    return (run["prompt"] + source["gen"]) / run["published_tokens_per_s"] / source["gen"]


def qwen3_engines(data: dict, sizes: tuple[str, ...] = QWEN3_MODELS) -> list[dict]:
    """Per Qwen3 model: each engine's published step at one input token, the weights a step reads (our decode
    tree's GEMMs), and the rate each step would stream them at."""
    runs = {run["id"]: run for run in data["runs"]}
    rows = []
    for size in sizes:
        hf = runs[f"qwen3-speed-hf qwen3-{size} input 1"]
        sglang = runs[f"qwen3-speed-sglang qwen3-{size} bf16 input 1"]
        hf_source, sglang_source = data["sources"]["qwen3-speed-hf"], data["sources"]["qwen3-speed-sglang"]
        split = decode_step_split(hf, hf_source, context=1)
        weight_bytes = split["weights GB/s"] * 1e9 * split["weight GEMMs"]
        hf_s, sglang_s = published_step_s(hf, hf_source), published_step_s(sglang, sglang_source)
        gemv = decode_setup(hf, hf_source)[1].gemv_bandwidth_bytes_per_s
        rows.append({"model": f"qwen3-{size}", "weights_gb": weight_bytes / 1e9, "hf_ms": hf_s * 1e3,
                     "sglang_ms": sglang_s * 1e3, "hf_tb_s": weight_bytes / hf_s / 1e12,
                     "sglang_tb_s": weight_bytes / sglang_s / 1e12, "file_tb_s": gemv / 1e12})
    return rows


def main() -> None:
    data = other_runs_data()
    print("Qwen3 on one H20 96GB, one input token: a step of each engine, and the weights' rate it implies")
    print("| model | weights GB | transformers ms | SGLang ms | transformers TB/s (a floor) | SGLang TB/s | h20 file |")
    print("|---|---|---|---|---|---|---|")
    rows = qwen3_engines(data)
    for row in rows:
        print(f"| {row['model']} | {row['weights_gb']:.2f} | {row['hf_ms']:.2f} | {row['sglang_ms']:.2f} | "
              f"{row['hf_tb_s']:.2f} | {row['sglang_tb_s']:.2f} | {row['file_tb_s']:.2f} |")
    first, last = rows[0], rows[-1]
    slope = (last["sglang_ms"] - first["sglang_ms"]) / (last["weights_gb"] - first["weights_gb"])  # ms a GB
    print(f"SGLang's step from {first['model']} to {last['model']}: {slope:.3f} ms a GB more ({1 / slope:.2f} TB/s), "
          f"{first['sglang_ms'] - slope * first['weights_gb']:.2f} ms at no weights")


if __name__ == "__main__":
    main()
