"""The error every invalid input raises: a model config, a workload, a layout, a hardware file.

It lives apart from config.py so that modules config.py reads (quantization.py) can raise it
without importing config.py back (no import cycle). costmodel.config re-exports it.
"""

from __future__ import annotations


class ConfigError(ValueError):
    """An invalid model config or workload; the message is one sentence for the user."""
