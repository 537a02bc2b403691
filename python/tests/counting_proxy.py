"""An HTTP proxy on 127.0.0.1 in front of the S3 server that counts every request by
method and object name (range reads apart), for the tests that bound what a rank asks
the store for."""

from __future__ import annotations

import http.client
import http.server
import threading
from collections import Counter
from urllib.parse import unquote, urlsplit


class CountingProxy:
    """Forwards to `upstream_port`; `counts()` gives {(method, name, ranged): n}."""

    def __init__(self, upstream_port: int) -> None:
        self.lock = threading.Lock()
        self.seen: Counter = Counter()
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
                upstream = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=60)
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                headers["Host"] = f"127.0.0.1:{upstream_port}"
                upstream.request(self.command, self.path, body=body, headers=headers)
                response = upstream.getresponse()
                data = response.read()
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

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def reset(self) -> None:
        with self.lock:
            self.seen.clear()

    def counts(self) -> Counter:
        with self.lock:
            return Counter(self.seen)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
