"""Whether tensor parallelism can split a model: the sizes tp must divide and, where it cannot, why, as the
rest of a sentence after "tp = N" (Layout.check and plan's candidate tp read it). Split from spec.py by concern."""

from __future__ import annotations

from ..config import ModelConfig, show


def tensor_split_sizes(cfg: ModelConfig) -> list[tuple[str, int]]:
    """What tensor parallelism divides (costmodel/layout/split.py), each a size tp must divide;
    the key/value heads apart (tensor_split_error: inference may replicate them)."""
    sizes = [("query heads", cfg.n_heads), ("FFN width", cfg.d_ff)]
    if cfg.mamba_heads is not None:
        # Megatron-Core's MambaMixer asserts "nheads must be evenly divisble by tp_size" and "ngroups must be
        # evenly divisible by tp_size" (megatron/core/ssm/mamba_mixer.py at d98e8a64; split.mamba_split). vLLM's
        # MambaMixer2 can instead replicate groups that tp does not divide: not modelled, refused as in training.
        sizes += [("Mamba-2 heads", cfg.mamba_heads), ("Mamba-2 groups", cfg.mamba_groups)]
    if cfg.moe:
        sizes.append(("experts' FFN width", cfg.d_expert))
        if cfg.d_shared:
            sizes.append(("shared expert's FFN width", cfg.d_shared))
    return sizes


def tensor_split_error(cfg: ModelConfig, tp: int, inference: bool) -> str | None:
    """Why tp ranks cannot split the model, as the rest of a sentence after "tp = N" (None: they
    can). Every size of tensor_split_sizes must divide by tp. The key/value heads too in training:
    Megatron-LM's TransformerConfig.__post_init__ raises "num_query_groups must be a multiple of
    tensor_model_parallel_size" (megatron/core/transformer/transformer_config.py at d2c5e8b).
    Inference also takes tp a multiple of them, each head replicated over tp / h_kv ranks as vLLM
    does (split.kv_heads_per_rank; QKVParallelLinear's divide(tp_size, total_num_kv_heads) needs it)."""
    name, kv = show(cfg.name), cfg.n_kv_heads
    if tp > 1 and cfg.n_mixer_layers("shared"):  # costmodel/shared_block.py: no tensor-parallel split modelled
        return f"splits Zamba's shared attention-and-MLP blocks, not modelled under tensor parallelism (model {name})"
    if tp > 1 and cfg.n_mixer_layers("mlstm"):  # blocks/mlstm.py: no tensor-parallel split modelled
        return f"splits mLSTM mixers, which are not modelled under tensor parallelism (model {name})"
    if tp > 1 and cfg.n_mixer_layers("rwkv_time"):  # blocks/rwkv.py: no tensor-parallel split modelled
        return f"splits RWKV time and channel mixes, which are not modelled under tensor parallelism (model {name})"
    if tp > 1 and cfg.n_mixer_layers("rglru"):  # blocks/rglru.py: no tensor-parallel split modelled
        return f"splits RG-LRU recurrent blocks, which are not modelled under tensor parallelism (model {name})"
    if tp > 1 and cfg.n_mixer_layers("kda"):  # blocks/kda.py: no tensor-parallel split modelled
        return f"splits Kimi Delta Attention, which is not modelled under tensor parallelism (model {name})"
    if tp > 1 and cfg.deltanet_v_heads is not None:  # blocks/deltanet.py: no tensor-parallel split modelled
        return f"splits Gated DeltaNet mixers, which are not modelled under tensor parallelism (model {name})"
    if tp > 1 and cfg.mamba1_inner is not None:  # blocks/mamba1.py: no tensor-parallel split modelled
        return f"splits Mamba-1 mixers, which are not modelled under tensor parallelism (model {name})"
    if tp > 1 and cfg.n_mixer_layers("shortconv"):  # blocks/shortconv.py: no tensor-parallel split modelled
        return f"splits short convolutions, which are not modelled under tensor parallelism (model {name})"
    if tp > 1 and cfg.altup_inputs is not None:  # blocks/altup.py: no tensor-parallel split modelled
        return (f"splits Gemma 3n's AltUp streams and LAuReL, which are not modelled under tensor parallelism "
                f"(model {name})")
    if tp > 1 and cfg.sub_norms:  # a norm over the heads' output and d_ff, which tp ranks split
        return f"splits BitNet's sub-norms, which are not modelled under tensor parallelism (model {name})"
    if tp > 1 and cfg.differential_attention:  # head i's output is subtracted from head i + h/2's
        return f"splits DiffLlama's differential attention, which is not modelled under tensor parallelism (model {name})"
    if tp > 1 and cfg.dynamic_mask:  # dt_proj reads every KV head's values
        return f"splits Doge's dynamic mask, which is not modelled under tensor parallelism (model {name})"
    if tp > 1 and cfg.attention_experts:  # blocks/attention_experts.py: no framework splits JetMoE's MoA
        return (f"splits JetMoE's mixture of attention heads (attention_experts), which is not modelled under "
                f"tensor parallelism (model {name})")
    if tp > 1 and cfg.n_mixer_layers("lightning"):  # blocks/lightning.py: no tensor-parallel split modelled
        return f"splits lightning attention, which is not modelled under tensor parallelism (model {name})"
    for what, size in tensor_split_sizes(cfg):
        if size % tp:
            return f"does not divide the {what} ({size}) of model {name}"
    # each layer kind's own key/value heads (split.heads_split): the main ones, and the full layers'
    # where they differ (global_kv_heads: Gemma 4, MiMo-V2-Flash), each split as its layers run
    kinds = [("key/value heads", kv)]
    if cfg.global_kv_heads is not None:
        kinds.append(("full-attention layers' key/value heads", cfg.global_kv_heads))
    for what, heads in kinds:
        if heads % tp == 0:
            continue
        if not inference:
            where = (f"; for inference, where vLLM replicates each key/value head over tp / {heads} ranks, use "
                     "simulate without --train, serve or plan --serve" if tp % heads == 0 else "")
            return (f"does not divide the {what} ({heads}) of model {name}: training splits whole query "
                    "groups over the tensor-parallel ranks (Megatron-LM: num_query_groups must be a multiple of "
                    f"tensor_model_parallel_size){where}")
        if tp % heads:
            return (f"is neither a divisor nor a multiple of the {what} ({heads}) of model {name}: inference "
                    f"replicates each head over tp / {heads} ranks, which must be whole (vLLM's QKVParallelLinear)")
    return None


def spreads(cfg: ModelConfig, tp: int) -> str:
    """The options that spread a model over more GPUs: "--tp, --pp", or "--pp" alone where no larger
    tensor-parallel group (2, 4 or 8 times tp) splits it (a mixer not modelled under tensor
    parallelism, heads that no larger tp divides)."""
    wider = any(tensor_split_error(cfg, tp * k, inference=True) is None for k in (2, 4, 8))
    return "--tp, --pp" if wider else "--pp"
