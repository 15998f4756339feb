"""Receiving Boomerang's callbacks: verify each delivery's signature, and hand it to the
handler registered for its alias.

A `Receiver` is mounted at a path of your application (``/callbacks``); a task's
callback URL is that path plus an alias (``https://app.example/callbacks/payment-reminder``,
see `callback_url`), and the alias picks the handler. The core, `Receiver.handle`, is
framework-free (method, path, headers and raw body in; status, headers and body out);
`Receiver.wsgi` and `Receiver.asgi` serve it as a WSGI or an ASGI application.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import math
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, TypeVar
from urllib.parse import quote, unquote

from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

__all__ = ["Delivery", "PermanentFailure", "Receiver", "Response", "RetryLater"]

log = logging.getLogger(__name__)

Handler = Callable[["Delivery"], Any]
H = TypeVar("H", bound=Handler)


class RetryLater(Exception):
    """Raise from a handler to have Boomerang try the delivery again later.

    Without ``seconds`` the answer is ``500``, and the task's retry policy picks the next
    attempt. With ``seconds`` it is ``503`` with ``Retry-After: seconds``, which Boomerang
    honours (up to the policy's longest wait), but note: it pauses **the whole
    destination** (every task calling this host), not only this task, for that long. Give
    seconds only when the receiver itself is overloaded or down for maintenance.
    """

    def __init__(self, seconds: float | None = None, message: str = "") -> None:
        super().__init__(message or "retry later")
        if seconds is not None and seconds < 0:
            raise ValueError("seconds must not be negative")
        self.seconds = seconds


class PermanentFailure(Exception):
    """Raise from a handler when the delivery can never succeed: the answer is ``410 Gone``,
    and Boomerang fails the task at once, without retrying (it is dead-lettered, and an
    alert is raised if the task asks for one)."""


@dataclass(frozen=True)
class Delivery:
    """One verified delivery, as a handler receives it."""

    alias: str
    """The alias it was routed by (the callback URL's last path segment)."""
    task_id: str
    """The task's id (``webhook-id``): the same on every attempt, so a key to deduplicate by."""
    attempt: int | None
    """The attempt number (``boomerang-attempt``, from 1); None if the header is absent."""
    timestamp: datetime
    """When this attempt was signed (``webhook-timestamp``)."""
    body: Any
    """The body: parsed if its content type says JSON (``application/json``, ``…+json``)
    and it parses, else its text (a body that says JSON and is not is handed over as
    text, not refused: Boomerang would send it again and again); None if empty."""
    raw_body: bytes
    method: str
    headers: Mapping[str, str]
    """The request's headers, by lower-case name."""


@dataclass(frozen=True)
class Response:
    """What the receiver answers: a status, headers, and a body."""

    status: int
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""


def _text(status: int, message: str, headers: Iterable[tuple[str, str]] = ()) -> Response:
    return Response(status, [("content-type", "text/plain; charset=utf-8"), *headers], message.encode())


class Receiver:
    """Verifies and dispatches Boomerang's deliveries by alias.

    ``secrets`` are the ``whsec_…`` signing secrets to accept: one, or several while a
    rotation is under way (a delivery carries a signature from every secret in force, and
    any one accepted secret verifies it). Verification is the stock ``standardwebhooks``
    library's, which also refuses a timestamp more than 5 minutes old or ahead.

    The answer to a delivery:

    - ``401`` if its signature does not verify, or its timestamp is stale or in the future
      (before anything else is looked at);
    - ``404`` if no handler is registered for its alias;
    - ``413`` if its body is over ``max_body`` bytes;
    - else the handler's: ``200`` if it returns (a returned ``str``, ``bytes`` or JSON value
      is the response body, as a task's ``expect_body`` may want), ``500`` or ``503`` if it
      raises `RetryLater`, ``410`` if it raises `PermanentFailure`, and ``500`` if it
      raises anything else (logged; Boomerang retries it).

    A handler is a function of one `Delivery`; it may be ``async``. Boomerang delivers an
    attempt at least once, so a handler may see an attempt twice: ``task_id`` is stable.
    """

    def __init__(self, secrets: str | Iterable[str], *, max_body: int = 1 << 20) -> None:
        secrets = [secrets] if isinstance(secrets, str) else list(secrets)
        if not secrets:
            raise ValueError("a receiver needs at least one signing secret")
        self._verifiers = [Webhook(secret) for secret in secrets]
        self._handlers: dict[str, Handler] = {}
        self.max_body = max_body

    def register(self, alias: str, handler: Handler) -> None:
        """Routes the deliveries whose callback URL ends in ``/{alias}`` to ``handler``."""
        if not alias or "/" in alias:
            raise ValueError(f"an alias is one non-empty path segment, not {alias!r}")
        if alias in self._handlers:
            raise ValueError(f"{alias!r} already has a handler")
        self._handlers[alias] = handler

    def on(self, alias: str) -> Callable[[H], H]:
        """Decorator form of `register`: ``@receiver.on("payment-reminder")``."""

        def decorate(handler: H) -> H:
            self.register(alias, handler)
            return handler

        return decorate

    def handle(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> Response:
        """Answers one request (for any server: the core of the WSGI app). ``path`` is the
        request's path as it was sent, percent-encoded: the alias is its last segment,
        decoded, so ``/callbacks/x%2Forder-paid`` is the alias ``x/order-paid`` (no handler:
        ``404``), not ``order-paid``. ``body`` is the raw bytes. An ``async`` handler is run
        to its end on an event loop of its own."""
        prepared = self._prepare(method, path, headers, body)
        if isinstance(prepared, Response):
            return prepared
        handler, delivery = prepared
        try:
            result = handler(delivery)
            if inspect.isawaitable(result):
                result = asyncio.run(_awaited(result))
        except Exception as error:
            return self._failure(delivery, error)
        return _success(result)

    async def handle_async(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> Response:
        """`handle` for an event loop (the core of the ASGI app): an ``async`` handler is
        awaited, any other runs in a worker thread, so that it blocks no other request."""
        prepared = self._prepare(method, path, headers, body)
        if isinstance(prepared, Response):
            return prepared
        handler, delivery = prepared
        try:
            if inspect.iscoroutinefunction(handler):
                result = await handler(delivery)
            else:
                result = await asyncio.to_thread(handler, delivery)
                if inspect.isawaitable(result):
                    result = await result
        except Exception as error:
            return self._failure(delivery, error)
        return _success(result)

    def _prepare(
        self, method: str, path: str, headers: Mapping[str, str], body: bytes
    ) -> Response | tuple[Handler, Delivery]:
        if len(body) > self.max_body:
            return _text(413, "body too large")
        headers = {name.lower(): value for name, value in headers.items()}
        if not self._verifies(body, headers):
            return _text(401, "signature does not verify")
        alias = _alias(path)
        handler = self._handlers.get(alias)
        if handler is None:
            return _text(404, f"no handler for {alias!r}")
        parsed = _parse(body, headers.get("content-type", ""))
        delivery = Delivery(
            alias=alias,
            task_id=headers["webhook-id"],
            attempt=_attempt(headers.get("boomerang-attempt", "")),
            timestamp=datetime.fromtimestamp(float(headers["webhook-timestamp"]), tz=timezone.utc),
            body=parsed,
            raw_body=body,
            method=method.upper(),
            headers=headers,
        )
        return handler, delivery

    def _verifies(self, body: bytes, headers: dict[str, str]) -> bool:
        for verifier in self._verifiers:
            try:
                verifier.verify(body, headers, json_parse=False)
                return True
            # A malformed header or a body that is not UTF-8 raises ValueError.
            except (WebhookVerificationError, ValueError):
                continue
        return False

    def _failure(self, delivery: Delivery, error: Exception) -> Response:
        if isinstance(error, RetryLater):
            if error.seconds is None:
                return _text(500, str(error))
            # Retry-After takes whole seconds: a fraction is rounded up.
            return _text(503, str(error), [("retry-after", str(math.ceil(error.seconds)))])
        if isinstance(error, PermanentFailure):
            return _text(410, str(error) or "gone")
        log.exception("handler for %r failed on task %s attempt %s", delivery.alias, delivery.task_id, delivery.attempt)
        return _text(500, "handler failed")

    def wsgi(self) -> Callable[..., Iterable[bytes]]:
        """This receiver as a WSGI application (Flask, Django, gunicorn, wsgiref…).
        Mounted under a prefix, the alias is still the path's last segment."""
        return _WsgiApp(self)

    def asgi(self) -> Callable[..., Awaitable[None]]:
        """This receiver as an ASGI application (Starlette, FastAPI, uvicorn…)."""
        return _AsgiApp(self)


def _alias(path: str) -> str:
    # The last segment of the path as sent, decoded only once it is split off: an encoded
    # slash belongs to the alias, as in the TypeScript client.
    return unquote(path.partition("?")[0].rpartition("/")[2])


def _attempt(header: str) -> int | None:
    # The header is not signed: anything int() refuses (``"²"`` passes isdigit) is None.
    try:
        return int(header) if header.strip().isascii() else None
    except ValueError:
        return None


async def _awaited(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


def _parse(body: bytes, content_type: str) -> Any:
    if not body:
        return None
    media = content_type.split(";", 1)[0].strip().lower()
    text = body.decode("utf-8", errors="replace")
    if media == "application/json" or media.endswith("+json"):
        try:
            return json.loads(text)
        except ValueError:
            # It says JSON and is not: the handler gets the text, as with any other type.
            # Refusing it would only have Boomerang send it again and again.
            pass
    return text


def _success(result: Any) -> Response:
    if result is None:
        return Response(200)
    if isinstance(result, bytes):
        return Response(200, [("content-type", "application/octet-stream")], result)
    if isinstance(result, str):
        return _text(200, result)
    return Response(200, [("content-type", "application/json")], json.dumps(result).encode())


_REASONS = {200: "OK", 401: "Unauthorized", 404: "Not Found", 410: "Gone",
            413: "Content Too Large", 500: "Internal Server Error", 503: "Service Unavailable"}  # fmt: skip


def _wsgi_path(environ: dict[str, Any]) -> str:
    """The request's path as sent. PEP 3333 has only the decoded ``PATH_INFO``, in which an
    encoded slash (``%2F``) is a slash like any other; most servers also give the path as
    sent (gunicorn ``RAW_URI``, uWSGI, mod_wsgi and Werkzeug ``REQUEST_URI``). Without it
    (wsgiref) the decoded path is all there is."""
    raw = environ.get("RAW_URI") or environ.get("REQUEST_URI")
    if isinstance(raw, str) and raw.startswith("/"):
        return raw.partition("?")[0]
    # PATH_INFO is the decoded path's bytes as latin-1 (PEP 3333); paths are UTF-8.
    decoded = environ.get("PATH_INFO", "").encode("latin-1").decode("utf-8", errors="replace")
    return quote(decoded, safe="/")


class _WsgiApp:
    def __init__(self, receiver: Receiver) -> None:
        self.receiver = receiver

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        headers = {
            key[5:].replace("_", "-").lower(): value for key, value in environ.items() if key.startswith("HTTP_")
        }
        if environ.get("CONTENT_TYPE"):
            headers["content-type"] = environ["CONTENT_TYPE"]
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > self.receiver.max_body:
            response = _text(413, "body too large")
        else:
            body = environ["wsgi.input"].read(length) if length > 0 else b""
            path = _wsgi_path(environ)
            response = self.receiver.handle(environ.get("REQUEST_METHOD", "POST"), path, headers, body)
        status = f"{response.status} {_REASONS.get(response.status, '')}".rstrip()
        start_response(status, [*response.headers, ("content-length", str(len(response.body)))])
        return [response.body]


class _AsgiApp:
    def __init__(self, receiver: Receiver) -> None:
        self.receiver = receiver

    async def __call__(
        self,
        scope: dict[str, Any],
        receive: Callable[[], Awaitable[dict[str, Any]]],
        send: Callable[[dict[str, Any]], Awaitable[None]],
    ) -> None:
        if scope["type"] == "lifespan":
            # Nothing to start or stop; answering lets servers know the app speaks lifespan.
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        headers: dict[str, str] = {}
        for name, value in scope["headers"]:
            key = name.decode("latin-1").lower()
            headers[key] = f"{headers[key]}, {value.decode('latin-1')}" if key in headers else value.decode("latin-1")
        body = bytearray()
        response: Response | None = None
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if len(body) > self.receiver.max_body:
                response = _text(413, "body too large")
                break
            if not message.get("more_body", False):
                break
        if response is None:
            # raw_path is the path as sent (optional in ASGI); `path` is decoded.
            raw_path = scope.get("raw_path")
            path = raw_path.decode("latin-1") if raw_path else quote(scope["path"], safe="/")
            response = await self.receiver.handle_async(scope["method"], path, headers, bytes(body))
        headers_out = [*response.headers, ("content-length", str(len(response.body)))]
        raw_headers = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in headers_out]
        await send({"type": "http.response.start", "status": response.status, "headers": raw_headers})
        await send({"type": "http.response.body", "body": response.body})
