"""How a DataLoader worker's batches reach the main process (``lodtensor.torch``; Linux):
each array of an item goes the cheapest way that leaves the main process its own memory.

- An array that is a view of a mapped file (a view batch's values, of a local file or of
  a URL dataset's node-cache file) goes as its place in the file, as the loader reports it
  (``Batch.values_place``: the file's path and identity when opened, and the offset): the
  main process maps the file once, copy-on-write as a loader does, checks it is still that
  file, and builds the tensor over that mapping. Nothing is copied; the page cache is shared.
- An array of a gathered batch lies in the shared memory the worker's loader gathered it
  into (``shared_memory=True``, ``Batch.lend_shared_memory``): it goes as its place there
  (``Batch.values_place`` too).
- A small array (offsets, sample numbers, at most ``INLINE_MAX`` bytes) goes in the
  message itself.
- Any other (a padded batch, a batch gathered on the heap) is copied into one of the
  worker's shared-memory blocks (a ``memfd``, mapped once and pre-faulted), from the
  crate's pool of reused regions (``_native.RegionPool``, the loader's own). Making and
  faulting shared memory for every batch costs about 1 ms per MiB on some virtual
  machines; a reused block costs one copy. A packed column's position ids are not even
  made first: Rust writes them straight into the block (``Later``).
- A side column of strings without nulls goes as two ``bytes``, the strings' UTF-8 and
  their offsets (``Strings``), made a list again in the main process: a pickled string
  apiece cost more in the worker and in the main process.

The main process maps a worker's shared memory (``Shm``: a region or a block) once, by
``/proc/PID/fd/FD``. Its layout is the crate's (``SharedMemory``: ``REGION_HEADER`` bytes
before the buffer, the lend flag at ``LEND_FLAG``, sizes rounded by ``region_size``,
exported by the native module). Its flag byte says whether it is lent: the worker sets it when it
hands the memory over, and the main process clears it when the last tensor over it is
freed; a worker writes only memory of its own whose byte is clear, so nothing is written
while the main process may read it (the worker makes another block, up to ``BLOCKS``,
then falls back to torch shared tensors; its loader gathers on the heap).

The worker sends a small ``Item`` (the layout, the sources, the small arrays); the main
process builds each tensor with one ``numpy.frombuffer`` over what it has mapped.
"""
from __future__ import annotations

import ctypes
import math
import mmap
import os
import weakref
from typing import Any, Callable, Iterator, NamedTuple

import numpy as np
import torch

from . import _native

BLOCKS = 64  # blocks per worker process
ALIGN = _native.REGION_HEADER  # the arrays' alignment; the first ALIGN bytes of a block are its header
FLAG = _native.LEND_FLAG  # the lend flag's offset in a block or region
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


def blocks() -> Any:
    """A worker process's blocks: the crate's pool of reused regions (``RegionPool``, the
    one its loader gathers into), up to ``BLOCKS``. ``take(nbytes)`` gives a free one of at
    least ``nbytes`` after its header, marked lent, as ``(pid, fd, ino, size, array)`` (a
    writable ``uint8`` array over the whole region), or ``None``."""
    return _native.RegionPool(BLOCKS)


class File(NamedTuple):
    """A mapped file, as the worker's loader opened it (``Batch.values_place``): the main
    process maps ``path`` only if it is still that file (same device, inode and size, and
    not an earlier modification time)."""

    path: str
    dev: int
    ino: int
    size: int
    mtime_ns: int


def source(place: tuple[Any, ...]) -> tuple[File | Shm, int]:
    """The source and offset of a place ``Batch.values_place`` reports."""
    if place[0] == "file":
        return File(*place[1:6]), place[6]
    return Shm(*place[1:5]), place[5]


class Item:
    """A batch as a worker yields it: pickled, only its layout (and its small arrays), which
    the main process rebuilds over its own mappings of the worker's shared memory and of the
    files (the item, a dict). Not a ``Mapping`` (DataLoader's ``default_convert`` would copy
    it in the worker), but read like one in the worker, until the worker's next batch."""

    def __init__(self, token: str, worker: int, placed: Placed, nested: bool):
        self.token, self.worker, self.placed, self.nested = token, worker, placed, nested
        self._item: dict[str, Any] | None = None

    def __reduce__(self) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        # Only objects pickle writes with an opcode of its own (no named tuple, no
        # bytearray: each of those is a Python-level reduce, microseconds apiece).
        p = self.placed
        sources = tuple((type(s) is File, *s) for s in p.sources)
        return rebuild, (self.token, self.worker, p.tree, sources, p.inline, self.nested)

    def _local(self) -> dict[str, Any]:
        if self._item is None:
            p = self.placed
            bases = [_base(self.token, self.worker, source, release=False) for source in p.sources]
            self._item = finish(tensors(p.tree, bases, _writable(p.inline)), self.nested)
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
    token: str, worker: int, tree: Any, sources: tuple[tuple[Any, ...], ...], inline: bytes | None, nested: bool
) -> Any:
    """The item over its sources (files and shared memory), each mapped once in this process.
    ``sources``: each a plain tuple, ``(True, *file)`` for a ``File``, ``(False, *shm)`` for a
    ``Shm`` (``Item.__reduce__``); ``inline``: the small arrays' bytes."""
    bases = [_base(token, worker, File(*s[1:]) if s[0] else Shm(*s[1:])) for s in sources]
    return finish(tensors(tree, bases, _writable(inline)), nested)


def _writable(inline: bytes | None) -> bytearray | None:
    """The small arrays' bytes as memory of this process's own that tensors may write."""
    return None if inline is None else bytearray(inline)


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
    # One lease per item and source: the tensors over it hold it (their buffer's exporter)
    # as long as any of them lives; when it goes, the lend flag says the memory is free.
    return _lease(source.size).from_buffer(mapped[1])


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
    # Not at exit: a lease still held then clears its flag in this mapping (_lease).
    weakref.finalize(block, libc.munmap, address, size).atexit = False
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


def _lease(size: int) -> Any:
    """The type of a lease of ``size`` bytes of a worker's shared memory: a ctypes array
    over the mapping (``from_buffer``: it keeps the mapping) that clears the lend flag when
    it goes, cheaper than a ``weakref.finalize`` an item."""
    lease = _LEASES.get(size)
    if lease is None:
        flag = FLAG  # bound here: at exit, a module's globals may be gone before its leases

        def release(self: Any) -> None:
            self[flag] = 0

        lease = _LEASES[size] = type("Lease", (ctypes.c_ubyte * size,), {"__del__": release})
    return lease


_LEASES: dict[int, Any] = {}  # size -> the type of a lease of that many bytes (_lease)


def _file(token: str, file: File) -> mmap.mmap:
    """``file``, mapped copy-on-write once in this process (an in-place op on a tensor over
    it changes this process's copy of the page, never the file)."""
    block = _MAPPED.get((token, file))
    if block is None:
        from . import InvalidFileError

        changed = f"{file.path}: replaced or changed while a DataLoader worker reads it"
        try:
            f = open(file.path, "rb")
        except FileNotFoundError:
            raise InvalidFileError(f"{changed} (gone)") from None
        with f:
            st = os.fstat(f.fileno())
            # Another file (renamed over it), or this one truncated or extended, or its time
            # set back. A later mtime alone on the same inode and size is a use, not a
            # change: a node cache marks an entry's use so, and its entries are replaced, never
            # written in place.
            if (st.st_dev, st.st_ino, st.st_size) != file[1:4] or st.st_mtime_ns < file.mtime_ns:
                raise InvalidFileError(changed)
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
    inline: bytes | None


_ZEROS = bytes(ALIGN)  # the padding after a small array (Placer.finish)
_DTYPE_STR: dict[np.dtype, str] = {}


def _dtype_str(dtype: np.dtype) -> str:
    _DTYPE_STR[dtype] = dtype.str
    return dtype.str


class Placer:
    """Places each array of an item as the item is made (``leaf``: the array's ``Leaf``,
    put in the tree instead of it), then copies what needs it (``finish``). ``places``: by
    ``id``, the places of the batch's values arrays (``Batch.values_place``: in a mapped
    file or in the shared memory the batch was gathered into); ``region``: that shared
    memory's ``(fd, inode, address, size)`` (``Batch.lend_shared_memory``), lent."""

    def __init__(self, blocks: Any, places: dict[int, tuple[Any, ...]], region: tuple[int, ...] | None) -> None:
        self.blocks, self.places = blocks, places
        self.arrays: list[np.ndarray] = []
        self.leaves: list[tuple[Any, ...]] = []
        self.sources: list[Any] = []
        self.flag = 0 if region is None else region[2] + FLAG  # the lent region's flag, if any
        self.block = -1  # the index of the block among the sources, once one is needed
        self.inline_end = self.block_end = 0

    def leaf(self, a: Any) -> Any:
        if type(a) is Later:
            if a.nbytes <= INLINE_MAX:
                a = a.array()  # small: made, to go in the message
        elif not isinstance(a, np.ndarray) or a.dtype.kind not in "biuf":
            return a  # not an array (a packed batch's max_seqlen)
        nbytes, dtype, shape = a.nbytes, _DTYPE_STR.get(a.dtype) or _dtype_str(a.dtype), a.shape
        place = self.places.get(id(a)) if nbytes else None
        if place is not None:
            found, offset = source(place)
            if found not in self.sources:
                self.sources.append(found)
            leaf = _leaf(offset, nbytes, dtype, shape, self.sources.index(found))
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
            taken = self.blocks.take(self.block_end)
            if taken is None:
                return None
            self.sources[self.block] = Shm(*taken[:4])
            copy(taken[4], self.arrays, self.leaves, self.block)
        inline = None
        if self.inline_end:  # the small arrays, in the order their leaves were placed
            parts: list[bytes] = []
            for a, (_, _, nbytes, _, _, where) in zip(self.arrays, self.leaves):
                if where == INLINE and nbytes:
                    parts += (a.tobytes(), _ZEROS[: -nbytes % ALIGN])
            inline = b"".join(parts)
        return Placed(tree, tuple(self.sources), inline)

    def shared(self, tree: Any) -> Any:
        """The item over a torch shared tensor of its own, every array copied into it (and
        the region given back: nothing is read from it)."""
        leaves, nbytes = [], ALIGN
        for a in self.arrays:
            leaves.append(_leaf(nbytes, a.nbytes, a.dtype.str, a.shape, 0))
            nbytes += -(-a.nbytes // ALIGN) * ALIGN
        block = torch.empty(nbytes, dtype=torch.uint8).share_memory_()
        self.arrays = [a.array() if type(a) is Later else a for a in self.arrays]
        copy(block.numpy(), self.arrays, leaves, 0)
        if self.flag:
            ctypes.c_uint8.from_address(self.flag).value = 0
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


def copy(raw: np.ndarray, arrays: list[Any], leaves: list[tuple[Any, ...]], where: int) -> None:
    """Copies the arrays whose leaves lie in source ``where`` into ``raw`` (a ``Later``
    writes itself there)."""
    for a, (_, start, nbytes, _, _, at) in zip(arrays, leaves):
        if at == where and nbytes:
            if type(a) is Later:
                a.write(raw, start)
            else:
                np.copyto(raw[start : start + nbytes].view(a.dtype).reshape(a.shape), a)


class Later:
    """An array of an item written straight where it goes instead of made and then copied
    (a packed column's position ids, written into the worker's block): ``dtype`` and
    ``shape`` as an array's; ``write(raw, start)`` writes it into ``raw`` (a writable byte
    array of ``RegionPool.take``) at byte ``start``; ``array()`` makes it (to go in the
    message, or into a torch shared tensor)."""

    __slots__ = ("dtype", "shape", "nbytes", "write", "array")

    def __init__(
        self, dtype: np.dtype, shape: tuple[int, ...], write: Callable[[np.ndarray, int], Any],
        array: Callable[[], np.ndarray],
    ) -> None:
        self.dtype, self.shape, self.write, self.array = dtype, shape, write, array
        self.nbytes = dtype.itemsize * math.prod(shape)


class Leaf:
    """The tag of a leaf of an item's tree: a plain tuple ``(Leaf, start, nbytes, dtype,
    shape, where)`` (where one array lies: in the message (``INLINE``) or in source
    ``where`` of the item's), which pickles faster than a named tuple and cannot be
    mistaken for a tuple of a user's ``collate``."""


class Plain:
    """The tag of a subtree of plain Python values (a side column's strings): ``(Plain,
    values)`` is handed over as it is, ``tensors`` takes ``values`` without walking it."""


def plain(values: Any) -> tuple[Any, ...]:
    return (Plain, values)


class Strings:
    """The tag of a list of strings that crosses as two buffers (``Batch._side_utf8``):
    ``(Strings, data, offsets)`` pickles as two ``bytes``, and ``tensors`` makes the list
    again (``_native.utf8_list``), cheaper than a string pickled and unpickled apiece."""


def strings(data: bytes, offsets: bytes) -> tuple[Any, ...]:
    return (Strings, data, offsets)


def _leaf(start: int, nbytes: int, dtype: str, shape: tuple[int, ...], where: int) -> tuple[Any, ...]:
    return (Leaf, start, nbytes, dtype, shape, where)


def _is_leaf(tree: Any) -> bool:
    return type(tree) is tuple and len(tree) == 6 and tree[0] is Leaf


def tensors(tree: Any, bases: list[Any], inline: Any = None) -> Any:
    """``tree`` with each ``Leaf`` the tensor where it lies: ``inline`` or ``bases[where]``
    (a buffer, or a uint8 tensor)."""
    if type(tree) is tuple and len(tree) == 2 and tree[0] is Plain:
        return tree[1]
    if type(tree) is tuple and len(tree) == 3 and tree[0] is Strings:
        return _native.utf8_list(tree[1], tree[2])
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
