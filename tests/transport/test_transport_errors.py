"""Error objects: the constructors of the standard ones, the RpcError round trip, and the one
mapping from exceptions to the wire."""

from __future__ import annotations

from typing import Any

import pydantic
import pytest

from switchboard.transport import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    FrameTooLargeError,
    LinkClosedError,
    ParamProblem,
    RequestTimeoutError,
    RpcError,
    TransportError,
    WireError,
    internal_error,
    invalid_params,
    invalid_request,
    method_not_found,
    parse_error,
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


def test_each_constructor_builds_its_standard_error_object() -> None:
    assert parse_error().to_wire() == {"code": PARSE_ERROR, "message": "Parse error"}
    assert invalid_request("empty batch").to_wire() == {
        "code": INVALID_REQUEST,
        "message": "Invalid Request: empty batch",
    }
    assert internal_error().to_wire() == {"code": INTERNAL_ERROR, "message": "Internal error"}
    assert internal_error("Peer is shutting down").message == "Peer is shutting down"


def test_method_not_found_has_one_message_and_names_the_method_in_data() -> None:
    assert method_not_found("no/such").to_wire() == {
        "code": METHOD_NOT_FOUND,
        "message": "Method not found",
        "data": {"method": "no/such"},
    }


def test_invalid_params_lists_each_problem_as_field_and_message() -> None:
    error = invalid_params(ParamProblem("messages", "must be an array"), ParamProblem("", "x"))
    assert error.to_wire() == {
        "code": INVALID_PARAMS,
        "message": "Invalid params",
        "data": {
            "errors": [
                {"field": "messages", "message": "must be an array"},
                {"field": "", "message": "x"},
            ]
        },
    }


def test_invalid_params_lists_ten_problems_and_counts_the_rest() -> None:
    error = invalid_params(*(ParamProblem(f"f{i}", "bad") for i in range(13)))
    assert [entry["field"] for entry in error.data["errors"]] == [f"f{i}" for i in range(10)]
    assert error.data["more"] == 3


def test_invalid_params_needs_at_least_one_problem() -> None:
    with pytest.raises(ValueError, match="at least one problem"):
        invalid_params()


def test_a_validation_error_and_a_hand_written_refusal_have_one_data_shape() -> None:
    with pytest.raises(pydantic.ValidationError) as caught:
        Item.model_validate({"name": "n", "count": "many"})
    from_pydantic, _ = wire_error(caught.value)
    by_hand = invalid_params(ParamProblem("count", from_pydantic["data"]["errors"][0]["message"]))
    assert from_pydantic == by_hand.to_wire()


@pytest.mark.parametrize(
    "error",
    [
        parse_error(),
        invalid_request("not an object"),
        method_not_found("m"),
        invalid_params(ParamProblem("a.b", "c")),
        internal_error(),
    ],
)
def test_every_constructed_error_round_trips_through_its_wire_form(error: RpcError) -> None:
    again = RpcError.from_wire(error.to_wire())
    assert (again.code, again.message, again.data) == (error.code, error.message, error.data)
    assert wire_error(error) == (error.to_wire(), False)
