"""A real S3 API on 127.0.0.1 for the tests of datasets in object storage: moto's server,
started on a free port and stopped with the test session, and a TCP proxy in front of it
that drops every n-th connection (the transient faults retries must absorb)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

# `python -m moto.server`, less two costs of every request: moto lists its own package
# directory (about 180 `stat` calls) to find the service a request is for, and werkzeug
# formats a log line no one reads; about 40 % of moto's CPU a GET or PUT. And one route of
# the tests' own, `POST /_load` of {"bucket": name, "objects": [[key, local path], ...]}:
# each file stored as the object `key` by the backend call a PUT makes, in that order, at
# a tenth of a millisecond each instead of a PUT's milliseconds (a dataset of thousands
# of shards is in the bucket in a second).
SERVE = """
import json, logging, sys
from pathlib import Path
from moto import backends
import moto.server
from moto.core import DEFAULT_ACCOUNT_ID
from moto.s3.models import s3_backends

modules = frozenset(backends.list_of_moto_modules())
backends.list_of_moto_modules = lambda: modules
logging.getLogger("werkzeug").setLevel(logging.ERROR)


class App(moto.server.DomainDispatcherApplication):
    def __call__(self, environ, start_response):
        if environ.get("PATH_INFO") != "/_load":
            return super().__call__(environ, start_response)
        length = int(environ.get("CONTENT_LENGTH") or 0)
        request = json.loads(environ["wsgi.input"].read(length))
        backend = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]
        with self.lock:
            for key, path in request["objects"]:
                backend.put_object(request["bucket"], key, Path(path).read_bytes())
        start_response("200 OK", [("Content-Length", "0")])
        return [b""]


moto.server.DomainDispatcherApplication = App
moto.server.main(sys.argv[1:])
"""
ACCESS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing", "aws_region": "us-east-1"}


@pytest.fixture(scope="module")
def s3():
    """moto's S3 server for a test module (skipped without moto and boto3)."""
    pytest.importorskip("moto")
    pytest.importorskip("boto3")
    server = S3Server()
    yield server
    server.stop()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class S3Server:
    """moto's S3 server on 127.0.0.1: `endpoint`, `storage_options()`, `client()`."""

    def __init__(self, env: dict | None = None) -> None:
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [sys.executable, "-c", SERVE, "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, **(env or {})},
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(self.endpoint + "/moto-api/", timeout=1)
                break
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("moto's S3 server did not start")
                time.sleep(0.1)

    def storage_options(self, endpoint: str | None = None) -> dict:
        return {**ACCESS, "aws_endpoint": endpoint or self.endpoint, "aws_allow_http": "true"}

    def client(self):
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            region_name="us-east-1",
        )

    def upload_dir(self, local: Path, bucket: str, prefix: str) -> str:
        """Copies the files of the directory `local` (not subdirectories) to the bucket
        (created if missing) under `prefix`, the manifest last (a reader never sees a
        manifest whose shards are missing); returns the dataset's URL."""
        files = [p for p in sorted(Path(local).iterdir()) if p.is_file() and not p.name.startswith("_lodtensor.lock")]
        files.sort(key=lambda p: p.name == "_lodtensor.json")
        self.load(bucket, [(f"{prefix}/{p.name}", p) for p in files])
        return f"s3://{bucket}/{prefix}/"

    def load(self, bucket: str, objects: list[tuple[str, Path]]) -> None:
        """Stores each file as the object `key` of the bucket (created if missing), in
        the order given, straight into moto's backend (`POST /_load`, `SERVE`): one
        request for them all."""
        client = self.client()
        if bucket not in [b["Name"] for b in client.list_buckets().get("Buckets", [])]:
            client.create_bucket(Bucket=bucket)
        body = json.dumps({"bucket": bucket, "objects": [(k, str(Path(p).resolve())) for k, p in objects]})
        urllib.request.urlopen(urllib.request.Request(self.endpoint + "/_load", body.encode(), method="POST"))

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()


def pipe(src: socket.socket, dst: socket.socket, count=None) -> None:
    """Copies what `src` sends to `dst` until either side closes, then shuts both down;
    `count(n)` (when given) sees the size of each piece copied."""
    try:
        while data := src.recv(1 << 20):
            dst.sendall(data)
            if count is not None:
                count(len(data))
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class FaultProxy:
    """A TCP proxy to `port` on 127.0.0.1 that closes every `every`-th connection it
    accepts without answering (a connection reset mid-request)."""

    def __init__(self, port: int, every: int = 5) -> None:
        self.target, self.every = port, every
        self.accepted = self.dropped = 0
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.endpoint = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            self.accepted += 1
            if self.accepted % self.every == 0:
                self.dropped += 1
                client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                client.close()
                continue
            upstream = socket.create_connection(("127.0.0.1", self.target))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=pipe, args=(a, b), daemon=True).start()

    def close(self) -> None:
        self.listener.close()
