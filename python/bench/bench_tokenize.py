"""Tokenize a corpus of text files (one document each) into token-id shards, three ways,
with the same byte-level BPE tokenizer and every core:

- ``lt.tokenize(corpus, out, tokenizer=...)``;
- the loop a user writes without it: read the files, ``tokenizer.encode_batch`` (the
  ``tokenizers`` package, parallel) by chunks of 1,024 documents, the end-of-text id
  appended, one ``lt.write_shards`` of the ids;
- LitData's ``optimize()`` (``--litdata-python``: a Python with ``litdata``, ``tokenizers``
  and ``numpy``, in its own venv), one worker per core, each document encoded by
  ``tokenizer.encode`` and yielded as a ``uint16`` array.

The first two are checked equal document by document. A tokenizer is trained on the corpus
(byte-level BPE, ``--vocab`` ids) when ``--tokenizer`` does not exist yet.

    python python/bench/bench_tokenize.py --corpus /tmp/corpus --tokenizer /tmp/tok.json \\
        --out /tmp/tok-out [--litdata-python /tmp/litvenv/bin/python]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

import lodtensor as lt

LITDATA = r"""
import os, sys, time
import numpy as np
from litdata import optimize
from tokenizers import Tokenizer

files, out, tok_path = open(sys.argv[1]).read().split("\n"), sys.argv[2], sys.argv[3]
tok = Tokenizer.from_file(tok_path)
eos = tok.token_to_id("<|endoftext|>")

def encode(path):
    with open(path, encoding="utf-8", newline="") as f:  # the bytes as they are (CRLF kept)
        ids = tok.encode(f.read()).ids
    yield np.asarray(ids + [eos], dtype=np.uint16)

if __name__ == "__main__":
    start = time.perf_counter()
    optimize(fn=encode, inputs=files, output_dir=out, num_workers=os.cpu_count(), chunk_bytes="64MB")
    print(time.perf_counter() - start)
"""


def files_of(corpus: Path) -> list[str]:
    return sorted(str(p) for p in corpus.rglob("*") if p.is_file() and not p.name.startswith("."))


def train(files: list[str], path: Path, vocab: int) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "data" / "tokenize"))
    from make_tokenizer import train as train_bpe

    texts = (open(f, encoding="utf-8").read() for f in files)
    train_bpe(texts, vocab_size=vocab).save(str(path))


def loop(files: list[str], out: Path, tok_path: Path) -> None:
    """What a user writes without lt.tokenize."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tok_path))
    eos = tok.token_to_id("<|endoftext|>")
    ids: list[np.ndarray] = []
    for start in range(0, len(files), 1024):
        # newline="": the text as its bytes say (a CRLF file keeps its CRs, as lt.tokenize reads it).
        texts = [open(f, encoding="utf-8", newline="").read() for f in files[start : start + 1024]]
        ids.extend(np.asarray(e.ids + [eos], dtype=np.uint16) for e in tok.encode_batch(texts))
    lengths = np.fromiter((len(a) for a in ids), dtype=np.int64, count=len(ids))
    offsets = pa.array(np.r_[0, np.cumsum(lengths)], pa.int64())
    tokens = pa.LargeListArray.from_arrays(offsets, pa.array(np.concatenate(ids)))
    lt.write_shards(out, pa.table({"tokens": tokens, "source": files}))


def timed(label: str, fn) -> float:
    start = time.perf_counter()
    fn()
    seconds = time.perf_counter() - start
    print(f"{label}: {seconds:.2f} s", flush=True)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--tokenizer", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--vocab", type=int, default=16384)
    parser.add_argument("--litdata-python", default=None)
    args = parser.parse_args()
    files = files_of(args.corpus)
    size = sum(os.path.getsize(f) for f in files)
    if not args.tokenizer.exists():
        timed("train the tokenizer", lambda: train(files, args.tokenizer, args.vocab))
    print(f"{len(files)} documents, {size / 1e6:.1f} MB, {os.cpu_count()} cores", flush=True)
    shutil.rmtree(args.out, ignore_errors=True)
    args.out.mkdir(parents=True)
    ours = timed("lt.tokenize", lambda: lt.tokenize(args.corpus, args.out / "lt", tokenizer=args.tokenizer))
    theirs = timed(
        "encode_batch + lt.write_shards", lambda: loop(files, args.out / "loop", args.tokenizer)
    )
    a = lt.open(args.out / "lt").to_pyarrow().column("tokens")
    b = lt.open(args.out / "loop").to_pyarrow().column("tokens")
    assert a.to_pylist() == b.to_pylist(), "lt.tokenize and encode_batch disagree"
    tokens = len(pa.chunked_array(a.chunks).combine_chunks().values)
    print(f"{tokens / 1e6:.2f} M tokens, equal ids; lt.tokenize {theirs / ours:.2f}x the loop")
    if args.litdata_python:
        listing = args.out / "litdata-inputs.txt"  # the file names: too many for a command line
        listing.write_text("\n".join(files))
        script = args.out / "litdata_optimize.py"  # a file: spawned workers import `encode` from it
        script.write_text(LITDATA)
        run = subprocess.run(
            [args.litdata_python, str(script), str(listing), str(args.out / "litdata"), str(args.tokenizer)],
            capture_output=True,
            text=True,
        )
        if run.returncode != 0:
            sys.exit(run.stderr)
        litdata = float(run.stdout.strip().splitlines()[-1])
        print(f"litdata optimize(): {litdata:.2f} s; lt.tokenize {litdata / ours:.2f}x")


if __name__ == "__main__":
    main()
