"""Every operation of the API, as a function that builds its request: the method, the
path, the query, the body, and how to read the answer.

`Client` and `AsyncClient` expose each of these under the same name (the operation's
`operationId` in the OpenAPI document) and send what it builds, so both clients share one
definition of every route, its arguments and its documentation.

Request bodies are checked against the generated models before anything is sent: a
misspelt or mistyped field raises pydantic's ``ValidationError`` at once. Only the fields
given are sent (an explicit ``None`` is sent as ``null``), so the server's defaults apply
to the rest.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel

from .models import (
    BatchRequest,
    BatchView,
    BreakerSettingsRequest,
    BreakerSettingsView,
    BreakersView,
    BreakerView,
    BulkJobsView,
    BulkJobView,
    BulkPreviewView,
    BulkRequest,
    FlowStateView,
    FlowsView,
    Health,
    KeyCancelView,
    KeyReleaseView,
    OrderKeysView,
    OrderKeyView,
    PageView,
    PoliciesView,
    PolicyRequest,
    PolicyView,
    RotationRequest,
    ScheduleListView,
    ScheduleRequest,
    ScheduleView,
    SigningSecretsView,
    StatsView,
    TaskRequest,
    TaskView,
    TemplateRequest,
    TemplatesView,
    TemplateView,
)

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)

TaskStatus = Literal["held", "scheduled", "delivering", "succeeded", "failed", "canceled"]
"""A task's state, as `list_tasks` filters by it."""


@dataclass(frozen=True)
class Call(Generic[T]):
    """One request to make, and how to read its successful answer.

    ``repeatable`` says the request does no harm if it reaches the server twice (a read, a
    PUT or DELETE, a release, or a registration carrying an idempotency key), so the
    client may send it again after a connection error, a 5xx or a 429.
    """

    method: str
    path: str
    read: Callable[[httpx.Response], T]
    params: Mapping[str, str] = field(default_factory=dict)
    json: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)
    repeatable: bool = True


OPERATIONS: dict[str, Callable[..., Call[Any]]] = {}
"""Every operation's builder, by its operationId."""

B = TypeVar("B", bound=Callable[..., Call[Any]])


def _operation(build: B) -> B:
    OPERATIONS[build.__name__] = build
    return build


def _path(template: str, **segments: str) -> str:
    # Each value is one path segment: `/` and everything else outside the unreserved set is
    # percent-encoded (a flow key `partner/eu` goes as `partner%2Feu`).
    return template.format(**{name: quote(str(value), safe="") for name, value in segments.items()})


def _query(**params: Any) -> dict[str, str]:
    return {name: str(value) for name, value in params.items() if value is not None}


def _model(model: type[M]) -> Callable[[httpx.Response], M]:
    return lambda response: model.model_validate_json(response.content)


def _nothing(response: httpx.Response) -> None:
    return None


def _request(model: type[M], given: M | Mapping[str, Any] | None, fields: Mapping[str, Any]) -> M:
    """The request body as a checked model: `given` (a model or a mapping) with `fields` over it."""
    if isinstance(given, model) and not fields:
        return given
    data = given.model_dump(exclude_unset=True) if isinstance(given, BaseModel) else dict(given or {})
    data.update(fields)
    return model.model_validate(data)


def _body(request: BaseModel) -> Any:
    return request.model_dump(mode="json", exclude_unset=True)


def new_idempotency_key() -> str:
    """A fresh idempotency key: the client makes one per registration it may send twice."""
    return uuid.uuid4().hex


# Service


@_operation
def healthz() -> Call[Health]:
    """``GET /healthz``: the process is up (no API key needed)."""
    return Call("GET", "/healthz", _model(Health))


@_operation
def readyz() -> Call[Health]:
    """``GET /readyz``: the server can reach its store and take requests (no API key needed)."""
    return Call("GET", "/readyz", _model(Health))


@_operation
def metrics() -> Call[str]:
    """``GET /metrics``: the server's metrics, as OpenMetrics text."""
    return Call("GET", "/metrics", lambda response: response.text)


@_operation
def openapi() -> Call[dict[str, Any]]:
    """``GET /openapi.json``: the OpenAPI 3.1 document of the whole API."""
    return Call("GET", "/openapi.json", lambda response: response.json())


@_operation
def stats() -> Call[StatsView]:
    """``GET /v1/stats``: task counts by state, the last hour of deliveries, busy destinations."""
    return Call("GET", "/v1/stats", _model(StatsView))


# Tasks


@_operation
def create_task(
    task: TaskRequest | Mapping[str, Any] | None = None,
    /,
    *,
    idempotency_key: str | None = None,
    **fields: Any,
) -> Call[TaskView]:
    """``POST /v1/tasks``: registers a callback, and answers the task.

    Give the task as a `TaskRequest`, a mapping, or keyword arguments (its fields:
    ``url``, ``delay`` or ``fire_at``, ``body``, ``retry``, ``key``…), or a mix, the
    keywords winning. It is sent with an idempotency key, so that it can be retried without
    registering it twice: ``idempotency_key`` if given (as the task's field, or this
    argument), else a fresh one made for this call. A repeat of a key with the same
    request answers the task registered first. A registration with ``on_key="replace"``
    takes no idempotency key, and is sent once.
    """
    request = _request(TaskRequest, task, fields)
    if request.idempotency_key is not None:
        if idempotency_key is not None and idempotency_key != request.idempotency_key:
            raise ValueError("idempotency_key is given twice, with two values")
        return Call("POST", "/v1/tasks", _model(TaskView), json=_body(request))
    if idempotency_key is None and request.on_key == "replace":
        # The server takes no idempotency key with `on_key: replace`: its repeat replaces
        # the task again, or makes a new one once an attempt has begun, so it is sent once.
        return Call("POST", "/v1/tasks", _model(TaskView), json=_body(request), repeatable=False)
    headers = {"Idempotency-Key": idempotency_key or new_idempotency_key()}
    return Call("POST", "/v1/tasks", _model(TaskView), json=_body(request), headers=headers)


@_operation
def create_tasks(tasks: Sequence[TaskRequest | Mapping[str, Any]]) -> Call[BatchView]:
    """``POST /v1/tasks/batch``: registers up to 100 tasks in one request.

    Every task is checked before any is stored: one bad task refuses the batch with an
    `ApiError` naming it (``field == "tasks[3].delay"``). Each task without an
    ``idempotency_key`` is given a fresh one, so that the batch can be retried; a result
    per task comes back in order (``201`` registered, ``200`` a repeat, or a problem).
    """
    checked = [_request(TaskRequest, task, {}) for task in tasks]
    keyed = [
        (
            task
            if task.idempotency_key is not None
            else _request(TaskRequest, task, {"idempotency_key": new_idempotency_key()})
        )
        for task in checked
    ]
    request = BatchRequest(tasks=keyed)
    return Call("POST", "/v1/tasks/batch", _model(BatchView), json=_body(request))


@_operation
def get_task(id: str) -> Call[TaskView]:
    """``GET /v1/tasks/{id}``: the task, with its state and every attempt."""
    return Call("GET", _path("/v1/tasks/{id}", id=id), _model(TaskView))


@_operation
def list_tasks(
    *,
    status: TaskStatus | None = None,
    key: str | None = None,
    limit: int | None = None,
    cursor: str | None = None,
) -> Call[PageView]:
    """``GET /v1/tasks``: one page of tasks, newest first (``limit`` 1–100, default 20).

    Pass the page's ``next_cursor`` as ``cursor`` for the next one, or let
    `iter_tasks` walk them all.
    """
    return Call("GET", "/v1/tasks", _model(PageView), params=_query(status=status, key=key, limit=limit, cursor=cursor))


@_operation
def cancel_task(id: str) -> Call[TaskView]:
    """``DELETE /v1/tasks/{id}``: cancels a scheduled or held task (409 if it is being
    delivered or has finished).

    Retried like every DELETE: if an earlier try's answer was lost, the repeat answers 409
    with the detail "the task is already canceled".
    """
    return Call("DELETE", _path("/v1/tasks/{id}", id=id), _model(TaskView))


@_operation
def cancel_by_key(key: str) -> Call[KeyCancelView]:
    """``DELETE /v1/tasks?key=``: cancels every scheduled or held task with that key.

    Up to 1,000 tasks a request; ``more`` in the answer says to send it again.
    """
    return Call("DELETE", "/v1/tasks", _model(KeyCancelView), params=_query(key=key))


@_operation
def retry_task(id: str) -> Call[TaskView]:
    """``POST /v1/tasks/{id}/retry``: gives a failed task a new round of its retry policy.

    Not sent twice by the client: a second retry of the same task answers 409.
    """
    return Call("POST", _path("/v1/tasks/{id}/retry", id=id), _model(TaskView), repeatable=False)


@_operation
def release_task(id: str) -> Call[TaskView]:
    """``POST /v1/tasks/{id}/release``: releases a held task for delivery."""
    return Call("POST", _path("/v1/tasks/{id}/release", id=id), _model(TaskView))


@_operation
def release_by_key(key: str) -> Call[KeyReleaseView]:
    """``POST /v1/tasks/release?key=``: releases every held task with that key."""
    return Call("POST", "/v1/tasks/release", _model(KeyReleaseView), params=_query(key=key))


# Bulk actions


@_operation
def bulk_action(
    request: BulkRequest | Mapping[str, Any] | None = None, /, **fields: Any
) -> Call[BulkPreviewView | BulkJobView]:
    """``POST /v1/tasks/bulk``: retries, cancels or releases the tasks a filter matches.

    With ``dry_run=True`` it answers a `BulkPreviewView` (how many, and a sample; nothing
    changes); without, it starts a job and answers its `BulkJobView` (follow it with
    `get_bulk_job`). Not sent twice by the client: a repeat would start a second job.
    """

    def read(response: httpx.Response) -> BulkPreviewView | BulkJobView:
        model = BulkJobView if response.status_code == 202 else BulkPreviewView
        return model.model_validate_json(response.content)

    body = _body(_request(BulkRequest, request, fields))
    return Call("POST", "/v1/tasks/bulk", read, json=body, repeatable=False)


@_operation
def list_bulk_jobs() -> Call[BulkJobsView]:
    """``GET /v1/bulk-jobs``: the newest bulk jobs (up to 50), newest first."""
    return Call("GET", "/v1/bulk-jobs", _model(BulkJobsView))


@_operation
def get_bulk_job(id: str) -> Call[BulkJobView]:
    """``GET /v1/bulk-jobs/{id}``: a bulk job's state and progress."""
    return Call("GET", _path("/v1/bulk-jobs/{id}", id=id), _model(BulkJobView))


# Schedules


@_operation
def create_schedule(
    schedule: ScheduleRequest | Mapping[str, Any] | None = None, /, **fields: Any
) -> Call[ScheduleView]:
    """``POST /v1/schedules``: a recurring callback (``cron`` with ``timezone``, or
    ``every``), each occurrence a task made of the other fields.

    Not sent twice by the client: schedules have no idempotency key, and a repeat would
    make a second schedule.
    """
    body = _body(_request(ScheduleRequest, schedule, fields))
    return Call("POST", "/v1/schedules", _model(ScheduleView), json=body, repeatable=False)


@_operation
def list_schedules(*, limit: int | None = None, cursor: str | None = None) -> Call[ScheduleListView]:
    """``GET /v1/schedules``: one page of schedules (``limit`` 1–100, default 50); see
    `iter_schedules`."""
    return Call("GET", "/v1/schedules", _model(ScheduleListView), params=_query(limit=limit, cursor=cursor))


@_operation
def get_schedule(id: str) -> Call[ScheduleView]:
    """``GET /v1/schedules/{id}``: a schedule."""
    return Call("GET", _path("/v1/schedules/{id}", id=id), _model(ScheduleView))


@_operation
def delete_schedule(id: str) -> Call[None]:
    """``DELETE /v1/schedules/{id}``: deletes a schedule (its tasks already made stay)."""
    return Call("DELETE", _path("/v1/schedules/{id}", id=id), _nothing)


@_operation
def pause_schedule(id: str) -> Call[ScheduleView]:
    """``POST /v1/schedules/{id}/pause``: makes no more occurrences until resumed."""
    return Call("POST", _path("/v1/schedules/{id}/pause", id=id), _model(ScheduleView))


@_operation
def resume_schedule(id: str) -> Call[ScheduleView]:
    """``POST /v1/schedules/{id}/resume``: resumes a paused schedule."""
    return Call("POST", _path("/v1/schedules/{id}/resume", id=id), _model(ScheduleView))


# Policies and templates


@_operation
def list_policies() -> Call[PoliciesView]:
    """``GET /v1/policies``: every named retry policy, by name."""
    return Call("GET", "/v1/policies", _model(PoliciesView))


@_operation
def get_policy(name: str) -> Call[PolicyView]:
    """``GET /v1/policies/{name}``: a named retry policy."""
    return Call("GET", _path("/v1/policies/{name}", name=name), _model(PolicyView))


@_operation
def put_policy(
    name: str, policy: PolicyRequest | Mapping[str, Any] | None = None, /, **fields: Any
) -> Call[PolicyView]:
    """``PUT /v1/policies/{name}``: stores a named retry policy (a task's ``retry``, and
    optionally a ``flow``); ``default`` replaces the built-in default."""
    body = _body(_request(PolicyRequest, policy, fields))
    return Call("PUT", _path("/v1/policies/{name}", name=name), _model(PolicyView), json=body)


@_operation
def delete_policy(name: str) -> Call[None]:
    """``DELETE /v1/policies/{name}``: deletes a named policy (tasks keep their copy)."""
    return Call("DELETE", _path("/v1/policies/{name}", name=name), _nothing)


@_operation
def list_templates() -> Call[TemplatesView]:
    """``GET /v1/templates``: every task template."""
    return Call("GET", "/v1/templates", _model(TemplatesView))


@_operation
def get_template(name: str) -> Call[TemplateView]:
    """``GET /v1/templates/{name}``: a task template (header values are not shown)."""
    return Call("GET", _path("/v1/templates/{name}", name=name), _model(TemplateView))


@_operation
def put_template(
    name: str, template: TemplateRequest | Mapping[str, Any] | None = None, /, **fields: Any
) -> Call[TemplateView]:
    """``PUT /v1/templates/{name}``: stores a task template, the settings a task takes
    where it gives none; ``default`` applies to every task that names no template."""
    body = _body(_request(TemplateRequest, template, fields))
    return Call("PUT", _path("/v1/templates/{name}", name=name), _model(TemplateView), json=body)


@_operation
def delete_template(name: str) -> Call[None]:
    """``DELETE /v1/templates/{name}``: deletes a task template."""
    return Call("DELETE", _path("/v1/templates/{name}", name=name), _nothing)


# Flows, order keys and circuit breakers


@_operation
def list_flows() -> Call[FlowsView]:
    """``GET /v1/flows``: the flows that are paused, or have tasks waiting or in flight."""
    return Call("GET", "/v1/flows", _model(FlowsView))


@_operation
def get_flow(key: str) -> Call[FlowStateView]:
    """``GET /v1/flows/{key}``: one flow's state (empty if no task named it yet)."""
    return Call("GET", _path("/v1/flows/{key}", key=key), _model(FlowStateView))


@_operation
def pause_flow(key: str) -> Call[FlowStateView]:
    """``POST /v1/flows/{key}/pause``: the flow's tasks wait until it is resumed."""
    return Call("POST", _path("/v1/flows/{key}/pause", key=key), _model(FlowStateView))


@_operation
def resume_flow(key: str) -> Call[FlowStateView]:
    """``POST /v1/flows/{key}/resume``: lets a paused flow's tasks go, at its pace."""
    return Call("POST", _path("/v1/flows/{key}/resume", key=key), _model(FlowStateView))


@_operation
def list_order_keys(*, after: str | None = None, limit: int | None = None) -> Call[OrderKeysView]:
    """``GET /v1/order-keys``: one page of order keys, in key order (``limit`` 1–100,
    default 50); pass ``next_cursor`` as ``after``, or see `iter_order_keys`."""
    return Call("GET", "/v1/order-keys", _model(OrderKeysView), params=_query(after=after, limit=limit))


@_operation
def get_order_key(key: str) -> Call[OrderKeyView]:
    """``GET /v1/order-keys/{key}``: an order key's head task and backlog."""
    return Call("GET", _path("/v1/order-keys/{key}", key=key), _model(OrderKeyView))


@_operation
def list_breakers() -> Call[BreakersView]:
    """``GET /v1/breakers``: your destinations' circuit breakers, and their settings."""
    return Call("GET", "/v1/breakers", _model(BreakersView))


@_operation
def put_breaker_settings(
    settings: BreakerSettingsRequest | Mapping[str, Any] | None = None, /, **fields: Any
) -> Call[BreakerSettingsView]:
    """``PUT /v1/breakers/settings``: when a destination's breaker opens, and how it is
    probed (a field left out keeps its default)."""
    body = _body(_request(BreakerSettingsRequest, settings, fields))
    return Call("PUT", "/v1/breakers/settings", _model(BreakerSettingsView), json=body)


@_operation
def open_breaker(destination: str) -> Call[BreakerView]:
    """``POST /v1/breakers/open``: opens a destination's breaker by hand (its calls wait)."""
    body = {"destination": destination}
    return Call("POST", "/v1/breakers/open", _model(BreakerView), json=body)


@_operation
def close_breaker(destination: str) -> Call[BreakerView]:
    """``POST /v1/breakers/close``: closes a destination's breaker (its calls go again)."""
    body = {"destination": destination}
    return Call("POST", "/v1/breakers/close", _model(BreakerView), json=body)


# Signing secrets


@_operation
def list_signing_secrets() -> Call[SigningSecretsView]:
    """``GET /v1/signing-secrets``: the secrets in force; each delivery is signed by all."""
    return Call("GET", "/v1/signing-secrets", _model(SigningSecretsView))


@_operation
def rotate_signing_secret(*, grace_period: str | None = None) -> Call[SigningSecretsView]:
    """``POST /v1/signing-secrets``: adds a new secret; the ones in force go on signing
    beside it for ``grace_period`` (default 24h), the time receivers have to switch.

    Not sent twice by the client: a repeat would add a second secret.
    """
    body = _body(RotationRequest(grace_period=grace_period)) if grace_period is not None else None
    return Call("POST", "/v1/signing-secrets", _model(SigningSecretsView), json=body, repeatable=False)


@_operation
def retire_signing_secret(id: str) -> Call[SigningSecretsView]:
    """``DELETE /v1/signing-secrets/{id}``: stops signing with a secret (never the last)."""
    return Call("DELETE", _path("/v1/signing-secrets/{id}", id=id), _model(SigningSecretsView))
