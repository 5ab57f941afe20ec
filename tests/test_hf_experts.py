"""validate/hf_experts.shared_experts: the one rule by which the builders of Hugging Face classes with
shared experts (cohere2_moe, glm4_moe, afmoe, aria_text) size them, a whole number of routed experts."""

from __future__ import annotations

import pytest

from costmodel.presets import load_preset
from validate.hf_experts import shared_experts


def test_a_shared_width_is_a_count_of_experts_or_refused():
    cfg = load_preset("deepseek-v3")  # one shared expert of 2,048 beside 256 routed ones of 2,048
    assert (cfg.d_shared, cfg.d_expert) == (2048, 2048) and shared_experts(cfg, "glm4_moe") == 1
    assert shared_experts(cfg.replace(d_shared=3 * 2048), "afmoe") == 3
    assert shared_experts(cfg.replace(d_shared=0), "cohere2_moe") == 0
    assert shared_experts(cfg.replace(d_shared=4096), "aria_text", width=1024) == 4
    with pytest.raises(ValueError, match=r"^model 'deepseek-v3': Hugging Face glm4_moe cannot build a shared "
                                         r"width that is not a whole number of experts\.$"):
        shared_experts(cfg.replace(d_shared=3000), "glm4_moe")
