"""The base of every MCPL wire model, the one way to serialize them, and batch validation.

What this module knows:

- the conventions every model in this package follows: snake_case attributes with camelCase
  wire aliases, unknown members kept (MCPL peers add fields freely, §8), value semantics
  (frozen), and serialization ``by_alias=True, exclude_none=True``;
- how to validate a batch of untrusted items (descriptors in ``channels/register``, messages
  in ``channels/incoming``) so that one malformed item is reported on its own instead of
  sinking the call, while the common all-good batch costs a single validator call.

What it deliberately does not know: any particular MCPL method.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final, TypeAlias, TypeVar

from pydantic import BaseModel, ConfigDict, InstanceOf, TypeAdapter, ValidationError

from switchboard.runtime.gcpause import gc_paused

__all__ = ["JsonObject", "WireModel", "describe_errors", "dump", "validate_batch"]

_MAX_ERRORS_IN_REASON: Final = 3
_GC_PAUSE_MIN_ITEMS: Final = 512
# A batch is validated in chunks so that a bad item costs a second pass over its chunk only.
_CHUNK: Final = 1024

JsonObject: TypeAlias = InstanceOf[dict[str, Any]]
"""An opaque JSON object member (``address``, ``metadata``, ``origin``...).

Checked to be a dict and kept as the very object received, not copied: these members are
free-form by the spec and copying them was a third of the cost of validating a descriptor.
"""


class WireModel(BaseModel):
    """Base for MCPL params and results: aliases on the wire, extras kept, immutable.

    Members a peer sends that the model does not declare stay on the instance (in
    ``model_extra``) and come back out of :func:`dump`, so a round trip loses nothing.
    """

    model_config = ConfigDict(extra="allow", populate_by_name=True, frozen=True)


def dump(model: BaseModel) -> dict[str, Any]:
    """Serialize a model to its wire form: camelCase aliases, ``None`` members left out.

    Note that ``exclude_none`` also drops extra members whose value is ``null``.
    """
    return model.model_dump(by_alias=True, exclude_none=True)


def describe_errors(errors: Sequence[Any], *, skip: int = 0) -> str:
    """Render pydantic error dicts as ``"field.path: message; ..."`` (at most three).

    Args:
        errors: entries of ``ValidationError.errors()``.
        skip: how many leading ``loc`` elements to leave out (1 drops a list index).
    """
    parts: list[str] = []
    for error in errors[:_MAX_ERRORS_IN_REASON]:
        loc = ".".join(str(part) for part in error["loc"][skip:])
        parts.append(f"{loc}: {error['msg']}" if loc else str(error["msg"]))
    if len(errors) > _MAX_ERRORS_IN_REASON:
        parts.append(f"(+{len(errors) - _MAX_ERRORS_IN_REASON} more)")
    return "; ".join(parts)


M = TypeVar("M", bound=BaseModel)
P = TypeVar("P")


def validate_batch(
    list_adapter: TypeAdapter[list[M]],
    item_adapter: TypeAdapter[M],
    items: list[Any],
    problem: Callable[[Any, str], P],
) -> list[M | P]:
    """Validate ``items`` one by one in effect, at the cost of one call when all are good.

    Theory of operation: the list goes through ``list_adapter`` in one call (per chunk of
    1,024 items). If that fails, the error locations name the bad indices; those become
    problems (built by ``problem(item, reason)``) and the remaining items of the chunk go
    through ``list_adapter`` once more. Only if that second pass fails too (it should not)
    does it fall back to ``item_adapter`` per item.

    Returns:
        One entry per input item, in order: a model or a problem.

    Raises:
        TypeError: if ``items`` is not a list.
    """
    if not isinstance(items, list):
        raise TypeError(f"expected a list, got {type(items).__name__}")
    with gc_paused(len(items) >= _GC_PAUSE_MIN_ITEMS):
        return _validate_batch(list_adapter, item_adapter, items, problem)


def _validate_batch(
    list_adapter: TypeAdapter[list[M]],
    item_adapter: TypeAdapter[M],
    items: list[Any],
    problem: Callable[[Any, str], P],
) -> list[M | P]:
    if len(items) <= _CHUNK:
        return _validate_chunk(list_adapter, item_adapter, items, problem)
    out: list[M | P] = []
    for start in range(0, len(items), _CHUNK):
        out.extend(
            _validate_chunk(list_adapter, item_adapter, items[start : start + _CHUNK], problem)
        )
    return out


def _validate_chunk(
    list_adapter: TypeAdapter[list[M]],
    item_adapter: TypeAdapter[M],
    items: list[Any],
    problem: Callable[[Any, str], P],
) -> list[M | P]:
    try:
        return list(list_adapter.validate_python(items))
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_input=False, include_context=False)

    by_index: dict[int, list[Any]] = {}
    for error in errors:
        loc = error["loc"]
        index = loc[0] if loc else None
        if isinstance(index, int):
            by_index.setdefault(index, []).append(error)
    good = [i for i in range(len(items)) if i not in by_index]
    try:
        validated = list_adapter.validate_python([items[i] for i in good])
    except ValidationError:
        return _one_by_one(item_adapter, items, problem)

    out: list[M | P] = []
    next_good = iter(validated)
    for index, item in enumerate(items):
        item_errors = by_index.get(index)
        if item_errors is None:
            out.append(next(next_good))
        else:
            out.append(problem(item, describe_errors(item_errors, skip=1)))
    return out


def _one_by_one(
    item_adapter: TypeAdapter[M], items: list[Any], problem: Callable[[Any, str], P]
) -> list[M | P]:
    out: list[M | P] = []
    for item in items:
        try:
            out.append(item_adapter.validate_python(item))
        except ValidationError as exc:
            errors = exc.errors(include_url=False, include_input=False, include_context=False)
            out.append(problem(item, describe_errors(errors)))
    return out
