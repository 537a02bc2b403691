"""``Batch.to_torch_nested`` (the binding imports this module): see ``lodtensor.torch``."""

from __future__ import annotations

from .torch import to_nested

__all__ = ["to_nested"]
