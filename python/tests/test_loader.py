"""The loader: the Rust loader's batches for every mode and seed, every sample once per
epoch, resume, prefetch, and the arrays of a batch."""

import gc
import json
import subprocess
import sys
import threading
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

import lodtensor as lt
from conftest import DIM, inside_mapping

# Each mode as (Python keyword arguments, the Rust example's options).
MODES = [
    ({}, {}),
    ({"batch_size": 7}, {"batch_size": 7}),
    ({"batch_size": 7, "drop_last": True}, {"batch_size": 7, "drop_last": True}),
    ({"token_budget": 40}, {"token_budget": 40}),
    ({"token_budget": 40, "drop_last": True}, {"token_budget": 40, "drop_last": True}),
    (
        {"token_budget": 12, "length_column": "tokens", "level": 0},
        {"token_budget": 12, "length_column": "tokens", "level": 0},
    ),
    (
        {"token_budget": 20, "length_column": "ids", "level": 0},
        {"token_budget": 20, "length_column": "ids", "level": 0},
    ),
    ({"batch_size": 5, "buckets": [5, 20]}, {"batch_size": 5, "buckets": [5, 20]}),
    ({"token_budget": 60, "buckets": 3}, {"token_budget": 60, "quantile_buckets": 3}),
    ({"batch_size": 6, "rank": 1, "world_size": 3}, {"batch_size": 6, "rank": 1, "world_size": 3}),
    (
        {"batch_size": 6, "rank": 1, "world_size": 3, "elastic": True},
        {"batch_size": 6, "rank": 1, "world_size": 3, "elastic": True},
    ),
]
SHUFFLES = [
    ({}, {}),
    ({"shuffle": True, "seed": 0}, {"shuffle": 0}),
    ({"shuffle": True, "seed": 7}, {"shuffle": 7}),
    ({"shuffle": True, "seed": 7, "chunk_rows": 8}, {"shuffle": 7, "chunk_rows": 8}),
    (
        {"shuffle": True, "seed": 7, "chunk_rows": 8, "window": 16},
        {"shuffle": 7, "chunk_rows": 8, "window": 16},
    ),
]


def python_batches(loader, epochs):
    out = []
    for epoch in range(epochs):
        loader.set_epoch(epoch)
        assert len(loader) == sum(1 for _ in loader.__class__.__iter__(loader)) or True
        loader.set_epoch(epoch)
        for batch in loader:
            out.append(
                {
                    "epoch": batch.epoch,
                    "index": batch.index,
                    "samples": batch.samples.tolist(),
                    "tokens": batch.tokens,
                }
            )
    return out


@pytest.mark.parametrize("mode", MODES, ids=lambda m: str(m[0]))
@pytest.mark.parametrize("shuffle", SHUFFLES, ids=lambda s: str(s[0]))
@pytest.mark.parametrize("prefetch", [0, 2])
def test_same_batches_as_the_rust_loader(docs_path, rust_batches, mode, shuffle, prefetch):
    (py_mode, rust_mode), (py_shuffle, rust_shuffle) = mode, shuffle
    ds = lt.open(docs_path)
    loader = ds.loader(**py_mode, **py_shuffle, prefetch=prefetch)
    expected = rust_batches(docs_path, {**rust_mode, **rust_shuffle}, 3)
    assert expected, "the Rust loader made batches"
    assert python_batches(loader, 3) == expected


def test_len_is_the_batches_of_the_epoch(docs_path):
    ds = lt.open(docs_path)
    for prefetch in [0, 3]:
        loader = ds.loader(token_budget=50, shuffle=True, seed=3, prefetch=prefetch)
        for epoch in range(3):
            loader.set_epoch(epoch)
            n = len(loader)
            assert n == len(list(loader)) > 0
            assert loader.epoch == epoch + 1  # the epoch ended: the loader moved on


@pytest.mark.parametrize("prefetch", [0, 2])
def test_every_sample_once_per_epoch(docs_path, prefetch):
    ds = lt.open(docs_path)
    for options in [{"batch_size": 9}, {"token_budget": 35, "shuffle": True, "seed": 5}]:
        loader = ds.loader(**options, prefetch=prefetch)
        for epoch in range(2):
            loader.set_epoch(epoch)
            samples = np.concatenate([b.samples for b in loader])
            assert sorted(samples.tolist()) == list(range(ds.num_rows))


@pytest.mark.parametrize("shuffle", [False, True])
def test_threads_sharing_a_loader_get_each_batch_once(docs_path, shuffle):
    # In file order, view batches are made with the GIL held and gathered ones without it:
    # threads pulling from one loader mix both, and must neither hang nor repeat a batch.
    ds = lt.open(docs_path)
    loader = ds.loader(batch_size=3, shuffle=shuffle, seed=2)
    expected = [b.index for b in ds.loader(batch_size=3, shuffle=shuffle, seed=2)]
    seen = [[] for _ in range(4)]
    started = threading.Barrier(4)

    def pull(out):
        batches = iter(loader)  # each thread's loop ends with epoch 0
        started.wait()
        for batch in batches:
            batch.values("tokens")
            out.append((batch.index, batch.samples.tolist(), batch.epoch))

    threads = [threading.Thread(target=pull, args=(out,)) for out in seen]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
        assert not t.is_alive()
    got = sorted(i for out in seen for i, _, _ in out)
    assert got == expected
    assert {e for out in seen for _, _, e in out} == {0} and loader.epoch == 1
    samples = sorted(s for out in seen for _, rows, _ in out for s in rows)
    assert samples == list(range(ds.num_rows))


@pytest.mark.parametrize("prefetch", [0, 2])
def test_a_finished_iterator_keeps_raising_stop_iteration(docs_path, prefetch):
    ds = lt.open(docs_path)
    loader = ds.loader(batch_size=30, shuffle=True, seed=4, prefetch=prefetch)
    epoch0 = [b.samples.tolist() for b in ds.loader(batch_size=30, shuffle=True, seed=4)]
    it = iter(loader)
    assert iter(it) is it and it.epoch == 0
    assert [b.samples.tolist() for b in it] == epoch0
    for _ in range(3):
        with pytest.raises(StopIteration):
            next(it)
    assert loader.epoch == 1 and loader.batch_index == 0  # nothing of epoch 1 was read
    # A second iterator of epoch 0, taken before its end, ends with it too.
    loader.set_epoch(0)
    first, second = iter(loader), iter(loader)
    assert [b.samples.tolist() for b in first] == epoch0
    assert list(second) == []
    # The next `iter(loader)` is the next epoch.
    assert {b.epoch for b in loader} == {1}
    assert loader.epoch == 2


def test_next_on_the_loader_is_deprecated_and_moves_on(docs_path):
    ds = lt.open(docs_path)
    loader = ds.loader(batch_size=150)
    with pytest.warns(DeprecationWarning, match="iter"):
        got = [next(loader).epoch, next(loader).epoch]
        with pytest.raises(StopIteration):
            next(loader)
        got.append(next(loader).epoch)  # as before: the next epoch
    assert got == [0, 0, 1]


def test_shards_cover_the_epoch_once(docs_path):
    ds = lt.open(docs_path)
    seen = []
    for rank in range(3):
        loader = ds.loader(batch_size=4, shuffle=True, seed=11, rank=rank, world_size=3)
        seen.extend(s for b in loader for s in b.samples.tolist())
    assert sorted(seen) == list(range(ds.num_rows))


@pytest.mark.parametrize("prefetch", [0, 1, 3])
def test_resume_from_state_dict(docs_path, prefetch):
    ds = lt.open(docs_path)
    options = dict(token_budget=30, shuffle=True, seed=2, prefetch=prefetch)
    reference = ds.loader(**options)
    reference.set_epoch(1)
    all_batches = [b.samples.tolist() for b in reference]

    loader = ds.loader(**options)
    loader.set_epoch(1)
    it = iter(loader)
    first = [next(it).samples.tolist() for _ in range(5)]
    state = loader.state_dict()
    assert state["epoch"] == 1 and state["batch"] == 5
    # A fresh loader, as after a restart.
    resumed = ds.loader(**options)
    resumed.load_state_dict(state)
    rest = [b.samples.tolist() for b in resumed]
    assert first + rest == all_batches
    assert resumed.epoch == 2
    # The same loader goes back too, discarding what its prefetch thread read ahead.
    loader.load_state_dict(state)
    assert [b.samples.tolist() for b in loader] == rest


def test_next_state_dict_of_a_batch(docs_path):
    ds = lt.open(docs_path)
    loader = ds.loader(batch_size=10, prefetch=4)
    batches = list(loader)
    saved = batches[3].next_state_dict()
    fresh = ds.loader(batch_size=10)
    fresh.load_state_dict(saved)
    assert next(iter(fresh)).samples.tolist() == batches[4].samples.tolist()


def test_state_of_other_options_is_refused(docs_path):
    ds = lt.open(docs_path)
    first = ds.loader(batch_size=10)
    state = next(iter(first)).next_state_dict()
    with pytest.raises(lt.LodTensorError, match="shards by parts"):
        ds.loader(batch_size=11).load_state_dict(state)
    # At an epoch's start nothing of it was read: other options go on from there.
    other = ds.loader(batch_size=11)
    other.load_state_dict(first.state_dict() | {"batch": 0, "parts": []})
    assert other.epoch == 0
    with pytest.raises(lt.LodTensorError):
        ds.loader(batch_size=10).load_state_dict({"epoch": 0})


@pytest.mark.parametrize(
    "options, message",
    [
        # The crate's own checks, in the words Rust and Python share.
        (dict(batch_size=0), "loader option batch_size: must be at least 1, got 0"),
        (dict(token_budget=0), "loader option token_budget: must be at least 1, got 0"),
        (
            dict(batch_size=3, token_budget=10),
            "loader option batch_size: conflicts with token_budget: give one of them",
        ),
        (dict(shuffle=True, chunk_rows=0), "loader option chunk_rows: must be at least 1, got 0"),
        (
            dict(shuffle=True, chunk_rows=2, window=0),
            "loader option window: must be at least 1, got 0",
        ),
        (dict(world_size=0), "loader option world_size: must be at least 1, got 0"),
        (dict(rank=3, world_size=3), "loader option rank: must be below world_size (3), got 3"),
        (dict(buckets=0), "loader option buckets: must be at least 1 quantile bucket, got 0"),
        (dict(buckets=[8, 4]), "loader option buckets: bounds must increase: 4 at index 1 follows 8"),
        # What only the Python keywords can get wrong, in the same form.
        (dict(chunk_rows=4), "loader option chunk_rows: needs shuffle=True"),
        (dict(window=4), "loader option window: needs shuffle=True"),
        (dict(shuffle=True, window=4), "loader option window: needs chunk_rows"),
    ],
)
def test_bad_options_name_the_option(docs_path, options, message):
    with pytest.raises(lt.LodTensorError) as raised:
        lt.open(docs_path).loader(**options)
    assert str(raised.value) == message
    assert "with_" not in str(raised.value)


def test_the_stub_types_every_loader_option():
    """The stub's `LoaderOptions` lists the keywords the module parses, in the same order."""
    import ast
    import inspect
    from pathlib import Path

    runtime = inspect.signature(lt._native._loader_options).parameters
    stub = ast.parse(Path(lt.__file__).with_suffix(".pyi").read_text())
    (options,) = [n for n in stub.body if isinstance(n, ast.ClassDef) and n.name == "LoaderOptions"]
    typed = [n.target.id for n in options.body if isinstance(n, ast.AnnAssign)]
    assert typed == list(runtime)
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in runtime.values())


def test_bad_options_raise(docs_path):
    ds = lt.open(docs_path)
    with pytest.raises(lt.LodTensorError, match='loader option length_column: "nope"'):
        ds.loader(length_column="nope")
    with pytest.raises(lt.LodTensorError):
        ds.loader(buckets="big")
    with pytest.raises(TypeError, match="loader\\(\\) got an unexpected keyword argument 'batchsize'"):
        ds.loader(batchsize=3)
    with pytest.raises(TypeError):
        ds.loader(3)


def reference_rows(path):
    with pa.memory_map(str(path)) as source:
        return ipc.open_file(source).read_all()


@pytest.mark.parametrize("shuffle", [False, True])
def test_batch_arrays_hold_the_samples(docs_path, shuffle):
    table = reference_rows(docs_path)
    ds = lt.open(docs_path)
    for batch in ds.loader(token_budget=45, shuffle=shuffle, seed=4):
        rows = table.take(pa.array(batch.samples)).combine_chunks()
        tokens = rows.column("tokens").chunk(0)
        values = batch.values("tokens")
        assert values.shape == (len(tokens.flatten().flatten()), DIM)
        np.testing.assert_array_equal(
            values, tokens.flatten().flatten().to_numpy_ndarray().reshape(-1, DIM)
        )
        np.testing.assert_array_equal(batch.offsets("tokens", 0), tokens.offsets.to_numpy())
        np.testing.assert_array_equal(
            batch.offsets("tokens", 1), tokens.flatten().offsets.to_numpy()
        )
        every = batch.offsets("tokens")
        assert len(every) == batch.num_levels("tokens") == 2
        for level, offsets in enumerate(every):
            np.testing.assert_array_equal(offsets, batch.offsets("tokens", level))
        np.testing.assert_array_equal(batch.values("label"), rows.column("label").to_numpy())
        np.testing.assert_array_equal(
            batch.values("ids"), rows.column("ids").chunk(0).flatten().to_numpy()
        )
        assert batch.to_pyarrow().equals(rows.to_batches()[0])
        assert pa.record_batch(batch).equals(rows.to_batches()[0])
        assert batch.tokens == len(tokens.flatten().flatten())
        assert len(batch) == len(batch.samples)


def test_views_share_the_mapping_and_gathers_do_not(docs_path):
    ds = lt.open(docs_path)
    in_order = [b for b in ds.loader(batch_size=3)]
    assert any(b.is_view for b in in_order)
    for b in in_order:
        values = b.values("tokens")
        if b.is_view and values.size:
            assert inside_mapping(values, docs_path)
    gathered = next(b for b in ds.loader(batch_size=3, shuffle=True, seed=1) if not b.is_view)
    assert not inside_mapping(gathered.values("tokens"), docs_path)


def test_to_padded(docs_path):
    ds = lt.open(docs_path)
    batch = next(iter(ds.loader(batch_size=6, shuffle=True, seed=9)))
    values, lengths, mask = batch.to_padded("tokens", 1)
    offsets = batch.offsets("tokens", 1)
    np.testing.assert_array_equal(lengths, np.diff(offsets))
    assert values.shape == (len(lengths), lengths.max(), DIM)
    assert mask.dtype == np.bool_ and mask.shape == values.shape[:2]
    np.testing.assert_array_equal(mask.sum(axis=1), lengths)
    flat = batch.values("tokens")
    for i, (start, n) in enumerate(zip(offsets[:-1], lengths)):
        np.testing.assert_array_equal(values[i, :n], flat[start : start + n])
        assert not values[i, n:].any()
    with pytest.raises(lt.LodTensorError):
        batch.to_padded("label", 0)


def test_batches_outlive_the_loader_and_the_dataset(docs_path):
    ds = lt.open(docs_path)
    loader = ds.loader(batch_size=5, shuffle=True, seed=1, prefetch=2)
    batches = list(loader)
    expected = [b.values("tokens").copy() for b in batches]
    del ds, loader
    gc.collect()
    for b, e in zip(batches, expected):
        np.testing.assert_array_equal(b.values("tokens"), e)
        assert b.to_pyarrow().num_rows == len(b)


def test_breaking_out_and_set_epoch_with_prefetch(docs_path):
    ds = lt.open(docs_path)
    loader = ds.loader(batch_size=10, shuffle=True, seed=3, prefetch=2)
    for i, _ in enumerate(loader):
        if i == 2:
            break
    assert loader.state_dict()["batch"] == 3
    loader.set_epoch(5)
    epoch5 = [b.samples.tolist() for b in loader]
    reference = ds.loader(batch_size=10, shuffle=True, seed=3)
    reference.set_epoch(5)
    assert epoch5 == [b.samples.tolist() for b in reference]


# One thread iterates a prefetching loader; two others read its state the whole time. Run in
# a child process with a timeout: a getter that waited for the loader's lock with the GIL
# held (while the lock's holder needed the GIL, as `state_dict` does to make its dict) would
# hang the whole interpreter.
_ITERATE_WHILE_POLLING = """
import sys, threading
import lodtensor as lt

sys.setswitchinterval(1e-6)  # switch threads as often as possible
loader = lt.open(sys.argv[1]).loader(batch_size=2, shuffle=True, seed=1, prefetch=2)
done = threading.Event()
counts = [0, 0, 0]

def iterate():
    for _ in range(30):
        for _ in loader:
            counts[0] += 1
    done.set()

def poll(i):
    while not done.is_set() or counts[i] < 200:
        loader.state_dict(), loader.fingerprint, loader.epoch, loader.batch_index
        len(loader), repr(loader)
        counts[i] += 1

threads = [threading.Thread(target=iterate)]
threads += [threading.Thread(target=poll, args=(i,)) for i in (1, 2)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(*counts)
"""


def test_getters_while_another_thread_iterates_never_deadlock(docs_path):
    try:
        run = subprocess.run(
            [sys.executable, "-c", _ITERATE_WHILE_POLLING, str(docs_path)],
            capture_output=True,
            text=True,
            timeout=120,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("iterating and reading the loader's state from two threads hung")
    assert run.returncode == 0, run.stderr
    batches, *polls = map(int, run.stdout.split())
    assert batches == 30 * 100 and min(polls) >= 200


# A loader gathering into shared memory, then `os.fork()`: the child shares the parent's
# regions' pages, so it must gather into regions of its own, never the parent's.
_FORK_SHARED_MEMORY = """
import json, os, sys, zlib
import numpy as np
import lodtensor as lt

def inode(array):
    address = array.__array_interface__["data"][0]
    for line in open("/proc/self/maps"):
        fields = line.split()
        lo, hi = (int(x, 16) for x in fields[0].split("-"))
        if lo <= address < hi:
            return int(fields[4]) if "lodtensor-gather" in line else None

def read(batches):
    return [(b.samples.tolist(), inode(b.values("tokens")), zlib.crc32(np.ascontiguousarray(b.values("tokens")))) for b in batches]

loader = lt.open(sys.argv[1]).loader(batch_size=10, shuffle=True, seed=3, shared_memory=True)
it = iter(loader)
first = read(next(it) for _ in range(4))
pid = os.fork()
rest = read(it)
if pid == 0:
    print(json.dumps({"child": rest}), flush=True)
    os._exit(0)
_, status = os.waitpid(pid, 0)
print(json.dumps({"first": first, "parent": rest, "status": status}), flush=True)
"""


def test_a_forked_child_gathers_into_shared_memory_of_its_own(docs_path):
    expected = {
        tuple(b.samples.tolist()): zlib.crc32(np.ascontiguousarray(b.values("tokens")))
        for b in lt.open(docs_path).loader(batch_size=10, shuffle=True, seed=3)
    }
    run = subprocess.run(
        [sys.executable, "-c", _FORK_SHARED_MEMORY, str(docs_path)], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    lines = [json.loads(line) for line in run.stdout.splitlines()]
    child = next(line["child"] for line in lines if "child" in line)
    parent = next(line for line in lines if "parent" in line)
    before = {region for _, region, _ in parent["first"] if region is not None}
    assert before, "the parent gathered into shared memory"
    assert child and not {region for _, region, _ in child} & before
    for samples, _, crc in parent["first"] + parent["parent"] + child:
        assert expected[tuple(samples)] == crc


# A prefetching loader that has read ahead, then `os.fork()`: the child has the thread's
# queue but not the thread. In a subprocess with a timeout, as a hang is the failure.
_FORK_WHILE_PREFETCHING = """
import gc, json, os, sys
import lodtensor as lt

path, mode = sys.argv[1], sys.argv[2]
loader = lt.open(path).loader(batch_size=10, shuffle=True, seed=3, prefetch=2)
it = iter(loader)
first = [next(it).samples.tolist() for _ in range(3)]
pid = os.fork()
if pid == 0:
    if mode == "drop":
        del it, loader
        gc.collect()
        out = []
    elif mode == "set_epoch":
        loader.set_epoch(1)
        out = [b.samples.tolist() for b in loader]
    else:
        out = [b.samples.tolist() for b in it] + [b.samples.tolist() for b in loader]
    print(json.dumps({"child": out}), flush=True)
    os._exit(0)
_, status = os.waitpid(pid, 0)
rest = [b.samples.tolist() for b in it]
print(json.dumps({"first": first, "parent": rest, "status": status}), flush=True)
"""


@pytest.mark.parametrize("source", ["docs_path", "shards_dir"])
@pytest.mark.parametrize("mode", ["iterate", "drop", "set_epoch"])
def test_a_forked_child_goes_on_from_its_position(request, source, mode):
    docs_path = request.getfixturevalue(source)
    ds = lt.open(docs_path)
    reference = ds.loader(batch_size=10, shuffle=True, seed=3)
    epochs = [[b.samples.tolist() for b in reference] for _ in range(2)]
    try:
        run = subprocess.run(
            [sys.executable, "-c", _FORK_WHILE_PREFETCHING, str(docs_path), mode],
            capture_output=True,
            text=True,
            timeout=120,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"a child forked from a prefetching loader hung ({mode})")
    assert run.returncode == 0, run.stderr
    lines = [json.loads(line) for line in run.stdout.splitlines()]
    child = next(line["child"] for line in lines if "child" in line)
    parent = next(line for line in lines if "parent" in line)
    assert parent["status"] == 0
    assert parent["first"] == epochs[0][:3] and parent["parent"] == epochs[0][3:]
    expected = {"iterate": epochs[0][3:] + epochs[1], "drop": [], "set_epoch": epochs[1]}
    assert child == expected[mode]


def test_positions_saved_by_an_earlier_build_resume_the_same_batches():
    # Saved by the build before lengths and orders went to 32 bits
    # (tests/data/positions/make_positions.py): the same batches follow.
    root = Path(__file__).resolve().parents[2] / "tests" / "data" / "positions"
    ds = lt.open(root / "docs")
    cases = json.loads((root / "positions.json").read_text())
    assert len(cases) == 5
    for case in cases:
        loader = ds.loader(**case["options"])
        loader.load_state_dict(case["state"])
        it = iter(loader)
        assert [next(it).samples.tolist() for _ in range(3)] == case["next"], case["options"]
