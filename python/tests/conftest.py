"""Fixtures: small dataset files written through `lodtensor.write`, and the Rust loader's
batches for the same options (from `examples/loader_batches.rs`)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import lodtensor as lt

ROOT = Path(__file__).resolve().parents[2]
DIM = 4


def documents(n_docs: int, seed: int) -> pa.Table:
    """`tokens`: documents -> sentences -> tokens of f32[4] (some empty documents and
    sentences); `label`: one int64 per document; `ids`: one level of int32 per document."""
    rng = np.random.default_rng(seed)
    sentences = rng.integers(0, 5, n_docs)
    tokens = rng.integers(0, 12, int(sentences.sum()))
    values = rng.standard_normal(int(tokens.sum()) * DIM, dtype=np.float32)
    elements = pa.FixedSizeListArray.from_arrays(pa.array(values), DIM)
    sents = pa.LargeListArray.from_arrays(pa.array(np.r_[0, np.cumsum(tokens)], pa.int64()), elements)
    docs = pa.LargeListArray.from_arrays(pa.array(np.r_[0, np.cumsum(sentences)], pa.int64()), sents)
    id_lengths = rng.integers(1, 6, n_docs)
    ids = pa.LargeListArray.from_arrays(
        pa.array(np.r_[0, np.cumsum(id_lengths)], pa.int64()),
        pa.array(rng.integers(0, 1000, int(id_lengths.sum())), pa.int32()),
    )
    label = pa.array(np.arange(n_docs, dtype=np.int64) * 10)
    return pa.table({"tokens": docs, "label": label, "ids": ids})


@pytest.fixture(scope="session")
def docs_path(tmp_path_factory) -> Path:
    """200 documents in several record batches."""
    path = tmp_path_factory.mktemp("data") / "docs.arrow"
    lt.write(path, documents(200, seed=1), batch_bytes=4096)
    return path


@pytest.fixture(scope="session")
def one_batch_path(tmp_path_factory) -> Path:
    """50 documents in one record batch."""
    path = tmp_path_factory.mktemp("data") / "one.arrow"
    lt.write(path, documents(50, seed=2))
    return path


def cargo_built(name: str, *build: str) -> Path:
    """The debug build's `name` (`lodtensor`, `examples/loader_batches`) in cargo's target
    directory (`CARGO_TARGET_DIR`, else the repository's `target/`), built with
    `cargo build --quiet *build` when it is not there yet."""
    target = Path(os.environ.get("CARGO_TARGET_DIR", "target"))
    path = (ROOT / target / "debug" / name).resolve()
    if not path.exists():
        subprocess.run(["cargo", "build", "--quiet", *build], cwd=ROOT, check=True)
    return path


def _loader_batches_binary() -> Path:
    exe = os.environ.get("LODTENSOR_LOADER_BATCHES")
    if exe:
        return Path(exe)
    return cargo_built("examples/loader_batches", "--example", "loader_batches")


@pytest.fixture(scope="session")
def rust_batches():
    """`rust_batches(path, options, epochs)`: the Rust loader's batches as dicts."""
    exe = _loader_batches_binary()

    def run(path, options: dict, epochs: int) -> list[dict]:
        out = subprocess.run(
            [str(exe), str(path), json.dumps(options), str(epochs)],
            check=True,
            capture_output=True,
            text=True,
        )
        return [json.loads(line) for line in out.stdout.splitlines()]

    return run


def mapping_of(path) -> list[tuple[int, int]]:
    """The address ranges where this process maps the file at `path` (from /proc/self/maps)."""
    target = os.path.realpath(path)
    ranges = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split(maxsplit=5)
            if len(fields) == 6 and fields[5].strip() == target:
                start, end = (int(x, 16) for x in fields[0].split("-"))
                ranges.append((start, end))
    return ranges


def mapping_holding(address: int) -> str:
    """The line of /proc/self/maps whose mapping holds `address`."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
            if lo <= address < hi:
                return line
    raise AssertionError(f"not mapped: {address:#x}")


def inside_mapping(array: np.ndarray, path) -> bool:
    """Whether every byte of `array` lies inside a mapping of the file at `path`."""
    start = array.__array_interface__["data"][0]
    end = start + array.nbytes
    return any(lo <= start and end <= hi for lo, hi in mapping_of(path))


@pytest.fixture(scope="session")
def shards_dir(tmp_path_factory) -> Path:
    """The 200 documents of `docs_path` as a sharded dataset: 7 shards of at most 30 rows,
    each of several record batches."""
    path = tmp_path_factory.mktemp("data") / "docs"
    lt.write_shards(path, documents(200, seed=1), shard_rows=30, batch_bytes=4096)
    return path


def ray_init() -> None:
    """Starts the tests' local Ray cluster: 2 CPUs, no dashboard, a small object store, and
    workers at the tests' priority (Ray's default niceness of 15 starves them whenever
    anything else runs on the machine, a build beside the tests for one)."""
    import ray

    os.environ.setdefault("RAY_worker_niceness", "0")  # read by the raylet ray.init starts
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=256 << 20,
             log_to_driver=False, configure_logging=False)
    ray.data.DataContext.get_current().enable_progress_bars = False


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "ray: needs Ray Data and starts a local Ray cluster (skip with -m 'not ray')"
    )
