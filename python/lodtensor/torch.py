"""PyTorch: the loader's batches as a ``torch.utils.data.IterableDataset`` (needs torch).

    from torch.utils.data import DataLoader
    from lodtensor.torch import BatchDataset

    ds = BatchDataset("docs/", collate="packed", token_budget=4096, shuffle=True, seed=7)
    for epoch in range(10):
        ds.set_epoch(epoch)
        for item in DataLoader(ds, batch_size=None, num_workers=2):
            item["samples"]                    # int64 [B]: the dataset rows of the batch
            item["tokens"]["values"]           # the tokens of the batch, concatenated
            item["tokens"]["cu_seqlens"]       # int32 [B + 1]: FlashAttention's varlen layout

``import lodtensor`` never imports this module: torch stays optional.
"""

from __future__ import annotations

import ctypes
import multiprocessing.context
import os
import uuid
import warnings
import weakref
from functools import partial
from multiprocessing.sharedctypes import RawArray
from typing import Any, Callable, Iterator, Mapping, Union

import numpy as np
import pyarrow as pa
import torch
from torch.utils.data import IterableDataset, get_worker_info

import lodtensor._native as _native

from . import ArgumentError, Batch, Dataset, Loader, Mixture, ShardedDataset, _shm
from . import open as _open

__all__ = ["BatchDataset", "reshard_state", "to_nested"]

Collate = Union[None, str, Callable[[Batch], Mapping[str, Any]]]
Source = Union[str, "os.PathLike[str]", Dataset, ShardedDataset, Mixture]

_MODES = (None, "padded", "nested", "packed")
_INT64 = np.dtype(np.int64)
# Slots of the shared epoch array: [0] the epoch `set_epoch` gave, [1 + w] the epochs
# DataLoader worker w began since (a worker id beyond this is refused, naming it).
_MAX_WORKERS = 1024


class BatchDataset(IterableDataset):
    """The batches of ``lt.open(source).loader(**loader_options)`` as a torch
    ``IterableDataset``, for ``DataLoader(ds, batch_size=None, num_workers=n)``.

    ``source`` is a lodtensor file, a sharded dataset directory or URL (opened with
    ``storage_options``, ``cache_dir``, ``cache_limit`` and ``range_gap``, as ``lt.open``), an opened
    ``Dataset`` / ``ShardedDataset``, or a mixture (``lt.mix``). It is opened here, so a
    missing file or a bad option fails now, and pickles as what reopens it, so ``fork``,
    ``spawn`` and ``forkserver`` workers all work (each maps the files itself).
    ``columns`` chooses the columns of the items (for a file, the only ones read).
    ``loader_options`` are ``Dataset.loader``'s keywords (``batch_size``, ``token_budget``,
    ``shuffle``, ``seed``, ``buckets``, ``drop_last``, ``elastic``, ``pack``,
    ``prefetch``, ...); an unknown one is a ``TypeError`` here.

    The epoch is split over the DataLoader's workers and the distributed ranks: each
    worker is a rank of the loader, of ``world_size * num_workers``, where ``rank`` and
    ``world_size`` come from ``torch.distributed`` when it is initialised (or from the
    ``rank=`` / ``world_size=`` options, which win). Every sample is read once per epoch.
    With ``drop_last`` every rank takes as many steps; with ``elastic=True`` too, at most
    ``world_size - 1`` batches left out (the loader option ``step_ranks``), whatever the
    number of workers.

    Each item is a dict: ``"samples"``, an int64 tensor of the batch's dataset rows (global
    row numbers, across shards; of a mixture, rows within each sample's source, which
    ``"mixture"`` numbers), then one entry per column, as ``collate`` says for a column with
    levels (a column without levels is one tensor ``[B, ...]``; a side column, numbers as a
    tensor ``[B]``, anything else a list of ``B`` Python values):

    - ``None``: ``{"values": [n, ...], "offsets": [level 0, level 1, ...]}`` (int64 each);
    - ``"padded"``: ``{"values": [S, max_len, ...], "lengths": int64 [S], "mask": bool
      [S, max_len]}``, one row per sequence;
    - ``"nested"``: a jagged ``torch.nested`` tensor, one entry per sequence;
    - ``"packed"``: ``{"values": [n, ...], "cu_seqlens": int32 [S + 1], "position_ids":
      int64 [n], "max_seqlen": int}``: the layout of FlashAttention's varlen kernels and
      of HF's ``DataCollatorWithFlattening``;
    - a callable: ``collate(batch)`` gives the dict (numpy arrays become tensors).

    The sequences are those of level ``collate_level``: by default one per sample, and
    with ``pack`` one per *document* in each window (the packed columns' level 1: the
    boundaries of ``Batch.cu_seqlens``, so attention never crosses a document's edge).
    An int is that level for every column (a column with fewer levels: its last; with
    ``pack``, ``0`` asks for the windows' edges only), a dict ``{column: level}`` one
    column's level.

    With ``pack``, ``"samples"`` are the dataset rows of the batch's pieces of documents,
    window after window, and ``"windows"`` says how they lie: ``{"pieces": int64 [P, 3]
    of (row, first_token, n_tokens), "offsets": int64 [B + 1]}`` (window ``w``'s pieces
    are ``pieces[offsets[w]:offsets[w + 1]]``); a per-document column (a side column, a
    tensor without levels, such as an id or a label) is one value per piece, ``[P]``.

    In the main process (``num_workers=0``) values are zero-copy views of the file's
    copy-on-write mapping (or of the buffer a shuffled batch was gathered into): in-place
    ops change this process's copy, never the file. From a worker, only the item's layout
    is pickled: a view batch's values go as their place in the file, which the main
    process maps copy-on-write too; small arrays travel in the message; other arrays (a
    gathered batch's) are copied once into one of the worker's shared-memory blocks, which
    the main process maps as it is (``lodtensor._shm``). A URL dataset's view batches go
    as their places in the node's cache files, as a local file's do.
    ``set_epoch``, ``state_dict`` and ``load_state_dict`` reach the workers; see
    docs/python.md (torch) and docs/pretraining.md.

        >>> ds = BatchDataset("docs.arrow", collate="padded", batch_size=8)  # doctest: +SKIP
        >>> item = next(iter(DataLoader(ds, batch_size=None)))              # doctest: +SKIP
        >>> item["tokens"]["values"].shape                                  # doctest: +SKIP
        torch.Size([8, 29, 64])
    """

    def __init__(
        self,
        source: Source,
        *,
        collate: Collate = None,
        collate_level: int | Mapping[str, int] | None = None,
        storage_options: dict[str, str] | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        cache_limit: int | str | None = None,
        range_gap: int | None = None,
        columns: list[str] | None = None,
        **loader_options: Any,
    ) -> None:
        super().__init__()
        if not callable(collate) and collate not in _MODES:
            raise ArgumentError(
                f"BatchDataset collate: one of None, 'padded', 'nested', 'packed' or a callable, got {collate!r}"
            )
        if isinstance(collate_level, int) and collate_level < 0:
            raise ArgumentError(f"BatchDataset collate_level: must be at least 0, got {collate_level}")
        if collate_level is not None and not isinstance(collate_level, int):
            collate_level = dict(collate_level)
        self._rank = loader_options.pop("rank", None)
        self._world_size = loader_options.pop("world_size", None)
        _native._loader_options(**loader_options)  # an unknown or mistyped keyword: TypeError now
        self.columns = None if columns is None else [str(c) for c in columns]
        remote = {"storage_options": storage_options, "cache_dir": cache_dir, "cache_limit": cache_limit,
                  "range_gap": range_gap}
        self.dataset = _opened(source, self.columns, remote)
        self.collate = collate
        self.collate_level = collate_level
        self.loader_options = loader_options
        _check_keys(self.dataset, self.columns, loader_options, collate)
        self._epochs = RawArray(ctypes.c_int64, 1 + _MAX_WORKERS)
        self._pending: dict[str, Any] | None = None
        self._process: tuple[Any, ...] | None = None
        self._last: Batch | None = None
        self._token = uuid.uuid4().hex  # names this dataset's workers' blocks (lodtensor._shm)
        weakref.finalize(self, _shm.forget, self._token)
        self._blocks: Any = None  # the worker's _native.RegionPool (lodtensor._shm.blocks)

    @property
    def source(self) -> str | None:
        """The path or URL of the dataset (``None`` for a mixture)."""
        if isinstance(self.dataset, Mixture):
            return None
        url = getattr(self.dataset, "url", None)
        return url if url is not None else os.fspath(self.dataset.path)

    def set_epoch(self, epoch: int) -> None:
        """The epoch the next iteration reads, in every worker (persistent ones too: the
        epoch lives in memory shared with them). Without a call, each iteration reads the
        epoch after the one before, from 0."""
        if epoch < 0:
            raise ArgumentError(f"BatchDataset.set_epoch: the epoch must be at least 0, got {epoch}")
        self._epochs[0] = epoch
        ctypes.memset(ctypes.addressof(self._epochs) + 8, 0, 8 * _MAX_WORKERS)

    def state_dict(self) -> dict[str, Any]:
        """This process's position, after the last batch it yielded (what
        ``StatefulDataLoader`` saves for each worker): ``{"loader": Loader.state_dict(),
        "workers", "ranks", "elastic"}``."""
        loader: Any
        if self._last is not None:
            loader = self._last.next_state_dict()
        elif self._process is not None:
            loader = self._process[3].state_dict()
        else:
            loader = None if self._pending is None else self._pending["loader"]
        workers, ranks = (1, 1) if self._process is None else self._process[4:6]
        return {
            "loader": loader,
            "workers": workers,
            "ranks": ranks,
            "elastic": bool(self.loader_options.get("elastic", False)),
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """The next iteration goes on from ``state`` (from ``state_dict``), not from the epoch."""
        if not isinstance(state, Mapping) or "loader" not in state:
            raise ArgumentError(f"BatchDataset.load_state_dict: not a BatchDataset state: {str(state)[:200]}")
        info = get_worker_info()
        workers = 1 if info is None else info.num_workers
        if state["loader"] is not None and state.get("workers", workers) != workers:
            how = "" if state.get("elastic") else " (saved without elastic=True: it resumes only on as many workers)"
            raise ArgumentError(
                f"BatchDataset.load_state_dict: a state of {str(state['workers'])[:40]} DataLoader workers loaded into "
                f"{workers}: pass it through lodtensor.torch.reshard_state(state, {workers}) first{how}"
            )
        self._pending = None if state["loader"] is None else dict(state)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        info = get_worker_info()
        worker, workers = (info.id, info.num_workers) if info is not None else (0, 1)
        if worker >= _MAX_WORKERS:
            raise ArgumentError(f"BatchDataset: DataLoader worker {worker}: at most {_MAX_WORKERS} workers")
        loader = self._loader(worker, workers)
        if self._pending is not None:
            state, self._pending = self._pending, None
            loader.load_state_dict(state["loader"])
            self._epochs[1 + worker] = state["loader"]["epoch"] + 1 - self._epochs[0]
        else:
            epoch = self._epochs[0] + self._epochs[1 + worker]
            self._epochs[1 + worker] += 1
            loader.set_epoch(epoch)
        self._last = None
        return self._batches(loader, None if info is None else worker)

    def _loader(self, worker: int, workers: int) -> Loader:
        """This process's loader for worker ``worker`` of ``workers``, made once per process."""
        rank, ranks = self._rank, self._world_size
        if ranks is None:
            rank, ranks = _distributed() or (0, 1)
        rank = 0 if rank is None else rank
        # Elastic ranks take turns over the epoch's batches: worker-major, rank r's DataLoader
        # yields batches r, r + ranks, ... whatever the number of workers, so a saved step
        # resumes on another one. Otherwise a rank's workers read adjacent parts.
        # With drop_last only the ranks need equal steps, not their workers (step_ranks).
        extra = {}
        if self.loader_options.get("elastic", False):
            index = worker * ranks + rank
            extra["step_ranks"] = ranks
        else:
            index = rank * workers + worker
        key = (os.getpid(), index, ranks * workers)
        if self._process is None or self._process[:3] != key:
            if get_worker_info() is not None and "shared_memory" not in self.loader_options:
                extra["shared_memory"] = True  # gathered batches: where the main process reads them
            loader = self.dataset.loader(**self.loader_options, **extra, rank=index, world_size=ranks * workers)
            self._process = (*key, loader, workers, ranks)
        return self._process[3]

    def _batches(self, loader: Loader, worker: int | None) -> Iterator[dict[str, Any]]:
        for batch in loader:
            item = self._item(batch, worker)
            self._last = batch
            yield item

    def _item(self, batch: Batch, worker: int | None) -> Any:
        nested = self.collate == "nested"
        pieces = batch.pieces()
        if worker is None:  # the main process: tensors over the batch's arrays
            return _shm.finish(_quiet(self._arrays, batch, pieces, _tensor), nested)
        if self._blocks is None or self._blocks.pid != os.getpid():
            self._blocks = _shm.blocks()
        region = None if batch.is_view else batch.lend_shared_memory()
        places: dict[int, tuple[Any, ...]] = {}  # the values arrays' places (lodtensor._shm)
        placer = _shm.Placer(self._blocks, places, region)
        tree = self._arrays(batch, pieces, placer.leaf, places)
        if not callable(self.collate):  # side columns' lists cross as they are, unwalked
            for name, value in tree.items():
                if type(value) is list and batch.is_side(name):
                    tree[name] = _shm.plain(value)
        placed = placer.finish(tree)
        if placed is None:  # every block in use: a torch shared tensor of its own
            return _shm.finish(placer.shared(tree), nested)
        return _shm.Item(self._token, worker, placed, nested)

    def _arrays(
        self, batch: Batch, pieces: Any, leaf: Callable[[Any], Any], places: dict[int, Any] | None = None
    ) -> dict[str, Any]:
        """The item, each numpy array of it passed through ``leaf``; the places of the
        batch's values arrays (``Batch.values_place``) put in ``places`` by their ``id``.
        ``pieces``: ``batch.pieces()``."""
        if pieces is None:
            item = {"samples": leaf(np.array(batch.samples, dtype=np.int64))}  # a copy: the plan's own
        else:
            rows = np.ascontiguousarray(pieces[0][:, 0])
            item = {"samples": leaf(rows), "windows": {"pieces": leaf(pieces[0]), "offsets": leaf(pieces[1])}}
        source = batch.source
        if source is not None:
            item["mixture"] = leaf(source if pieces is None else np.repeat(source, np.diff(pieces[1])))
        if callable(self.collate):
            return {**item, **_walk(dict(self.collate(batch)), leaf)}
        packed = pieces is not None
        for name in batch.column_names if self.columns is None else self.columns:
            item[name] = self._column(batch, name, leaf, places, packed)
        return item

    def _column(
        self, batch: Batch, name: str, leaf: Callable[[Any], Any], places: dict[int, Any] | None, packed: bool
    ) -> Any:
        if batch.is_side(name):
            return _side(batch, name, leaf, packed, places is not None)
        levels = batch.num_levels(name)
        one_each = levels == 0 or (packed and levels == 1)  # one value per sample, or per piece
        values = batch.values(name) if self.collate != "padded" or one_each else None
        if places is not None and values is not None and (place := batch.values_place(name)) is not None:
            places[id(values)] = place
        if one_each:
            return leaf(values)
        if self.collate is None:
            return {"values": leaf(values), "offsets": [leaf(o) for o in batch.offsets(name)]}
        level = self._level(name, levels, packed)
        if self.collate == "padded":
            padded, lengths, mask = batch.to_padded(name, level)
            return {"values": leaf(padded), "lengths": leaf(lengths), "mask": leaf(mask)}
        if packed and level == 1:  # the documents' edges, as the in-process batch has them
            if self.collate == "packed":  # one call: boundaries, positions and the longest
                cu_seqlens, made, longest = batch._packed(name, places is None)
                position_ids: Any = made
                if made is None:  # a worker's: written into its block (_shm.Later)
                    write, make = partial(batch._position_ids_into, name), partial(batch.position_ids, name)
                    position_ids = _shm.Later(_INT64, (int(cu_seqlens[-1]),), write, make)
                return {"values": leaf(values), "cu_seqlens": leaf(cu_seqlens),
                        "position_ids": leaf(position_ids), "max_seqlen": longest}
            cu_seqlens = batch.cu_seqlens(name)
        else:
            cu_seqlens = _cu_seqlens(_element_offsets(batch, name, level), name)
        if self.collate == "nested":
            return {"values": leaf(values), "offsets": leaf(cu_seqlens.astype(np.int64))}
        return {key: leaf(a) for key, a in _packed(values, cu_seqlens).items()}

    def _level(self, name: str, levels: int, packed: bool) -> int:
        """The level of ``name``'s sequences (``collate_level``): by default one per sample,
        or per document when packed (a packed column's level 1)."""
        default = 1 if packed else 0
        if self.collate_level is None:
            return default
        if isinstance(self.collate_level, int):
            return min(self.collate_level, levels - 1)
        level = self.collate_level.get(name, default)
        if not 0 <= level < levels:
            raise ArgumentError(f"BatchDataset collate_level {level}: column {name!r} has {levels} levels")
        return level

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_process"], state["_last"], state["_blocks"] = None, None, None
        if multiprocessing.context.get_spawning_popen() is None:
            # A plain pickle (not a worker's start): the epoch by value.
            state["_epochs"] = list(self._epochs)
            state["_token"] = None
        elif self._world_size is None and (distributed := _distributed()) is not None:
            # A spawned or forkserver worker has no process group: it takes this process's.
            state["_rank"], state["_world_size"] = distributed
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        if isinstance(state["_epochs"], list):
            state["_epochs"] = RawArray(ctypes.c_int64, state["_epochs"])
        self.__dict__.update(state)
        if self._token is None:  # a copy of its own, not a worker's
            self._token = uuid.uuid4().hex
            weakref.finalize(self, _shm.forget, self._token)


def _state_at(state: Mapping[str, Any], batch: int) -> dict[str, Any]:
    """A loader state of the same epoch's plan as ``state`` at an earlier ``batch``: its
    parts (each part's options and the batch it ended at) cut there."""
    parts, start = [], 0
    for part in state.get("parts", []):
        if start >= batch:
            break
        parts.append(dict(part, end=min(part["end"], batch)))
        start = part["end"]
    return dict(state, batch=batch, parts=parts)


def reshard_state(state: Mapping[str, Any], num_workers: int) -> dict[str, Any]:
    """A ``StatefulDataLoader.state_dict()`` over a ``BatchDataset(..., elastic=True)``,
    saved with any number of workers (0 too), made for a DataLoader of ``num_workers``
    workers (``StatefulDataLoader`` refuses another number): it goes on with the next batch
    of the epoch, none read twice or left out. Any number of ranks can load it.

        >>> dl = StatefulDataLoader(ds, batch_size=None, num_workers=3)      # doctest: +SKIP
        >>> dl.load_state_dict(reshard_state(saved_with_2_workers, 3))      # doctest: +SKIP
    """
    if num_workers < 0:
        raise ArgumentError(f"reshard_state num_workers: must be at least 0, got {num_workers}")
    try:
        if "_snapshot" in state:
            snapshot = state["_snapshot"]
            workers = [w["dataset_state"] for w in snapshot["_worker_snapshots"].values()]
            steps, main = snapshot["_snapshot_step"], dict(snapshot["_main_snapshot"])
        else:
            workers, steps, main = [state["dataset_state"]], state["_num_yielded"], dict(state)
        loaders = [w["loader"] for w in workers if w is not None and w["loader"] is not None]
        elastic = all(w["elastic"] for w in workers if w is not None)
    except (KeyError, TypeError) as e:
        raise ArgumentError(f"reshard_state: not a StatefulDataLoader state over a BatchDataset (no {e})") from None
    if not loaders or not elastic:
        raise ArgumentError("reshard_state: the state of a BatchDataset(..., elastic=True) is needed")
    if len({s["epoch"] for s in loaders}) != 1:
        raise ArgumentError("reshard_state: the workers' states are of different epochs")
    # Worker-major turns: the batches this rank took, with the other ranks', are a prefix of
    # the plan, `ranks` batches for each it yielded; a worker past the end stops at the end.
    ranks = next(w for w in workers if w is not None)["ranks"]
    furthest = max(loaders, key=lambda s: s["batch"])
    position = _state_at(furthest, min(ranks * steps, furthest["batch"]))
    worker = {"loader": position, "workers": max(num_workers, 1), "ranks": ranks, "elastic": True}
    fetcher = {"dataset_iter_state": None, "fetcher_ended": False}
    common = (
        "_index_sampler_state",
        "_sampler_iter_state",
        "_sampler_iter_yielded",
        "_IterableDataset_len_called",
        "_shared_seed",
    )
    if num_workers == 0:
        out = {key: main.get(key) for key in common}
        return out | {
            "_num_yielded": steps,
            "fetcher_state": fetcher,
            "dataset_state": worker,
            "_iterator_finished": False,
        }
    seed = main.get("_base_seed", int(torch.empty((), dtype=torch.int64).random_()))
    main = {key: main.get(key) for key in common} | {"_num_workers": num_workers, "_base_seed": seed}
    snapshot = {
        "_snapshot_step": steps,
        "_last_yielded_worker_id": num_workers - 1,
        "_main_snapshot": main,
        "_worker_snapshots": {
            f"worker_{i}": {"worker_id": i, "fetcher_state": fetcher, "dataset_state": dict(worker)}
            for i in range(num_workers)
        },
    }
    return {"_snapshot": snapshot, "_steps_since_snapshot": state.get("_steps_since_snapshot", 0), "_iterator_finished": False}


def to_nested(batch: Batch, column: str, level: int | None = None) -> Any:
    """Level ``level`` (default: the last) of ``column`` as a jagged ``torch.nested`` tensor.

    One entry per sequence of that level, ``[length, *element_shape]``, over the batch's
    values without a copy (``Batch.to_torch_nested``). A view batch's values are the file's
    copy-on-write mapping: an in-place op changes this process's copy, never the file.
    """
    levels = batch.num_levels(column)
    if levels == 0:
        raise ArgumentError(f"column {column!r} has no levels: it is dense already")
    if level is None:
        level = levels - 1
    return torch.nested.nested_tensor_from_jagged(
        _quiet(_tensor, batch.values(column)), torch.from_numpy(_element_offsets(batch, column, level))
    )


def _opened(source: Any, columns: list[str] | None, remote: dict[str, Any]) -> Dataset | ShardedDataset | Mixture:
    """``source`` opened as ``lt.open`` does (a file with only ``columns``; ``remote`` its
    keywords for a URL), or as it is."""
    if isinstance(source, (Dataset, ShardedDataset, Mixture)):
        if any(v is not None for v in remote.values()):
            raise ArgumentError(
                "BatchDataset storage_options=/cache_dir=/cache_limit=/range_gap=: for a URL source; "
                "an opened dataset has its own"
            )
        return source
    if not isinstance(source, (str, os.PathLike)):
        raise TypeError(
            f"BatchDataset source: a path, a URL, a Dataset, a ShardedDataset or a Mixture, not {type(source).__name__}"
        )
    path = os.fspath(source)
    if columns is not None and os.path.isfile(path):
        return _open(path, columns=columns, **remote)
    return _open(path, **remote)


def _check_keys(dataset: Any, columns: list[str] | None, options: Mapping[str, Any], collate: Collate) -> None:
    """Refuses a column ``columns`` names that the dataset has not, and one whose name is
    one of the item's own keys."""
    names = set((dataset.sources[0] if isinstance(dataset, Mixture) else dataset).column_names)
    for name in columns or []:
        if name not in names:
            raise ArgumentError(f"BatchDataset columns: no column {name!r} (the dataset has {sorted(names)})")
    if callable(collate):
        return
    keys = ["samples"] + (["windows"] if options.get("pack") is not None else [])
    keys += ["mixture"] if isinstance(dataset, Mixture) else []
    for key in keys:
        if key in names:
            raise ArgumentError(f"BatchDataset: a column named {key!r} clashes with the item's key")


def _distributed() -> tuple[int, int] | None:
    """This process's rank and world size in torch.distributed, if initialised."""
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    return None


def _element_offsets(batch: Batch, column: str, level: int) -> np.ndarray:
    """The offsets of ``level``'s sequences in elements (the last level's units), from 0."""
    offsets = batch.offsets(column, level)
    for below in range(level + 1, batch.num_levels(column)):
        offsets = batch.offsets(column, below)[offsets]
    return offsets


def _cu_seqlens(offsets: np.ndarray, name: str) -> np.ndarray:
    """Element offsets from 0 as ``int32`` boundaries."""
    if len(offsets) and offsets[-1] > np.iinfo(np.int32).max:
        raise ArgumentError(f"BatchDataset collate='packed': column {name!r}: over 2^31 elements in one batch")
    return offsets.astype(np.int32)


def _packed(values: Any, cu_seqlens: np.ndarray) -> dict[str, Any]:
    """The packed collate of ``values`` cut at ``cu_seqlens``."""
    lengths = np.diff(cu_seqlens)
    position_ids = np.arange(len(values), dtype=np.int64) - np.repeat(cu_seqlens[:-1].astype(np.int64), lengths)
    return {
        "values": values,
        "cu_seqlens": cu_seqlens,
        "position_ids": position_ids,
        "max_seqlen": int(lengths.max(initial=0)),
    }


def _side(batch: Batch, name: str, leaf: Callable[[Any], Any], packed: bool, worker: bool = False) -> Any:
    """Side column ``name`` of an item: numbers as one array, anything else as a list of
    Python values (strings and lists built at once by ``Batch._side_list``, other kinds by
    pyarrow); packed, one value per piece (the windows' lists flattened). In a ``worker``,
    strings without nulls as two buffers, the list made in the main process (``_shm.Strings``)."""
    if worker and (utf8 := batch._side_utf8(name)) is not None:
        return _shm.strings(*utf8)
    listed = batch._side_list(name)
    if listed is not None:
        return listed
    values = batch.values(name)
    if isinstance(values, np.ndarray):
        return leaf(values)
    if packed:
        values = values.flatten()
    if pa.types.is_integer(values.type) or pa.types.is_floating(values.type) or pa.types.is_boolean(values.type):
        if values.null_count == 0:
            return leaf(values.to_numpy(zero_copy_only=False))
    return values.to_pylist()


def _quiet(f: Callable[..., Any], *args: Any) -> Any:
    """``f(*args)`` without torch's warning for a read-only array: a view batch's values
    are marked read-only, and the mapping is copy-on-write (torch does not read the flag).
    torch warns once a process: the first call spends that warning, unseen, and the others
    need nothing (a ``catch_warnings`` a batch would cost more than the batch's tensors)."""
    global _SPENT
    if not _SPENT:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            readonly = np.empty(0)
            readonly.flags.writeable = False
            torch.from_numpy(readonly)
        _SPENT = True
    return f(*args)


_SPENT = False  # whether torch's one warning for a read-only array was spent (_quiet)


def _tensor(a: Any) -> Any:
    """A numeric numpy array as a tensor over the same memory (others as they are)."""
    return torch.from_numpy(a) if isinstance(a, np.ndarray) and a.dtype.kind in "biuf" else a


def _walk(tree: Any, leaf: Callable[[np.ndarray], Any]) -> Any:
    if isinstance(tree, np.ndarray) and tree.dtype.kind in "biuf":
        return leaf(tree)
    if isinstance(tree, dict):
        return {k: _walk(v, leaf) for k, v in tree.items()}
    if isinstance(tree, list):
        return [_walk(v, leaf) for v in tree]
    return tree
