# The Boomerang API's types, generated from its OpenAPI document (`boomerang openapi`)
# by scripts/generate_models.py with datamodel-code-generator. Do not edit: run it again.

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    RootModel,
    StringConstraints,
)
from typing_extensions import TypeAliasType


class AlertRequest(BaseModel):
    """
    `on_failure` and `on_success`: where a task's failures, or its success, are reported.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    headers: Annotated[
        dict[Annotated[str, StringConstraints(min_length=1)], str] | None,
        Field(max_length=50),
    ] = None
    """
    Headers to send, at most 50; values are never shown again
    """
    url: Annotated[
        str,
        Field(
            examples=['https://example.com/hooks/boomerang-alerts'],
            max_length=2048,
            min_length=1,
        ),
    ]


class AlertView(BaseModel):
    """
    An alert destination; like a task's, header values are not shown.
    """

    header_names: list[str]
    url: str


class AttemptView(BaseModel):
    duration_ms: Annotated[int, Field(ge=0)]
    error: str | None = None
    lateness_ms: int
    number: Annotated[int, Field(ge=0)]
    outcome: Literal['succeeded', 'retrying', 'failed']
    response: str | None = None
    scheduled_at: AwareDatetime
    started_at: AwareDatetime
    status_code: Annotated[int | None, Field(ge=0)] = None
    worker: str | None = None
    """
    Which worker made the attempt (host and process id, or a Lambda request id).
    """


class BetweenRequest(BaseModel):
    """
    An interval of time; either end may be left out (`after` is included, `before` not).
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    after: AwareDatetime | None = None
    before: AwareDatetime | None = None


class BreakerSettingsRequest(BaseModel):
    """
    When a destination's breaker opens, and how it is probed; a field left out keeps its
    default.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    failures: Annotated[int | None, Field(ge=1, le=10000)] = None
    """
    Failed calls in a row that open it (1–10000; default 20). A call fails when it
    times out, cannot connect, or is answered 5xx, 408 or 429.
    """
    first_probe: Annotated[str | None, Field(examples=['30s'])] = None
    """
    The wait before the first probe (1s to 24h; default 30s); each failed probe
    doubles it.
    """
    max_probe: Annotated[str | None, Field(examples=['10m'])] = None
    """
    The longest wait between probes (`first_probe` to 24h; default 10m).
    """
    span: Annotated[str | None, Field(examples=['1m'])] = None
    """
    How long those failures must span at least (0s to 24h; default 1m).
    """


class BreakerSettingsView(BaseModel):
    """
    A tenant's breaker settings, as they apply.
    """

    failures: Annotated[int, Field(ge=0)]
    first_probe: Annotated[str, Field(examples=['30s'])]
    max_probe: Annotated[str, Field(examples=['10m'])]
    span: Annotated[str, Field(examples=['1m'])]


class BreakerView(BaseModel):
    """
    One destination's breaker.
    """

    by_hand: bool | None = None
    """
    Opened by an operator: it stays open until an operator closes it.
    """
    destination: str
    next_probe_at: AwareDatetime | None = None
    """
    When the next probe may go (`null` when opened by hand: no probe is made).
    """
    opened_at: AwareDatetime | None = None
    probes_failed: Annotated[int | None, Field(ge=0)] = None
    state: str
    """
    `open` or `closed`.
    """


class BreakersView(BaseModel):
    """
    `GET /v1/breakers`: the settings, and the open breakers.
    """

    open: list[BreakerView]
    settings: BreakerSettingsView


class CheckView(BaseModel):
    """
    One check of a held task.
    """

    at: AwareDatetime
    decision: str | None = None
    """
    `release` or `cancel`, if the answer decided.
    """
    duration_ms: Annotated[int, Field(ge=0)]
    error: str | None = None
    number: Annotated[int, Field(ge=0)]
    status_code: Annotated[int | None, Field(ge=0)] = None


class DestinationRequest(BaseModel):
    """
    A destination to open or close by hand.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    destination: Annotated[str, Field(max_length=2048, min_length=1)]
    """
    A URL of the destination (its scheme, host and port are what count).
    """


class DestinationView(BaseModel):
    """
    One destination (scheme, host and port) of yours, now.
    """

    destination: str
    in_flight: Annotated[int, Field(ge=0)]
    limit: Annotated[int, Field(ge=0)]
    """
    The most calls in flight to it at once (yours, else the server's).
    """
    paused_until: AwareDatetime | None = None
    """
    It answered 429 or 503 with `Retry-After`: nothing is sent to it until then.
    """
    waiting: Annotated[int, Field(ge=0)]
    """
    Deliveries waiting for one of its slots.
    """


class FilterRequest(BaseModel):
    """
    Which tasks a bulk action takes.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    destination: str | None = None
    """
    A URL of the destination: tasks to the same scheme, host and port.
    """
    ended: BetweenRequest | None = None
    error_class: str | None = None
    """
    How the last attempt failed: `http`, `body_mismatch`, `timeout`, `transport` or
    `refused`.
    """
    flow_key: str | None = None
    key: str | None = None
    """
    The task's business key.
    """
    last_status: Annotated[int | None, Field(ge=100, le=599)] = None
    """
    The last attempt was answered with this HTTP status code.
    """
    metadata: dict[str, str] | None = None
    """
    Each of these metadata entries, exactly.
    """
    registered: BetweenRequest | None = None
    schedule: str | None = None
    """
    The id of the schedule whose occurrence the task is.
    """
    statuses: list[str] | None = None
    """
    Only tasks in these states (each one the action takes).
    """
    url: str | None = None
    """
    The task's URL, exactly.
    """
    url_prefix: str | None = None
    """
    The task's URL begins with this.
    """


class FlowRequest(BaseModel):
    """
    `flow`: the flow key whose limits the task shares.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    key: Annotated[str, Field(examples=['partner-api'], max_length=255, min_length=1)]
    """
    The flow's name (per tenant): 1–255 bytes, no control characters.
    """
    parallelism: Annotated[int | None, Field(examples=[3], ge=1, le=1000)] = None
    """
    The most tasks of the flow in flight at once (1–1000).
    """
    period: Annotated[str | None, Field(examples=['1s'])] = None
    """
    The window `rate` counts in (1s to 24h; default 1s).
    """
    rate: Annotated[int | None, Field(examples=[50], ge=1, le=100000)] = None
    """
    The most tasks of the flow started per `period` (1–100000).
    """


class FlowStateView(BaseModel):
    """
    One flow of the tenant, now.
    """

    in_flight: Annotated[int, Field(ge=0)]
    """
    Calls holding one of its parallelism slots.
    """
    key: str
    paused: bool
    """
    Its tasks wait until it is resumed.
    """
    waiting: Annotated[int, Field(ge=0)]
    """
    Tasks put off by its rate, its parallelism or its pause, and not yet due again.
    """


class FlowView(BaseModel):
    """
    A task's flow: its key and limits.
    """

    key: str
    parallelism: Annotated[int | None, Field(ge=0)] = None
    period: str
    rate: Annotated[int | None, Field(ge=0)] = None


class FlowsView(BaseModel):
    flows: list[FlowStateView]
    """
    The flows that are paused, or have tasks waiting or calls in flight, by key.
    """


class Health(BaseModel):
    """
    What `/healthz` and `/readyz` answer.
    """

    status: Annotated[str, Field(examples=['ok'])]


class MinuteView(BaseModel):
    at: AwareDatetime
    """
    The minute's start.
    """
    attempts: Annotated[int, Field(ge=0)]
    failed: Annotated[int, Field(ge=0)]
    """
    Attempts that failed, whether retried or final.
    """
    lateness_p50_ms: int | None = None
    lateness_p99_ms: int | None = None
    succeeded: Annotated[int, Field(ge=0)]


class OrderHeadView(BaseModel):
    """
    The head of a key's line.
    """

    blocked: bool
    """
    It failed for good and holds the key until it is retried or canceled.
    """
    place: Annotated[int, Field(ge=0)]
    since: AwareDatetime
    """
    When it took its place.
    """
    status: str
    """
    The task's status (`unknown` while its registration is being written).
    """
    task_id: str


class OrderKeyView(BaseModel):
    """
    A key's line: the task whose turn it is, and how many tasks hold a place.
    """

    backlog: Annotated[int, Field(ge=0)]
    """
    Tasks holding a place: the head and those waiting behind it.
    """
    head: OrderHeadView | None = None
    key: str


class OrderKeysView(BaseModel):
    """
    A page of keys, in key order; pass `next_cursor` as `after` for the next.
    """

    keys: list[OrderKeyView]
    next_cursor: str | None = None


class OrderView(BaseModel):
    """
    A task's order key: delivered one at a time, in registration order, with the tasks of
    the same key.
    """

    key: str
    on_failure: str
    """
    `block` or `skip`: what the key does if this task fails for good.
    """
    place: Annotated[int, Field(ge=0)]
    """
    Its place in the key's line (places given later are greater).
    """


class Problem(BaseModel):
    detail: str
    """
    What happened, for people.
    """
    field: str | None = None
    """
    The request field at fault, as a path (`retry.schedule[2]`).
    """
    status: Annotated[int, Field(ge=0)]
    """
    The response's HTTP status.
    """
    title: str
    type: str
    """
    What kind of problem (`urn:boomerang:problem:invalid-field`); stable, for code.
    """


class ProgressView(BaseModel):
    """
    A job's counts so far (its report once finished).
    """

    done: Annotated[int, Field(ge=0)]
    """
    Tasks the action was done to.
    """
    matched: Annotated[int, Field(ge=0)]
    """
    Of those, the ones the filter took.
    """
    read: Annotated[int, Field(ge=0)]
    """
    Tasks read so far.
    """
    skipped: Annotated[int, Field(ge=0)]
    """
    Tasks that had moved on when their turn came (delivered, canceled meanwhile…).
    """


class PermanentStatus(RootModel[int]):
    root: Annotated[int, Field(ge=300, le=599)]


class RetryRequest(BaseModel):
    """
    A retry policy: a fixed `schedule` of waits, or a `backoff` rule.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    backoff: Annotated[str | None, Field(pattern='^(fixed|linear|exponential)$')] = None
    """
    `fixed`, `linear` or `exponential`, with `interval`. Not with `schedule`.
    """
    interval: str | None = None
    """
    The first wait (1s to 7days).
    """
    jitter: Annotated[float | None, Field(ge=0.0, le=0.5)] = None
    """
    Each wait is moved by up to this fraction of itself, at random (0 to 0.5).
    """
    max_attempts: Annotated[int | None, Field(ge=1, le=1000)] = None
    """
    The most attempts (1–1000), the first included. Absent: the schedule's length plus
    one, or 8 with `backoff`; `null`: as many as fit in `max_duration`.
    """
    max_duration: str | None = None
    """
    Give up once this long has passed since the first attempt (1s to 365days; at most
    30days when `max_attempts` is null, and then required).
    """
    max_interval: str | None = None
    """
    The longest wait (1s to 7days; default 1h, or `interval` if longer).
    """
    permanent_statuses: Annotated[
        list[PermanentStatus] | None, Field(examples=[[400, 401, 403, 404, 410]])
    ] = None
    """
    Response statuses (300–599) that fail the task at once, without retrying
    """
    schedule: Annotated[
        list[str] | None,
        Field(examples=[['30s', '2m', '10m']], max_length=100, min_length=1),
    ] = None
    """
    The waits before each retry (1–100 of them, each 1s to 7days).
    """


class PermanentStatus1(RootModel[int]):
    root: Annotated[int, Field(ge=0)]


class RetryView(BaseModel):
    backoff: str | None = None
    interval: str | None = None
    jitter: float
    max_attempts: Annotated[int | None, Field(ge=0)] = None
    """
    `null`: as many as fit in `max_duration`.
    """
    max_duration: str | None = None
    max_interval: str | None = None
    permanent_statuses: list[PermanentStatus1]
    schedule: list[str] | None = None


class RotationRequest(BaseModel):
    """
    A rotation: a new secret signs every delivery from now on, next to the ones in force.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    grace_period: Annotated[str | None, Field(examples=['24h'])] = None
    """
    How long the secrets in force now go on signing deliveries beside the new one
    (0s to 30d; default 24h): the time your receivers have to switch.
    """


class ScheduleView(BaseModel):
    """
    A schedule as the API shows it.
    """

    catch_up: str
    """
    `one` or `none`.
    """
    created_at: AwareDatetime
    cron: str | None = None
    end_at: AwareDatetime | None = None
    every_ms: Annotated[int | None, Field(ge=0)] = None
    """
    The interval of an `every` schedule, in milliseconds.
    """
    id: str
    key: str | None = None
    method: str
    next_at: AwareDatetime | None = None
    """
    When the next occurrence is due (none while paused or past the end).
    """
    start_at: AwareDatetime
    state: str
    """
    `active` or `paused`.
    """
    timezone: str | None = None
    updated_at: AwareDatetime
    url: str
    """
    What each occurrence calls.
    """


class SigningSecretView(BaseModel):
    """
    One signing secret in force.
    """

    created_at: AwareDatetime | None = None
    """
    When it was added (`null` for a first secret kept from before rotation existed).
    """
    expires_at: AwareDatetime | None = None
    """
    When it stops signing deliveries (`null`: the newest, which never expires).
    """
    id: str
    """
    Names the secret (to retire it) without showing it.
    """
    secret: str
    """
    The secret, as Standard Webhooks libraries take it.
    """


class SigningSecretsView(BaseModel):
    """
    The secrets in force, newest first: every delivery carries one signature from each.
    """

    secrets: list[SigningSecretView]


CountsAdditionalProperty = TypeAliasType(
    "CountsAdditionalProperty", Annotated[int, Field(ge=0)]
)


class BulkJobView(BaseModel):
    """
    A bulk job.
    """

    action: str
    """
    `retry`, `cancel` or `release`.
    """
    created_at: AwareDatetime
    filter: dict[str, Any]
    """
    The filter, as it was read.
    """
    finished_at: AwareDatetime | None = None
    id: str
    per_second: Annotated[int, Field(ge=0)]
    """
    Tasks acted on per second, at most.
    """
    progress: ProgressView
    state: str
    """
    `running` or `finished`.
    """
    updated_at: AwareDatetime


class BulkJobsView(BaseModel):
    """
    A tenant's newest bulk jobs (up to 50), newest first.
    """

    jobs: list[BulkJobView]


class BulkRequest(BaseModel):
    model_config = ConfigDict(
        extra='forbid',
    )
    action: Annotated[str, Field(examples=['retry'])]
    """
    `retry` (failed tasks: a new round of retries each), `cancel` (scheduled or held
    tasks) or `release` (held tasks).
    """
    all: bool | None = None
    """
    Take every task of the action's states (the filter is empty on purpose).
    """
    dry_run: bool | None = None
    """
    Answer the count and a sample, changing nothing.
    """
    filter: FilterRequest | None = None
    """
    Which tasks; every part given must hold. An empty filter is refused unless `all`
    is true.
    """
    per_second: Annotated[int | None, Field(ge=1, le=1000)] = None
    """
    Tasks acted on per second, at most (1–1000; default 100). The calls a retry or
    release brings about keep to the destination's limits besides.
    """


class DeliveryWindowView(BaseModel):
    """
    What the window holds now: one entry per minute, oldest first, and the hour's
    lateness percentiles.
    """

    lateness_p50_ms: int | None = None
    """
    Of every attempt in the window (`null` without attempts): the upper bound of the
    lateness bucket the percentile falls in.
    """
    lateness_p99_ms: int | None = None
    minutes: list[MinuteView]


class HoldRequest(BaseModel):
    """
    `hold`: register the task held until the caller releases it (or a check decides).
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    check_url: Annotated[
        str | None,
        Field(
            examples=['https://example.com/orders/42/committed'],
            max_length=2048,
            min_length=1,
        ),
    ] = None
    """
    Asked, signed, whether to release or cancel the task once the hold times out.
    It answers `200 {"decision": "release"}` or `{"decision": "cancel"}`; 404 and 410
    mean cancel.
    """
    max_checks: Annotated[int | None, Field(ge=1, le=100)] = None
    """
    How many times the check URL is asked (1–100; default 20).
    """
    on_unknown: Literal['cancel', 'release'] | None = None
    timeout: Annotated[str, Field(examples=['5m'])]
    """
    How long the task may stay held (1s to 24h) before its `check_url` is asked, or,
    without one, `on_unknown` applies.
    """


class HoldView(BaseModel):
    check_url: str | None = None
    max_checks: Annotated[int, Field(ge=0)]
    on_unknown: Literal['cancel', 'release']
    timeout: str


class KeyedStatusView(BaseModel):
    """
    A task with the key that an action by key left as it was.
    """

    id: str
    status: Literal[
        'held', 'scheduled', 'delivering', 'succeeded', 'failed', 'canceled'
    ]


class PolicyRequest(RetryRequest):
    """
    A named policy: a retry policy, and optionally the flow its tasks share.
    """

    flow: FlowRequest | None = None


class PolicyView(BaseModel):
    flow: FlowView | None = None
    name: str
    retry: RetryView


class ScheduleListView(BaseModel):
    next_cursor: str | None = None
    """
    Send as `cursor` for the next page; absent on the last.
    """
    schedules: list[ScheduleView]


class ScheduleRequest(BaseModel):
    """
    A schedule's own fields (`cron` or `every`, `timezone`, `start_at`, `end_at`, `catch_up`) and the fields of the task each occurrence is.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    body: Any | None = None
    """
    The body to send (at most 256 KiB): a string is sent as it is (`text/plain`), any
    other JSON value as JSON (`application/json`), unless `headers` names a type.
    """
    catch_up: Annotated[str | None, Field(pattern='^(one|none)$')] = None
    """
    `one` (default): an occurrence missed while the server was down fires once, late;
    `none`: it is skipped. Either way the schedule goes on from the next slot.
    """
    cron: Annotated[str | None, Field(examples=['0 9 * * MON-FRI'])] = None
    """
    A cron pattern: five fields (minute hour day month weekday), or six with seconds
    first; `L`, `#`, `W`, names and `@daily`-style nicknames are understood. Not with
    `every`.
    """
    end_at: AwareDatetime | None = None
    """
    No occurrence after this (RFC 3339).
    """
    every: Annotated[str | None, Field(examples=['15m'])] = None
    """
    A fixed interval instead of `cron` (at least 1s), counted from `start_at`.
    """
    expect_body: Annotated[str | None, Field(max_length=4096)] = None
    """
    An attempt succeeds only if the response body is exactly this text (at most 4 KiB).
    """
    flow: FlowRequest | None = None
    headers: Annotated[
        dict[Annotated[str, StringConstraints(min_length=1)], str] | None,
        Field(max_length=50),
    ] = None
    """
    Headers to send, at most 50; values are never shown again
    """
    key: Annotated[
        str | None, Field(examples=['order-42'], max_length=255, min_length=1)
    ] = None
    """
    The caller's own id for the task (not unique): tasks are listed, canceled and
    released by it. 1–255 bytes, no control characters.
    """
    metadata: Annotated[
        dict[Annotated[str, StringConstraints(min_length=1, max_length=64)], str]
        | None,
        Field(max_length=50),
    ] = None
    """
    Labels kept with the task and sent with its alerts (at most 50; keys 1–64 bytes, values up to 1 KiB)
    """
    method: Annotated[
        str | None,
        Field(
            examples=['POST'],
            pattern='^([Pp][Oo][Ss][Tt]|[Pp][Uu][Tt]|[Pp][Aa][Tt][Cc][Hh]|[Dd][Ee][Ll][Ee][Tt][Ee]|[Gg][Ee][Tt])$',
        ),
    ] = None
    """
    `POST` (the default), `PUT`, `PATCH`, `DELETE` or `GET`, in any case.
    """
    notify: Literal['final', 'every', 'never'] | None = None
    on_failure: AlertRequest | None = None
    on_success: AlertRequest | None = None
    order_key: Annotated[
        str | None, Field(examples=['order-42'], max_length=255, min_length=1)
    ] = None
    """
    Tasks with the same `order_key` are delivered one at a time, in the order they were
    registered: a task waits while an earlier one of its key is held, scheduled,
    being delivered or retrying (1 to 255 bytes).
    """
    order_on_failure: Annotated[
        str | None, Field(examples=['block'], pattern='^(block|skip)$')
    ] = None
    """
    With `order_key`, what the key does if this task fails for good: `block` (default)
    waits until it is retried or canceled; `skip` goes on without it.
    """
    retry: str | RetryRequest | None = None
    start_at: AwareDatetime | None = None
    """
    No occurrence before this (RFC 3339; default now).
    """
    template: Annotated[
        str | None,
        Field(
            examples=['billing'],
            max_length=64,
            min_length=1,
            pattern='^[A-Za-z0-9._-]+$',
        ),
    ] = None
    """
    A template of the tenant's (`PUT /v1/templates/{name}`) whose settings this task
    takes where it gives none; absent: the tenant's `default` template, if it has one.
    """
    timeout: Annotated[str | None, Field(examples=['10s'])] = None
    """
    How long one attempt may take (1s to 60s; default 10s).
    """
    timezone: Annotated[str | None, Field(examples=['Europe/Paris'])] = None
    """
    The IANA time zone `cron` is read in (default `UTC`).
    """
    url: Annotated[
        str,
        Field(
            examples=['https://example.com/hooks/order-shipped'],
            max_length=2048,
            min_length=1,
        ),
    ]
    """
    Where to send the callback: an `https://` URL (`http://` and private addresses only
    with `serve --dev` or `--allow-cidr`).
    """


class StatsView(BaseModel):
    counts: Annotated[
        dict[str, CountsAdditionalProperty] | None,
        Field(
            examples=[
                {
                    'canceled': 5,
                    'delivering': 1,
                    'failed': 2,
                    'held': 0,
                    'scheduled': 12,
                    'succeeded': 340,
                }
            ]
        ),
    ] = None
    """
    Tasks by state, every state named; `null` where the store cannot count them
    cheaply (DynamoDB, on AWS).
    """
    deliveries: DeliveryWindowView | None = None
    destinations: list[DestinationView] | None = None
    """
    Your destinations with calls in flight or waiting, or paused, by destination;
    `null` where the server keeps no such figures (the Lambdas).
    """
    open_breakers: list[BreakerView] | None = None
    """
    Your destinations whose circuit breaker is open: nothing but its probe is sent
    to them.
    """


class TaskRequest(BaseModel):
    """
    A callback to register. Only `url` is required: by default it is called at once with
    `POST`, no body, a 10 s timeout, and the default retry policy.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    body: Any | None = None
    """
    The body to send (at most 256 KiB): a string is sent as it is (`text/plain`), any
    other JSON value as JSON (`application/json`), unless `headers` names a type.
    """
    delay: Annotated[str | None, Field(examples=['90s'])] = None
    """
    How long from now to call (0s to 365days); the default is now. Not with `fire_at`.
    """
    expect_body: Annotated[str | None, Field(max_length=4096)] = None
    """
    An attempt succeeds only if the response body is exactly this text (at most 4 KiB).
    """
    fire_at: Annotated[
        AwareDatetime | None, Field(examples=['2030-01-01T09:00:00Z'])
    ] = None
    """
    When to call (RFC 3339), within 365 days. Not with `delay`.
    """
    flow: FlowRequest | None = None
    headers: Annotated[
        dict[Annotated[str, StringConstraints(min_length=1)], str] | None,
        Field(max_length=50),
    ] = None
    """
    Headers to send, at most 50; values are never shown again
    """
    hold: HoldRequest | None = None
    idempotency_key: Annotated[
        str | None, Field(examples=['order-42-reminder'], max_length=255, min_length=1)
    ] = None
    """
    Registers the task at most once: a repeat with the same key and request answers the
    task registered first (200). Same as the `Idempotency-Key` header.
    """
    key: Annotated[
        str | None, Field(examples=['order-42'], max_length=255, min_length=1)
    ] = None
    """
    The caller's own id for the task (not unique): tasks are listed, canceled and
    released by it. 1–255 bytes, no control characters.
    """
    max_delay: Annotated[str | None, Field(examples=['2m'])] = None
    """
    With `on_key: replace`: the replaced task fires at most this long after the first
    registration it replaced (1s to 365days), however often it is replaced.
    """
    metadata: Annotated[
        dict[Annotated[str, StringConstraints(min_length=1, max_length=64)], str]
        | None,
        Field(max_length=50),
    ] = None
    """
    Labels kept with the task and sent with its alerts (at most 50; keys 1–64 bytes, values up to 1 KiB)
    """
    method: Annotated[
        str | None,
        Field(
            examples=['POST'],
            pattern='^([Pp][Oo][Ss][Tt]|[Pp][Uu][Tt]|[Pp][Aa][Tt][Cc][Hh]|[Dd][Ee][Ll][Ee][Tt][Ee]|[Gg][Ee][Tt])$',
        ),
    ] = None
    """
    `POST` (the default), `PUT`, `PATCH`, `DELETE` or `GET`, in any case.
    """
    notify: Literal['final', 'every', 'never'] | None = None
    on_failure: AlertRequest | None = None
    on_key: Annotated[str | None, Field(examples=['replace'], pattern='^replace$')] = (
        None
    )
    """
    `replace`: a task registered before under the same `key` with `replace`, none of
    whose attempts has begun, is replaced by this one (its body, headers and fire time;
    answered 200 with that task) instead of adding one. Once an attempt of it has
    begun, this registration makes a new task. Needs `key`; not in a batch.
    """
    on_success: AlertRequest | None = None
    order_key: Annotated[
        str | None, Field(examples=['order-42'], max_length=255, min_length=1)
    ] = None
    """
    Tasks with the same `order_key` are delivered one at a time, in the order they were
    registered: a task waits while an earlier one of its key is held, scheduled,
    being delivered or retrying (1 to 255 bytes).
    """
    order_on_failure: Annotated[
        str | None, Field(examples=['block'], pattern='^(block|skip)$')
    ] = None
    """
    With `order_key`, what the key does if this task fails for good: `block` (default)
    waits until it is retried or canceled; `skip` goes on without it.
    """
    retry: str | RetryRequest | None = None
    template: Annotated[
        str | None,
        Field(
            examples=['billing'],
            max_length=64,
            min_length=1,
            pattern='^[A-Za-z0-9._-]+$',
        ),
    ] = None
    """
    A template of the tenant's (`PUT /v1/templates/{name}`) whose settings this task
    takes where it gives none; absent: the tenant's `default` template, if it has one.
    """
    timeout: Annotated[str | None, Field(examples=['10s'])] = None
    """
    How long one attempt may take (1s to 60s; default 10s).
    """
    url: Annotated[
        str,
        Field(
            examples=['https://example.com/hooks/order-shipped'],
            max_length=2048,
            min_length=1,
        ),
    ]
    """
    Where to send the callback: an `https://` URL (`http://` and private addresses only
    with `serve --dev` or `--allow-cidr`).
    """


class TaskView(BaseModel):
    alert_of: str | None = None
    """
    On an alert: the task it reports on.
    """
    alert_pending: bool | None = None
    """
    The task failed and its alert is not yet registered (it will be).
    """
    alerts: list[str] | None = None
    """
    The alerts raised about this task, oldest first.
    """
    attempt: Annotated[int, Field(ge=0)]
    """
    The current (or last) attempt number.
    """
    attempts: list[AttemptView] | None = None
    body_bytes: Annotated[int, Field(ge=0)]
    body_preview: str | None = None
    """
    The body's first 200 characters, in a task's own view (`GET /v1/tasks/{id}`).
    """
    check_at: AwareDatetime | None = None
    """
    While held: when the hold times out, or the next check is due.
    """
    checks: list[CheckView] | None = None
    """
    The checks made while held, in order.
    """
    created_at: AwareDatetime
    expect_body: str | None = None
    flow: FlowView | None = None
    header_names: list[str]
    hold: HoldView | None = None
    id: str
    idempotency_key: str | None = None
    key: str | None = None
    last_error: str | None = None
    metadata: dict[str, str]
    method: str
    next_attempt_at: AwareDatetime | None = None
    notify: Literal['final', 'every', 'never']
    on_failure: AlertView | None = None
    on_success: AlertView | None = None
    order: OrderView | None = None
    retry: RetryView
    schedule_id: str | None = None
    """
    Set on a schedule's occurrence: its schedule.
    """
    status: Literal[
        'held', 'scheduled', 'delivering', 'succeeded', 'failed', 'canceled'
    ]
    timeout: str
    updated_at: AwareDatetime
    url: str


class TemplateRequest(BaseModel):
    """
    A task template: the settings its tasks take unless they give their own. Tasks
    registered after a change take the template as changed; those registered before keep
    what they were registered with.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    expect_body: Annotated[str | None, Field(max_length=4096)] = None
    """
    The tenant's rule for what a successful receiver answers (`"success"`).
    """
    flow: FlowRequest | None = None
    headers: Annotated[
        dict[Annotated[str, StringConstraints(min_length=1)], str] | None,
        Field(max_length=50),
    ] = None
    """
    Headers to send, at most 50; values are never shown again
    """
    method: str | None = None
    notify: Literal['final', 'every', 'never'] | None = None
    on_failure: AlertRequest | None = None
    on_success: AlertRequest | None = None
    retry: str | RetryRequest | None = None
    timeout: Annotated[str | None, Field(examples=['5s'])] = None
    url: Annotated[str | None, Field(max_length=2048, min_length=1)] = None
    """
    The URL of a task that gives none. Not with `url_base`.
    """
    url_base: Annotated[
        str | None,
        Field(examples=['https://example.com/hooks'], max_length=2048, min_length=1),
    ] = None
    """
    What a task's relative `url` (`/orders/42`) is appended to. Not with `url`.
    """


class TemplateView(BaseModel):
    header_names: list[str]
    """
    The names of the headers its tasks send.
    """
    name: str
    settings: TemplateRequest
    """
    The template's fields, without header values.
    """


class TemplatesView(BaseModel):
    templates: list[TemplateView]


class BatchItemView(BaseModel):
    """
    One task of a batch: registered (201), repeated (200), or refused with a problem.
    """

    problem: Problem | None = None
    status: Annotated[int, Field(ge=0)]
    task: TaskView | None = None


class BatchRequest(BaseModel):
    """
    A batch registration: `{"tasks": [ … ]}`.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    tasks: Annotated[list[TaskRequest], Field(max_length=100, min_length=1)]
    """
    1 to 100 tasks, each as `POST /v1/tasks` takes it.
    """


class BatchView(BaseModel):
    """
    What `POST /v1/tasks/batch` did: one result per task, in the order sent.
    """

    tasks: list[BatchItemView]


class BulkPreviewView(BaseModel):
    """
    What a bulk action would do now (a `dry_run`): nothing was changed.
    """

    action: str
    complete: bool
    """
    False when the count stopped at the preview's time limit (20 s): a lower bound.
    """
    count: Annotated[int, Field(ge=0)]
    """
    How many tasks it would act on.
    """
    sample: list[TaskView]
    """
    The first of them (up to 10), newest first.
    """


class KeyCancelView(BaseModel):
    """
    What `DELETE /v1/tasks?key=…` did.
    """

    canceled: list[str]
    """
    The tasks it canceled.
    """
    key: str
    more: bool
    """
    More tasks have the key than one request handles: send it again.
    """
    not_canceled: list[KeyedStatusView]
    """
    The tasks with the key it could not cancel: being delivered, or finished.
    """


class KeyReleaseView(BaseModel):
    """
    What `POST /v1/tasks/release?key=…` did.
    """

    key: str
    more: bool
    not_released: list[KeyedStatusView]
    """
    The tasks with the key that were not held, with their status.
    """
    released: list[str]


class PageView(BaseModel):
    next_cursor: str | None = None
    tasks: list[TaskView]


class PoliciesView(BaseModel):
    policies: list[PolicyView]
