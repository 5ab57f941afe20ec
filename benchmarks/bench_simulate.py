"""Roofline predictions vs measured timings on this machine (the `local` preset).

Calibrates `local` (matmul FLOP/s and copy bandwidth), then times prefill (a full forward over the
prompt, logits at every position, as the cost tree counts it) and cached decode steps of the
reference model and of Hugging Face's class for two models: one whose prefill is compute-bound and
one whose decode is memory-bound. Prints predicted and measured medians and their ratio.

    python benchmarks/bench_simulate.py [--repeats 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from costmodel.presets import load_preset  # noqa: E402
from costmodel.simulate import Efficiency, Hardware, Roofline  # noqa: E402
from validate.calibrate import measure_local, median_seconds  # noqa: E402
from validate.decoding import prefill as reference_prefill  # noqa: E402
from validate.decoding import step as reference_step  # noqa: E402
from validate.hf_models import build_hf_model  # noqa: E402
from validate.reference import build_reference  # noqa: E402

# A GPT-2-style model with a long prompt (compute-bound prefill) and a Llama-style model whose
# decode step reads 1.6 GB of fp32 weights per token (memory-bound). The roofline has no term for
# per-op dispatch (tens of microseconds per op on the CPU): a decode step of a small model, whose
# weights stream in a few milliseconds, is dominated by it (see the gpt2-style decode rows).
MODELS = {
    "gpt2-style d768 L4": load_preset("gpt2").replace(
        name="gpt2-bench", n_decoder_layers=4, vocab_size=8192, dropout=0.0),
    "llama-style d2048 L6": load_preset("llama2-7b").replace(
        name="llama-bench", d_model=2048, n_heads=16, n_kv_heads=4, d_ff=5632, n_decoder_layers=6),
}
PROMPT, CONTEXT = 512, 128


def time_reference(cfg, repeats: int) -> tuple[float, float]:
    model = build_reference(cfg).eval()
    ids = torch.randint(0, cfg.vocab_size, (1, PROMPT))
    with torch.no_grad():
        prefill = median_seconds(lambda: model(ids), repeats)
    prompt = torch.randint(0, cfg.vocab_size, (1, CONTEXT - 1))
    token = torch.zeros(1, dtype=torch.long)
    steps = []
    for _ in range(repeats * 4):
        s, _ = reference_prefill(model, prompt)
        start = time.perf_counter()
        reference_step(s, token)
        steps.append(time.perf_counter() - start)
    return prefill, statistics.median(steps)


def time_hf(cfg, repeats: int) -> tuple[float, float]:
    model = build_hf_model(cfg, "eager", torch.float32).eval()
    ids = torch.randint(0, cfg.vocab_size, (1, PROMPT))
    with torch.no_grad():
        prefill = median_seconds(lambda: model(input_ids=ids, use_cache=False), repeats)
        prompt = torch.randint(0, cfg.vocab_size, (1, CONTEXT - 1))
        token = torch.zeros(1, 1, dtype=torch.long)
        steps = []
        for _ in range(repeats * 4):
            out = model(input_ids=prompt, use_cache=True)
            start = time.perf_counter()
            model(input_ids=token, past_key_values=out.past_key_values, use_cache=True)
            steps.append(time.perf_counter() - start)
    return prefill, statistics.median(steps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    torch.manual_seed(0)
    rows, calibrations = [], []
    for label, cfg in MODELS.items():
        for target, timer in (("reference", time_reference), ("hf", time_hf)):
            # Calibrate right before each measurement: on a shared machine the load drifts, and
            # roofs and timings should see the same conditions.
            local = measure_local()
            calibrations.append(local)
            print(f"{label} / {target}: local fp32 matmul {local['flops_per_s']['fp32'] / 1e9:.1f} GFLOP/s, "
                  f"bandwidth {local['bandwidth_bytes_per_s'] / 1e9:.1f} GB/s, overhead "
                  f"{local['overhead_s_per_block'] * 1e6:.0f} us per block, {torch.get_num_threads()} threads")
            hardware = Hardware.from_dict(local, source="measured now")
            roof = Roofline(cfg, hardware, "fp32", Efficiency(1.0, 1.0), attention="eager")
            prefill_total, prefill_predicted, _ = roof.prefill(1, PROMPT)
            decode_total, decode_predicted, _ = roof.decode(1, CONTEXT)
            prefill_measured, decode_measured = timer(cfg, args.repeats)
            for phase, total, predicted, measured in (
                (f"prefill n={PROMPT}", prefill_total, float(prefill_predicted), prefill_measured),
                (f"decode c={CONTEXT}", decode_total, float(decode_predicted), decode_measured),
            ):
                rows.append({"model": label, "target": target, "phase": phase, "bound": total.bound,
                             "predicted_ms": 1e3 * predicted, "measured_ms": 1e3 * measured,
                             "ratio": measured / predicted})
    print(f"{'model':<22}{'target':<11}{'phase':<16}{'bound':<9}{'predicted':>11}{'measured':>11}{'meas/pred':>11}")
    for r in rows:
        print(f"{r['model']:<22}{r['target']:<11}{r['phase']:<16}{r['bound']:<9}"
              f"{r['predicted_ms']:>9.1f}ms{r['measured_ms']:>9.1f}ms{r['ratio']:>11.2f}")
    if args.json:
        args.json.write_text(json.dumps({"calibrations": calibrations, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
