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

import builtins
import os
from typing import Any

import pyarrow as pa

from . import _hf, _native
from ._inputs import as_stream as _as_stream
from ._tokenize import tokenize
from ._native import (
    ArgumentError,
    Batch,
    ColumnNotFoundError,
    Dataset,
    DatasetExistsError,
    DatasetNotFoundError,
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
    "from_huggingface",
    "demo",
    "write_shards",
    "commit",
    "index",
    "vacuum",
    "tokenize",
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
    "DatasetExistsError",
    "DatasetNotFoundError",
]
__version__ = "0.1.0"


def open(  # noqa: A001
    path: str | os.PathLike,
    columns: list[str] | None = None,
    storage_options: dict[str, str] | None = None,
    cache_dir: str | os.PathLike | None = None,
    cache_limit: int | str | None = None,
    range_gap: int | None = None,
) -> Dataset | ShardedDataset:
    """Opens the dataset file, or the sharded dataset directory or URL, at ``path``.

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

    Whether ``path`` is a URL is decided by the crate (``docs/remote.md``, "Locations"): a
    ``str`` starting with ``scheme://`` is one, ``file:///dir/`` is the local ``/dir/``, a
    ``pathlib.Path`` or a relative path with a ``:`` never is.

    A URL (``s3://bucket/prefix/``, ``gs://``, ``az://``, ``http(s)://``) opens a sharded
    dataset in object storage: the manifest is read from the store, and each shard is
    downloaded once per node into ``cache_dir`` (default ``$LODTENSOR_CACHE_DIR`` or
    ``~/.cache/lodtensor``; every process of the node can share it) when first touched, its
    size and CRC-32C checked, then mapped as a local shard. ``storage_options`` takes
    ``object_store``'s keys (``aws_endpoint``, ``aws_access_key_id``,
    ``aws_secret_access_key``, ``aws_region``, ``aws_allow_http``, ...); without them the
    environment's ``AWS_*`` variables apply. ``cache_limit`` (bytes, or a size like
    ``"20GB"``) bounds what the cache keeps of the dataset. ``cache_stats()`` says what was
    downloaded. Rows read by range requests (``take``, ``row``, ``loader(cache="ranges")``)
    merge two byte ranges of a shard into one request across a gap of at most
    ``range_gap`` bytes (default 1 MiB; ``0``: the rows' own bytes alone, more requests). A missing bucket or manifest raises ``FileNotFoundError``, refused
    credentials ``PermissionError``, a shard whose bytes disagree with the manifest
    ``InvalidFileError`` naming it (``docs/remote.md``).

        >>> ds = lt.open("s3://bucket/tokens/", cache_limit="20GB")   # doctest: +SKIP
        >>> ds.cache_stats()["bytes_downloaded"]                       # doctest: +SKIP
        0
    """
    # Whether ``path`` is a URL is decided once, in Rust (``lodtensor::shards::Location``).
    return _native.open_location(
        path,
        None if columns is None else list(columns),
        storage_options,
        cache_dir,
        cache_limit,
        range_gap,
    )


def write(
    path: str | os.PathLike,
    data: Any,
    *,
    offset_width: str = "i64",
    batch_bytes: int | None = None,
    compression: str | None = None,
) -> dict:
    """Writes ``data`` to ``path`` as a validated lodtensor file, atomically.

    ``data`` is a ``pyarrow.Table``, a ``RecordBatch`` or ``RecordBatchReader``, a list of
    record batches, any object with ``__arrow_c_stream__`` (a Polars DataFrame, a DuckDB
    relation), a pandas DataFrame, or a HuggingFace ``datasets.Dataset`` (one split of a
    ``DatasetDict``); anything else raises ``TypeError``. A column of nested lists over
    fixed-size lists or primitives is a LoD tensor column; any other column, and one of
    those types holding nulls that its field does not declare a tensor (``format-spec.md``
    §2.2), is a side column, written as it is. A table in memory is looked at whole; a
    stream (a ``RecordBatchReader``, a DuckDB relation) is decided by its first record
    batch, and a later batch's nulls in a tensor column are an error (mark the field
    ``lodtensor.kind = "side"`` to avoid it). The file is written under a
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
    storage_options: dict[str, str] | None = None,
    compression: str | None = None,
) -> dict:
    """Writes ``data`` to the directory ``path`` as a sharded dataset (``format-spec.md``
    §7.1): lodtensor files ``PREFIX-00000.arrow``, … and the manifest ``_lodtensor.json``.

    ``data`` is what ``write`` takes. A shard is closed at ``shard_rows`` rows or
    ``shard_bytes`` bytes of values and offsets (default 256 MiB). Each shard is written
    atomically under ``_pending/`` (which ``pyarrow.dataset`` ignores) and the manifest
    replaced atomically last, so a crash leaves the previous dataset readable and a failure
    leaves no shard. ``mode`` is ``"create"``, ``"append"`` (to an existing dataset; any
    number of appenders may run at once, none loses rows), ``"pending"`` for one of many
    independent writers (each takes its own ``prefix``, default ``"part"``, and records its
    shards in a pending manifest; ``lodtensor.commit(path)`` then merges them), or
    ``"overwrite"``: the dataset there, if any, replaced atomically by ``data`` whatever its
    columns (readers see the old rows or the new ones; the old shards stay until ``vacuum``
    removes them, and ``pyarrow.dataset`` on the directory sees them until then). ``compression`` (``"zstd"``, ``"lz4"``) compresses every shard, as
    ``write``. Returns the manifest written, as a dict.

        >>> lt.write_shards("shards/", table, shard_rows=1000)         # doctest: +SKIP
        >>> lt.write_shards("shards/", newer, mode="overwrite")        # doctest: +SKIP
        >>> lt.write_shards("shards/", part, mode="pending", prefix="w3")  # doctest: +SKIP
        >>> lt.commit("shards/")                                       # doctest: +SKIP

    ``path`` may be a URL (``s3://bucket/prefix/``, ``gs://``, ``az://``; ``storage_options``
    as for ``open``): the shards are written to a local temporary directory (room for them
    is needed there: ``TMPDIR``), then each is created in the store under its final name
    and the manifest committed by a conditional PUT (``If-None-Match: *`` for a new
    dataset, ``If-Match`` on the ETag read for ``mode="append"``), so concurrent appenders
    never lose each other's shards. With ``mode="pending"`` the shards are recorded in the
    store's pending manifest of ``prefix`` instead, for ``lodtensor.commit(url)``.

        >>> lt.write_shards("s3://bucket/tokens/", table, mode="append")  # doctest: +SKIP
    """

    def write_into(directory: str | os.PathLike, mode: str, **remote: Any) -> dict:
        stream = pa.RecordBatchReader.from_stream(_as_stream(data, "write_shards"))
        metadata = {k.decode(): v.decode() for k, v in (stream.schema.metadata or {}).items()}
        with ShardWriter(
            directory,
            mode=mode,
            shard_rows=shard_rows,
            shard_bytes=shard_bytes,
            prefix=prefix,
            offset_width=offset_width,
            batch_bytes=batch_bytes,
            schema_metadata=metadata,
            compression=compression,
            **remote,
        ) as writer:
            writer.write(stream)
            return writer.finish()

    return write_into(path, mode, storage_options=storage_options)


def from_huggingface(
    hf_dataset: Any,
    path: str | os.PathLike,
    element_shape: dict[str, Any] | None = None,
    dtype: dict[str, Any] | None = None,
) -> dict:
    """Writes the HuggingFace ``datasets.Dataset`` ``hf_dataset`` (one split of a
    ``DatasetDict``) to ``path``: a file, or a sharded dataset when ``path`` ends with
    ``/`` (``write_shards``). Returns what ``write`` or ``write_shards`` returns.

    The rows are the dataset's own Arrow memory (its indices mapping applied). Every
    column is kept: nested lists of numbers become LoD tensors, fixed-length ``List``
    (``Sequence(..., length=n)``) columns elements of shape ``[n]``, ``Array2D`` ..
    ``Array5D`` columns elements of their shape (one LoD level when the first dimension is
    ``None``), and strings, ``ClassLabel`` names, structs and nullable lists side columns
    or 0-level tensors as their types say (``format-spec.md`` §2.2). ``dtype`` casts
    columns' numbers (``{"feats": "float32"}``: ``from_dict`` makes float64);
    ``element_shape`` folds a column's innermost lists (each of exactly that many numbers)
    into elements (``{"mel": [80]}``). The features go into the file's ``huggingface``
    schema metadata (updated by the casts), so ``lt.open(path).to_huggingface()`` gives
    them back. The file keeps HF's layout where it can: ``int32`` offsets when every list
    of the table has them (HF's ``List``), and a record batch per chunk of HF's table, so
    that nothing is copied but into the file, and ``to_huggingface()`` needs no copy.

        >>> ds = datasets.Dataset.from_dict({"x": [[1.0, 2.0], [3.0]]})   # doctest: +SKIP
        >>> lt.from_huggingface(ds, "x.arrow", dtype={"x": "float32"})      # doctest: +SKIP
        >>> lt.open("x.arrow").to_huggingface()["x"]                       # doctest: +SKIP
        [[1.0, 2.0], [3.0]]
    """
    table = _hf.table(hf_dataset, element_shape, dtype, what="from_huggingface")
    path = os.fspath(path)
    options = _hf.write_options(table)
    if path.endswith(("/", os.sep)):
        return write_shards(path, table, **options)
    return write(path, table, **options)


_DEMO_MARKER = ".lodtensor-demo"


def demo(dir: str | os.PathLike = "lodtensor-demo", *, docs: int = 2000, seed: int = 42) -> dict:  # noqa: A002
    """Writes the example files of ``lodtensor demo`` into the directory ``dir`` (created
    when missing; an existing one must be empty or hold a previous demo's files) and returns
    their paths, ``{"arrow": ..., "parquet": ...}``.

    ``documents.arrow`` holds ``docs`` synthetic documents (``tokens``: documents →
    sentences → ``float32[64]`` tokens; ``label``: an ``int64`` per document) from ``seed``,
    written by the same library calls as the command line's ``demo``: the same bytes.
    ``documents.parquet`` holds the same table, written by pyarrow. ``python -m lodtensor
    demo [DIR]`` does the same from a shell.

        >>> files = lt.demo("lodtensor-demo")                   # doctest: +SKIP
        >>> lt.open(files["arrow"]).num_rows                    # doctest: +SKIP
        2000
    """
    import pyarrow.parquet as pq

    path = os.fspath(dir)
    if os.path.exists(path) and not os.path.isdir(path):
        raise ArgumentError(f"{path}: exists and is not a directory; choose another")
    if os.path.isdir(path) and os.listdir(path) and not os.path.isfile(os.path.join(path, _DEMO_MARKER)):
        raise ArgumentError(
            f"{path}: the directory holds files that are not a previous demo's "
            f"(no {_DEMO_MARKER} file); choose another"
        )
    if docs < 1:
        raise ArgumentError(f"docs: {docs}, expected at least 1")
    os.makedirs(path, exist_ok=True)
    with builtins.open(os.path.join(path, _DEMO_MARKER), "w") as marker:
        marker.write("written by `lodtensor demo`, which may overwrite this directory\n")
    arrow = os.path.join(path, "documents.arrow")
    parquet = os.path.join(path, "documents.parquet")
    _native.demo_documents(arrow, docs, seed)
    pq.write_table(pa.table(open(arrow)), parquet)
    return {"arrow": arrow, "parquet": parquet}


def commit(path: str | os.PathLike, storage_options: dict[str, str] | None = None) -> dict:
    """Merges every pending manifest in the directory ``path`` (written by
    ``write_shards(..., mode="pending")`` or ``ShardWriter(mode="pending")`` workers) into
    the dataset's manifest, replaced atomically, then removes them; writers appending at
    the same time are merged, never lost. Idempotent: run it again after a crash. Returns
    the manifest, as a dict.

    For a URL (``storage_options`` as for ``open``) the pending manifests are the store's
    (``_lodtensor.pending.PREFIX.TOKEN.json``, one per upload by ``ShardWriter(url,
    mode="pending")`` or ``write_shards(url, ..., mode="pending")``, whose shards are in the
    store under their final names already): they are merged into the manifest by a conditional PUT
    (``If-Match`` on its ETag; a commit that loses the race re-reads and merges again),
    then removed. A pending manifest that cannot be trusted (unparsable, other columns, a
    shard the store does not hold with its size) is skipped, left in the store and
    reported by a ``UserWarning`` naming it; the others are committed.

        >>> lt.write_shards("s3://b/d/", part, mode="pending", prefix="w3")  # doctest: +SKIP
        >>> lt.commit("s3://b/d/")                                       # doctest: +SKIP
    """
    return _native.commit(path, storage_options)


def index(path: str | os.PathLike, storage_options: dict[str, str] | None = None) -> dict:
    """Adds or rebuilds the lengths index of the sharded dataset at ``path`` (a directory or a
    URL, ``storage_options`` as for ``open``) in one pass: every shard is measured once
    (for a URL, downloaded through the node's cache), one index object is written, and the
    manifest is committed naming it (format-spec section 7.2). A loader whose plan needs
    sample lengths (``token_budget``, buckets, ``pack``) then reads them from the index, not
    from every shard. Datasets written by ``write_shards``, ``ShardWriter`` or ``commit``
    have an index already; this is for those written without it. Returns the manifest, as
    a dict.

        >>> lt.index("s3://b/old-dataset/")                         # doctest: +SKIP
    """
    return _native.index(path, storage_options)


def vacuum(
    path: str | os.PathLike, *, grace: float = 86400.0, storage_options: dict[str, str] | None = None
) -> list[str]:
    """Removes the shards of the sharded dataset at ``path`` (a directory or a URL,
    ``storage_options`` as for ``open``) that no manifest references and that were last
    modified more than ``grace`` seconds ago (default one day); returns their paths (URLs
    for a URL).

    What it removes is what killed or failed writers left. In a directory: shards staged
    under ``_pending/`` by writers that are gone, ``.arrow`` files the manifest does not
    list, temporary files; never a listed shard, a pending manifest's shards, a live
    writer's files (each holds a lock on its staging directory) or files that are not a
    writer's; under the dataset's lock, so never during a commit. In object storage: the
    ``*.arrow`` objects directly under the dataset's prefix that neither the manifest nor
    a pending manifest lists (shards of killed writers, those an ``overwrite`` left); a
    store has no lock, so ``grace`` must be longer than any writer takes to record its
    shards.

        >>> lt.vacuum("shards/", grace=3600)     # doctest: +SKIP
        ['shards/_pending/part-Xb3kQ9/part-00000.arrow']
        >>> lt.vacuum("s3://b/d/")                # doctest: +SKIP
        ['s3://b/d/part-00004.arrow']
    """
    return _native.vacuum(path, grace=grace, storage_options=storage_options)
