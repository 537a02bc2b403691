"""pyarrow and numpy on the benchmark file of `lodtensor-bench`, run by it in the same run:
IPC write (+ fsync), memory_map + open_file + read_all, random sentence views, Parquet
export per codec into memory, sum/mean pooling with numpy.add.reduceat. Prints one JSON
object of the best (fastest) of several runs of each, in seconds.

usage: compare_pyarrow.py FILE.arrow WORKDIR ROW_GROUP_ROWS
       compare_pyarrow.py parquet FILE.arrow WORKDIR ROW_GROUP_ROWS
           Parquet both ways per codec, as lodtensor-bench's Parquet rows: `pq.write_table`
           of FILE's table to WORKDIR/<FILE's stem>-<codec>.parquet (no dictionary,
           ROW_GROUP_ROWS rows per row group, statistics on: the settings of lodtensor's
           writer) and `pq.read_table` of that file; prints {codec: {"write": s, "read": s}}.
       compare_pyarrow.py convert IN OUT [CODEC]
           One conversion as a user runs it, timed by the caller as a whole process:
           .parquet -> .arrow (`pq.read_table`, `ipc.new_file`, fsync) or .arrow -> .parquet
           (`memory_map` + `read_all`, `pq.write_table` with pyarrow's defaults and CODEC,
           fsync).
"""
import json
import os
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

# The codecs of lodtensor-bench's Parquet rows, by the keys it reads.
CODECS = {
    "none": dict(compression="none"),
    "snappy": dict(compression="snappy"),
    "zstd1": dict(compression="zstd", compression_level=1),
}


def best_seconds(f, runs):
    """The fastest of `runs` timings of `f`, in seconds."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return min(times)


def open_table(path):
    """The whole file as a table of views into the mapping."""
    with pa.memory_map(path) as source:
        return ipc.open_file(source).read_all()


def sentences(table, column="tokens"):
    """Per record batch: the sentence offsets (from 0) and the token values [tokens, dim]."""
    out = []
    for chunk in table.column(column).chunks:
        sents = chunk.flatten()
        offsets = sents.offsets.to_numpy()
        tokens = sents.flatten()
        storage = getattr(tokens, "storage", tokens)
        floats = storage.flatten().to_numpy(zero_copy_only=True)
        out.append((offsets - offsets[0], floats.reshape(-1, storage.type.list_size)))
    return out


def random_picks(batches, n=4096, seed=7):
    """`n` seeded random (batch, sentence) pairs."""
    rng = np.random.default_rng(seed)
    return [(int(b), int(rng.integers(0, len(batches[b][0]) - 1))) for b in rng.integers(0, len(batches), n)]


def view_seconds(batches, picks, runs):
    """Seconds per random sentence view: two offsets, a numpy slice of the values."""

    def views():
        for b, j in picks:
            offsets, floats = batches[b]
            floats[offsets[j] : offsets[j + 1]]

    return best_seconds(views, runs) / len(picks)


def main(path, workdir, group_rows):
    table = open_table(path)
    copies = []

    def write_ipc():
        # A new file each run, deleted after the last: deleting one costs the next write.
        copies.append(os.path.join(workdir, f"written-by-pyarrow-{len(copies)}.arrow"))
        with pa.OSFile(copies[-1], "wb") as sink:
            with ipc.new_file(sink, table.schema) as writer:
                writer.write_table(table)
        fd = os.open(copies[-1], os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)

    figures = {"pyarrow": pa.__version__, "numpy": np.__version__}
    figures["write_ipc"] = best_seconds(write_ipc, 3)
    for copy in copies:
        os.remove(copy)
    figures["open"] = best_seconds(lambda: open_table(path), 51)
    batches = sentences(table)
    figures["view"] = view_seconds(batches, random_picks(batches), 21)

    def export(options):
        pq.write_table(table, pa.BufferOutputStream(), use_dictionary=False, row_group_size=group_rows, **options)

    figures["parquet"] = {key: best_seconds(lambda: export(options), 3) for key, options in CODECS.items()}

    def pool_sum():
        for offsets, floats in batches:
            np.add.reduceat(floats, offsets[:-1], axis=0)

    def pool_mean():
        for offsets, floats in batches:
            np.add.reduceat(floats, offsets[:-1], axis=0) / np.diff(offsets).astype(np.float32)[:, None]

    figures["pool_sum"] = best_seconds(pool_sum, 5)
    figures["pool_mean"] = best_seconds(pool_mean, 5)
    print(json.dumps(figures))


def parquet_both_ways(path, workdir, group_rows):
    table = open_table(path)
    stem = os.path.splitext(os.path.basename(path))[0]
    figures = {}
    for key, options in CODECS.items():
        out = os.path.join(workdir, f"{stem}-{key}.parquet")
        write = best_seconds(
            lambda: pq.write_table(table, out, use_dictionary=False, row_group_size=group_rows, **options), 3
        )
        read = best_seconds(lambda: pq.read_table(out), 3)
        figures[key] = {"write": write, "read": read}
    print(json.dumps(figures))


def fsync(path):
    fd = os.open(path, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)


def convert(source, target, codec):
    if source.endswith(".parquet"):
        table = pq.read_table(source)
        with ipc.new_file(target, table.schema) as writer:
            writer.write_table(table)
    else:
        pq.write_table(open_table(source), target, **CODECS[codec])
    fsync(target)


if __name__ == "__main__":
    if sys.argv[1] == "parquet":
        parquet_both_ways(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif sys.argv[1] == "convert":
        convert(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else "snappy")
    else:
        main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
