"""What a training run costs: time to train on a number of tokens, GPU-hours, total FLOPs and,
at a price per GPU-hour, dollars. Arithmetic on a step's figures (costmodel/roofline_training.py and
costmodel/layout/time.py), no formulas of its own.

  steps          ceil(tokens / a step's tokens): a run is whole steps, the last one whole
  time to train  steps x a step's tokens / (tokens per second of the whole job)
  GPU-hours      time to train x GPUs / 3600
  total FLOPs    a step's model FLOPs x steps: the forward and backward matmuls, recomputation
                 aside (what MFU counts)
  dollars        GPU-hours x price per GPU-hour

What serving costs (serve --price, plan --serve --rate --price), at the output rate the deployment
sustains (serving/metrics.sustained_output: the offered rate where the simulation keeps up, else the
run's throughput): its GPUs billed by the hour whether busy or not, over the output tokens it
produces in that hour (a lower rate leaves the GPUs idler and each token dearer):
  dollars an hour                  GPUs x price per GPU-hour
  dollars per million output tokens  dollars an hour / (output tokens per second x 3600) x 1e6
"""

from __future__ import annotations

import math
from typing import Any

from .config import ConfigError, show
from .spec import RANK_BY as RANKINGS


def is_number(value: Any) -> bool:
    """A real number as the commands' FLOAT options take one: an int or a float, not a bool or text
    (`costmodel.simulate(tokens="1e9")` died comparing text with 0; tokens=True trained on 1 token)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


#: Where a run's price per GPU-hour came from (JSON cost.price_source): typed, or the hardware file's.
TYPED_PRICE, FILE_PRICE = "--price", "hardware file"


def price_of(price: float | None, hardware: Any) -> tuple[float | None, str | None]:
    """The price per GPU-hour a run is costed at and where it came from: --price (price=) as typed, else the
    hardware file's price_per_gpu_hour, else none. A file's price printed "at $2.99 per GPU-hour" exactly as a
    typed one, and no JSON said which (simulate, plan, serve and finetune each chose it alike)."""
    if price is not None:
        return price, TYPED_PRICE
    stated = getattr(hardware, "price_per_gpu_hour", None)
    return (stated, FILE_PRICE) if stated is not None else (None, None)


def priced_from(source: str | None) -> dict[str, str]:
    """A cost block's price_source where it has a price (none without one, so a run unpriced reads as before)."""
    return {"price_source": source} if source else {}


def check_price(price: float | None) -> None:
    """A price per GPU-hour must be a positive, finite number of dollars."""
    if price is not None and not (is_number(price) and price > 0 and math.isfinite(price)):
        raise ConfigError(f"--price must be a positive number of dollars per GPU-hour, got {show(price)}.")


def check_dollars(dollars: float | None, price: float) -> None:
    """A cost priced from a finite --price that still overflows (1e308 an hour) is one error line, not '$inf'."""
    if dollars is not None and not math.isfinite(dollars):
        raise ConfigError(f"--price {show(price)} dollars per GPU-hour makes the cost overflow; give a real price.")


def check_tokens(tokens: float | None) -> None:
    """--tokens: a positive, finite count of at least one token (inf printed 'time to train inf on inf Y
    tokens')."""
    if isinstance(tokens, str):  # costmodel.simulate(tokens="1T") read "must be positive and finite, got '1T'"
        raise ConfigError(f"tokens: a number of tokens (1e12), got the text {show(tokens)}: the command line's "
                          "--tokens reads spellings such as 1T; in Python give the number.")
    if tokens is not None and not (is_number(tokens) and tokens > 0 and math.isfinite(tokens)):
        raise ConfigError(f"--tokens must be positive and finite, got {show(tokens)}.")
    if tokens is not None and tokens < 1:  # 0.5 printed "0 tokens: 1 step"
        raise ConfigError(f"--tokens is a count of tokens, at least 1, got {show(tokens)}.")


def check_price_has_tokens(tokens: float | None, price: float | None) -> None:
    """A price is read only to cost a run of `tokens`: given alone it would be dropped unread."""
    if price is not None and tokens is None:
        raise ConfigError("--price costs a run of --tokens tokens: add --tokens (e.g. 1e12).")


def check_run_inputs(tokens: float | None, price: float | None, step_time: float | None = None) -> None:
    """A run's --tokens, --price and --step-time, each positive and finite, and a price only beside
    tokens: the one check simulate (CLI and API) and plan make."""
    check_tokens(tokens)
    check_price(price)
    if step_time is not None and not (is_number(step_time) and step_time > 0 and math.isfinite(step_time)):
        raise ConfigError(f"--step-time must be positive and finite, got {show(step_time)}.")
    check_price_has_tokens(tokens, price)


def measured_mfu(model_flops: float, step_seconds: float, peak_flops_per_s: float, gpus: int = 1,
                 fastest_flops_per_s: float | None = None) -> float:
    """The MFU of a measured step (--step-time): the step's model FLOPs over its seconds x gpus x the
    datasheet peak MFU divides by (the dtype's). A step shorter than the model FLOPs take at the fastest peak
    its GEMMs can run at (fastest_flops_per_s: an FP8 recipe's, which MFU does not divide by; else the same
    peak) is refused: no run does its model FLOPs faster than its tensor cores' datasheet rate, so such a time
    is mistyped (0.01 for 10 s) or another step's (a smaller batch or model)."""
    mfu = model_flops / (step_seconds * gpus * peak_flops_per_s)
    floor = model_flops / (gpus * (fastest_flops_per_s or peak_flops_per_s))
    if step_seconds < floor:
        on = f"{gpus:,} GPUs'" if gpus > 1 else "the GPU's"
        raise ConfigError(f"--step-time {show(step_seconds)} s: MFU {mfu:,.1%}, above 100%: no step of this run is "
                          f"shorter than {floor:.3g} s, its {model_flops:.4g} model FLOPs at {on} datasheet peak; "
                          "give one step's measured seconds (of this model, batch and layout).")
    return mfu


def with_measured_step(result: dict[str, Any], step_seconds: float | None, step_tokens: float) -> None:
    """simulate --train --tokens with --step-time: the run's cost at the measured step too
    (`cost_at_step_time`, training_cost's fields), beside the predicted step's `cost`. The cost took the
    predicted step alone, the measured time given read only for its MFU, and nothing said which."""
    cost = result.get("cost")
    if cost is None or step_seconds is None:
        return
    result["cost_at_step_time"] = {**training_cost(cost["tokens"], step_tokens / step_seconds, cost["gpus"],
                                                   cost["flops"] // cost["steps"], step_tokens,
                                                   cost["price_per_gpu_hour"], cost.get("price_source")),
                                   "step_seconds": step_seconds}


def training_cost(tokens: float, tokens_per_second: float, gpus: int, step_model_flops: float,
                  step_tokens: float, price_per_gpu_hour: float | None = None,
                  price_source: str | None = None) -> dict[str, Any]:
    """Time to train on `tokens`, GPU-hours, total model FLOPs and (with a price) dollars: a run is a
    whole number of steps of `step_tokens` each, the last one whole (`steps`: a run of 1,000 tokens on a
    step of 16,384 takes that step, not 6% of it), one rule for simulate --train, plan and finetune."""
    check_tokens(tokens)
    check_price(price_per_gpu_hour)
    steps = max(1, math.ceil(round(tokens / step_tokens, 6)))  # (6 places: a step's tokens as a float product)
    seconds = steps * step_tokens / tokens_per_second
    gpu_hours = seconds * gpus / 3600
    check_dollars(None if price_per_gpu_hour is None else gpu_hours * price_per_gpu_hour, price_per_gpu_hour)
    return {
        "tokens": tokens,
        "steps": steps,
        "train_seconds": seconds,
        "train_days": seconds / 86400,
        "gpus": gpus,
        "gpu_hours": gpu_hours,
        "flops": step_model_flops * steps,
        "price_per_gpu_hour": price_per_gpu_hour,
        "dollars": None if price_per_gpu_hour is None else gpu_hours * price_per_gpu_hour,
        **priced_from(price_source if price_per_gpu_hour is not None else None),
    }


def serving_cost(output_tokens_per_s: float, gpus: int, price_per_gpu_hour: float,
                 basis: str | None = None, price_source: str | None = None) -> dict[str, Any]:
    """A deployment's dollars an hour and dollars per million output tokens at `output_tokens_per_s`: serve's
    and plan --serve's the rate it sustains (serving/metrics.sustained_output, `basis` its rule: "offered",
    "saturated window" or "run"), simulate's the end-to-end generation rate."""
    check_price(price_per_gpu_hour)
    per_hour = gpus * price_per_gpu_hour
    per_million = per_hour / (output_tokens_per_s * 3600) * 1e6 if output_tokens_per_s > 0 else None
    check_dollars(per_hour, price_per_gpu_hour)
    check_dollars(per_million, price_per_gpu_hour)
    return {"price_per_gpu_hour": price_per_gpu_hour, "gpus": gpus, "dollars_per_hour": per_hour,
            "dollars_per_million_output_tokens": per_million,
            **({"output_tokens_per_s": output_tokens_per_s, "basis": basis} if basis else {}), **priced_from(price_source)}


def add_generation_cost(result: dict[str, Any], hardware: Any, price: float | None) -> None:
    """An inference run's "cost", the command's and costmodel.simulate's alike: its GPUs at --price (else
    the hardware file's price_per_gpu_hour) over the end-to-end rate, every generated token over the
    prefill and the decode steps (serving_cost, serve --price's formula); nothing without a price or a
    generation."""
    rates = result.get("generation") or result.get("decode") or {}
    if price is not None and "end_to_end_tokens_per_second" not in rates:  # --gen 0: it was dropped unread
        raise ConfigError("--price prices the generated tokens (dollars per million); --gen 0 generates none: "
                          "give --gen N or drop --price.")
    price, source = price_of(price, hardware)
    if price is None or "end_to_end_tokens_per_second" not in rates:
        return
    gpus = result["layout"]["gpus"] if "layout" in result else 1
    result["cost"] = serving_cost(rates["end_to_end_tokens_per_second"], gpus, price, price_source=source)


def gpus_of(entry: dict[str, Any]) -> int:
    """A plan entry's GPUs: tp x pp x dp x cp (Layout.gpus; context parallelism's ranks are GPUs too)."""
    layout = entry["layout"]
    return layout["tp"] * layout["pp"] * layout["dp"] * layout.get("cp", 1)


def price_plan(result: dict[str, Any], tokens: float | None, price: float | None,
               price_source: str | None = None, rank_by: str = "time") -> dict[str, Any]:
    """A training plan's feasible layouts with, for `tokens` tokens, each one's time to train,
    GPU-hours, FLOPs and dollars ("cost"), ranked by step time or by GPU-seconds per token (the
    cost of a token, whatever the price: it differs from time where the GPU counts differ)."""
    if rank_by not in RANKINGS:
        raise ConfigError(f"--rank-by must be one of {', '.join(RANKINGS)}, got {rank_by!r}.")
    check_price(price)
    for entry in result["feasible"]:
        if tokens is not None:
            step_tokens = entry["tokens_per_second"] * entry["step_time"]
            entry["cost"] = training_cost(tokens, entry["tokens_per_second"], gpus_of(entry),
                                          entry["model_flops"], step_tokens, price, price_source)
    if rank_by == "cost":
        result["feasible"].sort(key=lambda e: gpus_of(e) / e["tokens_per_second"])
    else:
        result["feasible"].sort(key=lambda e: e["step_time"])
    return result
