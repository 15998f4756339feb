"""Every operation of the client, called once against the real server: each reaches the
route and method the OpenAPI document gives it, and reads the answer into its model."""

from __future__ import annotations

import json
import re
import subprocess

import httpx

from boomerang_client import Client, PermanentFailure, Receiver, callback_url
from boomerang_client import models as m

from .conftest import BINARY, wait_for
from .test_models import NOT_IN_CLIENT


def _routes() -> list[tuple[str, re.Pattern[str], str]]:
    """(method, path pattern, operationId) for each documented operation, literal paths
    first (`/v1/tasks/batch` before `/v1/tasks/{id}`)."""
    document = json.loads(subprocess.run([str(BINARY), "openapi"], check=True, capture_output=True).stdout)
    routes = [
        (
            method.upper(),
            re.compile("^" + re.sub(r"\{[^}]+\}", "[^/]+", path) + "$"),
            op["operationId"],
            path.count("{"),
        )
        for path, ops in document["paths"].items()
        for method, op in ops.items()
    ]
    return [(method, pattern, op) for method, pattern, op, _ in sorted(routes, key=lambda route: route[3])]


def test_every_operation_reaches_its_documented_route(server, serve_wsgi):
    sent: list[tuple[str, str]] = []
    http = httpx.Client(
        event_hooks={
            "request": [lambda request: sent.append((request.method, request.url.raw_path.decode().split("?")[0]))]
        }
    )
    client = Client(server.url, api_key=server.api_key, http_client=http)

    receiver = Receiver(server.signing_secret)
    receiver.register("gone", lambda delivery: (_ for _ in ()).throw(PermanentFailure()))
    receiver.register("ok", lambda delivery: None)
    base = serve_wsgi(receiver.wsgi())

    assert client.healthz().status == "ok"
    assert client.readyz().status == "ready"
    assert "boomerang_tasks_registered" in client.metrics()
    assert client.openapi()["info"]["title"] == "Boomerang"

    policy = client.put_policy(
        "payments", backoff="exponential", interval="30s", max_attempts=5, flow={"key": "partner/eu", "parallelism": 2}
    )
    assert isinstance(policy, m.PolicyView) and policy.retry.max_attempts == 5
    assert client.get_policy("payments").flow.key == "partner/eu"
    assert [p.name for p in client.list_policies().policies] == ["payments"]

    template = client.put_template("billing", url_base=base, timeout="5s", headers={"x-team": "billing"})
    assert template.header_names == ["x-team"]
    assert client.get_template("billing").settings.timeout == "5s"
    assert [t.name for t in client.list_templates().templates] == ["billing"]

    task = client.create_task(
        template="billing", url="/ok", delay="1h", key="order-1", order_key="line-1", retry="payments"
    )
    assert task.url == f"{base}/ok" and task.timeout == "5s" and task.retry.max_attempts == 5
    assert client.get_task(task.id).key == "order-1"
    assert [t.id for t in client.list_tasks(key="order-1").tasks] == [task.id]
    assert client.get_order_key("line-1").head.task_id == task.id
    assert [k.key for k in client.list_order_keys().keys] == ["line-1"]
    assert client.get_flow("partner/eu").key == "partner/eu"
    assert client.pause_flow("partner/eu").paused is True
    assert "partner/eu" in [f.key for f in client.list_flows().flows]
    assert client.resume_flow("partner/eu").paused is False

    held = client.create_tasks([{"url": f"{base}/ok", "key": "held-1", "hold": {"timeout": "1h"}} for _ in range(3)])
    assert [item.task.status for item in held.tasks] == ["held"] * 3
    assert client.release_task(held.tasks[0].task.id).status == "scheduled"
    assert len(client.release_by_key("held-1").released) == 2

    assert client.cancel_task(task.id).status == "canceled"
    client.create_task(url=f"{base}/ok", delay="1h", key="order-2")
    assert len(client.cancel_by_key("order-2").canceled) == 1

    failed = client.create_task(url=callback_url(base, "gone"))
    wait_for(lambda: client.get_task(failed.id).status == "failed", what="the task to fail on 410")
    assert client.retry_task(failed.id).status == "scheduled"

    client.create_task(url=f"{base}/ok", delay="1h", key="bulk")
    preview = client.bulk_action(action="cancel", filter={"key": "bulk"}, dry_run=True)
    assert isinstance(preview, m.BulkPreviewView) and preview.count == 1
    job = client.bulk_action(action="cancel", filter={"key": "bulk"})
    assert isinstance(job, m.BulkJobView)
    assert client.get_bulk_job(job.id).id == job.id
    assert [j.id for j in client.list_bulk_jobs().jobs] == [job.id]

    schedule = client.create_schedule(url=f"{base}/ok", every="1h", start_at="2030-01-01T09:00:00Z")
    assert client.get_schedule(schedule.id).every_ms == 3_600_000
    assert [s.id for s in client.list_schedules().schedules] == [schedule.id]
    assert client.pause_schedule(schedule.id).state == "paused"
    assert client.resume_schedule(schedule.id).state == "active"
    assert client.delete_schedule(schedule.id) is None

    assert client.put_breaker_settings(failures=5).failures == 5
    assert client.open_breaker("http://127.0.0.1:9").state == "open"
    assert "http://127.0.0.1:9" in [b.destination for b in client.list_breakers().open]
    assert client.close_breaker("http://127.0.0.1:9").state == "closed"

    (first,) = client.list_signing_secrets().secrets
    rotated = client.rotate_signing_secret(grace_period="1h")
    assert len(rotated.secrets) == 2
    assert [s.id for s in client.retire_signing_secret(first.id).secrets] == [rotated.secrets[0].id]

    assert client.stats().counts is not None
    assert client.delete_policy("payments") is None
    assert client.delete_template("billing") is None

    routes = _routes()
    reached = {
        next(op for method, pattern, op in routes if method == verb and pattern.match(path)) for verb, path in sent
    }
    assert reached == {op for _, _, op in routes} - NOT_IN_CLIENT
