"""What a check concludes, and the records a run keeps: verdicts, frames, results.

A check passes, fails, is *not exercised* (nothing the peer offered would show it, never a
pass) or *not applicable*; it says so by returning a :class:`Verdict` or raising a
:class:`CheckStop` from deep in a helper. :class:`FrameRecord` and :class:`CheckResult` are what
a report is made of.

What it deliberately does not know: what any check tests, the wire, or how results are
printed.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Literal, NoReturn

from .errors import KitError

__all__ = [
    "CheckFailed",
    "CheckResult",
    "CheckStop",
    "Direction",
    "FrameRecord",
    "Level",
    "NotApplicable",
    "NotExercised",
    "Outcome",
    "Verdict",
    "fail",
    "failed",
    "not_applicable",
    "not_exercised",
    "passed",
]

Level = Literal["MUST", "SHOULD", "MAY"]
Direction = Literal["sent", "received"]


class Outcome(enum.Enum):
    """How a check ended. The values are the names used in JSON reports.

    What it knows:

    - the four outcomes of a check (:class:`Outcome`): it passed, it failed, the server offered
      nothing that would exercise it (*not exercised*, never counted as a pass), or it does not
      apply to this server (*not applicable*, for example a hook check against a server that
      advertises no hooks);
    - how a check function says so: it returns a :class:`Verdict` (built with :func:`passed`,
      :func:`failed`, :func:`not_exercised` or :func:`not_applicable`) or raises one of the
      :class:`CheckStop` exceptions from deep inside a helper;
    - the value types a report is made of: :class:`FrameRecord` (one frame on the wire, in either
      direction, on one of the check's connections) and :class:`CheckResult`.

    Hierarchy of the exceptions a check may raise::

        CheckStop(message)          ends the check with an outcome
        ├── CheckFailed             the server broke the requirement (outcome fail)
        ├── NotExercised            nothing the server offers would show it (not exercised)
        └── NotApplicable           the requirement does not apply (not applicable)
    """

    PASS = "pass"
    FAIL = "fail"
    NOT_EXERCISED = "not_exercised"
    NOT_APPLICABLE = "not_applicable"

    @property
    def label(self) -> str:
        """A short upper-case label for terminal output."""
        return _LABELS[self]


_LABELS = {
    Outcome.PASS: "PASS",
    Outcome.FAIL: "FAIL",
    Outcome.NOT_EXERCISED: "N/EX",
    Outcome.NOT_APPLICABLE: "N/A",
}


@dataclass(frozen=True, slots=True)
class Verdict:
    """A check's conclusion: an outcome and a sentence saying why."""

    outcome: Outcome
    message: str = ""


def passed(message: str = "") -> Verdict:
    """The server met the requirement; ``message`` says what was seen."""
    return Verdict(Outcome.PASS, message)


def failed(message: str) -> Verdict:
    """The server broke the requirement; ``message`` says how."""
    return Verdict(Outcome.FAIL, message)


def not_exercised(message: str) -> Verdict:
    """Nothing the server offered would show the behaviour; ``message`` says what was missing."""
    return Verdict(Outcome.NOT_EXERCISED, message)


def not_applicable(message: str) -> Verdict:
    """The requirement does not apply to this server; ``message`` says why."""
    return Verdict(Outcome.NOT_APPLICABLE, message)


class CheckStop(KitError):
    """Ends a check from inside a helper, with the outcome of its subclass."""

    outcome = Outcome.FAIL

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def verdict(self) -> Verdict:
        """The verdict this exception stands for."""
        return Verdict(self.outcome, self.message)


class CheckFailed(CheckStop):
    """The server broke the requirement."""

    outcome = Outcome.FAIL


class NotExercised(CheckStop):
    """Nothing the server offered would show the behaviour."""

    outcome = Outcome.NOT_EXERCISED


class NotApplicable(CheckStop):
    """The requirement does not apply to this server."""

    outcome = Outcome.NOT_APPLICABLE


def fail(message: str) -> NoReturn:
    """Raise :class:`CheckFailed` with ``message``."""
    raise CheckFailed(message)


@dataclass(frozen=True, slots=True)
class FrameRecord:
    """One frame on the wire, as the kit sent or received it.

    Attributes:
        connection: which of the check's connections carried it (1, 2, ...; 0 is the
            runner's preflight handshake).
        direction: ``"sent"`` by the kit or ``"received"`` from the server.
        at: seconds since the check started.
        text: the frame as text (undecodable bytes replaced), without framing.
    """

    connection: int
    direction: Direction
    at: float
    text: str


@dataclass(frozen=True, slots=True)
class CheckResult:
    """The result of one check against one server.

    Attributes:
        check_id: the check's stable id (``server.channels.close``).
        title: a one-line description of what it checks.
        requirements: the requirement IDs it covers (``S-32``).
        level: the strongest level among those requirements.
        section: the report section it belongs to.
        outcome: how it ended.
        message: why.
        duration: seconds the check took.
        frames: every frame sent and received on the check's connections, in order.
        stderr: for a failed check against a spawned target, the last lines it wrote to
            stderr (each prefixed with its connection); empty otherwise.
    """

    check_id: str
    title: str
    requirements: tuple[str, ...]
    level: Level
    section: str
    outcome: Outcome
    message: str
    duration: float
    frames: tuple[FrameRecord, ...]
    stderr: tuple[str, ...] = ()

    @property
    def must_failure(self) -> bool:
        """Whether this is a failed MUST check (which makes the run fail)."""
        return self.outcome is Outcome.FAIL and self.level == "MUST"
