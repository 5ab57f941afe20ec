"""Two context managers every builder of a measured model uses: FakeTensorMode for full-size
models without memory, and torch's default dtype while building (`.to(dtype)` fails under
FakeTensorMode). Apart from hf_models.py so that hf_families.py can use them without importing
hf_models.py, which imports it back (no import cycle); hf_models re-exports both.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
from torch._subclasses.fake_tensor import FakeTensorMode


@contextlib.contextmanager
def fake_mode() -> Iterator[FakeTensorMode]:
    """Run the body under FakeTensorMode: shapes and dtypes without memory or compute."""
    with FakeTensorMode(allow_non_fake_inputs=True) as mode:
        yield mode


@contextlib.contextmanager
def default_dtype(dtype: torch.dtype | None) -> Iterator[None]:
    """Set torch's default dtype for the body (None: leave it) and restore it afterwards."""
    previous = torch.get_default_dtype()
    if dtype is not None:
        torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(previous)
