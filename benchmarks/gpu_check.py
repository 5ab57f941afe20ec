"""One command for a CUDA machine: analytic vs measured peak memory and times of three models.

    python benchmarks/gpu_check.py                 # CUDA: GPT-2 small, a Llama-style ~0.56B, BERT-base
    python benchmarks/gpu_check.py --device cpu    # dry run: the same code path, tiny models, CPU

For each model (Hugging Face classes, random weights, **plain fp32**, or pure bf16 with --dtype bf16:
the model is built in that dtype and AdamW keeps its moments in it; no autocast):
- peak memory of one training step (forward with the loss, backward, AdamW, zero_grad):
  validate.measure.cuda_peak_memory (torch.cuda.max_memory_allocated) beside
  costmodel.peak.training_peak_bytes with the CUDA default AdamW (foreach: one parameter-sized
  temporary; `step` on the host). On --device cpu: MemTracker beside the single-tensor model.
  On CUDA, torch's cuBLAS workspaces are made before the first row and measured
  (validate/device_rates.py cublas_workspaces); each row also gives the peak's error net of them
  (`train_peak_tensors_rel`): the tree counts tensors, the hardware's memory_reserve_bytes the
  workspaces.
- peak memory of prefill + decode (decoders) or a no-grad forward (BERT) beside
  costmodel.peak.inference_peak_bytes (the larger inference phase: weights, KV cache, logits, ids).
- times (median of --repeats, torch.cuda.synchronize around each): prefill, one decode step,
  one training step, beside the roofline of costmodel.roofline (Roofline.prefill / .decode,
  training_step) on the h200 preset (--hardware to change; benchmarks/h200-measured.json is an H200's
  measured file), and in the JSON the kernel model's prefill and decode step (simulate --time-model kernels,
  with its eager host term where the hardware states an op's time); the kernel model's training step
  (simulate --train --dp 1 --time-model kernels, costmodel/layout/kernel_step.py) on --hardware as it
  is, and again with this run's measured host time per op (module_s_per_op and dispatch_s_per_op
  below) in the file: an eager step of a counted model (kernel_facts.json "eager_training_ops",
  train_host_ops) takes the longer of its kernels and its ops at that time.

Then the host's time per op on the device (host_per_op): one bare op's (validate/calibrate.py
dispatch_s_per_op, an add of two 1-element tensors) and an op of eager module code's
(module_seconds_per_op: transformers' Llama decoder layers at one token, 32 wide, the forward over
the aten ops it dispatches), each issued on the host without waiting for the GPU, their ratio and
difference: what an eager decode step's host term (kernel_time.host_bound_seconds) pays per op,
to set beside the A100 files' dispatch_s_per_op (FlagGems' torch.add, 7.1 us) and the torchao eager
rows of `python cli.py published` (validate/FINDINGS.md, "Issue 19: the host's time per op in
module code").

Writes a table to stdout and <out>.json / <out>.md (default benchmarks/results_gpu_check[_cpu]).
Without a CUDA GPU (and --device cuda) it prints one line and exits with status 2.

    python benchmarks/gpu_check.py --measure-hardware h200-measured.json   # then the device's file

--measure-hardware FILE then measures the device into a hardware file, as `python cli.py hardware
--measure --out FILE --device cuda --like <--hardware>` does (validate/hardware_file.py: the GEMM
grid, sustained GEMM, copy, Dot, weight-only GEMVs and the int4 ones by shape and group, the CUDA
graph's kernel gap; about a minute and a half more on a GPU); on --device cpu the quick grid, without --like.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

NO_GPU_EXIT = 2


def models(device: str):
    """(config, batch, seq_len, gen_tokens) of the three models; tiny ones for the CPU dry run."""
    from costmodel.presets import load_preset

    gpt2, llama, bert = load_preset("gpt2"), load_preset("llama2-7b"), load_preset("bert-base-uncased")
    if device == "cpu":
        small = dict(vocab_size=1000, d_model=64, n_heads=4, max_positions=128)
        return [
            (gpt2.replace(name="gpt2-tiny", d_ff=256, n_decoder_layers=2, **small), 2, 32, 4),
            (llama.replace(name="llama-tiny", n_kv_heads=2, d_ff=170, n_decoder_layers=2, **small),
             2, 32, 4),
            (bert.replace(name="bert-tiny", d_ff=256, n_encoder_layers=2, **small), 2, 32, 0),
        ]
    llama_05b = llama.replace(name="llama-0.56b", d_model=1280, n_heads=20, n_kv_heads=20, d_ff=3456,
                              n_decoder_layers=24, max_positions=4096)
    # per model a short workload (the peak falls in the AdamW step) and a long one (the peak is at
    # the start of backward, among the activations), by costmodel.peak's phase
    # GPT-2's 1,024 positions hold the prompt and the generated tokens: 992 + 32
    rows = [(gpt2, 1, 128, 32), (gpt2, 8, 992, 32), (llama_05b, 1, 256, 32),
            (llama_05b, 4, 1024, 32), (bert, 1, 128, 0), (bert, 16, 512, 0)]
    for cfg, _, seq_len, gen_tokens in rows:
        if seq_len + gen_tokens > cfg.max_positions:
            raise ValueError(f"{cfg.name}: {seq_len} + {gen_tokens} tokens exceed its {cfg.max_positions} positions")
    return rows


def _sync(device: str) -> None:
    import torch

    if device == "cuda":
        torch.cuda.synchronize()


def median_seconds(fn, device: str, repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        _sync(device)
        start = time.perf_counter()
        fn()
        _sync(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure_memory(model, inputs, prompt, gen_tokens, loss_fn, device, decoder) -> dict:
    """Training-step peak and inference peak in bytes (CUDA: max_memory_allocated; CPU:
    MemTracker for training, no inference peak)."""
    import torch

    from validate import measure

    if device == "cpu":
        return {"train_step_peak": measure.peak_memory_memtracker(model, inputs, loss_fn)["Total"],
                "inference_peak": None, "weights": None}
    if decoder:
        out = measure.cuda_peak_memory(model, inputs, gen_tokens, loss_fn)
    else:  # BertModel has no cache: train step as in cuda_peak_memory, then a no-grad forward
        optimizer = torch.optim.AdamW(model.parameters())
        torch.cuda.synchronize()
        weights = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        measure.one_training_step(model, inputs, optimizer, loss_fn)
        torch.cuda.synchronize()
        out = {"train_step_peak": torch.cuda.max_memory_allocated(), "weights": weights}
        del optimizer
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        with torch.no_grad():
            model.eval()(**prompt)
        model.train()
        torch.cuda.synchronize()
        out["inference_peak"] = torch.cuda.max_memory_allocated()
    torch.cuda.empty_cache()
    return out


def run_workload(batch: int, seq_len: int, dtype: str, gen_tokens: int, attention: str):
    """The workload a row runs: Hugging Face code, torch.optim.AdamW on a model built in the dtype
    (the "pure" precision policy)."""
    from costmodel.config import Workload

    return Workload(seq_len=seq_len, batch=batch, dtype=dtype, gen_tokens=gen_tokens,
                    impl="hf", attention=attention, precision="pure")


def recorded_run(row: dict):
    """A recorded row's (config, workload), as the check ran them (models("cuda"), run_workload)."""
    cfg = next(cfg for cfg, b, n, _ in models("cuda") if (cfg.name, b, n) == (row["model"], row["batch"], row["seq_len"]))
    return cfg, run_workload(row["batch"], row["seq_len"], row["dtype"], row["gen_tokens"], row["attention"])


def kernel_training(cfg, workload, hardware) -> dict:
    """The kernel model's training step on one GPU (a layout of --dp 1: no collectives) and its
    host term where it applies (layout/kernel_step.KernelStepTime.step)."""
    from costmodel.layout.spec import Layout
    from costmodel.layout.timing import simulate_training as layout_training

    step = layout_training(cfg, workload, Layout(dp=1), hardware, time_model="kernels")["step"]
    return {"seconds": step["seconds"], "host": step.get("host")}


def check_model(cfg, batch, seq_len, gen_tokens, args, host_per_op: dict) -> dict:
    import torch

    from costmodel.peak import inference_peak_bytes, training_peak_bytes
    from costmodel.hardware import load_hardware
    from costmodel.roofline import Roofline, simulate_inference
    from costmodel.roofline_training import training_step
    from validate import measure
    from validate.compare import TORCH_DTYPES, training_loss
    from validate.hf_models import build_hf_model, make_inputs

    device = args.device
    decoder = cfg.head == "lm"
    workload = run_workload(batch, seq_len, args.dtype, gen_tokens, args.attention)
    torch.manual_seed(0)
    model = build_hf_model(cfg, args.attention, TORCH_DTYPES[args.dtype]).to(device)
    inputs = {k: v.to(device) for k, v in make_inputs(cfg, batch, seq_len, labels=decoder).items()}
    prompt = {k: v for k, v in inputs.items() if k != "labels"}
    loss_fn = training_loss(cfg, "hf")
    optimizer_impl = "foreach" if device == "cuda" else "single"

    memory = measure_memory(model, inputs, prompt, gen_tokens, loss_fn, device, decoder)
    analytic = training_peak_bytes(cfg, workload, optimizer_impl, device)
    inference = inference_peak_bytes(cfg, workload)

    optimizer = torch.optim.AdamW(model.parameters())
    train_s = median_seconds(lambda: measure.one_training_step(model, inputs, optimizer, loss_fn),
                             device, args.repeats)
    del optimizer
    model.eval()
    with torch.no_grad():
        if decoder:
            prefill_s = median_seconds(lambda: model(**prompt, use_cache=True), device, args.repeats)
            cache = measure.output_cache(model(**prompt, use_cache=True))
            token = torch.ones(batch, 1, dtype=torch.long, device=device)

            def step():  # one token against the prompt's cache, which is cropped back after it
                model(input_ids=token, cache=cache, use_cache=True)
                cache.crop(-1)

            decode_s = median_seconds(step, device, args.repeats)
        else:
            prefill_s = median_seconds(lambda: model(**prompt), device, args.repeats)
            decode_s = None
    model.train()

    hardware = load_hardware(args.hardware)
    roofline = Roofline(cfg, hardware, dtype=args.dtype)
    predicted_prefill = float(roofline.prefill(batch, seq_len)[1])
    predicted_decode = float(roofline.decode(batch, seq_len + 1)[1]) if decoder else None
    predicted_train = training_step(cfg, workload, hardware)["timing"].seconds
    # the kernel model with its eager host term (where the family's ops are counted and the
    # hardware states an op's time: a measured file's module_s_per_op), as `simulate` runs it
    kernels = simulate_inference(cfg, hardware, prompt=seq_len, gen=2, batch=batch, dtype=args.dtype,
                                 attention=args.attention, time_model="kernels") if decoder else None
    # the kernel model's training step: on the file as it is, and with this run's host time per op
    import dataclasses

    from costmodel.eager_ops import training_step_ops

    train_kernels = kernel_training(cfg, workload, hardware)
    run_op = dataclasses.replace(hardware, module_s_per_op=host_per_op["module_s_per_op"],
                                 dispatch_s_per_op=host_per_op["dispatch_s_per_op"])
    train_run_op = kernel_training(cfg, workload, run_op)

    def rel(a, m):
        return None if a is None or m is None else (a - m) / m

    return {
        "model": cfg.name, "batch": batch, "seq_len": seq_len, "gen_tokens": gen_tokens,
        "dtype": args.dtype, "device": device, "optimizer": f"AdamW ({optimizer_impl})",
        "params": sum(p.numel() for p in model.parameters()),
        "train_peak_measured": memory["train_step_peak"], "train_peak_analytic": analytic["total"],
        "train_peak_rel": rel(analytic["total"], memory["train_step_peak"]),
        # the peak net of torch's cuBLAS workspaces (created before the first row, main(); they are
        # allocated through the caching allocator, so max_memory_allocated counts them, but they are
        # not tensors: the hardware's memory_reserve_bytes holds them), beside the tree's tensors
        "train_peak_tensors_rel": rel(analytic["total"], memory["train_step_peak"] - args.workspace_bytes),
        "train_peak_phase": analytic["phase"], "attention": args.attention,
        # memory_allocated before the step (weights, inputs and what earlier rows' matmuls left:
        # the cuBLAS workspaces, benchmarks/cuda_workspace.py) beside the analytic weights + inputs
        "allocated_before_step": memory["weights"],
        "analytic_weights_inputs_buffers": analytic["weights"] + analytic["inputs"] + analytic["buffers"],
        "inference_peak_measured": memory["inference_peak"],
        "inference_peak_analytic_lower_bound": inference["total"],
        "prefill_s": prefill_s, "prefill_roofline_s": predicted_prefill,
        "decode_step_s": decode_s, "decode_roofline_s": predicted_decode,
        "train_step_s": train_s, "train_roofline_s": predicted_train,
        "train_kernel_model_s": train_kernels["seconds"], "train_kernel_model_host": train_kernels["host"],
        "train_host_ops": training_step_ops(cfg, workload),
        "train_kernel_model_run_op_s": train_run_op["seconds"], "train_kernel_model_run_op_host": train_run_op["host"],
        "prefill_kernel_model_s": kernels["prefill"]["seconds"] if kernels else None,
        "decode_kernel_model_s": kernels["decode"]["first_token"]["seconds"] if kernels else None,
        "decode_host_ops": kernels["decode"]["host"]["ops_per_step"] if kernels else None,
        "hardware": args.hardware, "analytic_terms": {k: v for k, v in analytic.items()},
    }


COLUMNS = [
    ("model", "model"), ("b x n", None), ("phase", "train_peak_phase"), ("train peak measured", "train_peak_measured"),
    ("train peak analytic", "train_peak_analytic"), ("rel", "train_peak_rel"),
    ("rel, net of cuBLAS workspaces", "train_peak_tensors_rel"),
    ("infer peak measured", "inference_peak_measured"),
    ("infer analytic (lower bd)", "inference_peak_analytic_lower_bound"),
    ("prefill s", "prefill_s"), ("roofline", "prefill_roofline_s"),
    ("decode s", "decode_step_s"), ("roofline", "decode_roofline_s"),
    ("train s", "train_step_s"), ("roofline", "train_roofline_s"), ("kernel model", "train_kernel_model_s"),
    ("host ops", "train_host_ops"), ("kernels, run's op time", "train_kernel_model_run_op_s"),
]


def host_per_op(device: str, repeats: int | None = None) -> dict:
    """The host's time per op on `device`: a bare op's dispatch and an op of eager module code
    (validate/calibrate.py), their ratio and difference, and the module's ops per forward."""
    from validate.calibrate import dispatch_s_per_op, module_seconds_per_op

    bare = dispatch_s_per_op(2001 if repeats is None else repeats, device)
    module = module_seconds_per_op(301 if repeats is None else repeats, device=device)
    per_op = module["seconds_per_op"]
    return {"dispatch_s_per_op": bare, "module_s_per_op": per_op, "module_ops": module["ops"],
            "module_over_dispatch": per_op / bare, "module_minus_dispatch_s": per_op - bare}


def _cell(row: dict, key: str | None) -> str:
    if key is None:
        return f"{row['batch']}x{row['seq_len']}"
    value = row[key]
    if value is None:
        return "-"
    if key.endswith("_rel"):
        return f"{value:+.2%}"
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def markdown(rows: list[dict], note: str) -> str:
    lines = [note, "", "| " + " | ".join(h for h, _ in COLUMNS) + " |",
             "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(_cell(r, k) for _, k in COLUMNS) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--dtype", choices=("fp32", "bf16"), default="fp32")
    parser.add_argument("--attention", choices=("eager", "sdpa"), default="eager",
                        help="the attention the models run and the analytic peak assumes")
    parser.add_argument("--hardware", default="h200")
    parser.add_argument("--repeats", type=int, default=None, help="timing repeats (cuda 5, cpu 2)")
    parser.add_argument("--out", default=None, help="output path without suffix")
    parser.add_argument("--measure-hardware", default=None, metavar="FILE",
                        help="then measure the device into this hardware file (validate/hardware_file.py), "
                        "like --hardware's preset on cuda")
    args = parser.parse_args(argv)

    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        print("gpu_check: no CUDA GPU available (use --device cpu for a dry run)", file=sys.stderr)
        return NO_GPU_EXIT
    args.repeats = args.repeats or (5 if args.device == "cuda" else 2)
    suffix = "" if args.device == "cuda" else "_cpu"
    out = Path(args.out) if args.out else ROOT / "benchmarks" / f"results_gpu_check{suffix}"

    # torch's cuBLAS workspaces, made now (cleared and measured: validate/device_rates.py) so that
    # every row's peak holds the same ones, not the first row's alone
    workspaces = None
    if args.device == "cuda":
        from validate.device_rates import cublas_workspaces

        workspaces = cublas_workspaces()
    args.workspace_bytes = workspaces["total_beside_tensors"] if workspaces else 0
    # the host's time per op first: the kernel model's training step is timed with it too
    host = host_per_op(args.device, None if args.device == "cuda" else 101)
    rows = []
    for cfg, batch, seq_len, gen_tokens in models(args.device):
        print(f"{cfg.name}: b={batch} n={seq_len} T={gen_tokens} ...", file=sys.stderr, flush=True)
        rows.append(check_model(cfg, batch, seq_len, gen_tokens, args, host))
    device_name = torch.cuda.get_device_name() if args.device == "cuda" else "cpu"
    note = (f"gpu_check on {device_name}, {args.dtype} (no autocast), {args.attention} attention, "
            f"roofline and kernel model: {args.hardware}; kernel model with this run's host time per op too; "
            f"peaks in bytes, times in seconds (median of {args.repeats})")
    table = markdown(rows, note) + (
        f"\nhost per op on the {args.device}: a bare add {host['dispatch_s_per_op'] * 1e6:.2f} us, eager module "
        f"code {host['module_s_per_op'] * 1e6:.2f} us ({host['module_ops']} ops a forward): "
        f"{host['module_over_dispatch']:.2f}x, +{host['module_minus_dispatch_s'] * 1e6:.2f} us an op\n")
    print(table)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".md").write_text(table)
    out.with_suffix(".json").write_text(json.dumps({"note": note, "rows": rows, "host_per_op": host,
                                                       "cublas_workspaces": workspaces}, indent=1))
    print(f"wrote {out.with_suffix('.json')} and {out.with_suffix('.md')}", file=sys.stderr)
    if args.measure_hardware:
        measure_hardware(Path(args.measure_hardware), args.device, args.hardware)
    return 0


def measure_hardware(path: Path, device: str, like: str) -> None:
    """The device measured into a hardware file (on cuda like the preset `like`, the full grid;
    on cpu the quick grid without a preset), its kernel-model fields printed."""
    from costmodel.hardware import load_hardware
    from validate.hardware_file import measure_file, write_hardware_file

    print(f"measuring the {device} into {path} ...", file=sys.stderr, flush=True)
    cuda = device == "cuda"
    data = measure_file(path.stem, device, ("bf16",) if cuda else ("fp32",),
                        load_hardware(like) if cuda else None, "full" if cuda else "quick")
    write_hardware_file(path, data)
    shown = ("matmul_efficiency", "sustained_matmul_efficiency", "gemv_bandwidth_bytes_per_s", "graph_kernel_s",
             "memory_reserve_bytes", "dispatch_s_per_op", "module_s_per_op")
    print(json.dumps({k: data[k] for k in shown if k in data}))
    print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
