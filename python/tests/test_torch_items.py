"""lodtensor.torch.BatchDataset items as the pretraining path needs them: packed batches
with document boundaries by default, every column kind through every collate, `columns=`,
sources that are opened datasets, mixtures or buckets, and the worker-count check on
resume. Skipped without torch unless LODTENSOR_REQUIRE_PYTHON=1 (the test command)."""

from __future__ import annotations

import itertools
import os
import pickle

import numpy as np
import pyarrow as pa
import pytest

import lodtensor as lt

if os.environ.get("LODTENSOR_REQUIRE_PYTHON") == "1":
    import torch
else:
    torch = pytest.importorskip("torch")

from torch.utils.data import DataLoader  # noqa: E402

from lodtensor import _native  # noqa: E402
from lodtensor.torch import BatchDataset  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:This DataLoader will create", "ignore:'set_vital'")
COLLATES = (None, "padded", "nested", "packed")
PACK = dict(pack=16, batch_size=3, shuffle=True, seed=2)


def corpus_table(n=60, seed=0) -> pa.Table:
    """`tokens` (int32 ids, one level), `id` (an int64 per document), `source` (a string
    per document, some null)."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 30, n)
    offsets = pa.array(np.r_[0, np.cumsum(lengths)], pa.int64())
    ids = pa.array(rng.integers(0, 50_000, int(lengths.sum())).astype(np.int32))
    return pa.table(
        {
            "tokens": pa.LargeListArray.from_arrays(offsets, ids),
            "id": pa.array(np.arange(n, dtype=np.int64) + 1000),
            "source": pa.array([None if r % 7 == 3 else f"file{r}.txt" for r in range(n)]),
        }
    )


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("items") / "corpus.arrow"
    lt.write(path, corpus_table(), batch_bytes=1024)
    return path


def first_items(source, workers=0, **options):
    """The epoch's items and the in-process loader's batches for the same options."""
    ds = BatchDataset(source, **options)
    items = list(DataLoader(ds, batch_size=None, num_workers=workers))
    loader_options = {k: v for k, v in options.items() if k not in ("collate", "collate_level", "columns")}
    # Worker w is rank w of the loader: the DataLoader takes their batches in turn.
    ranks = [list(lt.open(source).loader(**loader_options, rank=w, world_size=max(workers, 1))) for w in range(max(workers, 1))]
    batches = [b for turn in itertools.zip_longest(*ranks) for b in turn if b is not None]
    assert len(items) == len(batches)
    return items, batches


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("collate", COLLATES)
def test_packed_items_have_the_documents_edges_by_default(corpus, collate, workers):
    items, batches = first_items(corpus, workers, collate=collate, **PACK)
    for item, batch in zip(items, batches):
        cu = batch.cu_seqlens("tokens")
        assert len(cu) > len(batch) + 1 or all(len(w) == 1 for w in batch.windows)
        t = item["tokens"]
        if collate is None:
            assert t["offsets"][1].tolist() == cu.tolist()
        elif collate == "padded":
            assert t["lengths"].tolist() == np.diff(cu).tolist()
        elif collate == "nested":
            assert t.offsets().tolist() == cu.tolist()
        else:
            assert t["cu_seqlens"].dtype == torch.int32 and t["cu_seqlens"].tolist() == cu.tolist()
            assert t["position_ids"].tolist() == batch.position_ids("tokens").tolist()
            assert t["max_seqlen"] == int(np.diff(cu).max())
        # "samples": the rows of the pieces; "windows": the pieces and where each window's lie.
        pieces = [p for w in batch.windows for p in w]
        assert item["samples"].tolist() == [r for r, _, _ in pieces]
        assert item["windows"]["pieces"].tolist() == [list(p) for p in pieces]
        counts = np.diff(item["windows"]["offsets"].numpy()).tolist()
        assert counts == [len(w) for w in batch.windows]
        # Per-document columns: one value per piece, not a LoD of their own.
        assert item["id"].tolist() == [1000 + r for r, _, _ in pieces]
        assert item["source"] == [None if r % 7 == 3 else f"file{r}.txt" for r, _, _ in pieces]


def test_window_edges_only_when_asked(corpus):
    items, batches = first_items(corpus, collate="packed", collate_level=0, **PACK)
    for item, batch in zip(items, batches):
        window = len(item["tokens"]["values"]) // len(batch)
        assert item["tokens"]["cu_seqlens"].tolist() == list(range(0, window * len(batch) + 1, window))


@pytest.mark.parametrize("collate", COLLATES)
def test_a_string_side_column_goes_through_every_collate(corpus, collate):
    items, batches = first_items(corpus, 2, collate=collate, batch_size=7, shuffle=True, seed=1)
    for item, batch in zip(items, batches):
        rows = batch.samples.tolist()
        assert item["source"] == [None if r % 7 == 3 else f"file{r}.txt" for r in rows]
        assert item["id"].tolist() == [1000 + r for r in rows]


def test_columns_choose_the_items_columns(corpus, tmp_path):
    items, _ = first_items(corpus, collate="packed", columns=["tokens"], batch_size=5)
    assert set(items[0]) == {"samples", "tokens"}
    lt.write_shards(tmp_path / "shards", corpus_table(), shard_rows=20)
    ds = BatchDataset(tmp_path / "shards", columns=["id", "source"], batch_size=5)
    item = next(iter(ds))
    assert set(item) == {"samples", "id", "source"} and item["id"].tolist() == list(range(1000, 1005))
    with pytest.raises(lt.ArgumentError, match="no column.*nope"):
        BatchDataset(corpus, columns=["nope"])
    with pytest.raises(lt.ArgumentError, match="no column 'nope'"):
        BatchDataset(tmp_path / "shards", columns=["nope"])


def test_options_are_checked_when_made(corpus, tmp_path):
    with pytest.raises(TypeError, match="storage_optons"):
        BatchDataset(corpus, storage_optons={})
    with pytest.raises(FileNotFoundError):
        BatchDataset(tmp_path / "missing.arrow")
    with pytest.raises(lt.ArgumentError, match="for a URL"):
        BatchDataset(corpus, cache_dir=tmp_path)
    with pytest.raises(lt.ArgumentError, match="an opened dataset has its own"):
        BatchDataset(lt.open(corpus), cache_limit=10)
    with pytest.raises(TypeError, match="not list"):
        BatchDataset([corpus])


def test_an_opened_dataset_or_a_mixture_as_the_source(corpus, tmp_path):
    ds = lt.open(corpus)
    by_object = [i["samples"].tolist() for i in DataLoader(BatchDataset(ds, batch_size=8), batch_size=None)]
    assert by_object == [i["samples"].tolist() for i in BatchDataset(corpus, batch_size=8)]
    other = tmp_path / "other.arrow"
    lt.write(other, corpus_table(40, seed=3))
    mixture = lt.mix([ds, lt.open(other)], [0.7, 0.3], seed=4)
    copy = pickle.loads(pickle.dumps(mixture))
    assert copy.weights == [0.7, 0.3] and copy.num_rows == 100
    items = list(DataLoader(BatchDataset(mixture, batch_size=10, seed=1), batch_size=None, num_workers=2))
    seen = sorted((s, r) for i in items for s, r in zip(i["mixture"].tolist(), i["samples"].tolist()))
    loaders = [mixture.loader(batch_size=10, seed=1, rank=w, world_size=2) for w in (0, 1)]
    expected = [(s, r) for loader in loaders for b in loader for s, r in zip(b.source.tolist(), b.samples.tolist())]
    assert seen == sorted(expected) and len(seen) == 100


def test_a_mixture_resumes_exactly_through_a_stateful_dataloader(corpus, tmp_path):
    from torchdata.stateful_dataloader import StatefulDataLoader

    other = tmp_path / "other.arrow"
    lt.write(other, corpus_table(40, seed=3))
    mixture = lt.mix([lt.open(corpus), lt.open(other)], [0.5, 0.5], seed=4)
    options = dict(collate="packed", token_budget=40, shuffle=True, seed=9)
    whole = [key(i) for i in StatefulDataLoader(BatchDataset(mixture, **options), batch_size=None, num_workers=2)]
    loader = StatefulDataLoader(BatchDataset(mixture, **options), batch_size=None, num_workers=2)
    it = iter(loader)
    head = [key(next(it)) for _ in range(3)]
    state = pickle.loads(pickle.dumps(loader.state_dict()))
    resumed = StatefulDataLoader(BatchDataset(mixture, **options), batch_size=None, num_workers=2)
    resumed.load_state_dict(state)
    assert head + [key(i) for i in resumed] == whole


def key(item):
    return (tuple(item["mixture"].tolist()), tuple(item["samples"].tolist()))


def test_a_state_of_another_worker_count_names_reshard_state(corpus):
    from torchdata.stateful_dataloader import StatefulDataLoader

    ds = BatchDataset(corpus, batch_size=4, elastic=True)
    loader = StatefulDataLoader(ds, batch_size=None, num_workers=2)
    it = iter(loader)
    next(it)
    state = loader.state_dict()
    other = StatefulDataLoader(BatchDataset(corpus, batch_size=4, elastic=True), batch_size=None, num_workers=1)
    other.load_state_dict(state)
    with pytest.raises(lt.ArgumentError, match="reshard_state"):
        next(iter(other))


def test_a_bucket_with_explicit_keys_reaches_spawned_workers(tmp_path, monkeypatch):
    pytest.importorskip("moto")
    from s3_server import S3Server

    for name in [n for n in os.environ if n.startswith("AWS_")]:
        monkeypatch.delenv(name)  # only the keys given here
    lt.write_shards(tmp_path / "local", corpus_table(), shard_rows=15)
    server = S3Server()
    try:
        url = server.upload_dir(tmp_path / "local", "data", "corpus")
        ds = BatchDataset(
            url, storage_options=server.storage_options(), cache_dir=tmp_path / "cache", token_budget=50, shuffle=True
        )
        loader = DataLoader(ds, batch_size=None, num_workers=2, multiprocessing_context="spawn")
        rows = sorted(s for item in loader for s in item["samples"].tolist())
    finally:
        server.stop()
    assert rows == list(range(60))


def side_kinds_table(n=40) -> pa.Table:
    """`tokens` and a side column of each kind a list is built for in Rust (strings of
    three widths, lists of strings, lists of lists of strings), with nulls, and two left
    to pyarrow (booleans with nulls, a dictionary)."""
    rng = np.random.default_rng(3)
    lengths = rng.integers(1, 20, n)
    offsets = pa.array(np.r_[0, np.cumsum(lengths)], pa.int64())
    words = [None if r % 5 == 2 else f"dóc{r}" for r in range(n)]
    return pa.table(
        {
            "tokens": pa.LargeListArray.from_arrays(offsets, pa.array(np.arange(lengths.sum(), dtype=np.int32))),
            "utf8": pa.array(words, pa.string()),
            "large": pa.array(words, pa.large_string()),
            "view": pa.array(words, pa.string_view()),
            "tags": pa.array([None if r % 6 == 1 else [f"t{r}", None, "x"][: r % 4] for r in range(n)]),
            "nested": pa.array([[[f"{r}"], [], None, ["a", None]][: r % 5] for r in range(n)]),
            "flag": pa.array([r % 3 == 0 if r % 4 else None for r in range(n)]),
            "kind": pa.array([f"k{r % 3}" for r in range(n)]).dictionary_encode(),
        }
    )


@pytest.mark.parametrize("packed", [False, True])
def test_side_columns_of_every_kind_as_pyarrow_lists_them(tmp_path, packed):
    path = tmp_path / "kinds.arrow"
    table = side_kinds_table()
    lt.write(path, table, batch_bytes=512)
    options = dict(pack=8, batch_size=4) if packed else dict(batch_size=6)
    items, batches = first_items(path, 0, collate="packed", shuffle=True, seed=4, **options)
    columns = {name: table.column(name).to_pylist() for name in table.column_names[1:]}
    for item, batch in zip(items, batches):
        rows = item["samples"].tolist()
        for name, column in columns.items():
            expected = [column[r] for r in rows]
            got = item[name]
            assert (got.tolist() if isinstance(got, torch.Tensor) else got) == expected, name
            listed = batch._side_list(name)
            if name in ("flag", "kind"):
                assert listed is None  # numbers and booleans go to numpy, a dictionary to pyarrow
            else:
                values = batch.values(name)
                assert listed == (values.flatten() if packed else values).to_pylist(), name
            utf8 = batch._side_utf8(name)  # strings without nulls only, as a worker sends them
            assert utf8 is None or _native.utf8_list(*utf8) == listed, name
            if name in ("view", "nested", "flag", "kind") or None in (listed or [None]):
                assert utf8 is None, name


def test_long_packed_windows_positions_are_written_into_the_workers_block(tmp_path):
    # 4 windows of 256 tokens: 8 KB of position ids, more than an item's message carries.
    path = tmp_path / "long.arrow"
    lt.write(path, corpus_table(n=300), batch_bytes=4096)
    items, batches = first_items(path, 2, collate="packed", pack=256, batch_size=4, shuffle=True, seed=3)
    assert len(items) >= 3
    for item, batch in zip(items, batches):
        assert item["tokens"]["position_ids"].tolist() == batch.position_ids("tokens").tolist()
    from lodtensor import _shm

    batch = batches[0]
    block = _shm.blocks().take(8 * 1024)
    assert block is not None
    assert batch._position_ids_into("tokens", block[4], 64) == 1024
    assert block[4][64 : 64 + 8 * 1024].view(np.int64).tolist() == batch.position_ids("tokens").tolist()
    with pytest.raises(lt.ArgumentError, match="do not fit"):
        batch._position_ids_into("tokens", block[4], block[3] - 8)
    with pytest.raises(lt.ArgumentError, match="RegionPool.take"):
        batch._position_ids_into("tokens", np.zeros(1 << 16, np.uint8), 0)
    assert batch._packed("tokens", False)[1] is None


@pytest.mark.parametrize("packed", [False, True])
def test_strings_without_nulls_cross_from_workers_as_two_buffers(tmp_path, packed):
    path = tmp_path / "names.arrow"
    names = [f"dóc/{r}.txt" for r in range(60)]
    table = corpus_table().set_column(2, "source", pa.array(names, pa.large_string() if packed else pa.string()))
    lt.write(path, table, batch_bytes=1024)
    options = dict(pack=16, batch_size=3) if packed else dict(batch_size=7)
    items, batches = first_items(path, 2, collate="packed", shuffle=True, seed=5, **options)
    for item, batch in zip(items, batches):
        assert item["source"] == [names[r] for r in item["samples"].tolist()]
        assert _native.utf8_list(*batch._side_utf8("source")) == batch._side_list("source")


def test_utf8_list_refuses_offsets_and_bytes_that_are_not_strings():
    def offsets(*o):
        return np.array(o, np.int64).tobytes()

    assert _native.utf8_list(b"abcd", offsets(0, 1, 4)) == ["a", "bcd"]
    assert _native.utf8_list(b"", offsets(0)) == []
    with pytest.raises(lt.ArgumentError, match="string 1: offsets 3..2 outside"):
        _native.utf8_list(b"abcd", offsets(0, 3, 2))
    with pytest.raises(lt.ArgumentError, match="string 0: offsets -1..1"):
        _native.utf8_list(b"abcd", offsets(-1, 1))
    with pytest.raises(lt.ArgumentError, match="outside 0..4"):
        _native.utf8_list(b"abcd", offsets(0, 5))
    with pytest.raises(lt.ArgumentError, match="string 0 is not UTF-8"):
        _native.utf8_list(b"\xff", offsets(0, 1))
    with pytest.raises(lt.ArgumentError, match="not n \\+ 1 int64"):
        _native.utf8_list(b"", b"123")
