"""Writes into zero-copy arrays (as `torch.from_numpy(batch.values(c)) -= 1` makes, torch
ignoring numpy's read-only flag): the file is mapped copy-on-write, so the writing process
lives, gets its own copy of the page, and the file keeps its bytes."""

import hashlib
import subprocess
import sys
from pathlib import Path

import numpy as np

import lodtensor as lt
# In a child: before the copy-on-write mapping, a write into a view killed the process (SIGSEGV).
CHILD = r"""
import ctypes, sys
import numpy as np
import lodtensor as lt
sys.path.insert(0, sys.argv[2])
from conftest import inside_mapping

path = sys.argv[1]
ds = lt.open(path)
batch = next(iter(ds.loader(batch_size=8)))
arrays = {
    "values": batch.values("tokens"),
    "label": batch.values("label"),
    "offsets": batch.offsets("tokens", 1),
    "row": ds.row(3).column("tokens").flatten().flatten().storage.flatten().to_numpy(),
    "file offsets": ds.offsets("tokens", 0),
}
for name, array in arrays.items():
    assert array.nbytes > 0, name
    if name in ("values", "label", "row"):
        assert inside_mapping(array, path), name
        assert not array.flags.writeable, name
    ctypes.memset(array.ctypes.data, 0, array.nbytes)  # what torch's in-place ops do
    assert not np.asarray(array).any(), name
    print(name, "written")

# One private copy of the page per process: a second array over it shows the write, a
# fresh opening of the file (a mapping of its own) does not.
again = next(iter(ds.loader(batch_size=8))).values("tokens")
assert not again.any()
fresh = next(iter(lt.open(path).loader(batch_size=8))).values("tokens")
assert fresh.any()
print("fresh mapping unchanged")
"""


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_writes_into_views_copy_the_page_and_leave_the_file(docs_path):
    before = digest(docs_path)
    expected = next(iter(lt.open(docs_path).loader(batch_size=8))).values("tokens").copy()
    run = subprocess.run(
        [sys.executable, "-c", CHILD, str(docs_path), str(Path(__file__).parent)],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, (run.returncode, run.stderr)
    assert run.stdout.count("written") == 5
    assert "fresh mapping unchanged" in run.stdout
    assert digest(docs_path) == before
    again = next(iter(lt.open(docs_path).loader(batch_size=8))).values("tokens")
    np.testing.assert_array_equal(again, expected)

