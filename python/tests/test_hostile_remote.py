"""Hostile manifests and options, locally and in a bucket (moto's S3 server on 127.0.0.1):
counts the bytes cannot hold, absurd options. What could abort the interpreter runs in a
child process, which must end with a typed exception, never a signal."""

import http.server
import json
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pyarrow as pa
import pytest

import lodtensor as lt
from s3_server import s3  # noqa: F401 (the fixture)

CHILD = """
import json, resource, sys
import lodtensor as lt
args = json.loads(sys.argv[1])
if args["memory"]:
    resource.setrlimit(resource.RLIMIT_AS, (args["memory"], args["memory"]))
try:
    ds = lt.open(args["path"], **args["open"])
    for batch in ds.loader(**args["loader"]):
        pass
except (lt.LodTensorError, OSError, MemoryError, OverflowError) as e:
    print(type(e).__name__, str(e)[:500])
    sys.exit(3)
print("no error")
"""

#: The address space a child may use: an allocation sized from an absurd number fails
#: (and, unchecked, aborts) well before the machine's memory is at stake.
CHILD_MEMORY = 4 << 30


def in_child(path, open_options=None, memory=CHILD_MEMORY, **loader) -> tuple[int, str]:
    """Opens `path` and runs a loader over it in a child process limited to `memory` bytes
    of address space: its exit code (3: an exception) and what it printed."""
    args = {
        "path": str(path),
        "open": open_options or {},
        "loader": loader or {"batch_size": 4},
        "memory": memory,
    }
    run = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(args)], capture_output=True, text=True, timeout=600
    )
    assert run.returncode in (0, 3), (run.returncode, run.stdout, run.stderr[-2000:])
    return run.returncode, run.stdout


def fails_in_child(path, open_options=None, **loader) -> str:
    """What a child process that opens `path` and runs a loader over it raised: its class
    name and message (a signal or a clean run fails the test)."""
    code, said = in_child(path, open_options, **loader)
    assert code == 3, said
    return said


def forged(shards_dir, tmp_path, name, change) -> Path:
    """A copy of `shards_dir` whose manifest's first shard `change` changed."""
    copy = tmp_path / name
    shutil.copytree(shards_dir, copy)
    manifest = json.loads((copy / "_lodtensor.json").read_text())
    change(manifest["shards"][0])
    (copy / "_lodtensor.json").write_text(json.dumps(manifest))
    return copy


def huge_rows(shard, bytes_too):
    shard["rows"] = 1 << 40
    for column in shard["columns"]:
        if column["sequences"]:
            column["sequences"][0] = 1 << 40
        else:
            column["elements"] = 1 << 40
    if bytes_too:
        shard["bytes"] = 1 << 40


def test_rows_the_bytes_cannot_hold_are_refused_with_the_manifest(shards_dir, tmp_path):
    path = forged(shards_dir, tmp_path, "rows", lambda s: huge_rows(s, False))
    with pytest.raises(lt.InvalidFileError, match=r"shards\[0\].*more than the shard's \d+ bytes"):
        lt.open(path)


def test_rows_a_forged_size_allows_fail_in_a_loader_without_an_abort(shards_dir, tmp_path):
    path = forged(shards_dir, tmp_path, "rows_bytes", lambda s: huge_rows(s, True))
    said = fails_in_child(path)
    assert said.startswith(("MemoryError", "InvalidFileError")), said


def test_rows_a_forged_size_allows_fail_in_a_measured_plan_without_an_abort(shards_dir, tmp_path):
    # Without the lengths index a token budget measures the shards: the room it makes for
    # the lengths comes from the manifest's numbers before any shard is read.
    path = forged(shards_dir, tmp_path, "rows_measured", lambda s: huge_rows(s, True))
    manifest = json.loads((path / "_lodtensor.json").read_text())
    manifest.pop("index", None)
    (path / "_lodtensor.json").write_text(json.dumps(manifest))
    said = fails_in_child(path, token_budget=64)
    assert said.startswith(("MemoryError", "InvalidFileError")), said


@pytest.mark.parametrize("bytes_", [1 << 62, 1 << 50])
def test_a_bucket_shard_claiming_huge_bytes_fails_on_first_touch(s3, shards_dir, tmp_path, bytes_):
    def change(shard):
        shard["bytes"] = bytes_

    url = s3.upload_dir(forged(shards_dir, tmp_path, "big", change), "hostile", f"bytes{bytes_}")
    options = {"storage_options": s3.storage_options(), "cache_dir": str(tmp_path / "cache")}
    said = fails_in_child(url, options)
    assert said.startswith("InvalidFileError") and f"{bytes_}" in said and "bytes" in said, said


def test_bucket_rows_a_forged_size_allows_fail_without_an_abort(s3, shards_dir, tmp_path):
    local = forged(shards_dir, tmp_path, "rows", lambda s: huge_rows(s, True))
    url = s3.upload_dir(local, "hostile", "rows")
    options = {"storage_options": s3.storage_options(), "cache_dir": str(tmp_path / "cache")}
    said = fails_in_child(url, options)
    assert said.startswith(("MemoryError", "InvalidFileError")), said


@pytest.mark.parametrize("prefetch", [2**33, 10**8])
def test_a_prefetch_depth_past_the_epoch_costs_nothing(shards_dir, prefetch):
    assert in_child(shards_dir, batch_size=4, prefetch=prefetch) == (0, "no error\n")


@pytest.mark.parametrize("buckets", [2**30, 2**40])
def test_more_quantile_buckets_than_samples_cost_nothing(shards_dir, buckets):
    loader = {"batch_size": 4, "length_column": "tokens", "buckets": buckets}
    assert in_child(shards_dir, **loader) == (0, "no error\n")


def test_a_padded_window_longer_than_the_data_is_refused_naming_pack(shards_dir):
    code, said = in_child(shards_dir, batch_size=1, pack=2**31, pack_pad_last=True)
    assert code == 3 and said.startswith("ArgumentError") and "pack" in said, said


def test_an_option_out_of_range_raises_an_argument_error_naming_it(shards_dir):
    ds = lt.open(shards_dir)
    with pytest.raises(lt.ArgumentError, match="prefetch") as raised:
        ds.loader(batch_size=4, prefetch=2**70)
    assert isinstance(raised.value.__cause__, OverflowError)
    with pytest.raises(lt.ArgumentError, match="buckets"):
        ds.loader(batch_size=4, buckets=[3, 2**64])
    with pytest.raises(lt.ArgumentError, match="seed"):
        ds.loader(batch_size=4, shuffle=True, seed=-1)


@pytest.mark.parametrize("option", ["shard_rows", "shard_bytes", "batch_bytes"])
@pytest.mark.parametrize("value", [0, -1, 2**64, 10**40])
def test_a_size_option_zero_negative_or_huge_is_refused_naming_it(tmp_path, option, value):
    table = pa.table({"x": pa.array([[1, 2], [3]], type=pa.list_(pa.int64()))})
    with pytest.raises(lt.ArgumentError, match=option):
        lt.ShardWriter(tmp_path / "w", **{option: value})
    with pytest.raises(lt.ArgumentError, match=option):
        lt.write_shards(tmp_path / "s", table, **{option: value})
    if option == "batch_bytes":
        with pytest.raises(lt.ArgumentError, match=option):
            lt.write(tmp_path / "f.arrow", table, batch_bytes=value)
    with pytest.raises(TypeError, match=option):
        lt.ShardWriter(tmp_path / "w", **{option: "12"})
    assert not (tmp_path / "s" / "_lodtensor.json").exists()


def test_errors_echo_a_bounded_part_of_a_huge_value(shards_dir):
    loader = lt.open(shards_dir).loader(batch_size=4)
    huge = "9" * 50_000_000
    state = loader.state_dict()
    with pytest.raises(lt.ArgumentError) as raised:
        loader.load_state_dict({**state, "epoch": huge})
    message = str(raised.value)
    assert len(message) <= 1000 and "bytes elided" in message, len(message)
    with pytest.raises(lt.ArgumentError) as raised:
        loader.load_state_dict({**state, "fingerprint": {"options": huge}})
    assert len(str(raised.value)) <= 1000


class _Recorder(http.server.BaseHTTPRequestHandler):
    """Serves the files of `root` (GET, HEAD with ranges unsupported: whole files), 404 for
    a path with an empty segment; `redirect` (an origin) answers every request with a 307
    there instead. Every request's path and headers go to `seen`."""

    root: Path | None = None
    redirect: str | None = None
    seen: list

    def log_message(self, *args):
        pass

    def _answer(self, body: bool):
        self.seen.append((self.path, dict(self.headers)))
        if self.redirect:
            self.send_response(307)
            self.send_header("Location", self.redirect + self.path)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        path = self.path.split("?")[0]
        file = self.root / path.lstrip("/") if self.root else None
        if "//" in path or file is None or not file.is_file():
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        data = file.read_bytes()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Last-Modified", "Wed, 21 Oct 2015 07:28:00 GMT")
        self.send_header("ETag", '"1"')
        self.end_headers()
        if body:
            self.wfile.write(data)

    def do_GET(self):
        self._answer(True)

    def do_HEAD(self):
        self._answer(False)


def _serve(root=None, redirect=None):
    """A server of `_Recorder` on 127.0.0.1 in a thread: (server, its origin, what it saw)."""
    seen = []
    handler = type("Handler", (_Recorder,), {"root": root, "redirect": redirect, "seen": seen})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}", seen


def test_an_http_dataset_under_a_path_is_requested_without_an_empty_segment(shards_dir, tmp_path):
    root = tmp_path / "site"
    shutil.copytree(shards_dir, root / "data" / "docs")
    server, origin, seen = _serve(root=root)
    try:
        ds = lt.open(f"{origin}/data/docs/", storage_options={"allow_http": "true"}, cache_dir=tmp_path / "c")
        assert len(ds) == 200
    finally:
        server.shutdown()
    assert seen and not any("//" in path for path, _ in seen), seen


def test_no_redirect_is_followed_to_another_origin(tmp_path):
    target, target_origin, reached = _serve()
    redirector, origin, _ = _serve(redirect=target_origin)
    options = {
        "aws_endpoint": origin,
        "aws_allow_http": "true",
        "aws_access_key_id": "testing",
        "aws_secret_access_key": "testing",
        "aws_session_token": "secret-token",
        "aws_region": "us-east-1",
    }
    try:
        with pytest.raises(OSError):
            lt.open("s3://bucket/data/", storage_options=options, cache_dir=tmp_path / "c")
    finally:
        redirector.shutdown()
        target.shutdown()
    assert reached == [], reached


def test_a_bad_pending_manifest_is_reported_and_skipped(s3, tmp_path):
    from conftest import documents

    options = s3.storage_options()
    url = "s3://hostile/pending/"
    if "hostile" not in [b["Name"] for b in s3.client().list_buckets().get("Buckets", [])]:
        s3.client().create_bucket(Bucket="hostile")
    lt.write_shards(url, documents(40, seed=3), mode="pending", prefix="w0", storage_options=options)
    s3.client().put_object(Bucket="hostile", Key="pending/_lodtensor.pending.w7.a.json", Body=b"{")
    with pytest.warns(UserWarning, match=r"_lodtensor\.pending\.w7\.a\.json"):
        manifest = lt.commit(url, storage_options=options)
    assert sum(s["rows"] for s in manifest["shards"]) == 40
    assert lt._native.pending_prefixes(url, options) == ["w7"]


def test_a_batch_dataset_state_with_a_huge_value_gives_a_bounded_error(shards_dir):
    pytest.importorskip("torch")
    from lodtensor.torch import BatchDataset

    data = BatchDataset(str(shards_dir), batch_size=4)
    with pytest.raises(lt.ArgumentError) as raised:
        data.load_state_dict({"loader": {}, "workers": "7" * 50_000_000})
    assert len(str(raised.value)) <= 1000
