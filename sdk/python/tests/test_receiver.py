"""The receiver: real deliveries from the real server to receivers served by wsgiref and
uvicorn, dispatched by alias; and requests it must refuse (forged, stale, future,
unknown alias), signed with the stock `standardwebhooks` library."""

from __future__ import annotations

import asyncio
import base64
import json
import os
from datetime import datetime, timedelta, timezone

import httpx
import pytest
from standardwebhooks import Webhook

from boomerang_client import Client, Delivery, PermanentFailure, Receiver, RetryLater, callback_url

from .conftest import wait_for


def _finished(client: Client, task_id: str, status: str = "succeeded"):
    """Waits for the task to reach `status`, and answers it."""
    return wait_for(
        lambda: (task := client.get_task(task_id)).status == status and task,
        what=f"task {task_id} to be {status}",
    )


def test_wsgi_receiver_dispatches_a_real_delivery_by_alias(server, client, serve_wsgi):
    receiver = Receiver(server.signing_secret)
    got: dict[str, list[Delivery]] = {"payment-reminder": [], "other": []}
    receiver.register("payment-reminder", got["payment-reminder"].append)
    receiver.on("other")(got["other"].append)
    base = serve_wsgi(receiver.wsgi()) + "/callbacks"

    task = client.create_task(
        url=callback_url(base, "payment-reminder"), body={"order": 42}, headers={"x-tenant": "acme"}
    )
    done = _finished(client, task.id)

    assert done.attempts[0].status_code == 200
    (delivery,) = got["payment-reminder"]
    assert got["other"] == []
    assert (delivery.alias, delivery.task_id, delivery.attempt) == ("payment-reminder", task.id, 1)
    assert delivery.body == {"order": 42} and delivery.raw_body == b'{"order":42}'
    assert delivery.method == "POST" and delivery.headers["x-tenant"] == "acme"
    assert delivery.headers["webhook-signature"].startswith("v1,")
    assert abs((datetime.now(timezone.utc) - delivery.timestamp).total_seconds()) < 60


def test_asgi_receiver_awaits_an_async_handler(server, client, serve_asgi):
    receiver = Receiver(server.signing_secret)
    got: list[Delivery] = []

    @receiver.on("note")
    async def note(delivery: Delivery) -> str:
        await asyncio.sleep(0)
        got.append(delivery)
        return "success"

    # Bytes are the body as they are, as a str is (and as in the TypeScript client).
    receiver.register("bytes", lambda delivery: b"success")
    receiver.register("json", lambda delivery: {"ok": True})

    base = serve_asgi(receiver.asgi())
    # `expect_body` makes the handler's returned text part of success.
    task = client.create_task(url=callback_url(base, "note"), body="plain text", expect_body="success")
    assert _finished(client, task.id).attempts[0].response == "success"
    (delivery,) = got
    assert (delivery.body, delivery.task_id, delivery.attempt) == ("plain text", task.id, 1)
    as_bytes = client.create_task(url=callback_url(base, "bytes"), expect_body="success")
    assert _finished(client, as_bytes.id).attempts[0].response == "success"
    # The JSON of a value is not the text "success": the task fails.
    as_json = client.create_task(
        url=callback_url(base, "json"), expect_body="success", retry={"schedule": ["1s"], "max_attempts": 1}
    )
    assert _finished(client, as_json.id, "failed").attempts[0].response == '{"ok": true}'


def test_handler_outcomes_steer_boomerang(server, client, serve_wsgi):
    receiver = Receiver(server.signing_secret)
    attempts: list[int | None] = []

    @receiver.on("flaky")
    def flaky(delivery: Delivery) -> None:
        attempts.append(delivery.attempt)
        if delivery.attempt == 1:
            raise RetryLater()

    @receiver.on("gone")
    def gone(delivery: Delivery) -> None:
        raise PermanentFailure("order deleted")

    @receiver.on("broken")
    def broken(delivery: Delivery) -> None:
        raise KeyError("a bug")

    base = serve_wsgi(receiver.wsgi())
    one_second = {"schedule": ["1s"], "max_attempts": 2}
    retried = client.create_task(url=callback_url(base, "flaky"), retry=one_second)
    failed = client.create_task(url=callback_url(base, "gone"), retry=one_second)
    crashed = client.create_task(url=callback_url(base, "broken"), retry={"schedule": ["1h"]})

    assert [a.status_code for a in _finished(client, retried.id).attempts] == [500, 200]
    assert attempts == [1, 2]
    assert [a.status_code for a in _finished(client, failed.id, "failed").attempts] == [410]
    wait_for(lambda: client.get_task(crashed.id).attempts, what="the broken handler's attempt")
    assert [a.status_code for a in client.get_task(crashed.id).attempts] == [500]
    assert client.get_task(crashed.id).status == "scheduled"


def test_retry_later_with_seconds_answers_retry_after(server, client, serve_wsgi):
    # A receiver of its own: Boomerang pauses the whole destination on Retry-After.
    receiver = Receiver(server.signing_secret)
    receiver.register("busy", lambda delivery: (_ for _ in ()).throw(RetryLater(120)))
    base = serve_wsgi(receiver.wsgi())

    task = client.create_task(
        url=callback_url(base, "busy"), retry={"backoff": "exponential", "interval": "1s", "max_interval": "1h"}
    )
    seen = wait_for(lambda: (t := client.get_task(task.id)).attempts and t, what="the first attempt")
    (attempt,) = seen.attempts
    assert attempt.status_code == 503 and seen.status == "scheduled"
    # The policy's 1 s wait gave way to the 120 s the receiver asked for, and the whole
    # destination is paused.
    assert (seen.next_attempt_at - attempt.started_at).total_seconds() > 100
    (paused,) = [d for d in client.stats().destinations if d.destination == base]
    assert paused.paused_until is not None and paused.paused_until > attempt.started_at + timedelta(seconds=100)


def test_a_delivery_to_an_unknown_alias_is_a_404(server, client, serve_wsgi):
    receiver = Receiver(server.signing_secret)
    receiver.register("known", lambda delivery: None)
    base = serve_wsgi(receiver.wsgi())
    task = client.create_task(url=callback_url(base, "unknown"), retry={"schedule": ["1h"]})
    wait_for(lambda: client.get_task(task.id).attempts, what="the attempt")
    assert client.get_task(task.id).attempts[0].status_code == 404


def test_rotation_a_receiver_with_either_secret_verifies(server, client, serve_wsgi):
    old = server.signing_secret
    new = client.rotate_signing_secret(grace_period="1h").secrets[0].secret
    assert new != old
    only_new, only_old = Receiver(new), Receiver([old])
    got: list[str] = []
    for receiver in (only_new, only_old):
        receiver.register("hook", lambda delivery: got.append(delivery.task_id))
    tasks = [client.create_task(url=callback_url(serve_wsgi(r.wsgi()), "hook")).id for r in (only_new, only_old)]
    for task_id in tasks:
        _finished(client, task_id)
    assert sorted(got) == sorted(tasks)

    # Once the old secret is retired, a receiver that knows only it refuses deliveries.
    (old_id,) = [s.id for s in client.list_signing_secrets().secrets if s.secret == old]
    client.retire_signing_secret(old_id)
    stale = client.create_task(url=callback_url(serve_wsgi(only_old.wsgi()), "hook"), retry={"schedule": ["1h"]})
    wait_for(lambda: client.get_task(stale.id).attempts, what="the attempt")
    assert client.get_task(stale.id).attempts[0].status_code == 401


def _signed(
    secret: str, body: bytes, *, at: datetime | None = None, msg_id: str = "01JD2W9Q5Z4T8M3X6V7B0C1N2P"
) -> dict[str, str]:
    at = at or datetime.now(timezone.utc)
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(int(at.timestamp())),
        "webhook-signature": Webhook(secret).sign(msg_id, at, body.decode()),
        "content-type": "application/json",
        "boomerang-attempt": "3",
    }


@pytest.mark.parametrize("app", ["wsgi", "asgi"])
def test_forged_stale_and_future_deliveries_are_refused(app, serve_wsgi, serve_asgi):
    secret = "whsec_" + base64.b64encode(os.urandom(32)).decode()
    other = "whsec_" + base64.b64encode(os.urandom(32)).decode()
    receiver = Receiver(secret)
    got: list[Delivery] = []
    receiver.register("hook", got.append)
    url = (serve_wsgi(receiver.wsgi()) if app == "wsgi" else serve_asgi(receiver.asgi())) + "/callbacks/hook"
    body = json.dumps({"order": 1}).encode()
    now = datetime.now(timezone.utc)

    def post(headers: dict[str, str], payload: bytes = body, to: str = url) -> int:
        return httpx.post(to, content=payload, headers=headers).status_code

    assert post(_signed(other, body)) == 401, "signed with another secret"
    assert post(_signed(secret, body, at=now - timedelta(minutes=10))) == 401, "stale"
    assert post(_signed(secret, body, at=now + timedelta(minutes=10))) == 401, "from the future"
    assert post(_signed(secret, body), payload=b'{"order": 2}') == 401, "body changed"
    assert post({"content-type": "application/json"}) == 401, "unsigned"
    assert post({**_signed(secret, body), "webhook-signature": "v1,not base64!"}) == 401, "garbled"
    assert got == []

    assert post(_signed(secret, body), to=url.replace("/hook", "/nobody")) == 404
    assert post(_signed(secret, body)) == 200
    (delivery,) = got
    assert (delivery.body, delivery.attempt, delivery.alias) == ({"order": 1}, 3, "hook")

    # An alias is one path segment, percent-encoded in the URL.
    receiver.register("café 50%", got.append)
    assert post(_signed(secret, body), to=callback_url(url.rpartition("/")[0], "café 50%")) == 200
    assert got[-1].alias == "café 50%"


def test_core_answers(tmp_path):
    secret = "whsec_" + base64.b64encode(os.urandom(32)).decode()
    receiver = Receiver([secret])
    receiver.register("text", lambda d: "success")
    receiver.register("json", lambda d: {"seen": d.body})
    receiver.register("later", lambda d: (_ for _ in ()).throw(RetryLater(30)))

    async def asynchronous(delivery: Delivery) -> str:
        return "awaited"

    receiver.register("async", asynchronous)
    body = b'{"a": 1}'

    text = receiver.handle("POST", "/callbacks/text", _signed(secret, body), body)
    assert (text.status, text.body) == (200, b"success")
    as_json = receiver.handle("POST", "/json", _signed(secret, body), body)
    assert json.loads(as_json.body) == {"seen": {"a": 1}}
    later = receiver.handle("POST", "/later", _signed(secret, body), body)
    assert later.status == 503 and ("retry-after", "30") in later.headers
    receiver.register("fraction", lambda d: (_ for _ in ()).throw(RetryLater(2.5)))
    fraction = receiver.handle("POST", "/fraction", _signed(secret, body), body)
    assert fraction.status == 503 and ("retry-after", "3") in fraction.headers, "whole seconds, rounded up"
    # boomerang-attempt is not signed: a value int() refuses is no attempt number, not a crash.
    seen: list[Delivery] = []
    receiver.register("attempt", seen.append)
    for odd in ("²", "x", " 7 ", ""):
        assert receiver.handle("POST", "/attempt", {**_signed(secret, body), "boomerang-attempt": odd}, body).status == 200
    assert [d.attempt for d in seen] == [None, None, 7, None]
    assert receiver.handle("POST", "/async", _signed(secret, body), body).body == b"awaited"
    assert asyncio.run(receiver.handle_async("POST", "/async", _signed(secret, body), body)).body == b"awaited"
    # Says JSON, is not: the handler gets the text, and the answer is the handler's (a 400
    # would have Boomerang send it again and again).
    assert receiver.handle("POST", "/json", _signed(secret, b"{bad"), b"{bad").body == b'{"seen": "{bad"}'
    # The path is as sent: an encoded slash is part of the alias, which has no handler.
    assert receiver.handle("POST", "/callbacks/x%2Ftext", _signed(secret, body), body).status == 404
    assert receiver.handle("POST", "/callbacks/te%78t?x=1", _signed(secret, body), body).status == 200
    big = b"x" * (receiver.max_body + 1)
    assert receiver.handle("POST", "/text", _signed(secret, big), big).status == 413

    with pytest.raises(ValueError):
        receiver.register("text", lambda d: None)
    with pytest.raises(ValueError):
        receiver.register("a/b", lambda d: None)


@pytest.mark.parametrize("app", ["wsgi", "asgi"])
def test_what_reaches_a_handler_by_http(app, serve_wsgi, serve_asgi):
    secret = "whsec_" + base64.b64encode(os.urandom(32)).decode()
    receiver = Receiver(secret)
    got: list[Delivery] = []
    receiver.register("order-paid", got.append)
    base = serve_wsgi(receiver.wsgi()) if app == "wsgi" else serve_asgi(receiver.asgi())

    # A body whose content type says JSON but that is not: handed over as text, answered 200.
    bad = b"order 42 paid"
    answer = httpx.post(f"{base}/callbacks/order-paid", content=bad, headers=_signed(secret, bad))
    assert answer.status_code == 200
    assert got[-1].body == "order 42 paid"

    # An encoded slash is part of the alias: `x/order-paid` has no handler.
    body = b'{"order": 42}'
    answer = httpx.post(f"{base}/callbacks/x%2Forder-paid", content=body, headers=_signed(secret, body))
    assert answer.status_code == 404
    assert len(got) == 1
