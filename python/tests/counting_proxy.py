"""An HTTP proxy on 127.0.0.1 in front of the S3 server that counts every request by
method and object name (range reads apart), and the bytes of the bodies it answered, for
the tests and benchmarks that bound what a rank asks the store for; `requests()` lists each
request's method, path and Range header in the order received; with `tls`, it speaks HTTPS
with a self-signed certificate."""

from __future__ import annotations

import datetime
import http.client
import http.server
import ssl
import tempfile
import threading
from collections import Counter
from urllib.parse import unquote, urlsplit


class CountingProxy:
    """Forwards to `upstream_port`; `counts()` gives {(method, name, ranged): n},
    `body_bytes()` {(method, name, ranged): bytes of the bodies answered}, `requests()`
    [(method, path, Range header or None)]."""

    def __init__(self, upstream_port: int, tls: bool = False) -> None:
        self.lock = threading.Lock()
        self.seen: Counter = Counter()
        self.sent: Counter = Counter()
        self.log: list[tuple[str, str, str | None]] = []
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                name = unquote(urlsplit(self.path).path.rsplit("/", 1)[-1])
                with proxy.lock:
                    proxy.seen[(self.command, name, "Range" in self.headers)] += 1
                    proxy.log.append((self.command, unquote(urlsplit(self.path).path), self.headers.get("Range")))
                upstream = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=60)
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                headers["Host"] = f"127.0.0.1:{upstream_port}"
                upstream.request(self.command, self.path, body=body, headers=headers)
                response = upstream.getresponse()
                data = response.read()
                with proxy.lock:
                    proxy.sent[(self.command, name, "Range" in self.headers)] += len(data)
                self.send_response(response.status, response.reason)
                # A HEAD's Content-Length is the object's, passed on as it is.
                dropped = ("transfer-encoding", "connection") + (("content-length",) if self.command != "HEAD" else ())
                for k, v in response.getheaders():
                    if k.lower() not in dropped:
                        self.send_header(k, v)
                if self.command != "HEAD":
                    self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                upstream.close()

            do_GET = do_PUT = do_HEAD = do_POST = do_DELETE = _forward

        class Server(http.server.ThreadingHTTPServer):
            # Room for every connection a rank's range requests open at once (the default
            # backlog of 5 drops connections under several ranks' requests in flight).
            request_queue_size = 1024

        self.server = Server(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
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
