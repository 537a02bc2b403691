"""Sequence packing (`pack=`): the contract of a packed batch, resume, best fit, and the
windows of Megatron-LM's GPTDataset for the same documents, order and seq_len: a model of
its published algorithm (document index, `build_sample_idx`, shuffle index) always, and
megatron-core's own compiled `build_sample_idx` where megatron-core is installed."""

import importlib.machinery
import importlib.util
import os
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import lodtensor as lt


def token_table(lengths, seed=0) -> pa.Table:
    """`tokens`: each token's place in the file (unique), `labels` the same plus one
    million (aligned: packed alike), `doc`: one int64 per document (carried per window)."""
    offsets = pa.array(np.r_[0, np.cumsum(lengths)], pa.int64())
    ids = np.arange(int(np.sum(lengths)), dtype=np.int64)
    return pa.table(
        {
            "tokens": pa.LargeListArray.from_arrays(offsets, pa.array(ids)),
            "labels": pa.LargeListArray.from_arrays(offsets, pa.array(ids + 1_000_000)),
            "doc": pa.array(np.arange(len(lengths), dtype=np.int64)),
        }
    )


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    rng = np.random.default_rng(5)
    lengths = np.maximum(rng.lognormal(np.log(40), 1.0, 300).astype(np.int64), 0)
    lengths[::17] = 0  # some empty documents
    path = tmp_path_factory.mktemp("pack") / "docs.arrow"
    lt.write(path, token_table(lengths), batch_bytes=8192)
    return path, lengths


def places(lengths):
    """(row, token) of every token id."""
    return [(r, t) for r, n in enumerate(lengths) for t in range(n)]


def document_order(ds, **shuffle):
    """The documents in the order of epoch 0 (an unpacked loader's)."""
    return [int(s) for b in ds.loader(batch_size=1, **shuffle) for s in b.samples]


def test_a_packed_batch_keeps_the_contract(corpus):
    path, lengths = corpus
    ds = lt.open(path)
    where = places(lengths)
    L, B = 64, 4
    seen = 0
    for batch in ds.loader(pack=L, batch_size=B, shuffle=True, seed=3):
        values = batch.values("tokens")
        cu = batch.cu_seqlens("tokens")
        pos = batch.position_ids("tokens")
        windows = batch.windows
        assert values.shape == (len(windows) * L,) and len(windows) <= B
        assert cu.dtype == np.int32 and cu[0] == 0 and cu[-1] == len(values)
        assert pos.dtype == np.int64 and len(pos) == len(values)
        assert all(w * L in set(cu.tolist()) for w in range(len(windows) + 1))
        bounds = {0}
        at = 0
        for pieces in windows:
            for row, first, n in pieces:
                assert [where[v] for v in values[at : at + n]] == [(row, first + t) for t in range(n)]
                assert pos[at : at + n].tolist() == list(range(n))
                at += n
                bounds.add(at)
        assert set(cu.tolist()) == bounds
        np.testing.assert_array_equal(batch.values("labels"), values + 1_000_000)
        # "doc", one value per document, is carried per window: its pieces' documents.
        rows = [row for pieces in windows for row, _, _ in pieces]
        np.testing.assert_array_equal(batch.values("doc"), rows)
        counts = np.r_[0, np.cumsum([len(pieces) for pieces in windows])]
        np.testing.assert_array_equal(batch.offsets("doc", 0), counts)
        with pytest.raises(lt.LodTensorError, match="packed"):
            batch.cu_seqlens("doc")  # one level: not a packed column
        seen += len(windows)
    assert seen == (int(np.sum(lengths))) // L


def test_side_columns_are_lists_per_window(tmp_path):
    lengths = [3, 0, 5, 2, 7, 1, 4, 6]
    table = token_table(lengths).append_column(
        "id", pa.array([None if r % 3 == 1 else f"doc{r}" for r in range(len(lengths))])
    )
    lt.write(tmp_path / "side.arrow", table, batch_bytes=64)
    ds = lt.open(tmp_path / "side.arrow")
    for split in (True, False):
        for batch in ds.loader(pack=4, pack_split=split, batch_size=2, shuffle=True, seed=1):
            ids = batch.values("id")
            assert isinstance(ids, pa.ListArray) and len(ids) == len(batch.windows)
            expected = [
                [None if r % 3 == 1 else f"doc{r}" for r, _, _ in pieces] for pieces in batch.windows
            ]
            assert ids.to_pylist() == expected


def test_unpacked_batches_have_no_windows(corpus):
    batch = next(iter(lt.open(corpus[0]).loader(batch_size=2)))
    assert batch.windows is None
    with pytest.raises(lt.LodTensorError, match="packed"):
        batch.cu_seqlens("tokens")


def test_options_are_checked(corpus):
    ds = lt.open(corpus[0])
    with pytest.raises(lt.LodTensorError, match="token_budget"):
        ds.loader(pack=8, token_budget=100)
    with pytest.raises(lt.LodTensorError, match="pack_overlong"):
        ds.loader(pack=8, pack_split=False, pack_overlong="keep")
    with pytest.raises(lt.LodTensorError, match="pack"):
        ds.loader(pack=0)


@pytest.mark.parametrize("elastic", [False, True])
def test_resume_continues_exactly(corpus, elastic):
    ds = lt.open(corpus[0])
    options = dict(pack=32, batch_size=3, shuffle=True, seed=9, pack_extra_token=True)
    whole = [b.values("tokens").copy() for b in ds.loader(**options)]
    first = ds.loader(**options, elastic=elastic)
    it = iter(first)
    for _ in range(5):
        state = next(it).next_state_dict()
    resumed = ds.loader(**options, elastic=elastic)
    resumed.load_state_dict(state)
    rest = [b.values("tokens").copy() for b in resumed]
    assert len(rest) == len(whole) - 5
    for a, b in zip(rest, whole[5:]):
        np.testing.assert_array_equal(a, b)


def test_best_fit_keeps_documents_whole(corpus):
    path, lengths = corpus
    L = 128
    loader = lt.open(path).loader(pack=L, batch_size=8, pack_split=False, pack_lookahead=64)
    placed = Counter()
    for batch in loader:
        for pieces in batch.windows:
            assert sum(n for _, _, n in pieces) <= L
            for row, first, n in pieces:
                if lengths[row] <= L:
                    assert (first, n) == (0, lengths[row])
                placed[row] += n
    assert all(placed[r] == n for r, n in enumerate(lengths) if n > 0)


# Megatron-LM's GPTDataset, from its published algorithm (megatron/core/datasets/
# gpt_dataset.py and helpers.cpp): the document index is the documents of every epoch in a
# shuffled order; build_sample_idx walks it, sample i starting at (document index position,
# offset) and running seq_len (+ 1 with add_extra_token_to_sequence) tokens; the shuffle
# index permutes the samples.


def megatron_sample_idx(sizes, doc_idx, seq, extra, drop_last=True):
    """helpers.cpp's build_sample_idx, line by line."""
    tokens = int(sum(sizes[d] for d in doc_idx))
    n = (tokens - extra) // seq if drop_last else -(-(tokens - extra) // seq)
    idx = [(0, 0)]
    d, off = 0, 0
    for _ in range(n):
        remaining = seq + extra
        while remaining != 0:
            length = sizes[doc_idx[d]] - off
            remaining -= length
            if remaining <= 0:
                off += remaining + length - extra
                remaining = 0
            else:
                if d == len(doc_idx) - 1:
                    off = sizes[doc_idx[d]] - extra
                    break
                d += 1
                off = 0
        idx.append((d, off))
    return idx


def megatron_windows(sizes, doc_idx, sample_idx, extra):
    """GPTDataset.__getitem__'s parts of every sample (empty parts left out), unshuffled."""
    out = []
    for (b, b_off), (e, e_off) in zip(sample_idx, sample_idx[1:]):
        parts = []
        for i in range(b, e + 1):
            first = b_off if i == b else 0
            end = e_off + extra if i == e else sizes[doc_idx[i]]
            parts.append((int(doc_idx[i]), int(first), int(end - first)))
        out.append([p for p in parts if p[2] > 0])
    return out


def megatron_helpers():
    """megatron-core's compiled helpers, loaded alone (the package imports torch)."""
    spec = importlib.util.find_spec("megatron")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(list(spec.submodule_search_locations)[0]) / "core" / "datasets"
    found = sorted(folder.glob("helpers_cpp*.so"))
    if not found:
        return None
    loader = importlib.machinery.ExtensionFileLoader("helpers_cpp", str(found[0]))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader("helpers_cpp", loader))
    loader.exec_module(module)
    return module


@pytest.mark.parametrize("extra", [False, True])
@pytest.mark.parametrize("pad", [False, True])
@pytest.mark.parametrize("shuffle", [{}, {"shuffle": True, "seed": 4}])
@pytest.mark.parametrize("seq", [1, 7, 64, 500])
def test_windows_are_megatrons(corpus, extra, pad, shuffle, seq):
    path, lengths = corpus
    ds = lt.open(path)
    order = document_order(ds, **shuffle)
    sizes = [int(n) for n in lengths]
    sample_idx = megatron_sample_idx(sizes, order, seq, int(extra), drop_last=not pad)
    expected = megatron_windows(sizes, order, sample_idx, int(extra))
    loader = ds.loader(pack=seq, batch_size=5, pack_extra_token=extra, pack_pad_last=pad, **shuffle)
    got = [[tuple(p) for p in w] for b in loader for w in b.windows]
    if shuffle:
        # Megatron permutes the samples with numpy's generator, this loader with its own:
        # the same windows, in another order.
        got.sort()
        expected.sort()
    assert got == expected

    helpers = megatron_helpers()
    if helpers is None:
        # The test command installs megatron-core (python/requirements-nodeps.txt).
        assert not os.environ.get("LODTENSOR_REQUIRE_PYTHON"), "megatron-core is not installed"
        return
    tokens = int(np.sum(lengths))
    cpp = helpers.build_sample_idx_int32(
        np.asarray(sizes, np.int32),
        np.asarray(order, np.int32),
        seq,
        1,
        tokens,
        not pad,
        int(extra),
    )
    assert [tuple(map(int, r)) for r in cpp] == sample_idx


def test_megatron_core_is_checked_when_installed():
    """Says so when megatron-core's compiled helpers could not be had (the model alone ran)."""
    if megatron_helpers() is None:
        pytest.skip("megatron-core is not installed: compared with the Python model only")


# Mixing (`lt.mix`).


@pytest.fixture(scope="module")
def two_sources(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mix")
    small, large = [3] * 7, [5] * 60
    lt.write(folder / "small.arrow", token_table(small), batch_bytes=256)
    lt.write_shards(folder / "large", token_table(large), shard_rows=25, batch_bytes=512)
    return lt.open(folder / "small.arrow"), lt.open(folder / "large")


def test_mixture_proportions_and_sources(two_sources):
    small, large = two_sources
    mixture = lt.mix([small, large], [0.3, 0.7], seed=1)
    assert mixture.num_rows == len(mixture) == 67
    drawn = Counter()
    n = 0
    by_source = {0: [], 1: []}
    for batch in mixture.loader(batch_size=8, shuffle=True, seed=2):
        assert batch.source.dtype == np.int64 and len(batch.source) == len(batch.samples)
        for k, row in zip(batch.source.tolist(), batch.samples.tolist()):
            n += 1
            drawn[k] += 1
            by_source[k].append(row)
            assert abs(drawn[0] - 0.3 * n) <= 1
        values = batch.values("tokens")
        offsets = batch.offsets("tokens", 0)
        for i, (k, row) in enumerate(zip(batch.source.tolist(), batch.samples.tolist())):
            tokens = values[offsets[i] : offsets[i + 1]]
            width = 3 if k == 0 else 5
            np.testing.assert_array_equal(tokens, np.arange(row * width, row * width + width))
    assert n == 67
    # The small source repeats, each of its epochs a permutation of its rows.
    for start in range(0, len(by_source[0]) - 6, 7):
        assert sorted(by_source[0][start : start + 7]) == list(range(7))


def test_mixture_resumes_and_packs(two_sources):
    small, large = two_sources
    mixture = lt.mix([small, large], [1, 1])
    options = dict(pack=16, batch_size=2, shuffle=True, seed=5)
    whole = [(b.values("tokens").copy(), b.source.copy()) for b in mixture.loader(**options)]
    loader = mixture.loader(**options)
    it = iter(loader)
    for _ in range(3):
        state = next(it).next_state_dict()
    resumed = mixture.loader(**options)
    resumed.load_state_dict(state)
    rest = [(b.values("tokens").copy(), b.source.copy()) for b in resumed]
    assert len(rest) == len(whole) - 3
    for (a, sa), (b, sb) in zip(rest, whole[3:]):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(sa, sb)
    batch = next(iter(mixture.loader(**options)))
    assert len(batch.windows) == 2 and batch.cu_seqlens("tokens")[-1] == 32


def test_mixture_refuses_other_columns(two_sources, tmp_path):
    small, _ = two_sources
    lt.write(tmp_path / "other.arrow", pa.table({"tokens": token_table([2, 2])["tokens"]}))
    with pytest.raises(lt.LodTensorError, match="source 1 has columns"):
        lt.mix([small, lt.open(tmp_path / "other.arrow")], [1, 1]).loader()
    with pytest.raises(lt.LodTensorError, match="weights"):
        lt.mix([small], [1, 2]).loader()
    with pytest.raises(lt.LodTensorError, match="not a Dataset"):
        lt.mix([small, "large"], [1, 1])


def test_prefetch_and_shards_pack_alike(corpus, tmp_path):
    path, lengths = corpus
    options = dict(pack=48, batch_size=3, shuffle=True, seed=2)
    plain = [b.windows for b in lt.open(path).loader(**options)]
    ahead = [b.windows for b in lt.open(path).loader(**options, prefetch=2)]
    assert plain == ahead
    lt.write_shards(tmp_path / "shards", token_table(lengths), shard_rows=70)
    sharded = lt.open(tmp_path / "shards").loader(pack=48, batch_size=3)
    in_order = [b.windows for b in lt.open(path).loader(pack=48, batch_size=3)]
    assert [b.windows for b in sharded] == in_order


@pytest.mark.parametrize("epoch", [10**6, 2**64 - 1])
def test_a_far_mixture_epoch_is_planned_as_any_other(two_sources, epoch):
    # Its plan starts from the rule's counts found from the weights' period (3 + 7 = 10),
    # not by drawing every sample before it; the last epoch wraps to no other.
    small, large = two_sources
    loader = lt.mix([small, large], [0.3, 0.7], seed=1).loader(batch_size=67)
    loader.set_epoch(epoch)
    batches = iter(loader)
    drawn = next(batches).source.tolist()
    assert len(drawn) == 67 and abs(drawn.count(0) - 0.3 * 67) <= 1
    if epoch == 2**64 - 1:
        with pytest.raises(lt.ArgumentError, match="epoch .* is the last"):
            next(batches)
