"""Parallel layouts (DP, TP, SP, PP, ZeRO/FSDP): per-rank memory and communication, as
substitutions and sums over the cost tree's leaves.

  spec.py        Layout: the sizes, schedule, ZeRO stage and framework, validated
  frameworks.py  Megatron, DeepSpeed and FSDP2's conventions, as data
  split.py       which leaves tensor and sequence parallelism split (a substitution per block)
  parts.py       the cost tree cut into parts (embedding, shared, layer, tail, head) as per-rank expressions
  rank.py        ParallelEstimate: what each pipeline rank holds (memory), summed over its parts
  communication.py  what each rank sends: its collectives' payloads and wire bytes
"""

from .frameworks import FRAMEWORKS, Framework
from .rank import ParallelEstimate
from .spec import SCHEDULES, Layout

__all__ = ["FRAMEWORKS", "Framework", "Layout", "ParallelEstimate", "SCHEDULES"]
