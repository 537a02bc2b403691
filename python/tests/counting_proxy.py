"""An HTTP proxy on 127.0.0.1 in front of the S3 server that counts every request by
method and object name (range reads apart), and the bytes of the bodies it answered, for
the tests and benchmarks that bound what a rank asks the store for; `requests()` lists each
request's method, path and Range header in the order received; with `tls`, it speaks HTTPS
with a self-signed certificate; with `immutable`, it answers the GETs of the objects it
names from a copy of each fetched once."""

from __future__ import annotations

import datetime
import http.client
import http.server
import ssl
import sys
import tempfile
import threading
from collections import Counter
from urllib.parse import unquote, urlsplit


class CountingProxy:
    """Forwards to `upstream_port`; `counts()` gives {(method, name, ranged): n},
    `body_bytes()` {(method, name, ranged): bytes of the bodies answered}, `requests()`
    [(method, path, Range header or None)].

    Each client connection keeps one connection to the server open. With `immutable` (a
    predicate on an object's name), the proxy fetches such an object whole (one GET
    without a Range) the first time a client asks for it, keeps it, and answers that GET
    and every later one (any range) from memory, counted as any other: the counts are
    what the clients asked, the store is asked once per object (moto spends a millisecond
    or more of Python on each request, which would bound a test of thousands of them). A
    PUT, POST or DELETE through the proxy drops what it kept of that path."""

    def __init__(self, upstream_port: int, tls: bool = False, immutable=None) -> None:
        self.lock = threading.Lock()
        self.seen: Counter = Counter()
        self.sent: Counter = Counter()
        self.log: list[tuple[str, str, str | None]] = []
        self.kept: dict[str, tuple[list, bytes]] = {}
        self.upstream_port, self.immutable = upstream_port, immutable
        self.server = _Server(("127.0.0.1", 0), _Handler)
        self.server.proxy = self
        if tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            with tempfile.TemporaryDirectory() as tmp:
                context.load_cert_chain(*_self_signed(tmp))
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        scheme = "https" if tls else "http"
        self.endpoint = f"{scheme}://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def reset(self) -> None:
        with self.lock:
            self.seen.clear()
            self.sent.clear()
            self.log.clear()

    def counts(self) -> Counter:
        with self.lock:
            return Counter(self.seen)

    def body_bytes(self) -> Counter:
        with self.lock:
            return Counter(self.sent)

    def requests(self) -> list[tuple[str, str, str | None]]:
        with self.lock:
            return list(self.log)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class _Handler(http.server.BaseHTTPRequestHandler):
    """A client's connection to the proxy."""

    protocol_version = "HTTP/1.1"
    # An answer goes out as two writes (the head, then the body): with Nagle's algorithm
    # the second waits for the client's delayed ACK of the first, about 40 ms a request.
    disable_nagle_algorithm = True
    upstream: http.client.HTTPConnection | None = None

    @property
    def proxy(self) -> CountingProxy:
        return self.server.proxy  # type: ignore[attr-defined]

    def log_message(self, *args) -> None:
        pass

    def _ask(self, body: bytes | None, whole: bool = False) -> tuple[int, str, list, bytes]:
        """The server's answer (status, reason, headers, body) to this request
        (`whole`: without its Range), on this connection's kept connection to
        it (opened again if the server closed it)."""
        skip = ("host", "range") if whole else ("host",)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in skip}
        headers["Host"] = f"127.0.0.1:{self.proxy.upstream_port}"
        for attempt in range(2):
            reused = self.upstream is not None
            if not reused:
                self.upstream = http.client.HTTPConnection("127.0.0.1", self.proxy.upstream_port, timeout=60)
            try:
                self.upstream.request(self.command, self.path, body=body, headers=headers)
                response = self.upstream.getresponse()
                data = response.read()
            except (http.client.HTTPException, OSError):
                self.upstream.close()
                self.upstream = None
                if reused and attempt == 0:
                    continue  # the server closed a kept connection: once more, anew
                raise
            if response.will_close:
                self.upstream.close()
                self.upstream = None
            return response.status, response.reason, response.getheaders(), data
        raise AssertionError("unreachable")

    def _from_kept(self, path: str) -> tuple[int, str, list, bytes] | None:
        """The answer from the object kept at `path` (fetched whole when it is not
        kept yet); None when the server did not give it whole or the Range is
        not one this slices (the request then goes to the server as it is)."""
        with self.proxy.lock:
            kept = self.proxy.kept.get(path)
        if kept is None:
            status, _, headers, data = self._ask(None, whole=True)
            if status != 200:
                return None
            kept = ([(k, v) for k, v in headers if k.lower() != "content-length"], data)
            with self.proxy.lock:
                self.proxy.kept[path] = kept
        headers, data = kept
        asked = self.headers.get("Range")
        if asked is None:
            return 200, "OK", headers, data
        span = _span(asked, len(data))
        if span is None:
            return None
        first, last = span
        headers = headers + [("Content-Range", f"bytes {first}-{last}/{len(data)}")]
        return 206, "Partial Content", headers, data[first : last + 1]

    def _forward(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        path = unquote(urlsplit(self.path).path)
        name = path.rsplit("/", 1)[-1]
        key = (self.command, name, "Range" in self.headers)
        with self.proxy.lock:
            self.proxy.seen[key] += 1
            self.proxy.log.append((self.command, path, self.headers.get("Range")))
            if self.command in ("PUT", "POST", "DELETE"):
                self.proxy.kept.pop(path, None)
        answer = None
        if self.command == "GET" and self.proxy.immutable is not None and self.proxy.immutable(name):
            answer = self._from_kept(path)
        if answer is None:
            answer = self._ask(body)
        status, reason, headers, data = answer
        with self.proxy.lock:
            self.proxy.sent[key] += len(data)
        self.send_response(status, reason)
        # A HEAD's Content-Length is the object's, passed on as it is.
        dropped = ("transfer-encoding", "connection") + (("content-length",) if self.command != "HEAD" else ())
        for k, v in headers:
            if k.lower() not in dropped:
                self.send_header(k, v)
        if self.command != "HEAD":
            self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def finish(self) -> None:
        super().finish()
        if self.upstream is not None:
            self.upstream.close()

    do_GET = do_PUT = do_HEAD = do_POST = do_DELETE = _forward


class _Server(http.server.ThreadingHTTPServer):
    proxy: CountingProxy
    daemon_threads = True
    # Room for every connection a rank's range requests open at once (the default
    # backlog of 5 drops connections under several ranks' requests in flight).
    request_queue_size = 1024

    def handle_error(self, request, client_address) -> None:
        # A client that exits with a kept connection open resets it: not an error.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def _span(header: str, size: int) -> tuple[int, int] | None:
    """The first and last byte a Range header (`bytes=A-B`, `bytes=A-`, `bytes=-N`) asks
    of an object of `size` bytes; None for any other form or a range past its end."""
    unit, _, spec = header.partition("=")
    first, dash, last = spec.strip().partition("-")
    if unit.strip() != "bytes" or not dash or "," in spec:
        return None
    try:
        if first == "":
            n = int(last)
            return (max(size - n, 0), size - 1) if 0 < n and size > 0 else None
        a, b = int(first), int(last) if last else size - 1
    except ValueError:
        return None
    return (a, min(b, size - 1)) if 0 <= a <= b and a < size else None


def _self_signed(directory: str) -> tuple[str, str]:
    """A certificate for 127.0.0.1 signed by its own key: the paths of both, PEM."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    import ipaddress

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = f"{directory}/cert.pem", f"{directory}/key.pem"
    with open(cert_path, "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(key_path, "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return cert_path, key_path
