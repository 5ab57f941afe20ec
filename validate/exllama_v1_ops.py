"""Counts the host calls one decode step of ExLlama v1 (turboderp/exllama) issues (kernel_facts.json
eager_step_ops "exllama-v1"), by running its model.py and cuda_ext.py at the stated commit on the CPU under a
TorchDispatchMode, with the CUDA extension (exllama_ext) replaced by a stub that records each call as one host call.

    PYTHONPATH=. python validate/exllama_v1_ops.py [--repo GITDIR] [--commit SHA]

GITDIR: a git directory of turboderp/exllama (the library's `fetch` mirror by default). model.py and cuda_ext.py at the
commit are written to a temporary folder and imported (cuda_ext's torch.utils.cpp_extension.load returns the stub).
A decode step is the timed loop of test_benchmark_inference.py (the rows' rate): `logits = logits[0, -1, :]`,
`torch.argmax`, two unsqueeze, then `model.forward(next_id, cache)` at one row, so the layers take the fused paths
(ExLlamaAttention.fused: q4_attn, torch's attention at one query, q4_attn_2; the q4_mlp kernel: fused_mlp_thd 2).
The model is built from synthetic GPTQ tensors (no file read); ExLlamaDeviceMap's default (the embedding on the CPU,
the layers, norm and head on cuda:0) is kept for the moves: model._move_tensor is replaced by a tracker that counts one
Tensor.to (aten._to_copy) where the default map would move the tensor across devices, and moves nothing here.
per layer: a model of two layers less one; per step: one layer's model less one layer.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import types
from collections import Counter
from pathlib import Path

from validate.host_calls import Calls, layer_split, mode

DEFAULT_REPO = "/work/.mirror/turboderp+exllama/repo"
COMMIT = "b65d774"  # 2023-06-11 'Concurrency (experimental)': the commit that wrote the README's 173 / 140 t/s row


def _extension(record: Calls) -> types.ModuleType:
    """exllama_ext: every function one host call (its kernels write into the tensors they are handed); make_q4 a handle."""
    stub = types.ModuleType("exllama_ext")

    def function(name):
        if name.startswith("__"):
            raise AttributeError(name)

        def call(*args, **kwargs):
            record.note(f"exllama_ext.{name}")
            return 0 if name == "make_q4" else None
        return call

    stub.__getattr__ = function  # module-level __getattr__: `from exllama_ext import q4_matmul` and attribute calls
    return stub


def _modules(repo: str, commit: str, folder: Path, record: Calls):
    """model.py and cuda_ext.py at the commit, imported with the stubbed extension."""
    import torch.utils.cpp_extension as cpp

    for name in ("model.py", "cuda_ext.py"):
        text = subprocess.run(["git", "--git-dir", repo, "show", f"{commit}:{name}"], check=True,
                              capture_output=True).stdout
        (folder / name).write_bytes(text)
    for name in ("model", "cuda_ext", "exllama_ext"):
        sys.modules.pop(name, None)
    stub = _extension(record)
    sys.modules["exllama_ext"] = stub
    sys.path.insert(0, str(folder))
    load, cpp.load = cpp.load, lambda *args, **kwargs: stub
    try:
        import model
    finally:
        cpp.load = load
        sys.path.remove(str(folder))
    return model


def _tensors(layers: int, hidden: int, inner: int, group: int = 128) -> dict:
    """Synthetic GPTQ tensors of a Llama of `layers` layers (qweight, qzeros, scales of each projection; norms fp16)."""
    import torch

    tensors = {}
    shapes = {"self_attn.q_proj": (hidden, hidden), "self_attn.k_proj": (hidden, hidden),
              "self_attn.v_proj": (hidden, hidden), "self_attn.o_proj": (hidden, hidden),
              "mlp.gate_proj": (hidden, inner), "mlp.up_proj": (hidden, inner), "mlp.down_proj": (inner, hidden)}
    for i in range(layers):
        key = f"model.layers.{i}"
        for name, (n_in, n_out) in shapes.items():
            tensors[f"{key}.{name}.qweight"] = torch.zeros(n_in // 8, n_out, dtype=torch.int32)
            tensors[f"{key}.{name}.qzeros"] = torch.zeros(n_in // group, n_out // 8, dtype=torch.int32)
            tensors[f"{key}.{name}.scales"] = torch.ones(n_in // group, n_out, dtype=torch.float16)
        for norm in ("input_layernorm", "post_attention_layernorm"):
            tensors[f"{key}.{norm}.weight"] = torch.ones(hidden, dtype=torch.float16)
    tensors["model.norm.weight"] = torch.ones(hidden, dtype=torch.float16)
    return tensors


def _config(model, folder: Path, layers: int):
    """The small ExLlamaConfig both builds read (written to `folder`, max_seq_len 16), with its hidden size, heads,
    inner size and vocabulary."""
    hidden, heads, inner, vocab = 256, 2, 512, 64
    (folder / "config.json").write_text(json.dumps({
        "bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 0, "hidden_size": hidden, "initializer_range": 0.02,
        "intermediate_size": inner, "num_attention_heads": heads, "num_hidden_layers": layers, "rms_norm_eps": 1e-6,
        "vocab_size": vocab}))
    config = model.ExLlamaConfig(str(folder / "config.json"))
    config.max_seq_len = 16
    return config, hidden, heads, inner, vocab


def _model(model, folder: Path, layers: int, record: Calls):
    """An ExLlama of `layers` layers without its __init__ (no file read), its cache at 4 tokens, and the move tracker."""
    import torch

    config, hidden, heads, inner, vocab = _config(model, folder, layers)
    tensors = _tensors(layers, hidden, inner)
    head_dim = hidden // heads
    sin = cos = torch.zeros(1, 1, config.max_seq_len, head_dim, dtype=torch.float16)
    exllama = object.__new__(model.ExLlama)
    exllama.config = config
    exllama.embed_tokens = torch.nn.Embedding(vocab, hidden).half()
    exllama.layers = [model.ExLlamaDecoderLayer(config, tensors, f"model.layers.{i}", i, sin, cos) for i in range(layers)]
    exllama.norm = model.ExLlamaRMSNorm(config, tensors, "model.norm.weight")
    exllama.lm_head = torch.nn.Linear(hidden, vocab, bias=False).half()
    default = config.device_map.layers  # ExLlamaDeviceMap's default: ["cuda:0"] * layers
    config.device_map.layers = ["cpu"] * layers
    cache = model.ExLlamaCache(exllama)  # its zeros made here, on the CPU
    config.device_map.layers = default
    cache.current_seq_len = 4
    _track_moves(model, record)
    return exllama, cache


def _track_moves(model, record: Calls) -> None:
    """model._move_tensor as a tracker of the default map's devices: the token starts on cuda:0 (the benchmark's
    argmax of logits left on the GPU, 30d8051) or where the last step's logits were moved (b65d774: the CPU);
    output_device (a torch.device: the input's own) is the input ids' device before their move."""
    where = {"now": "cuda:0", "input": "cuda:0"}

    def move(tensor, new_device, name, config):
        target = where["input"] if not isinstance(new_device, str) else new_device
        if name == "input_ids":
            where["input"] = where["now"]
        if target != where["now"]:
            record.note("_to_copy")  # Tensor.to(new_device): one aten._to_copy on the GPU
            where["now"] = target
        return tensor

    model._move_tensor = move


def count(repo: str = DEFAULT_REPO, commit: str = COMMIT) -> dict:
    """{"per_layer", "per_step", "by_op", "step_by_op"}: one step of the benchmark's timed loop (fp16, batch 1, 4 tokens
    cached), the calls a layer and the step's own (the loop's token ops, the embedding, the moves, norm, head)."""
    import torch

    record = Calls()

    def step_calls(layers: int) -> Counter:
        with tempfile.TemporaryDirectory() as name:
            model = _modules(repo, commit, Path(name), record)
            exllama, cache = _model(model, Path(name), layers, record)
            logits = torch.zeros(1, 1, 64, dtype=torch.float32)
            for timed in (False, True):  # a first step untimed (the tracker's devices settle), then the counted one
                record.calls.clear()
                record.on = timed
                with torch.no_grad(), mode(record):
                    logits = logits[0, -1, :]
                    token = torch.argmax(logits)
                    next_id = token.unsqueeze(0).unsqueeze(0)
                    logits = exllama.forward(next_id, cache)
                record.on = False
            return Counter(record.calls)

    return layer_split(step_calls(1), step_calls(2))


class _OnGpu(str):
    """The CPU as a device name that is not equal to "cpu": where the default map puts the norm, the head and the layers
    on cuda:0, forward's `if self.config.device_map.lm_head == "cpu"` (an fp32 head) must stay false, and `.to(device)`
    must move nothing on this machine (a "cpu:0" string makes torch copy)."""

    def __eq__(self, other):
        return False if other == "cpu" else str.__eq__(self, other)

    __hash__ = str.__hash__


MODULE_COMMIT = "2562100"  # 2023-05-23 'Fix for models without groupsize': the README the exllama-2562100 rows read


def _module_model(model, folder: Path, layers: int, act_order: bool):
    """ExLlama at MODULE_COMMIT (an nn.Module, Ex4bitLinear's q4v2 kernels) of `layers` layers without its __init__
    (no file read), every device of its map the CPU here (the moves a GPU run makes are added by count_module_era), its
    cache at 4 tokens; act_order: a g_idx in every linear, as an act-order GPTQ checkpoint (Ex4bitLinear keeps x_map,
    so each product first remaps the activation's columns)."""
    import torch

    config, hidden, heads, inner, vocab = _config(model, folder, layers)
    config.device_map.norm = config.device_map.lm_head = _OnGpu("cpu")
    config.device_map.layers = [_OnGpu("cpu")] * layers
    tensors = _tensors(layers, hidden, inner)
    if act_order:
        for key in [key for key in tensors if key.endswith(".qweight")]:
            n_in = tensors[key].shape[0] * 8
            tensors[key[:-len("qweight")] + "g_idx"] = torch.arange(n_in, dtype=torch.int32) // 128
    head_dim = hidden // heads
    sin = cos = torch.zeros(1, 1, config.max_seq_len, head_dim, dtype=torch.float16)
    exllama = object.__new__(model.ExLlama)
    torch.nn.Module.__init__(exllama)
    exllama.config = config
    exllama.embed_tokens = torch.nn.Embedding(vocab, hidden).half()
    exllama.layers = torch.nn.ModuleList(
        [model.ExLlamaDecoderLayer(config, tensors, f"model.layers.{i}", i, sin, cos) for i in range(layers)])
    exllama.norm = model.ExLlamaRMSNorm(config, tensors, "model.norm.weight")
    exllama.lm_head = torch.nn.Linear(hidden, vocab, bias=False).half()
    cache = model.ExLlamaCache(exllama)
    cache.current_seq_len = 4
    return exllama, cache


#: The device moves one step at MODULE_COMMIT makes on a GPU under ExLlamaDeviceMap's default (the embedding on the
#: CPU, the layers, norm and head on cuda:0), which a CPU run, its map all CPU, never shows: the embedding's output
#: to cuda:0 before the first layer (`hidden_states.to(device)`), the logits back to the CPU
#: (`logits.float().to(self.config.device_map.embed_tokens)`). The token is on the CPU already (the last step's
#: logits were moved there), so `input_ids.to(embed_tokens)` moves nothing.
MODULE_MOVES = 2


def cpu_upcasts() -> int:
    """The _to_copy calls torch's math attention adds on the CPU only, for fp16 inputs (ATen's
    _scaled_dot_product_attention_math converts half and bfloat16 to float where the device is the CPU, and the
    output back; on a GPU it runs in fp16): F.scaled_dot_product_attention with a mask at one query, counted at fp16
    less at fp32 (5 on torch 2.13: q, k, v, the mask and the output)."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    def copies(dtype) -> int:
        record = Calls()
        record.on = True
        query, keys = torch.zeros(1, 2, 1, 8, dtype=dtype), torch.zeros(1, 2, 5, 8, dtype=dtype)
        with torch.no_grad(), sdpa_kernel(SDPBackend.MATH), mode(record):
            F.scaled_dot_product_attention(query, keys, keys, attn_mask=torch.zeros(1, 1, 1, 5, dtype=dtype))
        return record.calls["_to_copy"]

    return copies(torch.float16) - copies(torch.float32)


def count_module_era(repo: str = DEFAULT_REPO, commit: str = MODULE_COMMIT, act_order: bool = False) -> dict:
    """count()'s split for ExLlama at MODULE_COMMIT (the exllama-2562100 rows' code): one step of its
    test_benchmark_inference.py timed loop (`logits = logits[0, -1, :]`, `torch.argmax`, two unsqueeze,
    `wrapper.next_logits(next_id)`), under no_grad as the script runs it, with the script's defaults: attention
    PYTORCH_SCALED_DP (F.scaled_dot_product_attention with the buffer's zero mask; run here on torch's math path,
    which a mask sent it to on torch 2.0's CUDA, flash and memory-efficient taking none there), matmul SWITCHED (one row
    is under optimal_switch_thd 6: q4v2_matmul, the quantized product), MLP NORMAL (gate, SiLU, up, down as three
    Ex4bitLinear); the step's own calls include MODULE_MOVES, and each layer's attention counts without the CPU's
    upcasts (cpu_upcasts)."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    record = Calls()

    def step_calls(layers: int) -> Counter:
        with tempfile.TemporaryDirectory() as name:
            model = _modules(repo, commit, Path(name), record)
            exllama, cache = _module_model(model, Path(name), layers, act_order)
            logits = torch.zeros(1, 1, 64, dtype=torch.float32)
            for timed in (False, True):  # a first step untimed, then the counted one
                record.calls.clear()
                record.on = timed
                with torch.no_grad(), sdpa_kernel(SDPBackend.MATH), mode(record):
                    logits = logits[0, -1, :]
                    token = torch.argmax(logits)
                    next_id = token.unsqueeze(0).unsqueeze(0)
                    logits = exllama.forward(next_id, cache)
                for _ in range(MODULE_MOVES if timed else 0):
                    record.note("_to_copy")
                record.on = False
            return Counter(record.calls) - Counter({"_to_copy": upcasts * layers})

    upcasts = cpu_upcasts()
    return layer_split(step_calls(1), step_calls(2))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", default=DEFAULT_REPO)
    parser.add_argument("--commit", default=COMMIT)
    args = parser.parse_args(argv)
    if not Path(args.repo).exists():
        print(f"error: no ExLlama git directory at {args.repo} (the library's fetch of turboderp/exllama)",
              file=sys.stderr)
        return 2
    print(count(args.repo, args.commit))
    return 0


if __name__ == "__main__":
    sys.exit(main())
