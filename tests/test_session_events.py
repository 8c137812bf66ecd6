"""Events are one typed vocabulary: each wire tag is its class name in snake_case, and the
fields that take a fixed set of values are Literals the decoder enforces."""

from __future__ import annotations

import re
from typing import get_args

import msgspec
import pytest

from xai.events import AgentEventBody, Compacted, MemoryDecided, QueryEvent, SessionEventBody


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def test_every_wire_tag_is_the_snake_case_class_name() -> None:
    """Old: five differed (``memory_candidates``, ``finalizing``, ``closed``,
    ``session_error``, ``memory_decision``)."""
    classes = {*get_args(QueryEvent), *get_args(SessionEventBody), *get_args(AgentEventBody)}
    tags = {cls.__name__: cls.__struct_config__.tag for cls in classes}
    assert tags == {name: snake(name) for name in tags}
    assert len(set(tags.values())) == len(tags)


COMPACTED = {"type": "compacted", "before_tokens": 9, "after_tokens": 3, "removed_messages": 2}
DECIDED = {"type": "memory_decided", "reason": "r"}


@pytest.mark.parametrize(
    ("kind", "good", "bad"),
    [
        (Compacted, {**COMPACTED, "method": "digest", "reason": "proactive"}, {"method": "guess"}),
        (
            Compacted,
            {**COMPACTED, "method": "summary", "reason": "context_too_long"},
            {"reason": "felt like it"},
        ),
        (MemoryDecided, {**DECIDED, "decision": "reinforce"}, {"decision": "maybe"}),
    ],
)
def test_closed_sets_of_values_are_enforced(
    kind: type, good: dict[str, object], bad: dict[str, object]
) -> None:
    """Old: plain ``str`` fields took anything."""
    msgspec.json.decode(msgspec.json.encode(good), type=kind)
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(msgspec.json.encode({**good, **bad}), type=kind)
