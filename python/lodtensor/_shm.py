"""How a DataLoader worker's batches reach the main process (``lodtensor.torch``; Linux):
each array of an item goes the cheapest way that leaves the main process its own memory.

- An array that is a view of a mapped file (a view batch's values) goes as its place in
  the file: the main process maps the file once, copy-on-write as a loader does, and
  builds the tensor over that mapping. Nothing is copied; the page cache is shared.
- A small array (offsets, sample numbers, at most ``INLINE_MAX`` bytes) goes in the
  message itself.
- Any other (a gathered batch's values, a padded batch) is copied into one of the
  worker's shared-memory blocks (a ``memfd``, mapped once and pre-faulted), which the
  main process maps once (``/proc/PID/fd/FD``). The block's first byte says whether it is
  in use: the worker sets it when it writes the block, and the main process clears it
  when the last tensor over the block is freed; a worker writes only a block of its own
  whose byte is clear, so a block is never written while the main process may read it
  (the worker makes another, up to ``BLOCKS``, then falls back to torch shared tensors).
  Making and faulting shared memory for every batch costs about 1 ms per MiB on some
  virtual machines; a reused block costs one copy.

The worker sends a small ``Item`` (the layout, the block, the files); the main process
builds each tensor with one ``torch.frombuffer`` over what it has mapped.
"""

from __future__ import annotations

import bisect
import mmap
import os
import re
import weakref
from typing import Any, Callable, Iterator, NamedTuple

import numpy as np
import torch

BLOCKS = 64  # blocks per worker process
ALIGN = 64  # the arrays' alignment; the first ALIGN bytes of a block are its header
INLINE_MAX = 1 << 12  # an array of at most this many bytes travels in the message (not a view)
INLINE, BLOCK = -1, -2  # where a Leaf lies, when not in a file (0, 1, ...: the item's files)
_POPULATE = getattr(mmap, "MAP_POPULATE", 0)
# (dataset token, worker) -> (the worker's pid, {fd: mmap}): the blocks this process mapped;
# (dataset token, file) -> mmap: the files it mapped.
_MAPPED: dict[tuple[str, Any], Any] = {}


class Blocks:
    """A worker process's blocks: ``take(nbytes)`` gives a free one (marked in use) or ``None``."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.blocks: dict[int, np.ndarray] = {}  # fd -> the block's bytes
        self._maps: list[mmap.mmap] = []
        self.files = Files()

    def take(self, nbytes: int) -> int | None:
        fd = next((fd for fd, raw in self.blocks.items() if raw[0] == 0 and len(raw) >= nbytes), None)
        if fd is None:
            if len(self.blocks) == BLOCKS or not hasattr(os, "memfd_create"):
                return None
            # Rounded up to an eighth of a power of two: reused by batches a little larger.
            step = max(1 << 16, 1 << max(0, (nbytes - 1).bit_length() - 3))
            size = -(-nbytes // step) * step
            fd = os.memfd_create("lodtensor-batch", os.MFD_CLOEXEC)
            os.ftruncate(fd, size)
            block = mmap.mmap(fd, size, flags=mmap.MAP_SHARED | _POPULATE)
            self._maps.append(block)
            self.blocks[fd] = np.frombuffer(block, np.uint8)
        self.blocks[fd][0] = 1
        return fd


class File(NamedTuple):
    """A mapped file, as the main process finds it again: it maps ``path`` only if it is
    still the file the worker mapped (same device, inode, size and modification time)."""

    path: str
    dev: int
    ino: int
    size: int
    mtime_ns: int


class Files:
    """This process's mappings (``/proc/self/maps``): where an array that is a view of a
    file lies in it, for the files that are still at their path."""

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._maps: list[tuple[int, int, str, int]] = []  # (end, file offset, path, inode), by start
        self._files: dict[tuple[str, int], File | None] = {}
        self._readable = True  # False without /proc/self/maps: every array copied

    def locate(self, address: int, nbytes: int, expected: str) -> tuple[File, int] | None:
        """The file and the offset of the ``nbytes`` bytes at ``address``, if they lie in a
        mapping of the file at path ``expected`` (the mappings are read again when none
        holds ``address`` or another file's does: one unmapped since, its place reused)."""
        for again in (False, True):
            i = bisect.bisect_right(self._starts, address) - 1
            if i >= 0 and address < self._maps[i][0] and self._maps[i][2] == expected:
                end, offset, path, ino = self._maps[i]
                file = self._file(path, ino)
                if file is None or address + nbytes > end:
                    return None
                return file, address - self._starts[i] + offset
            if not again and self._readable:
                self._read()
        return None

    def _file(self, path: str, ino: int) -> File | None:
        """The file mapped from ``path`` if it is still there (the same inode)."""
        if (path, ino) not in self._files:
            file = None
            if path.startswith("/") and ino:
                try:
                    st = os.stat(path)
                except OSError:  # gone, or "(deleted)"
                    st = None
                if st is not None and st.st_ino == ino:
                    file = File(path, st.st_dev, ino, st.st_size, st.st_mtime_ns)
            self._files[(path, ino)] = file
        return self._files[(path, ino)]

    def _read(self) -> None:
        try:
            with open("/proc/self/maps", "rb") as f:
                text = f.read().decode(errors="replace")
        except OSError:
            self._readable = False
            return
        starts, maps = [], []
        for lo, hi, offset, ino, path in _MAPS_LINE.findall(text):
            starts.append(int(lo, 16))
            maps.append((int(hi, 16), int(offset, 16), path, int(ino)))
        self._starts, self._maps = starts, maps


# A line of /proc/PID/maps: start-end perms offset dev inode [path].
_MAPS_LINE = re.compile(r"^([0-9a-f]+)-([0-9a-f]+) \S+ ([0-9a-f]+) \S+ (\d+) *(.*)$", re.MULTILINE)


class Item:
    """A batch as a worker yields it: pickled, only its layout (and its small arrays), which
    the main process rebuilds over its own mappings of the worker's block and of the files
    (the item, a dict). Not a ``Mapping`` (DataLoader's ``default_convert`` would copy it in
    the worker), but read like one in the worker, until the worker's next batch."""

    def __init__(self, blocks: Blocks, token: str, worker: int, placed: Placed, nested: bool):
        fd = placed.fd
        self.where = None if fd is None else (token, worker, blocks.pid, fd, len(blocks.blocks[fd]))
        self.token, self.placed, self.nested = token, placed, nested
        self._block = None if fd is None else blocks.blocks[fd]
        self._item: dict[str, Any] | None = None

    def __reduce__(self) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        p = self.placed
        return rebuild, (self.where, p.tree, p.nbytes, self.nested, self.token, p.files, p.inline)

    def _local(self) -> dict[str, Any]:
        if self._item is None:
            block = None if self._block is None else self._block[: self.placed.nbytes]
            files = [_file(self.token, f) for f in self.placed.files]
            self._item = finish(tensors(self.placed.tree, block, self.placed.inline, files), self.nested)
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


def rebuild(
    where: tuple[Any, ...] | None,
    tree: Any,
    nbytes: int,
    nested: bool,
    token: str = "",
    files: tuple[File, ...] = (),
    inline: bytearray | None = None,
) -> Any:
    """The item over the block and the files, each mapped once in this process."""
    base = None
    if where is not None:
        token, worker, pid, fd, size = where
        known: tuple[int, dict[int, mmap.mmap]] | None = _MAPPED.get((token, worker))
        if known is None or known[0] != pid:  # a new worker process: forget the old one's
            known = _MAPPED[(token, worker)] = (pid, {})
        block = known[1].get(fd)
        if block is None:
            with open(f"/proc/{pid}/fd/{fd}", "r+b") as f:
                block = known[1][fd] = mmap.mmap(f.fileno(), size, flags=mmap.MAP_SHARED | _POPULATE)
        # One array per item: the tensors over the block hold it (their buffer's exporter)
        # as long as any of them lives; when it goes, the block's header says it is free.
        base = np.frombuffer(block, np.uint8, count=nbytes)
        weakref.finalize(base, _release, np.frombuffer(block, np.uint8, count=1))
    return finish(tensors(tree, base, inline, [_file(token, f) for f in files]), nested)


def _file(token: str, file: File) -> mmap.mmap:
    """``file``, mapped copy-on-write once in this process (an in-place op on a tensor over
    it changes this process's copy of the page, never the file)."""
    block = _MAPPED.get((token, file))
    if block is None:
        from . import InvalidFileError

        with open(file.path, "rb") as f:
            st = os.fstat(f.fileno())
            if (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns) != file[1:]:
                raise InvalidFileError(f"{file.path}: replaced or changed while a DataLoader worker reads it")
            block = _MAPPED[(token, file)] = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
    return block


def forget(token: str) -> None:
    """Unmaps (once their last tensor is freed) the blocks and files of a dataset that is gone."""
    for key in [key for key in _MAPPED if key[0] == token]:
        del _MAPPED[key]


def _release(header: np.ndarray) -> None:
    header[0] = 0


class Placed(NamedTuple):
    """Where a worker put an item's arrays: the tree of ``Leaf``, its block (``None``: none)
    and the bytes used there, the files, the small arrays' bytes."""

    tree: Any
    fd: int | None
    nbytes: int
    files: tuple[File, ...]
    inline: bytearray | None


class Placer:
    """Places each array of an item as the item is made (``leaf``: the array's ``Leaf``,
    put in the tree instead of it), then copies them (``finish``). ``views``: the ids of
    the arrays that may be views of the file at ``path`` (``None``: of no file)."""

    def __init__(self, blocks: Blocks, views: set[int], path: str | None) -> None:
        self.blocks, self.views, self.path = blocks, views, path
        self.arrays: list[np.ndarray] = []
        self.leaves: list[tuple[Any, ...]] = []
        self.files: list[File] = []
        self.inline_end = self.block_end = 0

    def leaf(self, a: Any) -> Any:
        if not (isinstance(a, np.ndarray) and a.dtype.kind in "biuf"):
            return a  # not an array (a packed batch's max_seqlen)
        found = None
        if a.nbytes and self.path is not None and id(a) in self.views:
            found = self.blocks.files.locate(a.__array_interface__["data"][0], a.nbytes, self.path)
        if found is not None:
            if found[0] not in self.files:
                self.files.append(found[0])
            leaf = _leaf(found[1], a.nbytes, a.dtype.str, a.shape, self.files.index(found[0]))
        elif a.nbytes <= INLINE_MAX:
            leaf = _leaf(self.inline_end, a.nbytes, a.dtype.str, a.shape, INLINE)
            self.inline_end += -(-a.nbytes // ALIGN) * ALIGN
        else:
            leaf = _leaf(ALIGN + self.block_end, a.nbytes, a.dtype.str, a.shape, BLOCK)
            self.block_end += -(-a.nbytes // ALIGN) * ALIGN
        self.arrays.append(a)
        self.leaves.append(leaf)
        return leaf

    def finish(self, tree: Any) -> Placed | None:
        """The arrays copied where their leaves say; ``None`` when a block is needed and
        none is free."""
        fd = None
        if self.block_end:
            fd = self.blocks.take(ALIGN + self.block_end)
            if fd is None:
                return None
            copy(self.blocks.blocks[fd], self.arrays, self.leaves, BLOCK)
        inline = None
        if self.inline_end:
            inline = bytearray(self.inline_end)
            copy(np.frombuffer(inline, np.uint8), self.arrays, self.leaves, INLINE)
        nbytes = ALIGN + self.block_end if self.block_end else 0
        return Placed(tree, fd, nbytes, tuple(self.files), inline)

    def shared(self, tree: Any) -> Any:
        """The item over a torch shared tensor of its own, every array copied into it."""
        leaves, nbytes = [], ALIGN
        for a in self.arrays:
            leaves.append(_leaf(nbytes, a.nbytes, a.dtype.str, a.shape, BLOCK))
            nbytes += -(-a.nbytes // ALIGN) * ALIGN
        block = torch.empty(nbytes, dtype=torch.uint8).share_memory_()
        copy(block.numpy(), self.arrays, leaves, BLOCK)
        return tensors(_relabel(tree, dict(zip(map(id, self.leaves), leaves))), block)


def _relabel(tree: Any, moved: dict[int, tuple[Any, ...]]) -> Any:
    """``tree`` with each ``Leaf`` replaced by ``moved[id(leaf)]``."""
    if _is_leaf(tree):
        return moved[id(tree)]
    if isinstance(tree, dict):
        return {k: _relabel(v, moved) for k, v in tree.items()}
    if isinstance(tree, list):
        return [_relabel(v, moved) for v in tree]
    return tree


def copy(raw: np.ndarray, arrays: list[np.ndarray], leaves: list[tuple[Any, ...]], where: int = BLOCK) -> None:
    """Copies the arrays whose leaves lie ``where`` into ``raw``."""
    for a, (_, start, nbytes, _, _, at) in zip(arrays, leaves):
        if at == where and nbytes:
            np.copyto(raw[start : start + nbytes].view(a.dtype).reshape(a.shape), a)


class Leaf:
    """The tag of a leaf of an item's tree: a plain tuple ``(Leaf, start, nbytes, dtype,
    shape, where)`` (where one array lies: in the block, in the message (``INLINE``) or
    in file ``where`` of the item's), which pickles faster than a named tuple and cannot
    be mistaken for a tuple of a user's ``collate``."""


def _leaf(start: int, nbytes: int, dtype: str, shape: tuple[int, ...], where: int) -> tuple[Any, ...]:
    return (Leaf, start, nbytes, dtype, shape, where)


def _is_leaf(tree: Any) -> bool:
    return type(tree) is tuple and len(tree) == 6 and tree[0] is Leaf


def tensors(tree: Any, block: Any, inline: Any = None, files: list[Any] | tuple[Any, ...] = ()) -> Any:
    """``tree`` with each ``Leaf`` the tensor where it lies: ``block`` (a buffer, or a uint8
    tensor), ``inline`` or ``files[i]``."""
    if _is_leaf(tree):
        _, start, nbytes, dtype_str, shape, where = tree
        dtype = _torch_dtype(dtype_str)
        source = block if where == BLOCK else inline if where == INLINE else files[where]
        if isinstance(source, torch.Tensor):  # a uint8 tensor (a torch shared tensor)
            flat = source[start : start + nbytes].view(dtype)
        elif nbytes == 0:
            flat = torch.empty(0, dtype=dtype)
        else:
            flat = torch.frombuffer(source, dtype=dtype, count=nbytes // dtype.itemsize, offset=start)
        return flat if len(shape) == 1 else flat.view(shape)
    if isinstance(tree, dict):
        return {k: tensors(v, block, inline, files) for k, v in tree.items()}
    if isinstance(tree, list):
        return [tensors(v, block, inline, files) for v in tree]
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
