"""How a model is run: Workload (batch, lengths, dtype, whose code, which kernels, what is kept),
validated on construction against the choices in spec.py.

It lives apart from config.py (the architecture) and reads a ModelConfig only through its
attributes, so config.py can re-export it without an import cycle.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from . import spec
from .decode_codes import codes as decode_codes
from .errors import ConfigError, check_bool, check_choice, check_int, show
from .layer_pattern import states_context
from .facts import facts_for
from .spec import (ATTENTIONS, CANONICAL_DTYPE, DTYPE_BYTES, IMPLEMENTATIONS, KV_CACHES, MLA_FORMS, OPTIMIZERS,
                   PRECISIONS, RECOMPUTES)

#: ModelConfig fields of the newer families (issue 14) that the reference model
#: (validate/reference.py) does not implement, with the value that means "not used".
NOT_IN_REFERENCE = {
    "qk_norm": False, "post_sublayer_norm": False, "attention_softcap": None,
    "logit_softcap": None, "rotary_dim": None, "parallel_attention": False, "position_offset": 0,
    "embedding_dim": None, "n_experts": 0, "kv_lora_rank": None, "attention_dropout": None,
    "mtp_layers": 0, "embedding_multiplier": None, "residual_multiplier": None,
    "logits_scaling": None, "nope_layers": 0, "attention_sinks": False, "sinks_windowed_only": False,
    "value_scale": False,
    "norm_affine": True, "clip_qkv": None, "qk_l2_norm": False, "nope_temperature": False,
    "chunked_window": False, "norm_bias": True, "mixer_layers": False, "rope_query_scale": False,
    "index_n_heads": None, "per_layer_input": None, "global_head_dim": None, "keys_as_values": False,
    "global_kv_heads": None, "kv_shared_layers": 0, "double_wide_shared": False,
    "altup_inputs": None, "laurel_rank": None, "sub_norms": False, "differential_attention": False,
    "dynamic_mask": False, "residual_scales": False, "upcast_attention": False,
}
#: Activations the reference model's table (validate/reference_blocks.py ACTIVATIONS) lacks: it
#: builds every other one of config.py's ACTIVATIONS (tests/test_reference.py holds the two equal).
NOT_IN_REFERENCE_ACTIVATIONS = ("xielu",)


def reference_unsupported(cfg: Any) -> list[str]:
    """The fields of a ModelConfig the reference model would have to ignore (so it refuses)."""
    missing = [name for name, off in NOT_IN_REFERENCE.items() if getattr(cfg, name) != off]
    if cfg.v_head_dim is not None and cfg.kv_lora_rank is None:  # a value width of its own outside MLA
        missing.append("v_head_dim")
    if cfg.activation in NOT_IN_REFERENCE_ACTIVATIONS:
        missing.append(f"activation {cfg.activation}")
    return missing


#: Of NOT_IN_REFERENCE's fields, those flash_attn's GPT at 30fd8c17 builds (Dao-AILab/flash-attention
#: flash_attn/models/gpt.py): rotary_dim (create_mixer_cls line 77, rotary_emb_fraction), embedding_dim
#: (GPTModel line 288, word_embed_proj_dim), attention_dropout (attn_pdrop), parallel_attention (line 290,
#: parallel_block: GPT-J's and GPT-NeoX's) and position_offset (models/opt.py line 33 drops OPT's two extra rows:
#: the tree counts them, 2 d parameters more). Every other field there it does not build.
FLASH_ATTN_BUILDS = ("rotary_dim", "embedding_dim", "attention_dropout", "parallel_attention", "position_offset")


def flash_attn_unsupported(cfg: Any) -> list[str]:
    """What flash_attn's GPT (Dao-AILab/flash-attention 30fd8c17 flash_attn/models/gpt.py: GPTLMHeadModel, a stack of
    modules/block.py Blocks, each an MHA mixer and an Mlp/FusedMLP/GatedMlp) does not build, which --impl flash_attn
    therefore refuses: an encoder, routed experts, mixers other than attention, latent attention; grouped key/value
    heads, ALiBi and sliding windows, which its MHA gained after that commit (MQA/GQA 425dbcb6, 2023-07-23; ALiBi
    c3b21966, 2023-12-21; window_size ef0ed106, 2024-01-31: at 30fd8c17 MHA.__init__ (modules/mha.py line 311)
    takes num_heads alone); and NOT_IN_REFERENCE's other fields (soft-capping, QK norms, post-sublayer norms ...:
    neither MHA nor Block has them), named as the reference's refusal names them."""
    missing = []
    if cfg.architecture != "decoder":  # the message reads "builds no encoder, no ...": a noun without its article
        missing.append("encoder")
    if cfg.n_experts:
        missing.append("routed experts")
    if cfg.mixer_layers:
        missing.append("mixer layers")
    if cfg.mla:
        missing.append("latent attention")
    if cfg.n_kv_heads != cfg.n_heads:
        missing.append("grouped key/value heads")
    if cfg.position == "alibi":
        missing.append("ALiBi")
    if cfg.sliding_window is not None:
        missing.append("sliding window")
    said = {"n_experts", "kv_lora_rank", "mixer_layers", *FLASH_ATTN_BUILDS}
    missing += [name for name, off in NOT_IN_REFERENCE.items() if name not in said and getattr(cfg, name) != off]
    return missing


def logits_kept(keep: int) -> str:
    """In words, the positions whose logits a prefill computes (Workload.logits_to_keep, 0: all):
    what estimate's and simulate's output say beside each figure that holds the logits."""
    if not keep:
        return "every position (a plain forward)"
    if keep == 1:
        return "the last position (Hugging Face generate's prefill, logits_to_keep=1)"
    return f"the last {keep} positions"


#: What is proven of each recurrent mixer whose note says nothing more (Workload.warnings: "model M has
#: N <this>"), in the order the notes are given.
_MIXER_NOTES = {
    "mamba1": ("Mamba-1 layers: other "
               "FLOPs leave out what the Mamba-1 mixers run besides their matmuls (exp, softplus, "
               "silu, the state updates); parameters, matmul FLOPs, the cache and (impl hf) "
               "activations are proven against transformers' class; the activations are its slow "
               "path's, which keeps every scan state (with mamba_ssm installed it runs mamba_inner_fn, "
               "which keeps far less: not modelled; blocks/mamba1.py)."),
    "shortconv": ("short-convolution layers: "
               "other FLOPs leave out their two gating products; parameters, matmul FLOPs, the cache "
               "and (impl hf) activations are proven against transformers' class (blocks/shortconv.py)."),
    "lightning": ("lightning-attention layers: "
               "other FLOPs leave out what they run besides their matmuls (silu, the decays, the output "
               "norm and gate); parameters, buffers, matmul FLOPs, the cache and (impl hf) activations "
               "are proven against transformers' class (blocks/lightning.py)."),
    "kda": ("Kimi Delta Attention layers: "
               "parameters, matmul FLOPs, the cache and (impl hf) activations are proven against "
               "transformers' class (below fp32 under eager attention only: sdpa's CPU math path keeps "
               "fp32 copies of the MLA's inputs, not modelled); the activations are its PyTorch "
               "fallback's, which keeps each chunk's fp32 decay mask and its product with the keys "
               "(2 x 4 b H C Q^2 P bytes a layer, C chunks of Q 64; with fla installed chunk_kda keeps far less: not modelled); "
               "other FLOPs leave out what the mixer runs besides its matmuls and the conv's silu "
               "(blocks/kda.py)."),
    "mlstm": ("mLSTM layers: parameters, "
               "matmul FLOPs (training, prefill, decode) and the state are proven against transformers' "
               "class; their other FLOPs and the bytes they save for backward are not modelled "
               "(blocks/mlstm.py)."),
    "rwkv_time": ("RWKV layers: parameters, "
               "matmul FLOPs (training, prefill, decode), the bytes saved for backward (its CPU loop) and "
               "the state are proven against transformers' class; the mixes' other FLOPs are not "
               "modelled (blocks/rwkv.py)."),
    "rglru": ("RG-LRU recurrent blocks: "
               "parameters, buffers, matmul FLOPs (training, prefill, decode), the bytes saved for "
               "backward and the states held are proven against transformers' class; their other "
               "FLOPs are not modelled (blocks/rglru.py)."),
}


def check_dtype(owner: str, dtype: Any) -> None:
    """An activation dtype Workload takes (fp32, fp16, bf16 or their long names), else one line."""
    if dtype not in DTYPE_BYTES:
        raise ConfigError(f"{owner}: unknown dtype {show(dtype)}; use one of fp32, fp16, bf16 "
                          "(or float32, float16, bfloat16).")


@dataclass(frozen=True)
class Workload:
    """How the model is run: batch, lengths, dtype and the implementation whose memory is modelled.

    seq_len is the decoder length for decoders, the encoder (source) length for encoder-decoders,
    whose decoder length is tgt_len (None: the same as seq_len). gen_tokens is the number of tokens
    generated after a prefill of seq_len tokens (for the KV cache).
    """

    seq_len: int = spec.DEFAULT_SEQ_LEN
    batch: int = 1
    dtype: str = spec.DEFAULT_DTYPE
    tgt_len: int | None = None
    gen_tokens: int = 0
    impl: str = spec.DEFAULT_IMPL
    attention: str = spec.DEFAULT_ATTENTION
    recompute: str = spec.DEFAULT_RECOMPUTE
    # Under recompute "full": only the first N layers of each pipeline (virtual) stage recompute,
    # the others keep everything (Megatron-LM's recompute_method "block" with recompute_num_layers);
    # None: every layer.
    recompute_layers: int | None = None
    optimizer: str = spec.DEFAULT_OPTIMIZER
    precision: str = spec.DEFAULT_PRECISION  # pure or mixed (an fp32 master copy and fp32 moments; pure in fp32)
    # Quantized inference (costmodel/quantization.py): the layers' weight matrices in int8, int4,
    # fp8, nf4 or mxfp4 (the routed experts' only), with scales per group of weight_group values
    # (None: the format's default) and, for nf4, double quantisation of the scales; the KV cache in fp8 or int8.
    weight_dtype: str | None = None
    weight_group: int | None = None
    weight_bits: float | None = None  # exl2's bits a weight (its file's average; None: the converter's 4.125)
    # Where weight_dtype came from (checkpoint.inference_weights): "checkpoint" (the model's
    # quantization_config: training paths hold the weights in the training dtype instead),
    # "option" (asked for), None (nothing chosen). Not a choice that shapes the tree.
    weight_dtype_source: str | None = None
    double_quant: bool = True
    # The output head's matrix quantized too, as gpt-fast and torchao do (quantization.py); default
    # the integrations' (bitsandbytes, AWQ, GPTQ, vLLM): the head in the activation dtype.
    quantize_head: bool = False
    # How int8 and int4 weights are stored (spec.QUANT_LAYOUTS, quantization.QUANT_LAYOUT_FACTS):
    # gptq (GPTQ's, AWQ's, LLM.int8's), gpt-fast or torchao (bf16 scales, tinygemm's int4).
    quant_layout: str = spec.DEFAULT_QUANT_LAYOUT
    # The weight kinds (quantization.WEIGHT_KINDS) the checkpoint's ignore list keeps in --dtype
    # (checkpoint_ignore.py; set with weight_dtype_source "checkpoint", by checkpoint.inference_options).
    weight_kept: tuple[str, ...] = ()
    kv_dtype: str | None = None
    # How GEMMs on fp8 weights multiply (spec.FP8_GEMMS): auto (W8A8 where the hardware has an FP8
    # peak), w8a8 or w8a16 (weight-only); quantized_matmul.runs_w8a8.
    fp8_gemm: str = spec.DEFAULT_FP8_GEMM
    # The positions whose logits the prefill computes (Profile.logits_to_keep): 0 all (a plain
    # forward, estimate's); 1 Hugging Face generate's prefill (tree.generate_logits_to_keep).
    logits_to_keep: int = 0
    # How a decode step appends to the KV cache (KV_CACHES): dynamic (torch.cat copies the cache,
    # Hugging Face's DynamicCache) or static (preallocated, written in place).
    kv_cache: str = spec.DEFAULT_KV_CACHE
    # A mixture of experts' routed load: one non-negative share per expert (normalised), the same
    # in every expert layer; None: balanced. It sets each expert's tokens and FLOPs, not the total.
    expert_load: tuple[float, ...] | None = None
    # Latent attention's form at inference (costmodel/blocks/mla.py LatentAttention): "naive", as
    # transformers runs it, or "absorbed", as inference engines do (vLLM's MLA backend).
    mla: str = spec.DEFAULT_MLA
    # Whose torch sdpa dispatch the tree follows where they differ: "cuda" (the GPUs estimates are
    # for) or "cpu" (the measurements here: validate). They differ for latent attention, whose value
    # heads are narrower than its query/key heads: the CPU runs sdpa's math path, CUDA its
    # memory-efficient kernel (tree.sdpa_runs_math).
    sdpa_device: str = "cuda"
    # The code that decodes (costmodel/decode_codes.py: spec.DECODE_CODES, simulate's --decode-code;
    # a serve scheduler's engine): the heads its KV cache holds and how its attention reads a
    # quantized one (Profile.decode_code), in the memory and the time alike.
    decode_code: str = spec.DEFAULT_DECODE_CODE

    def __post_init__(self) -> None:
        owner = "workload"
        spec.spell_fields(self)  # "BF16", "SDPA", "Full" as the command takes them
        check_int(owner, "seq_len", self.seq_len)
        check_int(owner, "batch", self.batch)
        if self.tgt_len is not None:
            check_int(owner, "tgt_len", self.tgt_len)
        check_int(owner, "gen_tokens", self.gen_tokens, minimum=0)
        check_dtype(owner, self.dtype)
        object.__setattr__(self, "dtype", CANONICAL_DTYPE[self.dtype])
        check_choice(owner, "impl", self.impl, IMPLEMENTATIONS)
        check_choice(owner, "attention", self.attention, ATTENTIONS)
        check_choice(owner, "recompute", self.recompute, RECOMPUTES)
        if self.recompute_layers is not None:
            check_int(owner, "recompute_layers", self.recompute_layers)
            if self.recompute != "full":
                raise ConfigError(f"{owner}: recompute_layers applies to recompute 'full' (Megatron's block "
                                  f"method), not {show(self.recompute)}.")
        check_choice(owner, "optimizer", self.optimizer, OPTIMIZERS)
        check_choice(owner, "precision", self.precision, PRECISIONS)
        check_choice(owner, "kv_cache", self.kv_cache, KV_CACHES)
        check_choice(owner, "sdpa_device", self.sdpa_device, ("cuda", "cpu"))
        self._check_inference_options(owner)

    def _check_inference_options(self, owner: str) -> None:
        """Quantized weights and cache, and the experts' load."""
        if self.weight_group is not None:
            check_int(owner, "weight_group", self.weight_group)
        check_bool(owner, "double_quant", self.double_quant)
        check_bool(owner, "quantize_head", self.quantize_head)
        if isinstance(self.weight_kept, list):  # a JSON list, frozen (hashable)
            object.__setattr__(self, "weight_kept", tuple(self.weight_kept))
        if not self.double_quant and self.weight_dtype != "nf4":
            raise ConfigError(f"{owner}: double_quant applies only to nf4 weights.")
        self.weight_format  # checks the format (one line per bad field)
        if self.weight_dtype_source not in (None, "checkpoint", "option"):
            raise ConfigError(f"{owner}: weight_dtype_source must be checkpoint, option or None, got "
                              f"{show(self.weight_dtype_source)}.")
        if self.kv_dtype is not None:
            check_choice(owner, "kv_dtype", self.kv_dtype, spec.KV_DTYPES)
        check_choice(owner, "mla", self.mla, MLA_FORMS)
        check_choice(owner, "decode_code", self.decode_code, decode_codes())
        if self.expert_load is not None:
            load = tuple(self.expert_load)
            if not load or any(isinstance(x, bool) or not isinstance(x, (int, float)) or x < 0
                               or x != x or x == float("inf") for x in load) or not sum(load) > 0:
                raise ConfigError(f"{owner}: expert_load must be non-negative numbers, one per "
                                  f"expert, not all zero; got {show(self.expert_load)}.")
            object.__setattr__(self, "expert_load", load)

    @property
    def weight_format(self) -> Any:
        """The quantization.WeightFormat of --weight-dtype, --weight-group, --double-quant and
        --fp8-gemm, --quantize-head and --quant-layout (None: unquantized weights)."""
        from .quantization import weight_format

        return weight_format(self.weight_dtype, self.weight_group, self.double_quant, self.fp8_gemm,
                             self.quantize_head, self.quant_layout, self.weight_kept, self.weight_bits)

    @property
    def bytes_per_element(self) -> int:
        return DTYPE_BYTES[self.dtype]

    @property
    def decoder_len(self) -> int:
        return self.seq_len if self.tgt_len is None else self.tgt_len

    def replace(self, **changes: Any) -> "Workload":
        return dataclasses.replace(self, **changes)

    def for_training(self, asked: bool = False) -> "Workload":
        """The workload a training path runs: weights the checkpoint's quantization_config chose
        for inference are held in the training dtype instead (an asked-for format stays, and the
        training paths refuse it as before). asked: an asked-for --weight-dtype and --kv-dtype too,
        for estimate's training figures beside its inference ones (its one-GPU tree sizes training
        in the training dtype whatever the inference formats; a layout's ranks the same)."""
        if self.weight_dtype_source != "checkpoint" and not (asked and (self.weight_dtype or self.kv_dtype)):
            return self
        formats = {"kv_dtype": None, "double_quant": True, "quantize_head": False,
                   "fp8_gemm": spec.DEFAULT_FP8_GEMM} if asked else {}
        return dataclasses.replace(self, weight_dtype=None, weight_group=None, weight_bits=None, weight_dtype_source=None,
                                   quant_layout=spec.DEFAULT_QUANT_LAYOUT, weight_kept=(), **formats)

    def options(self) -> dict[str, Any]:
        """The choices that shape the cost tree (everything but the sizes)."""
        options = {"dtype": self.dtype, "impl": self.impl, "attention": self.attention,
                   "recompute": self.recompute, "optimizer": self.optimizer,
                   **({"recompute_layers": self.recompute_layers} if self.recompute_layers is not None else {}),
                   "precision": self.precision}
        if self.weight_dtype is not None or self.kv_dtype is not None:
            options.update(weight_dtype=self.weight_dtype, weight_group=self.weight_group,
                           double_quant=self.double_quant, kv_dtype=self.kv_dtype)
        if self.fp8_gemm != spec.DEFAULT_FP8_GEMM:
            options["fp8_gemm"] = self.fp8_gemm
        if self.weight_bits is not None:
            options["weight_bits"] = self.weight_bits
        if self.quantize_head:
            options["quantize_head"] = True
        if self.quant_layout != spec.DEFAULT_QUANT_LAYOUT:
            options["quant_layout"] = self.quant_layout
        if self.weight_kept:
            options["weight_kept"] = list(self.weight_kept)
        if self.kv_cache != "dynamic":
            options["kv_cache"] = self.kv_cache
        if self.mla != "naive":  # (naive keeps the keys compiled before the option existed)
            options["mla"] = self.mla
        if self.logits_to_keep:
            options["logits_to_keep"] = self.logits_to_keep
        if self.sdpa_device != "cuda":  # (cuda keeps the keys compiled before the option existed)
            options["sdpa_device"] = self.sdpa_device
        return options

    def dimensions(self, cfg: Any) -> dict[str, int]:
        """The workload symbols' values for a model, by symbol name: n is the decoder (or only)
        side, s the encoder side, c the keys of the last decode step (n + T - 1: symbols.LAST_CONTEXT)."""
        if cfg.architecture == "encoder-decoder":
            n, s = self.decoder_len, self.seq_len
        else:
            n, s = self.seq_len, self.seq_len
        return {"b": self.batch, "n": n, "s": s, "T": self.gen_tokens, "c": n + self.fed_back_tokens(),
                "e": self.bytes_per_element}

    def check_expert_load(self, cfg: Any) -> None:
        """expert_load against the model's router: one share per routed expert, and none above 1 / top_k
        of the routed slots, since a token picks top_k distinct experts (Mixtral's torch.topk over the
        experts), so one expert receives each token at most once: `--expert-load 8,0,0,0,0,0,0,0` on
        Mixtral (top 2) gave expert 0 twice the batch's tokens, a routing no router can make."""
        load = self.expert_load
        if load is None:
            return
        if len(load) != cfg.n_experts:
            raise ConfigError(f"expert_load gives {len(load)} shares; model {show(cfg.name)} has {cfg.n_experts} "
                              "routed experts.")
        busiest = max(range(len(load)), key=lambda i: load[i])
        # a relative margin of 1e-9: typed decimals at the bound (0.5,0.1,0.1,0.1,0.1,0.1,0,0 on top 2) sum
        # a rounding below 1 in floats, and an exact bound is a routing a router can make
        if cfg.top_k > 1 and load[busiest] * cfg.top_k > sum(load) * (1 + 1e-9):
            raise ConfigError(f"expert_load: expert {busiest}'s share {load[busiest] / sum(load):.1%} of the routed "
                              f"slots is more than 1 / top_k = 1/{cfg.top_k}: each token of model {show(cfg.name)} "
                              f"goes to {cfg.top_k} different experts, so one expert gets each token at most once.")

    def check_fits(self, cfg: Any, holds_cache: bool = True) -> list[str]:
        """Raise ConfigError if the workload cannot run on the model; return warnings otherwise.
        holds_cache False: a training step only (finetune), which keeps no KV cache to warn of.

        Generated tokens extend the decoder (an encoder does not generate: they are ignored, with a
        warning). Longer than a learned
        position table is an error (there is no row for the position); longer than the context of
        any other encoding is a warning (it runs, maybe badly), and so is a sequence longer than a
        sliding window (what the implementation does with it is said). The reference
        implementation refuses the fields it does not build.
        """
        missing = reference_unsupported(cfg) if self.impl == "reference" else []
        if missing:
            raise ConfigError(f"the reference implementation does not build {', '.join(missing)} of model "
                              f"{show(cfg.name)}; use --impl hf.")
        missing = flash_attn_unsupported(cfg) if self.impl == "flash_attn" else []
        if missing:
            raise ConfigError(f"flash_attn's GPT (--impl flash_attn) builds no {', no '.join(missing)} (model "
                              f"{show(cfg.name)}); use --impl hf or megatron.")
        if cfg.architecture != "encoder-decoder" and self.tgt_len is not None:
            raise ConfigError(
                f"tgt_len applies only to encoder-decoder models; {cfg.name} is "
                f"{'an' if cfg.architecture[0] in 'aeiou' else 'a'} {cfg.architecture}."
            )
        if cfg.n_mixer_layers("rwkv_time") and self.batch > 1 and self.gen_tokens > 1:
            raise ConfigError(f"a cached decode step of model {show(cfg.name)} at batch {self.batch} is not modelled: "
                              "transformers' RwkvForCausalLM broadcasts each sequence's state against every sequence "
                              "(b x b rows a step); use batch 1 or gen_tokens <= 1.")
        if cfg.n_mixer_layers("rglru") and self.seq_len == 1:
            raise ConfigError(f"seq_len 1 runs model {show(cfg.name)}'s RG-LRU blocks through their decode branch "
                              "(a sum of products for the conv) in training and prefill, which is not modelled; "
                              "use seq_len >= 2.")
        warnings = []
        if self.gen_tokens and not cfg.n_decoder_layers:
            warnings.append(f"model {show(cfg.name)} is an encoder: it does not generate tokens, so "
                            f"the {self.gen_tokens} generated tokens asked for are ignored.")
        if self.kv_dtype is not None and not cfg.n_decoder_layers:
            warnings.append(f"model {show(cfg.name)} is an encoder: it keeps no KV cache, so the {self.kv_dtype} "
                            "KV cache asked for changes nothing.")
        attends = states_context(cfg)  # a pure Mamba-2 stack has no context, nor RecurrentGemma
        for side, length in self.lengths(cfg).items():
            if length <= cfg.max_positions or not attends:
                continue
            if cfg.position == "learned":
                raise ConfigError(
                    f"{side} length {length} exceeds the {cfg.max_positions} learned positions of "
                    f"model {show(cfg.name)}."
                )
            warnings.append(f"{side} length {length} is beyond the context of model "
                            f"{show(cfg.name)} ({cfg.max_positions} tokens).")
        decoder = self.decoder_len + self.gen_tokens
        if cfg.sliding_window is not None and cfg.n_decoder_layers and decoder > cfg.sliding_window:
            window = (f"model {show(cfg.name)} attends in chunks of {cfg.sliding_window:,} tokens (a query sees "
                      "its own chunk's keys up to itself)" if cfg.chunked_window else
                      f"model {show(cfg.name)} attends within a sliding window of {cfg.sliding_window:,} tokens")
            if cfg.n_window_layers < cfg.n_decoder_layers:
                window += f" on {cfg.n_window_layers} of its {cfg.n_decoder_layers} layers"
            if self.impl == "reference":
                warnings.append(f"{window}; the reference implementation has no window: attention and "
                                f"the KV cache are counted over all {decoder:,} tokens.")
            elif not facts_for(self.impl, cfg.family).applies_sliding_window:  # GPT-Neo's mask
                warnings.append(f"{window}, applied as a mask: every score is computed and Hugging "
                                f"Face's cache keeps all {decoder:,} tokens.")
            else:
                scores = ("flash attention skips the scores outside the window (its kernel time counts "
                          "the window's blocks; the FLOP counts keep every score, as the model FLOPs do)"
                          if self.attention == "flash" else
                          f"{self.attention} attention still computes every score (a masked full matrix)")
                cache = (f", and Hugging Face's cache holds the whole prompt after the prefill and "
                         f"{cfg.sliding_window:,} tokens once decoding begins (see the KV cache line)"
                         if holds_cache else "")
                warnings.append(f"{window}: {scores}{cache}.")
        if cfg.n_mixer_layers("deltanet"):
            gate = " and of the attention's output gate" if cfg.attention_output_gate else ""
            warnings.append(f"model {show(cfg.name)} has {cfg.n_mixer_layers('deltanet')} Gated DeltaNet layers: "
                            "parameters, matmul FLOPs and the cache are proven against transformers' class; "
                            f"activations (saved bytes) of these mixers{gate} are "
                            "not measured (counted as 0), nor the other FLOPs besides their matmuls "
                            "(blocks/deltanet.py).")
        if cfg.hyper_streams:
            warnings.append(f"model {show(cfg.name)} is DeepSeek-V4: parameters, matmul FLOPs (forward, backward, decode), "
                            "the KV cache and the bytes saved for backward (eager, fp32 and bf16) are proven against "
                            "transformers' class; of the other FLOPs, validate's softmax, silu and relu elements are exact, the norms' and "
                            "Sinkhorn's stated, not measured (blocks/deepseek_v4.py); its MTP layer is not built.")
        if cfg.altup_inputs:
            warnings.append(f"model {show(cfg.name)} is Gemma 3n: parameters, matmul FLOPs, the KV cache and the bytes "
                            "saved for backward are proven against transformers' class, except on layers where "
                            "activation_sparsity_pattern is above 0 (the checkpoints' first 10): there the activations "
                            "leave out what its Gaussian top-k keeps, the FFN gate's output and its standard deviation "
                            "(b n (d_ff + 1) elements a layer).")
        if cfg.n_mixer_layers("mamba"):
            warnings.append(f"model {show(cfg.name)} has {cfg.n_mixer_layers('mamba')} Mamba-2 layers: "
                            f"other FLOPs leave out what the Mamba-2 mixers run besides their matmuls "
                            f"(the scan's exp and cumsum, softplus, the gated norm); parameters, matmul "
                            f"FLOPs and the cache are proven against transformers' class, and (impl hf) "
                            f"activations "
                            + ("too (other FLOPs leave out Falcon-H1's MuP multipliers, pointwise ops by "
                               "Python numbers that keep nothing)." if cfg.parallel_attention else
                               "too (dense layer patterns; its MoE layers' saved bytes are not measured)."
                               if cfg.moe else "too" + (
                                   " where residual_in_fp32 is off or in fp32 (Mamba2Config's default "
                                   "fp32 residual stream leaves the final norm an fp32 input, 2 b n d "
                                   "bytes more in bf16, not counted)." if cfg.family == "mamba2" else ".")))
        if cfg.n_mixer_layers("shared"):  # costmodel/shared_block.py
            warnings.append(f"model {show(cfg.name)} runs {cfg.shared_blocks} shared attention-and-MLP block(s) at "
                            f"{cfg.n_mixer_layers('shared')} layers: parameters, weights, gradients and optimizer state count "
                            "each block once, FLOPs, activations and the KV cache each use (each use caches its own "
                            "keys and values); proven against transformers' class.")
        for mixer, note in _MIXER_NOTES.items():
            if cfg.n_mixer_layers(mixer):
                warnings.append(f"model {show(cfg.name)} has {cfg.n_mixer_layers(mixer)} {note}")
        if cfg.zero_experts:  # blocks/base.py Profile.zero_experts_held
            warnings.append(f"model {show(cfg.name)}: parameters and weights are transformers' class's, whose "
                            f"experts allocate gate_up rows for the {cfg.zero_experts} zero-compute experts too "
                            "(never run); vLLM's loader holds the routed experts alone (the checkpoint's weights), "
                            "as serve's vllm, sarathi, orca and trtllm schedulers size a replica.")
        if cfg.n_experts and self.impl != "reference" and facts_for(self.impl, cfg.family).experts_every_token:
            warnings.append(f"model {show(cfg.name)} as transformers' code runs it (impl {self.impl}) sends "
                            f"every token through all {cfg.n_experts} routed experts, each scaled by its "
                            f"router score, so FLOPs and activations count all {cfg.n_experts}; engines and "
                            f"frameworks run each token's top {cfg.top_k} only (serve's vllm, sarathi and "
                            f"orca schedulers, plan, --impl megatron).")
        return warnings

    def lengths(self, cfg: Any) -> dict[str, int]:
        """The positions each side uses: "sequence" for a decoder or an encoder (with the
        generated tokens fed back), "source" and "target" for an encoder-decoder (the generated
        tokens fed back extend the target)."""
        if cfg.architecture == "encoder-decoder":
            return {"source": self.seq_len, "target": self.decoder_len + self.fed_back_tokens()}
        fed = self.fed_back_tokens() if cfg.n_decoder_layers else 0  # an encoder generates nothing
        return {"sequence": self.seq_len + fed}

    def fed_back_tokens(self) -> int:
        """The generated tokens that take a position: the last one is returned, never fed back
        (transformers' generate with max_new_tokens=T runs the prompt and T - 1 one-token steps,
        so a 1024-token prompt and one new token fit GPT-2's 1024 positions; checked on a tiny
        GPT-2, tests/test_smoke16_defects.py)."""
        return max(self.gen_tokens - 1, 0)
