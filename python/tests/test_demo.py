"""lt.demo and `python -m lodtensor demo`: the command line's demo files, from Python."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lodtensor as lt
from conftest import cargo_built

def cli() -> Path:
    return cargo_built("lodtensor", "-p", "lodtensor-cli")


def test_demo_writes_the_command_lines_files(tmp_path):
    files = lt.demo(tmp_path / "py", docs=150)
    subprocess.run(
        [str(cli()), "demo", "--out", str(tmp_path / "rs"), "--docs", "150"],
        check=True,
        capture_output=True,
    )
    ours = (tmp_path / "py" / "documents.arrow").read_bytes()
    assert ours == (tmp_path / "rs" / "documents.arrow").read_bytes()
    assert pq.read_table(files["parquet"]).equals(pq.read_table(tmp_path / "rs" / "documents.parquet"))
    ds = lt.open(files["arrow"])
    assert ds.num_rows == 150 and ds.column_names == ["tokens", "label"]


def test_demo_keeps_what_is_not_a_demo(tmp_path):
    (tmp_path / "mine.txt").write_text("keep")
    with pytest.raises(lt.ArgumentError, match="not a previous demo"):
        lt.demo(tmp_path, docs=3)
    assert os.listdir(tmp_path) == ["mine.txt"]
    again = tmp_path / "d"
    lt.demo(again, docs=3)
    lt.demo(again, docs=4)  # a previous demo's directory is written over
    assert lt.open(again / "documents.arrow").num_rows == 4


def test_python_m_lodtensor_demo(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "lodtensor", "demo", str(tmp_path / "x"), "--docs", "5"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert "wrote 5 documents" in out
    assert pa.table(lt.open(tmp_path / "x" / "documents.arrow")).num_rows == 5
    bad = subprocess.run(
        [sys.executable, "-m", "lodtensor", "demo", str(tmp_path / "x" / "documents.arrow")],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "not a directory" in bad.stderr


def test_the_package_installs_the_lodtensor_command(tmp_path, docs_path):
    # The console script is the command-line tool itself (lodtensor_cli::run).
    command = Path(sys.executable).parent / "lodtensor"
    assert command.exists(), "pyproject's [project.scripts] installs it"
    done = subprocess.run([command, "info", docs_path], capture_output=True, text=True)
    assert done.returncode == 0 and "tokens" in done.stdout, done.stderr
    done = subprocess.run([command, "validate", tmp_path / "missing.arrow"], capture_output=True, text=True)
    assert done.returncode == 3 and "lodtensor:" in done.stderr  # I/O, as the binary's exit codes
    done = subprocess.run([command, "--nope"], capture_output=True, text=True)
    assert done.returncode == 2 and "--nope" in done.stderr
    assert subprocess.run([command, "--version"], capture_output=True, text=True).stdout.startswith("lodtensor ")
