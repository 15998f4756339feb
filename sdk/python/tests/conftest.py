"""Fixtures: the real `boomerang serve` on loopback (a fresh data dir and port per test),
a client of it, and receivers served by real HTTP servers (wsgiref, uvicorn) in threads."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import httpx
import pytest
import uvicorn

from boomerang_client import Client

REPO = Path(__file__).resolve().parents[3]
BINARY = Path(os.environ.get("BOOMERANG_BIN") or REPO / "target" / "debug" / "boomerang")


def wait_for(condition: Callable[[], Any], *, timeout: float = 15.0, what: str = "the condition") -> Any:
    """Polls `condition` until it returns something truthy, which is returned; fails the
    test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)


@dataclass
class Server:
    url: str
    api_key: str
    signing_secret: str
    data_dir: Path
    log: Path

    def client(self, **options: Any) -> Client:
        return Client(self.url, **{"api_key": self.api_key, **options})


@pytest.fixture
def start_server(tmp_path: Path) -> Iterator[Callable[..., Server]]:
    """Starts `boomerang serve --dev` on a port of its choosing, with `extra` flags."""
    if not BINARY.is_file():
        pytest.fail(f"missing {BINARY}: run `cargo build --bin boomerang` (or set BOOMERANG_BIN)")
    processes: list[subprocess.Popen[bytes]] = []

    def start(*extra: str) -> Server:
        n = len(processes)
        data_dir, log = tmp_path / f"server{n}", tmp_path / f"server{n}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                [str(BINARY), "serve", "--dev", "--addr", "127.0.0.1:0", "--data-dir", str(data_dir),
                 "--shutdown-grace", "0s", *extra],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            )  # fmt: skip
        processes.append(process)

        def listening() -> str | None:
            if process.poll() is not None:
                pytest.fail(f"boomerang serve exited ({process.returncode}):\n{log.read_text()}")
            found = re.search(r"listening on (http://127\.0\.0\.1:\d+)", log.read_text())
            return found and found.group(1)

        url = wait_for(listening, what="the server to listen")
        wait_for(lambda: _ready(url), what="/readyz")
        credentials = json.loads((data_dir / "credentials.json").read_text())
        return Server(url, credentials["api_key"], credentials["signing_secret"], data_dir, log)

    yield start
    for process in processes:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _ready(url: str) -> bool:
    try:
        return httpx.get(f"{url}/readyz", timeout=1).status_code == 200
    except httpx.TransportError:
        return False


@pytest.fixture
def server(start_server: Callable[..., Server]) -> Server:
    return start_server()


@pytest.fixture
def client(server: Server) -> Iterator[Client]:
    with server.client() as client:
        yield client


class _ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def get_environ(self) -> dict[str, Any]:
        # The path as sent, as gunicorn, uWSGI and Werkzeug pass it on (wsgiref alone does
        # not): the receiver reads an alias with an encoded slash from it.
        environ = super().get_environ()
        environ["REQUEST_URI"] = self.path
        return environ


@pytest.fixture
def serve_wsgi() -> Iterator[Callable[[Any], str]]:
    """Serves a WSGI app with wsgiref on a free loopback port; answers its base URL."""
    servers: list[WSGIServer] = []

    def serve(app: Any) -> str:
        httpd = make_server("127.0.0.1", 0, app, server_class=_ThreadingWSGIServer, handler_class=_QuietHandler)
        threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        servers.append(httpd)
        return f"http://127.0.0.1:{httpd.server_address[1]}"

    yield serve
    for httpd in servers:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def serve_asgi() -> Iterator[Callable[[Any], str]]:
    """Serves an ASGI app with uvicorn on a free loopback port; answers its base URL."""
    running: list[tuple[uvicorn.Server, threading.Thread]] = []

    def serve(app: Any) -> str:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        running.append((server, thread))
        wait_for(lambda: server.started, what="uvicorn to start")
        return f"http://127.0.0.1:{sock.getsockname()[1]}"

    yield serve
    for server, thread in running:
        server.should_exit = True
        thread.join(timeout=10)
