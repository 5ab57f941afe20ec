"""The requests a replica serves: when each arrives, how long its prompt is, how many tokens it
generates. From a Poisson process at a rate (seeded), from a JSONL trace, or from synthetic length
distributions (fixed, uniform, lognormal, or a histogram file)."""

from __future__ import annotations

import json
import math
import numbers
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config import ConfigError, show
from ..sizes import parse_length

#: The longest length a distribution may give: past any model's context, and well inside int64.
MAX_TOKENS = 1 << 40


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


@dataclass(frozen=True)
class Request:
    """One request: its arrival (seconds), prompt tokens, tokens to generate, and an optional
    shared prefix: its id and how many of the prompt's first tokens it is (a trace's; what vLLM's
    prefix caching reuses, costmodel/serving/scheduler_state.py).
    prefilled: it arrives with its prompt's KV cache and its first token (a disaggregated decode
    pool's request, its prefill done elsewhere)."""

    id: int
    arrival_s: float
    prompt_tokens: int
    output_tokens: int
    prefix_id: str | None = None
    prefilled: bool = False
    prefix_tokens: int = 0


@dataclass(frozen=True)
class Lengths:
    """A distribution of token counts: "fixed" (mean), "uniform" (low..high inclusive),
    "lognormal" (median mean, shape sigma, clipped to low..high), or "histogram" (values with
    weights, from a JSON file {"values": [...], "weights": [...]})."""

    kind: str = "fixed"
    mean: int = 512
    low: int = 1
    high: int = 1 << 30
    sigma: float = 1.0
    values: tuple[int, ...] = ()
    weights: tuple[float, ...] = ()

    KINDS = ("fixed", "uniform", "lognormal", "histogram")

    def __post_init__(self) -> None:
        if self.kind not in self.KINDS:
            raise ConfigError(f"length distribution must be one of {', '.join(self.KINDS)}, got {show(self.kind)}.")
        if self.kind == "fixed" and self.mean < 1:
            raise ConfigError(f"a fixed length must be a positive number of tokens, got {self.mean}.")
        if self.kind == "lognormal" and not (self.mean >= 1 and 0 <= self.sigma < math.inf):
            raise ConfigError(f"a lognormal length needs a median of at least 1 token and a finite sigma >= 0, "
                              f"got {self.mean} and {self.sigma}.")
        if self.kind in ("uniform", "lognormal") and not 1 <= self.low <= self.high:
            raise ConfigError(f"a length range must satisfy 1 <= low <= high, got {self.low}..{self.high}.")
        if self.kind == "histogram" and (not self.values or len(self.values) != len(self.weights)
                                         or not all(_is_count(v) and v >= 1 for v in self.values)
                                         or not all(_is_number(w) and w >= 0 for w in self.weights)
                                         or not 0 < sum(self.weights) < math.inf):
            # 100.5 read as 100, true as 1; an Infinity weight or two of 1e308 raised numpy's traceback (round 23)
            raise ConfigError("a length histogram needs whole, positive values (tokens) and as many non-negative "
                              "weights, finite and with a positive, finite sum.")
        largest = max(self.values, default=0) if self.kind == "histogram" else max(self.mean, self.high
                                                                                   if self.kind != "fixed" else 0)
        if largest > MAX_TOKENS:
            raise ConfigError(f"a length of {largest} tokens is past any model's context; at most 2**40 here.")

    @classmethod
    def parse(cls, text: str) -> "Lengths":
        """From an option: "512", "uniform:128:1024", "lognormal:512:0.8[:low:high]", or
        "histogram:path.json"; each length also as costmodel/sizes.py reads one ("4k" = 4,096)."""
        kind, _, rest = text.partition(":")
        kind = kind.lower()  # Uniform:1K:4K as uniform:1k:4k: a choice in any case, as every option's (the path's kept)
        try:
            if not rest and kind[:1].isdigit():  # 512, 4k (costmodel/sizes.py)
                return cls("fixed", mean=parse_length(kind))
            parts = rest.split(":")
            if len(parts) not in {"fixed": (1,), "uniform": (2,), "lognormal": (2, 4)}.get(kind, (len(parts),)):
                raise IndexError  # uniform:128:1024:512 ran as 128..1024, the 512 dropped unread
            if kind == "fixed":
                return cls("fixed", mean=parse_length(parts[0]))
            if kind == "uniform":
                return cls("uniform", low=parse_length(parts[0]), high=parse_length(parts[1]))
            if kind == "lognormal":
                bounds = [parse_length(x) for x in parts[2:4]] or [1, 1 << 30]
                return cls("lognormal", mean=parse_length(parts[0]), sigma=float(parts[1]), low=bounds[0], high=bounds[1])
            if kind == "histogram":
                data = json.loads(Path(rest).read_text())
                if not (isinstance(data, dict) and isinstance(data.get("values"), list)
                        and isinstance(data.get("weights"), list)):
                    raise ValueError('a histogram file holds {"values": [tokens, ...], "weights": [w, ...]}')
                values = (int(v) if isinstance(v, float) and v.is_integer() else v for v in data["values"])  # 1e3
                return cls("histogram", values=tuple(values), weights=tuple(data["weights"]))
        except (ValueError, IndexError, KeyError, TypeError, OSError) as error:
            if kind == "histogram" or isinstance(error, ConfigError):  # the file's or the value's own sentence
                raise ConfigError(f"cannot read the length distribution {show(text)} "
                                  f"({str(error).rstrip('.')}).") from None
            # "uniform" said "(invalid literal for int() with base 10: '')": the forms say what was meant
        raise ConfigError(f"length distribution {show(text)}: use N, uniform:LOW:HIGH, "
                          f"lognormal:MEDIAN:SIGMA[:LOW:HIGH] or histogram:FILE.json.")

    def sample(self, rng: Any, count: int) -> "Any":
        import numpy as np

        if self.kind == "fixed":
            return np.full(count, self.mean, dtype=np.int64)
        if self.kind == "uniform":
            return rng.integers(self.low, self.high + 1, size=count)
        if self.kind == "lognormal":
            drawn = np.rint(rng.lognormal(math.log(self.mean), self.sigma, size=count))
            return np.clip(drawn, self.low, self.high).astype(np.int64)
        weights = np.asarray(self.weights) / sum(self.weights)
        return np.asarray(self.values, dtype=np.int64)[rng.choice(len(self.values), size=count, p=weights)]


#: The most requests one run simulates: beyond it a count is a typo (10^11 asked numpy for 745 GiB of
#: arrival gaps and ended in a MemoryError traceback); 10^7 is hours of simulated steps already.
MAX_REQUESTS = 10**7


def check_whole(option: str, value: Any, minimum: int | None = 1) -> None:
    """A count option (--requests, --max-num-seqs, --block-size, ...) from Python: an int, not a bool,
    a float or text (which int() would cut or read), at least `minimum` (None: the caller words the
    range); else one line naming it."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ConfigError(f"{option} must be a whole number, got {show(value)}.")
    if minimum is not None and value < minimum:
        raise ConfigError(f"{option} must be at least {minimum}, got {value}.")


def check_requests(count: int) -> None:
    """--requests: at least 1 and at most MAX_REQUESTS, else one line (serve, and plan --serve before
    its search, which reported every configuration 'not feasible' and exited 0)."""
    check_whole("--requests", count)
    if count > MAX_REQUESTS:
        raise ConfigError(f"--requests {count} is beyond {MAX_REQUESTS:,}; is it a typo?")


#: The latest arrival a run's clock (seconds in a float64) times to a microsecond: from 2^33 s (272 years) on,
#: one unit in the last place is 2^-19 s = 1.9 us, and a step's milliseconds begin to round away (at 1e300 s a
#: whole request took "0.0 ms" end to end).
CLOCK_LIMIT_S = 2.0**33


def check_clock(last_arrival: float, source: str) -> None:
    """The run's clock must still resolve a microsecond at its last arrival (CLOCK_LIMIT_S), else one line."""
    if last_arrival >= CLOCK_LIMIT_S:
        raise ConfigError(f"{source}: the last request arrives at {last_arrival:.3g} s, past 2^33 s (272 years), where "
                          "seconds in a double no longer resolve a microsecond and the latencies would round away.")


def poisson(rate: float, count: int, prompt: Lengths, output: Lengths, seed: int = 0) -> list[Request]:
    """`count` requests arriving as a Poisson process of `rate` per second (exponential gaps),
    the first at time 0's first gap; lengths drawn from their distributions. rate=inf: all at 0."""
    import numpy as np

    if isinstance(rate, bool) or not isinstance(rate, numbers.Real) or not rate > 0:  # "5" is text, not a rate
        text = isinstance(rate, str) and rate.strip().replace(".", "", 1).isdigit()  # serve(rate="5"): "got '5'" alone
        raise ConfigError(f"--rate must be a positive number of requests per second, got {show(rate)}"
                          + (f": text; in Python give the number, rate={float(rate):g}." if text else "."))
    check_requests(count)
    rng = np.random.default_rng(seed)
    gaps = np.zeros(count) if math.isinf(rate) else rng.exponential(1.0 / rate, size=count)
    arrivals = np.cumsum(gaps)
    check_clock(float(arrivals[-1]), f"--rate {rate:g} with {count:,} requests")
    prompts, outputs = prompt.sample(rng, count), output.sample(rng, count)
    return [Request(i, float(arrivals[i]), int(prompts[i]), int(outputs[i])) for i in range(count)]


TRACE_FIELDS = {"arrival": "arrival_s", "prompt_tokens": "prompt_tokens", "output_tokens": "output_tokens"}


def read_trace(path: str | Path, context: int | None = None) -> list[Request]:
    """Requests from a JSONL file, one object a line: {"arrival": seconds, "prompt_tokens": N,
    "output_tokens": M, "prefix": "id", "prefix_tokens": K (both optional: the prompt's first K
    tokens are the same in every request of that id; without K the id shares nothing)}. Blank
    lines are skipped; a malformed line is named in the error, as is a request past `context` (the
    model's, where given: the requests are renumbered in arrival order, so a number would not say
    which line)."""
    requests: list[Request] = []
    if not isinstance(path, (str, Path)):  # Path([...]) raised a TypeError
        raise ConfigError(f"--trace: a path to a JSONL file, one request a line, got {type(path).__name__} "
                          f"{show(path)}.")
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as error:
        raise ConfigError(f"cannot read the trace {show(str(path))} ({error.strerror}).") from None
    except UnicodeDecodeError:  # a gzipped trace.jsonl.gz raised a traceback
        raise ConfigError(f"the trace {show(str(path))} is not UTF-8 text (compressed? decompress it: one JSON "
                          f"object a line).") from None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            data = json.loads(line)
        except ValueError:
            raise ConfigError(f"{where}: not a JSON object.") from None
        if not isinstance(data, dict):
            raise ConfigError(f"{where}: not a JSON object.")
        missing = [key for key in TRACE_FIELDS if key not in data]
        if missing:
            # what a line holds and what it must: "missing prompt_tokens, output_tokens." alone left a trace written
            # with other names ({"arrival", "prompt", "output"}, Mooncake's input_length) to be guessed at
            raise ConfigError(f"{where}: missing {', '.join(missing)}; a trace line is {{\"arrival\": seconds, "
                              f"\"prompt_tokens\": N, \"output_tokens\": N}} (optional \"prefix\", \"prefix_tokens\"), "
                              f"this one has {', '.join(map(str, data)) or 'no field'}.")
        arrival, prompt, output = data["arrival"], data["prompt_tokens"], data["output_tokens"]
        if not isinstance(arrival, (int, float)) or isinstance(arrival, bool) or not arrival >= 0 \
                or math.isinf(arrival):
            raise ConfigError(f"{where}: arrival must be a finite number of seconds >= 0, got {show(arrival)}.")
        for name, value in (("prompt_tokens", prompt), ("output_tokens", output)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"{where}: {name} must be a positive integer, got {show(value)}.")
        if context is not None and prompt + output > context:
            raise ConfigError(f"{where}: prompt_tokens {prompt} + output_tokens {output} pass the model's context "
                              f"of {context}; shorten that request or leave it out.")
        prefix, shared = data.get("prefix"), data.get("prefix_tokens", 0)
        if not isinstance(shared, int) or isinstance(shared, bool) or not 0 <= shared <= prompt:
            raise ConfigError(f"{where}: prefix_tokens must be an integer from 0 to prompt_tokens, got {show(shared)}.")
        if shared and prefix is None:
            raise ConfigError(f"{where}: prefix_tokens needs a prefix id.")
        requests.append(Request(len(requests), float(arrival), prompt, output,
                                None if prefix is None else str(prefix), prefix_tokens=shared))
    if not requests:
        raise ConfigError(f"the trace {show(str(path))} holds no requests.")
    order = sorted(requests, key=lambda r: r.arrival_s)
    check_clock(order[-1].arrival_s, f"the trace {show(str(path))}")
    return [Request(i, r.arrival_s, r.prompt_tokens, r.output_tokens, r.prefix_id, prefix_tokens=r.prefix_tokens)
            for i, r in enumerate(order)]
