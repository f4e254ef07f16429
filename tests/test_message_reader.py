"""One message reader: the fast ``read_view`` agrees with the general accessors."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings

from agentstate_reducer.messages import general_view, read_view
from tests.strategies import any_message


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
