"""Small models and the one 2-rank gloo run that the distributed tests share.

tests/test_distributed_measure.py checks the harness (validate/distributed) against hand-written
formulas; tests/test_layout.py checks the layout model (costmodel/layout) against the same runs.
The `gloo` fixture (tests/conftest.py) spawns the two ranks once per session for both.
"""

from __future__ import annotations

from costmodel.presets import load_preset
from validate.distributed.fsdp import FsdpCase, measure_fsdp
from validate.distributed.pipeline import PipelineCase, measure_pipeline
from validate.distributed.tensor_parallel import TpCase, measure_tp

LLAMA = load_preset("llama2-7b")
TINY = LLAMA.replace(name="tiny", vocab_size=99, d_model=48, n_heads=6, n_kv_heads=2, d_ff=37,
                     n_decoder_layers=2, max_positions=64)
TINY_TP = TINY.replace(name="tiny-tp", d_ff=38)  # TP splits d_ff evenly
TINY_PP = TINY.replace(name="tiny-pp", n_decoder_layers=4)
WIDE_TP = TINY.replace(name="tiny-tp4", n_heads=8, n_kv_heads=4, d_ff=44)  # divisible by t = 4

GLOO_CASES = {
    "fsdp_auto": (measure_fsdp, FsdpCase(TINY)),
    "fsdp_mp_reshard": (measure_fsdp, FsdpCase(TINY, reshard_after_forward=True, mixed_precision=True,
                                               memory_tracker=False)),
    "tp": (measure_tp, TpCase(TINY_TP)),
    "tp_sp": (measure_tp, TpCase(TINY_TP, sequence_parallel=True)),
    "pp_1f1b": (measure_pipeline, PipelineCase(TINY_PP, schedule="1f1b")),
    "pp_gpipe": (measure_pipeline, PipelineCase(TINY_PP, schedule="gpipe")),
    "pp_interleaved": (measure_pipeline, PipelineCase(TINY_PP, schedule="interleaved", virtual_stages=2)),
}
