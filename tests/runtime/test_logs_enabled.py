"""``switchboard.runtime.logs.enabled_for``: the cheap level check a hot path asks before a call.

It must agree with structlog's configured filter and follow a reconfiguration (the ``logs``
fixture turns debug on for one test, and back off after).
"""

from __future__ import annotations

import logging
from collections.abc import MutableMapping
from typing import Any

import structlog

from switchboard.runtime.logs import configure, enabled_for


def test_the_check_agrees_with_the_configured_level_and_follows_a_reconfiguration() -> None:
    try:
        configure("INFO")
        assert not enabled_for(logging.DEBUG)
        assert enabled_for(logging.INFO)
        assert enabled_for(logging.ERROR)
        configure("DEBUG")
        assert enabled_for(logging.DEBUG)
        configure("ERROR")
        assert not enabled_for(logging.WARNING)
        assert enabled_for(logging.CRITICAL)
    finally:
        configure("WARNING")


def test_a_wrapper_that_is_not_a_level_filter_is_taken_to_let_everything_through() -> None:
    old = structlog.get_config()["wrapper_class"]
    try:
        structlog.configure(wrapper_class=structlog.stdlib.BoundLogger)
        assert enabled_for(logging.DEBUG)
    finally:
        structlog.configure(wrapper_class=old)


def test_a_debug_event_on_the_hot_path_is_still_logged_when_debug_is_captured(
    logs: list[MutableMapping[str, Any]],
) -> None:
    from switchboard.events import MessagesAccepted, log_event

    assert enabled_for(logging.DEBUG)
    log_event(MessagesAccepted("s", [{"channelId": "c", "messageId": "m"}]))
    assert [(e["event"], e["count"]) for e in logs] == [("messages_accepted", 1)]


def test_a_debug_event_on_the_hot_path_is_skipped_at_info() -> None:
    from structlog.testing import capture_logs

    from switchboard.events import MessagesAccepted, log_event

    configure("INFO")
    try:
        with capture_logs() as captured:
            log_event(MessagesAccepted("s", [{"channelId": "c", "messageId": "m"}]))
        assert captured == []
    finally:
        configure("WARNING")


def test_the_fast_read_of_the_wrapper_class_agrees_with_get_config_across_reconfigurations() -> (
    None
):
    # enabled_for reads structlog's configuration object directly where it has one that agrees
    # with get_config(); this holds the two together, so an upgrade that changes structlog's
    # internals fails here rather than filtering wrongly.
    from switchboard.runtime import logs as switchboard_logging

    read = switchboard_logging._wrapper
    assert read is not switchboard_logging._configured_wrapper  # the fast read is in use
    old = structlog.get_config()["wrapper_class"]
    try:
        for wrapper in (
            structlog.make_filtering_bound_logger(logging.ERROR),
            structlog.stdlib.BoundLogger,
            structlog.make_filtering_bound_logger(logging.DEBUG),
        ):
            structlog.configure(wrapper_class=wrapper)
            assert read() is wrapper is structlog.get_config()["wrapper_class"]
    finally:
        structlog.configure(wrapper_class=old)
