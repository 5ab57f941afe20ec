"""formula == measurement, row by row: the library behind `python cli.py validate`.

For one model and workload it builds the real thing (Hugging Face's class or the reference model),
measures it with validate/measure/ and puts each measurement beside the cost tree's number:
parameters, forward and backward matmul FLOPs (FlopCounterMode, and torch.profiler as a second
count on real tensors), bytes saved for backward, and KV-cache bytes after a prefill and T decode
steps. Full-size models run under FakeTensorMode (shapes, no memory).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import torch

from costmodel.config import ModelConfig, Workload
from costmodel.estimation import Estimate
from costmodel.facts import facts_for
from costmodel.spec import DEFAULT_SEQ_LEN  # the prompt a validation runs when none is given, if the context allows

from . import measure
from .hf_longcat_flash import counted_routing
from .hf_models import HF_FAMILIES, build_hf_model, default_dtype, fake_mode, make_inputs

TORCH_DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def prompt_length(cfg: ModelConfig, seq_len: int | None, gen_tokens: int,
                  fit: bool = False) -> tuple[int, str | None]:
    """The prompt length n to validate at, and a sentence saying why when it is not the n asked
    for (or the default). Without --seq-len, or with fit (every preset of --all), the prompt and
    the decode steps that follow it fill the model's context at most."""
    if seq_len is not None and not fit:
        return seq_len, None
    wanted = DEFAULT_SEQ_LEN if seq_len is None else seq_len
    fed = max(gen_tokens - 1, 0)  # the decode steps of a generation of gen_tokens (the last is never fed back)
    room = max(cfg.max_positions - fed, 1)
    if wanted <= room:
        return wanted, None
    asked = f"the default {wanted}" if seq_len is None else f"--seq-len {wanted}"
    steps = f" and the {fed} decode step{'s' * (fed != 1)} of --gen-tokens {gen_tokens}" if fed > 0 else ""
    return room, (f"n = {room}, not {asked}: the prompt{steps} must fit the {cfg.max_positions} "
                  f"positions of model {cfg.name!r}.")


@dataclass(frozen=True)
class Row:
    """One quantity (or one block's share of it): the formula's value and the measured one."""

    quantity: str
    formula: int
    measured: int
    block: str = ""
    exact: bool = True  # whether any difference is a failure

    @property
    def difference(self) -> int:
        return self.measured - self.formula

    @property
    def relative(self) -> float:
        return self.difference / self.formula if self.formula else float(self.difference != 0)

    @property
    def ok(self) -> bool:
        return self.difference == 0 or not self.exact


# ---------------------------------------------------------------------------------------------
# Building the measured model and its inputs


def _reference_inputs(cfg: ModelConfig, workload: Workload) -> dict[str, torch.Tensor]:
    """Deterministic token ids (and distinct labels) for the reference model."""
    b, n = workload.batch, workload.seq_len
    index = torch.arange(b * n, dtype=torch.long).reshape(b, n)
    inputs = {"input_ids": 1 + (index * 7919 + 3) % (cfg.vocab_size - 1)}
    target = n
    if cfg.architecture == "encoder-decoder":
        m = workload.decoder_len
        decoder = torch.arange(b * m, dtype=torch.long).reshape(b, m)
        inputs["decoder_input_ids"] = 1 + (decoder * 7919 + 5) % (cfg.vocab_size - 1)
        target = m
    if cfg.token_types:
        inputs["token_type_ids"] = torch.zeros(b, n, dtype=torch.long)
    if cfg.head == "lm":
        labels = torch.arange(b * target, dtype=torch.long).reshape(b, target)
        inputs["labels"] = (labels * 31 + 11) % cfg.vocab_size
    return inputs


def training_loss(cfg: ModelConfig, target: str) -> Callable[[Any], torch.Tensor]:
    """The model's own loss with labels; for a model without one (BertModel, a pooler or bare
    encoder) the plain sum of its outputs, which keeps nothing for backward."""
    if cfg.head == "lm":
        return lambda out: out.loss
    if target == "hf":
        return lambda out: out.last_hidden_state.sum() + out.pooler_output.sum()
    return lambda out: out.hidden.sum() + (out.pooled.sum() if out.pooled is not None else 0)


def build(cfg: ModelConfig, workload: Workload, target: str) -> tuple[torch.nn.Module, dict, dict]:
    """The model (train mode), its training inputs and its prompt inputs (no labels)."""
    dtype = TORCH_DTYPES[workload.dtype]
    if target == "hf":
        if cfg.family not in HF_FAMILIES:
            raise ValueError(
                f"model {cfg.name!r} ({cfg.family}) has no Hugging Face class; use --target reference."
            )
        model = build_hf_model(cfg, workload.attention if workload.attention != "flash" else "sdpa", dtype)
        counted_routing(model)  # LongCat-Flash's routers off their zero experts, as the tree counts
        tgt = workload.tgt_len if cfg.architecture == "encoder-decoder" else None
        inputs = make_inputs(cfg, workload.batch, workload.seq_len, tgt, labels=cfg.head == "lm")
        prompt = make_inputs(cfg, workload.batch, workload.seq_len, tgt)
        return model, inputs, prompt
    from .reference import build_reference

    with default_dtype(dtype):
        model = build_reference(cfg).train()
    inputs = _reference_inputs(cfg, workload)
    prompt = {k: v for k, v in inputs.items() if k != "labels"}
    return model, inputs, prompt


# ---------------------------------------------------------------------------------------------
# Per-block grouping: measured module paths -> the cost tree's groups


#: (pattern on a module path inside one layer, the cost tree's sublayer), first match wins.
_SUBLAYERS = [
    (r"relative_attention_bias", None),  # the tree keeps T5's table at the stack level
    (r"^(cross_attention|layer\.1\.EncDecAttention)\b|^decoder:layer\.1\.", "cross_attention"),
    (r"^(self_attn|self_attention|attn|ln_1|input_layernorm|attention|self_attn_layer_norm|"
     r"ln_attn|q_norm|k_norm)\b|^layer\.0\.", "self_attention"),
    (r"^(mlp|ffn|ln_2|post_attention_layernorm|intermediate|output|fc1|fc2|final_layer_norm|"
     r"ln_mlp|pre_feedforward_layernorm|post_feedforward_layernorm)\b|^layer\.[12]\.", "ffn"),
]
_LAYER = re.compile(r"^(?P<stack>.*?)\.(?:layers?|h|block)\.\d+\.(?P<inner>.+)$")


def _tree_group(row: Any) -> str:
    """A row's sublayer group ('decoder.layer.self_attention'), or 'other' outside the layers."""
    if row.part == "layer" and row.sublayer:
        return f"{row.stack}.layer.{row.sublayer}"
    return "other"


def _module_group(path: str, stacks: dict[str, str]) -> str:
    """A module path of either target mapped to the tree's sublayer group, or 'other'."""
    match = _LAYER.match(path)
    if not match or match["stack"] not in stacks:
        return "other"
    stack = stacks[match["stack"]]
    inner = match["inner"]
    if stack == "decoder" and inner.startswith("layer.1."):  # T5: the decoder's second sublayer
        inner = "decoder:" + inner
    for pattern, group in _SUBLAYERS:
        if re.search(pattern, inner):
            return f"{stack}.layer.{group}" if group else "other"
    return "other"


def _block_rows(estimate: Estimate, quantity: str, measured: dict[str, int],
                stacks: dict[str, str]) -> Iterator[Row]:
    """Rows per sublayer (summed over layers) and one row for everything outside the layers."""
    formula: dict[str, int] = {}
    for row in estimate.rows:
        value = getattr(row, quantity)
        formula[_tree_group(row)] = formula.get(_tree_group(row), 0) + value
    grouped: dict[str, int] = {}
    for path, value in measured.items():
        key = _module_group(path, stacks)
        grouped[key] = grouped.get(key, 0) + value
    for group in sorted(set(formula) | set(grouped), key=lambda g: (g == "other", g)):
        if formula.get(group, 0) or grouped.get(group, 0):
            yield Row(quantity, formula.get(group, 0), grouped.get(group, 0), block=group)


# ---------------------------------------------------------------------------------------------
# Other ops: aten ops whose output elements the tree's element kinds count one to one

#: (row, aten ops counted by the dispatch counter, the tree's element kinds). gelu and tanh share a
#: row: Hugging Face's gelu_new is Python with one aten.tanh per element, aten.gelu elsewhere.
OTHER_OP_ROWS = [
    ("softmax elements", ("aten._softmax",), ("softmax",)),
    ("log-softmax elements", ("aten._log_softmax",), ("log_softmax",)),
    ("layernorm elements", ("aten.native_layer_norm",), ("layernorm",)),
    ("silu elements", ("aten.silu",), ("silu",)),
    ("relu elements", ("aten.relu",), ("relu",)),
    ("gelu and tanh elements", ("aten.gelu", "aten.tanh"), ("gelu", "gelu_tanh", "tanh")),
]


def _other_op_rows(estimate: Estimate, measured: dict[str, int], fused: bool) -> Iterator[Row]:
    tree = estimate.flops()["other_elements"]
    for name, ops, kinds in OTHER_OP_ROWS:
        if fused and name == "softmax elements":
            continue  # inside the fused kernel: no aten._softmax to count
        formula = sum(tree.get(kind, 0) for kind in kinds)
        value = sum(measured.get(op, 0) for op in ops)
        if formula or value:
            yield Row(name, formula, value)


# ---------------------------------------------------------------------------------------------
# The comparison


def available_host_bytes() -> int | None:
    """The memory this machine can still give a process (/proc/meminfo's MemAvailable; else the free
    pages), or None where neither is readable."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _require_host_memory(cfg: ModelConfig, workload: Workload, estimate: Estimate) -> None:
    """Refuse, in one line, a --device cpu run whose real tensors cannot fit in this machine's memory:
    its weights, their gradients and the activations saved for backward, as the estimate gives them
    (`validate --model llama2-70b --device cpu` built 276 GB of fp32 weights until the kernel killed it,
    no line said why). --device fake measures the same at full size with no memory."""
    available = available_host_bytes()
    weights = estimate.total("params") * workload.bytes_per_element
    needed = 2 * weights + estimate.total("saved_bytes")
    if available is not None and needed > available:
        raise ValueError(f"model {cfg.name!r} on --device cpu needs at least {needed / 2 ** 30:,.1f} GiB of real "
                         f"tensors (its {workload.dtype} weights, their gradients and the activations saved for "
                         f"backward), more than the {available / 2 ** 30:,.1f} GiB this machine has available; use "
                         "--device fake (FakeTensorMode: full size, no memory), or a shorter --seq-len or smaller model.")


def validate(cfg: ModelConfig, workload: Workload, *, target: str = "hf", device: str = "fake",
             blocks: bool = False, progress: Callable[[str], None] | None = None) -> list[Row]:
    """Every comparable quantity of one model and workload: formula beside measurement."""
    progress = progress or (lambda message: None)
    if cfg.moe and target == "hf" and device == "fake" and workload.dtype != "bf16":
        raise ValueError(f"model {cfg.name!r}: under FakeTensorMode the experts' grouped_mm runs "
                         "only in bf16 (torch's fake kernel); use --dtype bf16 or --device cpu.")
    if cfg.hyper_streams and target == "hf" and device == "fake":
        raise ValueError(f"model {cfg.name!r}: DeepseekV4ForCausalLM casts modules to fp32 in __init__ "
                         "(.to(dtype=torch.float32)), which FakeTensorMode cannot run; use --device cpu.")
    if (cfg.moe and target == "hf" and device == "fake"
            and facts_for("hf", cfg.family).expert_dispatch in ("loop", "parallel_experts")):
        raise ValueError(f"model {cfg.name!r}: {cfg.family}'s experts loop over data-dependent sizes (nonzero(), "
                         "tolist()), which FakeTensorMode cannot run; use --device cpu (real tensors).")
    estimate = Estimate(cfg, workload.replace(impl=target, sdpa_device="cpu"))  # measured on the CPU
    if device == "cpu":
        _require_host_memory(cfg, workload, estimate)
    context = fake_mode() if device == "fake" else _nothing()
    rows: list[Row] = []
    loss_fn = training_loss(cfg, target)
    with context:
        progress(f"building {target} {cfg.name} ({workload.dtype}, {device})")
        model, inputs, prompt = build(cfg, workload, target)
        rows.append(Row("parameters", estimate.total("params"), measure.count_parameters(model)))
        progress("counting matmul FLOPs (FlopCounterMode, forward and backward) and recording "
                 "the tensors saved for backward")
        flops = measure.matmul_flops(model, inputs, backward=True, depth=6, loss_fn=loss_fn,
                                     saved=True)  # one training pass measures both
        rows.append(Row("forward matmul FLOPs", estimate.total("flops_matmul"), flops.forward))
        rows.append(Row("backward matmul FLOPs", estimate.total("flops_matmul_backward"), flops.backward))
        if device != "fake" and workload.attention == "eager" and not _has_conv_mixers(cfg):
            progress("counting matmul FLOPs again with torch.profiler")
            profiled = measure.profiler_matmul_flops(model, inputs, backward=True, loss_fn=loss_fn)
            rows.append(Row("training matmul FLOPs (profiler)",
                            estimate.total("flops_matmul") + estimate.total("flops_matmul_backward"),
                            profiled))
        progress("counting the output elements of the other ops (TorchDispatchMode)")
        elements = measure.other_op_elements(model, inputs)
        rows += _other_op_rows(estimate, elements, fused=workload.attention != "eager")
        rows.append(Row("bytes saved for backward", estimate.total("saved_bytes"),
                        flops.saved.total_bytes))
        if blocks:
            stacks = _stacks(cfg, target)
            rows += _block_rows(estimate, "params", measure.parameters_by_module(model, depth=8), stacks)
            rows += _block_rows(estimate, "flops_forward", flops.forward_by_module, stacks)
        if cfg.has_kv_cache:
            progress(f"prefill and {workload.fed_back_tokens()} decode steps with the KV cache")
            model.eval()
            kv = _kv_bytes(model, prompt, workload, target)
            rows.append(Row("KV-cache bytes", estimate.memory_numbers()["kv_cache"], kv))
    return rows


def _has_conv_mixers(cfg: ModelConfig) -> bool:
    """Whether the model runs depthwise conv1d's (its linear mixers': LFM2's short convolution,
    Mamba's), whose FLOPs torch.profiler's with_flops does not estimate (it knows mm, addmm, bmm,
    baddbmm, conv2d, mul and add), so its count would leave them out: no profiler row then (Kimi
    Linear's KDA: 122,472 FLOPs short on tests/test_hf_kimi_linear.py's odd config, its conv's)."""
    return any(cfg.n_mixer_layers(mixer) for mixer in ("shortconv", "mamba", "mamba1", "deltanet", "kda"))


def _stacks(cfg: ModelConfig, target: str) -> dict[str, str]:
    """Module names of the layer stacks -> the tree's stack names."""
    if target == "reference" or cfg.family in ("bert", "t5"):
        return {"encoder": "encoder", "decoder": "decoder"}
    return {"transformer": "decoder", "model": "decoder", "gpt_neox": "decoder",
            "model.decoder": "decoder"}


def _kv_bytes(model: torch.nn.Module, prompt: dict, workload: Workload, target: str) -> int:
    """The cache after a generation of workload.gen_tokens: the prefill and the T - 1 decode steps
    that feed the generated tokens back (the last is returned, never fed: Workload.fed_back_tokens)."""
    steps = workload.fed_back_tokens()
    if target == "hf":
        return measure.kv_cache_bytes(model, prompt, gen_tokens=steps)
    from .decoding import kv_cache_bytes

    result = kv_cache_bytes(model, prompt["input_ids"], steps,
                            decoder_input_ids=prompt.get("decoder_input_ids"))
    return result["generated"]


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None
