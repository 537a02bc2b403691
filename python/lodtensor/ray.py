"""Ray over sharded lodtensor datasets: ``read_lodtensor`` and ``write_lodtensor`` (Ray
Data), and ``tokenize`` (Ray tasks).

    import ray
    from lodtensor.ray import read_lodtensor, write_lodtensor

    ds = read_lodtensor("shards/")                  # one read task per group of shards
    ds = ds.map_batches(clean, batch_format="pyarrow")
    write_lodtensor(ds, "clean/", shard_rows=10_000)  # each task its own shards, one commit

Reading maps each shard in the read task (the manifest was read on the driver) and hands
Ray its record batches as views of the mapping; Ray then moves them into its object store.
Nested lists and ``arrow.fixed_shape_tensor`` columns arrive intact; keep
``batch_format="pyarrow"`` in ``map_batches`` and ``iter_batches`` to keep them so (the
numpy and pandas formats turn them into Ray's own tensor types, which the writer refuses).

Writing: each write task writes its blocks as pending shards under a prefix of its own
(``part-JOB-TASK-ATTEMPT``), staged under ``_pending/`` where dataset discovery does not
look; when every task has finished, the driver commits them into the dataset's manifest in
one atomic replacement (other writers appending meanwhile are merged, never lost). A task
that failed and was retried leaves nothing in the dataset: its shards are not committed,
and are removed; so are every task's when the job fails.

To a URL (``s3://bucket/prefix/``): each write task writes its shards locally, uploads
them under their final names (which no manifest lists yet) and records them in a pending
manifest of its own in the store; the driver commits them with a conditional PUT of the
manifest (``If-Match`` on its ETag), as ``lodtensor.commit(url)`` does, so a job that
fails leaves the dataset as it was, and two jobs writing to one prefix keep both.

Tokenizing: ``tokenize`` deals the units ``lodtensor.tokenize`` would write (a file, or a
run of text files) to Ray tasks; each writes its units as pending shards under their own
prefixes, and the driver commits them all at once.

Needs ``ray[data]`` (tested with 2.60; the Datasource and Datasink interfaces are Ray
developer APIs).
"""

from __future__ import annotations

import functools
import os
import shutil
import uuid
from typing import Any, Iterable, Iterator, Literal, Sequence

import pyarrow as pa
import ray.data
from ray.data.block import Block, BlockAccessor, BlockMetadata
from ray.data.datasource import Datasink, Datasource, ReadTask, WriteResult

import lodtensor as lt
from lodtensor import _native  # type: ignore[attr-defined]  # the compiled module, not in the stub
from lodtensor._inputs import as_stream

__all__ = ["read_lodtensor", "write_lodtensor", "tokenize", "LodTensorDatasource", "LodTensorDatasink"]

_MANIFEST = "_lodtensor.json"
_PENDING = "_lodtensor.pending."
# Where pending writers' shards wait for the commit, invisible to dataset discovery.
_STAGING = "_pending"


def read_lodtensor(
    path: str | os.PathLike,
    *,
    columns: Sequence[str] | None = None,
    override_num_blocks: int | None = None,
    concurrency: int | None = None,
    ray_remote_args: dict[str, Any] | None = None,
    storage_options: dict[str, str] | None = None,
    cache_dir: str | os.PathLike | None = None,
) -> ray.data.Dataset:
    """A ``ray.data.Dataset`` of the sharded dataset in the directory ``path``, or at the
    URL ``path`` (``s3://bucket/prefix/``; ``storage_options`` and ``cache_dir`` as for
    ``lodtensor.open``: each node's tasks download a shard once into its cache).

    One read task per shard, or per group of consecutive shards when Ray asks for fewer
    tasks (``override_num_blocks`` sets how many); rows keep the manifest's order within
    a task. Each shard is checked against the manifest (size, CRC-32C, counts) by the task
    that maps it. ``columns`` keeps only those columns (in that order). ``concurrency`` and
    ``ray_remote_args`` are ``ray.data.read_datasource``'s.

        >>> ds = read_lodtensor("shards/")                        # doctest: +SKIP
        >>> for batch in ds.iter_batches(batch_size=256, batch_format="pyarrow"):  # doctest: +SKIP
        ...     tokens = batch.column("tokens")                   # nested lists intact
    """
    return ray.data.read_datasource(
        LodTensorDatasource(
            path, columns=columns, storage_options=storage_options, cache_dir=cache_dir
        ),
        override_num_blocks=override_num_blocks,
        concurrency=concurrency,
        ray_remote_args=ray_remote_args,
    )


def write_lodtensor(
    dataset: ray.data.Dataset,
    path: str | os.PathLike,
    *,
    mode: Literal["create", "append"] = "create",
    shard_rows: int | None = None,
    shard_bytes: int | None = None,
    offset_width: Literal["i32", "i64"] = "i64",
    batch_bytes: int | None = None,
    min_rows_per_write: int | None = None,
    concurrency: int | None = None,
    ray_remote_args: dict[str, Any] | None = None,
    storage_options: dict[str, str] | None = None,
) -> dict:
    """Writes ``dataset`` to the directory ``path`` (or the URL ``path``,
    ``s3://bucket/prefix/``, ``storage_options`` as for ``lodtensor.open``) as a sharded
    dataset and returns its manifest (a dict).

    ``mode="create"`` refuses a directory that already holds a dataset; ``"append"`` adds
    the shards after its own (the columns must match). Every write task writes its blocks
    as pending shards of at most ``shard_rows`` rows or ``shard_bytes`` bytes under its own
    prefix; the driver then commits them all at once, so readers see the dataset before the
    write or after it. ``min_rows_per_write`` bundles small blocks into bigger tasks (and
    so bigger shards). Nested lists over ``arrow.fixed_shape_tensor`` or numbers are LoD
    tensor columns, every other column a side column (``format-spec.md`` §2.2), carried
    as it is. A column of a tensor's type with nulls is a side column; each task decides
    from its own blocks, so when only some blocks hold its nulls, mark its field
    ``lodtensor.kind = "side"`` (or ``"tensor"``) so that every task writes it alike.
    A job that fails commits nothing and removes its tasks' shards. Jobs writing to one
    dataset at once (``"append"``, or ``"create"`` where none is yet) keep every job's
    rows: each commit merges the pending shards found then.

        >>> write_lodtensor(ds.map_batches(f, batch_format="pyarrow"), "out/")  # doctest: +SKIP
        >>> write_lodtensor(ds, "s3://bucket/clean/", storage_options=opts)  # doctest: +SKIP
    """
    sink = LodTensorDatasink(
        path,
        mode=mode,
        shard_rows=shard_rows,
        shard_bytes=shard_bytes,
        offset_width=offset_width,
        batch_bytes=batch_bytes,
        min_rows_per_write=min_rows_per_write,
        storage_options=storage_options,
    )
    dataset.write_datasink(sink, concurrency=concurrency, ray_remote_args=ray_remote_args)
    assert sink.manifest is not None, "on_write_complete ran"
    return sink.manifest


def tokenize(
    inputs: Any,
    output: str | os.PathLike,
    *,
    tokenizer: Any,
    field: str | None = None,
    eos: bool | str = True,
    bos: bool | str = False,
    split: str | None = None,
    shard_rows: int | None = None,
    storage_options: dict[str, str] | None = None,
    compression: str | None = None,
    num_tasks: int | None = None,
    ray_remote_args: dict[str, Any] | None = None,
) -> lt.ShardedDataset:
    """``lodtensor.tokenize`` on a Ray cluster: the same inputs, options and dataset, the
    inputs' units (each file, or run of text files up to 64 MiB) dealt round-robin to
    ``num_tasks`` Ray tasks (default: the cluster's CPUs). Each task writes its units as
    pending shards under their own prefixes; when all have finished, the driver commits
    them at once, in the inputs' order, and returns the dataset opened. A run killed (or a
    task failed) and started again skips the units pending or committed, as
    ``lodtensor.tokenize`` does (and either skips what the other wrote).

    ``inputs`` are paths, globs, directories or URLs (a list of them): every task reads
    them itself, so on a cluster they and ``output`` are URLs (``storage_options`` reach
    every task) or paths every node shares; local paths are made absolute here. Streams
    and HuggingFace datasets are refused (``TypeError``): give them to
    ``lodtensor.tokenize``. ``ray_remote_args`` are ``ray.remote``'s (``num_cpus``, …).

        >>> tokenize("s3://bucket/corpus/", "s3://bucket/tokens/", tokenizer="tokenizer.json",
        ...          storage_options=opts)  # doctest: +SKIP
    """
    from lodtensor._tokenize import tokenizer_source

    paths = inputs if isinstance(inputs, (list, tuple)) else [inputs]
    for item in paths:
        if not isinstance(item, (str, os.PathLike)):
            raise TypeError(
                "lodtensor.ray.tokenize: inputs must be paths or URLs (give streams and "
                f"datasets to lodtensor.tokenize), not {type(item).__name__}"
            )
    paths = [_absolute(p) for p in paths]
    source = tokenizer_source(tokenizer)
    if "tokenizer_path" in source:
        source["tokenizer_path"] = os.path.abspath(source["tokenizer_path"])
    is_url, out = _native.location(output)
    out = out if is_url else os.path.abspath(out)
    options = dict(
        field=field,
        eos=eos,
        bos=bos,
        split=split,
        shard_rows=shard_rows,
        storage_options=storage_options,
        compression=compression,
    )
    tasks = num_tasks or max(1, int(ray.cluster_resources().get("CPU", 1)))
    task = ray.remote(_tokenize_task).options(**(ray_remote_args or {}))
    ray.get([task.remote(paths, out, source, options, (i, tasks)) for i in range(tasks)])
    remote = {"storage_options": storage_options} if is_url else {}
    lt.commit(out, **remote)
    return _shards(out, **remote)


def _absolute(path: str | os.PathLike) -> Any:
    """A local path (or glob) made absolute, for tasks in other directories; a URL as it is."""
    is_url, where = _native.location(path)
    return path if is_url else os.path.abspath(os.fspath(where))


def _tokenize_task(paths: list[str], output: str, source: dict, options: dict, task: tuple) -> dict:
    """One Ray task of ``tokenize``: its share of the units written as pending shards."""
    from lodtensor._tokenize import _run

    return _run(paths, output, source, **options, task=task)


def _shards(path: str, **remote: Any) -> lt.ShardedDataset:
    """The sharded dataset in the directory ``path`` (or at the URL ``path``, opened with
    ``remote``: ``storage_options`` and ``cache_dir``)."""
    data = lt.open(path, **remote) if _native.location(path)[0] else lt.open(path)
    if not isinstance(data, lt.ShardedDataset):
        raise lt.DatasetNotFoundError(f"{path}: not a sharded dataset directory")
    return data


def _join(path: str, name: str) -> str:
    """The file ``name`` of the dataset at ``path`` (a directory or a URL)."""
    url, where = _native.location(path)
    return path.rstrip("/") + "/" + name if url else os.path.join(where, name)


def _groups(sizes: Sequence[int], count: int) -> list[list[int]]:
    """Splits the indices of ``sizes`` into at most ``count`` runs of consecutive indices of
    about equal total size (each run non-empty)."""
    count = max(1, min(count, len(sizes)))
    total = sum(sizes) or 1
    groups: list[list[int]] = [[]]
    done = 0
    for index, size in enumerate(sizes):
        # Close the run once it reaches its share, leaving an index for each run to come.
        runs_left = count - len(groups)
        if groups[-1] and runs_left > 0 and (
            done >= total * len(groups) / count or len(sizes) - index <= runs_left
        ):
            groups.append([])
        groups[-1].append(index)
        done += size
    return groups


def _read_shards(
    path: str, shards: list[int], columns: list[str] | None = None, **remote: Any
) -> Iterator[pa.Table]:
    """The read task: the shards' record batches, views of their mappings, one block each
    (only ``columns`` when given)."""
    reader = _shards(path, **remote).reader(shards)
    for batch in reader:
        table = pa.Table.from_batches([batch])
        yield table if columns is None else table.select(columns)


class LodTensorDatasource(Datasource):
    """The Ray Data ``Datasource`` of a sharded lodtensor dataset (see ``read_lodtensor``).

    The manifest is read once, on the driver; read tasks map their shards.
    """

    def __init__(
        self,
        path: str | os.PathLike,
        columns: Sequence[str] | None = None,
        storage_options: dict[str, str] | None = None,
        cache_dir: str | os.PathLike | None = None,
    ):
        super().__init__()
        url, where = _native.location(path)
        self._path = where if url else os.path.abspath(where)
        remote = dict(storage_options=storage_options, cache_dir=cache_dir)
        self._remote: dict[str, Any] = remote if url else {}
        dataset = lt.open(self._path, **self._remote)
        if not isinstance(dataset, lt.ShardedDataset):
            raise lt.ArgumentError(f"{self._path}: not a sharded dataset directory")
        self._shards = dataset.shards
        self._columns = None if columns is None else list(columns)
        missing = [c for c in self._columns or [] if c not in dataset.column_names]
        if missing:
            raise lt.ColumnNotFoundError(
                f"{self._path}: no column {missing[0]!r}; the columns are {dataset.column_names}"
            )
        schema = dataset.schema
        if self._columns is not None:
            fields = [schema.field(c) for c in self._columns]
            schema = pa.schema(fields, metadata=schema.metadata)
        self._schema = schema

    def get_name(self) -> str:
        return "LodTensor"

    def estimate_inmemory_data_size(self) -> int:
        return sum(s["bytes"] for s in self._shards)

    def get_read_tasks(
        self,
        parallelism: int,
        per_task_row_limit: int | None = None,
        data_context: Any = None,
    ) -> list[ReadTask]:
        if not self._shards:
            return []
        tasks = []
        for group in _groups([s["bytes"] for s in self._shards], parallelism):
            shards = [self._shards[i] for i in group]
            metadata = BlockMetadata(
                num_rows=sum(s["rows"] for s in shards),
                size_bytes=sum(s["bytes"] for s in shards),
                input_files=tuple(_join(self._path, s["file"]) for s in shards),
                exec_stats=None,
            )
            read = functools.partial(
                _read_shards, self._path, group, self._columns, **self._remote
            )
            tasks.append(ReadTask(read, metadata, self._schema, per_task_row_limit))
        return tasks


class LodTensorDatasink(Datasink):
    """The Ray Data ``Datasink`` of a sharded lodtensor dataset, in a directory or at a URL
    (see ``write_lodtensor``): each write task writes pending shards under its own prefix,
    and the driver commits. ``manifest`` is the manifest committed, once complete."""

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        mode: Literal["create", "append"] = "create",
        shard_rows: int | None = None,
        shard_bytes: int | None = None,
        offset_width: Literal["i32", "i64"] = "i64",
        batch_bytes: int | None = None,
        min_rows_per_write: int | None = None,
        storage_options: dict[str, str] | None = None,
    ):
        if mode not in ("create", "append"):
            raise lt.ArgumentError(f'mode must be "create" or "append", not {mode!r}')
        # A URL or a path, as Rust decides (``lodtensor::shards::Location``).
        self._url, where = _native.location(path)
        self.path = where if self._url else os.path.abspath(where)
        if storage_options is not None and not self._url:
            raise lt.ArgumentError("write_lodtensor(PATH, storage_options=...): only for a URL")
        # How every call reaches the URL's store (nothing for a directory).
        self._remote: dict[str, Any] = {"storage_options": storage_options} if self._url else {}
        self.manifest: Any = None
        self._mode = mode
        self._options: dict[str, Any] = dict(
            shard_rows=shard_rows,
            shard_bytes=shard_bytes,
            offset_width=offset_width,
            batch_bytes=batch_bytes,
        )
        self._min_rows = min_rows_per_write
        # Every file of this write starts with it: the job's own pending manifests and
        # shards are told apart from anyone else's.
        self._job = f"part-{uuid.uuid4().hex[:8]}"
        self._schema: pa.Schema | None = None

    def get_name(self) -> str:
        return "LodTensor"

    @property
    def min_rows_per_write(self) -> int | None:
        return self._min_rows

    def on_write_start(self, schema: Any = None) -> None:
        if self._url:
            exists = _native.read_manifest_url(self.path, **self._remote) is not None
        else:
            exists = os.path.exists(os.path.join(self.path, _MANIFEST))
        if self._mode == "create" and exists:
            raise lt.DatasetExistsError(
                f"{self.path}: a sharded dataset is already there: use mode=\"append\""
            )
        if self._mode == "append" and not exists:
            raise lt.DatasetNotFoundError(f"{_join(self.path, _MANIFEST)}: nothing to append to")
        if not self._url:
            os.makedirs(self.path, exist_ok=True)
        self._schema = schema if isinstance(schema, pa.Schema) else None

    def write(self, blocks: Iterable[Block], ctx: Any) -> str | None:
        """Writes this task's blocks as pending shards; returns their prefix (None: no rows)."""
        prefix = f"{self._job}-{ctx.task_idx:05d}-{uuid.uuid4().hex[:6]}"
        writer = None
        for block in blocks:
            table = BlockAccessor.for_block(block).to_arrow()
            if table.num_rows == 0:
                continue
            if writer is None:
                writer = lt.ShardWriter(
                    self.path, mode="pending", prefix=prefix, **self._options, **self._remote
                )
            # One kind per column for the whole block (format-spec §2.2).
            writer.write(as_stream(table, "write_lodtensor"))
        if writer is None:
            return None
        writer.finish()
        return prefix

    def on_write_complete(self, write_result: WriteResult) -> None:
        """Drops what failed attempts left, then commits every task's shards at once."""
        committed = {p for p in write_result.write_returns if p}
        self._discard(keep=committed)
        if not committed and not self._exists():
            if self._schema is None:
                raise lt.ArgumentError(f"{self.path}: no rows and no schema to write")
            empty = [pa.nulls(0, field.type) for field in self._schema]
            table = pa.table(empty, schema=self._schema)
            self.manifest = lt.write_shards(self.path, table, **self._options, **self._remote)
            return
        self.manifest = lt.commit(self.path, **self._remote)

    def on_write_failed(self, error: Exception) -> None:
        """Removes every task's pending shards: the dataset stays as it was."""
        self._discard(keep=set())

    def _exists(self) -> bool:
        if self._url:
            return _native.read_manifest_url(self.path, **self._remote) is not None
        return os.path.exists(os.path.join(self.path, _MANIFEST))

    def _discard(self, keep: set[str]) -> None:
        """Removes the pending shards and manifests of this job's writers not in ``keep``."""
        if self._url:
            for prefix in _native.pending_prefixes(self.path, **self._remote):
                if prefix.startswith(self._job) and prefix not in keep:
                    _native.discard_pending(self.path, prefix, **self._remote)
            return
        staging = os.path.join(self.path, _STAGING)
        for name in os.listdir(staging) if os.path.isdir(staging) else []:
            prefix = name[: -len(".pending")]
            if name.startswith(self._job) and name.endswith(".pending") and prefix not in keep:
                shutil.rmtree(os.path.join(staging, name), ignore_errors=True)
                manifest = os.path.join(self.path, f"{_PENDING}{prefix}.json")
                if os.path.exists(manifest):
                    os.remove(manifest)
