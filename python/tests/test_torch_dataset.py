"""lodtensor.torch.BatchDataset: DataLoader workers under fork, spawn and forkserver,
distributed ranks, epochs, StatefulDataLoader resume in a new process, collation, in-place
writes, pickling. Skipped without torch unless LODTENSOR_REQUIRE_PYTHON=1 (the test command)."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import lodtensor as lt
from conftest import documents, inside_mapping, mapping_holding
from script_run import run_json

if os.environ.get("LODTENSOR_REQUIRE_PYTHON") == "1":
    import torch
else:
    torch = pytest.importorskip("torch")

from torch.utils.data import DataLoader  # noqa: E402

from lodtensor.torch import BatchDataset, reshard_state  # noqa: E402

ROWS = 200
OPTIONS = dict(token_budget=60, shuffle=True, seed=5)
# forkserver workers fork from a server that has imported these once.
multiprocessing.set_forkserver_preload(["torch", "lodtensor.torch"])
pytestmark = pytest.mark.filterwarnings("ignore:This DataLoader will create", "ignore:'set_vital'")


@pytest.fixture(params=["file", "shards"])
def source(request, docs_path, shards_dir):
    return docs_path if request.param == "file" else shards_dir


def epochs_of(loader, epochs=2, dataset=None):
    """The samples of each epoch, in the order the DataLoader yields them."""
    out = []
    for epoch in range(epochs):
        if dataset is not None:
            dataset.set_epoch(epoch)
        out.append([s for item in loader for s in item["samples"].tolist()])
    return out


def check_epochs(orders):
    for order in orders:
        assert sorted(order) == list(range(ROWS))  # every sample exactly once
    assert orders[0] != orders[1]  # a new order each epoch


# fork: the whole matrix (cheap); spawn and forkserver: each persistence and source once,
# 3 workers under forkserver (a spawned worker imports torch, which takes seconds).
MATRIX = [("fork", w, p, s) for w in (2, 3) for p in (False, True) for s in ("file", "shards")] + [
    ("spawn", 2, True, "shards"),
    ("spawn", 2, False, "file"),
    ("forkserver", 2, True, "file"),
    ("forkserver", 3, False, "shards"),
]


@pytest.mark.parametrize("context,workers,persistent,kind", MATRIX)
def test_workers_read_every_sample_once_a_new_order_each_epoch(
    docs_path, shards_dir, context, workers, persistent, kind
):
    source = docs_path if kind == "file" else shards_dir
    ds = BatchDataset(source, **OPTIONS)
    loader = DataLoader(
        ds, batch_size=None, num_workers=workers, multiprocessing_context=context, persistent_workers=persistent
    )
    # No set_epoch: each iteration reads the next epoch (persistent workers too).
    check_epochs(epochs_of(loader))


def test_no_workers_and_set_epoch_reaching_persistent_workers(source):
    ds = BatchDataset(source, prefetch=2, **OPTIONS)
    in_process = epochs_of(DataLoader(ds, batch_size=None), 3)
    check_epochs(in_process)
    # The loader's own epochs, in the same order: one worker is the loader itself.
    own = lt.open(source).loader(**OPTIONS)
    assert in_process == [[s for b in own for s in b.samples.tolist()] for _ in range(3)]
    # Forked after its prefetching loader ran here: the workers neither hang nor repeat.
    ds.set_epoch(0)
    loader = DataLoader(ds, batch_size=None, num_workers=2, persistent_workers=True)
    first = epochs_of(loader, 2, ds)
    # set_epoch reaches the running workers: epoch 1 again, then epoch 0 again.
    ds.set_epoch(1)
    again = [s for item in loader for s in item["samples"].tolist()]
    ds.set_epoch(0)
    assert again == first[1]
    assert [s for item in loader for s in item["samples"].tolist()] == first[0]
    check_epochs(first)


def test_items_by_collation(docs_path):
    ds = lt.open(docs_path)
    batch = next(iter(ds.loader(batch_size=8)))
    offsets = batch.offsets("tokens")
    words = offsets[1][offsets[0]]  # level 0's sequences in tokens
    items = {
        c: next(iter(DataLoader(BatchDataset(docs_path, collate=c, batch_size=8), batch_size=None)))
        for c in (None, "padded", "nested", "packed")
    }
    for item in items.values():
        assert item["samples"].dtype == torch.int64 and item["samples"].tolist() == list(range(8))
        assert item["label"].tolist() == (np.arange(8) * 10).tolist()
    none = items[None]["tokens"]
    np.testing.assert_array_equal(none["values"].numpy(), batch.values("tokens"))
    assert [o.tolist() for o in none["offsets"]] == [o.tolist() for o in offsets]
    padded = items["padded"]["tokens"]
    assert padded["values"].shape[:2] == (8, np.diff(words).max())
    assert padded["lengths"].tolist() == np.diff(words).tolist()
    assert padded["mask"].sum(1).tolist() == np.diff(words).tolist()
    nested = items["nested"]["tokens"]
    for i, t in enumerate(nested.unbind()):
        np.testing.assert_array_equal(t.numpy(), batch.values("tokens")[words[i] : words[i + 1]])
    packed = items["packed"]["tokens"]
    assert packed["cu_seqlens"].dtype == torch.int32 and packed["cu_seqlens"].tolist() == words.tolist()
    assert packed["max_seqlen"] == np.diff(words).max()
    expected = np.concatenate([np.arange(n) for n in np.diff(words)])
    assert packed["position_ids"].tolist() == expected.tolist()
    # One sequence per sentence instead (level 1), and a callable.
    by_sentence = BatchDataset(docs_path, collate="packed", collate_level=1, batch_size=8)
    assert next(iter(by_sentence))["tokens"]["cu_seqlens"].tolist() == offsets[1].tolist()
    mine = BatchDataset(docs_path, collate=lambda b: {"n": np.array([b.tokens])}, batch_size=8)
    assert next(iter(mine))["n"].tolist() == [batch.tokens]


def test_zero_copy_in_process(docs_path):
    ds = BatchDataset(docs_path, collate="packed", batch_size=8)
    item = next(iter(DataLoader(ds, batch_size=None)))
    assert inside_mapping(item["tokens"]["values"].numpy(), docs_path)  # a view of the mapping


def in_memfd(t) -> bool:
    """Whether the tensor's memory lies in a shared-memory block of a worker."""
    return "memfd:lodtensor-batch" in mapping_of_tensor(t)


def mapping_of_tensor(t) -> str:
    """The line of /proc/self/maps whose mapping holds the tensor's memory."""
    return mapping_holding(t.data_ptr())


def test_workers_hand_view_batches_over_as_their_place_in_the_file(docs_path, shards_dir):
    # In file order a batch is a view of the file: the main process maps the file and the
    # values are read there, never copied; the small arrays travel in the message.
    for source in (docs_path, shards_dir):
        items = list(DataLoader(BatchDataset(source, batch_size=8), batch_size=None, num_workers=2))
        assert sum(len(item["samples"]) for item in items) == ROWS
        in_files = sum(" " + os.fspath(source) in mapping_of_tensor(item["tokens"]["values"]) for item in items)
        ranks = [lt.open(source).loader(batch_size=8, rank=r, world_size=2) for r in range(2)]
        views = sum(b.is_view for loader in ranks for b in loader)
        assert in_files == views > 0  # the others (across record batches) gathered, in blocks
        assert not any(in_memfd(item["samples"]) for item in items)
    batches = {
        tuple(b.samples.tolist()): b.values("tokens").copy()
        for r in range(2)
        for b in lt.open(docs_path).loader(batch_size=8, rank=r, world_size=2)
    }
    for item in items:
        np.testing.assert_array_equal(item["tokens"]["values"].numpy(), batches[tuple(item["samples"].tolist())])
    # Shards mapped as batches reach them and unmapped after their last: a place a shard
    # left may hold another in a later epoch, and the values are still those of the batch.
    expected = {int(b.samples[0]): b.values("tokens").copy() for b in lt.open(shards_dir).loader(batch_size=1)}
    ds = BatchDataset(shards_dir, batch_size=5, chunk_rows=10, shuffle=True, seed=1)
    loader = DataLoader(ds, batch_size=None, num_workers=2, persistent_workers=True)
    for _ in range(3):
        for item in loader:
            values = item["tokens"]["values"].numpy()
            np.testing.assert_array_equal(values, np.concatenate([expected[s] for s in item["samples"].tolist()]))


def test_a_batch_reports_where_its_values_lie(docs_path, shards_dir):
    # The loader says where a batch's values lie: a view batch in its file (by the file's
    # identity when opened, and the offset), a gathered one in the shared memory it was
    # gathered into; the main process finds them there without reading /proc/self/maps.
    for source in (docs_path, shards_dir):
        batch = next(iter(lt.open(source).loader(batch_size=8)))
        kind, path, dev, ino, size, mtime_ns, offset = batch.values_place("tokens")
        st = os.stat(path)
        assert kind == "file" and (dev, ino, size, mtime_ns) == (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        values = batch.values("tokens")
        with open(path, "rb") as f:
            f.seek(offset)
            assert f.read(values.nbytes) == values.tobytes()
    gathered = next(iter(lt.open(docs_path).loader(batch_size=8, shuffle=True, seed=1, shared_memory=True)))
    kind, pid, fd, ino, size, offset = gathered.values_place("tokens")
    assert (kind, pid) == ("shm", os.getpid()) and offset >= lt._native.REGION_HEADER
    assert os.fstat(fd).st_ino == ino and os.fstat(fd).st_size == size
    region = os.pread(fd, gathered.values("tokens").nbytes, offset)
    assert region == gathered.values("tokens").tobytes()
    on_heap = next(iter(lt.open(docs_path).loader(batch_size=8, shuffle=True, seed=1)))
    assert on_heap.values_place("tokens") is None


def test_a_file_replaced_under_the_workers_is_refused(docs_path, tmp_path):
    from lodtensor import _shm

    copy = tmp_path / "copy.arrow"
    copy.write_bytes(docs_path.read_bytes())
    st = os.stat(copy)
    file = _shm.File(str(copy), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    others = (st.st_ino + 1, st.st_size - 1, st.st_mtime_ns + 1)  # replaced, truncated, set back
    for changed in (file._replace(**{k: v}) for k, v in zip(("ino", "size", "mtime_ns"), others)):
        with pytest.raises(lt.InvalidFileError, match="replaced or changed"):
            _shm._file("test", changed)
    # A later mtime alone is a use (the node cache marks its entries' uses so): mapped.
    assert len(_shm._file("test", file._replace(mtime_ns=st.st_mtime_ns - 1))) == st.st_size
    _shm.forget("test")
    gone = _shm.File(str(tmp_path / "gone.arrow"), *file[1:])
    with pytest.raises(lt.InvalidFileError, match="gone.arrow: replaced or changed.*gone"):
        _shm._file("test", gone)


def test_a_workers_blocks_have_the_loaders_region_layout():
    # One pool for the loader's regions and the worker's blocks (the crate's RegionPool):
    # its header, lend flag and size rounding; a block is taken again only once its flag
    # is cleared and no array of this process holds it.
    from lodtensor import _native, _shm

    blocks = _shm.blocks()
    assert blocks.pid == os.getpid()
    taken = blocks.take(100_000)
    assert taken is not None
    pid, fd, ino, size, raw = taken
    assert (pid, size) == (os.getpid(), _native.REGION_HEADER + _native.region_size(100_000))
    assert (_native.REGION_HEADER, _native.LEND_FLAG, _native.region_size(1)) == (64, 0, 1 << 16)
    assert raw.dtype == np.uint8 and len(raw) == size and raw.flags.writeable
    assert raw[_native.LEND_FLAG] == 1 and blocks.take(10)[:3] != (pid, fd, ino)  # lent: another block
    raw[_native.LEND_FLAG] = 0
    assert blocks.take(10)[:3] != (pid, fd, ino)  # given back, but this array still holds it
    del raw, taken
    again = blocks.take(10)
    assert again is not None and again[:3] == (pid, fd, ino)  # given back and let go: the first again
    # The main process's view of the block: the bytes the worker wrote.
    again[4][_native.REGION_HEADER] = 42
    with open(f"/proc/self/fd/{fd}", "rb") as f:
        assert f.read(_native.REGION_HEADER + 1)[-1] == 42


def test_shared_memory_under_a_reused_descriptor_is_refused():
    # A worker's descriptor number now names another memfd (the worker gone, or its
    # memory closed): the main process must not map it as the memory the item named.
    from lodtensor import _shm

    fd = os.memfd_create("lodtensor-batch", os.MFD_CLOEXEC)
    try:
        os.ftruncate(fd, 4096)
        ino = os.fstat(fd).st_ino
        assert _shm._base("t", 0, _shm.Shm(os.getpid(), fd, ino, 4096), release=False) is not None
        with pytest.raises(lt.UnusableError, match="DataLoader worker 1 .*shared memory is gone"):
            _shm._base("t", 1, _shm.Shm(os.getpid(), fd, ino + 1, 4096))
    finally:
        _shm.forget("t")
        os.close(fd)


def test_workers_hand_batches_over_in_shared_blocks_reused_only_once_dropped(docs_path, monkeypatch):
    from lodtensor import _shm

    # Every array that is not a view of the file in a block (none in the message), the
    # workers forked with it. One sample a batch: 100 batches a worker, more than its
    # blocks (64): the held epoch needs them all and then torch shared tensors; the next
    # epoch, dropped as it goes, reuses a few blocks. Every batch keeps its values however
    # long it is held.
    monkeypatch.setattr(_shm, "INLINE_MAX", 0)
    expected = {}
    for worker in range(2):
        for b in lt.open(docs_path).loader(batch_size=1, rank=worker, world_size=2):
            expected[tuple(b.samples.tolist())] = np.array(b.values("tokens"))
    ds = BatchDataset(docs_path, collate="packed", batch_size=1)
    loader = DataLoader(ds, batch_size=None, num_workers=2)  # new worker processes each epoch
    held = list(loader)
    assert sum(in_memfd(item["samples"]) for item in held) >= 2 * 64
    for item in held:
        # One block a batch: every array of the item that is not the file's lies in it.
        if in_memfd(item["samples"]):
            block = mapping_of_tensor(item["samples"])
            if len(item["tokens"]["position_ids"]):  # not an empty document
                assert mapping_of_tensor(item["tokens"]["position_ids"]) == block
            assert mapping_of_tensor(item["tokens"]["cu_seqlens"]) == block
        np.testing.assert_array_equal(item["tokens"]["values"].numpy(), expected[tuple(item["samples"].tolist())])
    # Three items of the last epoch's worker processes outlive them, and are dropped while
    # the new processes' items are held: the new processes never write a block in use.
    kept = [item for item in held if in_memfd(item["samples"])][:3]
    del held, item
    held = []
    for item in loader:
        held.append(item)
        if len(held) == 10:
            del kept
    for item in held:
        np.testing.assert_array_equal(item["tokens"]["values"].numpy(), expected[tuple(item["samples"].tolist())])
        np.testing.assert_array_equal(item["tokens"]["position_ids"].numpy(), np.arange(len(item["tokens"]["values"])))
    del held, item
    addresses = set()
    for item in loader:
        addresses.add(item["samples"].data_ptr())
        np.testing.assert_array_equal(item["tokens"]["values"].numpy(), expected[tuple(item["samples"].tolist())])
    assert len(addresses) < 40


def test_held_items_pin_no_descriptor_of_the_main_process(docs_path, monkeypatch):
    # Each worker block the main process mapped kept a descriptor open (mmap.mmap's
    # duplicate) until the dataset went: holding items ran into EMFILE. 100 items held,
    # each in a block of its own (50 a worker, within its 64 blocks: none a torch shared
    # tensor, which holds a descriptor of its own): the descriptors open do not grow.
    from lodtensor import _shm

    monkeypatch.setattr(_shm, "INLINE_MAX", 0)
    ds = BatchDataset(docs_path, collate="packed", batch_size=2)
    before = len(os.listdir("/proc/self/fd"))
    held = list(DataLoader(ds, batch_size=None, num_workers=2))
    in_blocks = sum(in_memfd(item["samples"]) for item in held)
    assert in_blocks == len(held) >= 90
    opened = len(os.listdir("/proc/self/fd")) - before
    assert opened < 16, f"{opened} descriptors open for {in_blocks} items in blocks"
    expected = {int(b.samples[0]): b.values("tokens").copy() for b in lt.open(docs_path).loader(batch_size=1)}
    for item in held:
        first = len(expected[int(item["samples"][0])])
        np.testing.assert_array_equal(item["tokens"]["values"].numpy()[:first], expected[int(item["samples"][0])])


def test_workers_gather_shuffled_batches_straight_into_shared_memory(docs_path):
    # A shuffled batch is gathered by the worker's loader into one of its shared-memory
    # regions (a memfd named lodtensor-gather; the blocks a copy goes to are
    # lodtensor-batch) and crosses as its place there: both columns' values lie in that
    # one mapping (the offsets, rebased copies, travel in the message). Two epochs held at once (100 batches, more than the workers'
    # 2 x 16 regions: the rest gathered on the heap and copied into blocks), then dropped
    # and read again: every item keeps its values, no region written while in use.
    loader_of = lambda: lt.open(docs_path).loader(batch_size=1)  # noqa: E731
    expected = {int(b.samples[0]): (b.values("tokens").copy(), b.values("ids").copy()) for b in loader_of()}
    ds = BatchDataset(docs_path, batch_size=4, shuffle=True, seed=3)
    loader = DataLoader(ds, batch_size=None, num_workers=2, persistent_workers=True)

    def check(held):
        in_regions = 0
        for item in held:
            samples = item["samples"].tolist()
            tokens = np.concatenate([expected[s][0] for s in samples])
            np.testing.assert_array_equal(item["tokens"]["values"].numpy(), tokens)
            np.testing.assert_array_equal(item["ids"]["values"].numpy(), np.concatenate([expected[s][1] for s in samples]))
            region = mapping_of_tensor(item["tokens"]["values"])
            if "memfd:lodtensor-gather" in region and mapping_of_tensor(item["ids"]["values"]) == region:
                in_regions += 1
        assert in_regions >= min(len(held) // 2, 2 * 16)

    check([item for _ in range(2) for item in loader])
    check(list(loader))


class Touch(torch.utils.data.IterableDataset):
    """A wrapper that reads the items in the worker."""

    def __init__(self, inner):
        self.inner = inner

    def __iter__(self):
        for item in self.inner:
            assert item["tokens"]["values"].shape[1:] == (4,) and "samples" in item.keys()
            yield item


def test_a_wrapper_reads_items_in_the_worker(docs_path):
    loader = DataLoader(Touch(BatchDataset(docs_path, batch_size=8)), batch_size=None, num_workers=2)
    assert sorted(s for item in loader for s in item["samples"].tolist()) == list(range(ROWS))


def test_errors_name_the_option(docs_path, tmp_path):
    with pytest.raises(lt.ArgumentError, match="collate"):
        BatchDataset(docs_path, collate="jagged")
    with pytest.raises(lt.ArgumentError, match="collate_level 2: column 'tokens' has 2 levels"):
        next(iter(BatchDataset(docs_path, collate="padded", collate_level={"tokens": 2})))
    with pytest.raises(TypeError, match="batchsize"):
        next(iter(BatchDataset(docs_path, batchsize=3)))
    clash = tmp_path / "clash.arrow"
    lt.write(clash, documents(10, seed=1).rename_columns(["tokens", "samples", "ids"]))
    with pytest.raises(lt.ArgumentError, match="a column named 'samples'"):
        next(iter(BatchDataset(clash)))
    with pytest.raises(lt.ArgumentError, match="elastic=True"):
        reshard_state({"_num_yielded": 1, "dataset_state": BatchDataset(docs_path).state_dict()}, 2)


def test_pickles_by_path_options_and_epoch(docs_path):
    ds = BatchDataset(docs_path, collate="padded", **OPTIONS)
    ds.set_epoch(3)
    copy = pickle.loads(pickle.dumps(ds))
    assert copy.source == str(docs_path) and copy.loader_options == OPTIONS
    a = [item["samples"].tolist() for item in ds]
    assert a == [item["samples"].tolist() for item in copy]
    assert a == [b.samples.tolist() for b in _epoch(docs_path, 3)]
    it = iter(ds)  # epoch 4; a state pickles with the object
    next(it)
    copy = BatchDataset(docs_path, collate="padded", **OPTIONS)
    copy.load_state_dict(ds.state_dict())
    copy = pickle.loads(pickle.dumps(copy))
    assert [item["samples"].tolist() for item in copy] == [item["samples"].tolist() for item in it]


def _epoch(path, epoch):
    loader = lt.open(path).loader(**OPTIONS)
    loader.set_epoch(epoch)
    return list(loader)


def test_import_lodtensor_without_torch():
    code = "import sys; sys.modules['torch'] = None\nimport lodtensor\ntry:\n    import lodtensor.torch\nexcept ImportError:\n    print('ok')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ok"


RANKS = """
import json, os, sys
import torch.distributed as dist, torch.multiprocessing as mp
from torch.utils.data import DataLoader
from lodtensor.torch import BatchDataset

def main(rank, source, out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=sys.argv[3])
    dist.init_process_group("gloo", rank=rank, world_size=2)
    ds = BatchDataset(source, token_budget=60, shuffle=True, seed=5)
    loader = DataLoader(ds, batch_size=None, num_workers=2, persistent_workers=True)
    epochs = [[s for item in loader for s in item["samples"].tolist()] for _ in range(2)]
    with open(f"{out}.{rank}", "w") as f:
        json.dump(epochs, f)
    dist.destroy_process_group()

if __name__ == "__main__":
    mp.spawn(main, args=(sys.argv[1], sys.argv[2]), nprocs=2)
"""


def test_two_distributed_ranks_of_two_workers(shards_dir, tmp_path):
    script = tmp_path / "ranks.py"
    script.write_text(RANKS)
    port = str(29500 + os.getpid() % 1000)
    subprocess.run([sys.executable, str(script), str(shards_dir), str(tmp_path / "out"), port], check=True, timeout=120)
    ranks = [json.loads((tmp_path / f"out.{r}").read_text()) for r in range(2)]
    for epoch in range(2):
        assert sorted(ranks[0][epoch] + ranks[1][epoch]) == list(range(ROWS))
    assert ranks[0][0] != ranks[0][1]


RESUME = """
import json, sys, warnings
import torch
from torchdata.stateful_dataloader import StatefulDataLoader
from lodtensor.torch import BatchDataset, reshard_state
warnings.simplefilter("ignore")
source, mode, path = sys.argv[1:4]
CASES = [  # (workers when saved, workers when resumed, elastic, epoch)
    (2, 2, False, 0), (0, 0, False, 1), (3, 3, True, 1), (2, 3, True, 0), (3, 2, True, 1), (2, 0, True, 0), (0, 2, True, 1),
]
STOP = 4
out = {}
for i, (saved_with, resumed_with, elastic, epoch) in enumerate(CASES):
    ds = BatchDataset(source, collate="packed", batch_size=7, shuffle=True, seed=3, elastic=elastic)
    ds.set_epoch(epoch)
    if mode == "save":
        loader = StatefulDataLoader(ds, batch_size=None, num_workers=saved_with)
        batches = []
        for n, item in enumerate(loader):
            batches.append(item["samples"].tolist())
            if n + 1 == STOP:
                torch.save(loader.state_dict(), f"{path}.{i}")
        out[i] = batches[STOP:]
    else:
        state = torch.load(f"{path}.{i}", weights_only=False)
        if saved_with != resumed_with:
            state = reshard_state(state, resumed_with)
        loader = StatefulDataLoader(ds, batch_size=None, num_workers=resumed_with)
        loader.load_state_dict(state)
        out[i] = [item["samples"].tolist() for item in loader]
print(json.dumps(out))
"""


def test_stateful_dataloader_resumes_in_a_new_process_with_the_next_batches(docs_path, tmp_path):
    script = tmp_path / "resume.py"
    script.write_text(RESUME)

    def run(mode):
        return run_json(script, docs_path, mode, tmp_path / "state", timeout=120)

    uninterrupted = run("save")
    resumed = run("resume")
    assert resumed == uninterrupted
    assert all(len(rest) > 10 for rest in uninterrupted.values())


IN_PLACE = """
import sys, warnings
import numpy as np, torch
from torch.utils.data import DataLoader
import lodtensor as lt
from lodtensor.torch import BatchDataset
warnings.simplefilter("ignore")
path = sys.argv[1]
original = next(iter(lt.open(path).loader(batch_size=16))).values("tokens").copy()

def leaves(tree):
    if isinstance(tree, torch.Tensor):
        yield tree
    elif isinstance(tree, dict):
        for v in tree.values():
            yield from leaves(v)
    elif isinstance(tree, list):
        for v in tree:
            yield from leaves(v)

for collate in (None, "padded", "nested", "packed"):
    for workers in (0, 2):
        ds = BatchDataset(path, collate=collate, batch_size=16)  # views of the mapping in-process
        for item in DataLoader(ds, batch_size=None, num_workers=workers):
            for t in leaves(item):
                if t.is_nested:
                    t.values().mul_(2)
                elif t.dtype == torch.bool:
                    t.logical_not_()
                else:
                    t.add_(1)
                    t.sub_(2)
fresh = next(iter(lt.open(path).loader(batch_size=16))).values("tokens")
np.testing.assert_array_equal(fresh, original)
print("alive")
"""


def test_an_elastic_state_of_two_ranks_resumes_on_one_rank_of_three_workers(docs_path):
    from torchdata.stateful_dataloader import StatefulDataLoader

    opts = dict(batch_size=7, shuffle=True, seed=3, elastic=True)
    plan = [b.samples.tolist() for b in lt.open(docs_path).loader(**opts)]
    states = []
    for rank in range(2):  # rank r yields batches r, r + 2, r + 4, ... of the plan
        loader = StatefulDataLoader(BatchDataset(docs_path, rank=rank, world_size=2, **opts), batch_size=None, num_workers=2)
        it = iter(loader)
        assert [next(it)["samples"].tolist() for _ in range(3)] == plan[rank : 6 : 2]
        states.append(loader.state_dict())
        del it
    for state in states:  # the same on both ranks: batches 0 to 5 are read
        loader = StatefulDataLoader(BatchDataset(docs_path, **opts), batch_size=None, num_workers=3)
        loader.load_state_dict(reshard_state(state, 3))
        assert [item["samples"].tolist() for item in loader] == plan[6:]


def test_elastic_drop_last_leaves_out_no_step_for_the_workers_alone(docs_path):
    # 25 batches of 8, one rank of 2 workers: only ranks need equal steps, so every batch
    # is read, in the plan's order (not 24: a last step of the 2 workers left out).
    opts = dict(batch_size=8, shuffle=True, seed=3, drop_last=True, elastic=True)
    plan = [b.samples.tolist() for b in lt.open(docs_path).loader(**opts)]
    assert len(plan) == 25
    loader = DataLoader(BatchDataset(docs_path, **opts), batch_size=None, num_workers=2)
    assert [item["samples"].tolist() for item in loader] == plan
    with pytest.raises(lt.ArgumentError, match="step_ranks"):
        lt.open(docs_path).loader(batch_size=8, step_ranks=2)


def test_in_place_ops_on_every_collated_tensor_leave_the_process_and_the_file(docs_path, tmp_path):
    before = hashlib.sha256(docs_path.read_bytes()).hexdigest()
    script = tmp_path / "in_place.py"
    script.write_text(IN_PLACE)
    out = subprocess.run([sys.executable, str(script), str(docs_path)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "alive"
    assert hashlib.sha256(docs_path.read_bytes()).hexdigest() == before


def test_a_dataset_gone_unmaps_its_workers_blocks(docs_path):
    from lodtensor import _shm

    ds = BatchDataset(docs_path, batch_size=8)
    token = ds._token
    assert sum(len(item["samples"]) for item in DataLoader(ds, batch_size=None, num_workers=2)) == ROWS
    assert any(key[0] == token for key in _shm._MAPPED)
    del ds
    assert not any(key[0] == token for key in _shm._MAPPED)
