"""No credential in a pickle: a dataset opened by URL with keys in `storage_options`, a
loader over it, a BatchDataset and a mixture pickle without them, and `spawn` DataLoader
workers still open the dataset (the keys go down the pipe to the child being spawned)."""

import os
import pickle

import pyarrow as pa
import pytest

pytest.importorskip("moto")
pytest.importorskip("boto3")
torch = pytest.importorskip("torch")

import lodtensor as lt  # noqa: E402
from s3_server import s3  # noqa: E402, F401 (the fixture)
from torch.utils.data import DataLoader, IterableDataset, get_worker_info  # noqa: E402

# Keys moto accepts, each spelled so that any of its bytes in a pickle are found.
KEYS = {
    "aws_access_key_id": "AKIAPICKLEDKEY000001",
    "aws_secret_access_key": "secret-never-pickled-7f3a9c",
    "aws_session_token": "session-token-never-pickled-51e2",
}


@pytest.fixture(scope="module")
def remote(s3, shards_dir):
    """The 7-shard dataset of `shards_dir` in a bucket: its URL and storage options with
    the keys."""
    url = s3.upload_dir(shards_dir, "pickles", "docs")
    return url, {**s3.storage_options(), **KEYS}


@pytest.fixture
def no_credentials_in_env(monkeypatch):
    """No AWS_* credential in this process's environment or its children's; a provider
    chain asked anyway (keys not handed over) fails on a closed local port, not off-box."""
    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_METADATA_ENDPOINT", "http://127.0.0.1:9")


def assert_no_secret(obj):
    data = pickle.dumps(obj)
    for key, value in KEYS.items():
        assert value.encode() not in data, (type(obj).__name__, key)


def test_no_remote_object_pickles_a_credential(remote, tmp_path, no_credentials_in_env):
    from lodtensor.torch import BatchDataset

    url, options = remote
    ds = lt.open(url, storage_options=options, cache_dir=tmp_path)
    mixture = lt.mix([ds, ds], [0.5, 0.5], seed=3)
    objects = [ds, mixture, BatchDataset(url, storage_options=options, cache_dir=tmp_path, batch_size=4)]
    for obj in objects:
        assert_no_secret(obj)
    # The loader does not pickle at all; if it ever does, without the keys.
    for loader in (ds.loader(batch_size=4), mixture.loader(batch_size=4)):
        try:
            assert_no_secret(loader)
        except TypeError:
            pass
    # Unpickled in this process, they open the dataset with the keys it keeps.
    back = pickle.loads(pickle.dumps(ds))
    assert back.url == url and back.row(5).equals(ds.row(5))
    assert "secret" not in repr(back)
    mixed = pickle.loads(pickle.dumps(mixture))
    assert mixed.num_rows == 400 and mixed.weights == [0.5, 0.5]
    assert [b.samples.tolist() for b in mixed.loader(batch_size=50, seed=1)] == [
        b.samples.tolist() for b in mixture.loader(batch_size=50, seed=1)
    ]


class Rows(IterableDataset):
    """Each worker's part of the batches of every source: (source, rows, the rows' table)."""

    def __init__(self, sources):
        self.sources = sources

    def __iter__(self):
        info = get_worker_info()
        for k, source in enumerate(self.sources):
            loader = source.loader(batch_size=9, rank=info.id, world_size=info.num_workers)
            for batch in loader:
                yield k, batch.samples.tolist(), batch.to_pyarrow()


def test_spawned_workers_open_the_dataset_with_the_keys_kept_out_of_the_pickle(
    remote, shards_dir, tmp_path, no_credentials_in_env
):
    url, options = remote
    ds = lt.open(url, storage_options=options, cache_dir=tmp_path)
    mixture = lt.mix([ds], [1.0], seed=2)
    loader = DataLoader(Rows([ds, mixture]), batch_size=None, num_workers=2, multiprocessing_context="spawn")
    seen = {0: [], 1: []}
    local = lt.open(shards_dir)
    for k, rows, table in loader:
        seen[k] += rows
        assert pa.Table.from_batches([table]).equals(local.to_pyarrow().take(rows)), rows
    assert sorted(seen[0]) == list(range(200))
    assert sorted(seen[1]) == list(range(200))
