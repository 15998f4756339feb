"""The error the client raises when the API answers with an error status."""

from __future__ import annotations

import email.utils
import json
import time
from typing import Any

import httpx


class ApiError(Exception):
    """The API answered with an error status (4xx or 5xx).

    Boomerang answers every error with an RFC 9457 problem; its parts are here:

    - ``status``: the HTTP status (``422``, ``404``, ``409``, ``429``…);
    - ``type``: the problem's type (``urn:boomerang:problem:invalid-field``), stable, for code;
    - ``title`` and ``detail``: what happened, for people;
    - ``field``: the request field at fault, as a path (``"delay"``,
      ``"retry.schedule[1]"``, ``"tasks[3].delay"``), when the problem names one;
    - ``retry_after``: the seconds the server asked to wait (``Retry-After`` on a ``429``
      or ``503``), if it said;
    - ``body``: the whole problem, or the text of a body that is not one.
    """

    def __init__(
        self,
        status: int,
        *,
        title: str,
        detail: str = "",
        type: str | None = None,
        field: str | None = None,
        retry_after: float | None = None,
        body: Any = None,
    ) -> None:
        super().__init__(f"{status} {title}: {detail}" if detail else f"{status} {title}")
        self.status = status
        self.title = title
        self.detail = detail
        self.type = type
        self.field = field
        self.retry_after = retry_after
        self.body = body

    @classmethod
    def from_response(cls, response: httpx.Response) -> ApiError:
        """Reads the problem out of an error response (or whatever body it has instead)."""
        try:
            body: Any = json.loads(response.content)
        except ValueError:
            body = response.text
        problem = body if isinstance(body, dict) and isinstance(body.get("title"), str) else {}
        return cls(
            response.status_code,
            title=problem.get("title") or response.reason_phrase or f"HTTP {response.status_code}",
            detail=problem.get("detail") or (body if isinstance(body, str) else ""),
            type=problem.get("type"),
            field=problem.get("field"),
            retry_after=retry_after_seconds(response.headers.get("retry-after")),
            body=body,
        )


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """``Retry-After`` (seconds, or an HTTP date) as seconds from now; None if absent or unreadable."""
    if value is None or not value.strip():
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():  # not "²", which isdigit() takes and float() refuses
        return float(value)
    try:
        at = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, at.timestamp() - (time.time() if now is None else now))
