"""Tiny, deliberately odd Hugging Face config dicts, one or two per family of issue 14.

Sizes as tests/odd_configs.py: hidden 48, 6 heads, 2 KV heads, intermediate 37, vocab 99, and a head
dimension other than hidden/heads wherever the family reads `head_dim`, so that a swapped dimension
shows up as a wrong count. Each dict is what a config.json would hold; validate.hf_families builds
the class a user trains from it. validate/FINDINGS.md section 11 measures every one of them.
"""

from __future__ import annotations

from typing import Any

_BASE = dict(vocab_size=99, hidden_size=48, num_attention_heads=6, intermediate_size=37,
             num_hidden_layers=2, max_position_embeddings=64)

FAMILY_CONFIGS: dict[str, dict[str, Any]] = {
    # Llama 3.1: rope_scaling of type llama3 changes only the inverse frequencies.
    "llama3": dict(_BASE, model_type="llama", num_key_value_heads=2, head_dim=10,
                   rope_theta=500000.0, tie_word_embeddings=False,
                   rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                 "high_freq_factor": 4.0, "original_max_position_embeddings": 16}),
    # Qwen2.5: biases on q, k, v only; the small ones tie the embeddings.
    "qwen2.5": dict(_BASE, model_type="qwen2", num_key_value_heads=2, tie_word_embeddings=True),
    # Qwen3: RMSNorm on each query and key head, head_dim free.
    "qwen3": dict(_BASE, model_type="qwen3", num_key_value_heads=2, head_dim=10,
                  tie_word_embeddings=False),
    # Gemma: GeGLU (tanh GELU), embeddings times sqrt(d), (1 + w) RMSNorm, tied, head_dim free.
    "gemma": dict(_BASE, model_type="gemma", num_key_value_heads=2, head_dim=10,
                  hidden_activation="gelu_pytorch_tanh", tie_word_embeddings=True),
    # Gemma 2: four norms per layer, soft-capping, sliding window on alternate layers (3 layers:
    # sliding, full, sliding), queries scaled by query_pre_attn_scalar**-0.5.
    "gemma2": dict(_BASE, model_type="gemma2", num_hidden_layers=3, num_key_value_heads=2,
                   head_dim=10, query_pre_attn_scalar=12, sliding_window=4,
                   attn_logit_softcapping=50.0, final_logit_softcapping=30.0,
                   tie_word_embeddings=True),
    # Phi-3: fused qkv_proj and gate_up_proj; a sliding window on every layer.
    "phi3": dict(_BASE, model_type="phi3", num_key_value_heads=2, sliding_window=5,
                 pad_token_id=None, tie_word_embeddings=False),
    # Phi-4-mini style: rotary on three quarters of each head (6 of 8 dims), no window.
    "phi3_partial": dict(_BASE, model_type="phi3", num_key_value_heads=2, pad_token_id=None,
                         partial_rotary_factor=0.75, tie_word_embeddings=True),
    # Mistral v0.1: a sliding window on every layer (4 here, 4096 there).
    "mistral_sw": dict(_BASE, model_type="mistral", num_key_value_heads=2, head_dim=10,
                       sliding_window=4, tie_word_embeddings=False),
    # Gemma-2B: multi-query (one KV head), head_dim 10 (256 there).
    "gemma_mqa": dict(_BASE, model_type="gemma", num_key_value_heads=1, head_dim=10,
                      hidden_activation="gelu_pytorch_tanh", tie_word_embeddings=True),
    # Pythia (GPT-NeoX): parallel residual, rotary on a quarter of each head, biases, LayerNorm.
    "gpt_neox": dict(_BASE, model_type="gpt_neox", rotary_pct=0.25, use_parallel_residual=True,
                     tie_word_embeddings=False),
    # Falcon-40B/180B layout: grouped KV, two LayerNorms feeding attention and MLP in parallel.
    "falcon_new": dict(_BASE, model_type="falcon", new_decoder_architecture=True, num_kv_heads=2,
                       ffn_hidden_size=37, bias=False, parallel_attn=True, alibi=False,
                       tie_word_embeddings=True),
    # Falcon-7B layout: multi-query (one KV head), one LayerNorm, parallel attention and MLP.
    "falcon_7b": dict(_BASE, model_type="falcon", new_decoder_architecture=False, multi_query=True,
                      ffn_hidden_size=37, bias=False, parallel_attn=True, alibi=False,
                      tie_word_embeddings=True),
    # OPT-350m layout: embeddings of width 40 projected in and out, post-LayerNorm, ReLU, biases.
    "opt": dict(vocab_size=99, hidden_size=48, num_attention_heads=6, ffn_dim=37,
                num_hidden_layers=2, max_position_embeddings=64, model_type="opt",
                word_embed_proj_dim=40, do_layer_norm_before=False, dropout=0.0,
                tie_word_embeddings=True),
    # OPT-1.3b layout: pre-LayerNorm with a final LayerNorm, no projections.
    "opt_pre": dict(vocab_size=99, hidden_size=48, num_attention_heads=6, ffn_dim=37,
                    num_hidden_layers=2, max_position_embeddings=64, model_type="opt",
                    word_embed_proj_dim=48, do_layer_norm_before=True, dropout=0.0,
                    tie_word_embeddings=True),
    # BLOOM: ALiBi, LayerNorm after the embeddings, MLP of 4d, fused query_key_value.
    "bloom": dict(vocab_size=99, hidden_size=48, n_head=6, n_layer=2, model_type="bloom",
                  tie_word_embeddings=True),
    # Mixtral: top-2 of 5 experts of intermediate 40, GQA. (Experts' sizes are multiples of 8:
    # torch._grouped_mm, transformers' default experts kernel, needs 16-byte row strides.)
    "mixtral": dict(_BASE, model_type="mixtral", num_key_value_heads=2, head_dim=10,
                    intermediate_size=40, num_local_experts=5, num_experts_per_tok=2,
                    tie_word_embeddings=False),
    # Qwen1.5/2-MoE: top-3 of 6 small experts, a gated shared expert, the last layer dense.
    "qwen2_moe": dict(_BASE, model_type="qwen2_moe", num_key_value_heads=2, num_experts=6,
                      num_experts_per_tok=3, moe_intermediate_size=24,
                      shared_expert_intermediate_size=29, mlp_only_layers=[1],
                      norm_topk_prob=False, tie_word_embeddings=False),
    # DeepSeek-V3: MLA (q and kv LoRA, decoupled rope key), first layer dense, sigmoid routing
    # with group-limited top-k (4 groups of 2, top 2 groups, top 3 experts), one shared expert.
    "deepseek_v3": dict(_BASE, model_type="deepseek_v3", num_hidden_layers=3,
                        num_key_value_heads=6, q_lora_rank=20, kv_lora_rank=12,
                        qk_rope_head_dim=4, qk_nope_head_dim=6, v_head_dim=7,
                        n_routed_experts=8, n_group=4, topk_group=2, num_experts_per_tok=3,
                        n_shared_experts=1, moe_intermediate_size=16, first_k_dense_replace=1,
                        routed_scaling_factor=2.5, norm_topk_prob=True, tie_word_embeddings=False),
}


def odd_config_rows(fields: dict[str, Any], name: str, attention: str = "eager") -> list[Any]:
    """validate's rows (formula beside measurement, Hugging Face's class) for a config dict at the
    odd configs' workload: b = 2, n = 12, bf16, 2 generated tokens, eager attention or sdpa."""
    from costmodel.config import Workload
    from costmodel.presets import config_from_dict
    from validate.compare import validate

    cfg = config_from_dict(dict(fields), source=name, name=name)
    workload = Workload(seq_len=12, batch=2, dtype="bf16", gen_tokens=2, attention=attention)
    return validate(cfg, workload, target="hf")


#: The quantities every validate comparison of a causal LM includes (assert_rows_exact).
CORE_QUANTITIES = frozenset({"parameters", "forward matmul FLOPs", "backward matmul FLOPs",
                             "bytes saved for backward", "KV-cache bytes"})


def assert_rows_exact(rows: list[Any], also: frozenset[str] = frozenset()) -> None:
    """validate's rows include the core quantities (and `also`), and every formula equals its measurement."""
    assert CORE_QUANTITIES | also <= {row.quantity for row in rows}
    off = [row for row in rows if row.difference != 0]
    assert off == [], off  # the rows that differ, formula beside measurement


def hf_meta_count(fields: dict[str, Any]) -> int:
    """Parameters of the causal-LM class transformers builds from a config dict, on the meta device."""
    import torch
    import transformers

    config = transformers.AutoConfig.for_model(**fields)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    return sum(p.numel() for p in model.parameters())


def buffer_bytes_both(fields: dict[str, Any], name: str) -> tuple[int, int]:
    """(the cost tree's buffer bytes, every buffer's bytes of the bf16 meta model) for a config dict."""
    import torch
    import transformers

    from costmodel import estimate

    config = transformers.AutoConfig.for_model(**fields)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    hf = sum(b.numel() * b.element_size() for b in model.buffers())
    return estimate(dict(fields, name=name), seq_len=16, dtype="bf16").to_dict()["memory"]["buffers"], hf


def assert_decode_flops_exact(config: dict[str, Any], label: Any, real: bool = False) -> None:
    """One cached decode step of the class built from `config` (bf16 on real tensors, FlopCounterMode) equals
    the decode tree's matmul FLOPs, at three (batch, prompt, generated) points. real: the class in fp32,
    counted with grad on (routing FakeTensorMode cannot run: JetMoE's tolist()). Real tensors, not
    FakeTensorMode (session 36): the count is the shapes', and a router's: each token through its top-k
    experts, whichever they are, the same matmul FLOPs (the 169 decode tests gave the same counts faked and
    real); FakeTensorMode's dispatch cost these tiny classes ~1 ms an op (Zamba's decode 5.9 s faked, 0.6 s
    real; Gemma 3n's AltUp 18 s and 7 s)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from costmodel.config import Workload
    from costmodel.evaluate import exact, values
    from costmodel.hf import from_hf_config
    from costmodel.tree import CostModel, profile_for
    from validate.hf_families import build_hf_from_dict, family_inputs
    from validate.measure import matmul_flops, run_with_cache

    cfg = from_hf_config(config, name="odd")
    decode = CostModel(cfg, profile_for(cfg), phase="decode")
    torch.manual_seed(0)  # seeded, as tests/golden/hf_families.built seeds its builds
    model = build_hf_from_dict(dict(config), dtype=torch.float32 if real else torch.bfloat16)
    model.eval()
    for b, n, gen in ((2, 10, 2), (1, 2, 0), (1, 3, 4)):
        cache = run_with_cache(model, family_inputs(config, b, n), gen)
        step = {"input_ids": torch.ones(b, 1, dtype=torch.long), "cache": cache, "use_cache": True}
        if real:
            with FlopCounterMode(display=False) as counter:  # grad on: no_grad's module tracker
                model(**step)  # fails on views of weights (DBRX's)
            measured = counter.get_total_flops()
        else:
            measured = matmul_flops(model, step).forward
        subs = values(cfg, Workload(seq_len=n, batch=b, dtype="bf16"))
        subs[next(s for s in subs if s.name == "c")] = n + gen + 1  # the keys it attends to
        assert measured == exact(decode.total("flops_matmul"), subs), (label, b, n, gen)


def tree_matmul_flops(fields: dict[str, Any], phase: str, b: int, n: int, c: int | None = None) -> int:
    """The cost tree's matmul FLOPs of one phase ("prefill", "decode", ...) for a config dict at batch b,
    sequence n, and (decode) c keys attended to where given; the recurrent readers' tests compare it
    with the class's FlopCounterMode count."""
    from costmodel.config import Workload
    from costmodel.evaluate import exact, values
    from costmodel.hf import from_hf_config
    from costmodel.tree import CostModel, profile_for

    cfg = from_hf_config(fields, name="odd")
    subs = values(cfg, Workload(seq_len=n, batch=b))
    if c is not None:
        subs[next(s for s in subs if s.name == "c")] = c
    return exact(CostModel(cfg, profile_for(cfg), phase=phase).total("flops_matmul"), subs)


def estimated_total(fields: dict[str, Any], name: str) -> int:
    """The cost tree's total parameters for a config dict (`estimate`, as the CLI reads it)."""
    from costmodel import estimate

    return estimate(dict(fields, name=name), seq_len=16).to_dict()["params"]["total"]


def assert_cache_after_prefill_exact(fields: dict[str, Any], name: str, dtype: str, b: int = 2, n: int = 9) -> None:
    """The class's cache after a prefill of b x n random tokens (every layer's keys and values, and a
    linear mixer's conv and recurrent states: Mamba-2's, Gated DeltaNet's) in bytes, against the
    estimate's KV cache; both nonzero. Bytes held are storage bytes, each storage once, as
    validate/measure/memory.cache_bytes counts them: a sliding layer's keys after a prefill are a view
    of w - 1 tokens whose storage is the whole prompt's (DynamicSlidingWindowLayer.update)."""
    import torch
    import transformers

    from costmodel import estimate

    torch_dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype]
    config = transformers.AutoConfig.for_model(**fields)
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch_dtype).eval()
    with torch.no_grad():
        cache = model(torch.randint(0, fields["vocab_size"], (b, n)), use_cache=True).past_key_values
    from validate.measure.common import storage_key

    storages = {}
    for layer in cache.layers:
        tensors = [getattr(layer, key, None) for key in ("keys", "values")]
        tensors += [*getattr(layer, "conv_states", {}).values(), *getattr(layer, "recurrent_states", {}).values()]
        storages.update({storage_key(t): t.untyped_storage().nbytes() for t in tensors if isinstance(t, torch.Tensor)})
    for t in getattr(cache, "linear_cache", ()):  # MiniMaxCache: each lightning layer's state
        if isinstance(t, torch.Tensor):
            storages[storage_key(t)] = t.untyped_storage().nbytes()
    held = sum(storages.values())
    ours = estimate(dict(fields, name=name), seq_len=n, batch=b, dtype=dtype).to_dict()
    assert ours["memory"]["kv_cache"] == held > 0


def assert_saved_bytes_exact(fields: dict[str, Any], name: str, dtype: str, b: int = 2, n: int = 9,
                             attention: str | None = "eager") -> None:
    """The class's training forward with its loss on b x n random tokens (validate's saved-tensor
    hooks; `attention` its implementation, None the class's default) against the estimate's
    activations in bytes."""
    import torch
    import transformers

    from costmodel import estimate
    from validate.hf_longcat_flash import counted_routing  # the routing the tree counts (LongCat-Flash's)
    from validate.measure.saved import saved_activation_bytes

    chosen = {} if attention is None else {"attn_implementation": attention}
    torch_dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype]
    config = transformers.AutoConfig.for_model(**fields, **chosen)
    torch.manual_seed(0)
    model = counted_routing(transformers.AutoModelForCausalLM.from_config(config, dtype=torch_dtype).train())
    ids = torch.randint(0, fields["vocab_size"], (b, n))
    measured = saved_activation_bytes(model, {"input_ids": ids, "labels": ids}, loss_fn=lambda out: out.loss)
    asked = {} if attention is None else {"attention": attention}
    ours = estimate(dict(fields, name=name), seq_len=n, batch=b, dtype=dtype, **asked).to_dict()
    assert ours["memory"]["activations"] == measured.total_bytes


def assert_fp32_rows_exact(fields: dict[str, Any], name: str) -> None:
    """Every validate row exact in fp32 on the CPU's real tensors (b 2, n 12, 2 generated tokens),
    where validate adds torch.profiler's count of the training matmul FLOPs as a second, independent
    measurement, which must be among the rows."""
    from costmodel.config import Workload
    from costmodel.presets import config_from_dict
    from validate.compare import validate

    cfg = config_from_dict(dict(fields), source=name, name=name)
    rows = validate(cfg, Workload(seq_len=12, batch=2, dtype="fp32", gen_tokens=2), target="hf", device="cpu")
    assert "training matmul FLOPs (profiler)" in {row.quantity for row in rows}
    off = [row for row in rows if row.difference != 0]
    assert off == [], off  # the rows that differ, formula beside measurement


def kv_cache_after_decode(fields: dict[str, Any], name: str) -> tuple[int, int]:
    """(the estimate's KV cache, the bytes the class holds: validate.measure) after a prefill of
    12 tokens and 2 decode steps at b = 2 in bf16, the odd configs' workload."""
    import torch

    from costmodel import estimate
    from tests.golden.hf_families import built
    from validate.hf_families import family_inputs
    from validate.measure.memory import kv_cache_bytes

    with built(fields, torch.bfloat16) as model:
        measured = kv_cache_bytes(model.eval(), family_inputs(fields, 2, 12), 2)
    # the 2 decode steps measured feed back all but the last token of a generation of 3
    ours = estimate(dict(fields, name=name), seq_len=12, batch=2, dtype="bf16", gen_tokens=3)
    return ours.to_dict()["memory"]["kv_cache"], measured
def assert_prefill_flops_exact(config: dict[str, Any], label: Any) -> None:
    """A prefill that fills the cache (the class built from `config`, fp32, eager attention,
    use_cache, FlopCounterMode) equals the prefill tree's matmul FLOPs at three (batch, prompt)
    points, one prompt shorter than a linear mixer's conv kernel where the config has one (the
    cache pads it: blocks/mamba.ShortConvPhases)."""
    import torch
    import transformers

    from costmodel.config import Workload
    from costmodel.evaluate import exact, values
    from costmodel.hf import from_hf_config
    from costmodel.tree import CostModel, profile_for
    from validate.measure import matmul_flops

    cfg = from_hf_config(config, name="odd")
    prefill = CostModel(cfg, profile_for(cfg), phase="prefill")
    from validate.hf_longcat_flash import counted_routing  # the routing the tree counts (LongCat-Flash's)

    model = counted_routing(transformers.AutoModelForCausalLM.from_config(
        transformers.AutoConfig.for_model(**config, attn_implementation="eager"))).eval()
    for b, n in ((2, 9), (1, 2), (2, 3)):
        ids = torch.randint(0, config["vocab_size"], (b, n))
        measured = matmul_flops(model, {"input_ids": ids, "use_cache": True}).forward
        assert measured == exact(prefill.total("flops_matmul"), values(cfg, Workload(seq_len=n, batch=b))), \
            (label, b, n)
