"""A forward that replaces a buffer must not hide a saved tensor (validate/measure/saved.py SavedRecorder).

Storages are told apart by the address of their StorageImpl. CTRLModel.forward casts its pos_encoding
buffer to the activations' dtype and assigns it back, freeing the fp32 table; the recorder had kept only
the old table's address, and where the allocator handed that address to a storage the forward then
saved, the storage was counted as a parameter's. So ctrl's eager row read 48 bytes (one layer norm's
mean) fewer in 2 of 5 long test processes (102,244 against 102,292), exact alone. The recorder now
holds the parameters' and buffers' storages until its result (validate/FINDINGS.md, session 26)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn


class ReplacesBuffer(nn.Module):
    """As CTRLModel.forward: a buffer cast and assigned back, then eight factors saved for backward."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.ones(4, 4))
        self.register_buffer("table", torch.ones(8, 4), persistent=False)

    def forward(self, x):
        self.table = self.table.to(torch.float64)  # the fp32 table's storage freed here
        y = x @ self.w
        for _ in range(8):
            y = y * torch.full((3, 4), 2.0)  # MulBackward0 saves each 3 x 4 fp32 factor: 48 bytes
        return y.sum()


@pytest.mark.parametrize("fake", [False, True])
def test_a_replaced_buffer_hides_no_saved_tensor(fake):
    """x (3 x 4 fp32, 48 bytes, saved by the matmul) and eight 48-byte factors: 432 bytes, every time;
    the weight is the parameter. Holding only the old table's address gave 384 on real tensors in five
    runs of five (one factor taken for a parameter), and on fake tensors in some processes, not others."""
    import contextlib

    from validate.hf_models import fake_mode
    from validate.measure.saved import saved_activation_bytes

    for _ in range(5):
        with fake_mode() if fake else contextlib.nullcontext():
            model = ReplacesBuffer()
            result = saved_activation_bytes(model, {"x": torch.ones(3, 4, requires_grad=True)},
                                            loss_fn=lambda out: out)
        assert result.total_bytes == 48 + 8 * 48 == 432
        assert [t.kind for t in result.tensors] == ["parameter"] + ["new"] * 9


def test_ctrl_replaces_its_table_in_forward():
    """The cause on ctrl: CTRLModel keeps pos_encoding in fp32 (4 x 64 x 48 = 12,288 bytes at 64
    positions) and its forward assigns a bf16 copy back, a new storage; the old one is freed."""
    pytest.importorskip("transformers")
    from costmodel.config import Workload
    from costmodel.presets import config_from_dict
    from tests.test_hf_ctrl import CONFIGS
    from validate.compare import build
    from validate.hf_models import fake_mode

    cfg = config_from_dict(dict(CONFIGS["ctrl"]), source="ctrl", name="ctrl")
    with fake_mode():
        model, inputs, _ = build(cfg, Workload(seq_len=12, batch=2, dtype="bf16", gen_tokens=2), "hf")
        before = model.transformer.pos_encoding
        assert before.dtype == torch.float32 and before.untyped_storage().nbytes() == 12_288
        model(**inputs)
        after = model.transformer.pos_encoding
    assert after.dtype == torch.bfloat16 and after.untyped_storage()._cdata != before.untyped_storage()._cdata
