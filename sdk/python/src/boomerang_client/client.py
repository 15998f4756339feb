"""`Client` (blocking) and `AsyncClient` (asyncio): one method per operation of the API,
named by its operationId, each sending what `operations` builds for it."""

from __future__ import annotations

import asyncio
import functools
import inspect
import os
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, ParamSpec, TypeVar, overload
from urllib.parse import quote

import httpx
from typing_extensions import Self

from . import operations as ops
from .errors import ApiError, retry_after_seconds
from .models import OrderKeyView, ScheduleView, TaskView
from .operations import Call, TaskStatus

__all__ = ["AsyncClient", "Client", "RetryPolicy", "callback_url"]

P = ParamSpec("P")
T = TypeVar("T")
Item = TypeVar("Item")

VERSION = "0.1.0"
DEFAULT_URL = "http://127.0.0.1:8080"

# Failures after which the request may not have reached the server, or its answer was lost.
TRANSIENT_ERRORS = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)


@dataclass(frozen=True)
class RetryPolicy:
    """How calls that are safe to repeat are retried: reads, PUT and DELETE, releases, and
    registrations (sent with an idempotency key). They are sent again after a connection
    error or timeout, a 5xx or a 429.

    ``attempts`` counts them all, the first included (``1`` turns retries off). The waits
    double from ``initial_delay`` up to ``max_delay``, with full jitter, unless the server
    answers ``Retry-After``: that wait is honoured, up to ``max_retry_after`` seconds; a
    server that asks for longer gets its answer raised as an `ApiError` (with
    ``retry_after``) instead of a wait.
    """

    attempts: int = 4
    initial_delay: float = 0.25
    max_delay: float = 5.0
    max_retry_after: float = 60.0

    def backoff(self, attempt: int) -> float:
        return random.uniform(0, min(self.max_delay, self.initial_delay * 2 ** (attempt - 1)))

    def wait_after(self, response: httpx.Response, attempt: int) -> float | None:
        """Seconds to wait before sending again after `response`, or None to keep it."""
        if not (response.status_code == 429 or response.status_code >= 500):
            return None
        asked = retry_after_seconds(response.headers.get("retry-after"))
        if asked is None:
            return self.backoff(attempt)
        return asked if asked <= self.max_retry_after else None


def callback_url(base: str, alias: str) -> str:
    """The URL a `Receiver` mounted at `base` routes to the handler registered as `alias`:
    ``callback_url("https://app.example/callbacks", "payment-reminder")`` is
    ``https://app.example/callbacks/payment-reminder`` (the alias percent-encoded as one
    path segment)."""
    return f"{base.rstrip('/')}/{quote(alias, safe='')}"


class _Base:
    def __init__(
        self,
        base_url: str | None,
        api_key: str | None,
        timeout: float,
        retry: RetryPolicy | None,
        callback_base: str | None,
    ) -> None:
        # The address `boomerang serve` listens on by default, as the TypeScript client's.
        base_url = base_url or os.environ.get("BOOMERANG_URL") or DEFAULT_URL
        self.base_url = base_url.rstrip("/")
        api_key = api_key if api_key is not None else os.environ.get("BOOMERANG_API_KEY")
        # Refused here rather than by a 401 on the first call, as the TypeScript client.
        if not api_key:
            raise ValueError("no API key: give api_key=..., or set BOOMERANG_API_KEY")
        self.api_key = api_key
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self.callback_base = callback_base

    def callback_url(self, alias: str) -> str:
        """The callback URL of the receiver's handler `alias`, under ``callback_base``."""
        if self.callback_base is None:
            raise ValueError("callback_url needs the client's callback_base")
        return callback_url(self.callback_base, alias)

    def _build(self, http: httpx.Client | httpx.AsyncClient, call: Call[Any]) -> httpx.Request:
        headers = {"user-agent": f"boomerang-client-python/{VERSION}", **call.headers}
        headers["authorization"] = f"Bearer {self.api_key}"
        return http.build_request(
            call.method,
            self.base_url + call.path,
            params=call.params,
            json=call.json,
            headers=headers,
            timeout=self.timeout,
        )

    def _attempts(self, call: Call[Any]) -> int:
        return max(1, self.retry.attempts) if call.repeatable else 1

    @staticmethod
    def _read(call: Call[T], response: httpx.Response) -> T:
        if response.is_error:
            raise ApiError.from_response(response)
        return call.read(response)


class _Operation(Generic[P, T]):
    """Makes an operation's builder a method of `Client` that sends what it builds."""

    def __init__(self, build: Callable[P, Call[T]]) -> None:
        self.build = build
        self.__doc__ = build.__doc__

    @overload
    def __get__(self, client: None, owner: type) -> Self: ...
    @overload
    def __get__(self, client: Client, owner: type) -> Callable[P, T]: ...
    def __get__(self, client: Client | None, owner: type) -> Self | Callable[P, T]:
        if client is None:
            return self
        build = self.build

        def send(*args: P.args, **kwargs: P.kwargs) -> T:
            return client._send(build(*args, **kwargs))

        return _like(send, build)


class _AsyncOperation(Generic[P, T]):
    """Makes an operation's builder a coroutine method of `AsyncClient`."""

    def __init__(self, build: Callable[P, Call[T]]) -> None:
        self.build = build
        self.__doc__ = build.__doc__

    @overload
    def __get__(self, client: None, owner: type) -> Self: ...
    @overload
    def __get__(self, client: AsyncClient, owner: type) -> Callable[P, Awaitable[T]]: ...
    def __get__(self, client: AsyncClient | None, owner: type) -> Self | Callable[P, Awaitable[T]]:
        if client is None:
            return self
        build = self.build

        async def send(*args: P.args, **kwargs: P.kwargs) -> T:
            return await client._send(build(*args, **kwargs))

        return _like(send, build)


def _like(send: Callable[..., Any], build: Callable[..., Any]) -> Callable[..., Any]:
    # help() and IDEs show the builder's name, arguments and documentation on the method.
    functools.update_wrapper(send, build, updated=())
    del send.__wrapped__  # type: ignore[attr-defined]
    send.__signature__ = inspect.signature(build).replace(return_annotation=inspect.Signature.empty)  # type: ignore[attr-defined]
    return send


class Client(_Base):
    """A blocking client of the Boomerang API.

    ``Client(base_url, api_key=...)``; without them, ``BOOMERANG_URL`` (else
    ``http://127.0.0.1:8080``) and ``BOOMERANG_API_KEY`` are read from the environment (no API key either way raises
    ``ValueError`` here). Every method raises `ApiError`
    when the API answers an error, and httpx's exceptions when it cannot be reached.
    Calls that are safe to repeat are retried as ``retry`` (a `RetryPolicy`) says.
    ``http_client`` is an ``httpx.Client`` of your own (proxies, certificates, hooks),
    left open by `close`. ``callback_base`` is where your `Receiver` is mounted, for
    `callback_url`.
    """

    def __init__(
        self,
        base_url: str | None = None,
        *,
        api_key: str | None = None,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        callback_base: str | None = None,
        http_client: httpx.Client | None = None,
    ) -> None:
        super().__init__(base_url, api_key, timeout, retry, callback_base)
        self._owns_http = http_client is None
        self._http = http_client or httpx.Client()

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _send(self, call: Call[T]) -> T:
        request = self._build(self._http, call)
        attempts = self._attempts(call)
        for attempt in range(1, attempts + 1):
            try:
                response = self._http.send(request)
            except TRANSIENT_ERRORS:
                if attempt == attempts:
                    raise
                time.sleep(self.retry.backoff(attempt))
                continue
            wait = self.retry.wait_after(response, attempt) if attempt < attempts else None
            if wait is None:
                return self._read(call, response)
            response.close()
            time.sleep(wait)
        raise AssertionError("unreachable")

    def iter_tasks(
        self, *, status: TaskStatus | None = None, key: str | None = None, page_size: int | None = None
    ) -> Iterator[TaskView]:
        """Every task (newest first), or those with a `status` or `key`, fetching page after
        page (`page_size` a page) as the loop asks for them."""
        return _pages(lambda cursor: self.list_tasks(status=status, key=key, limit=page_size, cursor=cursor), "tasks")

    def iter_schedules(self, *, page_size: int | None = None) -> Iterator[ScheduleView]:
        """Every schedule, page after page."""
        return _pages(lambda cursor: self.list_schedules(limit=page_size, cursor=cursor), "schedules")

    def iter_order_keys(self, *, page_size: int | None = None) -> Iterator[OrderKeyView]:
        """Every order key with tasks, in key order, page after page."""
        return _pages(lambda cursor: self.list_order_keys(limit=page_size, after=cursor), "keys")

    healthz = _Operation(ops.healthz)
    readyz = _Operation(ops.readyz)
    metrics = _Operation(ops.metrics)
    openapi = _Operation(ops.openapi)
    stats = _Operation(ops.stats)
    create_task = _Operation(ops.create_task)
    create_tasks = _Operation(ops.create_tasks)
    get_task = _Operation(ops.get_task)
    list_tasks = _Operation(ops.list_tasks)
    cancel_task = _Operation(ops.cancel_task)
    cancel_by_key = _Operation(ops.cancel_by_key)
    retry_task = _Operation(ops.retry_task)
    release_task = _Operation(ops.release_task)
    release_by_key = _Operation(ops.release_by_key)
    bulk_action = _Operation(ops.bulk_action)
    list_bulk_jobs = _Operation(ops.list_bulk_jobs)
    get_bulk_job = _Operation(ops.get_bulk_job)
    create_schedule = _Operation(ops.create_schedule)
    list_schedules = _Operation(ops.list_schedules)
    get_schedule = _Operation(ops.get_schedule)
    delete_schedule = _Operation(ops.delete_schedule)
    pause_schedule = _Operation(ops.pause_schedule)
    resume_schedule = _Operation(ops.resume_schedule)
    list_policies = _Operation(ops.list_policies)
    get_policy = _Operation(ops.get_policy)
    put_policy = _Operation(ops.put_policy)
    delete_policy = _Operation(ops.delete_policy)
    list_templates = _Operation(ops.list_templates)
    get_template = _Operation(ops.get_template)
    put_template = _Operation(ops.put_template)
    delete_template = _Operation(ops.delete_template)
    list_flows = _Operation(ops.list_flows)
    get_flow = _Operation(ops.get_flow)
    pause_flow = _Operation(ops.pause_flow)
    resume_flow = _Operation(ops.resume_flow)
    list_order_keys = _Operation(ops.list_order_keys)
    get_order_key = _Operation(ops.get_order_key)
    list_breakers = _Operation(ops.list_breakers)
    put_breaker_settings = _Operation(ops.put_breaker_settings)
    open_breaker = _Operation(ops.open_breaker)
    close_breaker = _Operation(ops.close_breaker)
    list_signing_secrets = _Operation(ops.list_signing_secrets)
    rotate_signing_secret = _Operation(ops.rotate_signing_secret)
    retire_signing_secret = _Operation(ops.retire_signing_secret)


class AsyncClient(_Base):
    """The same client for asyncio: every method is a coroutine, and the ``iter_*``
    helpers are async iterators. ``http_client`` is an ``httpx.AsyncClient``."""

    def __init__(
        self,
        base_url: str | None = None,
        *,
        api_key: str | None = None,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        callback_base: str | None = None,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        super().__init__(base_url, api_key, timeout, retry, callback_base)
        self._owns_http = http_client is None
        self._http = http_client or httpx.AsyncClient()

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _send(self, call: Call[T]) -> T:
        request = self._build(self._http, call)
        attempts = self._attempts(call)
        for attempt in range(1, attempts + 1):
            try:
                response = await self._http.send(request)
            except TRANSIENT_ERRORS:
                if attempt == attempts:
                    raise
                await asyncio.sleep(self.retry.backoff(attempt))
                continue
            wait = self.retry.wait_after(response, attempt) if attempt < attempts else None
            if wait is None:
                return self._read(call, response)
            await response.aclose()
            await asyncio.sleep(wait)
        raise AssertionError("unreachable")

    def iter_tasks(
        self, *, status: TaskStatus | None = None, key: str | None = None, page_size: int | None = None
    ) -> AsyncIterator[TaskView]:
        """Every task (newest first), or those with a `status` or `key`, page after page."""
        return _async_pages(
            lambda cursor: self.list_tasks(status=status, key=key, limit=page_size, cursor=cursor), "tasks"
        )

    def iter_schedules(self, *, page_size: int | None = None) -> AsyncIterator[ScheduleView]:
        """Every schedule, page after page."""
        return _async_pages(lambda cursor: self.list_schedules(limit=page_size, cursor=cursor), "schedules")

    def iter_order_keys(self, *, page_size: int | None = None) -> AsyncIterator[OrderKeyView]:
        """Every order key with tasks, in key order, page after page."""
        return _async_pages(lambda cursor: self.list_order_keys(limit=page_size, after=cursor), "keys")

    healthz = _AsyncOperation(ops.healthz)
    readyz = _AsyncOperation(ops.readyz)
    metrics = _AsyncOperation(ops.metrics)
    openapi = _AsyncOperation(ops.openapi)
    stats = _AsyncOperation(ops.stats)
    create_task = _AsyncOperation(ops.create_task)
    create_tasks = _AsyncOperation(ops.create_tasks)
    get_task = _AsyncOperation(ops.get_task)
    list_tasks = _AsyncOperation(ops.list_tasks)
    cancel_task = _AsyncOperation(ops.cancel_task)
    cancel_by_key = _AsyncOperation(ops.cancel_by_key)
    retry_task = _AsyncOperation(ops.retry_task)
    release_task = _AsyncOperation(ops.release_task)
    release_by_key = _AsyncOperation(ops.release_by_key)
    bulk_action = _AsyncOperation(ops.bulk_action)
    list_bulk_jobs = _AsyncOperation(ops.list_bulk_jobs)
    get_bulk_job = _AsyncOperation(ops.get_bulk_job)
    create_schedule = _AsyncOperation(ops.create_schedule)
    list_schedules = _AsyncOperation(ops.list_schedules)
    get_schedule = _AsyncOperation(ops.get_schedule)
    delete_schedule = _AsyncOperation(ops.delete_schedule)
    pause_schedule = _AsyncOperation(ops.pause_schedule)
    resume_schedule = _AsyncOperation(ops.resume_schedule)
    list_policies = _AsyncOperation(ops.list_policies)
    get_policy = _AsyncOperation(ops.get_policy)
    put_policy = _AsyncOperation(ops.put_policy)
    delete_policy = _AsyncOperation(ops.delete_policy)
    list_templates = _AsyncOperation(ops.list_templates)
    get_template = _AsyncOperation(ops.get_template)
    put_template = _AsyncOperation(ops.put_template)
    delete_template = _AsyncOperation(ops.delete_template)
    list_flows = _AsyncOperation(ops.list_flows)
    get_flow = _AsyncOperation(ops.get_flow)
    pause_flow = _AsyncOperation(ops.pause_flow)
    resume_flow = _AsyncOperation(ops.resume_flow)
    list_order_keys = _AsyncOperation(ops.list_order_keys)
    get_order_key = _AsyncOperation(ops.get_order_key)
    list_breakers = _AsyncOperation(ops.list_breakers)
    put_breaker_settings = _AsyncOperation(ops.put_breaker_settings)
    open_breaker = _AsyncOperation(ops.open_breaker)
    close_breaker = _AsyncOperation(ops.close_breaker)
    list_signing_secrets = _AsyncOperation(ops.list_signing_secrets)
    rotate_signing_secret = _AsyncOperation(ops.rotate_signing_secret)
    retire_signing_secret = _AsyncOperation(ops.retire_signing_secret)


def _pages(fetch: Callable[[str | None], Any], items: str) -> Iterator[Any]:
    """The items of page after page: `fetch(cursor)` gets one (the first with None), its
    field `items` holds them, and its `next_cursor` names the next (none on the last)."""
    cursor = None
    while True:
        page = fetch(cursor)
        yield from getattr(page, items)
        cursor = page.next_cursor
        if not cursor:
            return


async def _async_pages(fetch: Callable[[str | None], Awaitable[Any]], items: str) -> AsyncIterator[Any]:
    cursor = None
    while True:
        page = await fetch(cursor)
        for item in getattr(page, items):
            yield item
        cursor = page.next_cursor
        if not cursor:
            return
