"""The README's examples, run as they are written, against the real server."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from boomerang_client import Client

from .conftest import wait_for

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def _example(section: str) -> str:
    """The first ```python block under the heading `section`."""
    body = README.split(f"\n## {section}\n", 1)[1]
    found = re.search(r"```python\n(.*?)```", body, re.S)
    assert found, f"no python example under {section!r}"
    return found.group(1)


def test_quick_start_runs(server, client: Client):
    code = _example("Quick start")
    assert len([line for line in code.splitlines() if line.strip()]) <= 5
    env = {**os.environ, "BOOMERANG_URL": server.url, "BOOMERANG_API_KEY": server.api_key}
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout == "scheduled\n"
    (task,) = client.list_tasks().tasks
    assert task.status == "canceled" and task.url == "https://app.example/callbacks/payment-reminder"


def test_receiver_example_receives(server, client: Client, serve_wsgi, monkeypatch, capsys):
    monkeypatch.setenv("BOOMERANG_SIGNING_SECRET", server.signing_secret)
    namespace: dict = {}
    exec(compile(_example("Receiving callbacks"), "README.md", "exec"), namespace)
    base = serve_wsgi(namespace["app"]) + "/callbacks"
    callbacks = Client(server.url, api_key=server.api_key, callback_base=base)

    reminded = callbacks.create_task(url=callbacks.callback_url("payment-reminder"), body={"order": 42})
    wait_for(lambda: client.get_task(reminded.id).status == "succeeded", what="the reminder to be delivered")
    assert f"remind order 42 (task {reminded.id}, attempt 1)" in capsys.readouterr().out

    orderless = callbacks.create_task(url=callbacks.callback_url("payment-reminder"), body={})
    wait_for(lambda: client.get_task(orderless.id).status == "failed", what="the orderless reminder to fail")
    assert client.get_task(orderless.id).attempts[0].status_code == 410

    # No body at all (None for the handler) is no order either: a 410, not a crash's 500.
    empty = callbacks.create_task(url=callbacks.callback_url("payment-reminder"))
    wait_for(lambda: client.get_task(empty.id).status == "failed", what="the empty reminder to fail")
    assert client.get_task(empty.id).attempts[0].status_code == 410
