"""The kit's requests and notifications to a peer under test, as values that never raise.

What this module knows: one JSON-RPC request's fate as a :class:`Reply` (a result, an error
object, or no answer at all), and a notification's (sent, or the connection was closed). Both
suites use it: the server suite playing a host, the host suite playing a connector.

What it deliberately does not know: which suite asks, or what the answer means.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from switchboard.transport import LinkClosedError, Peer, RequestTimeoutError, RpcError

__all__ = ["Reply", "ask", "tell"]


@dataclass(frozen=True, slots=True)
class Reply:
    """The server's answer to one kit request; never an exception.

    Attributes:
        method: the method asked.
        result: the result, when the answer was one.
        error: the error object (``code``, ``message``, ``data``), when the answer was one.
        failure: why there was no answer at all (a timeout, a closed connection).
    """

    method: str
    result: Any = None
    error: Mapping[str, Any] | None = None
    failure: str | None = None

    @property
    def ok(self) -> bool:
        """Whether the answer was a result."""
        return self.error is None and self.failure is None

    @property
    def code(self) -> int | None:
        """The error code, when the answer was an error."""
        return None if self.error is None else self.error.get("code")

    def describe(self) -> str:
        """The answer in a few words, for failure messages."""
        if self.failure is not None:
            return self.failure
        if self.error is not None:
            return f"error {self.code} {self.error.get('message', '')!r}"
        text = json.dumps(self.result, ensure_ascii=False)
        return f"result {text if len(text) <= 200 else text[:200] + '...'}"


async def ask(
    peer: Peer,
    method: str,
    params: Any,
    wait: float,
    *,
    on_response: Callable[[Any], None] | None = None,
) -> Reply:
    """Send a request on ``peer`` and return its answer as a :class:`Reply`; never raises for
    an error answer, a timeout or a closed connection (each is a :class:`Reply` too)."""
    try:
        result = await peer.request(method, params, timeout=wait, on_response=on_response)
    except RpcError as exc:
        return Reply(method, error={"code": exc.code, "message": exc.message, "data": exc.data})
    except RequestTimeoutError:
        return Reply(method, failure=f"no answer to {method} within {wait:g} s")
    except LinkClosedError:
        return Reply(method, failure=f"the connection closed before {method} was answered")
    return Reply(method, result=result)


async def tell(peer: Peer, method: str, params: Any = None) -> bool:
    """Send a notification on ``peer``; ``False`` when the connection is closed."""
    try:
        await peer.notify(method, params)
    except LinkClosedError:
        return False
    return True
