"""Counts the aten ops and the device-to-host reads of one decoding step of lit-gpt's generate/base.py
(Lightning-AI/lit-gpt, now litgpt) at the two commits the litgpt-quantize rows ran: d16f924d ('Bitsandbytes
4-bit quantization support (#253)', July 2023) and 982abcbc ('Use Fabric's quantization (#596)', after
8f474e82 'Move KV cache management out of forward (#507)'): what kernel_facts.json "eager_step_ops" and
"generate_windows" state for the decode codes "lit-gpt-d16f924d" and "lit-gpt-982abcbc".

The commit's own code runs: lit_gpt/model.py and config.py from a checkout (`git archive COMMIT lit_gpt
generate | tar -x -C DIR`; the package's __init__.py, which imports the tokenizer and checks lightning's
version, is not run, and of lit_gpt/utils.py, which imports lightning, only find_multiple, which config.py
takes) and the `generate` function of its generate/base.py (taken from the file by ast and run
as written). A tiny config with falcon-7b's structure (Config.from_name("falcon-7b"): one query group,
parallel residual, a shared attention norm, no biases, LayerNorm, GPT-NeoX's GELU MLP, full rotary) at odd
sizes (SIZES), under bf16-true as Lightning Fabric's HalfPrecision runs the module (FabricLike), or fp32.

A TorchDispatchMode records every aten op of generate(prompt, PROMPT + NEW_TOKENS) with a mark before the
model's forward and each block's: one steady step is the ops between the last two forwards. The step is
read as a cycle of windows between reads (aten _local_scalar_dense): multinomial expanded into what its
kernel body dispatches, two reads among them (validate/generate_syncs.MULTINOMIAL_OPS, pytorch
Distributions.cpp multinomial_out); at d16f924d each layer's `if input_pos[-1] >= max_seq_length:`
(lit_gpt/model.py line 237) is one more read a layer. Per layer: the difference between models of two
layers and one; serial: the ops of the window between multinomial's two reads (sum, eq, sum and the read),
issued after the GPU has drained.

generate runs under torch.no_grad() at both commits: 982abcbc decorates it with @torch.inference_mode(), under
which a TorchDispatchMode sees CompositeImplicitAutograd ops whole (linear, layer_norm,
scaled_dot_product_attention, type_as, to) while their C++ decompositions still send each of their ops through
the dispatcher; under no_grad every op the dispatcher handles reaches the mode, as in the project's other
counts (validate/generate_ops.py), whose ops the host's per-op time was measured on.

Attention runs sdpa's math backend (sdpa_kernel(SDPBackend.MATH)): decode steps pass the boolean mask
(mask_cache.index_select at both commits, so 982abcbc's flash_attn_func branch, `mask is None`, is never
taken) and Falcon-7B's one KV head against 71 query heads; torch 2.1 (what both commits'
requirements.txt ask for) has no enable_gqa (added in 2.5), and its fused kernels refuse unequal head counts
(sdp_utils_cpp.h check_batch_size_and_num_heads: 'For dense input, both fused kernels require query, key and
value to have the same num_heads'), so the math path is what ran on the A100.

`python -m validate.litgpt_ops DIR COMMIT` prints the counts as JSON (DIR holds COMMIT's lit_gpt/ and
generate/)."""

from __future__ import annotations

import ast
import sys
import types
from pathlib import Path
from typing import Any

from validate.generate_syncs import SYNC  # the reads' aten name (a torch-free import)

COMMITS = ("d16f924d", "982abcbc")
#: Odd sizes (STYLE.md): hidden 48, 4 query heads of 12 over one KV head (falcon-7b's n_query_groups 1),
#: a vocabulary of 99, a block of 64 positions.
SIZES = dict(n_embd=48, n_head=4, padded_vocab_size=99, vocab_size=99, block_size=64)
PROMPT = (1, 5, 7, 9, 11)
NEW_TOKENS = 6
TOP_K, TEMPERATURE = 200, 0.8  # generate/base.py main's defaults at both commits (the rows' commands)


class _RequirementCache:
    """Stands in for lightning_utilities' RequirementCache (982abcbc model.py line 16 asks it whether
    flash-attn is installed): true where the distribution is installed, as the real one answers."""

    def __init__(self, requirement: str):
        self.requirement = requirement

    def __bool__(self) -> bool:
        from importlib import metadata

        name = self.requirement.split(">")[0].split("=")[0]
        try:
            metadata.version(name)
        except metadata.PackageNotFoundError:
            return False
        return True


def load(directory: Path) -> tuple[types.ModuleType, Any]:
    """The checkout's lit_gpt.model module and the generate function of its generate/base.py."""
    import torch

    for name in [name for name in sys.modules if name == "lit_gpt" or name.startswith("lit_gpt.")]:
        del sys.modules[name]
    package = types.ModuleType("lit_gpt")
    package.__path__ = [str(directory / "lit_gpt")]
    sys.modules["lit_gpt"] = package
    if "lightning_utilities" not in sys.modules:
        imports = types.ModuleType("lightning_utilities.core.imports")
        imports.RequirementCache = _RequirementCache
        for name in ("lightning_utilities", "lightning_utilities.core"):
            sys.modules[name] = types.ModuleType(name)
        sys.modules["lightning_utilities.core.imports"] = imports
    import importlib

    utils = types.ModuleType("lit_gpt.utils")  # config.py takes find_multiple alone from it
    utils.__dict__.update(_functions(directory / "lit_gpt" / "utils.py", "find_multiple", {}))
    sys.modules["lit_gpt.utils"] = utils
    model = importlib.import_module("lit_gpt.model")
    namespace = {"torch": torch, "Optional": __import__("typing").Optional, "GPT": model.GPT}
    return model, _functions(directory / "generate" / "base.py", "generate", namespace)["generate"]


def _functions(path: Path, name: str, namespace: dict) -> dict:
    """The module-level function `name` of the file at `path`, run as written (its own lines, by ast)
    in `namespace`, without the file's imports (lightning's, not installed here)."""
    tree = ast.parse(path.read_text())
    function = next(node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == name)
    function.decorator_list = []  # generate's @torch.no_grad() / @torch.inference_mode(): step_sequence's no_grad
    import importlib.util
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:  # the function alone, imported as a module of its own
        file = Path(tmp) / f"{path.stem}_{name}.py"
        file.write_text(ast.unparse(function) + "\n")
        spec = importlib.util.spec_from_file_location(f"_litgpt_{path.stem}_{name}", file)
        module = importlib.util.module_from_spec(spec)
        module.__dict__.update(namespace)
        spec.loader.exec_module(module)
    namespace[name] = getattr(module, name)
    return namespace


class FabricLike(__import__("torch").nn.Module):
    """What Lightning Fabric's setup_module wraps the model in (lightning/fabric/wrappers.py _FabricModule
    with plugins/precision/half.py HalfPrecision, bf16-true): floating inputs converted (the ids and positions
    are integers: none), the forward under torch.set_default_dtype(bfloat16) (forward_context), the output
    converted to the default dtype after it (convert_output: the logits to fp32). fp32 (32-true): Precision's
    identities."""

    def __init__(self, module: Any, half: bool):
        super().__init__()
        self.module, self.half = module, half
        self.config = module.config

    @property
    def max_seq_length(self) -> int:
        return self.module.max_seq_length

    def forward(self, *args: Any) -> Any:
        import torch

        if not self.half:
            return self.module(*args)
        default = torch.get_default_dtype()
        torch.set_default_dtype(torch.bfloat16)
        try:
            out = self.module(*args)
        finally:
            torch.set_default_dtype(default)
        return out.to(torch.get_default_dtype())


def step_sequence(directory: Path, commit: str, layers: int, dtype: str) -> list[str]:
    """The aten ops of one steady decoding step, "#LAYER" before each layer's, multinomial expanded
    (generate_syncs.MULTINOMIAL_OPS, its reads as SYNC)."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils._python_dispatch import TorchDispatchMode

    from validate.generate_syncs import last_step

    model_module, generate = load(directory)
    half = dtype == "bf16"
    torch.manual_seed(0)
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16 if half else torch.float32)  # fabric.init_module / init_tensor
    try:
        config = model_module.Config.from_name("falcon-7b", n_layer=layers, **SIZES)
        gpt = model_module.GPT(config).eval()
        total = len(PROMPT) + NEW_TOKENS
        if commit == "982abcbc":  # generate/base.py main: max_seq_length, then set_kv_cache(batch_size=1)
            gpt.max_seq_length = total
            gpt.set_kv_cache(batch_size=1)
    finally:
        torch.set_default_dtype(default)
    names: list[str] = []

    class Names(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            names.append(str(func))
            return func(*args, **(kwargs or {}))

    hooks = [gpt.register_forward_pre_hook(lambda *a: names.append("#FWD"))]
    hooks += [block.register_forward_pre_hook(lambda *a: names.append("#LAYER")) for block in gpt.transformer.h]
    extra = dict(max_seq_length=total) if commit == "d16f924d" else {}
    with torch.no_grad(), sdpa_kernel(SDPBackend.MATH), Names():
        out = generate(FabricLike(gpt, half), torch.tensor(PROMPT), total, temperature=TEMPERATURE, top_k=TOP_K,
                       **extra)
    for hook in hooks:
        hook.remove()
    if out.shape[0] != total:
        raise RuntimeError(f"generate stopped after {out.shape[0] - len(PROMPT)} of {NEW_TOKENS} tokens.")
    return last_step(names)


def summary(sequence: list[str]) -> dict[str, Any]:
    """The step's ops and reads, and its serial window (the ops after multinomial's first read up to and
    with its second: issued after the GPU has drained)."""
    ops = [name for name in sequence if name != "#LAYER"]
    syncs = [i for i, name in enumerate(ops) if name == SYNC]
    first = next(i for i, name in enumerate(ops) if name.startswith("(multinomial)"))
    m1, m2 = (i for i in syncs if i > first)  # multinomial's two reads
    return {"ops": len(ops), "syncs": len(syncs), "serial": ops[m1 + 1:m2 + 1]}


def counts(directory: Path, commit: str, dtype: str) -> dict[str, Any]:
    """Per layer (ops, reads), the step's own ops and reads, and its serial ops (kernel_facts.json's form)."""
    one, two = (summary(step_sequence(directory, commit, layers, dtype)) for layers in (1, 2))
    if one["serial"] != two["serial"]:
        raise AssertionError("the layers changed the ops between multinomial's reads.")
    per_layer, syncs_per_layer = two["ops"] - one["ops"], two["syncs"] - one["syncs"]
    return {"commit": commit, "dtype": dtype, "per_layer": per_layer, "syncs_per_layer": syncs_per_layer,
            "per_step": one["ops"] - per_layer, "syncs_per_step": one["syncs"] - syncs_per_layer,
            "serial_per_step": len(one["serial"]), "serial": one["serial"]}


if __name__ == "__main__":
    import json

    if len(sys.argv) != 3 or sys.argv[2] not in COMMITS:
        print(f"usage: python -m validate.litgpt_ops DIR COMMIT (COMMIT one of {', '.join(COMMITS)})", file=sys.stderr)
        raise SystemExit(2)
    print(json.dumps({dtype: counts(Path(sys.argv[1]), sys.argv[2], dtype) for dtype in ("bf16", "fp32")}, indent=1))
