"""Counts the host calls one decode step of TinyChat's W4A16 Llama (mit-han-lab/llm-awq tinychat/) issues
(kernel_facts.json eager_step_ops "tinychat-llama"), by running the code at the stated commit on the CPU under a
TorchDispatchMode, with its CUDA extension (awq_inference_engine) replaced by stubs that record each call as one host
call and return a tensor of the kernel's output shape (made outside the count).

    PYTHONPATH=. python validate/tinychat_ops.py [--repo GITDIR] [--commit SHA]

GITDIR: a git directory of mit-han-lab/llm-awq (the library's `fetch` mirror by default). tinychat/ and
awq/quantize/qmodule.py at the commit are written to a temporary folder and imported without their packages'
__init__ files (which import every model, the vision towers and the serving code): only tinychat/models/llama.py,
tinychat/modules/fused_attn.py and awq/quantize/qmodule.py are run. The model is built as demo.py builds a W4A16 Llama:
LlamaForCausalLM(config).half(), every linear but lm_head a WQLinear (load_quant.load_awq_llama_fast's
make_quant_linear), then make_quant_attn (q, k and v one WQLinear; QuantLlamaAttentionFused); make_quant_norm replaces
transformers' LlamaRMSNorm only, which tinychat's Llama does not hold. The timed part of a decode step is
stream_gen.StreamGenerator's between its two torch.cuda.synchronize(): `torch.as_tensor([[token]], device=device)` and
`model(inputs, start_pos=start_pos)` (seqlen 1: QuantLlamaAttentionFused's single_query_attention branch; WQLinear's
gemv_forward_cuda_new below 8 rows). The rotary-embedding modules the constructors build (dummies, unused in forward)
and the caches' .cuda() are made on the CPU. per layer: a model of two layers less one; per step: one layer's model less
one layer.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import types
from collections import Counter
from pathlib import Path

from validate.host_calls import Calls, layer_split, mode

DEFAULT_REPO = "/work/.mirror/mit-han-lab+llm-awq/repo"
COMMIT = "b76fab6"  # '[Major] Support Llama3 and update on-the-fly rope scaling (#177)', the README the rows read


def _engine(record: Calls) -> types.ModuleType:
    """awq_inference_engine's kernels used at a decode step, one host call each, outputs made outside the count."""
    import torch

    def made(shape, like):
        on, record.on = record.on, False
        try:
            return torch.zeros(shape, dtype=like.dtype)
        finally:
            record.on = on

    def note(name):
        record.note(f"awq_inference_engine.{name}")

    def layernorm_forward_cuda(x, weight, out, eps):
        note("layernorm_forward_cuda")

    def gemv_forward_cuda_new(x, qweight, scales, zeros, rows, out_features, in_features, group_size):
        note("gemv_forward_cuda_new")
        return made((*x.shape[:-1], out_features), x)

    def single_query_attention(q, k, v, k_cache, v_cache, lengths, alibi, t, rotary_dim, base, scaling, neox):
        note("single_query_attention")
        return made((q.shape[0], q.shape[1] * q.shape[2]), q)

    engine = types.ModuleType("awq_inference_engine")
    engine.layernorm_forward_cuda = layernorm_forward_cuda
    engine.gemv_forward_cuda_new = gemv_forward_cuda_new
    engine.single_query_attention = single_query_attention
    return engine


def _package(name: str, folder: Path) -> None:
    package = types.ModuleType(name)
    package.__path__ = [str(folder / name.replace(".", "/"))]
    sys.modules[name] = package
    if "." in name:  # bound on its parent, as an import binds it
        parent, child = name.rsplit(".", 1)
        setattr(sys.modules[parent], child, package)


def _import(repo: str, commit: str, folder: Path, record: Calls):
    """tinychat's llama.py, fused_attn.py and load_quant's make_quant_linear's WQLinear at the commit."""
    import importlib

    import torch
    from transformers.models.llama import modeling_llama

    files = subprocess.run(["git", "--git-dir", repo, "ls-tree", "-r", "--name-only", commit, "tinychat", "awq"],
                           check=True, capture_output=True, text=True).stdout.split()
    for name in files:
        if name.endswith(".py"):
            path = folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(subprocess.run(["git", "--git-dir", repo, "show", f"{commit}:{name}"], check=True,
                                            capture_output=True).stdout)
    for name in [name for name in sys.modules if name.split(".")[0] in ("tinychat", "awq", "awq_inference_engine")]:
        del sys.modules[name]
    sys.modules["awq_inference_engine"] = _engine(record)
    for name in ("tinychat", "tinychat.models", "tinychat.modules", "tinychat.utils", "awq", "awq.quantize"):
        _package(name, folder)
    sys.path.insert(0, str(folder))
    try:
        constants = importlib.import_module("tinychat.utils.constants")
        constants.init()  # tinychat/utils/__init__.py's own call
        llama = importlib.import_module("tinychat.models.llama")
        fused_attn = importlib.import_module("tinychat.modules.fused_attn")
        qmodule = importlib.import_module("awq.quantize.qmodule")
    finally:
        sys.path.remove(str(folder))
    dummy = type("Dummy", (torch.nn.Module,), {"__init__": lambda self, *a, **k: torch.nn.Module.__init__(self)})
    llama.LlamaRotaryEmbedding = dummy  # "# dummy" in both constructors: never called in forward
    fused_attn.QuantLlamaRotaryEmbedding = dummy
    del modeling_llama
    return llama, fused_attn, qmodule


def _model(llama, fused_attn, qmodule, layers: int, kv_heads: int):
    """demo.py's W4A16 Llama of `layers` layers (2 query heads, `kv_heads` key/value heads), on the CPU."""
    import torch

    params = types.SimpleNamespace(hidden_size=256, num_attention_heads=2, num_key_value_heads=kv_heads, intermediate_size=512,
                                   vocab_size=64, num_hidden_layers=layers, rms_norm_eps=1e-6,
                                   max_position_embeddings=64, rope_theta=10000.0, rope_scaling=None)
    cuda, torch.Tensor.cuda = torch.Tensor.cuda, lambda self, *args, **kwargs: self
    try:
        model = llama.LlamaForCausalLM(params).half()
    finally:
        torch.Tensor.cuda = cuda
    for module in list(model.modules()):  # make_quant_linear: every nn.Linear but lm_head
        for name, child in list(module.named_children()):
            if isinstance(child, torch.nn.Linear) and child is not model.lm_head:
                setattr(module, name, qmodule.WQLinear(4, 128, child.in_features, child.out_features, False, "cpu"))
    fused_attn.make_quant_attn(model, "cpu")
    return model


def decode_step_calls(record: Calls, model) -> Counter:
    """The calls of one timed decode step of a TinyChat model (one token at start_pos 4, from its as_tensor on):
    what count() and count_model() split into a layer's and the step's own."""
    import torch

    record.calls.clear()
    record.on = True
    with mode(record):
        inputs = torch.as_tensor([[5]], device="cpu")
        model(inputs, start_pos=4)
    record.on = False
    return Counter(record.calls)


def count(repo: str = DEFAULT_REPO, commit: str = COMMIT, kv_heads: int = 2) -> dict:
    """{"per_layer", "per_step", "by_op", "step_by_op"}: the timed part of one decode step (fp16, batch 1, 4 tokens in
    the cache; kv_heads 1: grouped heads, Llama 3's): the calls a layer and the step's own (as_tensor, the embedding, the rotary table's slice, the final
    norm, lm_head, the logits' float())."""
    record = Calls()

    def step_calls(layers: int) -> Counter:
        with tempfile.TemporaryDirectory() as name:
            llama, fused_attn, qmodule = _import(repo, commit, Path(name), record)
            return decode_step_calls(record, _model(llama, fused_attn, qmodule, layers, kv_heads))

    return layer_split(step_calls(1), step_calls(2))


#: The W4A16 models demo.py loads by load_awq_model (no make_quant_attn: their own fused attention), by model type:
#: (the module, its class, the constructor's params at a tiny size, the name of its layer count). MPT: tinychat/models/mpt.py (MPTAttentionFused,
#: ALiBi slopes to the kernel, LPLayerNorm, the tied head SharedEmbedding(unembed=True)); Falcon: falcon.py
#: (FalconAttentionFused: multi-query, the 7B's layout; nn.LayerNorm; its own lm_head).
OTHER_MODELS = {
    "mpt": ("tinychat.models.mpt", "MPTForCausalLM",
            dict(d_model=256, n_heads=4, max_seq_len=16, vocab_size=64, no_bias=True), "n_layers"),
    "falcon": ("tinychat.models.falcon", "FalconForCausalLM",
               dict(hidden_size=256, n_head=4, vocab_size=64, layer_norm_epsilon=1e-5, rope_theta=10000.0,
                    rope_scaling=None), "n_layer"),
}


def count_model(family: str, repo: str = DEFAULT_REPO, commit: str = COMMIT) -> dict:
    """As count(), for TinyChat's own MPT and Falcon models (OTHER_MODELS) as demo.py runs them at W4A16:
    load_awq_model's real_quantize_model_weight(init_only=True) makes every linear of the blocks a WQLinear
    (awq/quantize/pre_quant.py get_blocks: transformer.blocks, transformer.h), the head stays fp16. The
    constructors' .cuda() and .to("cuda:0") stay on the CPU."""
    import importlib

    import torch

    if family not in OTHER_MODELS:
        raise ValueError(f"family must be one of {', '.join(OTHER_MODELS)}, not {family!r}")
    module_name, class_name, sizes, layers_field = OTHER_MODELS[family]
    record = Calls()

    def build(layers: int, folder: Path):
        _import(repo, commit, folder, record)  # the packages, the engine stub, the constants
        sys.path.insert(0, str(folder))
        try:
            module = importlib.import_module(module_name)
            qmodule = importlib.import_module("awq.quantize.qmodule")
        finally:
            sys.path.remove(str(folder))
        params = types.SimpleNamespace(**sizes, **{layers_field: layers})
        cuda, to = torch.Tensor.cuda, torch.Tensor.to
        torch.Tensor.cuda = lambda self, *args, **kwargs: self
        torch.Tensor.to = lambda self, *args, **kwargs: (self if args and isinstance(args[0], str)
                                                       and args[0].startswith("cuda") else to(self, *args, **kwargs))
        try:
            model = getattr(module, class_name)(params).half()
        finally:
            torch.Tensor.cuda, torch.Tensor.to = cuda, to
        blocks = model.transformer.blocks if family == "mpt" else model.transformer.h
        for block in blocks:
            for parent in list(block.modules()):
                for name, child in list(parent.named_children()):
                    if isinstance(child, torch.nn.Linear):
                        setattr(parent, name, qmodule.WQLinear(4, 128, child.in_features, child.out_features, False,
                                                               "cpu"))
        return model

    def step_calls(layers: int) -> Counter:
        with tempfile.TemporaryDirectory() as name:
            return decode_step_calls(record, build(layers, Path(name)))

    return layer_split(step_calls(1), step_calls(2))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", default=DEFAULT_REPO)
    parser.add_argument("--commit", default=COMMIT)
    parser.add_argument("--kv-heads", type=int, choices=(1, 2), default=2)
    args = parser.parse_args(argv)
    if not Path(args.repo).exists():
        print(f"error: no llm-awq git directory at {args.repo} (the library's fetch of mit-han-lab/llm-awq)",
              file=sys.stderr)
        return 2
    print(count(args.repo, args.commit, args.kv_heads))
    return 0


if __name__ == "__main__":
    sys.exit(main())
