"""Issue 14's flagship presets against Hugging Face's own classes, full size, under FakeTensorMode.

Each preset is the model's config.json; transformers builds its class from the dict (no weights,
no memory), and the parameter count must equal both the cost tree's and the count cited in
tests/published.py. Two of them are also run: a forward and backward at b = 1, n = 64 must cost
the FLOPs the tree says (the experts through the grouped_mm formula), and the KV cache after the
prefill must hold the bytes it says (DeepSeek-V3: the compressed latent, 576 values per token per
layer).
"""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from costmodel.config import Workload  # noqa: E402
from costmodel.estimation import Estimate  # noqa: E402
from costmodel.presets import PRESET_DIR, load_preset  # noqa: E402
from tests.published import FLAGSHIPS, PUBLISHED_ACTIVE  # noqa: E402
from validate.hf_families import build_hf_from_dict, family_inputs  # noqa: E402
from validate.hf_models import fake_mode  # noqa: E402
from validate.measure import count_parameters, kv_cache_bytes, matmul_flops  # noqa: E402

NAMES = sorted(FLAGSHIPS)
#: Classes that cannot be built under FakeTensorMode, counted on the meta device instead (the same
#: parameters): DeepseekV4ForCausalLM's modules call .to(dtype=torch.float32) in __init__, which
#: fails there ("Couldn't swap DeepseekV4RMSNorm.weight").
META_ONLY = {"deepseek-v4-flash"}


def preset_dict(name: str) -> dict:
    """The preset's config.json, without its torch_dtype (from_config would build in that dtype
    rather than the one the test sets)."""
    config = json.loads((PRESET_DIR / f"{name}.json").read_text())
    config.pop("torch_dtype", None)
    return config


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_flagship_parameters_equal_the_class(name):
    if name in META_ONLY:
        with torch.device("meta"):
            measured = count_parameters(build_hf_from_dict(preset_dict(name)))
    else:
        with fake_mode():
            model = build_hf_from_dict(preset_dict(name), dtype=torch.bfloat16)
            measured = count_parameters(model)
    assert measured == FLAGSHIPS[name]
    estimate = Estimate(load_preset(name), Workload(seq_len=8)).to_dict()["params"]
    assert estimate["total"] == measured
    assert estimate.get("active") == PUBLISHED_ACTIVE.get(name)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["mixtral-8x7b", "deepseek-v3", "gemma2-9b"])
def test_flagship_flops_and_cache_equal_the_class(name):
    config = preset_dict(name)
    workload = Workload(seq_len=64, batch=1, dtype="bf16")
    estimate = Estimate(load_preset(name), workload)
    with fake_mode():
        model = build_hf_from_dict(config, dtype=torch.bfloat16)
        flops = matmul_flops(model, family_inputs(config, 1, 64, labels=True), backward=True)
        assert flops.forward == estimate.total("flops_matmul")
        assert flops.backward == estimate.total("flops_matmul_backward")
        model.eval()
        assert kv_cache_bytes(model, family_inputs(config, 1, 64)) == \
            estimate.memory_numbers()["kv_cache"]
