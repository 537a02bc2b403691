"""HuggingFace datasets beside lodtensor: converting an arrow-backed, cached
`datasets.Dataset` (load_from_disk: memory-mapped) to a lodtensor file and to shards, against
`Dataset.save_to_disk` of the same data; then one epoch of batches through lodtensor's loader
against HF's own `with_format("numpy")` and `with_format("arrow")` iteration.

    python python/bench/bench_hf.py [--mib 1024] [--batch-size 64] [--repeat 3] [--dir DIR]

The data: `--mib` MiB of documents of 1-40 tokens of float32[64] (HF features
`List(List(Value("float32"), length=64))`), an int64 `label` and a string `id` per document,
made with `Dataset.from_generator` (so HF writes its own cache file) and reloaded with
`save_to_disk` + `load_from_disk`. Files in the page cache (one untimed pass each first),
contenders in turns whose order rotates (bench_loader.race), best of `--repeat`. lodtensor's
writes are atomic and durable (each file fsynced, then renamed); `save_to_disk` leaves its
files in the page cache, so it is also timed followed by an fsync of its files. An epoch is every batch of
`--batch-size` documents in order, with each batch's token values as a numpy
[tokens, 64] float32 array (lodtensor: a view of the mapping; HF numpy: its arrays; HF
arrow: the flattened values of the pyarrow column, as numpy). Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile

import numpy as np
import pyarrow as pa

import datasets
import lodtensor as lt
from bench_loader import race

DIM = 64


def make(base: str, mib: int) -> datasets.Dataset:
    rng = np.random.default_rng(1)
    mean_tokens = 20.5
    docs = max(1, int(mib * 2**20 / (mean_tokens * DIM * 4)))
    features = datasets.Features(
        {
            "tokens": datasets.List(datasets.List(datasets.Value("float32"), length=DIM)),
            "label": datasets.Value("int64"),
            "id": datasets.Value("string"),
        }
    )

    def rows():
        for start in range(0, docs, 1000):
            n = min(1000, docs - start)
            lengths = rng.integers(1, 41, n)
            values = rng.standard_normal((int(lengths.sum()), DIM), dtype=np.float32)
            cuts = np.cumsum(lengths)[:-1]
            for i, doc in enumerate(np.split(values, cuts)):
                yield {"tokens": doc, "label": start + i, "id": f"doc-{start + i:08}"}

    built = datasets.Dataset.from_generator(rows, features=features, cache_dir=os.path.join(base, "cache"))
    built.save_to_disk(os.path.join(base, "source"))
    return datasets.load_from_disk(os.path.join(base, "source"))


def fresh(path: str) -> str:
    if os.path.isdir(path):
        shutil.rmtree(path)
    elif os.path.exists(path):
        os.remove(path)
    return path


def synced(directory: str) -> None:
    """fsync every file under `directory` (what lodtensor's atomic writes do before the
    rename), so that the save is on disk as lodtensor's files are."""
    for root, _, names in os.walk(directory):
        for name in names:
            fd = os.open(os.path.join(root, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


def lodtensor_epoch(path: str, batch_size: int) -> int:
    tokens = 0
    for batch in lt.open(path).loader(batch_size=batch_size):
        tokens += len(batch.values("tokens"))
    return tokens


def hf_numpy_epoch(hf: datasets.Dataset, batch_size: int) -> int:
    tokens = 0
    for batch in hf.with_format("numpy").iter(batch_size=batch_size):
        # Ragged documents: numpy gives an object array of [n, 64] arrays.
        tokens += sum(len(doc) for doc in batch["tokens"])
    return tokens


def hf_arrow_epoch(hf: datasets.Dataset, batch_size: int) -> int:
    tokens = 0
    for batch in hf.with_format("arrow").iter(batch_size=batch_size):
        values = batch.column("tokens").combine_chunks().flatten()
        tokens += len(values.flatten().to_numpy(zero_copy_only=False)) // DIM
    return tokens


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mib", type=int, default=1024)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", default=None)
    args = parser.parse_args()
    base = args.dir or tempfile.mkdtemp(prefix="bench_hf-")
    hf = make(base, args.mib)
    size = sum(f.stat().st_size for f in os.scandir(os.path.join(base, "source")) if f.name.endswith(".arrow"))
    out = {k: os.path.join(base, k) for k in ["file.arrow", "shards", "saved"]}
    converts = race(
        {
            "lt.from_huggingface → file": lambda: lt.from_huggingface(hf, fresh(out["file.arrow"])),
            "lt.from_huggingface → shards": lambda: lt.from_huggingface(hf, fresh(out["shards"]) + "/"),
            "Dataset.save_to_disk": lambda: hf.save_to_disk(fresh(out["saved"])),
            "Dataset.save_to_disk + fsync": lambda: (
                hf.save_to_disk(fresh(out["saved"] + "-synced")),
                synced(out["saved"] + "-synced"),
            ),
        },
        args.repeat,
    )
    contenders = {
        "lodtensor loader (file)": lambda: lodtensor_epoch(out["file.arrow"], args.batch_size),
        "lodtensor loader (shards)": lambda: lodtensor_epoch(out["shards"], args.batch_size),
        'HF with_format("numpy").iter': lambda: hf_numpy_epoch(hf, args.batch_size),
        'HF with_format("arrow").iter': lambda: hf_arrow_epoch(hf, args.batch_size),
    }
    for run in contenders.values():
        run()  # page cache
    epochs = race(contenders, args.repeat)
    tokens = {result for _, result in epochs.values()}
    assert len(tokens) == 1, f"the contenders disagree on the tokens: {epochs}"
    mib = size / 2**20
    print(f"{len(hf)} documents, {tokens.pop()} tokens of float32[64], HF's file {mib:.0f} MiB, "
          f"batch size {args.batch_size}, best of {args.repeat}\n")
    print("| conversion | seconds | MiB/s | vs. save_to_disk |\n|---|---|---|---|")
    base_time = converts["Dataset.save_to_disk"][0]
    for name, (t, _) in converts.items():
        print(f"| {name} | {t:.2f} | {mib / t:.0f} | {base_time / t:.2f}× |")
    print("\n| one epoch | seconds | batches/s | vs. HF numpy |\n|---|---|---|---|")
    n_batches = -(-len(hf) // args.batch_size)
    numpy_time = epochs['HF with_format("numpy").iter'][0]
    for name, (t, _) in epochs.items():
        print(f"| {name} | {t:.2f} | {n_batches / t:.0f} | {numpy_time / t:.1f}× |")
    if not args.dir:
        shutil.rmtree(base)


if __name__ == "__main__":
    main()
