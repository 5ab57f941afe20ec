"""The architecture choices ModelConfig's fields take (positions, norms, activations, heads, MoE
routers), each with what it means; costmodel/config.py checks a config against them and
re-exports them. No imports: data only."""

POSITIONS = ("sinusoidal", "learned", "rope", "alibi", "relative", "none")
NORMS = ("layernorm", "rmsnorm")
NORM_POSITIONS = ("pre", "post")
#: relu2: squared ReLU, relu(x)^2 (So et al. 2021, "Primer"; Nemotron-4), run as relu then a square.
#: relu2_glu: a gated squared ReLU, relu(gate x)^2 * up x (BitNet b1.58: GemmaMLP with hidden_act relu2).
#: xielu: xIELU (Huang et al. 2024, arXiv 2411.13010; Apertus), two trainable scalars per FFN,
#: run as transformers' Python version (a dozen pointwise ops).
ACTIVATIONS = ("relu", "relu2", "gelu", "gelu_tanh", "silu", "swiglu", "geglu", "geglu_tanh", "xielu",
               "relu2_glu")
GATED_ACTIVATIONS = ("swiglu", "geglu", "geglu_tanh", "relu2_glu")
HEADS = ("lm", "pooler", "none")
#: softmax: an fp32 softmax over the E logits, then the top k (Mixtral, Qwen2-MoE); sigmoid: DeepSeek-V3's;
#: topk_softmax: the top k of the logits, then a softmax over those k in the activation dtype (gpt-oss's
#: GptOssTopKRouter); sigmoid_topk: Llama 4's, the top k of the logits then a sigmoid (the others 0);
#: sparsemixer: PhiMoE's two rounds of a masked softmax over the logits, one expert each (top 2);
#: topk_then_sigmoid: Kolibri-1's, the top k of the logits plus a bias, then a sigmoid over those k.
ROUTERS = ("softmax", "sigmoid", "topk_softmax", "sigmoid_topk", "sparsemixer", "topk_then_sigmoid")

#: DeepseekV4Config.hc_sinkhorn_iters: the Sinkhorn loop's iterations in DeepSeek-V4's
#: hyper-connections (one column normalisation, then a row and a column one per further iteration;
#: blocks/deepseek_v4.py HyperConnection.saved); hf_deepseek_v4 refuses any other.
SINKHORN_ITERS = 20
