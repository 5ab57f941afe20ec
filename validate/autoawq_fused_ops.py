"""Counts the host calls one decode step of AutoAWQ's fused Llama modules issues (kernel_facts.json
eager_step_ops "autoawq-fused"), by running the code at the stated commit on the CPU under a
TorchDispatchMode, with the CUDA extensions (awq_ext, awq_ft_ext) replaced by stubs that record each
call as one host call and return a tensor of the kernel's output shape (made outside the count).

    PYTHONPATH=. python validate/autoawq_fused_ops.py [--repo GITDIR] [--commit SHA] [--version GEMM|GEMV]
        [--block llama|mpt|falcon]

--block mpt|falcon counts AutoAWQ's own MPT and Falcon models (count_blocks: "autoawq-fused-d6ac3be", at
d6ac3be unless --commit names another; MPT's remote-code MLP and norms from llm-foundry's fetch mirror).

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

from validate.host_calls import INDEX_MOVE, device_moves, layer_split

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
                moves = device_moves(func, args)  # on a GPU only: a Python list's index tensor moved
                if moves:
                    record.calls[INDEX_MOVE] += moves
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
    return _split(one, two)


BLOCKS_COMMIT = "d6ac3be"  # README 'Add benchmark of Aquila2 34B' (2023-10-29): the autoawq-d6ac3be rows' code
FOUNDRY_REPO = "/work/.mirror/mosaicml+llm-foundry/repo"
FOUNDRY_TAG = "v0.2.0"  # 2023-07-03: MPT-7B-8k-chat's remote code of its release (2023-07-18)


def _foundry(repo: str, tag: str, folder: Path) -> types.SimpleNamespace:
    """llm-foundry's MPTMLP, LPLayerNorm and SharedEmbedding at the tag (the modules of MPT's
    remote-code model that AutoAWQ's MptFuser keeps: module.ffn, norm_1/norm_2, transformer.wte).
    blocks.py imports attention.py, which imports einops for functions a decode step of the fused model
    never calls: an empty einops stands in."""
    import importlib.util

    sys.modules.setdefault("einops", types.SimpleNamespace(rearrange=None))
    for name in ("llmfoundry", "llmfoundry.models", "llmfoundry.models.layers"):
        package = types.ModuleType(name)
        package.__path__ = [str(folder / name.replace(".", "/"))]
        sys.modules[name] = package
    modules = {}
    for stem in ("norm", "attention", "custom_embedding", "blocks"):
        path = folder / "llmfoundry" / "models" / "layers" / f"{stem}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(subprocess.run(["git", "--git-dir", repo, "show", f"{tag}:llmfoundry/models/layers/{stem}.py"],
                                        check=True, capture_output=True).stdout)
        spec = importlib.util.spec_from_file_location(f"llmfoundry.models.layers.{stem}", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        modules[stem] = module
    return types.SimpleNamespace(mlp=modules["blocks"].MPTMLP, norm=modules["norm"].LPLayerNorm,
                                 embedding=modules["custom_embedding"].SharedEmbedding)


def _timed_loop_calls(logits) -> None:
    """benchmark.py's generate(): `token = out[0][:, -1].max(1)[1].unsqueeze(1)` runs after the
    synchronize that ends the model() call but before `time.time() - start`: inside each timed step."""
    logits[:, -1].max(1)[1].unsqueeze(1)


def count_blocks(block: str, repo: str = DEFAULT_REPO, commit: str = BLOCKS_COMMIT, version: str = "GEMM",
                 foundry_repo: str = FOUNDRY_REPO, foundry_tag: str = FOUNDRY_TAG) -> dict:
    """As count(), for AutoAWQ's own MPT and Falcon models (awq/modules/fused/block.py MPTBlock,
    FalconDecoderLayer; model.py MPTModel, FalconModel, as MptFuser and FalconFuser build them at the
    commit). MPT: the blocks keep the remote code's ffn (llm-foundry's MPTMLP: up_proj, GELU, down_proj)
    and norms (LPLayerNorm), n_kv_heads 0 and ALiBi; Falcon 7B (71 heads: the old decoder, one
    input_layernorm, multi-query attention_shapes): transformers' FalconMLP, nn.LayerNorm, rotary.
    Every linear of a block is the version's WQLinear. per_step_model: the model's own calls less a block,
    the LM head around it (MPT: SharedEmbedding(unembed=True), F.linear; Falcon: lm_head nn.Linear) and
    the timed loop's token (_timed_loop_calls), all run."""
    import torch

    if block not in ("mpt", "falcon"):
        raise ValueError(f"block must be mpt or falcon, not {block!r}")
    for name in [name for name in sys.modules if name.split(".")[0] in ("awq", "llmfoundry")]:
        del sys.modules[name]
    record = _Calls()
    _stubs(record)
    torch.set_default_dtype(torch.float16)
    try:
        with tempfile.TemporaryDirectory() as folder:
            _package(repo, commit, Path(folder))
            foundry = _foundry(foundry_repo, foundry_tag, Path(folder)) if block == "mpt" else None
            import importlib

            fused = importlib.import_module("awq.modules.fused.block")
            models = importlib.import_module("awq.modules.fused.model")
            linear_class = getattr(importlib.import_module("awq.modules.linear"), f"WQLinear_{version}")
            head_dim, vocab = 64, 64
            heads = 4
            hidden = heads * head_dim

            def linear(n_in, n_out):
                return linear_class(4, 64, n_in, n_out, False, "cpu")

            def layer():
                if block == "mpt":
                    mlp = foundry.mlp(hidden, 4, device="cpu")
                    mlp.up_proj, mlp.down_proj = linear(hidden, 4 * hidden), linear(4 * hidden, hidden)
                    return fused.MPTBlock(hidden, heads, linear(hidden, 3 * hidden), linear(hidden, hidden), mlp,
                                          foundry.norm(hidden), foundry.norm(hidden), "cpu", 16)
                from transformers import FalconConfig
                from transformers.models.falcon.modeling_falcon import FalconMLP

                mlp = FalconMLP(FalconConfig(hidden_size=hidden, num_attention_heads=heads, bias=False))
                mlp.dense_h_to_4h, mlp.dense_4h_to_h = linear(hidden, 4 * hidden), linear(4 * hidden, hidden)
                # FalconDecoderLayer's old decoder (multi-query, 71 heads at 7B): qkv of heads + 2 heads
                return fused.FalconDecoderLayer(hidden, heads, linear(hidden, (heads + 2) * head_dim),
                                                linear(hidden, hidden), mlp, "cpu", 16,
                                                input_layernorm=torch.nn.LayerNorm(hidden), new_decoder_arch=False)

            def step_calls(layers: int) -> Counter:
                blocks = [layer() for _ in range(layers)]
                if block == "mpt":
                    embedding = foundry.embedding(vocab, hidden)
                    model = models.MPTModel(vocab, blocks, embedding, foundry.norm(hidden))
                    head = lambda hidden_states: embedding(hidden_states, True)  # noqa: E731
                else:
                    model = models.FalconModel(vocab, blocks, torch.nn.Embedding(vocab, hidden),
                                               torch.nn.LayerNorm(hidden))
                    head = torch.nn.Linear(hidden, vocab, bias=False)
                model(torch.tensor([[1, 2, 3, 4]]))  # the prefill (uncounted), then one decode step
                token = torch.tensor([[5]])
                record.calls.clear()
                # generate() runs the loop under torch.inference_mode, as the models' forward does; the
                # head and the token are counted under no_grad, where nn.Linear dispatches its t, view,
                # mm and _unsafe_view (inference mode shows one `linear`): the count of this table's
                # other entries (autoawq-fused's LlamaForCausalLM head, gpt-fast's); since wt46_eagerhost
                # host_calls.mode counts a composite op as its parts in either mode, so the no_grad changes no count
                with _mode(record):
                    hidden_states = model(token).last_hidden_state
                    with torch.no_grad():
                        _timed_loop_calls(head(hidden_states))
                return Counter(record.calls)

            one, two = step_calls(1), step_calls(2)
    finally:
        torch.set_default_dtype(torch.float32)
    return _split(one, two)


def _split(one: Counter, two: Counter) -> dict:
    """host_calls.layer_split under this table's names (the step's own calls are the model's: per_step_model)."""
    split = layer_split(one, two)
    return {"per_layer": split["per_layer"], "per_step_model": split["per_step"], "by_op": split["by_op"],
            "model_by_op": split["step_by_op"]}


HF_LLAMA_RELEASE = "4.34.1"  # the transformers of the d6ac3be README's weeks (4.35.0: 2023-11-02; setup.py >=4.34.0)


def count_hf_llama(repo: str = DEFAULT_REPO, commit: str = BLOCKS_COMMIT, version: str = "GEMM") -> dict:
    """As count(), for AutoAWQ's fused Llama before LlamaLikeModel (d6ac3be): transformers' own
    LlamaForCausalLM and LlamaDecoderLayer around the fused modules LlamaFuser puts in their place
    (awq/models/llama.py at the commit: fuse_attention, a QuantAttentionFused with _fuse_qkv's one qkv
    WQLinear for every LlamaAttention; fuse_rmsnorm, FasterTransformerRMSNorm for every LlamaRMSNorm;
    fuse_mlp, QuantLlamaMLP(gate, down, up) for every LlamaMLP; set by set_module_name as there).
    The step is benchmark.py's model(inputs, use_cache=True), no past_key_values passed, and the token.
    transformers 4.34.1 must be first on the path (validate/generate_ops_releases.py says how); it
    refuses another release. Counted under no_grad, as this table's other entries."""
    import torch
    import transformers

    if transformers.__version__ != HF_LLAMA_RELEASE:
        raise RuntimeError(f"transformers {HF_LLAMA_RELEASE} must be first on the path, not {transformers.__version__}")
    from transformers import LlamaConfig, LlamaForCausalLM
    from transformers.models.llama import modeling_llama as hf

    for name in [name for name in sys.modules if name == "awq" or name.startswith("awq.")]:
        del sys.modules[name]
    record = _Calls()
    _stubs(record)
    torch.set_default_dtype(torch.float16)
    try:
        with tempfile.TemporaryDirectory() as folder:
            _package(repo, commit, Path(folder))
            import importlib

            attn = importlib.import_module("awq.modules.fused.attn")
            mlp = importlib.import_module("awq.modules.fused.mlp")
            norm = importlib.import_module("awq.modules.fused.norm")
            linear_class = getattr(importlib.import_module("awq.modules.linear"), f"WQLinear_{version}")
            hidden, heads, inner, vocab = 256, 4, 512, 64

            def linear(n_in, n_out):
                return linear_class(4, 64, n_in, n_out, False, "cpu")

            def fused(layers: int):
                model = LlamaForCausalLM(LlamaConfig(hidden_size=hidden, intermediate_size=inner, num_attention_heads=heads,
                                                     num_key_value_heads=heads, num_hidden_layers=layers,
                                                     vocab_size=vocab))
                for layer in model.model.layers:
                    layer.self_attn = attn.QuantAttentionFused(hidden, heads, heads, linear(hidden, 3 * hidden),
                                                               linear(hidden, hidden), "cpu", 16)
                    layer.mlp = mlp.QuantLlamaMLP(linear(hidden, inner), linear(inner, hidden), linear(hidden, inner))
                for name, module in list(model.named_modules()):
                    if isinstance(module, hf.LlamaRMSNorm):
                        parent, _, child = name.rpartition(".")
                        setattr(model.get_submodule(parent), child,
                                norm.FasterTransformerRMSNorm(module.weight, module.variance_epsilon))
                return model

            def step_calls(layers: int) -> Counter:
                model = fused(layers)
                with torch.no_grad():
                    model(torch.tensor([[1, 2, 3, 4]]), use_cache=True)  # the prefill (uncounted)
                    record.calls.clear()
                    with _mode(record):
                        _timed_loop_calls(model(torch.tensor([[5]]), use_cache=True)[0])
                return Counter(record.calls)

            one, two = step_calls(1), step_calls(2)
    finally:
        torch.set_default_dtype(torch.float32)
    return _split(one, two)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", default=DEFAULT_REPO)
    parser.add_argument("--commit", default=None, help=f"default {COMMIT} (llama), {BLOCKS_COMMIT} (mpt, falcon)")
    parser.add_argument("--version", choices=("GEMM", "GEMV"), default="GEMM")
    parser.add_argument("--block", choices=("llama", "mpt", "falcon"), default="llama")
    args = parser.parse_args(argv)
    if not Path(args.repo).exists():
        print(f"error: no AutoAWQ git directory at {args.repo} (the library's fetch of casper-hansen/AutoAWQ)")
        return 2
    if args.block == "mpt" and not Path(FOUNDRY_REPO).exists():
        print(f"error: no llm-foundry git directory at {FOUNDRY_REPO} (the library's fetch of mosaicml/llm-foundry)")
        return 2
    if args.block == "llama":
        print(count(args.repo, args.commit or COMMIT, args.version))
    else:
        print(count_blocks(args.block, args.repo, args.commit or BLOCKS_COMMIT, args.version))
    return 0


if __name__ == "__main__":
    sys.exit(main())
