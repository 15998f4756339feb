"""Client for Boomerang, the reliable delayed-callback service.

- `Client` and `AsyncClient`: one method per API operation, named by its operationId
  (``create_task``, ``get_task``, ``cancel_task``, ``list_tasks``…), returning the
  generated pydantic models of `boomerang_client.models`, raising `ApiError`.
- `Receiver`: verifies deliveries' Standard Webhooks signatures and dispatches them to
  handlers by alias, as a WSGI or an ASGI application.
"""

from .client import AsyncClient, Client, RetryPolicy, callback_url
from .errors import ApiError
from .operations import TaskStatus
from .receiver import Delivery, PermanentFailure, Receiver, Response, RetryLater

__version__ = "0.1.0"

__all__ = [
    "ApiError",
    "AsyncClient",
    "Client",
    "Delivery",
    "PermanentFailure",
    "Receiver",
    "Response",
    "RetryLater",
    "RetryPolicy",
    "TaskStatus",
    "callback_url",
]
