"""Model types transformers 5.24 runs that no block here expresses, each with the reason naming the
fields and code that would need blocks of their own: costmodel/hf.py refuses such a config.json
in one line with that reason, rather than a bare "unsupported model_type". Each reason was read
from the class's modeling file (transformers 5.24, models/<type>/modeling_<type>.py);
validate/FINDINGS.md ("more Hugging Face model types, session 23") says what a model would need."""

from __future__ import annotations

from .hf_deepseek_v32 import UNMODELLED_TYPES as _DEEPSEEK_LINEAGE

UNMODELLED_TYPES: dict[str, str] = {
    **_DEEPSEEK_LINEAGE,
    "zamba": "ZambaForCausalLM's 'hybrid' layers (layers_block_type, from attn_layer_period and "
             "attn_layer_offset) each run one shared attention-and-MLP block, its weights tied across all "
             "of them, on the concatenation of the layer's input and the token embeddings "
             "(attention_hidden_size, 2 x hidden_size wide) with no residual add, then a hidden_size x "
             "hidden_size linear of their own whose output joins only the next Mamba mixer's input; no "
             "block here holds weights shared across layers or reads the embeddings again.",
    "zamba2": "Zamba2ForCausalLM's 'hybrid' layers (layers_block_type) run num_mem_blocks shared "
              "attention-and-MLP blocks in turn, their weights tied across uses, with LoRA adapters of "
              "adapter_rank per use on the MLP's gate_up_proj (and on q, k, v where "
              "use_shared_attention_adapter), on the concatenation of the layer's input and the token "
              "embeddings (2 x hidden_size wide) with no residual add, then a hidden_size x hidden_size "
              "linear of their own whose output joins only the next Mamba-2 mixer's input; no block here "
              "holds weights shared across layers or reads the embeddings again.",
}
