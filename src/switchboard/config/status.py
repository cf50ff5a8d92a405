"""The ``[status]`` section: the operator's status surface."""

from __future__ import annotations

from pydantic import (
    Field,
    SecretStr,
    model_validator,
)

from switchboard.config.common import Strict, is_loopback, token_problem

__all__ = ["StatusConfig"]


class StatusConfig(Strict):
    """``[status]``: the operator's status surface (docs/operations.md, "Status, health and
    metrics"). It is always served on the agents' HTTP listener when there is one; ``port``
    gives it a listener of its own (for a stdio agent, say)."""

    host: str = Field(default="127.0.0.1", description="where the own status listener binds")
    port: int | None = Field(
        default=None,
        ge=0,
        le=65535,
        description="the own status listener's port (0: any free port); None: no own listener",
    )
    token: SecretStr | None = Field(
        default=None,
        description="the operator's bearer token for /status, /metrics and the page; "
        "usually ${SOME_VARIABLE}",
    )
    token_file: str | None = Field(
        default=None, min_length=1, description="a file holding the operator's bearer token"
    )
    open_beside_agents: bool = Field(
        default=False,
        description="leave the status surface open without a token on the agents' loopback "
        "HTTP listener even when that listener needs agent tokens (default: closed there)",
    )

    @model_validator(mode="after")
    def _safe_status(self) -> StatusConfig:
        if self.token is not None and self.token_file is not None:
            raise ValueError("[status]: give at most one of `token` or `token_file`")
        if self.token is not None:
            problem = token_problem(self.token.get_secret_value())
            if problem:
                raise ValueError(f"[status] `token` is not a usable bearer token: {problem}")
        tokenless = self.token is None and self.token_file is None
        if self.port is not None and not is_loopback(self.host) and tokenless:
            raise ValueError(
                f"[status] `host` = {self.host!r} is not a loopback address, and the status "
                "listener would have no token: anyone who can reach it could read every "
                "connector's state and recent messages. Set "
                '`token = "${SWITCHBOARD_STATUS_TOKEN}"` (or `token_file`) in [status], or '
                "bind `host` to 127.0.0.1"
            )
        return self
