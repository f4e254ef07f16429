"""One message reader: the fast ``read_view`` agrees with the general accessors."""

from __future__ import annotations

import contextlib
from typing import Any

from hypothesis import given, settings

from agentstate_reducer.messages import general_view, read_view
from tests.strategies import any_message, odd_format_message


def _view_or_error(read: Any, message: Any) -> Any:
    try:
        return read(message)
    except TypeError:
        return TypeError


@settings(max_examples=1000)
@given(any_message())
def test_the_fast_reader_gives_the_view_the_general_accessors_give(message: Any) -> None:
    """For every shape (usual and odd: non-dict mappings, ``role: None``, ``str``
    subclasses, non-string ids, tool calls as tuples or objects, legacy function calls and
    function results with odd names), ``read_view`` returns the same view as
    ``general_view`` (built from role_of, id_of, tool_call_ids_of, function_call_name_of,
    tool_call_id_of and function_name_of), or both refuse the value as not a message."""
    assert _view_or_error(read_view, message) == _view_or_error(general_view, message)


def test_a_serialised_message_with_a_mapping_payload_is_linked_like_a_dict_one() -> None:
    """The case the two readers used to disagree on: LangChain's serialised form whose
    ``data`` is a read-only mapping reads as the tool result it is."""
    from types import MappingProxyType

    data = {"content": "4", "tool_call_id": "call-1", "id": "t1"}
    as_dict = {"type": "tool", "data": data}
    as_mapping = {"type": "tool", "data": MappingProxyType(data)}
    assert read_view(as_mapping) == read_view(as_dict) == general_view(as_mapping)
    assert read_view(as_mapping).result_for == "call-1"


@settings(max_examples=1500, deadline=None)
@given(odd_format_message())
def test_a_message_of_any_format_reads_or_is_refused_with_a_type_error(message: Any) -> None:
    """Dicts shaped like Anthropic, Bedrock, Responses or Gemini messages holding any
    blocks, parts and values: ``read_view`` and the format's own reader agree (or both
    refuse), and every accessor either reads the message or raises TypeError, nothing else
    (no KeyError, AttributeError, StopIteration from a malformed block)."""
    from agentstate_reducer.messages import (
        call_parts_of,
        content_of,
        fingerprint,
        is_summary,
        parts_of,
        role_of,
        slots_of,
        tool_call_ids_of,
        tool_result_ids_of,
        with_text,
    )

    assert _view_or_error(read_view, message) == _view_or_error(general_view, message)
    readers = (parts_of, slots_of, fingerprint, is_summary, role_of, content_of)
    readers += (tool_call_ids_of, tool_result_ids_of, call_parts_of)
    for read in readers:
        with contextlib.suppress(TypeError):
            read(message)
    with contextlib.suppress(TypeError):
        with_text(message, "shorter")


@settings(max_examples=1000, deadline=None)
@given(any_message())
def test_the_counting_read_gives_the_parts_the_full_read_gives(message: Any) -> None:
    """For every Chat-family shape (usual and odd), ``parts_of`` (the counting path, which
    reads text content and calls directly) gives the parts the Chat format's full read
    (``parse``) gives, or both refuse the value as not a message."""
    from agentstate_reducer.messages import parts_of, reader_of

    def full(msg: Any) -> Any:
        return reader_of(msg).parse(msg).parts()

    assert _view_or_error(parts_of, message) == _view_or_error(full, message)
