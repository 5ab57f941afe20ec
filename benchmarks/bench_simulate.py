"""Roofline predictions vs measured timings on this machine (the `local` preset).

Times prefill (a full forward over the prompt, logits at every position, as the cost tree counts
it), cached decode steps and a training step (forward with the loss, backward, AdamW, zero_grad;
costmodel.roofline_training.training_step's conventions) of the reference model and of Hugging Face's
class, for three model sizes whose prefill is compute-bound and whose decode is memory-bound, in
fp32 (the dtype this CPU runs fast).

This machine is shared and its speed drifts by tens of percent within minutes, so the benchmark
runs in rounds: each round calibrates `local` afresh (matmul and vector FLOP/s, bandwidth,
per-block overhead; validate/calibrate.py), predicts with that calibration, then times three
prefills, nine consecutive decode steps and three training steps and keeps the median of each (the
first run after the calibration meets cold caches and a fresh heap). A row reports the medians
over the rounds of the predicted time, the measured time and their ratio (measured / predicted),
and the ratio's range.

One torch thread by default: on this shared 2-core machine two threads' timings swing by tens of
percent whenever another process runs (each op waits for its slower thread); one thread's rounds
mostly stay within about ten percent of their median. Calibration and timing always use the same
thread count.

    python benchmarks/bench_simulate.py [--rounds 5] [--threads 1] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from costmodel.config import ModelConfig, Workload  # noqa: E402
from costmodel.presets import load_preset  # noqa: E402
from costmodel.hardware import Efficiency, Hardware  # noqa: E402
from costmodel.roofline import Roofline  # noqa: E402
from costmodel.roofline_training import training_step  # noqa: E402
from validate.calibrate import measure_local  # noqa: E402
from validate.compare import training_loss, build  # noqa: E402
from validate.decoding import prefill as reference_prefill  # noqa: E402
from validate.decoding import step as reference_step  # noqa: E402
from validate.measure import one_training_step  # noqa: E402

# Three sizes. Prefill over 512 tokens is compute-bound for all; a decode step streams the fp32
# weights: 140 MB for the smallest (with ~50 blocks' ops: dispatch and allocation are a quarter
# to a third of its time), 640 MB and 1.6 GB for the others.
MODELS = {
    "gpt2-style d768 L4": load_preset("gpt2").replace(
        name="gpt2-bench", n_decoder_layers=4, vocab_size=8192, dropout=0.0),
    "gpt2-style d1024 L12": load_preset("gpt2-medium").replace(
        name="gpt2-medium-bench", n_decoder_layers=12, vocab_size=8192, dropout=0.0),
    "llama-style d2048 L6": load_preset("llama2-7b").replace(
        name="llama-bench", d_model=2048, n_heads=16, n_kv_heads=4, d_ff=5632, n_decoder_layers=6),
}
PROMPT, CONTEXT, STEPS = 512, 128, 9  # decode steps at contexts 128 to 136


def seconds(function: Callable[[], object]) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


class Target:
    """One implementation of one model: a full prefill, cached decode steps and a training step
    (forward with the loss, backward, AdamW, zero_grad) over PROMPT tokens, timed."""

    def __init__(self, cfg: ModelConfig, kind: str):
        self.cfg, self.kind = cfg, kind
        self.workload = Workload(seq_len=PROMPT, batch=1, dtype="fp32", impl=kind, attention="eager")
        self.model, self.train_inputs, _ = build(cfg, self.workload, kind)
        self.model.eval()
        self.loss = training_loss(cfg, kind)
        self.optimizer = torch.optim.AdamW(self.model.parameters())
        self.ids = torch.randint(0, cfg.vocab_size, (1, PROMPT))
        self.prompt = torch.randint(0, cfg.vocab_size, (1, CONTEXT - 1))

    def train_step(self) -> float:
        self.model.train()
        try:
            return seconds(lambda: one_training_step(self.model, self.train_inputs, self.optimizer, self.loss))
        finally:
            self.model.eval()

    @torch.no_grad()
    def prefill(self) -> float:
        if self.kind == "reference":
            return seconds(lambda: self.model(self.ids))
        return seconds(lambda: self.model(input_ids=self.ids, use_cache=False))

    @torch.no_grad()
    def decode(self) -> list[float]:
        """STEPS consecutive decode steps after a prompt of CONTEXT - 1 tokens."""
        if self.kind == "reference":
            state, _ = reference_prefill(self.model, self.prompt)
            token = torch.zeros(1, dtype=torch.long)
            return [seconds(lambda: reference_step(state, token)) for _ in range(STEPS)]
        cache = self.model(input_ids=self.prompt, use_cache=True).past_key_values
        token = torch.zeros(1, 1, dtype=torch.long)
        return [seconds(lambda: self.model(input_ids=token, past_key_values=cache, use_cache=True))
                for _ in range(STEPS)]


PHASES = {"prefill": f"prefill n={PROMPT}", "decode": f"decode c={CONTEXT}-{CONTEXT + STEPS - 1}",
          "train": f"train step n={PROMPT}"}


def run(rounds: int) -> tuple[list[dict], list[dict]]:
    rows, calibrations = [], []
    for label, cfg in MODELS.items():
        for kind in ("reference", "hf"):
            target = Target(cfg, kind)
            target.prefill(), target.decode(), target.train_step(), target.train_step()  # warm up
            samples: dict[str, list[tuple[float, float]]] = {phase: [] for phase in PHASES}
            bounds = {}
            for _ in range(rounds):
                local = measure_local()
                calibrations.append(local)
                hardware = Hardware.from_dict(local, source="measured now")
                roof = Roofline(cfg, hardware, "fp32", Efficiency(1.0, 1.0), attention="eager")
                total, predicted, _ = roof.prefill(1, PROMPT)
                bounds["prefill"] = total.bound
                prefills = [target.prefill() for _ in range(3)]
                samples["prefill"].append((float(predicted), statistics.median(prefills)))
                # The median step's context: the middle of the STEPS measured.
                total, predicted, _ = roof.decode(1, CONTEXT + (STEPS - 1) // 2)
                bounds["decode"] = total.bound
                samples["decode"].append((float(predicted), statistics.median(target.decode())))
                step = training_step(cfg, target.workload, hardware, Efficiency(1.0, 1.0))["timing"]
                bounds["train"] = step.bound
                steps = [target.train_step() for _ in range(3)]
                samples["train"].append((step.seconds, statistics.median(steps)))
            for phase, pairs in samples.items():
                ratios = [measured / predicted for predicted, measured in pairs]
                rows.append({
                    "model": label, "target": kind, "phase": PHASES[phase], "bound": bounds[phase],
                    "predicted_ms": 1e3 * statistics.median(p for p, _ in pairs),
                    "measured_ms": 1e3 * statistics.median(m for _, m in pairs),
                    "ratio": statistics.median(ratios),
                    "ratio_min": min(ratios), "ratio_max": max(ratios),
                })
            row = next(r for r in rows[-len(PHASES):] if r["phase"] == PHASES["prefill"])
            print(f"{label} / {kind}: done ({rounds} rounds; last calibration "
                  f"{local['flops_per_s']['fp32'] / 1e9:.0f} GFLOP/s matmul, "
                  f"{local['vector_flops_per_s'] / 1e9:.1f} GFLOP/s vector, "
                  f"{local['bandwidth_bytes_per_s'] / 1e9:.1f} GB/s, "
                  f"{local['overhead_s_per_block'] * 1e6:.0f} us/block); prefill ratio {row['ratio']:.2f}",
                  flush=True)
    return rows, calibrations


def positive(text: str) -> int:
    value = int(text) if text.isdigit() else 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=positive, default=5)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--threads", type=positive, default=1,
                        help="torch threads for calibration and timing alike")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    rows, calibrations = run(args.rounds)
    print(f"{torch.get_num_threads()} torch threads, {args.rounds} rounds; medians over rounds")
    print(f"{'model':<22}{'target':<11}{'phase':<19}{'bound':<9}{'predicted':>11}{'measured':>11}"
          f"{'meas/pred':>11}{'range':>13}")
    for r in rows:
        print(f"{r['model']:<22}{r['target']:<11}{r['phase']:<19}{r['bound']:<9}"
              f"{r['predicted_ms']:>9.1f}ms{r['measured_ms']:>9.1f}ms{r['ratio']:>11.2f}"
              f"{r['ratio_min']:>7.2f}-{r['ratio_max']:.2f}")
    if args.json:
        args.json.write_text(json.dumps({"rounds": args.rounds, "threads": torch.get_num_threads(),
                                         "calibrations": calibrations, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
