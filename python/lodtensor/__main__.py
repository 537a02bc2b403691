"""``python -m lodtensor demo [DIR] [--docs N] [--seed S]``: writes the example files of the
command line's ``lodtensor demo`` (``lodtensor.demo``) and says what to try next.

``cli``: the ``lodtensor`` command itself (the package's console script; docs/cli.md)."""

from __future__ import annotations

import argparse
import sys

import lodtensor as lt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lodtensor")
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="write the example files (lodtensor.demo)")
    demo.add_argument("dir", nargs="?", default="lodtensor-demo", help="default: lodtensor-demo")
    demo.add_argument("--docs", type=int, default=2000, help="number of documents (default 2000)")
    demo.add_argument("--seed", type=int, default=42, help="seed of the data (default 42)")
    args = parser.parse_args(argv)
    try:
        files = lt.demo(args.dir, docs=args.docs, seed=args.seed)
    except (lt.LodTensorError, OSError) as e:
        print(f"python -m lodtensor: {e}", file=sys.stderr)
        return 2
    ds = lt.open(files["arrow"])
    print(f"wrote {ds.num_rows} documents to {files['arrow']} and {files['parquet']}")
    print("next, in Python:")
    print("    import lodtensor as lt")
    print(f"    ds = lt.open({files['arrow']!r})")
    print("    for batch in ds.loader(token_budget=4096, shuffle=True, seed=1):")
    print('        tokens = batch.values("tokens")   # numpy [tokens, 64] float32, no copy')
    return 0


def cli() -> int:
    """The ``lodtensor`` command line over ``sys.argv``: its exit code."""
    import lodtensor._native as _native

    return int(_native.cli(["lodtensor", *sys.argv[1:]]))


if __name__ == "__main__":
    sys.exit(main())
