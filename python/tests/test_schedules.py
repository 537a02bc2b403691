"""Options over training (batch_size, token_budget and pack as (tokens, value) lists) and
states that go on under other options: every sample (packed: every token) once."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

import lodtensor as lt
from script_run import run_json


def steps(batches: list, world: int) -> list[list]:
    return [batches[i : i + world] for i in range(0, len(batches), world)]


def scheduled_sizes(batches: list, points: list[tuple[int, int]]) -> list[int]:
    """Each batch's size by `points` at the tokens read before it, each batch checked to be
    within it."""
    read, sizes = 0, []
    for b in batches:
        size = next(v for p, v in reversed(points) if p <= read)
        assert len(b.samples) <= size
        sizes.append(size)
        read += b.tokens
    return sizes


def test_a_batch_size_schedule_switches_at_the_first_step_past_each_point(docs_path: Path) -> None:
    points = [(0, 2), (500, 5), (1500, 3)]
    batches = list(lt.open(docs_path).loader(batch_size=points, shuffle=True, seed=4))
    sizes = scheduled_sizes(batches, points)
    assert sorted(s for b in batches for s in b.samples.tolist()) == list(range(200))
    assert [s for i, s in enumerate(sizes) if i == 0 or sizes[i - 1] != s] == [2, 5, 3]


def test_the_same_schedule_gives_every_rank_the_same_steps(docs_path: Path) -> None:
    opts = dict(token_budget=[(0, 40), (1000, 120)], shuffle=True, seed=1, world_size=3)
    ranks = [[b.samples.tolist() for b in lt.open(docs_path).loader(rank=r, **opts)] for r in range(3)]
    # Ranks take turns in global steps whichever way they were sharded.
    elastic = [[b.samples.tolist() for b in lt.open(docs_path).loader(rank=r, elastic=True, **opts)] for r in range(3)]
    assert ranks == elastic
    assert sorted(s for rank in ranks for b in rank for s in b) == list(range(200))
    assert {len(b) for b in ranks[0][:3]} != {len(b) for b in ranks[0][-4:-1]}  # the budget grew


def test_a_pack_schedule_warms_up_the_sequence_length(docs_path: Path) -> None:
    loader = lt.open(docs_path).loader(batch_size=4, pack=[(0, 16), (800, 64)])
    lengths = [sum(n for _, _, n in window) for b in loader for window in b.windows]
    assert lengths[0] == 16 and lengths[-1] == 64
    assert sorted(set(lengths)) == [16, 64]


@pytest.mark.parametrize(
    "before, after",
    [
        (dict(batch_size=7, world_size=2), dict(token_budget=70, world_size=3)),
        (dict(token_budget=50, world_size=4, balance="tokens"), dict(batch_size=3, world_size=1)),
        (dict(batch_size=5, world_size=2), dict(batch_size=[(0, 2), (900, 9)], world_size=2, balance="attention")),
    ],
)
def test_a_state_goes_on_under_other_options_reading_every_sample_once(docs_path: Path, before, after) -> None:
    common = dict(shuffle=True, seed=9, elastic=True)
    read = []
    for rank in range(before["world_size"]):  # every rank reads 3 steps
        first = lt.open(docs_path).loader(rank=rank, **common, **before)
        it = iter(first)
        read += [s for _ in range(3) for s in next(it).samples.tolist()]
    state = json.loads(json.dumps(first.state_dict()))  # as saved to disk: the same on every rank
    assert [p["end"] for p in state["parts"]] == [state["batch"]] == [3 * before["world_size"]]
    for rank in range(after["world_size"]):
        loader = lt.open(docs_path).loader(rank=rank, **common, **after)
        loader.load_state_dict(state)
        read += [s for b in loader for s in b.samples.tolist()]
    assert sorted(read) == list(range(200))


@pytest.mark.parametrize(
    ("before", "after"), [({"batch_size": 5}, {"token_budget": 90}), ({"token_budget": 90}, {"batch_size": 5})]
)
def test_a_state_over_shards_goes_on_between_counting_samples_and_reading_lengths(
    shards_dir: Path, before, after
) -> None:
    """Over shards a `batch_size` loader counts samples without reading their lengths; a
    token-budget loader reads them: each takes the other's state."""
    common = dict(shuffle=True, seed=5, elastic=True)
    first = lt.open(shards_dir).loader(**common, **before)
    it = iter(first)
    read = [s for _ in range(4) for s in next(it).samples.tolist()]
    loader = lt.open(shards_dir).loader(**common, **after)
    loader.load_state_dict(json.loads(json.dumps(first.state_dict())))
    read += [s for b in loader for s in b.samples.tolist()]
    assert sorted(read) == list(range(200))


def test_a_packed_state_goes_on_at_another_length_reading_every_token_once(docs_path: Path) -> None:
    common = dict(batch_size=2, shuffle=True, seed=2, elastic=True)

    def pieces(batch) -> list[tuple[int, int]]:
        return [(row, first + k) for window in batch.windows for row, first, n in window for k in range(n)]

    first = lt.open(docs_path).loader(pack=32, **common)
    it = iter(first)
    read = [t for _ in range(5) for t in pieces(next(it))]
    loader = lt.open(docs_path).loader(pack=128, **common)
    loader.load_state_dict(first.state_dict())
    rest = list(loader)
    assert {len(b.values("tokens")) for b in rest[:-1]} == {256}
    read += [t for b in rest for t in pieces(b)]
    lengths = lt.open(docs_path).loader(batch_size=1, pack=None).__iter__()
    total = sum(b.tokens for b in lengths)
    assert len(read) == len(set(read))
    assert total - len(read) < 128  # at most a window's worth dropped at the end


def test_changes_that_would_read_a_sample_twice_are_refused(docs_path: Path) -> None:
    first = lt.open(docs_path).loader(batch_size=4, shuffle=True, seed=1, elastic=True)
    next(iter(first))
    state = first.state_dict()
    with pytest.raises(lt.LodTensorError, match="shuffle or its seed"):
        lt.open(docs_path).loader(batch_size=8, shuffle=True, seed=2, elastic=True).load_state_dict(state)
    with pytest.raises(lt.LodTensorError, match="shards by parts"):
        lt.open(docs_path).loader(batch_size=8, shuffle=True, seed=1).load_state_dict(state)
    with pytest.raises(lt.LodTensorError, match="schedule"):
        lt.open(docs_path).loader(batch_size=[(5, 2)])


RESUME_OTHER = """
import json, sys, warnings
import torch
from torchdata.stateful_dataloader import StatefulDataLoader
from lodtensor.torch import BatchDataset, reshard_state
warnings.simplefilter("ignore")
source, mode, path = sys.argv[1:4]
if mode == "save":
    ds = BatchDataset(source, batch_size=7, shuffle=True, seed=3, elastic=True)
    loader = StatefulDataLoader(ds, batch_size=None, num_workers=2)
    read = []
    for n, item in enumerate(loader):
        read += item["samples"].tolist()
        if n + 1 == 5:
            torch.save(loader.state_dict(), path)
            break
else:
    ds = BatchDataset(source, token_budget=[(0, 40), (1500, 120)], shuffle=True, seed=3, elastic=True)
    loader = StatefulDataLoader(ds, batch_size=None, num_workers=3)
    loader.load_state_dict(reshard_state(torch.load(path, weights_only=False), 3))
    read = [s for item in loader for s in item["samples"].tolist()]
print(json.dumps(read))
"""


def test_a_stateful_dataloader_goes_on_with_other_workers_and_options_in_a_new_process(docs_path, tmp_path):
    pytest.importorskip("torchdata")
    script = tmp_path / "resume_other.py"
    script.write_text(RESUME_OTHER)

    def run(mode):
        return run_json(script, docs_path, mode, tmp_path / "state")

    before = run("save")
    after = run("resume")
    assert len(before) == 35
    assert sorted(before + after) == list(range(200))


def test_mixture_weights_change_over_training_and_pickle(docs_path: Path, one_batch_path: Path) -> None:
    import pickle

    a, b = lt.open(docs_path), lt.open(one_batch_path)
    weights = [(0, [0.9, 0.1]), (1500, [0.1, 0.9])]
    mixture = lt.mix([a, b], weights, seed=1)
    assert mixture.weights == weights
    loader = mixture.loader(batch_size=10)
    early = [int(s) for b in list(loader)[:5] for s in b.source]
    assert early.count(0) >= 44  # 90 % of the first 50, within a sample
    again = pickle.loads(pickle.dumps(mixture)).loader(batch_size=10)
    assert [b.source.tolist() for b in again] == [b.source.tolist() for b in mixture.loader(batch_size=10)]
    late = [int(s) for b in list(mixture.loader(batch_size=10))[-5:] for s in b.source]
    assert late.count(1) >= 40
    with pytest.raises(lt.LodTensorError, match="weights"):
        lt.mix([a, b], [(0, [0.5, 0.5]), (10, [1.0])]).loader()


def test_a_mixture_with_a_weight_schedule_takes_a_batch_size_and_a_pack_schedule(
    docs_path: Path, one_batch_path: Path
) -> None:
    a, b = lt.open(docs_path), lt.open(one_batch_path)
    mixture = lt.mix([a, b], [(0, [0.8, 0.2]), (2000, [0.2, 0.8])], seed=1)
    points = [(0, 3), (1000, 8)]
    batches = list(mixture.loader(batch_size=points, shuffle=True, seed=2))
    sizes = scheduled_sizes(batches, points)
    assert sizes[0] == 3 and sizes[-2] == 8
    check_mixture_epoch(source_rows(batches), [200, 50])
    # Packed with a pack schedule: the weights switch at the tokens drawn, each window
    # counted at its own length.
    one_at_a_time = lt.mix([a, b], [(0, [1.0, 1e-4]), (1200, [1e-4, 1.0])], seed=1)
    packed = list(one_at_a_time.loader(batch_size=2, pack=[(0, 16), (400, 64)], pack_pad_last=True))
    check_weights_by_tokens_drawn(packed, 0, 1200)
    assert {len(b.values("tokens")) // len(b.windows) for b in packed} == {16, 64}
    check_each_source_epoch_once(packed, source_tokens([docs_path, one_batch_path]))


def check_weights_by_tokens_drawn(batches: list, drawn: int, point: int) -> None:
    """Each window (in the order drawn) from source 0 until `point` tokens are drawn (`drawn`
    before the first), then from source 1; both drawn."""
    sources = []
    for batch in batches:
        for k, window in zip(batch.source.tolist(), batch.windows):
            assert k == int(drawn >= point), (drawn, k)
            drawn += sum(n for _, _, n in window)
            sources.append(k)
    assert set(sources) == {0, 1}


def source_tokens(paths: list[Path]) -> list[set[tuple[int, int]]]:
    """Every token of each source, as (row, token)."""
    loaders = [lt.open(p).loader(batch_size=1) for p in paths]
    return [{(int(b.samples[0]), t) for b in loader for t in range(b.tokens)} for loader in loaders]


def check_each_source_epoch_once(batches: list, tokens: list[set[tuple[int, int]]]) -> None:
    """Each source's windows, in the order drawn, read its epochs one after the other: no
    token of one twice, and every token of one before the next starts."""
    seen: list[set[tuple[int, int]]] = [set() for _ in tokens]
    for b in batches:
        for k, window in zip(b.source.tolist(), b.windows):
            own = [(row, first + t) for row, first, n in window for t in range(n)]
            assert len(set(own)) == len(own)
            if seen[k] & set(own):
                assert seen[k] == tokens[k], (k, len(tokens[k] - seen[k]))
                seen[k] = set()
            seen[k] |= set(own)


def test_a_packed_mixture_takes_a_pack_schedule_and_goes_on_at_another_pack(
    docs_path: Path, one_batch_path: Path
) -> None:
    a, b = lt.open(docs_path), lt.open(one_batch_path)
    tokens = source_tokens([docs_path, one_batch_path])
    padded = dict(pack_pad_last=True, shuffle=True, seed=2)  # no token left out
    batches = list(lt.mix([a, b], [0.7, 0.3], seed=1).loader(batch_size=4, pack=[(0, 16), (800, 64)], **padded))
    lengths = [len(b.values("tokens")) // len(b.windows) for b in batches]
    assert lengths[0] == 16 and lengths[-1] == 64
    assert lengths == sorted(lengths)  # 16 up to the first step past 800 tokens, then 64
    check_each_source_epoch_once(batches, tokens)
    # A state at one pack length goes on at another: the windows read kept, each source's
    # tokens no window drawn from it holds packed again.
    common = dict(batch_size=3, elastic=True, **padded)
    first = lt.mix([a, b], [0.7, 0.3], seed=1).loader(pack=32, **common)
    it = iter(first)
    read = [next(it) for _ in range(5)]
    state = json.loads(json.dumps(first.state_dict()))
    loader = lt.mix([a, b], [0.7, 0.3], seed=1).loader(pack=128, **common)
    loader.load_state_dict(state)
    rest = list(loader)
    assert {len(b.values("tokens")) // len(b.windows) for b in rest} == {128}
    check_each_source_epoch_once(read + rest, tokens)
    # Into a mixture whose weights change over training, at another pack length again: from
    # where the state's batches end, the schedule's weights at the tokens drawn.
    scheduled = lt.mix([a, b], [(0, [1.0, 1e-4]), (1500, [1e-4, 1.0])], seed=1)
    loader = scheduled.loader(pack=64, **common)
    loader.load_state_dict(state)
    rest = list(loader)
    drawn = sum(n for batch in read for window in batch.windows for _, _, n in window)
    check_weights_by_tokens_drawn(rest, drawn, 1500)
    check_each_source_epoch_once(read + rest, tokens)


def source_rows(batches: list) -> list[tuple[int, int]]:
    return [(int(s), int(r)) for b in batches for s, r in zip(b.source.tolist(), b.samples.tolist())]


def check_mixture_epoch(read: list[tuple[int, int]], sizes: list[int]) -> None:
    """The epoch's samples once each: as many as the sources' epochs hold together, and each
    source's the first of its stream (whole epochs of it, then part of one)."""
    assert len(read) == sum(sizes)
    for k, size in enumerate(sizes):
        counts = Counter(r for s, r in read if s == k)
        whole = sum(counts.values()) // size
        assert all(whole <= c <= whole + 1 for c in counts.values()), (k, counts)
        assert len(counts) == size or whole == 0


def test_a_mixture_goes_on_under_other_weights_and_batch_size_reading_the_rest_once(
    docs_path: Path, one_batch_path: Path
) -> None:
    a, b = lt.open(docs_path), lt.open(one_batch_path)
    common = dict(shuffle=True, seed=3, elastic=True)
    first = lt.mix([a, b], [0.8, 0.2], seed=1).loader(batch_size=6, **common)
    it = iter(first)
    read = source_rows([next(it) for _ in range(4)])
    state = json.loads(json.dumps(first.state_dict()))  # as saved to disk
    assert "mixture" in state
    loader = lt.mix([a, b], [0.3, 0.7], seed=1).loader(token_budget=120, **common)
    loader.load_state_dict(state)
    rest = source_rows(list(loader))
    check_mixture_epoch(read + rest, [200, 50])  # the small source repeats
    # Without balance the batches read are the stream's first 24 samples: the rest are
    # drawn by the new weights, every prefix within a sample of their share.
    assert [s for s, _ in read].count(1) in (4, 5)
    for n in range(1, len(rest) + 1):
        assert abs([s for s, _ in rest[:n]].count(1) - 0.7 * n) < 1
    with pytest.raises(lt.LodTensorError, match="the mixture's sources or its seed"):
        lt.mix([a, b], [0.3, 0.7], seed=2).loader(batch_size=6, **common).load_state_dict(state)


RESUME_MIXTURE = """
import json, sys, warnings
import torch
from torchdata.stateful_dataloader import StatefulDataLoader
import lodtensor as lt
from lodtensor.torch import BatchDataset, reshard_state
warnings.simplefilter("ignore")
a, b, mode, path = sys.argv[1:5]
if mode == "save":
    ds = BatchDataset(lt.mix([lt.open(a), lt.open(b)], [0.8, 0.2], seed=1), batch_size=7, shuffle=True, seed=3, elastic=True)
    loader = StatefulDataLoader(ds, batch_size=None, num_workers=2)
    read = []
    for n, item in enumerate(loader):
        read += list(zip(item["mixture"].tolist(), item["samples"].tolist()))
        if n + 1 == 4:
            torch.save(loader.state_dict(), path)
            break
else:
    ds = BatchDataset(lt.mix([lt.open(a), lt.open(b)], [0.3, 0.7], seed=1), batch_size=5, shuffle=True, seed=3, elastic=True)
    loader = StatefulDataLoader(ds, batch_size=None, num_workers=3)
    loader.load_state_dict(reshard_state(torch.load(path, weights_only=False), 3))
    read = [p for item in loader for p in zip(item["mixture"].tolist(), item["samples"].tolist())]
print(json.dumps(read))
"""


def test_a_stateful_dataloader_goes_on_with_a_mixture_of_other_weights_in_a_new_process(
    docs_path, one_batch_path, tmp_path
):
    pytest.importorskip("torchdata")
    script = tmp_path / "resume_mixture.py"
    script.write_text(RESUME_MIXTURE)

    def run(mode):
        return [tuple(p) for p in run_json(script, docs_path, one_batch_path, mode, tmp_path / "state")]

    before = run("save")
    after = run("resume")
    assert len(before) == 28
    check_mixture_epoch(before + after, [200, 50])
