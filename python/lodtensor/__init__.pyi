"""Type stubs of the lodtensor package."""

import os
import pathlib
from typing import Any, Iterator, Literal, Mapping, Sequence, TypedDict, Union, final, overload

import numpy as np
import numpy.typing as npt
import pyarrow as pa
from typing_extensions import NotRequired, Unpack, deprecated

__version__: str
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

_Path = Union[str, os.PathLike[str]]
_Offsets = npt.NDArray[np.int64]
# How a sharded dataset is written: a new one, shards appended, or one of many writers.
_Mode = Literal["create", "append", "pending", "overwrite"]
# The offsets of a written file: i64 (LargeList) or i32 (List).
_OffsetWidth = Literal["i32", "i64"]
_Compression = Literal["none", "zstd", "lz4"]

class LodTensorError(ValueError):
    """A file, argument or loader state that lodtensor refuses; the message says what and where.

    The base of lodtensor's exceptions; I/O faults are the builtin ``OSError`` subclasses."""

class InvalidFileError(LodTensorError):
    """A file (Arrow IPC, Parquet, Paddle, a sharded dataset's manifest or shard) that is not
    what its format says: damaged, truncated or foreign."""

class InvalidDataError(LodTensorError):
    """Data that breaks the rules of a LoD tensor or a dataset (offsets, shapes, nulls, rows)."""

class ArgumentError(LodTensorError, ValueError):
    """A call the data or the operation does not allow."""

class OutOfRangeError(ArgumentError, IndexError):
    """A row, level, sequence or batch index past the end."""

class ColumnNotFoundError(ArgumentError, KeyError):
    """A column name the data does not have."""

class UnsupportedError(LodTensorError):
    """A well-formed input lodtensor does not handle (a dtype, an Arrow type, a version)."""

class UnusableError(LodTensorError, RuntimeError):
    """An object unusable after an earlier failure: drop it."""

class InternalError(LodTensorError, RuntimeError):
    """A bug of lodtensor, not of the input (also any panic of its Rust code)."""

class DatasetExistsError(LodTensorError, FileExistsError):
    """A sharded dataset is already where one was to be created: append to it instead."""

class DatasetNotFoundError(LodTensorError, FileNotFoundError):
    """No sharded dataset where one was to be appended to or opened."""

class LoaderOptions(TypedDict, total=False):
    """The keywords of ``Dataset.loader`` and ``ShardedDataset.loader`` (all optional)."""

    batch_size: int | Sequence[tuple[int, int]] | None
    token_budget: int | Sequence[tuple[int, int]] | None
    length_column: str | None
    level: int | None
    shuffle: bool
    seed: int
    chunk_rows: int | None
    window: int | None
    buckets: int | Sequence[int] | None
    drop_last: bool
    rank: int
    world_size: int
    elastic: bool
    step_ranks: int | None
    prefetch: int
    pack: int | Sequence[tuple[int, int]] | None
    pack_split: bool
    pack_extra_token: bool
    pack_pad_last: bool
    pack_lookahead: int
    pack_overlong: Literal["cut", "drop"]
    lazy_shards: bool
    shared_memory: bool
    balance: Literal["tokens", "attention"] | None
    attention_weight: float | None
    cache: Literal["shards", "ranges"]

class StateDict(TypedDict):
    epoch: int
    batch: int
    fingerprint: Any

class WriteSummary(TypedDict):
    rows: int
    batches: int
    bytes: int

class ShardSummary(TypedDict):
    file: str
    rows: int
    batches: int
    bytes: int
    crc32c: int
    columns: list[dict[str, Any]]

class CacheStats(TypedDict):
    bytes_downloaded: int
    shards_downloaded: int
    shards_cached: int
    shards_evicted: int
    metadata_bytes: int
    metadata_requests: int
    range_bytes: int
    range_requests: int

class Manifest(TypedDict):
    format: str
    version: int
    columns: list[dict[str, Any]]
    shards: list[ShardSummary]
    index: NotRequired[list[dict[str, Any]]]

def open(
    path: _Path,
    columns: Sequence[str] | None = None,
    storage_options: dict[str, str] | None = None,
    cache_dir: _Path | None = None,
    cache_limit: int | str | None = None,
    range_gap: int | None = None,
) -> Dataset | ShardedDataset:
    """Maps and validates the dataset file at ``path``; a directory gives a ``ShardedDataset``
    (the manifest read, each shard mapped and checked when first touched). A URL
    (``s3://``, ``gs://``, ``az://``, ``http(s)://``) gives a ``ShardedDataset`` whose shards
    are downloaded once per node into ``cache_dir``, then mapped (``docs/remote.md``)."""

def write(
    path: _Path,
    data: Any,
    *,
    offset_width: _OffsetWidth = "i64",
    batch_bytes: int | None = None,
    compression: _Compression | None = None,
) -> WriteSummary:
    """Writes ``data`` (pyarrow, any ``__arrow_c_stream__`` object such as a Polars
    DataFrame or a DuckDB relation, pandas, a ``datasets.Dataset``) to ``path`` as a
    validated lodtensor file, atomically; ``TypeError`` for anything else."""

def demo(dir: _Path = "lodtensor-demo", *, docs: int = 2000, seed: int = 42) -> dict[str, str]:
    """Writes ``lodtensor demo``'s example files (``documents.arrow``, ``documents.parquet``)
    into ``dir``; returns their paths."""

def from_huggingface(
    hf_dataset: Any,
    path: _Path,
    element_shape: dict[str, Sequence[int]] | None = None,
    dtype: dict[str, Any] | None = None,
) -> WriteSummary | Manifest:
    """Writes a HuggingFace ``datasets.Dataset`` to the file ``path`` (shards when ``path``
    ends with ``/``): ``ArrayXD`` and fixed-length lists as element shapes, ``dtype`` casts,
    ``element_shape`` folds, the features kept in the ``huggingface`` metadata."""

def write_shards(
    path: _Path,
    data: Any,
    *,
    mode: _Mode = "create",
    shard_rows: int | None = None,
    shard_bytes: int | None = None,
    prefix: str | None = None,
    offset_width: _OffsetWidth = "i64",
    batch_bytes: int | None = None,
    storage_options: dict[str, str] | None = None,
    compression: _Compression | None = None,
) -> Manifest:
    """Writes pyarrow data to the directory ``path`` as a sharded dataset; ``mode`` is
    ``"create"``, ``"append"`` or ``"pending"`` (one of many writers, then ``commit``).
    A URL: the shards uploaded and the manifest (or the store's pending manifest of
    ``prefix``) committed by a conditional PUT."""

def commit(path: _Path, storage_options: dict[str, str] | None = None) -> Manifest:
    """Merges the pending manifests in ``path`` (a directory or a URL) into its manifest,
    atomically (for a URL, by a conditional PUT); idempotent."""

def index(path: _Path, storage_options: dict[str, str] | None = None) -> Manifest:
    """Adds or rebuilds the lengths index of the sharded dataset at ``path`` (a directory
    or a URL) in one pass; returns the manifest."""

def vacuum(
    path: _Path, *, grace: float = 86400.0, storage_options: dict[str, str] | None = None
) -> list[str]:
    """Removes the shards of ``path`` (a directory or a URL) no manifest references, older
    than ``grace`` seconds; never a live writer's in a directory. Returns their paths."""

def tokenize(
    inputs: Any,
    output: _Path,
    *,
    tokenizer: Any,
    field: str | None = None,
    eos: bool | str = True,
    bos: bool | str = False,
    split: str | None = None,
    shard_rows: int | None = None,
    storage_options: dict[str, str] | None = None,
    compression: str | None = None,
) -> ShardedDataset:
    """Tokenizes ``inputs`` (paths, globs, directories of text, JSON lines or Parquet files,
    HuggingFace datasets, Arrow streams) with ``tokenizer`` (a ``tokenizer.json`` path or a
    ``tokenizers.Tokenizer``) into the sharded dataset ``output`` (a directory or a URL):
    the column ``"tokens"`` (documents → tokens, or documents → pieces → tokens with
    ``split``) and the side column ``"source"``; returns it opened. A run killed and started
    again writes every document once."""

def mix(
    sources: Sequence[Dataset | ShardedDataset],
    weights: Sequence[float] | Sequence[tuple[int, Sequence[float]]],
    seed: int = 0,
) -> Mixture:
    """Several datasets with the same columns drawn from at set proportions, or at
    proportions that change over training (``[(tokens, [weights]), ...]``)."""

@final
class Mixture:
    """Datasets drawn from at set proportions: ``lt.mix([a, b], [0.7, 0.3])``."""

    @property
    def num_rows(self) -> int: ...
    @property
    def sources(self) -> list[Dataset | ShardedDataset]: ...
    @property
    def weights(self) -> list[float] | list[tuple[int, list[float]]]: ...
    def __len__(self) -> int: ...
    def loader(self, **options: Unpack[LoaderOptions]) -> Loader:
        """Batches of the draws: ``Dataset.loader``'s options, ``batch_size``,
        ``token_budget`` and ``pack`` schedules included (from a switch of ``pack``, each
        source's tokens that no window drawn holds are packed again at the new length;
        weights that are a schedule switch at the tokens drawn, each window counted at its
        own length)."""

@final
class ShardedDataset:
    """A sharded dataset: the manifest read, each shard mapped and checked when first touched."""

    @property
    def num_rows(self) -> int: ...
    @property
    def column_names(self) -> list[str]: ...
    @property
    def num_shards(self) -> int: ...
    @property
    def path(self) -> pathlib.Path: ...
    @property
    def schema(self) -> pa.Schema: ...
    @property
    def manifest(self) -> Manifest: ...
    @property
    def shards(self) -> list[ShardSummary]: ...
    @property
    def shard_offsets(self) -> npt.NDArray[np.int64]:
        """``num_shards + 1`` offsets: shard ``s`` holds rows ``offsets[s]..offsets[s + 1]``."""
    @property
    def url(self) -> str | None:
        """The URL of a dataset opened by URL (ending in ``/``), else ``None``."""
    def cache_stats(self) -> CacheStats:
        """What the shard cache of a dataset opened by URL did since it was opened."""
    def __len__(self) -> int: ...
    def validate(self) -> None:
        """Maps and checks every shard not touched yet; raises the first shard's error."""
    @overload
    def offsets(self, column: str, level: None = None) -> list[_Offsets]:
        """The offsets of each level of ``column`` over every shard, level 0 first."""
    @overload
    def offsets(self, column: str, level: int) -> _Offsets:
        """The offsets of level ``level`` of ``column`` over every shard."""
    @deprecated("ShardedDataset.lod(column) is deprecated: use offsets(column)")
    def lod(self, column: str) -> list[_Offsets]: ...
    def row(self, index: int) -> pa.RecordBatch:
        """Row ``index`` (negative counts from the end) as a one-row record batch, a view
        into its shard's mapping. Over a URL, a row whose shard is not in the node's cache
        is read by range requests, its bytes alone (no shard downloaded)."""
    def __getitem__(self, index: int, /) -> pa.RecordBatch:
        """``row(index)``; ``IndexError`` past either end."""
    def take(
        self,
        rows: Sequence[int] | npt.NDArray[np.integer[Any]],
        columns: Sequence[str] | None = None,
    ) -> Batch:
        """Rows ``rows`` (from 0; repeats allowed) in the order given, of every column or
        of ``columns``, as one ``Batch``: a view when they are consecutive rows of one
        record batch, else copied once. Over a URL, the rows of a shard not in the cache
        are read by range requests, no shard downloaded. ``IndexError`` naming a row out
        of range."""
    @deprecated("ShardedDataset.sample(row) is deprecated: use row(row) or ds[row]")
    def sample(self, row: int) -> pa.RecordBatch: ...
    def reader(self, shards: Sequence[int] | None = None) -> pa.RecordBatchReader:
        """The record batches of ``shards`` (all by default), in order, zero-copy."""
    def to_pyarrow(self) -> pa.Table:
        """Every shard as one table, zero-copy."""
    def to_huggingface(self) -> Any:
        """Every shard as a ``datasets.Dataset`` over the same values."""
    def __arrow_c_schema__(self) -> object: ...
    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object: ...
    def loader(self, **options: Unpack[LoaderOptions]) -> Loader:
        """Training batches over the shards, one after the other: ``Dataset.loader``'s
        options and batches (those of the same rows in one file); every shard is mapped and
        checked when the loader is made, its checksum when a batch first reads it."""

@final
class ShardWriter:
    """Writes a sharded dataset: shards closed at a row or byte budget, the manifest last."""

    @overload
    def __new__(
        cls,
        path: _Path,
        *,
        mode: _Mode = "create",
        shard_rows: int | None = None,
        shard_bytes: int | None = None,
        prefix: str | None = None,
        offset_width: _OffsetWidth = "i64",
        batch_bytes: int | None = None,
        dir: None = None,
        schema_metadata: Mapping[str, str] | None = None,
        compression: _Compression | None = None,
        storage_options: Mapping[str, str] | None = None,
    ) -> ShardWriter: ...
    @overload
    @deprecated("ShardWriter(dir=...) is deprecated: use ShardWriter(path=...)")
    def __new__(
        cls,
        path: None = None,
        *,
        dir: _Path,
        mode: _Mode = "create",
        shard_rows: int | None = None,
        shard_bytes: int | None = None,
        prefix: str | None = None,
        offset_width: _OffsetWidth = "i64",
        batch_bytes: int | None = None,
        schema_metadata: Mapping[str, str] | None = None,
        compression: _Compression | None = None,
        storage_options: Mapping[str, str] | None = None,
    ) -> ShardWriter: ...
    @property
    def path(self) -> pathlib.Path:
        """The dataset directory (or URL)."""
    @property
    @deprecated("ShardWriter.dir is deprecated: use ShardWriter.path")
    def dir(self) -> pathlib.Path: ...
    def write(self, data: Any) -> None:
        """Appends the rows of a ``pyarrow.Table`` or any ``__arrow_c_stream__`` object."""
    def finish(self) -> Manifest:
        """Closes the open shard and writes the (pending) manifest atomically."""
    def __enter__(self) -> ShardWriter: ...
    def __exit__(self, exc_type: Any, exc_value: Any, traceback: Any) -> bool: ...

@final
class Dataset:
    """A dataset file, memory-mapped and validated."""

    @property
    def num_rows(self) -> int: ...
    @property
    def column_names(self) -> list[str]: ...
    @property
    def num_batches(self) -> int: ...
    @property
    def path(self) -> pathlib.Path: ...
    @property
    def schema(self) -> pa.Schema: ...
    def __len__(self) -> int: ...
    @overload
    def offsets(self, column: str, level: None = None) -> list[_Offsets]:
        """The offsets of each level of ``column`` over the whole file, level 0 first."""
    @overload
    def offsets(self, column: str, level: int) -> _Offsets:
        """The offsets of level ``level`` of ``column`` over the whole file."""
    @deprecated("Dataset.lod(column) is deprecated: use offsets(column)")
    def lod(self, column: str) -> list[_Offsets]: ...
    def row(self, index: int) -> pa.RecordBatch:
        """Row ``index`` (negative counts from the end) as a one-row record batch, a view
        into the mapping."""
    def __getitem__(self, index: int, /) -> pa.RecordBatch:
        """``row(index)``; ``IndexError`` past either end."""
    def take(
        self,
        rows: Sequence[int] | npt.NDArray[np.integer[Any]],
        columns: Sequence[str] | None = None,
    ) -> Batch:
        """Rows ``rows`` (from 0; repeats allowed) in the order given, of every column or
        of ``columns``, as one ``Batch``: a view when they are consecutive rows of one
        record batch, else copied once. ``IndexError`` naming a row out of range."""
    @deprecated("Dataset.sample(row) is deprecated: use row(row) or ds[row]")
    def sample(self, row: int) -> pa.RecordBatch: ...
    def to_pyarrow(self) -> pa.Table:
        """The whole file as a table, zero-copy."""
    def to_huggingface(self) -> Any:
        """The file as a ``datasets.Dataset`` over the same values, with the features of its
        ``huggingface`` metadata (else inferred)."""
    def __arrow_c_schema__(self) -> object: ...
    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object: ...
    def loader(self, **options: Unpack[LoaderOptions]) -> Loader:
        """Training batches over this file (the Rust loader's batches for the same options)."""

@final
class Loader:
    """Training batches: ``iter(loader)`` yields the rest of the current epoch, then stops."""

    def __iter__(self) -> LoaderIterator: ...
    @deprecated("next(loader) is deprecated: use it = iter(loader) and next(it), which ends with the epoch")
    def __next__(self) -> Batch: ...
    def __len__(self) -> int:
        """The number of batches of the current epoch (for this rank)."""
    @property
    def epoch(self) -> int: ...
    @property
    def batch_index(self) -> int: ...
    @property
    def fingerprint(self) -> Any: ...
    def set_epoch(self, epoch: int) -> None: ...
    def state_dict(self) -> StateDict: ...
    def load_state_dict(self, state: StateDict) -> None: ...
    def _epoch_in_rust(self, column: str | None = None, level: int = 0) -> tuple[int, int]: ...

@final
class LoaderIterator:
    """``iter(loader)``: the rest of one epoch, then ``StopIteration`` for good."""

    def __iter__(self) -> LoaderIterator: ...
    def __next__(self) -> Batch: ...
    @property
    def epoch(self) -> int:
        """The epoch this iterator yields batches of."""

@final
class Batch:
    """One batch: every column for the batch's samples."""

    @property
    def samples(self) -> npt.NDArray[np.int64]: ...
    @property
    def column_names(self) -> list[str]: ...
    @property
    def tokens(self) -> int: ...
    @property
    def cost(self) -> float: ...
    @property
    def max_len(self) -> int: ...
    @property
    def is_oversize(self) -> bool: ...
    @property
    def is_view(self) -> bool: ...
    def lend_shared_memory(self) -> tuple[int, int, int, int] | None: ...
    def values_place(self, column: str) -> tuple[Any, ...] | None: ...
    @property
    def padding_ratio(self) -> float: ...
    @property
    def epoch(self) -> int: ...
    @property
    def index(self) -> int: ...
    def __len__(self) -> int: ...
    def num_levels(self, column: str) -> int: ...
    @property
    def source(self) -> npt.NDArray[np.int64] | None:
        """A mixture's batch: each sample's source (``samples``: rows within it)."""
    @property
    def windows(self) -> list[list[tuple[int, int, int]]] | None:
        """A packed batch's windows: each a list of ``(row, first_token, n_tokens)``."""
    def pieces(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]] | None:
        """A packed batch's pieces, ``int64 [P, 3]`` of ``(row, first_token, n_tokens)``,
        and the windows' offsets into them, ``int64 [B + 1]`` (``None`` unpacked)."""
    def is_side(self, column: str) -> bool:
        """Whether ``column`` is a side column (no levels, no offsets)."""
    def cu_seqlens(self, column: str) -> npt.NDArray[np.int32]:
        """A packed batch's boundaries, ``int32`` from 0: window and document edges."""
    def position_ids(self, column: str) -> npt.NDArray[np.int64]:
        """A packed batch's positions within each piece of a document."""
    def _packed(
        self, column: str, positions: bool = True
    ) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int64] | None, int]:
        """``(cu_seqlens, position_ids, max_seqlen)`` of a packed column in one call
        (``position_ids`` ``None`` without ``positions``)."""
    def _position_ids_into(self, column: str, out: npt.NDArray[np.uint8], start: int) -> int:
        """Writes ``position_ids(column)`` into ``out`` (an array of ``RegionPool.take``)
        from byte ``start``; how many."""
    def _side_list(self, column: str) -> list[Any] | None:
        """A side column of strings or lists as one list (packed: one value per piece)."""
    def _side_utf8(self, column: str) -> tuple[bytes, bytes] | None:
        """A side column of strings without nulls as ``(data, offsets)``: UTF-8 bytes and
        ``n + 1`` native ``int64`` offsets (``_native.utf8_list`` makes the list)."""
    def next_state_dict(self) -> StateDict: ...
    def values(self, column: str) -> np.ndarray | pa.Array:
        """``[n_elements, *element_shape]``, a read-only view when the batch is a view; a side
        column's rows: numpy for primitives without nulls, else a ``pyarrow.Array``."""
    @overload
    def offsets(self, column: str, level: None = None) -> list[_Offsets]:
        """The offsets of each level of ``column`` in this batch, level 0 first, from 0."""
    @overload
    def offsets(self, column: str, level: int) -> _Offsets:
        """The offsets of level ``level`` of ``column`` in this batch, from 0."""
    def to_padded(
        self, column: str, level: int
    ) -> tuple[np.ndarray, npt.NDArray[np.int64], npt.NDArray[np.bool_]]: ...
    def to_pyarrow(self) -> pa.RecordBatch: ...
    def __arrow_c_array__(self, requested_schema: object | None = None) -> tuple[object, object]: ...
    def to_torch_nested(self, column: str, level: int | None = None) -> Any:
        """A ``torch.nested`` jagged tensor (needs torch)."""
