"""Fixtures for the Vertex backend tests: a working fake of the CustomJob REST API on top of
omnidist's FakeServer (:mod:`omnidist_vertex.testing`), and a validator that checks requests
with the SDK's own types."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from omnidist.testing import FakeServer
from omnidist_vertex.testing import FakeVertex


@pytest.fixture
def vertex():
    """A running fake Vertex service."""
    with FakeServer() as server:
        yield FakeVertex(server)


def canonical(request: dict[str, Any]) -> dict[str, Any]:
    """The request parsed by the SDK's own ``CustomJob`` and printed back in REST form."""
    from google.cloud import aiplatform_v1

    message = aiplatform_v1.CustomJob.from_json(json.dumps(request))  # strict: unknown fields fail
    return json.loads(
        aiplatform_v1.CustomJob.to_json(
            message,
            use_integers_for_enums=False,
            including_default_value_fields=False,
            always_print_fields_with_no_presence=False,
        )
    )


@pytest.fixture(scope="session")
def valid() -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Check a compiled request against the SDK: it parses as a CustomJob and is already in
    the canonical REST form (camelCase, enum names, int64 as strings)."""

    def check(request: dict[str, Any]) -> dict[str, Any]:
        assert canonical(request) == request
        return request

    return check
