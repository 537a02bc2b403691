"""pyarrow on the sharded-dataset benchmark's directories: dataset discovery
(`ds.dataset(DIR, format="ipc")`) and `count_rows()`, best of several runs. Prints
`name value` lines for benches/shards_open.rs.

usage: shards_open_pyarrow.py TINY_DIR LARGE_DIR
"""
import sys
import time

import pyarrow.dataset as ds


def best_ms(f, n):
    times = []
    for _ in range(n):
        t = time.perf_counter()
        f()
        times.append((time.perf_counter() - t) * 1e3)
    return min(times)


def main(tiny, large):
    for name, path in (("tiny", tiny), ("large", large)):
        print(f"{name}_discover_ms", best_ms(lambda: ds.dataset(path, format="ipc"), 11))
        count = lambda: ds.dataset(path, format="ipc").count_rows()
        print(f"{name}_count_rows_ms", best_ms(count, 11))


if __name__ == "__main__":
    main(*sys.argv[1:3])
