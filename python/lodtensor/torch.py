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

import bisect
import ctypes
import multiprocessing.context
import os
import uuid
import warnings
import weakref
from multiprocessing.sharedctypes import RawArray
from typing import Any, Callable, Iterator, Mapping, Union

import numpy as np
import torch
from torch.utils.data import IterableDataset, get_worker_info

from . import ArgumentError, Batch, Loader, _shm
from . import open as _open

__all__ = ["BatchDataset", "reshard_state", "to_nested"]

Collate = Union[None, str, Callable[[Batch], Mapping[str, Any]]]

_MODES = (None, "padded", "nested", "packed")
# Slots of the shared epoch array: [0] the epoch `set_epoch` gave, [1 + w] the epochs
# DataLoader worker w began since (a worker id beyond this is refused, naming it).
_MAX_WORKERS = 1024


class BatchDataset(IterableDataset):
    """The batches of ``lt.open(source).loader(**loader_options)`` as a torch
    ``IterableDataset``, for ``DataLoader(ds, batch_size=None, num_workers=n)``.

    ``source`` is a lodtensor file or a sharded dataset directory, opened in the process
    that iterates (each DataLoader worker maps it itself); the object pickles as its path,
    options and epoch, so ``fork``, ``spawn`` and ``forkserver`` workers all work.
    ``loader_options`` are ``Dataset.loader``'s keywords (``batch_size``, ``token_budget``,
    ``shuffle``, ``seed``, ``buckets``, ``drop_last``, ``elastic``, ``prefetch``, ...).

    The epoch is split over the DataLoader's workers and the distributed ranks: each
    worker is a rank of the loader, of ``world_size * num_workers``, where ``rank`` and
    ``world_size`` come from ``torch.distributed`` when it is initialised (or from the
    ``rank=`` / ``world_size=`` options, which win). Every sample is read once per epoch.
    With ``drop_last`` every rank takes as many steps; with ``elastic=True`` too, at most
    ``world_size - 1`` batches left out (the loader option ``step_ranks``), whatever the
    number of workers.

    Each item is a dict: ``"samples"``, an int64 tensor of the batch's dataset rows (global
    row numbers, across shards), then one entry per column, as ``collate`` says for a
    column with levels (a column without levels is one tensor ``[B, ...]``):

    - ``None``: ``{"values": [n, ...], "offsets": [level 0, level 1, ...]}`` (int64 each);
    - ``"padded"``: ``{"values": [B, max_len, ...], "lengths": int64 [B], "mask": bool
      [B, max_len]}``, one sequence per entry of level ``collate_level``;
    - ``"nested"``: a jagged ``torch.nested`` tensor, one entry per sequence of that level;
    - ``"packed"``: ``{"values": [n, ...], "cu_seqlens": int32 [S + 1], "position_ids":
      int64 [n], "max_seqlen": int}``: the layout of FlashAttention's varlen kernels and
      of HF's ``DataCollatorWithFlattening``;
    - a callable: ``collate(batch)`` gives the dict (numpy arrays become tensors).

    ``collate_level`` chooses the sequences: the default 0 is one sequence per sample; an
    int is that level for every column (a column with fewer levels: its last), a dict
    ``{column: level}`` one column's level (0 for those it leaves out). In the
    main process (``num_workers=0``) values are zero-copy views of the file's copy-on-write
    mapping (or of the buffer a shuffled batch was gathered into): in-place ops change this
    process's copy, never the file. From a worker, only the item's layout is pickled: a
    view batch's values go as their place in the file, which the main process maps
    copy-on-write too; small arrays travel in the message; other arrays (a gathered
    batch's) are copied once into one of the worker's shared-memory blocks, which the main
    process maps as it is (``lodtensor._shm``).
    ``set_epoch``, ``state_dict`` and ``load_state_dict`` reach the workers; see
    docs/python.md (torch).

        >>> ds = BatchDataset("docs.arrow", collate="padded", batch_size=8)  # doctest: +SKIP
        >>> item = next(iter(DataLoader(ds, batch_size=None)))              # doctest: +SKIP
        >>> item["tokens"]["values"].shape                                  # doctest: +SKIP
        torch.Size([8, 29, 64])
    """

    def __init__(
        self,
        source: str | os.PathLike[str],
        *,
        collate: Collate = None,
        collate_level: int | Mapping[str, int] = 0,
        **loader_options: Any,
    ) -> None:
        super().__init__()
        if not callable(collate) and collate not in _MODES:
            raise ArgumentError(
                f"BatchDataset collate: one of None, 'padded', 'nested', 'packed' or a callable, got {collate!r}"
            )
        if isinstance(collate_level, int) and collate_level < 0:
            raise ArgumentError(f"BatchDataset collate_level: must be at least 0, got {collate_level}")
        if not isinstance(collate_level, int):
            collate_level = dict(collate_level)
        self.source = os.fspath(source)
        self.collate = collate
        self.collate_level = collate_level
        self._rank = loader_options.pop("rank", None)
        self._world_size = loader_options.pop("world_size", None)
        self.loader_options = loader_options
        self._epochs = RawArray(ctypes.c_int64, 1 + _MAX_WORKERS)
        self._pending: dict[str, Any] | None = None
        self._process: tuple[Any, ...] | None = None
        self._last: Batch | None = None
        self._token = uuid.uuid4().hex  # names this dataset's workers' blocks (lodtensor._shm)
        weakref.finalize(self, _shm.forget, self._token)
        self._blocks: _shm.Blocks | None = None

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
            raise ArgumentError(f"BatchDataset.load_state_dict: not a BatchDataset state: {state!r}")
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
            dataset = _open(self.source)
            if not callable(self.collate) and "samples" in dataset.column_names:
                raise ArgumentError(f"BatchDataset: {self.source}: a column named 'samples' clashes with the item's key")
            if get_worker_info() is not None and "shared_memory" not in self.loader_options:
                extra["shared_memory"] = True  # gathered batches: where the main process reads them
            loader = dataset.loader(**self.loader_options, **extra, rank=index, world_size=ranks * workers)
            self._process = (*key, loader, workers, ranks, _files_of(self.source, dataset))
        return self._process[3]

    def _file_of(self, batch: Batch) -> str | None:
        """The path of the file a view batch is a view of (``None``: unknown)."""
        assert self._process is not None
        files = self._process[6]
        if files is None:
            return None
        offsets, paths = files
        return paths[bisect.bisect_right(offsets, int(batch.samples[0])) - 1]

    def _batches(self, loader: Loader, worker: int | None) -> Iterator[dict[str, Any]]:
        for batch in loader:
            item = self._item(batch, worker)
            self._last = batch
            yield item

    def _item(self, batch: Batch, worker: int | None) -> Any:
        nested = self.collate == "nested"
        if worker is None:  # the main process: tensors over the batch's arrays
            return _shm.finish(_quiet(self._arrays, batch, _tensor), nested)
        views: set[int] = set()  # the values arrays: in the file or in shared memory (lodtensor._shm)
        if self._blocks is None or self._blocks.pid != os.getpid():
            self._blocks = _shm.Blocks()
        path = self._file_of(batch) if batch.is_view else None
        placer = _shm.Placer(self._blocks, views, path, None if batch.is_view else batch.lend_shared_memory())
        tree = self._arrays(batch, placer.leaf, views)
        placed = placer.finish(tree)
        if placed is None:  # every block in use: a torch shared tensor of its own
            return _shm.finish(placer.shared(tree), nested)
        return _shm.Item(self._token, worker, placed, nested)

    def _arrays(self, batch: Batch, leaf: Callable[[Any], Any], views: set[int] | None = None) -> dict[str, Any]:
        """The item, each numpy array of it passed through ``leaf``; the ids of the batch's
        values arrays added to ``views``."""
        samples = leaf(np.array(batch.samples, dtype=np.int64))  # a copy: the plan's own
        if callable(self.collate):
            return {"samples": samples, **_walk(dict(self.collate(batch)), leaf)}
        columns = {name: self._column(batch, name, leaf, views) for name in batch.column_names}
        return {"samples": samples, **columns}

    def _column(self, batch: Batch, name: str, leaf: Callable[[Any], Any], views: set[int] | None) -> Any:
        levels = batch.num_levels(name)
        values = batch.values(name) if self.collate != "padded" or levels == 0 else None
        if views is not None:
            views.add(id(values))
        if levels == 0:
            return leaf(values)
        if self.collate is None:
            return {"values": leaf(values), "offsets": [leaf(o) for o in batch.offsets(name)]}
        if isinstance(self.collate_level, int):
            level = min(self.collate_level, levels - 1)
        else:
            level = self.collate_level.get(name, 0)
            if not 0 <= level < levels:
                raise ArgumentError(f"BatchDataset collate_level {level}: column {name!r} has {levels} levels")
        if self.collate == "padded":
            padded, lengths, mask = batch.to_padded(name, level)
            return {"values": leaf(padded), "lengths": leaf(lengths), "mask": leaf(mask)}
        offsets = _element_offsets(batch, name, level)
        if self.collate == "nested":
            return {"values": leaf(values), "offsets": leaf(offsets)}
        return {key: leaf(a) for key, a in _packed(values, offsets, name).items()}

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
    position = dict(loaders[0], batch=min(ranks * steps, max(s["batch"] for s in loaders)))
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


def _files_of(source: str, dataset: Any) -> tuple[list[int], list[str]] | None:
    """The first global row and the path of each file of ``source``, as the process maps
    them (``None`` for a URL: its shards are files of a cache)."""
    if os.path.isfile(source):
        return [0], [os.path.realpath(source)]
    if not os.path.isdir(source):
        return None
    offsets = [int(o) for o in dataset.shard_offsets]
    return offsets[:-1], [os.path.realpath(os.path.join(source, shard["file"])) for shard in dataset.shards]


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


def _packed(values: Any, offsets: np.ndarray, name: str) -> dict[str, Any]:
    if len(values) > np.iinfo(np.int32).max:
        raise ArgumentError(f"BatchDataset collate='packed': column {name!r}: over 2^31 elements in one batch")
    lengths = np.diff(offsets)
    positions = np.arange(len(values), dtype=np.int64) - np.repeat(offsets[:-1], lengths)
    return {
        "values": values,
        "cu_seqlens": offsets.astype(np.int32),
        "position_ids": positions,
        "max_seqlen": int(lengths.max(initial=0)),
    }


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
