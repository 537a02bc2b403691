"""HuggingFace datasets both ways: lt.write and lt.from_huggingface of a datasets.Dataset
(from_dict and explicit Features: Array2D, fixed-length List, ClassLabel, strings), read
back with lt.open(...).to_huggingface() with equal rows and equal features."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import lodtensor as lt

datasets = pytest.importorskip("datasets")
from datasets import Array2D, ClassLabel, Features, List, Value  # noqa: E402

ROWS = 12


def explicit() -> datasets.Dataset:
    rng = np.random.default_rng(3)
    features = Features(
        {
            "id": Value("string"),
            "feats": Array2D(shape=(3, 4), dtype="float32"),
            "frames": Array2D(shape=(None, 2), dtype="float32"),
            "emb": List(Value("float32"), length=4),
            "label": ClassLabel(names=["neg", "pos"]),
            "tokens": List(Value("int64")),
            "text": Value("string"),
        }
    )
    return datasets.Dataset.from_dict(
        {
            "id": [f"utt-{r}" for r in range(ROWS)],
            "feats": [rng.normal(size=(3, 4)).astype(np.float32) for _ in range(ROWS)],
            "frames": [rng.normal(size=(r % 4, 2)).astype(np.float32) for r in range(ROWS)],
            "emb": [rng.normal(size=4).astype(np.float32) for _ in range(ROWS)],
            "label": [r % 2 for r in range(ROWS)],
            "tokens": [list(range(r % 5)) for r in range(ROWS)],
            "text": [None if r % 5 == 2 else "w " * r for r in range(ROWS)],
        },
        features=features,
    )


def kinds(path) -> dict[str, str]:
    ds = lt.open(path)
    return {name: ds.schema.field(name).metadata.get(b"lodtensor.kind", b"tensor").decode() for name in ds.column_names}


def test_features_round_trip_hf_to_lodtensor_to_hf(tmp_path):
    hf = explicit()
    path = tmp_path / "hf.arrow"
    lt.from_huggingface(hf, path)
    ds = lt.open(path)
    assert kinds(path) == {
        "id": "side", "feats": "tensor", "frames": "tensor", "emb": "tensor",
        "label": "tensor", "tokens": "tensor", "text": "side",
    }
    table = ds.to_pyarrow()
    # Array2D(3, 4): one [3, 4] element per row; Array2D(None, 2): a level over [2] elements.
    assert table.schema.field("feats").type == pa.fixed_shape_tensor(pa.float32(), [3, 4])
    assert table.schema.field("frames").type.value_type == pa.fixed_shape_tensor(pa.float32(), [2])
    back = ds.to_huggingface()
    assert back.features == hf.features
    assert back.to_list() == hf.to_list()
    np.testing.assert_array_equal(back.with_format("numpy")["feats"], hf.with_format("numpy")["feats"])


def test_from_dict_casts_and_folds_then_round_trips(tmp_path):
    hf = datasets.Dataset.from_dict(
        {"mel": [[float(i)] * 6 for i in range(5)], "n": [1, 2, 3, 4, 5], "s": list("abcde")}
    )
    path = tmp_path / "mel.arrow"
    lt.from_huggingface(hf, path, element_shape={"mel": [2, 3]}, dtype={"mel": "float32"})
    table = lt.open(path).to_pyarrow()
    assert table.schema.field("mel").type == pa.large_list(pa.fixed_shape_tensor(pa.float32(), [2, 3])) or (
        table.schema.field("mel").type == pa.fixed_shape_tensor(pa.float32(), [2, 3])
    )
    back = lt.open(path).to_huggingface()
    assert back.features["mel"] == List(Value("float32"))
    assert back.features["s"] == Value("string")
    assert back.to_list() == hf.to_list()
    # Without casts, lt.write keeps the features as they are.
    lt.write(tmp_path / "plain.arrow", hf)
    again = lt.open(tmp_path / "plain.arrow").to_huggingface()
    assert again.features == hf.features and again.to_list() == hf.to_list()


def test_splits_selections_and_shards(tmp_path):
    hf = explicit()
    split = datasets.DatasetDict({"train": hf, "test": hf.select([1, 2])})
    with pytest.raises(TypeError, match="'train'"):
        lt.write(tmp_path / "x.arrow", split)
    picked = hf.shuffle(seed=1).select(range(5))  # an indices mapping
    lt.write(tmp_path / "picked.arrow", picked)
    assert lt.open(tmp_path / "picked.arrow").to_huggingface().to_list() == picked.to_list()
    with pytest.raises(KeyError, match="nope"):
        lt.from_huggingface(hf, tmp_path / "y.arrow", dtype={"nope": "float32"})


def test_nullable_lists_are_side_columns_and_come_back(tmp_path):
    hf = datasets.Dataset.from_dict(
        {"flags": [[True, None], None, [False]], "scores": [[0.5, None], [], None], "n": [1, 2, 3]}
    )
    lt.write(tmp_path / "n.arrow", hf)
    assert kinds(tmp_path / "n.arrow") == {"flags": "side", "scores": "side", "n": "tensor"}
    back = lt.open(tmp_path / "n.arrow").to_huggingface()
    assert back.features == hf.features and back.to_list() == hf.to_list()


def test_to_huggingface_shares_the_mapping(tmp_path):
    from conftest import inside_mapping

    hf = explicit()
    path = tmp_path / "hf.arrow"
    lt.from_huggingface(hf, path)
    back = lt.open(path).to_huggingface()
    emb = back.data.table["emb"].chunks[0]  # fixed-length lists: the file's values as they are
    values = np.frombuffer(emb.values.buffers()[1], dtype=np.float32)
    assert inside_mapping(values, path)


def test_a_dataset_with_string_ids_converts_to_shards_as_it_is(tmp_path):
    hf = explicit()
    manifest = lt.from_huggingface(hf, str(tmp_path / "shards") + "/")
    assert manifest["version"] == 2
    back = lt.open(tmp_path / "shards").to_huggingface()
    assert back.to_list() == hf.to_list()
    # Each shard's file keeps HF's features, so the shards give them back too.
    assert back.features == hf.features


def test_write_shards_keeps_the_schema_metadata_in_every_shard(tmp_path):
    table = pa.table({"x": pa.array([[1.0], [2.0, 3.0], []], pa.list_(pa.float32()))})
    table = table.replace_schema_metadata({"origin": "test"})
    lt.write_shards(tmp_path / "s", table, shard_rows=1)
    files = sorted((tmp_path / "s").glob("*.arrow"))
    assert len(files) == 3
    assert all(lt.open(f).schema.metadata[b"origin"] == b"test" for f in files)
