"""An anomaly sweep of the time model: simulate (training and inference) over a grid of models, GPUs and
modes, run in-process through the Python API (and a few through the CLI's --json), checked against
invariants no user would doubt. Prints one line a violation and a count a check; --json writes them.

    PYTHONPATH=. python benchmarks/sweep_anomalies.py [--quick] [--json OUT]

The grid and the invariants are data (MODELS, GPUS, FASTER, TRAIN_LAYOUTS, ...); the findings and what
each violation turned out to be: validate/FINDINGS.md, "Anomaly sweep (wt38_sweep, session 38)"; serve's eager steps
and eager training steps against what a kernel keeps of its launch: "A stream's kernel cost in eager training and
serving steps (wt39_eagerstream, session 39)".
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import warnings
from typing import Any, Callable

import costmodel

# (model, kind): presets, one of each family the time model branches on
MODELS = [
    ("gpt2", "dense MHA, learned positions"), ("llama2-7b", "dense MHA"), ("llama3-8b", "dense GQA"),
    ("llama3.2-1b", "dense GQA, tied"), ("qwen2.5-7b", "dense GQA, qkv bias"), ("falcon-7b", "MQA, parallel"),
    ("phi3-mini", "dense, fused qkv"), ("mistral-7b", "sliding window"), ("gemma2-9b", "local/global windows"),
    ("gemma3-4b", "5:1 local/global"), ("llama3-70b", "big dense GQA"), ("mixtral-8x7b", "MoE top-2"),
    ("qwen3-30b-a3b", "fine-grained MoE"), ("deepseek-v2-lite", "MLA + MoE"), ("gpt-oss-20b", "MoE, mxfp4 checkpoint"),
    ("qwen3-14b", "checkpoint with quantization_config"), ("nemotron-3-nano", "hybrid Mamba-2 + MoE"),
    ("opt-1.3b", "dense, ReLU"),
]
SMALL = {"gpt2", "llama3.2-1b", "opt-1.3b"}
BIG = {"llama3-70b"}  # needs a layout to train
GPUS = ["a100-40gb", "a100-80gb", "h100-pcie", "h100-sxm", "h200", "b200", "mi300x", "l40s", "rtx-4090"]
# (slower, faster): the second has at least the first's every peak and bandwidth (checked below, from the files)
FASTER = [("a100-40gb", "a100-80gb"), ("h100-pcie", "h100-sxm"), ("h100-sxm", "h200"), ("h100-sxm", "b200"),
          ("a100-80gb", "h100-sxm"), ("l40s", "h100-sxm")]
FP8_GPUS = {"h100-sxm", "h200", "b200", "l40s", "rtx-4090", "h100-pcie"}
# the first two are the one-GPU baselines of the data-parallel check (same framework, same micro batch)
TRAIN_LAYOUTS = [
    {"dp": 1}, {"dp": 1, "framework": "fsdp2"}, {"dp": 8}, {"dp": 8, "zero": 1}, {"dp": 8, "zero": 3, "framework": "fsdp2"}, {"tp": 2, "dp": 4, "sp": True, "framework": "megatron"},
    {"tp": 2, "pp": 2, "dp": 2, "microbatches": 8, "framework": "megatron"}, {"dp": 8, "zero": 2},
]
RECOMPUTE = ["none", "full"]
TRAIN_MODELS = ["llama3-8b", "qwen3-30b-a3b", "gpt2", "mistral-7b", "gemma2-9b", "deepseek-v2-lite", "nemotron-3-nano"]
TRAIN_ALL_GPUS = 2  # the first two train on every GPU, the others on ENGINE_GPUS
ENGINE_GPUS = ["a100-80gb", "h100-sxm"]  # the decode codes, graphs, caches and weight dtypes: these GPUs
ENGINE_MODELS = {"llama3-8b", "mistral-7b", "qwen3-30b-a3b", "deepseek-v2-lite", "gpt-oss-20b",
                 "nemotron-3-nano", "llama3-70b", "gpt2"}
DECODE_CODES = ["transformers", "gpt-fast", "tensorrt-llm"]
WEIGHT_DTYPES = [None, "int8", "int4", "fp8"]
TOL = 1e-9
EAGER_ONLY = {"gemma2-9b", "gpt-oss-20b"}  # their Hugging Face classes have no sdpa path: the default (eager)



class Sweep:
    """The violations found, grouped by invariant, and how many checks each invariant ran."""

    def __init__(self) -> None:
        self.violations: list[dict[str, Any]] = []
        self.checks: dict[str, int] = {}
        self.errors: list[dict[str, Any]] = []

    def check(self, invariant: str, ok: bool, case: str, detail: str) -> None:
        self.checks[invariant] = self.checks.get(invariant, 0) + 1
        if not ok:
            self.violations.append({"invariant": invariant, "case": case, "detail": detail})

    def run(self, case: str, call: Callable[[], Any]) -> dict[str, Any] | None:
        """call's to_dict(), or None (its error noted) where the model refuses the case."""
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return call().to_dict()
        except costmodel.config.ConfigError as error:  # a refusal is an answer, not an anomaly
            self.errors.append({"case": case, "refused": str(error)[:160]})
        except Exception as error:  # noqa: BLE001 - a crash is an anomaly: recorded, the sweep goes on
            self.violations.append({"invariant": "no crash", "case": case, "detail": f"{type(error).__name__}: {error}"[:300]})
        return None


def times(data: Any, path: str = "") -> list[tuple[str, float]]:
    """Every number under a key that names seconds, with its path."""
    found = []
    if isinstance(data, dict):
        for key, value in data.items():
            where = f"{path}.{key}" if path else key
            if isinstance(value, (int, float)) and not isinstance(value, bool) and "second" in key:
                found.append((where, float(value)))
            else:
                found.extend(times(value, where))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            found.extend(times(value, f"{path}[{index}]"))
    return found


def step_seconds(d: dict[str, Any], train: bool) -> float:
    if train:
        return d["step"]["seconds"]
    return d["generation"]["end_to_end_seconds"] if "generation" in d else d["decode"]["end_to_end_seconds"]


def tpot(d: dict[str, Any]) -> float:
    return d["generation"]["time_per_output_token"] if "generation" in d else d["decode"]["time_per_output_token"]


def basic(s: Sweep, case: str, d: dict[str, Any], train: bool, layout: dict | None, batch: int, seq: int) -> None:
    """Every time finite and not negative, the step's positive; MFU <= 1 <= HFU/MFU; tokens/s x step = tokens."""
    bad = [(p, v) for p, v in times(d) if not math.isfinite(v) or v < 0]
    s.check("times finite, >= 0", not bad, case, str(bad[:3]))
    s.check("step time > 0", step_seconds(d, train) > 0, case, str(step_seconds(d, train)))
    if not train:
        gen = d["inputs"]["gen"]
        e2e = (d.get("generation") or d["decode"])
        tokens = e2e["end_to_end_tokens_per_second"] * e2e["end_to_end_seconds"]
        s.check("tokens/s x seconds = tokens", abs(tokens - gen * batch) <= 1e-6 * gen * batch, case,
                f"{tokens} != {gen * batch}")
        return
    step = d["step"]
    if layout is not None:
        mfu, hfu = step["mfu"], step["hfu"]
        s.check("MFU <= 1", mfu <= 1 + TOL, case, f"mfu {mfu:.3f}")
        s.check("HFU >= MFU", hfu >= mfu - TOL, case, f"hfu {hfu:.4f} < mfu {mfu:.4f}")
        lay = d["parallel"]["layout"]
        tokens = lay["global_batch"] * seq
        s.check("tokens/s x step = tokens", abs(step["tokens_per_second"] * step["seconds"] - tokens) <= 1e-6 * tokens,
                case, f"{step['tokens_per_second'] * step['seconds']} != {tokens}")
        s.check("fits = per-rank <= capacity (plan's rule)",
                d["fits"] == (d["parallel"]["per_rank"]["total"] <= d["memory_capacity"]), case, str(d["fits"]))
    else:
        mfu = d["mfu_predicted"]
        s.check("MFU <= 1", mfu <= 1 + TOL, case, f"mfu {mfu:.3f}")
        tokens = batch * seq
        s.check("tokens/s x step = tokens", abs(d["tokens_per_second"] * step["seconds"] - tokens) <= 1e-6 * tokens,
                case, f"{d['tokens_per_second'] * step['seconds']} != {tokens}")
        s.check("fits = total <= capacity (plan's rule)", d["fits"] == (d["memory"]["total"] <= d["memory_capacity"]),
                case, str(d["fits"]))


def training(s: Sweep, quick: bool) -> dict[tuple, dict]:
    """Training steps: each model x GPU x layout x recompute (fp8 where the GPU has it), batch 1, 2 and 4."""
    results: dict[tuple, dict] = {}
    models = TRAIN_MODELS[:3] if quick else TRAIN_MODELS
    for mi, model in enumerate(models):
        seq = 1024 if model == "gpt2" else 4096
        for gpu in (GPUS if mi < TRAIN_ALL_GPUS else ENGINE_GPUS):
            for li, layout in enumerate([None, *TRAIN_LAYOUTS]):
                for recompute in RECOMPUTE:
                    fp8s = [None, "tensorwise"] if (layout and gpu in FP8_GPUS and layout.get("framework") == "megatron"
                                                    and recompute == "none") else [None]
                    for fp8 in fp8s:
                        for batch in (2, 4):
                            lay = None if layout is None else {**layout, **({"fp8": fp8} if fp8 else {})}
                            case = f"train {model} {gpu} {lay} rc={recompute} b={batch}"
                            d = s.run(case, lambda: costmodel.simulate(model, gpu, train=True, seq_len=seq, batch=batch,
                                                                       recompute=recompute, layout=lay))
                            if d is None:
                                continue
                            basic(s, case, d, True, lay, batch, seq)
                            results[(model, gpu, li, recompute, fp8, batch)] = d
    return results


def train_relations(s: Sweep, r: dict[tuple, dict]) -> None:
    """Across runs: a faster GPU, a doubled batch, more data-parallel ranks."""
    for (model, gpu, li, rc, fp8, batch), d in r.items():
        t = d["step"]["seconds"]
        for slow, fast in FASTER:
            if gpu == slow and (model, fast, li, rc, fp8, batch) in r:
                tf = r[(model, fast, li, rc, fp8, batch)]["step"]["seconds"]
                s.check("faster GPU never slower (train)", tf <= t * (1 + 1e-6), f"train {model} {slow}->{fast} layout#{li} rc={rc} fp8={fp8} b={batch}",
                        f"{t:.4f} s -> {tf:.4f} s")
        if (model, gpu, li, rc, fp8, 2 * batch) in r:
            t2 = r[(model, gpu, li, rc, fp8, 2 * batch)]["step"]["seconds"]
            case = f"train {model} {gpu} layout#{li} rc={rc} fp8={fp8} b={batch}->{2 * batch}"
            s.check("2x batch: step grows", t2 >= t * (1 - 1e-6), case, f"{t:.4f} -> {t2:.4f}")
            s.check("2x batch: step at most doubles", t2 <= 2 * t * (1 + 1e-6), case, f"{t:.4f} -> {t2:.4f}")
        lay = ([None, *TRAIN_LAYOUTS])[li]
        if lay is None or not set(lay) <= {"dp", "zero", "framework"} or lay["dp"] == 1 or fp8 is not None:
            continue
        base = 2 if lay.get("framework") == "fsdp2" else 1  # its framework's dp 1 (TRAIN_LAYOUTS' first two)
        if (model, gpu, base, rc, None, batch) in r:
            one = r[(model, gpu, base, rc, None, batch)]["step"]
            # ZeRO shards the optimizer's update over dp (each rank steps 1/dp of the parameters): a true
            # effect, so the bound is one GPU's step with its optimizer divided by dp; plain DDP: one GPU's step
            sharded = one["optimizer_seconds"] * (1 - 1 / lay["dp"]) if lay.get("zero", 0) >= 1 else 0.0
            bound = one["tokens_per_second"] * one["seconds"] / (one["seconds"] - sharded)
            many = d["step"]["tokens_per_second"] / lay["dp"]
            s.check("dp: per-GPU tokens/s <= one GPU's (ZeRO: its optimizer / dp)", many <= bound * (1 + 1e-6),
                    f"train {model} {gpu} {lay} rc={rc} b={batch}", f"one GPU {bound:.0f}, per GPU at dp {lay['dp']}: {many:.0f}")


def inference(s: Sweep, quick: bool) -> dict[tuple, dict]:
    """Decoding: each model x GPU x batch x prompt, the decode codes, cuda graphs, static cache, weight dtypes."""
    results: dict[tuple, dict] = {}
    models = [m for m, _ in MODELS][:6] if quick else [m for m, _ in MODELS]
    for model in models:
        for gpu in GPUS:
            engine = gpu in ENGINE_GPUS and model in ENGINE_MODELS
            for batch in (1, 32):
                for prompt in (128, 8192):
                    for code in (DECODE_CODES if engine else DECODE_CODES[:1]):
                        for graphs in (False, True):
                            for cache in ("dynamic", "static"):
                                for wd in WEIGHT_DTYPES:
                                    if (graphs or cache == "static") and (wd or code == "tensorrt-llm"):
                                        continue  # the graph/cache axes at bf16, the dtypes without them
                                    if not engine and (graphs or cache == "static" or wd):
                                        continue  # the engine axes on ENGINE_GPUS and ENGINE_MODELS only, for time
                                    key = (model, gpu, batch, prompt, code, graphs, cache, wd)
                                    case = f"infer {model} {gpu} b={batch} p={prompt} {code} graphs={graphs} {cache} w={wd}"
                                    attention = None if model in EAGER_ONLY else "sdpa"
                                    d = s.run(case, lambda: costmodel.simulate(
                                        model, gpu, prompt=prompt, gen=32, batch=batch, decode_code=code,
                                        cuda_graphs=graphs, kv_cache=cache, weight_dtype=wd, attention=attention))
                                    if d is None:
                                        continue
                                    basic(s, case, d, False, None, batch, prompt)
                                    results[key] = d
    return results


def infer_relations(s: Sweep, r: dict[tuple, dict]) -> None:
    for key, d in r.items():
        model, gpu, batch, prompt, code, graphs, cache, wd = key
        t = tpot(d)
        for slow, fast in FASTER:
            other = (model, fast, *key[2:])
            if gpu == slow and other in r:
                s.check("faster GPU never slower (decode)", tpot(r[other]) <= t * (1 + 1e-6), f"{key} {slow}->{fast}",
                        f"tpot {t * 1e3:.3f} ms -> {tpot(r[other]) * 1e3:.3f} ms")
        if not graphs:
            with_graphs = (model, gpu, batch, prompt, code, True, cache, wd)
            if with_graphs in r:
                s.check("cuda graphs never slower", tpot(r[with_graphs]) <= t * (1 + 1e-6), str(key),
                        f"tpot {t * 1e3:.3f} -> {tpot(r[with_graphs]) * 1e3:.3f} ms")
        if cache == "dynamic" and code == "gpt-fast":  # gpt-fast: compiled decoding
            static = (model, gpu, batch, prompt, code, graphs, "static", wd)
            if static in r:
                s.check("static cache never slower (compiled)", tpot(r[static]) <= t * (1 + 1e-6), str(key),
                        f"tpot {t * 1e3:.3f} -> {tpot(r[static]) * 1e3:.3f} ms")
        if wd == "int4" and batch == 1 and code in ("gpt-fast", "tensorrt-llm"):
            plain = (model, gpu, batch, prompt, code, graphs, cache, None)
            if plain in r and model in ("llama3-8b", "llama2-7b", "qwen2.5-7b", "mistral-7b", "llama3-70b"):
                s.check("int4 never slower than bf16 (b=1, int4 kernels)", t <= tpot(r[plain]) * (1 + 1e-6), str(key),
                        f"bf16 {tpot(r[plain]) * 1e3:.3f} ms, int4 {t * 1e3:.3f} ms")


def layout_decode(s: Sweep, quick: bool) -> int:
    """Tensor-parallel decoding (tp 2): the basic checks, and CUDA graphs never slower than eager steps."""
    runs = 0
    for model in sorted(ENGINE_MODELS)[:3] if quick else sorted(ENGINE_MODELS):
        for gpu in ENGINE_GPUS[:2]:
            for batch in (1, 32):
                for prompt in (128, 8192):
                    tpots = {}
                    for graphs in (False, True):
                        case = f"infer tp2 {model} {gpu} b={batch} p={prompt} graphs={graphs}"
                        d = s.run(case, lambda: costmodel.simulate(model, gpu, prompt=prompt, gen=32, batch=batch,
                                                                   cuda_graphs=graphs, layout={"tp": 2}))
                        if d is None:
                            continue
                        runs += 1
                        basic(s, case, d, False, {"tp": 2}, batch, prompt)
                        tpots[graphs] = tpot(d)
                    if len(tpots) == 2:
                        s.check("cuda graphs never slower (tp 2)", tpots[True] <= tpots[False] * (1 + 1e-6),
                                f"tp2 {model} {gpu} b={batch} p={prompt}",
                                f"tpot {tpots[False] * 1e3:.3f} -> {tpots[True] * 1e3:.3f} ms")
    return runs


def decode_step(d: dict[str, Any]) -> float:
    """A simulate run's first decode step (its seconds, one step at prompt + 1 keys)."""
    return (d.get("generation") or d["decode"])["first_token"]["seconds"]


def serve_eager(s: Sweep, infer: dict[tuple, dict]) -> int:
    """serve's eager steps (the static scheduler: Hugging Face generate's counted ops, serving/host_step.py) at the
    inference grid's decode steps of the transformers code: a GPU-bound one is simulate's eager step, and never
    faster than simulate's step replayed from a CUDA graph (which keeps graph_kernel_s a kernel). Returns the steps."""
    import numpy as np

    from costmodel.hardware import load_hardware
    from costmodel.presets import load_preset
    from costmodel.serving.replica import build_replica
    from costmodel.serving.host_step import HostBound

    steps = 0
    for (model, gpu, batch, prompt, code, graphs, cache, wd), eager in infer.items():
        graphed = infer.get((model, gpu, batch, prompt, code, True, cache, wd))
        if code != "transformers" or graphs or cache != "dynamic" or wd or graphed is None or model in EAGER_ONLY:
            continue
        case = f"serve static {model} {gpu} b={batch} p={prompt}"
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _, step, _ = build_replica(load_preset(model), load_hardware(gpu), scheduler="static", attention="sdpa")
        except costmodel.config.ConfigError as error:
            s.errors.append({"case": case, "refused": str(error)[:160]})
            continue
        if not isinstance(step, HostBound):
            continue
        ones, keys = np.ones(batch, dtype=np.int64), np.full(batch, prompt + 1)
        seconds = step.seconds(ones, keys)
        if seconds <= step.ops(ones, keys, batch) * step.op_s:
            continue  # host-bound: the host's ops, whatever the kernels keep
        steps += 1
        s.check("serve's eager step = simulate's (GPU-bound)", math.isclose(seconds, decode_step(eager), rel_tol=1e-9),
                case, f"serve {seconds * 1e3:.4f} ms, simulate {decode_step(eager) * 1e3:.4f} ms")
        s.check("cuda graphs never slower than serve's eager step (GPU-bound)",
                decode_step(graphed) <= seconds * (1 + 1e-9), case,
                f"eager {seconds * 1e3:.4f} -> graphed {decode_step(graphed) * 1e3:.4f} ms")
    return steps


def launch_free_file(gpu: str, folder: str) -> str:
    """A copy of the GPU's hardware file with no launch cost at all (overhead_s_per_block and graph_kernel_s 0)."""
    from pathlib import Path

    from costmodel.hardware import HARDWARE_DIR

    data = json.loads((HARDWARE_DIR / f"{gpu}.json").read_text())
    data.update(overhead_s_per_block=0.0, graph_kernel_s=0.0)
    path = Path(folder) / f"{gpu}-launch-free.json"
    path.write_text(json.dumps(data))
    return str(path)


def train_stream(s: Sweep, r: dict[tuple, dict]) -> int:
    """An eager training step bound by its GPU keeps its kernels' GPU-side launch cost, as a CUDA graph's replay
    would (simulate times no graphed training step, so the bound is the same step's kernels on a launch-free copy
    of the file, plus at least one kernel's graph_kernel_s): never as fast as kernels launched for free."""
    import tempfile

    from costmodel.hardware import load_hardware

    steps = 0
    with tempfile.TemporaryDirectory() as folder:
        for (model, gpu, li, rc, fp8, batch), d in r.items():
            host, lay = d["step"].get("host"), ([None, *TRAIN_LAYOUTS])[li]
            if host is None or host["bound"] or lay is None or lay.get("pp", 1) > 1 or rc != "none" or fp8:
                continue
            seq = 1024 if model == "gpt2" else 4096
            case = f"train {model} {gpu} {lay} b={batch}"
            free = s.run(case, lambda: costmodel.simulate(model, launch_free_file(gpu, folder), train=True,
                                                          seq_len=seq, batch=batch, layout=lay))
            if free is None or "host" not in free["step"]:
                continue
            steps += 1
            floor = free["step"]["host"]["kernels_seconds"] + load_hardware(gpu).graph_kernel_s
            s.check("eager training step (GPU-bound) keeps its kernels' launch cost", d["step"]["seconds"] >= floor,
                    case, f"eager {d['step']['seconds'] * 1e3:.4f} ms, kernels launched free "
                          f"{free['step']['host']['kernels_seconds'] * 1e3:.4f} ms")
    return steps


def kv_linearity(s: Sweep) -> None:
    """KV cache bytes: linear in batch and (below every window) in context."""
    for model, _ in MODELS:
        kv = {}
        for batch, seq in ((1, 512), (2, 512), (1, 1024)):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    kv[(batch, seq)] = costmodel.estimate(model, seq_len=seq, batch=batch).to_dict()["memory"]["kv_cache"]
            except costmodel.config.ConfigError:
                break
        if len(kv) == 3:
            s.check("kv cache linear in batch", kv[(2, 512)] == 2 * kv[(1, 512)], model, str(kv))
            s.check("kv cache linear in context (below windows)", kv[(1, 1024)] == 2 * kv[(1, 512)] or model in ("nemotron-3-nano",),
                    model, str(kv))


def cli_agrees(s: Sweep) -> None:
    """The CLI's --json and the API give the same numbers for the same run."""
    import contextlib
    import io

    import cli

    cases = [
        (["--model", "llama3-8b", "--hardware", "h100-sxm", "--prompt", "512", "--gen", "16", "--batch", "4"],
         dict(model="llama3-8b", hardware="h100-sxm", prompt=512, gen=16, batch=4)),
        (["--model", "qwen3-30b-a3b", "--hardware", "a100-80gb", "--train", "--seq-len", "2048", "--dp", "8", "--zero", "1"],
         dict(model="qwen3-30b-a3b", hardware="a100-80gb", train=True, seq_len=2048, layout={"dp": 8, "zero": 1})),
        (["--model", "llama3-8b", "--hardware", "h200", "--prompt", "128", "--gen", "8", "--tp", "2", "--cuda-graphs"],
         dict(model="llama3-8b", hardware="h200", prompt=128, gen=8, layout={"tp": 2}, cuda_graphs=True)),
        (["--model", "mistral-7b", "--hardware", "l40s", "--prompt", "8192", "--gen", "8", "--weight-dtype", "int4",
          "--decode-code", "gpt-fast"],
         dict(model="mistral-7b", hardware="l40s", prompt=8192, gen=8, weight_dtype="int4", decode_code="gpt-fast")),
    ]
    for args, kwargs in cases:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            code = cli.main(["simulate", *args, "--json"])
        case = " ".join(args)
        if code != 0:
            s.check("CLI --json = API", False, case, err.getvalue()[:200])
            continue
        from_cli = json.loads(out.getvalue())
        model, hardware = kwargs.pop("model"), kwargs.pop("hardware")
        api = s.run(case, lambda: costmodel.simulate(model, hardware, **kwargs))
        if api is None:
            continue
        a, c = dict(times(api)), dict(times(from_cli))
        differ = [(k, a[k], c.get(k)) for k in a if c.get(k) is None or not math.isclose(a[k], c[k], rel_tol=1e-12)]
        s.check("CLI --json = API", not differ, case, str(differ[:3]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small part of the grid (the slow test's)")
    parser.add_argument("--json", help="write the violations and counts to this file")
    args = parser.parse_args(argv)
    s = Sweep()
    train = training(s, args.quick)
    train_relations(s, train)
    infer = inference(s, args.quick)
    infer_relations(s, infer)
    tp_runs = layout_decode(s, args.quick)
    served, trained = serve_eager(s, infer), train_stream(s, train)
    kv_linearity(s)
    if not args.quick:
        cli_agrees(s)
    for v in s.violations:
        print(f"VIOLATION [{v['invariant']}] {v['case']}: {v['detail']}")
    print(f"{len(train)} training runs ({trained} GPU-bound eager ones again launch-free), {len(infer)} + {tp_runs} "
          f"(tp 2) inference runs, {served} of serve's GPU-bound eager steps, {len(s.errors)} refused; "
          f"{sum(s.checks.values())} checks, {len(s.violations)} violations")
    for name, count in sorted(s.checks.items()):
        print(f"  {name}: {count} checks, {sum(v['invariant'] == name for v in s.violations)} violated")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"checks": s.checks, "violations": s.violations, "refused": s.errors}, handle, indent=1)
    return 1 if s.violations else 0


if __name__ == "__main__":
    sys.exit(main())
