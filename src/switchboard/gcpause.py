"""Hold off Python's cyclic garbage collector during one bulk step.

Validating or registering a large batch allocates many container objects, none of which form
cycles; collections triggered in the middle find nothing to free but still scan the young
generation (and, in a large process, the old one). Measured on this project's batches this
saves a third to a half of the time. The collector is re-enabled on exit only if it was enabled
on entry, so nested pauses and callers that disabled it themselves are left as they were.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["gc_paused"]


@contextmanager
def gc_paused(pause: bool = True) -> Iterator[None]:
    """Disable the cyclic collector inside the block when ``pause`` is true."""
    if not pause or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
