"""How a DataLoader worker's batches reach the main process (``lodtensor.torch``; Linux):
each array of an item goes the cheapest way that leaves the main process its own memory.

- An array that is a view of a mapped file (a view batch's values) goes as its place in
  the file: the main process maps the file once, copy-on-write as a loader does, and
  builds the tensor over that mapping. Nothing is copied; the page cache is shared.
- An array of a gathered batch lies in the shared memory the worker's loader gathered it
  into (``shared_memory=True``, ``Batch.lend_shared_memory``): it goes as its place there.
- A small array (offsets, sample numbers, at most ``INLINE_MAX`` bytes) goes in the
  message itself.
- Any other (a padded batch, packed position ids, a batch gathered on the heap) is copied
  into one of the worker's shared-memory blocks (a ``memfd``, mapped once and pre-faulted).
  Making and faulting shared memory for every batch costs about 1 ms per MiB on some
  virtual machines; a reused block costs one copy.

The main process maps a worker's shared memory (``Shm``: a region or a block) once, by
``/proc/PID/fd/FD``. Its first byte says whether it is lent: the worker sets it when it
hands the memory over, and the main process clears it when the last tensor over it is
freed; a worker writes only memory of its own whose byte is clear, so nothing is written
while the main process may read it (the worker makes another block, up to ``BLOCKS``,
then falls back to torch shared tensors; its loader gathers on the heap).

The worker sends a small ``Item`` (the layout, the sources, the small arrays); the main
process builds each tensor with one ``numpy.frombuffer`` over what it has mapped.
"""
from __future__ import annotations

import bisect
import ctypes
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
INLINE = -1  # where a Leaf lies in the message (0, 1, ...: the item's sources)
_POPULATE = getattr(mmap, "MAP_POPULATE", 0)
# (dataset token, worker) -> (the worker's pid, {fd: (inode, mmap)}): the shared memory
# this process mapped; (dataset token, file) -> mmap: the files it mapped.
_MAPPED: dict[tuple[str, Any], Any] = {}


class Shm(NamedTuple):
    """Shared memory of a worker process: one of its blocks, or a region its loader gathered
    a batch into (``Batch.lend_shared_memory``). The main process maps ``/proc/PID/fd/FD``
    once, if it is still that ``memfd`` (the inode), and clears the first byte (the lend
    flag) when the last tensor over it is freed."""

    pid: int
    fd: int
    ino: int
    size: int


class Blocks:
    """A worker process's blocks: ``take(nbytes)`` gives a free one (marked in use) or ``None``."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.blocks: dict[int, np.ndarray] = {}  # fd -> the block's bytes
        self._shm: dict[int, Shm] = {}
        self._maps: list[mmap.mmap] = []
        self.files = Files()

    def take(self, nbytes: int) -> Shm | None:
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
            self._shm[fd] = Shm(self.pid, fd, os.fstat(fd).st_ino, size)
        self.blocks[fd][0] = 1
        return self._shm[fd]


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
    the main process rebuilds over its own mappings of the worker's shared memory and of the
    files (the item, a dict). Not a ``Mapping`` (DataLoader's ``default_convert`` would copy
    it in the worker), but read like one in the worker, until the worker's next batch."""

    def __init__(self, token: str, worker: int, placed: Placed, nested: bool):
        self.token, self.worker, self.placed, self.nested = token, worker, placed, nested
        self._item: dict[str, Any] | None = None

    def __reduce__(self) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        p = self.placed
        return rebuild, (self.token, self.worker, p.tree, p.sources, p.inline, self.nested)

    def _local(self) -> dict[str, Any]:
        if self._item is None:
            p = self.placed
            bases = [_base(self.token, self.worker, source, release=False) for source in p.sources]
            self._item = finish(tensors(p.tree, bases, p.inline), self.nested)
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
    token: str, worker: int, tree: Any, sources: tuple[Any, ...], inline: bytearray | None, nested: bool
) -> Any:
    """The item over its sources (files and shared memory), each mapped once in this process."""
    bases = [_base(token, worker, source) for source in sources]
    return finish(tensors(tree, bases, inline), nested)


def _base(token: str, worker: int, source: File | Shm, release: bool = True) -> Any:
    """What the tensors over ``source`` are made from: a file's copy-on-write mapping, or
    an array over a worker's shared memory whose lend flag is cleared when the last tensor
    over it is freed (``release``)."""
    if isinstance(source, File):
        return _file(token, source)
    known: tuple[int, dict[int, tuple[int, Any]]] | None = _MAPPED.get((token, worker))
    if known is None or known[0] != source.pid:  # a new worker process: forget the old one's
        known = _MAPPED[(token, worker)] = (source.pid, {})
    mapped = known[1].get(source.fd)
    if mapped is None or mapped[0] != source.ino or len(mapped[1]) < source.size:
        # New, or another memfd under a descriptor number the worker used before.
        with open(f"/proc/{source.pid}/fd/{source.fd}", "r+b") as f:
            if os.fstat(f.fileno()).st_ino != source.ino:
                from . import UnusableError

                raise UnusableError(f"DataLoader worker {worker} (pid {source.pid}): its shared memory is gone")
            block = _map_shared(f.fileno(), source.size)
        mapped = known[1][source.fd] = (source.ino, block)
    if not release:
        return mapped[1]
    # One array per item and source: the tensors over it hold it (their buffer's exporter)
    # as long as any of them lives; when it goes, the lend flag says the memory is free.
    base = np.frombuffer(mapped[1], np.uint8, count=source.size)
    weakref.finalize(base, _release, np.frombuffer(mapped[1], np.uint8, count=1))
    return base


def _map_shared(fd: int, size: int) -> Any:
    """``size`` bytes of ``fd`` mapped shared, as a ctypes array unmapped when the last
    reference to it goes. Not ``mmap.mmap``: it keeps a duplicate of the descriptor as long
    as the mapping lives, so every worker block held pinned a descriptor of this process
    (``EMFILE`` with many items held); the descriptor here is closed by the caller at once."""
    libc = _libc()
    prot = mmap.PROT_READ | mmap.PROT_WRITE
    address = libc.mmap(None, size, prot, mmap.MAP_SHARED | _POPULATE, fd, 0)
    if address is None or address == ctypes.c_void_p(-1).value:
        errno = ctypes.get_errno()
        raise OSError(errno, f"mapping a DataLoader worker's shared memory: {os.strerror(errno)}")
    block = (ctypes.c_ubyte * size).from_address(address)
    weakref.finalize(block, libc.munmap, address, size)
    return block


def _libc() -> Any:
    """The C library's ``mmap`` and ``munmap``, typed."""
    global _LIBC
    if _LIBC is None:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
        libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        _LIBC = libc
    return _LIBC


_LIBC: Any = None


def _release(flag: np.ndarray) -> None:
    flag[0] = 0


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


class Placed(NamedTuple):
    """Where a worker put an item's arrays: the tree of ``Leaf``, the sources its leaves
    lie in (``File`` or ``Shm``) and the small arrays' bytes."""

    tree: Any
    sources: tuple[Any, ...]
    inline: bytearray | None


_DTYPE_STR: dict[np.dtype, str] = {}


def _dtype_str(dtype: np.dtype) -> str:
    _DTYPE_STR[dtype] = dtype.str
    return dtype.str


class Placer:
    """Places each array of an item as the item is made (``leaf``: the array's ``Leaf``,
    put in the tree instead of it), then copies what needs it (``finish``). ``views``: the
    ids of the batch's values arrays, which lie in the file at ``path`` (``None``: of no
    file) or in ``region``, the shared memory the batch was gathered into
    (``Batch.lend_shared_memory``)."""

    def __init__(self, blocks: Blocks, views: set[int], path: str | None, region: tuple[int, ...] | None) -> None:
        self.blocks, self.views, self.path = blocks, views, path
        self.arrays: list[np.ndarray] = []
        self.leaves: list[tuple[Any, ...]] = []
        self.sources: list[Any] = []
        self.region = (0, 0)
        if region is not None:
            fd, ino, address, size = region
            self.sources.append(Shm(blocks.pid, fd, ino, size))
            self.region = (address, address + size)
        self.block = -1  # the index of the block among the sources, once one is needed
        self.inline_end = self.block_end = 0

    def leaf(self, a: Any) -> Any:
        if not isinstance(a, np.ndarray) or a.dtype.kind not in "biuf":
            return a  # not an array (a packed batch's max_seqlen)
        nbytes, dtype, shape = a.nbytes, _DTYPE_STR.get(a.dtype) or _dtype_str(a.dtype), a.shape
        lo, hi = self.region
        # Only a values array may lie in memory the main process maps (the others are the
        # binding's copies): its address, a dict to make, is not asked of the others.
        address = a.__array_interface__["data"][0] if nbytes and id(a) in self.views else -1
        found = None
        if lo <= address <= hi - nbytes:
            leaf = _leaf(address - lo, nbytes, dtype, shape, 0)
        elif address >= 0 and self.path and (found := self.blocks.files.locate(address, nbytes, self.path)):
            if found[0] not in self.sources:
                self.sources.append(found[0])
            leaf = _leaf(found[1], nbytes, dtype, shape, self.sources.index(found[0]))
        elif nbytes <= INLINE_MAX:
            leaf = _leaf(self.inline_end, nbytes, dtype, shape, INLINE)
            self.inline_end += -(-nbytes // ALIGN) * ALIGN
        else:
            if self.block < 0:
                self.block = len(self.sources)
                self.sources.append(None)  # the block, taken in finish
            leaf = _leaf(ALIGN + self.block_end, nbytes, dtype, shape, self.block)
            self.block_end += -(-nbytes // ALIGN) * ALIGN
        self.arrays.append(a)
        self.leaves.append(leaf)
        return leaf

    def finish(self, tree: Any) -> Placed | None:
        """The arrays copied where their leaves say; ``None`` when a block is needed and
        none is free."""
        if self.block >= 0:
            shm = self.blocks.take(ALIGN + self.block_end)
            if shm is None:
                return None
            self.sources[self.block] = shm
            copy(self.blocks.blocks[shm.fd], self.arrays, self.leaves, self.block)
        inline = None
        if self.inline_end:
            inline = bytearray(self.inline_end)
            for a, (_, start, nbytes, _, _, where) in zip(self.arrays, self.leaves):
                if where == INLINE and nbytes:
                    inline[start : start + nbytes] = a.tobytes()
        return Placed(tree, tuple(self.sources), inline)

    def shared(self, tree: Any) -> Any:
        """The item over a torch shared tensor of its own, every array copied into it (and
        the region given back: nothing is read from it)."""
        leaves, nbytes = [], ALIGN
        for a in self.arrays:
            leaves.append(_leaf(nbytes, a.nbytes, a.dtype.str, a.shape, 0))
            nbytes += -(-a.nbytes // ALIGN) * ALIGN
        block = torch.empty(nbytes, dtype=torch.uint8).share_memory_()
        copy(block.numpy(), self.arrays, leaves, 0)
        if self.region[1]:
            ctypes.c_uint8.from_address(self.region[0]).value = 0
        return tensors(_relabel(tree, dict(zip(map(id, self.leaves), leaves))), [block])


def _relabel(tree: Any, moved: dict[int, tuple[Any, ...]]) -> Any:
    """``tree`` with each ``Leaf`` replaced by ``moved[id(leaf)]``."""
    if _is_leaf(tree):
        return moved[id(tree)]
    if isinstance(tree, dict):
        return {k: _relabel(v, moved) for k, v in tree.items()}
    if isinstance(tree, list):
        return [_relabel(v, moved) for v in tree]
    return tree


def copy(raw: np.ndarray, arrays: list[np.ndarray], leaves: list[tuple[Any, ...]], where: int) -> None:
    """Copies the arrays whose leaves lie in source ``where`` into ``raw``."""
    for a, (_, start, nbytes, _, _, at) in zip(arrays, leaves):
        if at == where and nbytes:
            np.copyto(raw[start : start + nbytes].view(a.dtype).reshape(a.shape), a)


class Leaf:
    """The tag of a leaf of an item's tree: a plain tuple ``(Leaf, start, nbytes, dtype,
    shape, where)`` (where one array lies: in the message (``INLINE``) or in source
    ``where`` of the item's), which pickles faster than a named tuple and cannot be
    mistaken for a tuple of a user's ``collate``."""


def _leaf(start: int, nbytes: int, dtype: str, shape: tuple[int, ...], where: int) -> tuple[Any, ...]:
    return (Leaf, start, nbytes, dtype, shape, where)


def _is_leaf(tree: Any) -> bool:
    return type(tree) is tuple and len(tree) == 6 and tree[0] is Leaf


def tensors(tree: Any, bases: list[Any], inline: Any = None) -> Any:
    """``tree`` with each ``Leaf`` the tensor where it lies: ``inline`` or ``bases[where]``
    (a buffer, or a uint8 tensor)."""
    if type(tree) is tuple and len(tree) == 6 and tree[0] is Leaf:
        _, start, nbytes, dtype_str, shape, where = tree
        source = inline if where == INLINE else bases[where]
        if isinstance(source, torch.Tensor):  # a uint8 tensor (a torch shared tensor)
            return source[start : start + nbytes].view(_torch_dtype(dtype_str)).view(shape)
        dtype: np.dtype = _DTYPES.get(dtype_str) or _numpy_dtype(dtype_str)
        # numpy's frombuffer, reshape and from_numpy: half the time of torch's frombuffer and view.
        flat = np.frombuffer(source, dtype, nbytes // dtype.itemsize, start) if nbytes else np.empty(0, dtype)
        return torch.from_numpy(flat if len(shape) == 1 else flat.reshape(shape))
    if type(tree) is dict:
        return {k: tensors(v, bases, inline) for k, v in tree.items()}
    if type(tree) is list:
        return [tensors(v, bases, inline) for v in tree]
    return tree


_DTYPES: dict[str, np.dtype] = {}


def _numpy_dtype(dtype: str) -> np.dtype:
    _DTYPES[dtype] = np.dtype(dtype)
    return _DTYPES[dtype]


def _torch_dtype(dtype: str) -> torch.dtype:
    return torch.from_numpy(np.empty(0, np.dtype(dtype))).dtype


def finish(item: dict[str, Any], nested: bool) -> dict[str, Any]:
    """``collate="nested"``: each column's values and offsets as a jagged nested tensor."""
    if nested:
        for name, column in item.items():
            if isinstance(column, dict) and "values" in column:  # not a packed item's "windows"
                item[name] = torch.nested.nested_tensor_from_jagged(column["values"], column["offsets"])
    return item
