"""Shared-memory blocks that carry a DataLoader worker's batches to the main process, reused
once the main process has dropped every tensor over one (``lodtensor.torch``; Linux).

A worker copies a batch's arrays into one of its blocks (a ``memfd``, mapped once and
pre-faulted) and sends a small ``Item``: the layout, the block and the worker's pid. The
main process maps the block once (``/proc/PID/fd/FD``) and builds the tensors over it. The
block's first byte says whether it is in use: the worker sets it when it writes the block,
and the main process clears it when the last tensor over the block is freed; a worker
writes only a block of its own whose byte is clear, so a block is never written while the
main process may read it (the worker makes another, up to ``BLOCKS``, then falls back to
torch shared tensors). Making and faulting shared memory for every batch costs about 1 ms
per MiB on some virtual machines; a reused block costs one copy.
"""

from __future__ import annotations

import mmap
import os
import weakref
from typing import Any, Callable, Iterator, NamedTuple

import numpy as np
import torch

BLOCKS = 64  # blocks per worker process
ALIGN = 64  # the arrays' alignment; the first ALIGN bytes of a block are its header
_POPULATE = getattr(mmap, "MAP_POPULATE", 0)
# (dataset token, worker) -> (the worker's pid, {fd: mmap}): the blocks this process mapped.
_MAPPED: dict[tuple[str, int], tuple[int, dict[int, mmap.mmap]]] = {}


class Blocks:
    """A worker process's blocks: ``take(nbytes)`` gives a free one (marked in use) or ``None``."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.blocks: dict[int, np.ndarray] = {}  # fd -> the block's bytes
        self._maps: list[mmap.mmap] = []

    def take(self, nbytes: int) -> int | None:
        fd = next((fd for fd, raw in self.blocks.items() if raw[0] == 0 and len(raw) >= nbytes), None)
        if fd is None:
            if len(self.blocks) == BLOCKS or not hasattr(os, "memfd_create"):
                return None
            size = max(1 << 16, 1 << (nbytes - 1).bit_length())
            fd = os.memfd_create("lodtensor-batch", os.MFD_CLOEXEC)
            os.ftruncate(fd, size)
            block = mmap.mmap(fd, size, flags=mmap.MAP_SHARED | _POPULATE)
            self._maps.append(block)
            self.blocks[fd] = np.frombuffer(block, np.uint8)
        self.blocks[fd][0] = 1
        return fd


class Item:
    """A batch in a worker's block, as a worker yields it: pickled, only its layout, which
    the main process rebuilds over its own mapping of the block (the item, a dict). Not a
    ``Mapping`` (DataLoader's ``default_convert`` would copy it in the worker), but read
    like one in the worker, over the block, until the worker's next batch."""

    def __init__(self, blocks: Blocks, token: str, worker: int, fd: int, tree: Any, nbytes: int, nested: bool):
        self.where = (token, worker, blocks.pid, fd, len(blocks.blocks[fd]))
        self.tree, self.nbytes, self.nested = tree, nbytes, nested
        self._block = blocks.blocks[fd]
        self._item: dict[str, Any] | None = None

    def __reduce__(self) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        return rebuild, (self.where, self.tree, self.nbytes, self.nested)

    def _local(self) -> dict[str, Any]:
        if self._item is None:
            self._item = finish(tensors(self.tree, torch.from_numpy(self._block[: self.nbytes])), self.nested)
        return self._item

    def __getitem__(self, key: str) -> Any:
        return self._local()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._local())

    def __len__(self) -> int:
        return len(self._local())

    def keys(self) -> Any:
        return self._local().keys()

    def items(self) -> Any:
        return self._local().items()


def rebuild(where: tuple[Any, ...], tree: Any, nbytes: int, nested: bool) -> Any:
    """The item over the block, mapped once in this process."""
    token, worker, pid, fd, size = where
    known = _MAPPED.get((token, worker))
    if known is None or known[0] != pid:  # a new worker process: forget the old one's
        known = _MAPPED[(token, worker)] = (pid, {})
    block = known[1].get(fd)
    if block is None:
        with open(f"/proc/{pid}/fd/{fd}", "r+b") as f:
            block = known[1][fd] = mmap.mmap(f.fileno(), size, flags=mmap.MAP_SHARED | _POPULATE)
    # One array per item: torch holds it (the buffer's exporter) as long as any tensor over
    # the block lives; when it goes, the block's header says it is free.
    base = np.frombuffer(block, np.uint8, count=nbytes)
    weakref.finalize(base, _release, np.frombuffer(block, np.uint8, count=1))
    storage = torch.frombuffer(base, dtype=torch.uint8)
    del base
    return finish(tensors(tree, storage), nested)


def forget(token: str) -> None:
    """Unmaps (once their last tensor is freed) the blocks of a dataset that is gone."""
    for key in [key for key in _MAPPED if key[0] == token]:
        del _MAPPED[key]


def _release(header: np.ndarray) -> None:
    header[0] = 0


def layout(arrays: list[np.ndarray]) -> tuple[list[Leaf], int]:
    """Where each array lies in one block (aligned, after the header), and the bytes used."""
    leaves, end = [], ALIGN
    for a in arrays:
        leaves.append(Leaf(end, a.nbytes, a.dtype.str, a.shape))
        end += -(-a.nbytes // ALIGN) * ALIGN
    return leaves, end


def copy(raw: np.ndarray, arrays: list[np.ndarray], leaves: list[Leaf]) -> None:
    for a, leaf in zip(arrays, leaves):
        np.copyto(raw[leaf.start : leaf.start + leaf.nbytes].view(a.dtype).reshape(a.shape), a)


def write(blocks: Blocks, arrays: list[np.ndarray]) -> tuple[int, list[Leaf], int] | None:
    """Copies ``arrays`` into a free block: the block (its fd), where each array lies, the
    bytes used."""
    leaves, nbytes = layout(arrays)
    fd = blocks.take(nbytes)
    if fd is None:
        return None
    copy(blocks.blocks[fd], arrays, leaves)
    return fd, leaves, nbytes


class Leaf(NamedTuple):
    """Where one array lies in a block."""

    start: int
    nbytes: int
    dtype: str
    shape: tuple[int, ...]


def tensors(tree: Any, storage: torch.Tensor) -> Any:
    """``tree`` with each ``Leaf`` the tensor over ``storage`` (uint8) where it lies."""
    if isinstance(tree, Leaf):
        return storage[tree.start : tree.start + tree.nbytes].view(_torch_dtype(tree.dtype)).view(tree.shape)
    if isinstance(tree, dict):
        return {k: tensors(v, storage) for k, v in tree.items()}
    if isinstance(tree, list):
        return [tensors(v, storage) for v in tree]
    return tree


_DTYPES: dict[str, torch.dtype] = {}


def _torch_dtype(dtype: str) -> torch.dtype:
    if dtype not in _DTYPES:
        _DTYPES[dtype] = torch.from_numpy(np.empty(0, np.dtype(dtype))).dtype
    return _DTYPES[dtype]


def finish(item: dict[str, Any], nested: bool) -> dict[str, Any]:
    """``collate="nested"``: each column's values and offsets as a jagged nested tensor."""
    if nested:
        for name, column in item.items():
            if isinstance(column, dict):
                item[name] = torch.nested.nested_tensor_from_jagged(column["values"], column["offsets"])
    return item
