"""torch conversions of batches (torch is optional: imported only here)."""

from __future__ import annotations

import warnings


def to_nested(batch, column: str, level: int | None = None):
    """Level ``level`` (default: the last) of ``column`` as a jagged ``torch.nested`` tensor.

    One entry per sequence of that level, ``[length, *element_shape]``, over the batch's
    values without a copy. The values of a view batch are read-only memory (the mapping):
    do not write into the tensor.
    """
    import torch

    levels = batch.num_levels(column)
    if levels == 0:
        raise batch_error(f"column {column!r} has no levels: it is dense already")
    if level is None:
        level = levels - 1
    offsets = batch.offsets(column, level)
    for below in range(level + 1, levels):
        offsets = batch.offsets(column, below)[offsets]
    values = batch.values(column)
    with warnings.catch_warnings():
        # torch warns that the array is not writable: the mapping is read-only.
        warnings.simplefilter("ignore", UserWarning)
        values = torch.from_numpy(values)
    return torch.nested.nested_tensor_from_jagged(values, torch.from_numpy(offsets))


def batch_error(message: str):
    from . import ArgumentError

    return ArgumentError(message)
