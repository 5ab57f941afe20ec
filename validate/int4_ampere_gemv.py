"""PyTorch's int4 weight-only GEMV (`torch._weight_int4pack_mm`, tinygemm) on the A100: its rate at one
token as a fraction of the 16-bit GEMV's, from a published A100 benchmark (kernel_facts.json
"weight_only_gemv", int4, the entry that names the A100s).

mobiusml/gemlite's README (commit 33016fd, 2024-10-29, "A100 SXM4") plots, for a square D x D weight
(D = 4,096 ... 32,768), int4 with groups of 128, each kernel's speed-up over `torch.matmul` in fp16 by
batch size: images/4bit_gs=128_{D}x{D}_A100.svg. Its "TorchAO (A16)" line is hqq's
`patch_hqq_to_aoint4` (hqq/backends/torchao.py at 412e0e6: one `_weight_int4pack_mm` call, inner k
tiles 8, bf16), timed as examples/benchmark_triton.py at 33016fd times every kernel: triton's do_bench
(warmup 25, rep 200, fast_flush: the L2 flushed before each call, return_mode 'min'). The SVG keeps
each point's coordinates: the value is (axis zero - y) / pixels a unit, a multiple of 0.01
(`PUBLISHED_A100`, typed into the fact's "published").

Each call is modelled as the kernel model times it, t = s + bytes / rate (s: the hardware file's
dram_kernel_startup_s): the fp16 call at the A100's GEMV rate, the int4 call's time that over the
published speed-up, its rate the int4 call's bytes over that time less s (`fraction`). The
benchmark does not name its A100's memory: the A100 80GB's GEMV rate (the rows' GPU) is used; the
40GB's gives fractions within 0.016 (s is small beside either call). Pure arithmetic; no torch.
"""

from __future__ import annotations

from typing import Any

from costmodel.hardware import load_hardware
from costmodel.kernel_time import KernelTimer, kernel_facts

#: Bytes an fp16 or bf16 value; the int4 weight's: half a byte a value and a bf16 scale and zero per
#: group of 128 (`scales_and_zeros`, [K / 128, N, 2] in bf16).
HALF = 2
GROUP = 128


def int4_entry() -> dict[str, Any]:
    """kernel_facts.json's int4 entry for the A100s (the one naming their die's 108 SMs)."""
    (entry,) = [e for e in kernel_facts()["weight_only_gemv"]
                if e["weight_dtype"] == "int4" and 108 in e.get("sm_counts", ())]
    return entry


def published(tokens: int = 1) -> dict[int, float]:
    """The published speed-up over fp16 by D at `tokens` (1 or 2) rows, as the entry states it."""
    return {int(d): pair[tokens - 1] for d, pair in int4_entry()["published"]["speedup_over_fp16"].items()}


def call_bytes(d: int, tokens: int, int4: bool) -> float:
    """A call's bytes as the kernel model counts them: the weight as stored plus the rows in and out."""
    weight = d * d / 2 + d * (d // GROUP) * 2 * HALF if int4 else HALF * d * d
    return weight + HALF * 2 * tokens * d


def fraction(d: int, speedup: float, tokens: int = 1, hardware: str = "a100-80gb") -> float:
    """The int4 kernel's rate over the GEMV rate at D, given its published speed-up over fp16."""
    timer = KernelTimer(load_hardware(hardware), "bf16")
    start, rate = timer.dram_startup_s, timer.gemv_bandwidth
    int4_seconds = (start + call_bytes(d, tokens, False) / rate) / speedup
    return call_bytes(d, tokens, True) / (int4_seconds - start) / rate


def fractions(tokens: int = 1, hardware: str = "a100-80gb") -> dict[int, float]:
    return {d: fraction(d, s, tokens, hardware) for d, s in published(tokens).items()}


def by_blocks(tokens: int = 1) -> dict[int, float]:
    """The fractions as the entry carries them: by thread blocks (N / 8 at one token, int4mm.cu), each
    over the largest weight's."""
    found = fractions(tokens)
    top = found[max(found)]
    return {d // 8: f / top for d, f in found.items()}


#: The same README's H100 figures (images/4bit_gs=128_{D}x{D}_H100.svg at 39c74ff, 'TorchAO (A16W4)',
#: batch 1; D = 16,384's file is named 16384x16834): a check of the Hopper entry, not a fact.
PUBLISHED_H100 = {4096: 2.32, 8192: 2.26, 16384: 2.43, 32768: 2.58}


def hopper_check() -> dict[int, float]:
    """The speed-up over fp16 the kernel model gives an int4 call on the H100 SXM (the Hopper entry's
    H200-measured rate there) at each D of PUBLISHED_H100, timed as `fraction` times them."""
    timer = KernelTimer(load_hardware("h100-sxm"), "bf16")
    kernel = timer.weight_only_gemv["int4"]
    return {d: (timer.dram_startup_s + call_bytes(d, 1, False) / timer.gemv_bandwidth)
            / (timer.dram_startup_s + call_bytes(d, 1, True) / kernel.rate_at(d, timer.sms)) for d in PUBLISHED_H100}


if __name__ == "__main__":
    for tokens in (1, 2):
        for hw in ("a100-80gb", "a100-40gb"):
            print(tokens, hw, {d: round(f, 3) for d, f in fractions(tokens, hw).items()})
    print("by blocks", {b: round(f, 3) for b, f in by_blocks().items()})
    print("h100: model", {d: round(r, 2) for d, r in hopper_check().items()}, "published", PUBLISHED_H100)
