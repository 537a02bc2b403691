"""Ray Data reading a sharded lodtensor dataset (lodtensor.ray.read_lodtensor) beside Ray's
own read_parquet of the same rows, into iter_batches.

    python python/bench/bench_ray.py [--mib 1024] [--shards 16] [--batch-size 64] [--repeat 3]

The data: documents -> sentences -> tokens of f32[64] (bench_loader.py's generator), normal
floats and an easy case (small whole numbers, which compress), written once as a sharded
dataset (lt.write_shards, `--shards` shards of equal rows) and once as as many Parquet files
of the same rows, by pyarrow (`pq.write_table`, uncompressed and snappy, pyarrow's
default), from the table lodtensor reads back, so both hold the same types
(`large_list<large_list<arrow.fixed_shape_tensor>>`).
Each contender is a whole pass a training job makes: the Ray dataset made from the
directory, then every batch of `--batch-size` documents through
`iter_batches(batch_format="pyarrow")`, taking each batch's token values as a numpy
[tokens, 64] view. Local Ray cluster of `--cpus` CPUs (default: the machine's), files in the
page cache (one untimed pass each first), contenders in turns whose order rotates, best of
`--repeat`. Prints a Markdown table.

Ray's fixed cost of a pass (planning, scheduling the read tasks, starting the stream: about
1-1.5 s on a busy 2-core machine) is the same for every contender and hides the readers'
own costs on small data: at 256 MiB all three contenders take about that long.
"""

from __future__ import annotations

import argparse
import os
import tempfile

import pyarrow as pa
import pyarrow.parquet as pq
import ray

import lodtensor as lt
from bench_loader import documents, race
from lodtensor.ray import read_lodtensor


def write_both(base: str, table: pa.Table, shards: int) -> dict[str, str]:
    """The table as a sharded dataset and as Parquet files of the same rows; their dirs."""
    dirs = {"lodtensor": os.path.join(base, "shards")}
    rows = -(-table.num_rows // shards)
    lt.write_shards(dirs["lodtensor"], table, shard_rows=rows)
    same = lt.open(dirs["lodtensor"]).to_pyarrow()
    for codec in ["none", "snappy"]:
        name = f"parquet ({codec})"
        dirs[name] = os.path.join(base, f"parquet-{codec}")
        os.makedirs(dirs[name])
        for i in range(shards):
            part = same.slice(i * rows, rows)
            pq.write_table(part, os.path.join(dirs[name], f"part-{i:05d}.parquet"), compression=codec)
    return dirs


def tokens_view(batch: pa.Table) -> int:
    """The batch's token values as a numpy [tokens, 64] view (one per chunk); their count."""
    n = 0
    for chunk in batch.column("tokens").chunks:
        n += len(chunk.flatten().flatten().to_numpy_ndarray())
    return n


def one_pass(read, path: str, batch_size: int) -> tuple[int, int]:
    rows = tokens = 0
    for batch in read(path).iter_batches(batch_size=batch_size, batch_format="pyarrow"):
        rows += batch.num_rows
        tokens += tokens_view(batch)
    return rows, tokens


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mib", type=int, default=1024)
    parser.add_argument("--shards", type=int, default=16)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cpus", type=int, default=os.cpu_count())
    parser.add_argument("--dir", default=tempfile.gettempdir())
    args = parser.parse_args()
    ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    readers = {"lodtensor": read_lodtensor, "parquet (none)": ray.data.read_parquet,
               "parquet (snappy)": ray.data.read_parquet}
    print(f"{args.mib} MiB of values, {args.shards} files each, batches of {args.batch_size} "
          f"documents, Ray {ray.__version__}, {args.cpus} CPUs, best of {args.repeat}\n")
    print("| values | contender | M tokens/s | rows/s | lodtensor / this |")
    print("| --- | --- | --- | --- | --- |")
    for easy in [False, True]:
        with tempfile.TemporaryDirectory(dir=args.dir) as base:
            dirs = write_both(base, documents(args.mib, easy=easy), args.shards)
            contenders = {
                name: (lambda r=readers[name], d=dirs[name]: one_pass(r, d, args.batch_size))
                for name in dirs
            }
            for run in contenders.values():
                run()  # page cache and Ray's workers warm
            results = race(contenders, args.repeat)
            counts = {out for _, out in results.values()}
            assert len(counts) == 1, f"contenders read different data: {results}"
            ours = results["lodtensor"][0]
            for name, (seconds, (rows, tokens)) in results.items():
                print(f"| {'easy' if easy else 'normal'} | {name} | {tokens / seconds / 1e6:.1f} "
                      f"| {rows / seconds:,.0f} | {seconds / ours:.2f}× |")
    ray.shutdown()


if __name__ == "__main__":
    main()
