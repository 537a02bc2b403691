"""docs/pretraining.md, executed: its Python blocks run in order in a fresh directory with a
small corpus, against moto's S3 server on 127.0.0.1 (the page's DATASET_URL and AWS_*
variables), so the walk it shows — tokenizer, tokenize into the bucket, a two-rank DDP run
with packed batches, stopped and resumed on another number of workers — stays true."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("moto")
pytest.importorskip("tokenizers")
if os.environ.get("LODTENSOR_REQUIRE_PYTHON") != "1":
    pytest.importorskip("torch")

from s3_server import S3Server  # noqa: E402

PAGE = Path(__file__).resolve().parents[2] / "docs" / "pretraining.md"


def corpus(directory: Path) -> None:
    """Text documents: this package's own Python sources and docs, cut into files of a few KB."""
    root = Path(__file__).resolve().parents[2]
    texts = [p.read_text() for p in sorted((root / "python").rglob("*.py")) + sorted((root / "docs").glob("*.md"))]
    directory.mkdir()
    for i, text in enumerate(texts):
        (directory / f"doc{i:03}.txt").write_text(text)


def test_the_pretraining_page_runs_as_written(tmp_path):
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(), re.S)
    assert len(blocks) == 4, "the page's walk: tokenizer, tokenize, the script, the runs"
    corpus(tmp_path / "corpus")
    server = S3Server()
    try:
        bucket = "walk"
        server.client().create_bucket(Bucket=bucket)
        options = server.storage_options()
        env = {
            **os.environ,
            "DATASET_URL": f"s3://{bucket}/tokens/",
            "AWS_ENDPOINT_URL": server.endpoint,
            "AWS_ACCESS_KEY_ID": options["aws_access_key_id"],
            "AWS_SECRET_ACCESS_KEY": options["aws_secret_access_key"],
        }
        script = tmp_path / "walk.py"
        script.write_text("\n".join(blocks))
        done = subprocess.run(
            [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, done.stdout + done.stderr
    finally:
        server.stop()
    steps = re.findall(r"step (\d+) loss", done.stdout)
    assert steps == ["10", "20"], done.stdout  # stopped at 10, resumed to 20
    assert (tmp_path / "checkpoint.pt").exists()
