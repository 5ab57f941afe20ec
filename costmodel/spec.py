"""The one set of choices and defaults: every list of accepted values and every default a command,
the library or a check reads, each value with what it means.

Commands build their options, help and validation from these (cli/options.py, reports/commands.py,
reports/serving.py); the library's dataclasses check against them (config.py, workload.py,
layout/, serving/). A list is a Choices: a tuple of the values, so `value in ATTENTIONS` and
click.Choice(ATTENTIONS) work as before, that also carries each value's meaning for help text.
Nothing here imports the rest of costmodel.
"""

from __future__ import annotations

from typing import Any


class Choices(tuple):
    """Accepted values in order, each with what it means (an empty meaning: the name says it)."""

    meanings: dict[str, str]

    def __new__(cls, meanings: dict[str, str]) -> "Choices":
        choices = super().__new__(cls, meanings)
        choices.meanings = dict(meanings)
        return choices

    def __reduce__(self):  # pickled with its meanings (worker processes of plan --serve --rate)
        return Choices, (self.meanings,)

    def spelled(self, value: Any) -> Any:
        """value in this list's own spelling where it differs only in case ("BF16": "bf16"), as the command's
        click.Choice(case_sensitive=False) takes it; anything else unchanged, for its owner to refuse."""
        if isinstance(value, str) and value not in self:
            return next((choice for choice in self if choice.casefold() == value.casefold()), value)
        return value

    def listed(self, values: tuple[str, ...] | None = None, first: str | None = None) -> str:
        """The values as a phrase: "a, b or c" (first, if given, leads: the default)."""
        values = tuple(self if values is None else values)
        values = tuple(sorted(values, key=lambda value: value != first)) if first else values
        return values[0] if len(values) == 1 else f"{', '.join(values[:-1])} or {values[-1]}"

    def phrase(self) -> str:
        """The values with their meanings in brackets: "a, b (what b is) or c (what c is)"."""
        return self.listed(tuple(f"{v} ({m})" if m else v for v, m in self.meanings.items()))

    def described(self, sep: str = "; ") -> str:
        """Each value and its meaning: "a: what a is; b: what b is"."""
        return sep.join(f"{v}: {m}" if m else v for v, m in self.meanings.items())


# ---------------------------------------------------------------------------------------------
# dtypes

#: Bytes per element of each dtype, under every spelling the commands accept.
DTYPE_BYTES = {"fp32": 4, "float32": 4, "fp16": 2, "float16": 2, "bf16": 2, "bfloat16": 2}
DTYPES = Choices({name: "" for name in DTYPE_BYTES})  # every accepted spelling: the one --dtype choice
CANONICAL_DTYPE = {"fp32": "fp32", "float32": "fp32", "fp16": "fp16", "float16": "fp16",
                   "bf16": "bf16", "bfloat16": "bf16"}
#: --weight-dtype: quantized weights (costmodel/quantization.py has each format's bits and groups).
WEIGHT_DTYPES = Choices({"int8": "LLM.int8", "int4": "GPTQ/AWQ", "fp8": "", "nf4": "bitsandbytes",
                         "mxfp4": "routed experts only, gpt-oss",
                         "exl2": "ExLlamaV2's, at --weight-bits a weight, the head too"})
#: --weight-dtype's choices: a format, or none (unquantized, in --dtype). Left out, an inference path
#: takes the format the checkpoint's quantization_config names (costmodel/checkpoint.py).
UNQUANTIZED = "none"
WEIGHT_DTYPE_CHOICES = Choices({**WEIGHT_DTYPES.meanings, UNQUANTIZED: "unquantized, in --dtype"})
WEIGHT_DTYPE_DEFAULT = ("Default: the format the checkpoint's quantization_config names (gpt-oss: mxfp4, "
                        "DeepSeek-V3: fp8 in 128 x 128 blocks), else none.")
#: --fp8-gemm: how a GEMM on --weight-dtype fp8 weights multiplies (costmodel/quantization.py
#: w8a8 has the rule and its sources).
FP8_GEMMS = Choices({
    "auto": "w8a8 where the hardware file has an FP8 peak (vLLM's rule: compute capability >= 8.9), "
            "w8a16 where it has none (Turing, Ampere; Volta and CDNA 2 run neither: refused)",
    "w8a8": "weights and activations in FP8 at the FP8 peak, each input quantized per tensor first "
            "(vLLM's fp8 on Hopper/Ada: cutlass scaled_mm; TensorRT-LLM's FP8)",
    "w8a16": "weight-only: the weights dequantized in the kernel, the product at the data dtype's peak "
             "(vLLM's FP8 Marlin on Turing and Ampere)",
})
DEFAULT_FP8_GEMM = "auto"
#: --quant-layout: how an int8 or int4 weight's scales, zeros and padding are stored (costmodel/
#: quantization.py QUANT_LAYOUTS has each layout's bytes and its source).
QUANT_LAYOUTS = Choices({
    "gptq": "GPTQ/AWQ int4 (an fp16 scale and a packed 4-bit zero per group), LLM.int8 (an fp32 scale per row)",
    "gpt-fast": "gpt-fast's int4 (tinygemm: a bf16 scale and zero per group, K padded to 1024 only where "
                "tinygemm needs it) and int8 (a bf16 scale per row)",
    "torchao": "torchao's int4_weight_only (tinygemm: a bf16 scale and zero per group, K always padded to a "
               "multiple of 1024, N to 8) and int8_weight_only (a bf16 scale per row)",
    "awq-gemm": "AutoAWQ's GEMM version (GPTQ's bytes; its kernel reads the weight once every 16 rows)",
    "awq-gemv": "AutoAWQ's GEMV version (GPTQ's bytes; its kernel reads the weight once a row, to 8 rows)",
    "compressed-tensors": "compressed-tensors' symmetric pack-quantized int4/int8 (RedHatAI's W4A16: a bf16 scale "
                          "per group, no zero), per-channel int8 (an fp32 scale per row)",
    "gptq-exllama": "AutoGPTQ 0.4's exllama kernel (GPTQ's bytes; the weight read once a row below 8 rows, "
                    "from 8 dequantized into an fp16 copy for cuBLAS)",
    "gptq-cuda-old": "AutoGPTQ 0.4's cuda-old kernel (GPTQ's bytes; the weight read once a row to 127 rows, "
                     "from 128 dequantized into an fp16 copy by torch)",
    "deepspeed": "DeepSpeed-Inference 0.7's int8 (32 groups of fp32 scales a matrix), dequantized into an "
                 "fp16 copy in memory before each cuBLAS GEMM (costmodel/quantized_matmul.py)",
    "vllm-rtn-torch": "vLLM's RTN before PR #26051 (int8 or int4, a bf16 scale a group, no zero), dequantized "
                      "into a bf16 copy by torch ops before each F.linear",
})
DEFAULT_QUANT_LAYOUT = "gptq"
#: --kv-dtype: one byte per cached element, plus two fp32 scales per layer (blocks.kv_cache_bytes).
KV_DTYPES = Choices({"fp8": "", "int8": ""})
KV_DTYPE_BYTES = {"fp8": 1, "int8": 1}  # bytes an element (blocks.attention.kv_element_bytes)
#: The adapters' dtype of a LoRA fine-tune.
ADAPTER_DTYPES = Choices({"fp32": "", "bf16": "", "fp16": ""})

# ---------------------------------------------------------------------------------------------
# the workload: whose code, which kernels, what is kept

IMPLEMENTATIONS = Choices({
    "reference": "validate/reference.py's model",
    "hf": "Hugging Face's classes, the code the activation profile was measured on",
    "megatron": "Megatron-LM's layers: Korthikanti et al. 2022's accounting, a fused SwiGLU",
    "flash_attn": "Dao-AILab/flash-attention's GPT (flash_attn.models.gpt at 30fd8c17, as its training configs run "
                  "it): biases and GeLU in the GEMMs' epilogues, dropout, residual add and LayerNorm in one kernel "
                  "over an fp32 residual, its fused cross-entropy",
})
ATTENTIONS = Choices({"eager": "an n x n score matrix", "sdpa": "torch's fused kernel",
                      "flash": "flash attention"})
#: The attention a measurement runs (validate): the kernels torch's FlopCounterMode sees.
MEASURED_ATTENTIONS = Choices({"eager": "", "sdpa": ""})
RECOMPUTES = Choices({"none": "", "selective": "the attention core", "full": "each layer",
                      "deepseek": "every norm and latent attention's up-projections",
                      "torchtitan-op": "torchtitan's op policy: the attention kernel and every second (odd-numbered) matmul kept, the rest rerun",
                      "jax-dots": "JAX's dots_saveable (Praxis SAVE_DOT_ONLY): every linear's output kept, the rest "
                                  "(norms, activations, dropout, the fused attention kernel) rerun",
                      "jax-qkv": "JAX's save_only_these_names of MaxText's save_qkv_proj: the q, k, v projections "
                                 "kept, the rest of each layer rerun",
                      "jax-qkv-out": "Praxis SAVE_QKV_OUT_PROJ (MaxText save_dot_except_mlp): the q, k, v and "
                                     "output projections kept, the rest of each layer rerun",
                      "layernorm-moe-act": "Megatron-Core's recompute_modules layernorm and moe_act: the norm before "
                                           "the routed experts and their activation",
                      "layernorm-moe": "Megatron-Core's recompute_modules layernorm and moe: the norm before the "
                                       "routed experts and the whole MoE layer (router, dispatch, experts, combine)",
                      "layernorm-moe-core-attn": "Megatron-Core's recompute_modules layernorm, moe and core_attn: "
                                                 "layernorm-moe and the attention core (as selective)",
                      "mla-up-proj": "Megatron-Core's recompute_modules mla_up_proj: latent attention's "
                                     "up-projections with their norms"})
#: What each recomputation reruns in backward, by what the blocks ask for (costmodel/blocks):
#: "norms" every Norm (and latent attention's own norms), "up_projections" latent attention's
#: up-projections and the RoPE applied to their output. "deepseek" is DeepSeek-V3's (technical report,
#: arXiv 2412.19437, section 3.2.3: "we recompute all RMSNorm operations and MLA up-projections
#: during back-propagation"), as Megatron-LM runs it (--recompute-modules layernorm mla_up_proj:
#: output-discarding checkpoints, megatron/core/transformer/transformer_config.py recompute_modules).
#: selective and full are the kernel's and the layer's (costmodel/kernels.py, costmodel/leaves.py).
#: "up_projections" reruns latent attention's own norms with them (LatentAttention.saved keeps the latents
#: before their norms): in Transformer Engine's layer they are fused into linear_q_up_proj and
#: linear_kv_up_proj, inside Megatron-Core's up-projection checkpoint (NVIDIA/Megatron-LM 44151194,
#: multi_latent_attention.py qkv_up_proj_and_rope_apply under CheckpointWithoutOutput when "mla_up_proj"
#: is in recompute_modules). "mla-up-proj" is that module alone, as Megatron-Bridge's DeepSeek-V3
#: recipes set it on GB200 and B200 (scripts/performance/configs/deepseek/deepseek_workload_base_configs.py
#: at 97ad8cc6f; scripts/performance/run_script.py at v0.1.0rc4 for the token-drop runs): the layer's
#: norms are not rerun.
#: "torchtitan-op" is torchtitan's selective op checkpointing (selective_ac_option = 'op'), a policy
#: over a layer's ops in the order they run: costmodel/op_checkpoint.py. "jax-dots", "jax-qkv" and
#: "jax-qkv-out" are JAX's remat policies as Praxis and MaxText name them (costmodel/jax_remat.py),
#: applied by the same module: OP_POLICIES.
#: "layernorm-moe-act" is Megatron-Core's recompute_granularity 'selective' with recompute_modules
#: ['layernorm', 'moe_act'] (Megatron-Bridge's GPT-OSS 120B recipes, scripts/performance/configs/gpt_oss/
#: at 21d102f5e and every tag v0.2.0-v0.5.0) in Transformer Engine's layer (NVIDIA/Megatron-LM 44151194,
#: megatron/core/models/gpt/gpt_layer_specs.py: input_layernorm is IdentityOp, fused into linear_qkv,
#: pre_mlp_layernorm a TENorm only before experts; transformer_layer.py 437-494 recomputes the norms
#: that are not IdentityOp; moe/experts.py 707-718 TEGroupedMLP runs the activation under
#: CheckpointWithoutOutput and discards its output once linear_fc2 has it): "moe_norms" the norm
#: before the routed experts, "moe_act" the experts' gated activation (Experts.recomputed_part).
#: "layernorm-moe" is recompute_modules ['layernorm', 'moe'] (the model zoo's long-context Qwen3 235B
#: command): MoELayer.forward runs its whole custom_forward (route, dispatch, experts, combine) under
#: tensor_parallel.checkpoint when "moe" is in recompute_modules (moe_layer_recompute,
#: megatron/core/transformer/moe/moe_layer.py lines 247-249 and 701-716 at d98e8a64dd), which keeps
#: only its input, the norm's output that layernorm's CheckpointWithoutOutput frees: "moe_layer"
#: the router and the routed experts, their forward again in backward and nothing of theirs kept,
#: their dispatch and combine run again (layout/communication.py _expert_exchanges). The
#: custom_forward it checkpoints also runs the shared experts (shared_experts_compute) and a latent
#: MoE's fc1_latent_proj and fc2_latent_proj (preprocess, postprocess): those rerun too and keep
#: nothing (FeedForward.recomputed, LatentProjection.recomputed).
#: "layernorm-moe-core-attn" is recompute_modules ['layernorm', 'moe_act', 'moe', 'core_attn'] (Megatron-
#: Bridge's Nemotron 3 Super H100 recipe; moe_act's checkpoint runs inside moe's, so it adds nothing)
#: or ['moe', 'layernorm', 'core_attn'] (its Nemotron 3.5 Lightning H100 recipe): "moe_layer" as above and
#: "core_attn", the attention core under its own checkpoint (megatron/core/transformer/attention.py
#: checkpoint_core_attention: recompute_granularity 'selective' with "core_attn" in recompute_modules),
#: the kernel selective recomputation chooses (Profile.kernel).
#: The layer-kind label of the layers recomputed under full recomputation of N layers
#: (Workload.recompute_layers; layer_kinds.py, layout/rank.py).
RECOMPUTED_LAYERS = "recomputed"
#: The recomputations that keep a layer's ops by a policy over them (costmodel/op_checkpoint.py POLICIES).
OP_POLICIES = ("torchtitan-op", "jax-dots", "jax-qkv", "jax-qkv-out")
RECOMPUTED_PARTS = {"none": frozenset(), "selective": frozenset(), "full": frozenset(),
                    "deepseek": frozenset({"norms", "up_projections"}), "torchtitan-op": frozenset(),
                    "jax-dots": frozenset(), "jax-qkv": frozenset(), "jax-qkv-out": frozenset(),
                    "layernorm-moe-act": frozenset({"moe_norms", "moe_act"}),
                    "layernorm-moe": frozenset({"moe_norms", "moe_layer"}),
                    "layernorm-moe-core-attn": frozenset({"moe_norms", "moe_layer", "core_attn"}),
                    "mla-up-proj": frozenset({"up_projections"})}
OPTIMIZERS = Choices({"adamw": "two moments", "sgd": "none"})
PRECISIONS = Choices({  # costmodel/precision.py
    "mixed": "--dtype weights and gradients, fp32 master weights and moments (2 + 2 + 12 bytes a "
             "parameter with AdamW)",
    "pure": "everything in --dtype, as torch.optim on a model built in it",
    "megatron": "fp32 gradients too (2 + 4 + 12)",
    "fsdp2": "fp32 sharded weights and gradients, fp32 moments (4 + 4 + 8)",
})
KV_CACHES = Choices({
    "dynamic": "each decode step copies the cache to append (torch.cat, Hugging Face's default)",
    "static": "a preallocated cache written in place",
})
MLA_FORMS = Choices({  # latent attention at inference (costmodel/blocks/mla.py LatentAttention)
    "naive": "every cached latent up-projected each step, as transformers runs it",
    "absorbed": "W_UK/W_UV folded into queries and output, as vLLM runs it",
})


def mla_not_applicable(cfg: Any) -> str | None:
    """Why --mla means nothing for this model (no latent attention: no kv_lora_rank), or None."""
    if getattr(cfg, "kv_lora_rank", None) is not None:
        return None
    return (f"{cfg.name} has no latent attention (its config has no kv_lora_rank), so there is no form "
            "to choose; the option is for DeepSeek-V2/V3-style models.")


#: The code that decodes (simulate's eager host term: kernel_facts.json "eager_step_ops").
DECODE_CODES = Choices({
    "transformers": "Hugging Face generate",
    "transformers-4.31": "Hugging Face generate under transformers 4.31.0 (Llama's eager layer gathers the cached rotary tables)",
    "transformers-4.32": "Hugging Face generate under transformers 4.32.1 (as 4.31, the GPTQ integration's first release)",
    "transformers-4.34": "Hugging Face generate under transformers 4.34.1 (Llama eager, before sdpa)",
    "transformers-4.36": "Hugging Face generate under transformers 4.36.2 (Llama's first sdpa path)",
    "transformers-4.39": "Hugging Face generate under transformers 4.39.3 (Llama's rotary tables computed in every layer)",
    "transformers-4.46": "Hugging Face generate under transformers 4.46.0 (Qwen2's FlashAttention2 repeats the cached K/V heads)",
    "transformers-4.51": "Hugging Face generate under transformers 4.51.3 (Qwen3-MoE's block loops over every expert)",
    "gpt-fast": "gpt-fast's Transformer and generate loop (as torchao's benchmarks run it)",
    "gpt-fast-mixtral": "gpt-fast's mixtral-moe model (its ops not counted)",
    "tensorrt-llm": "TensorRT-LLM's engine (its ops not counted): one QKV GEMM, the KV heads cached, a quantized "
                    "cache read as stored by its attention plugin",
    "autoawq-fused": "AutoAWQ's fused modules at 34085ed (PR #320's merge; fuse_layers=True): TensorRT-LLM's cache "
                     "and kernels' code (decode_codes.json base), its host calls counted (AWQ GEMM and GEMV int4)",
    "autoawq-fused-0.1.6": "AutoAWQ 0.1.6's fused modules (5c7e368), as autoawq-fused with its own count",
    "autoawq-fused-d6ac3be": "AutoAWQ's fused MPT and Falcon-7B models at d6ac3be (October 2023): as autoawq-fused, "
                             "their own blocks' host calls counted (AWQ GEMM and GEMV int4)",
    "exllama-v1": "ExLlama v1's model.py at b65d774 (turboderp/exllama, June 2023): its CUDA extension's fused "
                  "attention and MLP calls over TensorRT-LLM's cache and kernels' code (q, k and v three GEMMs), its host "
                  "calls counted (GPTQ int4)",
    "tinychat-llama": "TinyChat's W4A16 Llama at b76fab6 (mit-han-lab/llm-awq tinychat/): AWQ's GEMV and FasterTransformer's "
                      "masked attention over TensorRT-LLM's cache and kernels' code (q, k and v one GEMM), its host calls "
                      "counted (int4)",
    "tinychat-mpt-falcon": "TinyChat's own W4A16 MPT and Falcon-7B at b76fab6: their fused attention over TensorRT-LLM's cache "
                           "and kernels' code (one QKV GEMM), their host calls counted (int4)",
    "lit-gpt-d16f924d": "lit-gpt's generate/base.py at d16f924d (July 2023): its attention reads the GPU in every layer "
                        "(the cache's roll check), one window a layer",
    "lit-gpt-982abcbc": "lit-gpt's generate/base.py at 982abcbc (October 2023, after #507): no read inside the forward",
})
DEFAULT_DECODE_CODE = "transformers"
FLOPS_CONVENTIONS = Choices({
    "dense": "PaLM's 6N + 12LHQT, every attention pair",
    "causal": "Megatron's, half the causal attention core",
})

DEFAULT_SEQ_LEN = 2048  # or the model's context where that is shorter (costmodel/api.py)
# An encoder-decoder's generation starts its decoder from one token, decoder_start_token_id (transformers'
# generate): the decoder prompt simulate times (roofline.simulate_inference) and checks against the context.
DECODER_START_PROMPT = 1
DEFAULT_DTYPE = "bf16"
DEFAULT_IMPL = "hf"
DEFAULT_ATTENTION = "eager"
DEFAULT_RECOMPUTE = "none"
DEFAULT_OPTIMIZER = "adamw"
DEFAULT_PRECISION = "mixed"
DEFAULT_KV_CACHE = "dynamic"
# Generated (output) tokens a request decodes when none are given: simulate --gen, plan --serve --gen,
# serve --output (one default: plan --serve said 256 where serve and simulate said 128).
DEFAULT_GEN_TOKENS = 128
DEFAULT_MLA = "naive"

# ---------------------------------------------------------------------------------------------
# hardware and time

DEFAULT_HARDWARE = "h100-sxm"
#: The time models (docs/time.md, "Which time model"). DEFAULT_TIME_MODEL is every command's and
#: every library function's default (simulate, simulate with a layout, plan, plan --serve), as
#: hardware.time_model_for resolves it: the kernel-level model, better on the published runs.
TIME_MODELS = Choices({
    "roofline": "each block's two kernels at the efficiencies",
    "kernels": "GEMM tiles and waves, flash attention's executed FLOPs",
})
DEFAULT_TIME_MODEL = "kernels"
#: Where a hardware file is measured (hardware --out) and where a layout's ranks run.
DEVICES = Choices({"cuda": "", "cpu": ""})
RANK_BY = Choices({"time": "step time (time per output token with --serve)",
                   "cost": "GPU-seconds per token, which differs where the GPU counts do"})

# ---------------------------------------------------------------------------------------------
# layouts

#: Whose conventions set the bytes per parameter, sharding and collectives (layout/frameworks.py).
FRAMEWORK_NAMES = Choices({"megatron": "Megatron-LM", "deepspeed": "DeepSpeed", "fsdp2": "torch's FSDP2"})
SCHEDULES = Choices({"gpipe": "", "1f1b": "", "interleaved": "", "zb-h1": "", "zbv": "", "dualpipev": ""})
CP_ROTATES = Choices({"allgather": "torch's", "ring": "",  # how context parallelism moves keys and values
                     "a2a": "head-parallel all-to-alls: DeepSpeed-Ulysses, Megatron's cp_comm_type a2a"})
#: Rotations a user may reach for that are not modelled, each with why (the option's and the layout's refusal).
CP_ROTATE_HINTS = {"a2a+p2p": "Megatron-Core's hierarchical cp_comm_type 'a2a+p2p' (all-to-alls inside "
                   "hierarchical_context_parallel_sizes' inner groups, Transformer Engine's p2p ring across them) is "
                   "not modelled: the layout has no inner group size; use a2a or ring"}
#: Which key/value heads context parallelism moves: what the attention kernel receives (layout/context.py).
CP_KV_HEADS = Choices({"kv": "the model's key/value heads, as Transformer Engine sends them",
                       "repeated": "every query head's: the model repeats K and V before sdpa, as torchtitan's Llama"})
#: How expert parallelism moves tokens (costmodel/layout/experts.py): each routed slot's copy by
#: all-to-all, or Megatron-Core's flex dispatcher, a token once per target node and rank.
EP_DISPATCHERS = Choices({
    "alltoall": "one copy of a token per routed slot whose expert is on another rank (NCCL all-to-all: torchtitan's, Megatron-Core's alltoall dispatcher)",
    "deepep": "Megatron-Core's flex dispatcher on DeepEP's kernels: a token once over the inter-node link to each other node its experts are on, then once over NVLink to each rank there",
    "hybridep": "the flex dispatcher on NVIDIA's HybridEP kernels, the same bytes as deepep (the NVLink domain as the node)",
})
#: Megatron-Core's DistributedDataParallelConfig.grad_reduce_in_fp32 (costmodel/layout/frameworks.py).
GRAD_REDUCE_DTYPES = Choices({
    "fp32": "grad_reduce_in_fp32 True: fp32 main_grad buffers and data-parallel gradient collectives (Megatron-LM's default with --bf16)",
    "bf16": "grad_reduce_in_fp32 False (--grad-reduce-in-bf16): bf16 main_grad buffers and collectives, each updated parameter's gradient cast to fp32 at the step",
})
#: Whose ZeRO-1 optimizer a --zero 1 layout runs: how it reduces the gradients and gathers the
#: parameters (costmodel/layout/zero_optimizer.py).
ZERO_OPTIMIZERS = Choices({
    "flat": "the gradient reduce-scattered into each rank's shard of a flat buffer, the updated shards all-gathered in one call (Megatron-Core's distributed optimizer, DeepSpeed ZeRO-1)",
    "nanotron": "nanotron's ZeroDistributedOptimizer: the whole fp32 gradient all-reduced (reduce_scatter=False), each rank stepping its slice of every parameter, the slices all-gathered and copied back one parameter and rank at a time from Python",
    "internlm": "InternLM's HybridZeroOptimizer: the gradient all-reduced in 512 Mi-element buckets, whole tensors assigned to ranks, each rank holding any broadcasting its parameters after the step (one call a rank)",
})
#: Whose code runs the optimizer step (costmodel/layout/torch_optimizer.py, megatron_step.py): one fused pass
#: over the updated copies (the default), torch's AdamW and clip_grad_norm_ as torchtitan calls them on FSDP2,
#: or Megatron-LM's step with its gradient-buffer passes.
OPTIMIZER_STEPS = Choices({
    "fused": "one fused pass over each updated parameter's copies: read the parameter, gradient and moments, write the parameter and moments",
    "torch-foreach": "torch.optim.AdamW(foreach=True) (decoupled weight decay) and torch.nn.utils.clip_grad_norm_(foreach=True) over the fp32 shard, each op a pass (torchtitan before February 2025)",
    "torch-fused": "torch.optim.AdamW(fused=True) and torch.nn.utils.clip_grad_norm_(foreach=True) over the fp32 shard (torchtitan's default since February 2025)",
    "megatron-lm": "Megatron-LM's train_step at its defaults (--framework megatron, --zero 0 or 1): the fused pass, the clipping's norm of the updated fp32 gradients, and each step over the rank's whole gradient buffer zero_grad_buffer's zero, the NaN check's norm and the scale by 1 / dp (Megatron-Core r0.6-r0.8)",
})
#: The Megatron-Core releases whose step optimizer_step "megatron-lm" runs (Layout.megatron_release), the default
#: first, each meaning its cited line: the data is costmodel/megatron_releases.json's (layout/megatron_step.py).
def _megatron_releases() -> Choices:
    import json
    from pathlib import Path

    facts = json.loads((Path(__file__).resolve().parent / "megatron_releases.json").read_text())
    names = sorted(facts["releases"], key=lambda name: name != facts["default"])
    return Choices({name: facts["releases"][name]["source"] for name in names})


MEGATRON_RELEASES = _megatron_releases()
#: Megatron-Core's OptimizerConfig.use_precision_aware_optimizer under the dtypes a recipe sets
#: (costmodel/layout/frameworks.py PRECISION_AWARE_OPTIMIZERS has each one's bytes and sources).
PRECISION_AWARE_OPTIMIZERS = Choices({
    "fp32": "fp32 master weights (kept by Megatron-Core where an FP8 recipe other than delayed is configured, as Megatron-Bridge's BF16 runs carry tensorwise) and the moments the run keeps without it (fp32; an FP8 recipe's own, e.g. blockwise's bf16): the bytes of the optimizer without it",
    "bf16-moments": "exp_avg and exp_avg_sq in bf16 (DeepSeek-V3's Megatron-Bridge recipe), the fp32 master weights kept by Megatron-Core: 4 + 2 + 2 bytes a parameter updated",
    "te-master": "Transformer Engine's FusedAdam keeps the master weights as 16-bit remainders of the bf16 weights and reads the reduced gradient without a cast (fp8_recipe None or delayed, Megatron-LM's default): 2 + 4 + 4 bytes",
})
#: Which code runs an all-reduce inside a node (costmodel/collectives.py; data in nccl_facts.json).
ALL_REDUCES = Choices({
    "nccl": "NCCL's, at its measured bus bandwidth",
    "intra-node": "PyTorch's IntraNodeComm one-shot/two-shot kernels (ENABLE_INTRA_NODE_COMM=1) for bf16 tensors up to 10 MiB, NCCL above and for other dtypes",
    "vllm-custom": "vLLM's custom all-reduce (2, 4, 6 or 8 GPUs joined by NVLink, calls up to 8 MiB), NCCL otherwise",
    "trtllm-custom": "TensorRT-LLM's own all-reduce plugin kernel (2, 4, 6 or 8 GPUs joined by NVLink, calls up to its 8 MB workspace, 16 MB at 2 GPUs), NCCL otherwise",
})
FP8_RECIPES = Choices({  # layout/fp8.py has each recipe's scales and sources
    "tensorwise": "torchao's, one scale per tensor",
    "rowwise": "torchao's, one scale per row",
    "current": "Transformer Engine's Float8CurrentScaling, one scale per tensor",
    "delayed": "Transformer Engine's DelayedScaling, one scale per tensor from an amax history",
    "blockwise": "DeepSeek-V3's 1 x 128 and 128 x 128 blocks",
    "mxfp8": "Transformer Engine's MXFP8BlockScaling, 1 x 32 blocks (Blackwell); torchao's MXLinear under --framework fsdp2 (torchtitan)",
    "nvfp4": "Transformer Engine's NVFP4BlockScaling, FP4 in 1 x 16 blocks (Blackwell)",
})
#: Where the training script opens Transformer Engine's fp8_autocast, for --fp8 delayed outside
#: Megatron-Core (which opens one a model chunk itself); layout/fp8_options.py has each one's source.
FP8_AUTOCASTS = Choices({
    "forward-and-loss": "Composer's Trainer (llm-foundry): one autocast around the model's forward and one around the loss, no fp8_group, so the forward amaxes are all-reduced over every rank twice a micro-batch and the backward ones once; the blocks' te.Linear layers in FP8 with their norms apart, the head in bf16, the weights cast every micro-batch",
    "te-transformer-layer": "AMD's pytorch-training-benchmark (train_fsdp.py): one autocast around the forward and the loss over Transformer Engine's TransformerLayer blocks (the norms written in FP8 by the fused LayerNormLinear and LayerNormMLP, the SwiGLU's output too), the layers' weights cast once a step (is_first_microbatch), the head a te.LayerNormLinear in FP8 with its weight cast every micro-batch; --tp 1",
})
#: DeepSpeed's ZeRO-Offload and ZeRO-Infinity (costmodel/offload.py).
OFFLOADS = Choices({"none": "", "optimizer": "ZeRO-Offload, --zero 1-3", "params": "ZeRO-Infinity, --zero 3"})
OFFLOAD_DEVICES = Choices({"cpu": "", "nvme": "needs --zero 3"})

#: Megatron-Core's cuda_graph_scope values (simulate --train --cuda-graph-scope; layout/host_syncs.py
#: counts the MoE layers' host syncs a captured scope replays instead of issuing).
#: Megatron-Core's --moe-router-load-balancing-type values the unfused router's count knows (layout/router_fusion.py;
#: sinkhorn is not counted)
MOE_LOAD_BALANCING = Choices({"aux_loss": "Megatron-Core's default", "seq_aux_loss": "counted as aux_loss",
                              "global_aux_loss": "counted as aux_loss", "none": "the top-k alone"})
CUDA_GRAPH_SCOPES = Choices({"attn": "the attention block", "moe_router": "the MoE router",
                             "moe_preprocess": "the MoE dispatch's preprocess", "mamba": "the Mamba mixer",
                             "full_iteration": "the whole step: no host sync"})

# ---------------------------------------------------------------------------------------------
# fine-tuning (costmodel/finetune.py)

FINETUNE_METHODS = Choices({"lora": "adapters on the frozen base in --dtype",
                            "qlora": "the base's linear layers in nf4 with double quantization",
                            "full": "every weight trained: not sized here, refused with the commands that size it"})
#: --method full's one line (it read "'full' is not one of 'lora', 'qlora'", nothing on where full fine-tuning is).
#: Where full fine-tuning is answered (also the hint for the names a user reaches for it by: cli/finetune.py).
FULL_FINETUNE_WHERE = ("finetune sizes LoRA and QLoRA; full fine-tuning (every weight trained) is `estimate --hardware "
                       "GPU` (its memory, whether it fits and what would make it: ZeRO, offload, more GPUs) and "
                       "`simulate --train --tokens N --price P` (its time and cost).")
FULL_FINETUNE = "--method full: " + FULL_FINETUNE_WHERE
#: The linear layers of a Llama-layout decoder layer (by Hugging Face's module names).
LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
#: GPT-NeoX's: the fused query/key/value projection, the attention's dense, the MLP's two.
NEOX_LORA_TARGETS = ("query_key_value", "dense", "dense_h_to_4h", "dense_4h_to_h")
#: Phi-3's: the fused query/key/value projection, o_proj, the fused gate/up projection, down_proj.
PHI3_LORA_TARGETS = ("qkv_proj", "o_proj", "gate_up_proj", "down_proj")
#: peft's default target modules for the Llama layout (TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING).
DEFAULT_LORA_TARGETS = ("q_proj", "v_proj")
FINETUNE_OPTIMIZERS = Choices({"adamw": "", "adamw8bit": "bitsandbytes", "paged_adamw": "bitsandbytes",
                               "paged_adamw8bit": "bitsandbytes", "adafactor": "transformers'",
                               "sgd_momentum": ""})

# ---------------------------------------------------------------------------------------------
# serving (costmodel/serving)

SCHEDULERS = Choices({"vllm": "vLLM v1's, chunked prefill within a token budget",
                      "sarathi": "Sarathi-Serve's stall-free batching",
                      "orca": "Orca's iteration-level batching, no chunking",
                      "trtllm": "TensorRT-LLM's in-flight batching as Orca's, decode steps from CUDA graphs",
                      "static": "Hugging Face generate's batch, to the longest output",
                      "hf-fifo": "transformers' continuous batching, FIFO",
                      "hf-prefill-first": "transformers' continuous batching, split prefills first",
                      "vllm-v0": "vLLM v0's, whole prompts first and alone, then decodes",
                      "sglang": "SGLang's (v0.3.0, v0.4.0), conservative admission, prefills alone, retraction"})
#: The schedulers `plan --serve --rate` searches with (plan --scheduler): serve's vllm and sglang.
PLAN_SCHEDULERS = Choices({name: SCHEDULERS.meanings[name] for name in ("vllm", "sglang")})
#: The block sizes vLLM takes (serve --block-size, the vllm and vllm-v0 schedulers): the union over its
#: releases. vllm/engine/arg_utils.py `--block-size ... choices=[8, 16, 32, 64, 128]` (v0.4-v0.6);
#: vllm/config.py `BlockSize = Literal[1, 8, 16, 32, 64, 128]` (v0.8-v0.10, whose CLI reads its choices
#: from the Literal); vllm/config/cache.py `BlockSize = Literal[1, 8, 16, 32, 64, 128, 256]` (v0.11 on).
#: Other sizes: `vllm serve` refuses them (argparse's choices) in every release.
VLLM_BLOCK_SIZES = (1, 8, 16, 32, 64, 128, 256)
ROUTERS = Choices({"round-robin": "", "least-outstanding": ""})
# serve --cuda-graphs (costmodel/serving/graphs.py): which steps replay a CUDA graph.
CUDA_GRAPHS = Choices({"auto": "the engine's default", "on": "the engine's graphs, an error where it has none",
                       "off": "eager everywhere"})
#: plan --cuda-graphs without --serve: the refusal the CLI (which sees "off" typed) and the API share.
CUDA_GRAPHS_NEED_SERVE = "--cuda-graphs replays decode steps: add --serve (a training step is not captured)."
DEFAULT_SCHEDULER = "vllm"
SERVE_ATTENTIONS = Choices({name: ATTENTIONS.meanings[name] for name in ("flash", "sdpa", "eager")})
DEFAULT_SERVE_ATTENTION = "flash"
DEFAULT_SERVE_MLA = "absorbed"

#: serve / plan --serve --rate --mamba-ssm-cache-dtype, vLLM's name (serving/state_slots.py)
MAMBA_SSM_CACHE_DTYPES = Choices({"auto": "the model dtype, vLLM's default", "float32": "fp32"})

# ---------------------------------------------------------------------------------------------
# measurement (validate/)

TARGETS = Choices({"hf": "Hugging Face's class", "reference": "validate/reference.py's model"})
MEASURE_DEVICES = Choices({"fake": "FakeTensorMode: full size, no memory", "cpu": "real tensors"})

# ---------------------------------------------------------------------------------------------
# the Python API's choices, in any case


def _union(*lists: Choices) -> Choices:
    return Choices({value: meaning for choices in lists for value, meaning in choices.meanings.items()})


#: Each keyword of the Python API whose command option is a choice (costmodel.estimate, sweep, simulate, plan,
#: serve; Workload's, Layout's and FineTune's fields), with its values. Every command takes them in any case
#: (cli/__init__.py any_case), and the library does too, through spelled_choices and spell_fields: the one rule.
#: A keyword whose values differ between owners (optimizer: training's and a fine-tune's) takes the union;
#: each owner still refuses what is not its own, in its own words.
KEYWORD_CHOICES = {
    "dtype": DTYPES, "weight_dtype": WEIGHT_DTYPE_CHOICES, "kv_dtype": KV_DTYPES, "quant_layout": QUANT_LAYOUTS,
    "fp8_gemm": FP8_GEMMS, "impl": IMPLEMENTATIONS, "attention": ATTENTIONS, "recompute": RECOMPUTES,
    "optimizer": _union(OPTIMIZERS, FINETUNE_OPTIMIZERS), "precision": PRECISIONS, "kv_cache": KV_CACHES,
    "mla": MLA_FORMS, "decode_code": DECODE_CODES, "flops_convention": FLOPS_CONVENTIONS, "time_model": TIME_MODELS,
    "rank_by": RANK_BY, "device": DEVICES, "framework": FRAMEWORK_NAMES, "schedule": SCHEDULES,
    "cp_rotate": CP_ROTATES, "cp_kv_heads": CP_KV_HEADS, "ep_dispatcher": EP_DISPATCHERS,
    "grad_reduce_dtype": GRAD_REDUCE_DTYPES, "zero_optimizer": ZERO_OPTIMIZERS, "optimizer_step": OPTIMIZER_STEPS,
    "precision_aware_optimizer": PRECISION_AWARE_OPTIMIZERS, "all_reduce": ALL_REDUCES, "fp8": FP8_RECIPES,
    "offload": OFFLOADS, "offload_device": OFFLOAD_DEVICES, "moe_router_load_balancing_type": MOE_LOAD_BALANCING,
    "method": FINETUNE_METHODS, "adapter_dtype": ADAPTER_DTYPES, "scheduler": SCHEDULERS, "router": ROUTERS,
    "cuda_graphs": CUDA_GRAPHS, "mamba_ssm_cache_dtype": MAMBA_SSM_CACHE_DTYPES,
}


def spelled_choices(values: dict[str, Any], owner: str = "") -> dict[str, Any]:
    """values (a function's keywords) with each choice keyword's string in its list's own spelling ("BF16":
    "bf16", scheduler "VLLM": "vllm"), as the command's option takes it; anything else as it is (spelled_choice)."""
    return {name: spelled_choice(owner, name, value) if name in KEYWORD_CHOICES else value
            for name, value in values.items()}


def spelled_choice(owner: str, name: str, value: Any) -> Any:
    """One choice keyword's value in its list's spelling (Choices.spelled); a value no list holds because it
    cannot be looked up (a list, a dict: unhashable) one ConfigError, where the owners' `value not in LIST`
    checks (workload.check_dtype, quantization.weight_format) raised Python's "unhashable type"."""
    if value is None or type(value) is str:  # the common cases, hashable (spelled: a string in its list's spelling)
        return KEYWORD_CHOICES[name].spelled(value)
    from collections.abc import Hashable

    from .errors import ConfigError, show

    if not isinstance(value, Hashable):
        raise ConfigError(f"{owner}{name} must be one of {KEYWORD_CHOICES[name].listed()}, got {show(value)}.")
    return KEYWORD_CHOICES[name].spelled(value)


def spell_fields(instance: Any) -> None:
    """A frozen dataclass's choice fields (KEYWORD_CHOICES) set to their lists' own spelling, in place, before
    its checks: Workload(dtype="BF16"), Layout(framework="Megatron"), FineTune(method="QLoRA"); and every
    field's numpy scalar as the Python number it holds (plain_values.plain), as the API's doors take it:
    FineTune(rank=np.int64(16)) and make_workload(cfg, np.int64(2048)) read "must be a positive whole number,
    got np.int64(16)"."""
    import dataclasses

    from .plain_values import plain

    for field in dataclasses.fields(instance):
        value = getattr(instance, field.name)
        if type(value).__module__ == "numpy":  # a scalar becomes its number; an array stays (the checks refuse it)
            object.__setattr__(instance, field.name, plain(value))
    for name in KEYWORD_CHOICES:
        value = getattr(instance, name, None)
        if value is None:  # unset (or no such field): nothing to spell
            continue
        spelled = spelled_choice(f"{type(instance).__name__.lower()}: ", name, value)
        if spelled is not value:
            object.__setattr__(instance, name, spelled)


#: A training layout's words that serve does not take, and what stands for each: serve(..., ep=2) read "did you
#: mean step?" and `serve --dp 2` click's "Did you mean --dtype, --pp, --tp?" (reports/options.not_replica_options
#: refuses the options with these lines).
NOT_A_REPLICA = {
    "dp": "data parallelism is replicas behind a router: replicas=N (--replicas N), each of tp x pp GPUs",
    "gpus": "a deployment's GPUs are replicas x tp x pp: give tp, pp and replicas (--tp, --pp, --replicas)",
    "ep": "expert parallelism (vLLM's --enable-expert-parallel) is not modelled by serve: a replica splits every "
          "expert over its tp ranks, as vLLM does without it (`simulate --dp N --ep N` times one expert-parallel generation)",
}
