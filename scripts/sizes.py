#!/usr/bin/env python3
"""The size rule of docs/architecture.md: no file over 700 lines, no function over 80.

`python3 scripts/sizes.py [ROOT]` reads every `.rs`, `.py` and `.pyi` file the rule covers
(`DIRS` below, under ROOT, default the repository holding this script), prints one line per
offender (`path: N lines` or `path:LINE fn NAME: N lines`) and exits 1 when there is one, 0
otherwise. `tests/it/layers.rs` runs it (`sizes_within_bounds`).

A function's length is every line from its first (`fn`/`def`, after attributes and
decorators) to its last (the closing brace, or the last line indented under the `def`),
blank and comment lines included. A function nested in another counts in both. Rust is
scanned with a small lexer that skips comments, strings, raw strings and character literals,
so braces inside them do not count; Python by indentation.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Iterator

#: The folders the rule covers, relative to the repository.
DIRS = (
    "src",
    "cli/src",
    "python/src",
    "python/lodtensor",
    "python/tests",
    "bench",
    "tests",
)
MAX_FILE_LINES = 700
MAX_FN_LINES = 80

_RUST_FN = re.compile(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)")
_PY_DEF = re.compile(r"^(\s*)(?:async\s+)?def\s+([A-Za-z_][A-Za-z0-9_]*)")


def _rust_code(text: str) -> str:
    """`text` with comments, strings and character literals blanked (newlines kept)."""
    out: list[str] = []
    i, n = 0, len(text)

    def blank(j: int) -> None:
        out.append("".join(c if c == "\n" else " " for c in text[i:j]))

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif text.startswith("/*", i):
            j, depth = i + 2, 1
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
        elif (m := re.match(r'b?r(#*)"', text[i : i + 260])) and (
            i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")
        ):
            close = '"' + m.group(1)
            j = text.find(close, i + m.end())
            j = n if j < 0 else j + len(close)
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j += 1
        elif c == "'" and (m := re.match(r"'(\\.[^']*|[^\\'])'", text[i : i + 12])):
            j = i + m.end()
        else:
            out.append(c)
            i += 1
            continue
        blank(j)
        i = j
    return "".join(out)


def rust_functions(text: str) -> Iterator[tuple[str, int, int]]:
    """(name, first line, number of lines) of every `fn` with a body in Rust `text`."""
    code = _rust_code(text)
    for m in _RUST_FN.finditer(code):
        # The body opens at the first `{` after the signature, unless a `;` ends the
        # declaration first (a trait method without a default body).
        j = m.end()
        depth = 0  # of (), [], <> is not tracked: a `;` or `{` at depth 0 decides
        while j < len(code):
            ch = code[j]
            if ch in "([":
                depth += 1
            elif ch in ")]":
                depth -= 1
            elif depth == 0 and ch in ";{":
                break
            j += 1
        if j >= len(code) or code[j] == ";":
            continue
        braces = 0
        k = j
        while k < len(code):
            if code[k] == "{":
                braces += 1
            elif code[k] == "}":
                braces -= 1
                if braces == 0:
                    break
            k += 1
        first = code.count("\n", 0, m.start()) + 1
        last = code.count("\n", 0, k) + 1
        yield m.group(1), first, last - first + 1


def python_functions(text: str) -> Iterator[tuple[str, int, int]]:
    """(name, first line, number of lines) of every `def` in Python `text`."""
    lines = text.split("\n")
    for index, line in enumerate(lines):
        m = _PY_DEF.match(line)
        if not m:
            continue
        indent = len(m.group(1))
        last = index
        for j in range(index + 1, len(lines)):
            body = lines[j]
            if not body.strip():
                continue
            if len(body) - len(body.lstrip()) <= indent and not body.lstrip().startswith(")"):
                break
            last = j
        yield m.group(2), index + 1, last - index + 1


def offenders(root: Path) -> list[str]:
    """Every file over `MAX_FILE_LINES` and function over `MAX_FN_LINES` under `root`."""
    found: list[str] = []
    for folder in DIRS:
        for path in sorted((root / folder).rglob("*")):
            if path.suffix not in (".rs", ".py", ".pyi") or not path.is_file():
                continue
            text = path.read_text(encoding="utf-8")
            name = path.relative_to(root).as_posix()
            n_lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
            if n_lines > MAX_FILE_LINES:
                found.append(f"{name}: {n_lines} lines (at most {MAX_FILE_LINES})")
            functions = rust_functions if path.suffix == ".rs" else python_functions
            for fn, line, length in functions(text):
                if length > MAX_FN_LINES:
                    found.append(f"{name}:{line} fn {fn}: {length} lines (at most {MAX_FN_LINES})")
    return found


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent.parent
    found = offenders(root)
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
