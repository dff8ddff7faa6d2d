"""Hooks the chat product adds to the gateway's plugin manager.

The chat plugin adds this module through ``tollway_add_hookspecs``; any plugin may then
implement ``tollway_chat_channel`` to send messages of inboxes of a channel type (the
chat plugin's own email and live_chat channels, :mod:`tollway_chat.channels`, are
registered with it, ``trylast``, so another plugin's implementation wins).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from tollway import Gateway
    from tollway_chat.channels import Channel

hookspec = pluggy.HookspecMarker("tollway")


@hookspec(firstresult=True)
def tollway_chat_channel(channel_type: str, gateway: Gateway) -> Channel | None:
    """The channel sending messages of inboxes whose ``channel_type`` is given, or
    ``None`` if this plugin does not handle that type.

    Called once per gateway and channel type; the result is kept for the gateway's
    lifetime. ``Channel.send`` raises on failure, and the message is retried.
    """
