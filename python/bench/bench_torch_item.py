"""The CPU a `lodtensor.torch.BatchDataset` item costs by itself, without a DataLoader:
each batch of a packed loader made into a worker's item (`_item`), pickled and rebuilt
as the main process does, in one process, on the corpus of bench_torch_lm.py. With
`--baseline`, another version of `lodtensor/torch.py` (such as `git show
main:python/lodtensor/torch.py > /tmp/torch_main.py`) is measured beside this one, in
turn, on the same batches.

    python python/bench/bench_torch_item.py [--tokens 2_000_000] [--batches 150]
                                            [--repeat 5] [--baseline /tmp/torch_main.py]

Prints, for 8 and 64 windows of 257 int32 ids a batch, with `columns=["tokens"]` and
`["tokens", "source"]` (a string side column), the best of `--repeat` passes in CPU µs an
item (`time.process_time`), the versions' passes alternating.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import pickle
import shutil
import tempfile
import time

from bench_torch_lm import PACK, corpus  # python/bench, the script's own directory

import lodtensor as lt
import lodtensor.torch


def per_item(modules: list, path: str, batch: int, columns: list[str], batches: int, repeat: int) -> list[float]:
    """Each module's best pass, in CPU seconds an item over the epoch's first `batches`
    batches; the modules' passes alternate, so that all see the same load."""
    runs = []
    for module in modules:
        ds = module.BatchDataset(
            path, columns=columns, pack=PACK, pack_extra_token=True, batch_size=batch, collate="packed",
            shuffle=True, seed=7,
        )
        loader = ds._loader(0, 1)
        loader.set_epoch(0)
        runs.append((ds, [b for _, b in zip(range(batches), loader)]))
    best = [float("inf")] * len(runs)
    for _ in range(repeat):
        for i, (ds, taken) in enumerate(runs):
            start = time.process_time()
            for b in taken:
                item = pickle.loads(pickle.dumps(ds._item(b, 0)))  # as from DataLoader worker 0
                del item  # the main process frees it: the worker's block is free again
            best[i] = min(best[i], (time.process_time() - start) / len(taken))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=2_000_000)
    parser.add_argument("--batches", type=int, default=150)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--baseline", default=None, help="another lodtensor/torch.py to measure beside")
    args = parser.parse_args()
    modules = {"this": lodtensor.torch}
    if args.baseline:
        spec = importlib.util.spec_from_file_location("lodtensor._baseline_torch", args.baseline)
        assert spec is not None and spec.loader is not None
        modules["baseline"] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(modules["baseline"])
    work = tempfile.mkdtemp(prefix="bench_torch_item_")
    try:
        path = os.path.join(work, "corpus")
        lt.write_shards(path, corpus(args.tokens), shard_rows=1024)
        print("| batch | columns | " + " | ".join(f"{name}: CPU µs an item" for name in modules) + " |")
        print("| --- | --- |" + " ---: |" * len(modules))
        for batch in (8, 64):
            for columns in (["tokens"], ["tokens", "source"]):
                cells = per_item(list(modules.values()), path, batch, columns, args.batches, args.repeat)
                figures = " | ".join(f"{c * 1e6:.0f}" for c in cells)
                print(f"| {batch} × {PACK + 1} | {'+'.join(columns)} | {figures} |")
        print(f"\nload average {os.getloadavg()[0]:.1f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
