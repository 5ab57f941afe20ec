"""The no-grad forward's n x n scores (kernels.Kernel.scores_live_no_grad) against a measurement.

A TorchDispatchMode records, after each aten op of a Hugging Face prefill under no_grad on the CPU,
the bytes of the live storages the forward made; the largest sum of those of exactly b h n n
elements (2 or 4 bytes each) is the scores' term, which the analytic transient equals to the byte.
The whole prefill peak is MemTracker's (validate.measure.peak_memory_memtracker's tracker, no_grad);
the analytic total stays below it (a lower bound: the layer's other tensors are not counted).
d = 96, h = 4, 2 layers, vocabulary 1000; at b = 3, n = 37: pairs = 3 x 4 x 37 x 37 = 16,428.
"""

from __future__ import annotations

import pytest
import torch
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from costmodel.config import Workload
from costmodel.peak import inference_peak_bytes
from costmodel.presets import load_preset
from validate.compare import build

PAIRS = 3 * 4 * 37 * 37


def llama():
    return load_preset("llama2-7b").replace(name="llama-96", vocab_size=1000, d_model=96, n_heads=4,
                                            n_kv_heads=2, d_ff=256, n_decoder_layers=2, max_positions=512)


def gpt2():
    return load_preset("gpt2").replace(name="gpt2-96", vocab_size=1000, d_model=96, n_heads=4, d_ff=384,
                                       n_decoder_layers=2, max_positions=512)


class SizedLive(TorchDispatchMode):
    """Largest bytes of live storages of `elements` elements (2 or 4 bytes each) after any op."""

    def __init__(self, elements: int) -> None:
        super().__init__()
        self.elements = elements
        self.storages: dict[int, tuple[StorageWeakRef, int]] = {}
        self.largest = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
        out = func(*args, **(kwargs or {}))
        self.storages = {k: v for k, v in self.storages.items() if not v[0].expired()}
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor) and t.untyped_storage().nbytes() in (2 * self.elements, 4 * self.elements):
                st = t.untyped_storage()
                self.storages.setdefault(st.data_ptr(), (StorageWeakRef(st), st.nbytes()))
        self.largest = max(self.largest, sum(size for _, size in self.storages.values()))
        return out


def measure(cfg, workload: Workload) -> tuple[int, int, int]:
    """The largest live bytes of the scores (b h n n elements) and of the FFN's hidden tensors
    (b n d_ff), and MemTracker's peak Total, of one no-grad prefill."""
    from torch.distributed._tools.mem_tracker import MemTracker

    torch.manual_seed(0)
    model, _, prompt = build(cfg, workload, "hf")
    model.eval()
    b, n = workload.batch, workload.seq_len
    scores, hidden = SizedLive(b * cfg.n_heads * n * n), SizedLive(b * n * cfg.d_ff)
    for mode in (scores, hidden):
        with torch.no_grad(), mode:
            model(**prompt, use_cache=True)
    tracker = MemTracker()
    tracker.track_external(model, *prompt.values())
    with torch.no_grad(), tracker:
        model(**prompt, use_cache=True)
    (snapshot,) = tracker.get_tracker_snapshot("peak").values()
    return scores.largest, hidden.largest, int(snapshot["Total"])


# (model, dtype, attention, b, n, the scores' bytes (pairs x bytes a pair), the FFN's (b n d_ff x e x
# tensors held), MemTracker's peak, the analytic total); at 3 x 37 the logits (b n V e) outweigh both
# transients, at 1 x 101 the scores win. 3 x 37 x 256 = 28,416 (Llama's d_ff), x 384 = 42,624 (GPT-2's).
CASES = [
    (llama, "fp32", "eager", 3, 37, 8 * PAIRS, 3 * 4 * 28_416, 2_268_188, 2_111_160),  # product, scaled copy
    (llama, "bf16", "eager", 3, 37, 10 * PAIRS, 3 * 2 * 28_416, 1_138_286, 1_056_072),  # masked, fp32 cast, softmax
    (gpt2, "fp32", "eager", 3, 37, 8 * PAIRS, 4 * 4 * 42_624, 2_639_228, 2_329_464),  # Python gelu: 4 tensors
    (gpt2, "bf16", "eager", 3, 37, 4 * PAIRS, 4 * 2 * 42_624, 1_320_206, 1_165_176),  # bf16 softmax: in and out
    (llama, "bf16", "sdpa", 3, 37, 0, 3 * 2 * 28_416, 1_093_664, 1_056_072),  # the fused kernel keeps no n x n
    # 4 x 101^2 = 40,804 pairs x 10 B = 408,040 > the logits' 202,000: the total was 1,032,152
    (llama, "bf16", "eager", 1, 101, 408_040, 3 * 2 * 101 * 256, 1_385_450, 1_238_192),
]


@pytest.mark.parametrize("make,dtype,attention,b,n,scores,ffn,peak,total", CASES)
def test_prefill_transients_are_exact(make, dtype, attention, b, n, scores, ffn, peak, total):
    cfg = make()
    workload = Workload(seq_len=n, batch=b, dtype=dtype, attention=attention)
    analytic = inference_peak_bytes(cfg, workload.replace(impl="hf"))
    assert analytic["phase"] == "prefill"
    assert analytic["transient"] == max(scores, ffn)
    assert analytic["total"] == total
    assert measure(cfg, workload) == (scores, ffn, peak)
    assert analytic["total"] <= peak  # a lower bound still: the layer's other tensors


def test_a_100k_eager_prefill_does_not_fit_where_its_scores_do_not():
    """Llama 3 8B, bf16, 1 x 100,000, eager: 32 heads x 1e10 pairs x 10 B = 3.2e12 B of scores,
    which no GPU holds; sdpa keeps none, its largest transient the FFN's 3 x 2 B x 1e5 x 14,336:
    weights 16,060,522,496 + buffers 512 + ids 800,000 + cache 13,107,200,000 (131,072 B a token)
    + 8,601,600,000 (more than generate's last-position logits, 256,512 B)."""
    from costmodel.verdict import inference_memory

    cfg = load_preset("llama3-8b")
    eager = Workload(seq_len=100_000, batch=1, gen_tokens=1, dtype="bf16", attention="eager")
    assert inference_peak_bytes(cfg, eager)["transient"] == 32 * 10**10 * 10
    assert inference_memory(cfg, eager) > 32 * 10**11
    assert inference_memory(cfg, eager.replace(attention="sdpa")) == 37_770_123_008
