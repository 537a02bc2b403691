"""lodtensor: LoD tensor datasets, memory-mapped and validated, sharded datasets written by
many workers, and a training-batch loader (``lodtensor.ray`` reads and writes shards from Ray
Data).

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
from ._native import (
    ArgumentError,
    Batch,
    ColumnNotFoundError,
    Dataset,
    InternalError,
    InvalidDataError,
    InvalidFileError,
    Loader,
    LoaderIterator,
    LodTensorError,
    Mixture,
    OutOfRangeError,
    ShardedDataset,
    ShardWriter,
    UnsupportedError,
    UnusableError,
    mix,
)

__all__ = [
    "open",
    "write",
    "write_shards",
    "commit",
    "vacuum",
    "mix",
    "Mixture",
    "Dataset",
    "ShardedDataset",
    "ShardWriter",
    "Loader",
    "LoaderIterator",
    "Batch",
    "LodTensorError",
    "InvalidFileError",
    "InvalidDataError",
    "ArgumentError",
    "OutOfRangeError",
    "ColumnNotFoundError",
    "UnsupportedError",
    "UnusableError",
    "InternalError",
]
__version__ = "0.1.0"


def open(  # noqa: A001
    path: str | os.PathLike, columns: list[str] | None = None
) -> Dataset | ShardedDataset:
    """Opens the dataset file, or the sharded dataset directory, at ``path``.

    A file is mapped and validated: every offset of every level is checked before anything
    is read; no value is read or copied. A directory (``_lodtensor.json`` and its shards)
    gives a ``ShardedDataset``: opening reads the manifest only, and each shard is mapped
    and checked against the manifest (size, CRC-32C, counts) when first touched.
    Raises ``FileNotFoundError`` for a missing file or manifest and ``InvalidFileError`` (a
    ``LodTensorError``, a ``ValueError``) for an invalid one, with the file, shard, column,
    level and index at fault. ``columns`` (a file only) reads just those columns, in that order: the others are
    never decoded or validated, so opening costs what the chosen columns cost.

        >>> ds = lt.open("shards/")              # doctest: +SKIP
        >>> ds.num_rows, ds.num_shards           # doctest: +SKIP
        (200, 4)
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        if columns is not None:
            raise ArgumentError("open(DIR, columns=...): sharded datasets are read whole")
        return _native.open_shards(path)
    return _native.open(path, None if columns is None else list(columns))


def write(
    path: str | os.PathLike,
    data: Any,
    *,
    offset_width: str = "i64",
    batch_bytes: int | None = None,
    compression: str | None = None,
) -> dict:
    """Writes ``data`` to ``path`` as a validated lodtensor file, atomically.

    ``data`` is a ``pyarrow.Table``, a ``RecordBatch``, a list of record batches, or any
    object with ``__arrow_c_stream__``. Each column must be a LoD tensor column (nested
    lists over fixed-size lists or primitives, no nulls); the file is written under a
    temporary name and renamed over ``path`` only once complete, so a reader never sees a
    partial file. ``offset_width`` is ``"i64"`` (LargeList) or ``"i32"`` (List);
    ``batch_bytes`` the target size of one record batch (default 64 MiB). ``compression``
    is ``None`` (mapped without a copy when read), ``"zstd"`` or ``"lz4"``: Arrow IPC body
    compression, a smaller file whose values are decompressed into memory when opened.
    Returns ``{"rows", "batches", "bytes"}``.

        >>> lt.write("tokens.arrow", table, compression="zstd")     # doctest: +SKIP
    """
    return _native.write(
        os.fspath(path), _as_stream(data), offset_width, batch_bytes, compression
    )


def write_shards(
    path: str | os.PathLike,
    data: Any,
    *,
    mode: str = "create",
    shard_rows: int | None = None,
    shard_bytes: int | None = None,
    prefix: str | None = None,
    offset_width: str = "i64",
    batch_bytes: int | None = None,
    compression: str | None = None,
) -> dict:
    """Writes ``data`` to the directory ``path`` as a sharded dataset (``format-spec.md``
    §7.1): lodtensor files ``PREFIX-00000.arrow``, … and the manifest ``_lodtensor.json``.

    ``data`` is what ``write`` takes. A shard is closed at ``shard_rows`` rows or
    ``shard_bytes`` bytes of values and offsets (default 256 MiB). Each shard is written
    atomically under ``_pending/`` (which ``pyarrow.dataset`` ignores) and the manifest
    replaced atomically last, so a crash leaves the previous dataset readable and a failure
    leaves no shard. ``mode`` is ``"create"``, ``"append"`` (to an existing dataset; any
    number of appenders may run at once, none loses rows), or
    ``"pending"`` for one of many independent writers: each takes its own ``prefix``
    (default ``"part"``) and records its shards in a pending manifest, and
    ``lodtensor.commit(path)`` then merges them. ``compression`` (``"zstd"``, ``"lz4"``)
    compresses every shard, as ``write``. Returns the manifest written, as a dict.

        >>> lt.write_shards("shards/", table, shard_rows=1000)         # doctest: +SKIP
        >>> lt.write_shards("shards/", part, mode="pending", prefix="w3")  # doctest: +SKIP
        >>> lt.commit("shards/")                                       # doctest: +SKIP
    """
    with ShardWriter(
        os.fspath(path),
        mode=mode,
        shard_rows=shard_rows,
        shard_bytes=shard_bytes,
        prefix=prefix,
        offset_width=offset_width,
        batch_bytes=batch_bytes,
        compression=compression,
    ) as writer:
        writer.write(_as_stream(data))
        return writer.finish()


def commit(path: str | os.PathLike) -> dict:
    """Merges every pending manifest in the directory ``path`` (written by
    ``write_shards(..., mode="pending")`` or ``ShardWriter(mode="pending")`` workers) into
    the dataset's manifest, replaced atomically, then removes them; writers appending at
    the same time are merged, never lost. Idempotent: run it again after a crash. Returns
    the manifest, as a dict."""
    return _native.commit(os.fspath(path))


def vacuum(path: str | os.PathLike, *, grace: float = 86400.0) -> list[str]:
    """Removes the files of the sharded dataset in the directory ``path`` that no manifest
    references and that were last modified more than ``grace`` seconds ago (default one
    day); returns their paths.

    What it removes is what killed or failed writers left: shards staged under
    ``_pending/`` by writers that are gone, ``.arrow`` files the manifest does not list,
    temporary files. It never touches a listed shard, a pending manifest's shards, a live
    writer's files (each holds a lock on its staging directory) or files that are not a
    writer's. Runs under the dataset's lock, so never during a commit.

        >>> lt.vacuum("shards/", grace=3600)     # doctest: +SKIP
        ['shards/_pending/part-Xb3kQ9/part-00000.arrow']
    """
    return _native.vacuum(os.fspath(path), grace=grace)


def _as_stream(data: Any) -> Any:
    """``data`` as an object with ``__arrow_c_stream__``: record batches become a table."""
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if isinstance(data, (list, tuple)):
        return pa.Table.from_batches(list(data))
    return data

