"""Model types transformers 5.24 runs that no block here expresses, each with the reason naming the
fields and code that would need blocks of their own: costmodel/hf.py refuses such a config.json
in one line with that reason, rather than a bare "unsupported model_type". Each reason was read
from the class's modeling file (transformers 5.24, models/<type>/modeling_<type>.py);
validate/FINDINGS.md ("more Hugging Face model types, session 23") says what a model would need."""

from __future__ import annotations

from .hf_deepseek_v32 import UNMODELLED_TYPES as _DEEPSEEK_LINEAGE

UNMODELLED_TYPES: dict[str, str] = {
    **_DEEPSEEK_LINEAGE,
}
