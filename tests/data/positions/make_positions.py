"""Writes tests/data/positions/: a small sharded dataset and, for several loader options,
a state saved after two batches of epoch 1 and the samples of the three batches after it.
Run once by a build whose positions later builds must resume
(python/tests/test_loader.py::test_positions_saved_by_an_earlier_build_resume_the_same_batches):

    .venv/bin/python tests/data/positions/make_positions.py
"""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "python" / "tests"))

import lodtensor as lt  # noqa: E402
from conftest import documents  # noqa: E402

out = ROOT / "tests" / "data" / "positions"
lt.write_shards(out / "docs", documents(60, seed=11), shard_rows=16, mode="overwrite")
OPTIONS = [
    {"batch_size": 4, "shuffle": True, "seed": 3},
    {"token_budget": 60, "shuffle": True, "seed": 5},
    {"batch_size": 3, "buckets": [5, 20], "shuffle": True, "seed": 1, "rank": 1, "world_size": 3},
    {"batch_size": 2, "pack": 16, "shuffle": True, "seed": 2},
    {"batch_size": 5, "shuffle": True, "seed": 7, "chunk_rows": 8, "window": 16},
]
cases = []
for options in OPTIONS:
    loader = lt.open(out / "docs").loader(**options)
    loader.set_epoch(1)
    it = iter(loader)
    next(it); next(it)
    state = loader.state_dict()
    following = [next(it).samples.tolist() for _ in range(3)]
    cases.append({"options": options, "state": state, "next": following})
(out / "positions.json").write_text(json.dumps(cases, indent=1) + "\n")
(out / "docs" / "_lodtensor.lock").unlink(missing_ok=True)
