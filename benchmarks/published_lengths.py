"""The published runs' length files beside benchmarks/serve_published.py, read and checked: MLPerf
Llama-2-70B's prompt-length histogram (mlperf_llama2_70b_lengths.json) and the ShareGPT requests vLLM's
benchmark_serving.py samples, prompt and output paired (sharegpt_vllm_lengths.json). One reader and one
check of each file's stated statistics serve both; a malformed file is one ConfigError line naming it.
"""

from __future__ import annotations

import json
from pathlib import Path

from costmodel.config import ConfigError
from costmodel.serving.workload import Lengths

# MLPerf's prompts: the dataset's own lengths (a histogram, with its source and stated statistics).
MLPERF_LENGTHS = Path(__file__).resolve().parent / "mlperf_llama2_70b_lengths.json"
# ShareGPT's own lengths: the 500 requests vLLM's benchmark_serving.py samples, prompt and output paired (the post
# gives their means only); sharegpt_vllm_lengths.json in this folder, from JonnyKong/vidur (see its source).
VLLM_SHAREGPT = Path(__file__).resolve().parent / "sharegpt_vllm_lengths.json"
STATED_KEYS = ("samples", "below", "mean", "median", "min", "max")


def mlperf_input_lengths(path: Path = MLPERF_LENGTHS, at_least: int = 0) -> Lengths:
    """The dataset's prompt lengths as a histogram (values: each length; weights: its number of
    samples), checked against the file's stated statistics: as many samples as the dataset has, every
    length under its cap, and the source column's min, max, median and mean (to 0.01) reproduced.
    at_least: the samples a run will take from it. A malformed or short file is one line naming it."""
    import numpy as np

    where = str(path)
    data = read_length_file(path, ("values", "weights"), "MLPerf length histogram")
    stated, values, weights = data["stated"], data["values"], data["weights"]
    if not isinstance(stated, dict) or any(not is_number(stated.get(k)) for k in STATED_KEYS):
        raise ConfigError(f"{where}: stated needs numbers for {', '.join(STATED_KEYS)}.")
    if not whole_numbers(values) or not whole_numbers(weights):
        raise ConfigError(f"{where}: values and weights must be non-empty lists of whole numbers (tokens, samples).")
    try:
        lengths = Lengths("histogram", values=tuple(values), weights=tuple(float(w) for w in weights))
    except ConfigError as error:
        raise ConfigError(f"{where}: {error}") from None
    if any(b <= a for a, b in zip(values, values[1:])):
        raise ConfigError(f"{where}: values must be increasing, each length once.")
    counts = np.repeat(np.asarray(values), np.asarray(weights))
    check_stated(where, "the histogram's", counts, stated)
    if counts.max() >= stated["below"]:
        raise ConfigError(f"{where}: a length of {int(counts.max())} is not under the dataset's cap {stated['below']}.")
    if len(counts) < at_least:
        raise ConfigError(f"{where}: the histogram holds {len(counts)} samples, fewer than the {at_least} a run takes.")
    return lengths


def whole_numbers(xs) -> bool:
    """A non-empty list of whole numbers (not booleans)."""
    return isinstance(xs, list) and bool(xs) and all(isinstance(x, int) and not isinstance(x, bool) for x in xs)


def is_number(x, whole: bool = False) -> bool:
    """A stated figure: a number (a whole one where asked), not a boolean (JSON's true is not 1 token)."""
    return isinstance(x, int if whole else (int, float)) and not isinstance(x, bool)


def check_stated(where: str, what: str, counts, stated: dict) -> None:
    """A length file's lengths against its stated statistics (samples, min, max, median, mean to
    0.01): the one check every length file here passes. what names the lengths in the error."""
    import numpy as np

    checks = (("samples", len(counts), stated["samples"]), ("min", int(counts.min()), stated["min"]),
              ("max", int(counts.max()), stated["max"]), ("median", float(np.median(counts)), stated["median"]),
              ("mean", round(float(counts.mean()), 2), stated["mean"]))
    for name, ours, theirs in checks:
        if ours != theirs:
            raise ConfigError(f"{where}: {what} {name} is {ours}, the stated {name} {theirs}.")


def read_length_file(path: Path, keys: tuple[str, ...], what: str) -> dict:
    """A length file's JSON object, with source, stated and `keys` present; a file that cannot be
    read or lacks them is one line naming it."""
    where = str(path)
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as error:
        raise ConfigError(f"cannot read the {what} {where} ({error}).") from None
    if not isinstance(data, dict) or not {"source", "stated", *keys} <= data.keys():
        raise ConfigError(f"{where}: needs an object with source, stated, {', '.join(keys[:-1])} and {keys[-1]}.")
    return data


def sharegpt_lengths(path: Path = VLLM_SHAREGPT, at_least: int = 0) -> list[tuple[int, int]]:
    """The ShareGPT requests' (prompt, output) lengths, in the order sent, checked as the MLPerf
    histogram is (check_stated: each column's samples, min, max, median and mean) and against vLLM's
    filter (every prompt and output at least min_tokens, prompts at most max_prompt, prompt + output
    at most max_total). at_least: the requests a run will send. A malformed or short file is one
    line naming it."""
    import numpy as np

    where = str(path)
    data = read_length_file(path, ("prompts", "outputs"), "ShareGPT length file")
    stated, prompts, outputs = data["stated"], data["prompts"], data["outputs"]
    limits = ("min_tokens", "max_prompt", "max_total")
    if not isinstance(stated, dict) or any(not isinstance(stated.get(column), dict) for column in ("prompt", "output")) \
            or any(not is_number(stated[column].get(k)) for column in ("prompt", "output")
                   for k in STATED_KEYS if k != "below") \
            or any(not is_number(stated.get(k), whole=True) for k in limits):
        raise ConfigError(f"{where}: stated needs prompt and output statistics ({', '.join(k for k in STATED_KEYS if k != 'below')}) "
                          f"and {', '.join(limits)}.")
    if not whole_numbers(prompts) or not whole_numbers(outputs) or len(prompts) != len(outputs):
        raise ConfigError(f"{where}: prompts and outputs must be lists of whole numbers (tokens), one of each per request.")
    check_stated(where, "the prompts'", np.asarray(prompts), stated["prompt"])
    check_stated(where, "the outputs'", np.asarray(outputs), stated["output"])
    for i, (prompt, output) in enumerate(zip(prompts, outputs)):
        if min(prompt, output) < stated["min_tokens"] or prompt > stated["max_prompt"] \
                or prompt + output > stated["max_total"]:
            raise ConfigError(f"{where}: request {i} ({prompt} + {output} tokens) is outside vLLM's filter "
                              f"(at least {stated['min_tokens']} each, prompts up to {stated['max_prompt']}, "
                              f"both up to {stated['max_total']}).")
    if len(prompts) < at_least:
        raise ConfigError(f"{where}: the file holds {len(prompts)} requests, fewer than the {at_least} a run sends.")
    return list(zip(prompts, outputs))
