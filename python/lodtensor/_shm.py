"""Shared-memory blocks that carry a DataLoader worker's batches to the main process, reused
once the main process has dropped every tensor over one (``lodtensor.torch``; Linux).

A worker copies a batch's arrays into one block (a ``memfd``, mapped once and pre-faulted)
and sends a small ``Item``: its layout, the block's slot and the worker's pid. The main
process maps the block once (``/proc/PID/fd/FD``) and builds the tensors over it; when the
last of them is freed, a finalizer clears the slot's flag in an array shared with the
worker, which may then write the block again. A block in use is never written: the worker
takes another one, or a fresh torch shared tensor when all ``SLOTS`` are in use. Creating
and faulting shared memory per batch costs about 1 ms per MiB on some virtual machines;
reusing blocks costs one copy.
"""

from __future__ import annotations

import mmap
import os
import uuid
import weakref
from typing import Any, Callable, NamedTuple

import numpy as np
import torch

SLOTS = 64  # blocks per worker
ALIGN = 64
_POPULATE = getattr(mmap, "MAP_POPULATE", 0)
# token -> the BatchDataset owning the flags (main process), so a rebuilt item can free its slot.
OWNERS: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()
# (token, worker) -> (the worker's nonce, {slot: mmap}): the blocks this process mapped.
_MAPPED: dict[tuple[str, int], tuple[str, dict[int, mmap.mmap]]] = {}


class Blocks:
    """A worker's blocks: ``take(nbytes)`` gives a free one or ``None``. A slot's flag is 0
    when free, else the pid of the worker whose block the main process may still read; a
    worker takes only a slot whose flag is 0 (a slot of an earlier worker process stays
    untouched until the main process drops that worker's last item in it)."""

    def __init__(self, flags: Any, worker: int) -> None:
        self.flags, self.first = flags, worker * SLOTS
        self.nonce, self.pid = uuid.uuid4().hex, os.getpid()
        self.blocks: dict[int, tuple[int, mmap.mmap, np.ndarray]] = {}

    def take(self, nbytes: int) -> int | None:
        free = [slot for slot in range(SLOTS) if self.flags[self.first + slot] == 0]
        fits = [slot for slot in free if slot in self.blocks and len(self.blocks[slot][2]) >= nbytes]
        if fits:
            slot = fits[0]
        else:
            new = [slot for slot in free if slot not in self.blocks]
            if not new or not hasattr(os, "memfd_create"):
                return None
            slot = new[0]
            size = max(1 << 16, 1 << (max(nbytes, 1) - 1).bit_length())
            fd = os.memfd_create("lodtensor-batch", os.MFD_CLOEXEC)
            os.ftruncate(fd, size)
            block = mmap.mmap(fd, size, flags=mmap.MAP_SHARED | _POPULATE)
            self.blocks[slot] = (fd, block, np.frombuffer(block, np.uint8))
        self.flags[self.first + slot] = self.pid
        return slot

    def array(self, slot: int) -> np.ndarray:
        return self.blocks[slot][2]


def _release(flags: Any, index: int, pid: int) -> None:
    if flags[index] == pid:
        flags[index] = 0


class Item:
    """A batch in a worker's block, as a worker yields it: pickled, only its layout, which
    the main process rebuilds over its own mapping of the block (the item, a dict). Not a
    ``Mapping``: DataLoader's ``default_convert`` would copy it in the worker."""

    def __init__(self, blocks: Blocks, token: str, worker: int, slot: int, tree: Any, nbytes: int, nested: bool):
        size = len(blocks.array(slot))
        self.where = (token, worker, blocks.nonce, os.getpid(), blocks.blocks[slot][0], slot, size)
        self.tree, self.nbytes, self.nested = tree, nbytes, nested

    def __reduce__(self) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        return rebuild, (self.where, self.tree, self.nbytes, self.nested)


def rebuild(where: tuple[Any, ...], tree: Any, nbytes: int, nested: bool) -> Any:
    """The item over the block, mapped once in this process."""
    token, worker, nonce, pid, fd, slot, size = where
    known = _MAPPED.get((token, worker))
    if known is None or known[0] != nonce:  # a new worker process: forget the old one's
        known = _MAPPED[(token, worker)] = (nonce, {})
    block = known[1].get(slot)
    if block is None:
        with open(f"/proc/{pid}/fd/{fd}", "r+b") as f:
            block = known[1][slot] = mmap.mmap(f.fileno(), size, flags=mmap.MAP_SHARED | _POPULATE)
    # One array per item: torch holds it (the buffer's exporter) as long as any tensor over
    # the block lives; when it goes, the worker may write the block again.
    base = np.frombuffer(block, np.uint8, count=nbytes)
    owner = OWNERS.get(token)
    if owner is not None:
        weakref.finalize(base, _release, owner._flags, worker * SLOTS + slot, pid)
    storage = torch.frombuffer(base, dtype=torch.uint8) if nbytes else torch.empty(0, dtype=torch.uint8)
    del base
    return finish(tensors(tree, storage), nested)


def layout(arrays: list[np.ndarray]) -> tuple[list[Leaf], int]:
    """Where each array lies in one block (aligned), and the block's bytes."""
    leaves, end = [], 0
    for a in arrays:
        leaves.append(Leaf(end, a.dtype.str, a.shape))
        end += -(-a.nbytes // ALIGN) * ALIGN
    return leaves, end


def copy(raw: np.ndarray, arrays: list[np.ndarray], leaves: list[Leaf]) -> None:
    for a, (start, _, _) in zip(arrays, leaves):
        np.copyto(raw[start : start + a.nbytes].view(a.dtype).reshape(a.shape), a)


def write(blocks: Blocks, arrays: list[np.ndarray]) -> tuple[int, list[Leaf], int] | None:
    """Copies ``arrays`` into a free block: its slot, where each array lies, the bytes used."""
    leaves, nbytes = layout(arrays)
    slot = blocks.take(nbytes)
    if slot is None:
        return None
    copy(blocks.array(slot), arrays, leaves)
    return slot, leaves, nbytes


class Leaf(NamedTuple):
    """Where one array lies in a block."""

    start: int
    dtype: str
    shape: tuple[int, ...]


def tensors(tree: Any, storage: torch.Tensor) -> Any:
    """``tree`` with each ``Leaf`` the tensor over ``storage`` (uint8) where it lies."""
    if isinstance(tree, Leaf):
        dtype = np.dtype(tree.dtype)
        n = int(np.prod(tree.shape, dtype=np.int64)) * dtype.itemsize
        return storage[tree.start : tree.start + n].view(_torch_dtype(dtype)).view(tree.shape)
    if isinstance(tree, dict):
        return {k: tensors(v, storage) for k, v in tree.items()}
    if isinstance(tree, list):
        return [tensors(v, storage) for v in tree]
    return tree


_DTYPES: dict[np.dtype, torch.dtype] = {}


def _torch_dtype(dtype: np.dtype) -> torch.dtype:
    if dtype not in _DTYPES:
        _DTYPES[dtype] = torch.from_numpy(np.empty(0, dtype)).dtype
    return _DTYPES[dtype]


def finish(item: dict[str, Any], nested: bool) -> dict[str, Any]:
    """``collate="nested"``: each column's values and offsets as a jagged nested tensor."""
    if nested:
        for name, column in item.items():
            if isinstance(column, dict):
                item[name] = torch.nested.nested_tensor_from_jagged(column["values"], column["offsets"])
    return item
