"""A cap on request body size: 413 before the application sees a byte of a larger body.

A declared ``Content-Length`` above the cap is refused at once; a body sent without one
(chunked) is counted as it arrives and refused when it passes the cap. Bodies within the cap
are buffered (they are at most the cap) and handed on unchanged.
"""

from __future__ import annotations

import json

DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024


async def _send_error(send, status: int, code: str, message: str) -> None:
    body = json.dumps({"error": code, "message": message}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


class BodyLimitMiddleware:
    """ASGI middleware refusing request bodies over ``max_bytes`` with 413."""

    def __init__(self, app, max_bytes: int = DEFAULT_MAX_BODY_BYTES):
        self.app = app
        self.max_bytes = max_bytes

    def _too_large(self, size: str) -> str:
        return (f"request body is {size} bytes; this runner accepts at most {self.max_bytes} "
                f"bytes (cudalens runner --max-body-bytes)")

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope.get("headers", ())).get(b"content-length")
        if declared is not None:
            try:
                length = int(declared)
            except ValueError:
                return await _send_error(send, 400, "bad_content_length",
                                         f"Content-Length must be an integer, found "
                                         f"{declared[:40].decode('latin-1')!r}")
            if length > self.max_bytes:
                return await _send_error(send, 413, "body_too_large", self._too_large(str(length)))
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                return await _send_error(send, 413, "body_too_large",
                                         self._too_large(f"more than {self.max_bytes}"))
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay():
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)
