"""DataFusion's SQL over the shards: the same per-sequence counts as lodtensor's offsets."""

import numpy as np
import pytest

import lodtensor as lt

datafusion = pytest.importorskip("datafusion")


@pytest.fixture
def docs(shards_dir):
    ctx = datafusion.SessionContext()
    ctx.register_arrow("docs", str(shards_dir))  # every *.arrow file; the manifest is .json
    return ctx


def test_counts_per_sequence_equal_lodtensors(docs, shards_dir):
    ds = lt.open(shards_dir)
    documents, sentences = ds.offsets("tokens")
    (ids,) = ds.offsets("ids")
    table = docs.sql(
        "SELECT label, array_length(tokens) AS sentences,"
        " array_length(flatten(tokens)) AS words, array_length(ids) AS ids"
        " FROM docs ORDER BY label"
    ).to_arrow_table()
    assert table.column("label").to_pylist() == list(range(0, 2000, 10))
    np.testing.assert_array_equal(table.column("sentences").fill_null(0), np.diff(documents))
    words = sentences[documents[1:]] - sentences[documents[:-1]]
    np.testing.assert_array_equal(table.column("words").fill_null(0), words)
    np.testing.assert_array_equal(table.column("ids").fill_null(0), np.diff(ids))


def test_words_per_sentence_equal_lodtensors(docs, shards_dir):
    documents, sentences = lt.open(shards_dir).offsets("tokens")
    rows = docs.sql(
        "SELECT label, array_length(s) AS words FROM"
        " (SELECT label, unnest(tokens) AS s FROM docs)"
    ).to_pylist()
    got: dict = {}
    for row in rows:
        got.setdefault(row["label"] // 10, []).append(row["words"] or 0)
    lengths = np.diff(sentences)
    for doc in range(200):
        expected = sorted(lengths[documents[doc] : documents[doc + 1]])
        assert sorted(got.get(doc, [])) == expected, doc


def test_totals(docs, shards_dir):
    ds = lt.open(shards_dir)
    total = docs.sql("SELECT count(*) AS n, sum(array_length(flatten(tokens))) AS w FROM docs")
    row = total.to_pylist()[0]
    assert row["n"] == ds.num_rows
    assert row["w"] == sum(s["columns"][0]["elements"] for s in ds.shards)


@pytest.mark.parametrize("codec", ["zstd", "lz4"])
def test_compressed_shards_give_the_same_totals(tmp_path, shards_dir, codec):
    """DataFusion reads compressed shards (Arrow IPC body compression) as the plain ones."""
    from conftest import documents

    path = tmp_path / codec
    lt.write_shards(path, documents(200, seed=1), shard_rows=30, batch_bytes=4096, compression=codec)
    query = "SELECT count(*) AS n, sum(array_length(flatten(tokens))) AS w FROM docs"
    totals = []
    for directory in (shards_dir, path):
        ctx = datafusion.SessionContext()
        ctx.register_arrow("docs", str(directory))
        totals.append(ctx.sql(query).to_pylist()[0])
    assert totals[0] == totals[1]
    assert lt.open(path).num_rows == 200
