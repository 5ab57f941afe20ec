"""formula == measurement for every family of issue 14, a dozen odd configs each.

Each config.json dict of tests/family_odd_configs.py is read twice: by costmodel.hf (the analytic
side, plain JSON) and by transformers itself (validate.hf_families builds the class a user trains
from the dict), so a field we read differently from transformers shows up as a wrong number. For
each: parameters; forward and backward matmul FLOPs (FlopCounterMode, with the grouped_mm formula
for the experts) and bytes saved for backward (eager attention, the model's own loss) at two
workloads, b = 2, n = 10 and b = 1, n = 7, saved bytes in fp32 and bf16; and the KV cache after the
prefill and after each of three decode steps (n = 10 passes every window here, so the windowed
caches' shrink at the first step is in it; tests/golden/hf_families.py). Every comparison is exact. Dense families and bf16
run under FakeTensorMode; the experts in fp32 run on real tensors (the fake grouped_mm takes only
bf16, FINDINGS 11.3). tests/test_golden.py compares the formulas with the measurements recorded
in tests/golden/hf_families.json; here (slow) the classes are measured again and must give the
record.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from costmodel.config import Workload  # noqa: E402
from costmodel.estimation import Estimate  # noqa: E402
from costmodel.hf import from_hf_config  # noqa: E402
from tests.golden import read, stale  # noqa: E402
from tests.golden.hf_families import CASES, NAME, built, estimate, measure  # noqa: E402
from validate.hf_families import family_inputs  # noqa: E402
from validate.measure import matmul_flops  # noqa: E402

pytestmark = pytest.mark.measured


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[name for name, _ in CASES])
def test_family_config_equals_hugging_face(case):
    """Measured again (one build per dtype, one training pass per workload) and equal to
    tests/golden/hf_families.json, which tests/test_golden.py compares with the formulas."""
    name, config = case
    assert measure(config) == read(NAME)["cases"][name], stale(NAME)


# ---------------------------------------------------------------------------------------------
# The inverse mapping (`validate --config`): ModelConfig -> config.json -> the same ModelConfig


# Llama, Mistral and Qwen2 are built from their configuration class (validate.hf_models._llama_like),
# not from a config dict, so only the other families have an inverse mapping to check.
INVERTED = [(name, config) for name, config in CASES
            if from_hf_config(config, name="odd").family not in ("llama", "mistral", "qwen2")]


@pytest.mark.parametrize("case", INVERTED, ids=[name for name, _ in INVERTED])
def test_config_dict_reads_back_as_the_same_model(case):
    from validate.hf_config_dict import config_dict

    _, config = case
    cfg = from_hf_config(config, name="odd")
    assert from_hf_config(config_dict(cfg), name="odd") == cfg


@pytest.mark.slow
@pytest.mark.parametrize("family", ["qwen3", "gemma2", "phi3", "gpt_neox", "falcon", "opt", "bloom",
                                    "mixtral", "qwen2_moe", "deepseek_v3"])
def test_validate_command_path_is_exact(family):
    """validate.compare.validate builds the class from the ModelConfig (the inverse mapping) and
    compares every row: parameters, FLOPs, other-op elements, saved bytes, KV cache."""
    from tests.family_odd_configs import ODD_FAMILY_CONFIGS
    from validate.compare import validate

    cfg = from_hf_config(ODD_FAMILY_CONFIGS[family][0], name=f"odd-{family}")
    rows = validate(cfg, Workload(seq_len=9, batch=2, dtype="bf16", gen_tokens=2))
    assert [(r.quantity, r.formula, r.measured) for r in rows if not r.ok] == []


#: (family, index in tests/family_odd_configs.py) validated under sdpa: every Mistral (windows that
#: bite or not, one KV head), Phi-3's fused and partial-rotary layouts, GPT-NeoX's, Falcon's new
#: layout (a mask on every layer), Qwen2's.
SDPA_CASES = [*(("mistral", i) for i in range(6)), ("phi3", 0), ("phi3", 3), ("phi3", 7),
              ("gpt_neox", 0), ("gpt_neox", 3), ("falcon", 0), ("qwen2", 0)]


@pytest.mark.slow
@pytest.mark.parametrize("family, index", SDPA_CASES)
def test_validate_command_path_is_exact_under_sdpa(family, index):
    """Under sdpa the kernel keeps what transformers hands it: a window's mask and K/V repeated to
    h heads (a view for one KV head), Falcon's mask on every layer, and where the query is a
    torch.cat (partial rotary) the output projection keeps its own copy (facts sdpa_mask,
    sdpa_query_contiguous: GPT-NeoX's odd config kept 4,608 bytes more than the tree without)."""
    from tests.family_odd_configs import ODD_FAMILY_CONFIGS
    from validate.compare import validate

    cfg = from_hf_config(ODD_FAMILY_CONFIGS[family][index], name=f"odd-{family}")
    rows = validate(cfg, Workload(seq_len=9, batch=2, dtype="bf16", gen_tokens=2, attention="sdpa"))
    assert "bytes saved for backward" in {r.quantity for r in rows}
    assert [(r.quantity, r.formula, r.measured) for r in rows if not r.ok] == []


# ---------------------------------------------------------------------------------------------
# A decode step: windowed layers attend min(c, w) keys; MLA re-projects every cached latent


@pytest.mark.slow
@pytest.mark.parametrize("family, index", [("mistral", 0), ("gemma2", 0), ("phi3", 0),
                                           ("qwen2", 6), ("deepseek_v3", 0), ("deepseek_v3", 1),
                                           ("falcon", 0), ("mixtral", 5), ("opt", 0)])
def test_decode_step_flops_equal_the_decode_tree(family, index):
    from tests.family_configs import assert_decode_flops_exact
    from tests.family_odd_configs import ODD_FAMILY_CONFIGS

    assert_decode_flops_exact(ODD_FAMILY_CONFIGS[family][index], family)


# ---------------------------------------------------------------------------------------------
# The experts against the routing observed on real tensors


@pytest.mark.slow
@pytest.mark.parametrize("family, index", [("mixtral", 0), ("qwen2_moe", 0), ("deepseek_v3", 0)])
def test_expert_flops_follow_the_observed_routing(family, index):
    """On real tensors the router sends each expert its own share of the k b n slots. Given that
    share (--expert-load), the estimate's tokens per expert are the observed ones and its
    per-expert FLOPs sum to what the layer's grouped products cost; the totals equal the
    balanced estimate's, whatever the routing."""
    from tests.family_odd_configs import ODD_FAMILY_CONFIGS
    from validate.measure import expert_loads

    config = ODD_FAMILY_CONFIGS[family][index]
    inputs = family_inputs(config, 2, 10)
    with built(config, torch.float32) as model:  # experts in fp32: real tensors
        loads = expert_loads(model, inputs)
        flops = matmul_flops(model, inputs, depth=6)
    balanced = estimate(config, 2, 10, "fp32")
    assert flops.forward == balanced.total("flops_matmul")
    cfg = from_hf_config(config, name="odd")
    for path, load in loads.items():
        given = Estimate(cfg, Workload(seq_len=10, batch=2, dtype="fp32", expert_load=tuple(load)))
        moe = given.to_dict()["moe"]
        assert moe["tokens_per_expert"] == load
        grouped = sum(v for k, v in flops.forward_by_module.items() if k.startswith(path))
        assert sum(moe["expert_flops_forward"]) == grouped, path
        assert given.total("flops_matmul") == balanced.total("flops_matmul")
