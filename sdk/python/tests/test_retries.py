"""Retries: lost answers, 5xx and 429s, met through a real faulty proxy in front of the
real server, and the real server's own rate limit."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest

from boomerang_client import ApiError, Client, RetryPolicy
from boomerang_client.errors import retry_after_seconds

from .faulty_proxy import FaultyProxy

LATER = "http://127.0.0.1:9/later"
QUICK = RetryPolicy(initial_delay=0.01, max_delay=0.05)


@pytest.fixture
def proxy(server) -> Iterator[FaultyProxy]:
    proxy = FaultyProxy(server.url)
    yield proxy
    proxy.close()


@pytest.fixture
def via_proxy(server, proxy) -> Iterator[Client]:
    with Client(proxy.url, api_key=server.api_key, retry=QUICK) as client:
        yield client


def test_a_registration_whose_answer_was_lost_registers_once(client, proxy, via_proxy):
    proxy.faults = ["lose"]
    task = via_proxy.create_task(url=LATER, delay="1h")

    sent = [seen for seen in proxy.seen if seen.method == "POST"]
    assert len(sent) == 2, "sent again after the lost answer"
    assert sent[0].headers["idempotency-key"] == sent[1].headers["idempotency-key"] == task.idempotency_key
    assert [t.id for t in client.list_tasks().tasks] == [task.id]


def test_a_batch_whose_answer_was_lost_registers_once(client, proxy, via_proxy):
    proxy.faults = ["lose"]
    batch = via_proxy.create_tasks([{"url": LATER, "delay": "1h"} for _ in range(3)])

    assert [item.status for item in batch.tasks] == [200, 200, 200], "the repeat found the tasks registered"
    assert len(proxy.seen) == 2 and proxy.seen[0].body == proxy.seen[1].body
    assert len(client.list_tasks().tasks) == 3


def test_5xx_and_429_are_retried_honouring_retry_after(client, proxy, via_proxy):
    task = client.create_task(url=LATER, delay="1h")
    proxy.faults = ["503", "429:1"]
    started = time.monotonic()
    assert via_proxy.get_task(task.id).id == task.id
    assert len(proxy.seen) == 3
    assert time.monotonic() - started >= 1, "waited the second the 429 asked for"


def test_calls_that_are_not_safe_to_repeat_are_sent_once(client, proxy, via_proxy):
    task = client.create_task(url=LATER, delay="1h")
    proxy.faults = ["503"]
    with pytest.raises(ApiError) as refused:
        via_proxy.retry_task(task.id)
    assert refused.value.status == 503 and len(proxy.seen) == 1

    proxy.faults = ["503"]
    with pytest.raises(ApiError):
        via_proxy.create_task(url=LATER, delay="1h", key="k", on_key="replace")
    assert len(proxy.seen) == 2

    proxy.faults = ["lose"]
    with pytest.raises(httpx.RemoteProtocolError):
        via_proxy.create_schedule(url=LATER, every="1h")
    assert len(proxy.seen) == 3
    assert len(client.list_schedules().schedules) == 1, "the lost one was made, and only once"


def test_attempts_are_bounded(server, proxy):
    proxy.faults = ["503"] * 10
    with Client(proxy.url, api_key=server.api_key, retry=RetryPolicy(attempts=3, initial_delay=0.01)) as client:
        with pytest.raises(ApiError) as refused:
            client.list_tasks()
    assert refused.value.status == 503 and len(proxy.seen) == 3


def test_a_retry_after_longer_than_the_bound_is_raised(via_proxy, proxy):
    proxy.faults = ["429:3600"]
    with pytest.raises(ApiError) as refused:
        via_proxy.list_tasks()
    assert (refused.value.status, refused.value.retry_after, len(proxy.seen)) == (429, 3600, 1)


def test_an_unreadable_retry_after_is_ignored():
    assert retry_after_seconds("12") == 12.0
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0
    for unreadable in ("²", "soon", "-1", "1.5", ""):
        assert retry_after_seconds(unreadable) is None, unreadable


def test_the_servers_rate_limit_is_waited_out(start_server):
    server = start_server("--tenant-rate", "1")
    with server.client(retry=RetryPolicy(attempts=1)) as once:
        with pytest.raises(ApiError) as limited:
            for _ in range(20):
                once.list_tasks()
    assert limited.value.status == 429 and limited.value.retry_after and limited.value.retry_after >= 1

    started = time.monotonic()
    with server.client() as patient:
        for _ in range(3):
            assert patient.list_tasks().tasks == []
    assert time.monotonic() - started >= 1, "answered 429 at first, and waited"
