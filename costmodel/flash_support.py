"""Where FlashAttention-2 runs: Ampere (sm80) and later GPUs only, so on Volta and Turing the
commands take sdpa by default and refuse a typed flash (kernel_facts.json "flash_attention_missing",
each architecture with its source). Kept apart from hardware.py, which the facts reader imports."""

from __future__ import annotations

from .config import ConfigError
from .hardware import Hardware
from .hardware_schema import GENERATIONS
from .kernel_rates import kernel_facts


def runs_flash(hardware: Hardware) -> bool:
    """Whether FlashAttention-2 runs on this GPU: not on Volta or Turing; a file with no
    architecture is not refused."""
    return hardware.architecture not in kernel_facts()["flash_attention_missing"]["architectures"]


def flash_note(hardware: Hardware) -> str:
    """The sentence a command prints where its default flash gave way to sdpa (defaults.serving_attention)."""
    return (f"attention sdpa: FlashAttention-2 runs on Ampere (sm80) and later, and {hardware.name} is "
            f"{GENERATIONS.get(hardware.architecture, hardware.architecture)}; torch's sdpa runs its memory-efficient "
            "kernel there (vLLM its XFormers backend, the same CUTLASS kernel), which keeps no n x n matrix "
            "either; no published rate of it is known here, so its calls run at the large-GEMM efficiency.")


def require_attention(hardware: Hardware, attention: str | None) -> None:
    """Refuse --attention flash where FlashAttention-2 does not run (runs_flash), in one line."""
    if attention == "flash" and not runs_flash(hardware):
        raise ConfigError(f"--attention flash: FlashAttention-2 runs on Ampere (sm80) and later GPUs, and "
                          f"{hardware.name} is {GENERATIONS.get(hardware.architecture, hardware.architecture)}; use "
                          "--attention sdpa (torch's memory-efficient kernel, which keeps no n x n matrix either) or eager.")
