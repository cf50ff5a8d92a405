"""The writer's in-memory duplicate index: which recent messages are stored, under which seq.

It decides, message by message, whether a submitted message is new (and gets the next seq) or a
duplicate (answered with the seq of the stored copy), over a bounded window of the most recently
stored messages, rebuilt from the store on start.

What it deliberately does not know: SQLite, JSON, threads or the event loop.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import Final

from switchboard.store.records import AppendResult, FreshResults
from switchboard.store.wire import Key

__all__ = ["DEFAULT_WINDOW", "DedupeIndex"]

DEFAULT_WINDOW: Final = 200_000

# Runs an iterator to its end, keeping nothing.
_consume: Final[Callable[[Iterable[object]], object]] = partial(deque, maxlen=0)

# Builds AppendResult values from (seq, duplicate) pairs in C, without a Python-level __new__.
_result_of_pair: Final = partial(tuple.__new__, AppendResult)


class DedupeIndex:
    """A bounded, insertion-ordered map from message key to the seq of its stored copy.

    What it knows: message keys ``(server_id, channelId, messageId)``, the sequence numbers the
    writer hands out, and a bounded window of the most recently stored messages. It decides, message
    by message, whether a submitted message is new (and gets the next seq) or a duplicate (and
    answers with the seq of the stored copy).

    The window: the index remembers the ``window`` most recently stored messages. A message whose
    stored copy is older than that is not recognised and is stored again under a new seq; a
    connector that retries that late is not retrying, it is resending. Within the window the answer
    is exact and stable.

    Transactions: keys claimed since the last :meth:`DedupeIndex.commit` are *pending*. When their
    transaction fails, :meth:`DedupeIndex.rollback` forgets them, so a retry of the same message is
    new again rather than a duplicate of something never written. Eviction happens only on commit,
    so a rollback never loses older keys. The insertion order lives in a list beside the dict, so
    evicting the oldest keys is a slice (popping the first key of a plain dict again and again is
    quadratic, because the dict's iterator must skip every slot freed before it).

    Args:
        window: how many of the most recently stored messages are remembered (0 remembers
            nothing past the group being written).
    """

    __slots__ = ("_head", "_order", "_pending", "_seqs", "window")

    def __init__(self, window: int = DEFAULT_WINDOW) -> None:
        if window < 0:
            raise ValueError(f"dedupe window must be 0 or more, not {window}")
        self.window = window
        self._seqs: dict[Key, int] = {}
        # Remembered keys in seq order are _order[_head:]; the evicted prefix is cut off now
        # and then, so that evicting and rolling back are slices, not one call per key.
        self._order: list[Key] = []
        self._head = 0
        self._pending = 0

    def __len__(self) -> int:
        return len(self._seqs)

    def __contains__(self, key: object) -> bool:
        return key in self._seqs

    @classmethod
    def rebuild(cls, window: int, batches: Iterable[tuple[int, Sequence[Key]]]) -> DedupeIndex:
        """An index over stored batches given as ``(first_seq, keys)`` in ascending seq order.

        Only the last ``window`` keys are kept. A key stored twice (its first copy had left the
        window when it came again) maps to its newest copy.
        """
        index = cls(window)
        seqs = index._seqs
        for first_seq, keys in batches:
            for seq, key in enumerate(keys, first_seq):
                seqs.pop(key, None)  # re-insert, so the order is that of the newest copy
                seqs[key] = seq
        index._order.extend(seqs)
        index.commit()
        return index

    def claim(
        self, keys: Sequence[Key], first_seq: int
    ) -> tuple[Sequence[AppendResult], list[int] | None]:
        """Decide for each key, in order, whether it is new; new keys take consecutive seqs
        from ``first_seq`` and become pending.

        Returns:
            One result per key, and the positions of the new keys, or None when every key was
            new (the common case).
        """
        seqs = self._seqs
        count = len(keys)
        before = len(seqs)
        # One hash lookup per key, in C: a new key takes the seq proposed for its position.
        found = list(map(seqs.setdefault, keys, range(first_seq, first_seq + count)))
        if len(seqs) - before == count:  # every key was new (and none repeats in the batch)
            self._order.extend(keys)
            self._pending += count
            return FreshResults(first_seq, count), None
        for position, key in enumerate(keys):  # undo what was inserted, then go key by key
            if found[position] == first_seq + position:
                del seqs[key]
        return self._claim_each(keys, first_seq)

    def _claim_each(
        self, keys: Sequence[Key], first_seq: int
    ) -> tuple[list[AppendResult], list[int]]:
        setdefault = self._seqs.setdefault
        remember = self._order.append
        results: list[AppendResult] = []
        fresh: list[int] = []
        seq = first_seq
        for position, key in enumerate(keys):
            found = setdefault(key, seq)
            if found == seq:  # every remembered seq is below the next one handed out
                remember(key)
                fresh.append(position)
                results.append(AppendResult(seq, False))
                seq += 1
            else:
                results.append(AppendResult(found, True))
        self._pending += len(fresh)
        return results, fresh

    def commit(self) -> None:
        """The pending keys are stored: keep them, and evict what fell out of the window."""
        self._pending = 0
        order, head = self._order, self._head
        excess = len(order) - head - self.window
        if excess <= 0:
            return
        # Forgotten in C, one call (about 50 keys a batch on the ingest path).
        _consume(map(self._seqs.__delitem__, order[head : head + excess]))
        head += excess
        if head * 2 >= len(order):  # the evicted prefix is at least half: cut it off
            del order[:head]
            head = 0
        self._head = head

    def commit_from(self, proposed: int, first_seq: int) -> None:
        """Like :meth:`commit`, for keys claimed before their seqs were known (a shared store
        numbers a group inside its commit): the pending keys were claimed from ``proposed``
        and are stored from ``first_seq``."""
        delta = first_seq - proposed
        if delta and self._pending:
            seqs = self._seqs
            for key in self._order[-self._pending :]:
                seqs[key] += delta
        self.commit()

    def learn(self, batches: Iterable[tuple[int, Sequence[Key]]]) -> None:
        """Remember stored batches given as ``(first_seq, keys)`` (another process stored them:
        a connector's former owner), keeping the newer copy of a key known twice; then evict
        what falls out of the window.

        Raises:
            RuntimeError: keys are pending (their transaction is not over): committing them
                with what was learned could keep keys that were never stored.
        """
        if self._pending:
            raise RuntimeError("learn() with claimed keys pending; commit or roll them back")
        seqs, remember = self._seqs, self._order.append
        for first_seq, keys in batches:
            for seq, key in enumerate(keys, first_seq):
                known = seqs.get(key)
                if known is None:
                    remember(key)
                    seqs[key] = seq
                elif seq > known:
                    seqs[key] = seq
        self.commit()

    def rollback(self) -> None:
        """The pending keys were not stored: forget them (they are the newest in the order)."""
        pending, self._pending = self._pending, 0
        if pending == 0:
            return
        seqs, order = self._seqs, self._order
        for key in order[-pending:]:
            del seqs[key]
        del order[-pending:]
