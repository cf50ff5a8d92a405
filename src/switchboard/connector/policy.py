"""The server side of the policy exchange: the grant a connector holds and its receipts.

:class:`PolicyState` (no I/O): a policy Request is a complete statement of the grant (a
malformed one fails closed); what it removes stops at once, what it adds is active only once
the receipt is on the wire; a Notification can only narrow (mcpl-protocol.md 3.3-3.6). The
active grant is the set of advertised leaves the host's patterns match, so "may I use path P?"
is one set lookup.

What it deliberately does not know: the wire, the peer, channels, or when a frame is written.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from switchboard.protocol import (
    FeatureSetsUpdateParams,
    Grant,
    derive_enabled,
    validate_path_charset,
)
from switchboard.transport import ParamProblem, RpcError, invalid_params

from .manifest import ServerManifest

__all__ = ["PolicyChange", "PolicyState"]


@dataclass(frozen=True, slots=True)
class PolicyChange:
    """One accepted policy Request whose receipt is not yet known to be on the wire.

    Attributes:
        generation: the change's number; only the newest change may be committed.
        active: the advertised leaves the new grant allows.
        enabled: the ``enabled`` allowlist, or ``None`` when absent.
        disabled: the ``disabled`` names.
    """

    generation: int
    active: frozenset[str]
    enabled: frozenset[str] | None
    disabled: frozenset[str]


def _malformed(effective: list[str], denied: list[str]) -> RpcError | None:
    """``-32602`` naming each pattern outside the charset and each path in both lists."""
    problems = [
        ParamProblem(field, f"{path!r} is outside the capability charset [A-Za-z0-9._:*-]")
        for field, paths in (("effectiveCapabilities", effective), ("deniedCapabilities", denied))
        for path in paths
        if not validate_path_charset(path)
    ]
    problems += [
        ParamProblem("deniedCapabilities", f"{path!r} is both granted and denied")
        for path in sorted(set(effective) & set(denied))
    ]
    return invalid_params(*problems) if problems else None


class PolicyState:
    """The grant one connection holds, and whether its policy exchange has completed.

    What it knows (mcpl-protocol.md 3.3-3.6, S-04 .. S-14), as a plain state object with no I/O:

    - a ``featureSets/update`` **Request** is a complete statement of the grant; an absent
      ``effectiveCapabilities`` grants nothing; a path listed in both ``effectiveCapabilities`` and
      ``deniedCapabilities`` (or a pattern outside the path charset) is a malformed policy: it is
      rejected with ``-32602`` and the connector fails closed (holds nothing);
    - the new grant is split in two steps: whatever it *removes* stops at once (a reduction is
      respected immediately), whatever it *adds* becomes active only once the receipt is on the wire
      (:meth:`PolicyState.commit`), which is also the moment the connection becomes ready;
    - the receipt: ``{accepted: true}``, plus ``mode: "degraded"`` and ``unavailableFeatures`` only
      when a declared feature set lost a capability it uses (no invented ``mode``);
    - a ``featureSets/update`` **Notification** never makes the connection ready and can only
      narrow: its ``disabled`` list is applied, every other member is ignored;
    - which declared feature sets are enabled, derived fail-closed by the protocol package.

    The active grant is kept as the set of *advertised* leaves the host's patterns match, so the
    hot-path question "may I use path P?" is one set lookup, and a grant wider than the
    advertisement never lets the connector use what it did not advertise.
    """

    __slots__ = (
        "_active",
        "_disabled",
        "_enabled",
        "_generation",
        "_manifest",
        "_ready",
        "_status",
    )

    def __init__(self, manifest: ServerManifest) -> None:
        self._manifest = manifest
        self._active: frozenset[str] = frozenset()
        self._enabled: frozenset[str] | None = None
        self._disabled: frozenset[str] = frozenset()
        self._generation = 0
        self._ready = False
        self._status: dict[str, str | None] = {}
        self._derive()

    # -- questions ---------------------------------------------------------------------------

    @property
    def ready(self) -> bool:
        """Whether a policy Request has been answered on the wire (spec §5.3)."""
        return self._ready

    @property
    def active(self) -> frozenset[str]:
        """The capability paths the connector may use right now."""
        return self._active

    def allows(self, path: str) -> bool:
        """Whether ``path`` is advertised and granted right now (one set lookup)."""
        return path in self._active

    def grant(self) -> Grant:
        """The active grant as explicit leaf paths."""
        return Grant(sorted(self._active))

    def feature_set_status(self, name: str) -> str | None:
        """``None`` when the declared set ``name`` is enabled, else why not (``unknown`` ...)."""
        return self._status.get(name, "unknown")

    # -- changes -----------------------------------------------------------------------------

    def reset(self) -> None:
        """Forget everything: a new connection starts with nothing granted."""
        self._active = frozenset()
        self._enabled = None
        self._disabled = frozenset()
        self._generation += 1
        self._ready = False
        self._derive()

    def apply_request(self, params: Any) -> tuple[PolicyChange, dict[str, Any]]:
        """Take a ``featureSets/update`` Request; narrow at once, return change and receipt.

        Returns:
            The pending change (commit it once the receipt is written) and the receipt.

        Raises:
            pydantic.ValidationError: the params are not a policy object (``-32602``).
            RpcError: ``-32602`` for a malformed policy.

        Either error leaves the connector holding nothing (fail closed, S-12).
        """
        self._generation += 1
        try:
            parsed = FeatureSetsUpdateParams.model_validate({} if params is None else params)
        except ValidationError:
            self._fail_closed()
            raise
        effective = list(parsed.effective_capabilities or ())
        denied = list(parsed.denied_capabilities or ())
        malformed = _malformed(effective, denied)
        if malformed is not None:
            self._fail_closed()
            raise malformed

        grant = Grant(effective)
        new_active = frozenset(p for p in self._manifest.advertised if grant.allows(p))
        change = PolicyChange(
            generation=self._generation,
            active=new_active,
            enabled=None if parsed.enabled is None else frozenset(parsed.enabled),
            disabled=frozenset(parsed.disabled or ()),
        )
        # A reduction takes effect now; an expansion waits for the receipt (spec §6.7).
        self._active = self._active & new_active
        self._disabled = self._disabled | change.disabled
        self._derive()
        return change, self._receipt(new_active)

    def commit(self, change: PolicyChange) -> bool:
        """Activate ``change`` now that its receipt is on the wire.

        Returns:
            ``True`` if it became the grant in force; ``False`` if a newer change (or a
            failure) superseded it meanwhile, in which case nothing changes.
        """
        if change.generation != self._generation:
            return False
        self._active = change.active
        self._enabled = change.enabled
        self._disabled = change.disabled
        self._ready = True
        self._derive()
        return True

    def apply_notification(self, params: Any) -> list[str]:
        """Take a ``featureSets/update`` Notification: only a narrowing ``disabled`` counts.

        Returns:
            The names of the members that were ignored (for a diagnostic).
        """
        if not isinstance(params, dict):
            return ["params"]
        disabled = params.get("disabled")
        if isinstance(disabled, list):
            names = frozenset(name for name in disabled if isinstance(name, str))
            self._disabled = self._disabled | names
            self._derive()
        return sorted(key for key in params if key != "disabled")

    # -- internals ---------------------------------------------------------------------------

    def _fail_closed(self) -> None:
        self._active = frozenset()
        self._derive()

    def _derive(self) -> None:
        self._status = derive_enabled(
            self._manifest.decls, self.grant(), self._enabled, self._disabled
        )

    def _receipt(self, active: frozenset[str]) -> dict[str, Any]:
        unavailable: list[dict[str, Any]] = []
        for name, spec in self._manifest.feature_sets.items():
            missing = [path for path in spec.uses if path not in active]
            if missing:
                unavailable.append(
                    {"featureSet": name, "missingCapabilities": missing, "effect": "disabled"}
                )
        receipt: dict[str, Any] = {"accepted": True}
        if unavailable:
            receipt["mode"] = "degraded"
            receipt["unavailableFeatures"] = unavailable
        return receipt
