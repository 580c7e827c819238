"""Who may use the runner: the bind policy and the bearer-token check.

The runner executes code it is sent (docs/architecture.md, "Security"). It binds to 127.0.0.1 by
default; any address that is not a loopback address needs a token, and ``check_bind`` refuses
to start without one. With a token, ``TokenMiddleware`` answers 401 to every request whose
``Authorization`` header is not ``Bearer <token>``, before the body is read. Tokens are compared
in constant time (``hmac.compare_digest``) and never logged.
"""

from __future__ import annotations

import hmac
import ipaddress
import json

MIN_TOKEN_CHARS = 16


class BindRefused(ValueError):
    """The requested bind address and token are not allowed together; the message says why
    and what to do."""


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


def check_bind(host: str, token: str | None) -> None:
    """Raises ``BindRefused`` when ``host`` is not loopback and there is no token, or when a
    token is shorter than ``MIN_TOKEN_CHARS``."""
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise BindRefused(f"the token must have at least {MIN_TOKEN_CHARS} characters, found "
                          f"{len(token)}; make one with: python -c 'import secrets; "
                          f"print(secrets.token_urlsafe(32))'")
    if not is_loopback(host) and not token:
        raise BindRefused(
            f"refusing to listen on {host} without a token: the runner executes the CUDA code it "
            f"is sent, so any address other than 127.0.0.1/::1 needs --token TOKEN (or the "
            f"environment variable CUDALENS_RUNNER_TOKEN); clients send it as 'Authorization: "
            f"Bearer TOKEN'")


def _unauthorized(message: str):
    body = json.dumps({"error": "unauthorized", "message": message}).encode()
    return {"type": "http.response.start", "status": 401,
            "headers": [(b"content-type", b"application/json"),
                        (b"content-length", str(len(body)).encode()),
                        (b"www-authenticate", b'Bearer realm="cudalens-runner"')]}, \
        {"type": "http.response.body", "body": body}


class TokenMiddleware:
    """ASGI middleware: 401 for HTTP requests without ``Authorization: Bearer <token>``."""

    def __init__(self, app, token: str):
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        given = b""
        for name, value in scope.get("headers", ()):
            if name == b"authorization":
                given = value
                break
        if not hmac.compare_digest(given, self._expected):
            msg = ("this runner needs a token: send 'Authorization: Bearer TOKEN' (the client "
                   "reads it from CUDALENS_RUNNER_TOKEN)" if not given else
                   "the token sent in the Authorization header is not this runner's token")
            start, body = _unauthorized(msg)
            await send(start)
            await send(body)
            return
        await self.app(scope, receive, send)
