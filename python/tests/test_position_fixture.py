"""Loader states saved before the loader's storage became a trait resume with the same
batches: `tests/fixtures/position/` (made at commit bb7cd72 by its `make_fixture.rs`) holds
the data, the positions after the second batch of epoch 1, and the samples of the two
batches the old build gave next. A state dict is that position's JSON as a dict (what
`Loader.state_dict()` returned then and returns now)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import lodtensor as lt

FIXTURE = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "position"

# The Python spelling of each loader of `positions.json`.
OPTIONS: dict[str, tuple[str, dict[str, Any]]] = {
    "file, batch 5, shuffle 11": ("docs.arrow", dict(batch_size=5, shuffle=True, seed=11)),
    "file, 40 tokens a batch by tokens level 0, 3 quantile buckets, shuffle 5": (
        "docs.arrow",
        dict(token_budget=40, length_column="tokens", level=0, buckets=3, shuffle=True, seed=5),
    ),
    "shards, lazy, batch 4, windowed shuffle 3 of 8 rows in windows of 2": (
        "shards",
        dict(lazy_shards=True, batch_size=4, shuffle=True, seed=3, chunk_rows=8, window=2),
    ),
    "shards, batch 6, drop last, chunk shuffle 9 of 10 rows": (
        "shards",
        dict(batch_size=6, drop_last=True, shuffle=True, seed=9, chunk_rows=10),
    ),
}

SAVED = json.loads((FIXTURE / "positions.json").read_text())


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the fixture's data (a reader never writes to the fixture)."""
    dir = tmp_path_factory.mktemp("position")
    shutil.copy(FIXTURE / "docs.arrow", dir / "docs.arrow")
    shutil.copytree(FIXTURE / "shards", dir / "shards")
    return dir


@pytest.mark.parametrize("case", SAVED, ids=[c["loader"] for c in SAVED])
def test_a_state_saved_before_the_row_store_resumes_with_the_same_batches(data: Path, case: dict) -> None:
    path, options = OPTIONS[case["loader"]]
    loader = lt.open(data / path).loader(**options)
    loader.load_state_dict(case["position"])
    state = loader.state_dict()
    assert {k: state[k] for k in ("epoch", "batch", "fingerprint")} == case["position"]
    it = iter(loader)
    got = [next(it).samples.tolist() for _ in case["next_samples"]]
    assert got == case["next_samples"]
