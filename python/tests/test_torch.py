"""torch: nested tensors, the training loop in examples/ and in-place ops (skipped without torch)."""

import hashlib
import json
import subprocess
import sys

import numpy as np
import pytest

import lodtensor as lt
from conftest import ROOT

torch = pytest.importorskip("torch")


def test_to_torch_nested(docs_path):
    ds = lt.open(docs_path)
    batch = next(iter(ds.loader(batch_size=5)))
    nested = batch.to_torch_nested("tokens")
    offsets = batch.offsets("tokens", 1)
    values = batch.values("tokens")
    assert nested.size(0) == len(offsets) - 1
    for i, t in enumerate(nested.unbind()):
        np.testing.assert_array_equal(t.numpy(), values[offsets[i] : offsets[i + 1]])
    documents = batch.to_torch_nested("tokens", 0)
    assert documents.size(0) == len(batch)


def test_torch_example_gives_each_sample_once_and_resumes(docs_path, tmp_path):
    script = str(ROOT / "examples" / "torch_iterable_dataset.py")

    def run(*args):
        out = subprocess.run([sys.executable, script, str(docs_path), *args], check=True, capture_output=True, text=True)
        return [json.loads(line) for line in out.stdout.splitlines()]

    lines = run("2", "2")
    epochs = [[s for line in lines if line["epoch"] == e for s in line["samples"]] for e in range(2)]
    for samples in epochs:
        assert sorted(samples) == list(range(lt.open(docs_path).num_rows))
    assert epochs[0] != epochs[1]
    # Checkpointing after every batch changes nothing; a checkpoint after 3 batches of
    # epoch 1 (saved by another process) resumes with the 4th.
    checkpoint = tmp_path / "checkpoint.pt"
    assert run("2", "2", str(checkpoint)) == lines
    first_of_epoch_1 = next(i for i, line in enumerate(lines) if line["epoch"] == 1)
    subprocess.run(
        [sys.executable, "-c", f"""
import torch, sys
sys.path.insert(0, {str(ROOT / "examples")!r})
from torchdata.stateful_dataloader import StatefulDataLoader
from torch_iterable_dataset import BatchDataset
ds = BatchDataset({str(docs_path)!r}, collate="packed", token_budget=256, shuffle=True, seed=1)
ds.set_epoch(1)
loader = StatefulDataLoader(ds, batch_size=None, num_workers=2)
it = iter(loader)
for _ in range(3):
    next(it)
torch.save({{"epoch": 1, "loader": loader.state_dict()}}, {str(checkpoint)!r})
"""],
        check=True,
    )
    assert run("2", "2", str(checkpoint)) == lines[first_of_epoch_1 + 3 :]


def test_in_place_torch_ops_on_zero_copy_values_leave_the_process_and_the_file(docs_path):
    # torch ignores numpy's read-only flag: the write lands in this process's copy-on-write
    # page, never in the file (a read-only shared mapping died with SIGSEGV here).
    before = hashlib.sha256(docs_path.read_bytes()).hexdigest()
    code = f"""
import warnings
import numpy as np, torch, lodtensor as lt
ds = lt.open({str(docs_path)!r})
batch = next(iter(ds.loader(batch_size=5)))
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    t = torch.from_numpy(batch.values("tokens"))
original = t.clone()
t -= 1
nested = batch.to_torch_nested("tokens")
nested.mul_(2)
assert torch.equal(t, (original - 1) * 2)  # one copy of the values in this process: views
fresh = next(iter(lt.open({str(docs_path)!r}).loader(batch_size=5))).values("tokens")
np.testing.assert_array_equal(fresh, original.numpy())
print("alive")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "alive"
    assert hashlib.sha256(docs_path.read_bytes()).hexdigest() == before
