"""Registering, inspecting and canceling tasks, batches, schedules, errors and paging,
against the real server."""

from __future__ import annotations

import asyncio

import httpx
import pydantic
import pytest

from boomerang_client import ApiError, AsyncClient, Client
from boomerang_client.models import TaskRequest

# Never called: every task here is due in an hour, and canceled or dropped with the server.
LATER = "http://127.0.0.1:9/later"


def test_register_inspect_cancel(client: Client):
    task = client.create_task(url=LATER, delay="1h", key="order-42", body={"order": 42}, metadata={"team": "billing"})
    assert task.status == "scheduled" and len(task.id) == 26
    assert task.idempotency_key, "a registration is sent with an idempotency key"

    seen = client.get_task(task.id)
    assert (seen.url, seen.key, seen.metadata, seen.body_preview) == (
        LATER,
        "order-42",
        {"team": "billing"},
        '{"order":42}',
    )
    assert seen.next_attempt_at is not None and seen.attempts == []

    assert client.cancel_task(task.id).status == "canceled"
    assert client.get_task(task.id).status == "canceled"
    with pytest.raises(ApiError) as refused:
        client.cancel_task(task.id)
    assert refused.value.status == 409


def test_a_model_and_keywords_make_one_request(client: Client):
    task = client.create_task(TaskRequest(url=LATER, delay="1h", key="a"), key="b")
    assert client.get_task(task.id).key == "b"


def test_an_idempotency_key_registers_once(client: Client):
    first = client.create_task(url=LATER, delay="1h", idempotency_key="order-7-reminder")
    again = client.create_task(url=LATER, delay="1h", idempotency_key="order-7-reminder")
    assert again.id == first.id
    assert [t.id for t in client.list_tasks().tasks] == [first.id]
    with pytest.raises(ApiError) as reused:
        client.create_task(url=LATER, delay="2h", idempotency_key="order-7-reminder")
    assert reused.value.status == 422


def test_replace_by_key_registers_without_an_idempotency_key(client: Client):
    first = client.create_task(url=LATER, delay="1h", key="debounce", on_key="replace", body="one")
    again = client.create_task(url=LATER, delay="1h", key="debounce", on_key="replace", body="two")
    assert again.id == first.id and first.idempotency_key is None
    assert client.get_task(first.id).body_preview == "two"


def test_a_bad_delay_is_an_error_naming_its_field(client: Client):
    with pytest.raises(ApiError) as refused:
        client.create_task(url=LATER, delay="tomorrow")
    error = refused.value
    assert (error.status, error.field, error.type) == (422, "delay", "urn:boomerang:problem:invalid-field")
    assert error.title == "A field is invalid" and "tomorrow" in error.detail
    assert client.list_tasks().tasks == [], "a refused request stores nothing"


def test_an_unknown_task_is_a_404(client: Client):
    with pytest.raises(ApiError) as missing:
        client.get_task("01JD2W9Q5Z4T8M3X6V7B0C1N2P")
    assert missing.value.status == 404 and missing.value.field is None


def test_a_wrong_api_key_is_a_401(server):
    with server.client(api_key="bmr_wrong") as client, pytest.raises(ApiError) as refused:
        client.list_tasks()
    assert refused.value.status == 401


def test_the_url_is_the_environments_else_the_local_servers(monkeypatch):
    # As the TypeScript client: BOOMERANG_URL, else where `boomerang serve` listens by default.
    monkeypatch.delenv("BOOMERANG_URL", raising=False)
    with Client(api_key="k") as client:
        assert client.base_url == "http://127.0.0.1:8080"
    monkeypatch.setenv("BOOMERANG_URL", "http://boomerang.test:9000/")
    with Client(api_key="k") as client:
        assert client.base_url == "http://boomerang.test:9000"
    assert asyncio.run(_base_url_of_async_client()) == "http://boomerang.test:9000"
    with Client("http://given.test", api_key="k") as client:
        assert client.base_url == "http://given.test"


def test_a_missing_api_key_is_refused_when_the_client_is_built(monkeypatch):
    # Not a 401 on the first call: the mistake is named where it is made.
    monkeypatch.delenv("BOOMERANG_API_KEY", raising=False)
    for build in (lambda: Client("http://127.0.0.1:1"), lambda: AsyncClient(api_key="")):
        with pytest.raises(ValueError, match="BOOMERANG_API_KEY"):
            build()
    monkeypatch.setenv("BOOMERANG_API_KEY", "from-env")
    with Client("http://127.0.0.1:1") as client:
        assert client.api_key == "from-env"


async def _base_url_of_async_client() -> str:
    async with AsyncClient(api_key="k") as client:
        return client.base_url


def test_a_misspelt_field_is_refused_before_sending(client: Client):
    with pytest.raises(pydantic.ValidationError, match="dealy"):
        client.create_task(url=LATER, dealy="1h")
    assert client.list_tasks().tasks == []


def test_batch_registers_in_order_and_names_a_bad_task(client: Client):
    batch = client.create_tasks([{"url": LATER, "delay": "1h", "key": f"k{i}"} for i in range(3)])
    assert [item.status for item in batch.tasks] == [201, 201, 201]
    assert [item.task.key for item in batch.tasks] == ["k0", "k1", "k2"]
    assert all(item.task.idempotency_key for item in batch.tasks), "each task can be retried"

    with pytest.raises(ApiError) as refused:
        client.create_tasks([{"url": LATER, "delay": "1h"}, {"url": LATER, "delay": "soon"}])
    assert (refused.value.status, refused.value.field) == (422, "tasks[1].delay")
    assert len(client.list_tasks().tasks) == 3, "one bad task refuses the whole batch"


def test_cancel_and_release_by_key(client: Client):
    for _ in range(2):
        client.create_task(url=LATER, delay="1h", key="order-9")
    held = client.create_task(url=LATER, delay="1h", key="order-9", hold={"timeout": "1h"})
    assert held.status == "held"

    released = client.release_by_key("order-9")
    assert released.released == [held.id]
    canceled = client.cancel_by_key("order-9")
    assert len(canceled.canceled) == 3 and canceled.more is False
    assert {t.status for t in client.iter_tasks(key="order-9")} == {"canceled"}


def test_schedules(client: Client):
    schedule = client.create_schedule(url=LATER, cron="0 9 * * MON-FRI", timezone="Europe/Paris", key="daily")
    assert schedule.state == "active" and schedule.cron == "0 9 * * MON-FRI" and schedule.next_at is not None
    assert client.get_schedule(schedule.id).timezone == "Europe/Paris"
    assert client.pause_schedule(schedule.id).state == "paused"
    assert client.resume_schedule(schedule.id).state == "active"

    with pytest.raises(ApiError) as refused:
        client.create_schedule(url=LATER, cron="every day")
    assert (refused.value.status, refused.value.field) == (422, "cron")

    client.delete_schedule(schedule.id)
    with pytest.raises(ApiError) as gone:
        client.get_schedule(schedule.id)
    assert gone.value.status == 404


def _counting(server) -> tuple[Client, list[str]]:
    pages: list[str] = []
    http = httpx.Client(event_hooks={"request": [lambda request: pages.append(str(request.url))]})
    return Client(server.url, api_key=server.api_key, http_client=http), pages


def test_iter_tasks_follows_every_page(server):
    client, pages = _counting(server)
    registered = [
        item.task.id for item in client.create_tasks([{"url": LATER, "delay": "1h"} for _ in range(25)]).tasks
    ]
    pages.clear()

    listed = [task.id for task in client.iter_tasks(page_size=10)]
    assert sorted(listed) == sorted(registered) and len(set(listed)) == 25
    assert listed == sorted(listed, reverse=True), "newest first"
    assert len(pages) == 3 and "cursor=" in pages[1] and "cursor=" in pages[2]


def test_iter_schedules_and_order_keys_follow_every_page(server):
    client, pages = _counting(server)
    made = [client.create_schedule(url=LATER, every="1h").id for _ in range(5)]
    keys = [f"line-{i}" for i in range(5)]
    client.create_tasks([{"url": LATER, "delay": "1h", "order_key": key} for key in keys])
    pages.clear()

    assert sorted(s.id for s in client.iter_schedules(page_size=2)) == sorted(made)
    assert len(pages) == 3
    pages.clear()
    assert [k.key for k in client.iter_order_keys(page_size=2)] == keys
    assert len(pages) == 3 and "after=line-1" in pages[1]


def test_async_client(server):
    async def main() -> None:
        async with AsyncClient(server.url, api_key=server.api_key) as client:
            batch = await client.create_tasks([{"url": LATER, "delay": "1h", "key": "async"} for _ in range(3)])
            task = await client.create_task(url=LATER, delay="1h", key="async")
            assert (await client.get_task(task.id)).key == "async"
            listed = [t.id async for t in client.iter_tasks(key="async", page_size=2)]
            assert sorted(listed) == sorted([task.id, *(item.task.id for item in batch.tasks)])
            with pytest.raises(ApiError) as refused:
                await client.create_task(url=LATER, delay="never")
            assert refused.value.field == "delay"

    asyncio.run(main())
