"""Hold off Python's cyclic garbage collector during one bulk step.

Validating or registering a large batch allocates many container objects, none of which form
cycles; collections triggered in the middle find nothing to free but still scan the young
generation (and, in a large process, the old one). Measured on this project's batches this
saves a third to a half of the time. The collector is re-enabled on exit only if it was enabled
on entry, so nested pauses and callers that disabled it themselves are left as they were.

:func:`pause_collector` is the same pause for a step that ends later than one block: the
answer to a ``channels/register`` of 100,000 channels leaves the host a few milliseconds
after its handler returns, and the young collection owed for what the handler made (tens of
milliseconds when it made a tracked key per channel) is better run once the answer is out.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["gc_paused", "pause_collector"]


@contextmanager
def gc_paused(pause: bool = True) -> Iterator[None]:
    """Disable the cyclic collector inside the block when ``pause`` is true."""
    resume = pause_collector() if pause else None
    try:
        yield
    finally:
        if resume is not None:
            resume()


def pause_collector() -> Callable[[], None] | None:
    """Disable the cyclic collector until the returned function is called.

    Returns:
        The function that enables it again (calling it more than once does nothing more),
        or None when the collector was off already: whoever turned it off turns it on.
    """
    if not gc.isenabled():
        return None
    gc.disable()
    pending = [True]

    def resume() -> None:
        if pending:
            pending.clear()
            gc.enable()

    return resume
