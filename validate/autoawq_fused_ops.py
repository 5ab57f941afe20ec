"""Counts the host calls one decode step of AutoAWQ's fused Llama modules issues (kernel_facts.json
eager_step_ops "autoawq-fused"), by running the code at the stated commit on the CPU under a
TorchDispatchMode, with the CUDA extensions (awq_ext, awq_ft_ext) replaced by stubs that record each
call as one host call and return a tensor of the kernel's output shape (made outside the count).

    PYTHONPATH=. python validate/autoawq_fused_ops.py [--repo GITDIR] [--commit SHA] [--version GEMM|GEMV]

GITDIR: a git directory of casper-hansen/AutoAWQ (the library's `fetch` mirror by default). The files of
awq/ at the commit are written to a temporary folder and imported as the package `awq` without its
__init__ (which imports every model and transformers' classes of its day): only awq/modules and
awq/utils/fused_utils are run. A decode step is seqlen 1 with the FasterTransformer extension present
(FT_INSTALLED: QuantAttentionFused's single_query_attention branch, what benchmark.py's fused model runs).
per layer: a model of two LlamaLikeBlocks less one; the model's own (LlamaLikeModel.forward: the
embedding, the final norm, fused_utils' checks): one block's model less one block's ops.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import types
from collections import Counter
from pathlib import Path

DEFAULT_REPO = "/work/.mirror/casper-hansen+AutoAWQ/repo"
COMMIT = "34085ed"  # PR #320's merge (2024-02-03), the autoawq-pr320 rows' code


class _Calls:
    """The host calls seen: aten ops under the dispatch mode and the extensions' stubbed calls."""

    def __init__(self) -> None:
        self.calls: Counter = Counter()
        self.paused = False


def _mode(record: _Calls):
    from torch.utils._python_dispatch import TorchDispatchMode

    class Count(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if not record.paused:
                record.calls[str(func.overloadpacket.__name__)] += 1
            return func(*args, **(kwargs or {}))

    return Count()


def _stubs(record: _Calls) -> None:
    """awq_ext's and awq_ft_ext's kernels as one host call each, outputs made outside the count."""
    import torch

    def made(shape, like):
        record.paused = True
        try:
            return torch.zeros(shape, dtype=like.dtype)
        finally:
            record.paused = False

    def gemm_forward_cuda(x, qweight, scales, qzeros, split_k):
        record.calls["awq_ext.gemm_forward_cuda"] += 1
        return made((x.shape[0], scales.shape[1]), x)

    def gemv_forward_cuda(x, qweight, scales, qzeros, group_size):
        record.calls["awq_ext.gemv_forward_cuda"] += 1
        return made((x.shape[0], qweight.shape[0]), x)  # WQLinear_GEMV's qweight: (out_features, ...)

    def layernorm_forward_cuda(x, weight, out, eps):
        record.calls["awq_ext.layernorm_forward_cuda"] += 1

    def single_query_attention(q, k, v, k_cache, v_cache, lengths, alibi, t, rotary_dim, base, neox):
        record.calls["awq_ft_ext.single_query_attention"] += 1
        return made((q.shape[0], q.shape[1] * q.shape[2]), q)

    kernels = types.SimpleNamespace(gemm_forward_cuda=gemm_forward_cuda, gemv_forward_cuda=gemv_forward_cuda,
                                    layernorm_forward_cuda=layernorm_forward_cuda)
    attention = types.SimpleNamespace(single_query_attention=single_query_attention)
    # AutoAWQ_kernels' names from 0.1.7 on; the extensions built in the repository before (0.1.6)
    sys.modules.update({"awq_ext": kernels, "awq_inference_engine": kernels,
                        "awq_ft_ext": attention, "ft_inference_engine": attention})


def _package(repo: str, commit: str, folder: Path) -> None:
    """awq/ at the commit written under folder, importable as `awq` without its __init__."""
    names = subprocess.run(["git", "--git-dir", repo, "ls-tree", "-r", "--name-only", commit, "awq"],
                           check=True, capture_output=True, text=True).stdout.split()
    for name in names:
        if name.endswith(".py"):
            path = folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(subprocess.run(["git", "--git-dir", repo, "show", f"{commit}:{name}"],
                                            check=True, capture_output=True).stdout)
    package = types.ModuleType("awq")
    package.__path__ = [str(folder / "awq")]
    sys.modules["awq"] = package
    utils = types.ModuleType("awq.utils")  # its __init__ is empty; fused_utils alone is run
    utils.__path__ = [str(folder / "awq" / "utils")]
    sys.modules["awq.utils"] = utils


def count(repo: str = DEFAULT_REPO, commit: str = COMMIT, version: str = "GEMM") -> dict:
    """{"per_layer", "per_step_model", "by_op"}: one decode step's host calls a LlamaLikeBlock (the
    version's linears: WQLinear_GEMM or WQLinear_GEMV) and LlamaLikeModel's own, fp16, batch 1, at a
    filled position of the cache. The modules' names and arguments as the commit has them (0.1.6:
    awq/modules/linear.py, QuantLlamaMLP(gate, down, up) with F.silu; 0.1.8: awq/modules/linear/,
    QuantFusedMLP(gate, down, up, activation))."""
    import torch
    import torch.nn.functional as F

    for name in [name for name in sys.modules if name == "awq" or name.startswith("awq.")]:
        del sys.modules[name]  # another commit's modules, imported before
    record = _Calls()
    _stubs(record)
    with tempfile.TemporaryDirectory() as folder:
        _package(repo, commit, Path(folder))
        import importlib

        from awq.modules.fused import mlp as fused_mlp
        from awq.modules.fused.block import LlamaLikeBlock
        from awq.modules.fused.model import LlamaLikeModel
        from awq.modules.fused.norm import FasterTransformerRMSNorm

        linears = importlib.import_module("awq.modules.linear")
        module = getattr(linears, f"WQLinear_{version}")
        hidden, heads, inner, vocab = 256, 4, 512, 64

        def linear(n_in, n_out):
            return module(4, 128, n_in, n_out, False, "cpu")

        def block():
            norm = lambda: FasterTransformerRMSNorm(torch.ones(hidden, dtype=torch.float16))  # noqa: E731
            gate_down_up = (linear(hidden, inner), linear(inner, hidden), linear(hidden, inner))
            mlp = (fused_mlp.QuantFusedMLP(*gate_down_up, F.silu) if hasattr(fused_mlp, "QuantFusedMLP")
                   else fused_mlp.QuantLlamaMLP(*gate_down_up))
            return LlamaLikeBlock(hidden, heads, heads, linear(hidden, 3 * hidden), linear(hidden, hidden),
                                  mlp, norm(), norm(), "cpu", max_seq_len=16)

        def step_calls(layers: int) -> Counter:
            model = LlamaLikeModel(vocab, [block() for _ in range(layers)],
                                   torch.nn.Embedding(vocab, hidden).half(),
                                   FasterTransformerRMSNorm(torch.ones(hidden, dtype=torch.float16)))
            model(torch.tensor([[1, 2, 3, 4]]))  # the prefill (uncounted), then one decode step
            token = torch.tensor([[5]])  # benchmark.py's torch.as_tensor of a token already on the device: no op
            record.calls.clear()
            with _mode(record):
                model(token)
            return Counter(record.calls)

        one, two = step_calls(1), step_calls(2)
    per_layer = two - one
    own = one - per_layer
    return {"per_layer": sum(per_layer.values()), "per_step_model": sum(own.values()),
            "by_op": dict(sorted(per_layer.items())), "model_by_op": dict(sorted(own.items()))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", default=DEFAULT_REPO)
    parser.add_argument("--commit", default=COMMIT)
    parser.add_argument("--version", choices=("GEMM", "GEMV"), default="GEMM")
    args = parser.parse_args(argv)
    if not Path(args.repo).exists():
        print(f"error: no AutoAWQ git directory at {args.repo} (the library's fetch of casper-hansen/AutoAWQ)")
        return 2
    print(count(args.repo, args.commit, args.version))
    return 0


if __name__ == "__main__":
    sys.exit(main())
