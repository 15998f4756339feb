"""A real HTTP proxy on loopback, in front of the real server, that fails the requests a
test tells it to: for the client's retries to meet real lost answers, 5xx and 429s."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

# Headers of one hop, not passed on; and encodings, since httpx decodes what it reads.
NOT_PASSED = {
    "connection",
    "keep-alive",
    "transfer-encoding",
    "content-length",
    "host",
    "accept-encoding",
    "content-encoding",
}


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class FaultyProxy:
    """Forwards to `upstream`, except that each request first takes the next fault of
    `faults`:

    - ``"lose"``: forward it, then close the connection without answering (the server
      acted, the client never hears of it);
    - ``"503"``: answer 503 without forwarding;
    - ``"429:N"``: answer 429 with ``Retry-After: N`` without forwarding.
    """

    def __init__(self, upstream: str) -> None:
        self.upstream = httpx.Client(base_url=upstream)
        self.faults: list[str] = []
        self.seen: list[Seen] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def handle_one_request(self) -> None:
                # Every method goes through `serve`.
                self.raw_requestline = self.rfile.readline(65537)
                if not self.raw_requestline or not self.parse_request():
                    self.close_connection = True
                    return
                proxy._serve(self)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.upstream.close()

    def _serve(self, request: BaseHTTPRequestHandler) -> None:
        body = request.rfile.read(int(request.headers.get("content-length") or 0))
        headers = {name.lower(): value for name, value in request.headers.items()}
        self.seen.append(Seen(request.command, request.path, headers, body))
        fault = self.faults.pop(0) if self.faults else None
        request.close_connection = True
        if fault is not None and fault != "lose":
            status, _, after = fault.partition(":")
            request.send_response(int(status))
            if after:
                request.send_header("retry-after", after)
            request.send_header("content-type", "application/problem+json")
            problem = b'{"type":"about:blank","title":"Injected","status":%s,"detail":"by the test"}' % status.encode()
            request.send_header("content-length", str(len(problem)))
            request.end_headers()
            request.wfile.write(problem)
            return
        forwarded = {name: value for name, value in headers.items() if name not in NOT_PASSED}
        answer = self.upstream.request(request.command, request.path, headers=forwarded, content=body)
        if fault == "lose":
            return
        request.send_response(answer.status_code)
        for name, value in answer.headers.items():
            if name.lower() not in NOT_PASSED:
                request.send_header(name, value)
        request.send_header("content-length", str(len(answer.content)))
        request.end_headers()
        request.wfile.write(answer.content)
