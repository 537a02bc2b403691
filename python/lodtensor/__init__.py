"""lodtensor: LoD tensor datasets, memory-mapped and validated, and a training-batch loader.

    import lodtensor as lt
    ds = lt.open("docs.arrow")
    loader = ds.loader(token_budget=4096, shuffle=True, seed=1)
    for batch in loader:
        tokens = batch.values("tokens")        # numpy view into the mapping (or the gather)
        sentence_offsets = batch.offsets("tokens", 1)

Values reach numpy and pyarrow without a copy: arrays point into the file's mapping and keep
it alive. Every Rust step runs with the GIL released.
"""

from __future__ import annotations

import os
from typing import Any

import pyarrow as pa

from . import _native
from ._native import Batch, Dataset, Loader, LodTensorError

__all__ = ["open", "write", "Dataset", "Loader", "Batch", "LodTensorError"]
__version__ = "0.1.0"


def open(path: str | os.PathLike, columns: list[str] | None = None) -> Dataset:  # noqa: A001
    """Maps and validates the dataset file at ``path``.

    Every offset of every level is checked before anything is read; no value is read or
    copied. Raises ``FileNotFoundError`` for a missing file and ``LodTensorError`` (a
    ``ValueError``) for an invalid one, with the file, column, level and index at fault.
    ``columns`` is not supported yet (every column is mapped; mapping costs no reads).
    """
    if columns is not None:
        raise LodTensorError("open(path, columns=...): column projection is not supported yet")
    return _native.open(os.fspath(path))


def write(
    path: str | os.PathLike,
    data: Any,
    *,
    offset_width: str = "i64",
    batch_bytes: int | None = None,
) -> dict:
    """Writes ``data`` to ``path`` as a validated lodtensor file, atomically.

    ``data`` is a ``pyarrow.Table``, a ``RecordBatch``, a list of record batches, or any
    object with ``__arrow_c_stream__``. Each column must be a LoD tensor column (nested
    lists over fixed-size lists or primitives, no nulls); the file is written under a
    temporary name and renamed over ``path`` only once complete, so a reader never sees a
    partial file. ``offset_width`` is ``"i64"`` (LargeList) or ``"i32"`` (List);
    ``batch_bytes`` the target size of one record batch (default 64 MiB).
    Returns ``{"rows", "batches", "bytes"}``.
    """
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    elif isinstance(data, (list, tuple)):
        data = pa.Table.from_batches(list(data))
    return _native.write(os.fspath(path), data, offset_width, batch_bytes)

