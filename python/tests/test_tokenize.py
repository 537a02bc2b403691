"""lt.tokenize: text files, JSON lines, Parquet files, Arrow streams and HuggingFace datasets
→ token-id shards, equal to the `tokenizers` package's own encode_batch document by
document, locally and in a bucket; a run killed midway and started again writes every
document once; bad inputs give typed errors."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

tokenizers = pytest.importorskip("tokenizers")

import lodtensor as lt  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "data" / "tokenize"))
import make_tokenizer  # noqa: E402
from conftest import cargo_built  # noqa: E402
from s3_server import s3  # noqa: E402, F401 (the fixture)

WORDS = (
    "the of and to in is was for on that with as by at from his her an were are which this "
    "be or has had not but it its one all their also first new more two after who time "
    "naïve café über résumé 東京 δοκιμή — “quoted” tab\there\n"
).split(" ")


def corpus(n: int, seed: int) -> list[str]:
    """`n` documents of a few sentences (some empty, some with blank lines)."""
    import random

    rng = random.Random(seed)
    docs = []
    for i in range(n):
        if i % 17 == 5:
            docs.append("")
            continue
        paragraphs = [
            " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 40)))
            for _ in range(rng.randint(1, 4))
        ]
        docs.append("\n\n".join(paragraphs) + ("\n" if i % 3 else ""))
    return docs


def train(texts: list[str], specials: list[str]) -> tokenizers.Tokenizer:
    """A byte-level BPE of 400 ids trained on `texts` (no download)."""
    return make_tokenizer.train(texts, vocab_size=400, specials=specials)


@pytest.fixture(scope="module")
def tok() -> tokenizers.Tokenizer:
    return train(corpus(200, seed=0), ["<|endoftext|>"])


@pytest.fixture(scope="module")
def tok_path(tok, tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("tok") / "tokenizer.json"
    tok.save(str(path))
    return str(path)


def expected(tok, docs: list[str], eos=True, bos=None) -> list[list[int]]:
    """The `tokenizers` package's own ids of each document, with EOS (and BOS)."""
    end = [tok.token_to_id("<|endoftext|>")] if eos else []
    start = [tok.token_to_id(bos)] if bos else []
    return [start + e.ids + end for e in tok.encode_batch(docs)]


def pieces(tok, doc: str, bos=False, eos=False) -> list[list[int]]:
    """The ids of each piece of `doc` split after each blank line, each encoded alone by
    the `tokenizers` package, with EOS ending the last piece and BOS starting the first."""
    parts = doc.split("\n\n")
    texts = [p + "\n\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])
    if not texts and not (bos or eos):
        return []
    got = [e.ids for e in tok.encode_batch(texts)] if texts else [[]]
    eot = tok.token_to_id("<|endoftext|>")
    if bos:
        got[0] = [eot] + got[0]
    if eos:
        got[-1] = got[-1] + [eot]
    return got


def rows(ds, column="tokens") -> list:
    return ds.to_pyarrow().column(column).to_pylist()


def write_texts(dir: Path, docs: list[str]) -> list[str]:
    dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, doc in enumerate(docs):
        path = dir / f"doc-{i:04d}.txt"
        path.write_text(doc, encoding="utf-8")
        paths.append(str(path))
    return paths


def write_jsonl(path: Path, docs: list[str], field="text") -> str:
    with open(path, "w", encoding="utf-8") as f:
        for i, doc in enumerate(docs):
            f.write(json.dumps({"id": i, field: doc}) + "\n")
    return str(path)


def test_text_files_equal_encode_batch(tok, tok_path, tmp_path):
    docs = corpus(60, seed=1)
    paths = write_texts(tmp_path / "corpus", docs)
    ds = lt.tokenize(tmp_path / "corpus", tmp_path / "out", tokenizer=tok_path)
    assert isinstance(ds, lt.ShardedDataset)
    assert ds.num_rows == len(docs)
    assert rows(ds) == expected(tok, docs)
    assert rows(ds, "source") == paths
    assert ds.to_pyarrow().schema.field("tokens").type == pa.large_list(pa.uint16())
    # A glob and a tokenizers.Tokenizer give the same.
    again = lt.tokenize(str(tmp_path / "corpus" / "*.txt"), tmp_path / "out2", tokenizer=tok)
    assert rows(again) == rows(ds)


def test_json_lines_parquet_streams_and_a_dataset(tok, tok_path, tmp_path):
    docs = corpus(50, seed=2)
    jsonl = write_jsonl(tmp_path / "a.jsonl", docs[:20], field="body")
    parquet = tmp_path / "b.parquet"
    pq.write_table(pa.table({"body": docs[20:35], "n": list(range(15))}), parquet)
    table = pa.table({"body": docs[35:]})
    ds = lt.tokenize([jsonl, str(parquet), table], tmp_path / "out", tokenizer=tok_path, field="body")
    assert rows(ds) == expected(tok, docs)
    sources = rows(ds, "source")
    assert sources[:20] == [jsonl] * 20 and sources[20:35] == [str(parquet)] * 15
    assert set(sources[35:]) == {"stream:2"}
    datasets = pytest.importorskip("datasets")
    hf = datasets.Dataset.from_dict({"text": docs})
    from_hf = lt.tokenize(hf, tmp_path / "hf", tokenizer=tok_path)
    assert rows(from_hf) == expected(tok, docs)


def test_split_eos_and_bos(tok, tok_path, tmp_path):
    docs = corpus(30, seed=3)
    jsonl = write_jsonl(tmp_path / "docs.jsonl", docs)
    ds = lt.tokenize(jsonl, tmp_path / "out", tokenizer=tok_path, split="\n\n", bos="<|endoftext|>", eos=False)
    assert rows(ds) == [pieces(tok, doc, bos=True) for doc in docs]
    assert lt.tokenize(jsonl, tmp_path / "plain", tokenizer=tok_path, eos=False).to_pyarrow().column(
        "tokens"
    ).to_pylist() == expected(tok, docs, eos=False)


def test_bad_inputs_give_typed_errors(tok, tok_path, tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        lt.tokenize(tmp_path / "missing.txt", tmp_path / "o1", tokenizer=tok_path)
    with pytest.raises(FileNotFoundError, match="no-tokenizer.json"):
        lt.tokenize(tmp_path / "missing.txt", tmp_path / "o1", tokenizer=tmp_path / "no-tokenizer.json")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "fine"}\n\n{"text": "also fine"}\n{"text": oops}\n')
    with pytest.raises(lt.InvalidFileError, match=r"bad\.jsonl.*line 4"):
        lt.tokenize(bad, tmp_path / "o2", tokenizer=tok_path)
    fieldless = tmp_path / "fieldless.jsonl"
    fieldless.write_text('{"text": "fine"}\n{"body": "no text"}\n')
    with pytest.raises(lt.InvalidFileError, match=r"fieldless\.jsonl.*line 2: no field \"text\""):
        lt.tokenize(fieldless, tmp_path / "o3", tokenizer=tok_path)
    parquet = tmp_path / "p.parquet"
    pq.write_table(pa.table({"body": ["x"]}), parquet)
    with pytest.raises(lt.ColumnNotFoundError, match="text"):
        lt.tokenize(parquet, tmp_path / "o4", tokenizer=tok_path)
    with pytest.raises(lt.ColumnNotFoundError, match="text"):
        lt.tokenize(pa.table({"body": ["x"]}), tmp_path / "o5", tokenizer=tok_path)
    (tmp_path / "latin1.txt").write_bytes("café".encode("latin-1"))
    with pytest.raises(lt.InvalidFileError, match=r"latin1\.txt.*byte 3: not UTF-8"):
        lt.tokenize(tmp_path / "latin1.txt", tmp_path / "o6", tokenizer=tok_path)
    (tmp_path / "ok.txt").write_text("fine")
    with pytest.raises(lt.ArgumentError, match="bos"):
        lt.tokenize(tmp_path / "ok.txt", tmp_path / "o7", tokenizer=tok_path, bos=True)
    no_eos = train(corpus(20, seed=4), [])
    with pytest.raises(lt.ArgumentError, match="eos"):
        lt.tokenize(tmp_path / "ok.txt", tmp_path / "o8", tokenizer=no_eos)
    with pytest.raises(lt.InvalidFileError, match="tokenizer"):
        lt.tokenize(tmp_path / "ok.txt", tmp_path / "o9", tokenizer=tmp_path / "ok.txt")
    # Nothing was committed by a failed run.
    assert not any((tmp_path / f"o{i}" / "_lodtensor.json").exists() for i in range(1, 10))


KILLED = """
import json, sys, time
import pyarrow as pa
import lodtensor as lt

files, out, tok, docs = sys.argv[1].split(","), sys.argv[2], sys.argv[3], sys.argv[4]
options = json.loads(sys.argv[5]) if len(sys.argv) > 5 else None
schema = pa.schema([("text", pa.string())])

def stuck():
    # The last input never ends: the run is killed while reading it.
    yield pa.record_batch([pa.array(open(docs).read().split("\\x00"))], schema=schema)
    time.sleep(3600)

stream = pa.RecordBatchReader.from_batches(schema, stuck())
lt.tokenize(files + [stream], out, tokenizer=tok, shard_rows=3, storage_options=options)
"""


def run_killed(args: list[str], out: Path) -> None:
    """Runs KILLED with `args`, kills it once it wrote 3 pending manifests into `out`, and
    checks that it had committed nothing."""
    child = subprocess.Popen(
        [sys.executable, "-c", KILLED, *args],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    try:
        deadline = time.monotonic() + 120
        while len(list(out.glob("_lodtensor.pending.*.json"))) < 3:
            assert child.poll() is None, "the run ended before it was killed"
            assert time.monotonic() < deadline, "the run wrote no pending shards"
            time.sleep(0.05)
    finally:
        child.kill()
        child.wait()
    assert not (out / "_lodtensor.json").exists()  # killed before the commit


def test_a_killed_run_started_again_writes_every_document_once(tok, tok_path, tmp_path):
    docs = corpus(80, seed=5)
    files = [write_jsonl(tmp_path / f"part-{i}.jsonl", docs[i * 20 : (i + 1) * 20]) for i in range(3)]
    last = tmp_path / "last.txt"
    last.write_text("\x00".join(docs[60:]), encoding="utf-8")
    out = tmp_path / "out"
    run_killed([",".join(files), str(out), tok_path, str(last)], out)
    stream = pa.table({"text": docs[60:]})
    ds = lt.tokenize(files + [stream], out, tokenizer=tok_path, shard_rows=3)
    assert ds.num_rows == len(docs)
    assert rows(ds) == expected(tok, docs)
    # Started again after it finished: nothing written twice.
    again = lt.tokenize(files + [stream], out, tokenizer=tok_path, shard_rows=3)
    assert again.num_rows == len(docs) and again.num_shards == ds.num_shards


def test_to_a_bucket(tok, tok_path, tmp_path):
    pytest.importorskip("moto")
    from s3_server import S3Server

    server = S3Server()
    try:
        server.client().create_bucket(Bucket="tok")
        docs = corpus(40, seed=6)
        files = [write_jsonl(tmp_path / f"{i}.jsonl", docs[i * 20 : (i + 1) * 20]) for i in range(2)]
        url = "s3://tok/tokens/"
        options = server.storage_options()
        ds = lt.tokenize(files, url, tokenizer=tok_path, storage_options=options, shard_rows=7)
        assert ds.url == url
        assert rows(ds) == expected(tok, docs)
        again = lt.tokenize(files, url, tokenizer=tok_path, storage_options=options, shard_rows=7)
        assert again.num_rows == len(docs)
    finally:
        server.stop()


def test_the_command_line(tok, tok_path, tmp_path):
    exe = cargo_built("lodtensor", "-p", "lodtensor-cli")
    docs = corpus(20, seed=7)
    jsonl = write_jsonl(tmp_path / "docs.jsonl", docs, field="body")
    out = tmp_path / "out"
    run = subprocess.run(
        [str(exe), "tokenize", jsonl, str(out), "--tokenizer", tok_path, "--field", "body", "--split", r"\n\n"],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    assert "20 documents" in run.stdout
    assert rows(lt.open(out)) == [pieces(tok, doc, eos=True) for doc in docs]


def put_corpus(server, bucket: str, docs: list[str]) -> list[str]:
    """Uploads `docs` under `corpus/`: the first 12 as text objects (4 of them one level
    down), the rest as `corpus/z.jsonl`; with a `_SUCCESS`, a `.hidden` and a directory
    marker object skipped.
    Returns the documents' URLs in the order of the listing."""
    client = server.client()
    client.create_bucket(Bucket=bucket)
    keys = [f"corpus/doc-{i:02d}.txt" for i in range(8)] + [f"corpus/sub/doc-{i:02d}.txt" for i in range(4)]
    for key, doc in zip(keys, docs):
        client.put_object(Bucket=bucket, Key=key, Body=doc.encode())
    lines = "".join(json.dumps({"text": doc}) + "\n" for doc in docs[12:])
    client.put_object(Bucket=bucket, Key="corpus/z.jsonl", Body=lines.encode())
    for key in ["corpus/_SUCCESS", "corpus/.hidden", "corpus/sub/_tmp.txt"]:
        client.put_object(Bucket=bucket, Key=key, Body=b"not a document")
    for marker in ["corpus/sub/", "corpus/empty/"]:  # directory markers, as consoles make them
        client.put_object(Bucket=bucket, Key=marker, Body=b"")
    client.put_object(Bucket=bucket, Key="other/doc.txt", Body=b"not under the prefix")
    return [f"s3://{bucket}/{k}" for k in keys] + [f"s3://{bucket}/corpus/z.jsonl"] * len(docs[12:])


def test_url_inputs_equal_encode_batch_locally_and_to_a_bucket(s3, tok, tok_path, tmp_path):
    docs = corpus(30, seed=8)
    sources = put_corpus(s3, "tokin", docs)
    options = s3.storage_options()
    # A prefix: every object under it, sorted, `_` and `.` names skipped.
    ds = lt.tokenize("s3://tokin/corpus/", tmp_path / "out", tokenizer=tok_path, storage_options=options)
    assert rows(ds) == expected(tok, docs)
    assert rows(ds, "source") == sources
    # A glob over the listing, one object, and a list of both; written to a bucket.
    url = "s3://tokin/tokens/"
    inputs = ["s3://tokin/corpus/*.jsonl", "s3://tokin/corpus/doc-03.txt"]
    out = lt.tokenize(inputs, url, tokenizer=tok, storage_options=options, shard_rows=5)
    assert out.url == url
    assert rows(out) == expected(tok, docs[12:] + [docs[3]])
    glob = lt.tokenize("s3://tokin/corpus/**/doc-0?.txt", tmp_path / "g", tokenizer=tok, storage_options=options)
    assert rows(glob) == expected(tok, docs[:12])
    # Run again: every unit skipped, nothing written twice.
    again = lt.tokenize(inputs, url, tokenizer=tok, storage_options=options, shard_rows=5)
    assert again.num_rows == out.num_rows and again.num_shards == out.num_shards
    # A Parquet object, its column `field`, read by the native part.
    buffer = pa.BufferOutputStream()
    pq.write_table(pa.table({"body": docs[:7], "n": list(range(7))}), buffer)
    s3.client().put_object(Bucket="tokin", Key="pq/b.parquet", Body=buffer.getvalue().to_pybytes())
    parquet = lt.tokenize("s3://tokin/pq/b.parquet", tmp_path / "pq", tokenizer=tok, field="body", storage_options=options)
    assert rows(parquet) == expected(tok, docs[:7])


def test_url_inputs_bad_inputs_are_named(s3, tok_path, tmp_path):
    s3.client().create_bucket(Bucket="tokbad")
    s3.client().put_object(Bucket="tokbad", Key="bad.txt", Body=b"ok \xff no")
    options = s3.storage_options()
    for url in ["s3://tokbad/nothing/", "s3://tokbad/*.jsonl", "s3://tokbad/missing.txt"]:
        with pytest.raises(FileNotFoundError, match=re.escape(url)):
            lt.tokenize(url, tmp_path / "o1", tokenizer=tok_path, storage_options=options)
    with pytest.raises(lt.InvalidFileError, match=r"s3://tokbad/bad.txt.*byte 3: not UTF-8"):
        lt.tokenize("s3://tokbad/bad.txt", tmp_path / "o2", tokenizer=tok_path, storage_options=options)
    with pytest.raises(lt.ArgumentError, match="only for a URL"):
        lt.tokenize(tmp_path, tmp_path / "o3", tokenizer=tok_path, storage_options=options)
    assert not (tmp_path / "o1" / "_lodtensor.json").exists()


def test_a_killed_run_from_a_bucket_started_again_writes_every_document_once(s3, tok, tok_path, tmp_path):
    docs = corpus(50, seed=9)
    client = s3.client()
    client.create_bucket(Bucket="tokkill")
    for i in range(3):
        lines = "".join(json.dumps({"text": d}) + "\n" for d in docs[i * 10 : (i + 1) * 10])
        client.put_object(Bucket="tokkill", Key=f"c/part-{i}.jsonl", Body=lines.encode())
    last = tmp_path / "last.txt"
    last.write_text("\x00".join(docs[30:]), encoding="utf-8")
    out = tmp_path / "out"
    options = s3.storage_options()
    run_killed(["s3://tokkill/c/", str(out), tok_path, str(last), json.dumps(options)], out)
    inputs = ["s3://tokkill/c/", pa.table({"text": docs[30:]})]
    ds = lt.tokenize(inputs, out, tokenizer=tok_path, shard_rows=3, storage_options=options)
    assert rows(ds) == expected(tok, docs)
