"""Advertisements real connectors send (peers.md §2, §9), as fixtures for the protocol tests."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture
def discord_advertisement() -> dict[str, Any]:
    """discord-mcpl's 0.4-shaped manifest: channels as a boolean, featureSets as an array."""
    return {
        "version": "0.4",
        "pushEvents": True,
        "channels": True,
        "rollback": True,
        "featureSets": [
            {
                "name": "discord.messaging",
                "description": "Send, read, react to messages in Discord channels",
                "uses": [
                    "tools",
                    "channels.publish",
                    "pushEvents",
                    "channels.incoming",
                    "channels.register",
                    "channels.lifecycle",
                    "channels.streaming",
                    "channels.acknowledge",
                    "channels.typing",
                ],
                "rollback": True,
                "hostState": False,
                "tagOntology": {
                    "coreTags": ["chat:addressed", "chat:mention"],
                    "suggestedTreatment": [
                        {"tagsAny": ["chat:addressed"], "behavior": "immediate"}
                    ],
                    "open": True,
                },
            },
            {
                "name": "discord.channels",
                "description": "Create, delete, and manage Discord channels",
                "uses": ["tools"],
                "rollback": False,
                "hostState": False,
            },
            {
                "name": "discord.history",
                "description": "Fetch message history from Discord channels",
                "uses": ["tools"],
                "rollback": False,
                "hostState": False,
            },
            {
                "name": "discord.subscriptions",
                "description": "Manage per-channel ambient-message subscriptions",
                "uses": ["tools"],
                "rollback": False,
                "hostState": False,
            },
        ],
    }


@pytest.fixture
def slack_advertisement() -> dict[str, Any]:
    """slack-mcpl's 0.5 manifest: channels as an object of leaves, featureSets as a record."""
    return {
        "version": "0.5",
        "pushEvents": True,
        "channels": {
            "register": True,
            "lifecycle": True,
            "publish": True,
            "incoming": True,
            "streaming": True,
        },
        "featureSets": {
            "slack.messaging": {
                "description": "Send, read, react to messages in Slack conversations",
                "uses": [
                    "tools",
                    "channels.register",
                    "channels.lifecycle",
                    "channels.publish",
                    "channels.incoming",
                    "channels.streaming",
                    "pushEvents",
                ],
                "rollback": True,
                "tagOntology": {"coreTags": ["chat:mention"]},
            },
            "slack.history": {"description": "History", "uses": ["tools"]},
            "slack.subscriptions": {"description": "Subscriptions", "uses": ["tools"]},
        },
    }
