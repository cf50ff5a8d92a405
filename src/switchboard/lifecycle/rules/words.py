"""The words of the ``tuned-out`` refusals of the lifecycle tools.

``channel_open``, ``channel_close`` and ``channel_decline`` on a tuned-out channel refuse: a
decision recorded over the tune-out would end it without its cancel, and its backlog would never
reach the agent. The refusal says that the tool does not change the tune-out and how the tune-out
ends, which depends on whether some name picks the channel alone (``tune_out`` takes only a
name, so without one it cannot cancel it). Channels are shown as the caller passes them (already
quoted).
"""

from __future__ import annotations

from switchboard.channels.names.wording import q

__all__ = ["tune_out_end_text", "tuned_out_meanwhile_text", "tuned_out_refusal_text"]


def tune_out_end_text(name_alone: str | None, tool: str | None = None) -> str:
    """How a tune-out ends, for a tool that refused because of it.

    Args:
        name_alone: The name that picks the channel alone, or None when no name does.
        tool: The refusing tool; ``channel_close`` adds that it can close the channel after.
    """
    closes = tool == "channel_close"
    if name_alone is not None:
        text = (
            f"To resume normal attention, call tune_out with channel {q(name_alone)} and "
            'mode "cancel"; cancelling hands over the diverted backlog'
        )
        return text + (", and channel_close can close the channel after that." if closes else ".")
    text = (
        "No channel name picks this channel alone, so tune_out cannot cancel its tune-out: it "
        "ends by itself when its time runs out or at the first wake past its wake budget, and "
        "its backlog is handed over then."
    )
    return text + (" Once it has ended, channel_close can close the channel." if closes else "")


def tuned_out_refusal_text(shown: str, name_alone: str | None, tool: str) -> str:
    """The refusal of ``tool`` on a tuned-out channel.

    A decision recorded over the tune-out would end it without its cancel, and its backlog
    would never reach the agent; so the tool refuses and says how the tune-out ends.

    Args:
        shown: How the channel is shown (already quoted as needed).
        name_alone: The name that picks it alone, or None.
        tool: ``channel_open``, ``channel_close`` or ``channel_decline``.
    """
    return (
        f"Channel {shown} is tuned out: its messages wait in a backlog instead of your inbox, and "
        f"{tool} does not change that. {tune_out_end_text(name_alone, tool)}"
    )


def tuned_out_meanwhile_text(shown: str, name_alone: str | None, tool: str) -> str:
    """The failure of an open or close whose channel was tuned out during the round trip."""
    return (
        f"Channel {shown} was tuned out meanwhile: its messages wait in a backlog instead of "
        f"your inbox, and {tool} does not change that. {tune_out_end_text(name_alone, tool)}"
    )
