"""The base every event payload derives from, and the `pass` field's wire name.

Below the catalog's modules (`events` and the `_events_*` groups it re-exports), so each
group can derive from `Event` without importing the others.
"""

from __future__ import annotations

from typing import ClassVar

import msgspec

# Field `pass_` is spelled `pass` on the wire (a Python keyword otherwise).
PASS = msgspec.field(name="pass")


class Event(msgspec.Struct, frozen=True, kw_only=True, tag_field="type", omit_defaults=False):
    """Base of all event payloads. `type` on the wire is the class's tag."""

    SCHEMA: ClassVar[int] = 1

    @classmethod
    def type_name(cls) -> str:
        return cls.__struct_config__.tag  # type: ignore[return-value]
