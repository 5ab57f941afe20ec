"""formula == measurement against Hugging Face's own classes (code nobody here wrote).

For each odd-sized config the class a user trains is built from the config under FakeTensorMode
(no weights, no memory) and measured: parameters, matmul FLOPs of a forward and of its backward
(FlopCounterMode, eager attention), and the KV cache after a prefill and three decode steps, at two
(n, b) with b > 1, in fp32 and bf16. Every comparison is exact.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from costmodel.config import Workload  # noqa: E402
from costmodel.estimation import Estimate  # noqa: E402
from tests.odd_configs import odd_configs  # noqa: E402
from validate.hf_models import build_hf_model, fake_mode, make_inputs  # noqa: E402
from validate.measure import count_parameters, kv_cache_bytes, matmul_flops  # noqa: E402

WORKLOADS = [(2, 10, 7), (3, 13, 13)]  # (batch, seq_len, decoder length of encoder-decoders)
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
GEN_TOKENS = 3


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("cfg", odd_configs(), ids=lambda c: c.name)
def test_params_flops_and_kv_cache_equal_hugging_face(cfg, dtype):
    encoder_decoder = cfg.architecture == "encoder-decoder"
    with fake_mode():
        model = build_hf_model(cfg, "eager", DTYPES[dtype])
        measured_params = count_parameters(model)
        for batch, seq_len, tgt_len in WORKLOADS:
            workload = Workload(
                seq_len=seq_len, batch=batch, dtype=dtype, gen_tokens=GEN_TOKENS,
                tgt_len=tgt_len if encoder_decoder else None,
            )
            formula = Estimate(cfg, workload)
            inputs = make_inputs(cfg, batch, seq_len, tgt_len=workload.tgt_len,
                                 labels=cfg.family != "bert")
            flops = matmul_flops(model, inputs, backward=True)
            assert flops.forward == formula.total("flops_matmul"), (batch, seq_len)
            assert flops.backward == formula.total("flops_matmul_backward"), (batch, seq_len)
            if cfg.has_kv_cache:
                prompt = make_inputs(cfg, batch, seq_len, tgt_len=workload.tgt_len)
                kv = kv_cache_bytes(model, prompt, gen_tokens=GEN_TOKENS)
                assert kv == formula.memory_numbers()["kv_cache"], (batch, seq_len)
    assert measured_params == formula.total("params")
