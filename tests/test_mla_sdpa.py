"""Latent attention (DeepSeek-V2/V3, GLM-4.7-Flash) under sdpa: torch 2.13's CPU sdpa runs its flash
kernel only when q, k and v share one head width (aten/src/ATen/native/transformers/sdp_utils_cpp.cpp,
check_head_dim_size_cpp), so MLA's q and k of d_h = qk_nope + qk_rope against v of v_head_dim run
the math path: fp32 copies of q, k, v, the softmax kept in fp32, the backward's products not
recomputed (kernels._sdpa, validate/FINDINGS.md "Latent attention under sdpa").

Every integer below is a measurement: validate's rows (FlopCounterMode, saved-tensor hooks) on the
odd configs, b 2 (or 1), n 12, 2 generated tokens, transformers 5.24 and torch 2.13 on the CPU.
"""

from __future__ import annotations

import pytest

from costmodel.config import ConfigError, Workload
from costmodel.estimation import Estimate
from costmodel.kernels import FLASH, MATH, SDPA, choose
from costmodel.presets import config_from_dict, load_preset
from costmodel.tree import profile_for
from tests.family_configs import FAMILY_CONFIGS
from tests.test_hf_survey_configs import NEW_FAMILY_CONFIGS

DEEPSEEK_V3 = FAMILY_CONFIGS["deepseek_v3"]  # d_h 6 + 4 = 10 against d_v 7, 3 layers
EQUAL_WIDTHS = dict(DEEPSEEK_V3, v_head_dim=10)  # v as wide as q and k: the flash kernel runs
DEEPSEEK_V2 = NEW_FAMILY_CONFIGS["deepseek_v2"]  # no query rank, d_h 6 + 4 against d_v 5, 3 layers

#: (config, dtype, batch) -> (backward matmul FLOPs, bytes saved for backward), measured.
MEASURED = {
    ("deepseek_v3", "bf16", 2): (4_856_832, 243_812),
    ("deepseek_v3", "bf16", 1): (2_428_416, 122_044),
    ("deepseek_v3", "fp32", 2): (4_856_832, 342_788),
    ("deepseek_v3", "fp32", 1): (2_428_416, 176_812),  # V a view of kv_b_proj's output: +3 x 1,728
    ("deepseek_v2", "bf16", 2): (4_623_552, 211_628),
    ("deepseek_v2", "bf16", 1): (2_311_776, 105_940),
    ("equal_widths", "bf16", 2): (5_333_760, 220_484),  # the flash kernel: Q K^T recomputed
    ("equal_widths", "bf16", 1): (2_666_880, 110_380),
}
CONFIGS = {"deepseek_v3": DEEPSEEK_V3, "deepseek_v2": DEEPSEEK_V2, "equal_widths": EQUAL_WIDTHS}


def _cfg(name: str):
    return config_from_dict(dict(CONFIGS[name]), source=name, name=name)


def _workload(dtype: str, batch: int) -> Workload:
    return Workload(seq_len=12, batch=batch, dtype=dtype, gen_tokens=2, attention="sdpa", sdpa_device="cpu")


def test_sdpa_runs_the_math_path_when_the_value_width_differs():
    assert choose("sdpa", False, False, value_width_differs=True) is MATH
    assert choose("sdpa", False, False, value_width_differs=False) is SDPA
    assert choose("flash", False, False, value_width_differs=True) is FLASH  # a GPU's fused kernel
    assert choose("sdpa", False, False, True, value_width_differs=True).base is MATH  # selective


def _differs(cfg) -> bool:
    return profile_for(cfg, Workload(attention="sdpa", sdpa_device="cpu")).value_width_differs


def test_value_width_differs_is_read_from_the_config():
    assert _differs(_cfg("deepseek_v3")) and _differs(_cfg("deepseek_v2"))
    assert not _differs(_cfg("equal_widths"))
    assert _differs(load_preset("deepseek-v3"))  # 128 + 64 against 128
    assert not _differs(load_preset("llama2-7b"))
    # widths that change the kernel are part of the compiled expressions' key
    assert _cfg("deepseek_v3").structure() != _cfg("equal_widths").structure()


@pytest.mark.parametrize("name, dtype, batch", sorted(MEASURED))
def test_tree_equals_the_measured_latent_attention_under_sdpa(name, dtype, batch):
    """The tree alone (no torch) against the measured integers. Before: the flash kernel's rules,
    backward FLOPs 103,680 above (3 layers x one more Q K^T, 2 b h n^2 d_h = 34,560) and bytes
    37,152 below (3 x 12,384) on odd DeepSeek-V3 in bf16 at b 2."""
    estimate = Estimate(_cfg(name), _workload(dtype, batch))
    backward, saved = MEASURED[(name, dtype, batch)]
    assert estimate.total("flops_matmul_backward") == backward
    assert estimate.total("saved_bytes") == saved


def test_math_path_per_layer_terms():
    """One layer of odd DeepSeek-V3 (b 2, n 12, h 6, d_h 10, d_v 7), bf16: the math path keeps q and
    k scaled in fp32 (2 x 4 x 2 x 6 x 12 x 10 = 11,520), the fp32 softmax (4 x 2 x 6 x 144 = 6,912)
    and v in fp32 (4 x 2 x 6 x 12 x 7 = 4,032); the flash kernel would keep 5,760 + 576 + 2,016 +
    its output 2,016 and kv_b_proj's keys beside V (1,728): 12,384 less than math (the output
    projection keeps its own 2,016 input)."""
    bf16, flash = _workload("bf16", 2), _workload("bf16", 2).replace(attention="flash")
    difference = Estimate(_cfg("deepseek_v3"), bf16).total("saved_bytes") - \
        Estimate(_cfg("deepseek_v3"), flash).total("saved_bytes")
    assert difference == 3 * ((11_520 + 6_912 + 4_032 + 2_016) - (5_760 + 576 + 2_016 + 2_016 + 1_728))


def test_recomputed_up_projections_need_the_flash_kernel():
    """recompute "deepseek" keeps the fused kernel's output and log-sum-exp, which the math path
    does not make: refused in one sentence where the widths differ, taken where they are equal."""
    workload = _workload("bf16", 2).replace(recompute="deepseek")
    with pytest.raises(ConfigError, match="runs its math path when v_head_dim differs"):
        Estimate(_cfg("deepseek_v3"), workload)
    assert Estimate(_cfg("equal_widths"), workload).total("saved_bytes") > 0


@pytest.mark.slow
@pytest.mark.parametrize("name, dtype, batch", sorted(MEASURED))
def test_every_validate_row_is_exact_under_sdpa(name, dtype, batch):
    pytest.importorskip("transformers")
    from validate.compare import validate

    device = "cpu" if dtype == "fp32" else "fake"  # the experts' grouped_mm fakes only bf16
    rows = validate(_cfg(name), _workload(dtype, batch), target="hf", device=device)
    measured = {row.quantity: row.measured for row in rows}
    quantities = ("backward matmul FLOPs", "bytes saved for backward")
    assert tuple(measured[q] for q in quantities) == MEASURED[(name, dtype, batch)]
    assert [(r.quantity, r.formula, r.measured) for r in rows if r.difference != 0] == []


@pytest.mark.slow
@pytest.mark.parametrize("index", range(12))
def test_odd_deepseek_v3_configs_are_exact_under_sdpa(index):
    """tests/family_odd_configs.py's twelve DeepSeek-V3 configs at b 2, n 9: eleven run the math
    path, the ninth (qk 8 + 8 against v 16) the flash kernel."""
    pytest.importorskip("transformers")
    from costmodel.hf import from_hf_config
    from tests.family_odd_configs import ODD_FAMILY_CONFIGS
    from validate.compare import validate

    cfg = from_hf_config(ODD_FAMILY_CONFIGS["deepseek_v3"][index], name="odd-deepseek_v3")
    assert _differs(cfg) == (index != 8)
    rows = validate(cfg, Workload(seq_len=9, batch=2, dtype="bf16", gen_tokens=2, attention="sdpa"))
    assert [(r.quantity, r.formula, r.measured) for r in rows if not r.ok] == []


def test_fit_verdict_offers_flash_where_sdpa_runs_the_math_path():
    """estimate --hardware's options (costmodel/verdict.py): sdpa instead of eager keeps no n x n
    matrix only on a fused kernel; where latent attention's widths send the CPU's sdpa to the math
    path (its fp32 softmax kept) the option is flash, as for a class without sdpa. On CUDA (the
    default) the memory-efficient kernel runs and sdpa is offered."""
    from costmodel.verdict import options, training_memory

    def attention_option(cfg, device: str = "cuda") -> str:
        workload = Workload(seq_len=4096, sdpa_device=device)
        found = options(cfg, workload, None, 2**50, 1, "training", training_memory)  # all fit
        return next(o.change for o in found if o.change.startswith("--attention"))

    assert attention_option(load_preset("deepseek-v2-lite"), "cpu") == "--attention flash"
    assert attention_option(load_preset("deepseek-v2-lite")) == "--attention sdpa"
    assert attention_option(_cfg("equal_widths"), "cpu") == "--attention sdpa"
    assert attention_option(load_preset("llama2-7b"), "cpu") == "--attention sdpa"


def test_on_cuda_latent_attention_under_sdpa_keeps_what_a_fused_kernel_keeps():
    """torch's CUDA sdpa runs its memory-efficient kernel for q/k of one width and v of another
    (sdp_utils.cpp check_head_dim_size_mem_efficient), so the default sdpa_device keeps the fused
    kernel's rules: flash's FLOPs, and none of the math path's fp32 n x n softmax (at 4,096 tokens
    and 128 heads that is 4 b h n^2 = 8 GiB a layer)."""
    cuda, cpu = _workload("bf16", 2).replace(sdpa_device="cuda"), _workload("bf16", 2)
    flash = cuda.replace(attention="flash")
    cfg = _cfg("deepseek_v3")
    assert not profile_for(cfg, cuda).value_width_differs
    backward = Estimate(cfg, cuda).total("flops_matmul_backward")
    assert backward == Estimate(cfg, flash).total("flops_matmul_backward") == 4_856_832 + 103_680  # Q K^T rerun
    # flash's bytes and, as sdpa's caller makes the query contiguous (facts sdpa_query_contiguous), the
    # output's copy for the output projection: 3 layers x b n h d_v x 2 = 3 x 2,016
    assert Estimate(cfg, cuda).total("saved_bytes") == Estimate(cfg, flash).total("saved_bytes") + 3 * 2_016 \
        == 212_708
    assert Estimate(cfg, cpu).total("saved_bytes") == 243_812  # the CPU's math path, measured
    with pytest.raises(ConfigError, match="sdpa_device"):
        Workload(sdpa_device="tpu")


def test_a_layout_on_cpu_ranks_runs_the_cpus_sdpa():
    """--device cpu (Layout.device) says where the ranks run, and so whose sdpa dispatch they follow
    (defaults.sdpa_runs_math): CPU ranks keep the math path's bytes (the measured 243,812 on odd
    DeepSeek-V3, b 2, n 12, bf16), CUDA ranks the memory-efficient kernel's 212,708, whatever the
    workload's own sdpa_device (the review of session 17 found CPU ranks given CUDA's figures)."""
    from costmodel.layout import Layout, ParallelEstimate

    workload = _workload("bf16", 2).replace(sdpa_device="cuda")
    per_rank = {device: ParallelEstimate(_cfg("deepseek_v3"), workload, Layout(dp=2, device=device))
                .to_dict()["per_rank"]["activations"] for device in ("cuda", "cpu")}
    assert per_rank == {"cuda": 212_708, "cpu": 243_812}
