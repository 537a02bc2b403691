"""The size rule (no file over 700 lines, no function over 80) over the repository, by
`scripts/sizes.py`, and that script's counting on hand-made sources."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("sizes", ROOT / "scripts" / "sizes.py")
assert _spec is not None and _spec.loader is not None
sizes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sizes)


def test_the_repository_keeps_the_size_rule() -> None:
    assert sizes.offenders(ROOT) == []


def test_rust_functions_skip_braces_in_strings_comments_and_chars() -> None:
    text = "\n".join(
        [
            "trait T { fn declared(&self); }",  # no body: not counted
            "fn outer<T: Into<u8>>(x: [u8; 2]) -> u8 {",
            '    let s = "}{"; let r = r#"}"#; let c = \'}\'; // }',
            "    /* } { */ fn inner() {}",
            "    0",
            "}",
            "fn after<'a>(x: &'a str) -> &'a str { x }",
        ]
    )
    assert list(sizes.rust_functions(text)) == [("outer", 2, 5), ("inner", 4, 1), ("after", 7, 1)]


def test_python_functions_end_where_the_indentation_does() -> None:
    text = "\n".join(
        [
            "def first(",
            "    a: int,",
            ") -> int:",
            "    def nested():",
            "        pass",
            "",
            "    return a",
            "x = 1",
            "async def second(): pass",
        ]
    )
    assert list(sizes.python_functions(text)) == [("first", 1, 7), ("nested", 4, 2), ("second", 9, 1)]


def test_an_offender_is_named_with_its_size(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    long_fn = "fn long() {\n" + "    x();\n" * 80 + "}\n"
    (tmp_path / "src" / "a.rs").write_text(long_fn + "\n" * 700)
    assert sizes.offenders(tmp_path) == [
        "src/a.rs: 782 lines (at most 700)",
        "src/a.rs:1 fn long: 82 lines (at most 80)",
    ]
