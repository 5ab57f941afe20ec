"""Review of session 38's later merges (wt38_review2): each defect found, pinned where it failed before its fix.
- serve's tensor-parallel group check read the widths of weights a checkpoint keeps unquantized (weight_kept);
- a choice keyword whose value cannot be looked up (a list, a dict) raised Python's "unhashable type";
- simulate, whose keywords are fixed, answered an unknown one with Python's TypeError."""

from __future__ import annotations

import pytest

import costmodel
from costmodel.errors import ConfigError
from costmodel.presets import load_preset
from costmodel.serving.profile import check_tensor_parallel_groups, serving_profile
from costmodel.workload import Workload


def test_serves_tp_group_check_reads_the_quantized_matrices_alone():
    """Qwen2.5-0.5B (hidden 896 = 14 heads x 64, intermediate 4,864) in int4 groups of 128 at tp 2: o_proj's
    896 / 2 = 448 columns are 3.5 groups, down_proj's 4,864 / 2 = 2,432 are 19. With the attention kept in
    --dtype (an ignore list's "re:.*self_attn.*") only down_proj is grouped, as the layout model's ranks read it
    (layout/parts.row_parallel_widths: quantized leaves only); serve refused it on o_proj's 448."""
    cfg = load_preset("qwen2.5-0.5b")
    with pytest.raises(ConfigError, match=r"896 / 2 = 448 columns"):
        check_tensor_parallel_groups(cfg, serving_profile(cfg, weight_dtype="int4", weight_group=128), 2)
    check_tensor_parallel_groups(cfg, serving_profile(cfg, weight_dtype="int4", weight_group=128,
                                                     weight_kept=("attention",)), 2)
    with pytest.raises(ConfigError, match=r"4864 / 4 = 1216 columns"):  # 1,216 / 128 = 9.5: the MLP still checked
        check_tensor_parallel_groups(cfg, serving_profile(cfg, weight_dtype="int4", weight_group=128,
                                                         weight_kept=("attention",)), 4)


def test_a_choice_keyword_that_cannot_be_looked_up_is_one_line():
    with pytest.raises(ConfigError, match=r"^workload: dtype must be one of fp32, float32, .* got \['bf16'\]\.$"):
        Workload(seq_len=128, dtype=["bf16"])
    with pytest.raises(ConfigError, match=r"^estimate: weight_dtype must be one of int8, .* got \{'a': 1\}\.$"):
        costmodel.estimate("gpt2", seq_len=128, batch=1, weight_dtype={"a": 1})
    with pytest.raises(ConfigError, match=r"^layout: framework must be one of megatron, deepspeed or fsdp2"):
        costmodel.layout.Layout(framework=["megatron"])


def test_simulates_unknown_keyword_is_one_line_naming_the_likely_one():
    with pytest.raises(ConfigError, match=r"^simulate: unknown keyword 'mla'; it takes model, hardware, train,"):
        costmodel.simulate("gpt2", "h100-sxm", mla="naive")
    with pytest.raises(ConfigError, match=r"^simulate: unknown keyword 'cuda_graph' \(did you mean cuda_graphs\?\)"):
        costmodel.simulate("gpt2", "h100-sxm", cuda_graph=True)
