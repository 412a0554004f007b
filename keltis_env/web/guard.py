"""Who may ask the server: every request is checked before a route sees it.

A server on this machine is still reachable from any page the person's browser opens, so

* the ``Host`` header must name the server's own address (:func:`allowed_hosts`: the bound
  address and ``localhost``, ``127.0.0.1``, ``[::1]``, with the server's port). A page of
  another site whose name was made to resolve to 127.0.0.1 (DNS rebinding) sends its own
  name, and is refused before it can read a game, a replay or a record;
* a request from a page of another origin (an ``Origin`` header other than the server's
  own, or ``Sec-Fetch-Site: cross-site`` / ``same-site``) is refused, so another site cannot
  make games, fill the cap or save files;
* a request body must be ``application/json`` (an upload included), which a page of another
  site cannot send without the browser asking the server first (a CORS preflight, which the
  server never grants).

Each refusal is a JSON 4xx like every other (``{"error": ...}``) and reaches no route, so it
leaves nothing behind.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

#: the names every server answers to, whatever address it binds
LOCAL_NAMES = ("localhost", "127.0.0.1", "[::1]")
#: the bound addresses that mean every address of this machine
WILDCARD_HOSTS = ("0.0.0.0", "::", "")
#: the methods whose body the server reads
BODY_METHODS = ("POST", "PUT", "PATCH", "DELETE")

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


def _bracket(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def machine_names() -> set[str]:
    """This machine's host names and their addresses (for a server bound to every address)."""
    names: set[str] = set()
    try:
        hostname = socket.gethostname()
        names |= {hostname, socket.getfqdn()}
        names |= set(socket.gethostbyname_ex(hostname)[2])
    except OSError:
        pass
    # the address other machines reach this one at (a host name often resolves to 127.0.1.1):
    # the source address of a route out, found by a UDP socket's connect, which sends nothing
    for family, probe in ((socket.AF_INET, "192.0.2.1"), (socket.AF_INET6, "2001:db8::1")):
        try:
            with socket.socket(family, socket.SOCK_DGRAM) as udp:
                udp.connect((probe, 9))
                names.add(udp.getsockname()[0])
        except OSError:
            continue
    return {_bracket(name) for name in names if name}


def allowed_hosts(host: str, port: int, extra: Iterable[str] = ()) -> frozenset[str]:
    """The ``Host`` header values of a server bound to ``host``:``port``: the local names and
    the bound address (a wildcard address: this machine's names and addresses too), each with
    the port (and without it on port 80), lower case; ``extra`` names more host names."""
    names = set(LOCAL_NAMES) | {_bracket(host)} | {_bracket(name) for name in extra}
    if host in WILDCARD_HOSTS:
        names |= machine_names()
    names.discard("")
    hosts = {f"{name}:{port}" for name in names}
    if port == 80:
        hosts |= names
    return frozenset(h.lower() for h in hosts)


def _shown(text: str, limit: int = 60) -> str:
    """A header value for a message: its repr, cut to ``limit`` characters."""
    shown = repr(text)
    return shown if len(shown) <= limit else shown[: limit - 4] + "...'"


def refusal(method: str, headers: dict[str, str], hosts: frozenset[str]) -> tuple[int, str] | None:
    """Why a request with ``method`` and ``headers`` (lower-case names) is refused, as
    ``(status, message)``; ``None`` when it may go on."""
    host = headers.get("host", "").strip().lower()
    first = sorted(hosts)[0] if hosts else "127.0.0.1"
    if host not in hosts:
        return 421, (f"this server answers only at its own address ({', '.join(sorted(hosts))}); "
                     f"the request was addressed to {_shown(host) if host else 'no host'}")
    origin = headers.get("origin")
    if origin is not None and origin.strip().lower() not in {f"http://{h}" for h in hosts}:
        return 403, (f"a request from another site ({_shown(origin)}) is refused; "
                     f"use the page at http://{first}/")
    fetch_site = headers.get("sec-fetch-site", "").strip().lower()
    if fetch_site in ("cross-site", "same-site"):
        return 403, f"a request from another site (Sec-Fetch-Site: {fetch_site}) is refused; use the page at http://{first}/"
    if method in BODY_METHODS:
        length = headers.get("content-length", "").strip()
        has_body = "transfer-encoding" in headers or (length != "" and length != "0")
        media = headers.get("content-type", "").split(";")[0].strip().lower()
        if has_body and media != "application/json":
            given = _shown(headers["content-type"]) if "content-type" in headers else "none"
            return 415, f"a request body must be sent as Content-Type: application/json, got {given}"
    return None


class RequestGuard:
    """ASGI middleware: answers a refused HTTP request (:func:`refusal`) itself, with a
    JSON error, and passes every other request (and the server's lifespan) on to ``app``."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]], hosts: frozenset[str]) -> None:
        self.app = app
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers: dict[str, str] = {}
        for name, value in scope.get("headers", ()):
            headers[name.decode("latin-1").lower()] = value.decode("latin-1")
        refused = refusal(str(scope.get("method", "GET")).upper(), headers, self.hosts)
        if refused is None:
            await self.app(scope, receive, send)
            return
        status, message = refused
        body = json.dumps({"error": message}).encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


__all__ = ["LOCAL_NAMES", "RequestGuard", "allowed_hosts", "machine_names", "refusal"]
