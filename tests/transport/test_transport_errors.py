"""Error objects: the RpcError round trip and the one mapping from exceptions to the wire."""

from __future__ import annotations

from typing import Any

import pydantic
import pytest

from switchboard.transport import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    FrameTooLargeError,
    LinkClosedError,
    RequestTimeoutError,
    RpcError,
    TransportError,
    WireError,
    wire_error,
)


class CapabilityDenied(Exception):
    """Stands in for another package's error class that knows its wire form."""

    def to_wire(self) -> dict[str, Any]:
        return {"code": -32002, "message": "Capability denied", "data": {"capability": "x"}}


class Item(pydantic.BaseModel):
    name: str
    count: int


def test_every_transport_error_shares_one_root() -> None:
    for cls in (LinkClosedError, RequestTimeoutError, FrameTooLargeError, RpcError):
        assert issubclass(cls, TransportError)


def test_an_rpc_error_round_trips_through_its_wire_form() -> None:
    error = RpcError(-32001, "nope", {"why": [1, 2]})
    again = RpcError.from_wire(error.to_wire())
    assert (again.code, again.message, again.data) == (-32001, "nope", {"why": [1, 2]})
    assert RpcError(-1, "m").to_wire() == {"code": -1, "message": "m"}
    assert str(error) == "[-32001] nope"


@pytest.mark.parametrize(
    ("wire", "code", "message"),
    [
        ({"code": "1", "message": "m"}, INTERNAL_ERROR, "m"),
        ({"code": True, "message": "m"}, INTERNAL_ERROR, "m"),
        ({"code": 5}, 5, "malformed error object"),
        ({"code": 5, "message": 7}, 5, "7"),
    ],
)
def test_a_malformed_error_object_still_becomes_an_rpc_error(
    wire: dict[str, Any], code: int, message: str
) -> None:
    error = RpcError.from_wire(wire)
    assert (error.code, error.message) == (code, message)


def test_any_exception_with_to_wire_is_a_wire_error_and_keeps_its_object() -> None:
    assert isinstance(CapabilityDenied(), WireError)
    assert isinstance(RpcError(1, "m"), WireError)
    assert wire_error(CapabilityDenied()) == (CapabilityDenied().to_wire(), False)


def test_a_validation_error_becomes_invalid_params_naming_fields_but_not_values() -> None:
    with pytest.raises(pydantic.ValidationError) as caught:
        Item.model_validate({"name": 42, "count": "secret-value-123"})
    error, unexpected = wire_error(caught.value)
    assert not unexpected
    assert error["code"] == INVALID_PARAMS
    assert error["message"] == "Invalid params"
    fields = {entry["field"] for entry in error["data"]["errors"]}
    assert fields == {"name", "count"}
    text = repr(error)
    assert "secret-value-123" not in text
    assert "42" not in text
    assert "pydantic.dev" not in text


def test_an_ordinary_exception_becomes_a_bare_internal_error() -> None:
    error, unexpected = wire_error(RuntimeError("/etc/secret at line 3"))
    assert unexpected
    assert error == {"code": INTERNAL_ERROR, "message": "Internal error"}
