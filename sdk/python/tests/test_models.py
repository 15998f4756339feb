"""The generated models and the client's operations against the OpenAPI document the
binary prints now: neither may drift from it."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import typing
from pathlib import Path

import pytest

import boomerang_client
from boomerang_client import AsyncClient, Client
from boomerang_client.operations import OPERATIONS, TaskStatus

from .conftest import BINARY

PACKAGE = Path(__file__).resolve().parents[1]

# Pages for people in a browser, not API calls.
NOT_IN_CLIENT = {"console", "console_file"}


def _generator():
    spec = importlib.util.spec_from_file_location("generate_models", PACKAGE / "scripts" / "generate_models.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def document() -> dict:
    return json.loads(subprocess.run([str(BINARY), "openapi"], check=True, capture_output=True).stdout)


def test_models_match_the_openapi_document():
    generator = _generator()
    fresh = generator.generate(str(BINARY))
    assert fresh == generator.MODELS.read_text(
        encoding="utf-8"
    ), "src/boomerang_client/models.py is out of date: run scripts/generate_models.py"


def test_package_version_is_the_api_version(document):
    assert boomerang_client.__version__ == document["info"]["version"]
    pyproject = (PACKAGE / "pyproject.toml").read_text()
    assert f'version = "{document["info"]["version"]}"' in pyproject


def test_every_operation_has_a_method_on_both_clients(document):
    in_document = {op["operationId"] for ops in document["paths"].values() for op in ops.values()}
    assert set(OPERATIONS) == in_document - NOT_IN_CLIENT
    for name, build in OPERATIONS.items():
        assert getattr(Client, name).build is build, name
        assert getattr(AsyncClient, name).build is build, name


def test_task_status_is_the_documents(document):
    assert set(typing.get_args(TaskStatus)) == set(document["components"]["schemas"]["Status"]["enum"])
