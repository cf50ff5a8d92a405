"""The timing knobs of the server suite, in one frozen value.

What this module knows: every duration the kit waits for, with defaults that follow the
protocol reference (mcpl-protocol.md 5.0: a 5 s hook timeout, about 2 s of slack for "never
happens" assertions), the longer window before the policy (6 s, so a connector that
registers on a 5 s timer instead of waiting for the policy is seen), and how many checks may
run at once.

What it deliberately does not know: what any check does with them.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SuiteOptions"]


@dataclass(frozen=True, slots=True)
class SuiteOptions:
    """How long the kit waits, and how many checks run concurrently.

    Attributes:
        check_timeout: seconds one check may take before it fails as hung.
        start_timeout: seconds the kit waits for the answer to ``initialize``, which for a
            command includes starting the process.
        request_timeout: seconds the kit waits for the answer to one of its requests.
        expect_within: seconds the kit waits for something a server usually does (register
            its channels, answer a question) before it concludes the server does not.
        silence: seconds the kit watches for something that must not happen.
        policy_silence: seconds the kit watches a server before it sends the policy Request,
            or after one that grants nothing (S-03, S-04, S-09). The default, 6 s, is longer
            than the 5 s timers some connectors register on instead of waiting for the policy.
        quiet: seconds without any frame after which the server counts as settled.
        hook_timeout: seconds a ``context/beforeInference`` answer may take (§10.6).
        concurrency: checks run at once; ``None`` means 4 for a command, 1 for a URL (a
            network server may serve one host at a time).
    """

    check_timeout: float = 30.0
    start_timeout: float = 15.0
    request_timeout: float = 5.0
    expect_within: float = 5.0
    silence: float = 2.0
    policy_silence: float = 6.0
    quiet: float = 0.3
    hook_timeout: float = 5.0
    concurrency: int | None = None

    def __post_init__(self) -> None:
        for name in (
            "check_timeout",
            "start_timeout",
            "request_timeout",
            "expect_within",
            "silence",
            "policy_silence",
            "quiet",
            "hook_timeout",
        ):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive")
        if self.concurrency is not None and self.concurrency < 1:
            raise ValueError("concurrency must be at least 1")
