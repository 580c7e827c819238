"""An HTTP server on 127.0.0.1 that answers every GET and every POST with one fixed status,
content type and body: a web server that is not the API a client expects."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Canned:
    """``with Canned(200, b"<html>", "text/html") as s: ... s.url`` (``.../v1``)."""

    def __init__(self, status: int, body: bytes, content_type: str):
        canned = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                self.send_response(canned.status)
                self.send_header("Content-Type", canned.content_type)
                self.send_header("Content-Length", str(len(canned.body)))
                self.end_headers()
                self.wfile.write(canned.body)

            do_GET = do_POST = _answer  # noqa: N815 - the http.server hooks' names

            def log_message(self, *args):
                pass

        self.status, self.body, self.content_type = status, body, content_type
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "Canned":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
