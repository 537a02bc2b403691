"""lodtensor.torch.BatchDataset over a URL dataset (moto's S3): DataLoader workers hand a
view batch over as its place in the node's cache file, which the main process maps, as a
local file's; never a copy. Skipped without moto, boto3 or torch."""

from __future__ import annotations

import os

import numpy as np
import pytest

pytest.importorskip("moto")
pytest.importorskip("boto3")
torch = pytest.importorskip("torch")

import lodtensor as lt  # noqa: E402
from conftest import mapping_holding  # noqa: E402
from s3_server import s3  # noqa: E402, F401 (the fixture)
from torch.utils.data import DataLoader  # noqa: E402

from lodtensor.torch import BatchDataset  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:This DataLoader will create", "ignore:'set_vital'")


@pytest.fixture(scope="module")
def url(s3, shards_dir):
    """The 7-shard dataset of `shards_dir` in a bucket."""
    return s3.upload_dir(shards_dir, "torch", "docs")


def test_remote_view_batches_cross_as_places_in_the_cache_file(s3, url, shards_dir, tmp_path):
    cache = tmp_path / "cache"
    ds = BatchDataset(url, storage_options=s3.storage_options(), cache_dir=cache, batch_size=8)
    items = list(DataLoader(ds, batch_size=None, num_workers=2))
    assert sum(len(item["samples"]) for item in items) == 200
    # Each view batch's values lie in a mapping of a cache file in this process.
    in_cache = [" " + os.path.realpath(cache) in mapping_holding(item["tokens"]["values"].data_ptr()) for item in items]
    ranks = [lt.open(shards_dir).loader(batch_size=8, rank=r, world_size=2) for r in range(2)]
    views = sum(b.is_view for loader in ranks for b in loader)
    assert sum(in_cache) == views > 0  # the others (across record batches) gathered, in blocks
    expected = {int(b.samples[0]): b.values("tokens").copy() for b in lt.open(shards_dir).loader(batch_size=1)}
    for item in items:
        values = item["tokens"]["values"].numpy()
        np.testing.assert_array_equal(values, np.concatenate([expected[s] for s in item["samples"].tolist()]))


def test_a_remote_batch_reports_its_place_in_the_cache_file(s3, url, tmp_path):
    cache = tmp_path / "cache"
    ds = lt.open(url, storage_options=s3.storage_options(), cache_dir=cache)
    batch = next(iter(ds.loader(batch_size=4)))
    assert batch.is_view
    kind, path, dev, ino, size, mtime_ns, offset = batch.values_place("tokens")
    st = os.stat(path)
    assert kind == "file" and path.startswith(os.path.realpath(cache))
    assert (dev, ino, size, mtime_ns) == (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    values = batch.values("tokens")
    with open(path, "rb") as f:
        f.seek(offset)
        assert f.read(values.nbytes) == values.tobytes()
