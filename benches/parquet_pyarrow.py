"""Times pyarrow's pq.write_table of the table the Rust bench exports, per codec.

Usage: python benches/parquet_pyarrow.py INPUT.parquet ROW_GROUP_ROWS [REPEATS]

`cargo bench --bench parquet` writes INPUT (the benchmark dataset, uncompressed) and runs
this script when LODTENSOR_BENCH_PYTHON names a Python with pyarrow. The table is read once;
each codec is written REPEATS times (default 5) into memory, with the options the Rust side
uses: no dictionary, the same row-group size, byte_stream_split for the float column when
asked. Throughput is over the bytes of the float values, as in the Rust bench.
"""
import statistics
import sys
import time

import pyarrow as pa
import pyarrow.parquet as pq

CODECS = [
    ("none", dict(compression="none")),
    ("snappy", dict(compression="snappy")),
    ("zstd1", dict(compression="zstd", compression_level=1)),
    ("zstd1_bss", dict(compression="zstd", compression_level=1, use_byte_stream_split=True)),
]


def main():
    path, group_rows = sys.argv[1], int(sys.argv[2])
    repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    table = pq.read_table(path)
    values = table.column(0).combine_chunks().flatten().flatten().storage.flatten()
    nbytes = values.nbytes
    print(f"pyarrow {pa.__version__}: {table.num_rows} rows, {nbytes / 1e6:.1f} MB of values, "
          f"type {table.schema.field(0).type}")
    for name, options in CODECS:
        times = []
        for _ in range(repeats):
            sink = pa.BufferOutputStream()
            start = time.perf_counter()
            pq.write_table(table, sink, use_dictionary=False, row_group_size=group_rows, **options)
            times.append(time.perf_counter() - start)
            size = sink.getvalue().size
        median = statistics.median(times)
        print(f"pyarrow write_table {name:10s} median {median * 1e3:8.1f} ms  "
              f"{nbytes / median / 1e6:7.1f} MB/s  (min {min(times) * 1e3:.1f} ms, "
              f"file {size / 1e6:.1f} MB)")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
