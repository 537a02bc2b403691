"""Hostile files: changed while mapped, FIFOs, links out of a dataset directory."""

import json
import os
import shutil

import pytest

import lodtensor as lt


def test_a_file_truncated_in_place_raises_instead_of_crashing(docs_path, tmp_path):
    path = tmp_path / "docs.arrow"
    shutil.copy(docs_path, path)
    ds = lt.open(path)
    ds.sample(0)
    # A writer that ignores the shared lock truncates the file in place.
    with open(path, "r+b") as out:
        out.truncate(64)
    # A row looks at the file once per 64 calls (or 10 ms): noticed within 64 calls.
    with pytest.raises(lt.LodTensorError, match="changed in place"):
        for _ in range(64):
            ds.row(len(ds) - 1)
    with pytest.raises(lt.LodTensorError, match="changed in place"):
        ds.to_pyarrow()


def test_a_fifo_manifest_or_shard_raises_at_once(shards_dir, tmp_path):
    fifo_manifest = tmp_path / "manifest_fifo"
    fifo_manifest.mkdir()
    os.mkfifo(fifo_manifest / "_lodtensor.json")
    with pytest.raises(OSError, match="FIFO"):
        lt.open(fifo_manifest)

    copy = tmp_path / "shard_fifo"
    shutil.copytree(shards_dir, copy)
    manifest = json.loads((copy / "_lodtensor.json").read_text())
    shard = copy / manifest["shards"][1]["file"]
    shard.unlink()
    os.mkfifo(shard)
    with pytest.raises(OSError, match="FIFO"):
        lt.open(copy).validate()


def test_a_shard_linked_from_outside_the_directory_raises(shards_dir, tmp_path):
    copy = tmp_path / "linked"
    shutil.copytree(shards_dir, copy)
    manifest = json.loads((copy / "_lodtensor.json").read_text())
    shard = copy / manifest["shards"][0]["file"]
    outside = tmp_path / "outside.arrow"
    shutil.move(shard, outside)
    shard.symlink_to(outside)
    with pytest.raises(PermissionError, match="symbolic link"):
        lt.open(copy).validate()
