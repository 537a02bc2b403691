"""Balanced global steps (`balance=`, `attention_weight=`): `batch.cost` as the planner
counted it, recomputed here from the batch's lengths (or its pieces and `cu_seqlens`),
every sample once over the ranks, the options' errors, and the same options through
`lt.mix(...).loader` and `lodtensor.torch.BatchDataset` with two workers."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pytest

import lodtensor as lt

W = 1e-3  # a weight large enough that n² counts at these lengths


def token_table(lengths) -> pa.Table:
    offsets = pa.array(np.r_[0, np.cumsum(lengths)], pa.int64())
    ids = pa.array(np.arange(int(np.sum(lengths)), dtype=np.int32))
    return pa.table({"tokens": pa.LargeListArray.from_arrays(offsets, ids)})


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    # Log-normal lengths, median 40, σ 1.0, clipped to 1..200: a long tail.
    rng = np.random.default_rng(11)
    lengths = np.clip(rng.lognormal(np.log(40), 1.0, 400).astype(np.int64), 1, 200)
    path = tmp_path_factory.mktemp("balance") / "docs.arrow"
    lt.write(path, token_table(lengths), batch_bytes=4096)
    return path, lengths


def cost(lengths, w):
    n = np.asarray(lengths, dtype=np.float64)
    return float(np.sum(n + w * n * n))


@pytest.mark.parametrize("options", [dict(token_budget=300), dict(batch_size=4)])
def test_batch_cost_is_the_planners_sum(corpus, options):
    path, lengths = corpus
    ds = lt.open(path)
    for balance, w in [("attention", W), ("tokens", 0.0), (None, 0.0)]:
        weight = {} if balance != "attention" else {"attention_weight": w}
        seen = 0
        for batch in ds.loader(**options, balance=balance, **weight, shuffle=True, seed=2):
            rows = np.asarray(batch.samples)
            assert batch.cost == pytest.approx(cost(lengths[rows], w), rel=1e-12)
            if w == 0.0:
                assert batch.cost == batch.tokens
            seen += len(rows)
        assert seen == len(lengths)


def test_the_default_weight_is_a_causal_decoder_of_width_4096(corpus):
    path, lengths = corpus
    batch = next(iter(lt.open(path).loader(batch_size=8, balance="attention")))
    w = 1 / (12 * 4096)
    assert batch.cost == pytest.approx(cost(lengths[np.asarray(batch.samples)], w), rel=1e-12)


def test_ranks_read_every_sample_once_in_balanced_steps(corpus):
    path, lengths = corpus
    ds = lt.open(path)
    world = 3
    for elastic in (False, True):
        ranks = [
            list(ds.loader(token_budget=300, balance="attention", attention_weight=W, rank=r, world_size=world, elastic=elastic))
            for r in range(world)
        ]
        rows = np.concatenate([np.asarray(b.samples) for rank in ranks for b in rank])
        assert sorted(rows.tolist()) == list(range(len(lengths)))
        # Steps but the last three: each rank's batch within 5 % of the step's mean.
        steps = min(len(r) for r in ranks)
        costs = np.array([[ranks[r][s].cost for r in range(world)] for s in range(steps)])
        ratios = costs.max(axis=1) / costs.mean(axis=1)
        assert ratios[: max(steps - 3, 0)].max(initial=1.0) <= 1.05


def test_packed_batches_cost_their_pieces_and_padding(corpus):
    path, _ = corpus
    ds = lt.open(path)
    for batch in ds.loader(pack=64, batch_size=2, balance="attention", attention_weight=W, pack_pad_last=True):
        pieces, offsets = batch.pieces()
        n = pieces[:, 2]
        cu = np.asarray(batch.cu_seqlens("tokens"))
        windows = len(offsets) - 1
        assert int(np.diff(cu).sum()) == windows * 64
        assert batch.cost == pytest.approx(cost(n, W) + windows * 64 - int(n.sum()), rel=1e-12)


def test_bad_balance_options_are_named(corpus):
    path, _ = corpus
    ds = lt.open(path)
    with pytest.raises(ValueError, match="balance"):
        ds.loader(balance="flops")
    for bad in [dict(attention_weight=1e-5), dict(balance="tokens", attention_weight=1e-5)]:
        with pytest.raises(lt.ArgumentError, match="attention_weight"):
            ds.loader(**bad)
    with pytest.raises(lt.ArgumentError, match="attention_weight"):
        ds.loader(balance="attention", attention_weight=-1.0)
    with pytest.raises(lt.ArgumentError, match="buckets"):
        ds.loader(balance="tokens", buckets=[10])


def test_a_mixture_takes_the_options(corpus):
    path, lengths = corpus
    mixture = lt.mix([lt.open(path), lt.open(path)], [0.5, 0.5], seed=1)
    batches = list(mixture.loader(token_budget=300, balance="attention", attention_weight=W))
    assert sum(len(b.samples) for b in batches) == 2 * len(lengths)
    assert all(b.cost >= b.tokens for b in batches)


def pieces_and_cost(batch):
    """A BatchDataset collate: the batch's pieces, `cu_seqlens` and cost."""
    pieces, offsets = batch.pieces()
    return {
        "pieces": pieces,
        "offsets": offsets,
        "cu_seqlens": np.asarray(batch.cu_seqlens("tokens")),
        "cost": np.array([batch.cost]),
    }


def test_a_packed_batch_dataset_with_two_workers(corpus):
    if os.environ.get("LODTENSOR_REQUIRE_PYTHON") == "1":
        import torch  # noqa: F401
    else:
        pytest.importorskip("torch")
    from torch.utils.data import DataLoader

    from lodtensor.torch import BatchDataset

    path, _ = corpus
    options = dict(pack=64, batch_size=2, balance="attention", attention_weight=W, shuffle=True, seed=3)
    ds = BatchDataset(path, collate=pieces_and_cost, **options)
    items = list(DataLoader(ds, batch_size=None, num_workers=2))
    assert items
    for item in items:
        n = item["pieces"][:, 2].numpy()
        windows = len(item["offsets"]) - 1
        assert int(np.diff(item["cu_seqlens"].numpy()).sum()) == windows * 64
        expected = cost(n, W) + windows * 64 - int(n.sum())
        assert float(item["cost"][0]) == pytest.approx(expected, rel=1e-12)
    # The two workers take their turns in the same balanced plan as two ranks would.
    plan = [list(lt.open(path).loader(**options, rank=r, world_size=2)) for r in range(2)]
    costs = [b.cost for turn in zip(*plan) for b in turn] + [b.cost for b in plan[0][len(plan[1]) :]]
    assert [float(i["cost"][0]) for i in items] == pytest.approx(costs, rel=1e-12)
