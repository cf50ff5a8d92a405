"""A connector whose registrations the cluster's mirror tests steer, as a real subprocess.

Usage: ``channels_connector.py COUNT``. On ready it registers ``COUNT`` rooms ``c0`` ...
plus ``control``; a publish (to any of them) of ``add <id>`` adds a room by ``channels/changed``,
``remove <id>`` removes one, ``relabel <id>`` gives one a new label, ``addmany <n>`` adds ``n``
rooms ``m0`` ... in one change, and the publish is answered once the host took the change.
"""

import itertools
import sys

from switchboard.connector import Connector
from switchboard.protocol import PublishParams


def room(channel_id: str) -> dict[str, str]:
    return {
        "id": channel_id,
        "type": "room",
        "label": f"#{channel_id}",
        "direction": "bidirectional",
    }


class Rooms(Connector):
    ids = itertools.count(1)

    def __init__(self, count: int) -> None:
        super().__init__("rooms")
        self.count = count

    async def on_ready(self) -> None:
        await self.register([room("control"), *(room(f"c{i}") for i in range(self.count))])

    async def on_publish(self, params: PublishParams) -> str:
        text = " ".join(b.text for b in params.content if b.type == "text")
        verb, _, channel_id = text.partition(" ")
        if verb == "add":
            await self.changed(added=[room(channel_id)])
        elif verb == "addmany":
            await self.changed(added=[room(f"m{i}") for i in range(int(channel_id))])
        elif verb == "relabel":
            await self.changed(updated=[{**room(channel_id), "label": f"#{channel_id}-new"}])
        elif verb == "remove":
            await self.changed(removed=[channel_id])
        return f"done-{next(self.ids)}"


if __name__ == "__main__":
    Rooms(int(sys.argv[1])).main()
