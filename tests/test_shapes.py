"""Every message shape of the seed's tables, read without importing langchain_core."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from agentstate_reducer import MessageReducer
from agentstate_reducer.messages import role_of, tool_call_id_of, tool_call_ids_of

from .strategies import Duck


@pytest.mark.parametrize(
    ("given", "role"),
    [
        ("human", "human"),
        ("user", "human"),
        ("ai", "ai"),
        ("assistant", "ai"),
        ("agent", "ai"),
        ("system", "system"),
        ("tool", "tool"),
        ("USER", "human"),
    ],
)
def test_role_alias_table(given: str, role: str) -> None:
    """Each row of the seed's role-alias table, for role-keyed and type-keyed dicts."""
    assert role_of({"role": given, "content": "x"}) == role
    assert role_of({"type": given, "content": "x"}) == role
    assert role_of(Duck(type=given, content="x")) == role


def test_framework_compatibility_table() -> None:
    """Each row of the seed's framework-compatibility table is read as the right role."""
    from langchain_core.messages import AIMessage, ChatMessage, HumanMessage, ToolMessage

    class RoleOnly:
        def __init__(self, role: str) -> None:
            self.role = role
            self.content = "x"

    # No type or role attribute: recognised by class-name inspection alone.
    lookalike = type("AIMessage", (), {"content": "x"})

    rows: list[tuple[Any, str]] = [
        ({"role": "ai", "content": "..."}, "ai"),
        ({"role": "user", "content": "..."}, "human"),
        ({"role": "agent", "content": "..."}, "ai"),
        ({"type": "ai", "content": "..."}, "ai"),
        (AIMessage(content="x"), "ai"),
        (HumanMessage(content="x"), "human"),
        (ToolMessage(content="x", tool_call_id="c"), "tool"),
        (ChatMessage(role="assistant", content="x"), "ai"),
        (Duck(type="ai", content="x"), "ai"),
        (RoleOnly("assistant"), "ai"),
        (lookalike(), "ai"),
    ]
    assert [role_of(message) for message, _ in rows] == [role for _, role in rows]


def test_serialised_and_openai_tool_calls() -> None:
    """messages_to_dict output and OpenAI tool calls expose their roles and call ids."""
    from langchain_core.messages import AIMessage, ToolMessage, messages_to_dict

    ai, tool = messages_to_dict(
        [
            AIMessage(content="", tool_calls=[{"id": "c1", "name": "f", "args": {}}]),
            ToolMessage(content="r", tool_call_id="c1"),
        ]
    )
    assert (role_of(ai), tool_call_ids_of(ai)) == ("ai", ("c1",))
    assert (role_of(tool), tool_call_id_of(tool)) == ("tool", "c1")
    openai = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c2", "type": "function", "function": {"name": "f", "arguments": "{}"}},
            {"id": "c3", "type": "function", "function": {"name": "g", "arguments": "{}"}},
        ],
    }
    assert tool_call_ids_of(openai) == ("c2", "c3")


def test_openai_parallel_tool_calls_are_pruned_with_their_call() -> None:
    """An OpenAI-format ai message with parallel calls takes both results with it."""
    history = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "q1"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                {"id": "b", "type": "function", "function": {"name": "f", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "b", "content": "rb"},
        {"role": "tool", "tool_call_id": "a", "content": "ra"},
        {"role": "assistant", "content": "done"},
        {"role": "user", "content": "q2"},
        {"role": "assistant", "content": "a2"},
    ]
    result = MessageReducer(min_messages=2, max_messages=4).reduce(existing=history)
    assert [m.get("content") for m in result.surviving] == ["s", "q2", "a2"]
    assert result.pruned == history[1:6]


def test_unknown_roles_are_kept() -> None:
    """A developer message (unknown role) is never pruned and never lost."""
    history = [{"role": "developer", "content": "d"}] + [
        {"role": "user", "content": str(n)} for n in range(6)
    ]
    result = MessageReducer(min_messages=1, max_messages=2).reduce(existing=history)
    assert result.surviving == [history[0], history[-1]]


def test_core_does_not_import_langchain() -> None:
    """Reducing every dict and duck shape leaves langchain_core unimported."""
    code = (
        "import sys\n"
        "from agentstate_reducer import MessageReducer, ReducerConfig\n"
        "r = MessageReducer(config=ReducerConfig(min_messages=1, max_messages=2,"
        " summarize_fn=lambda p: 's', inject_summary=True))\n"
        "msgs = [{'role': 'user', 'content': 'a'}, {'type': 'ai', 'content': 'b'},"
        " {'type': 'human', 'data': {'content': 'c', 'type': 'human'}}]\n"
        "r.reduce(existing=msgs)\n"
        "r2 = MessageReducer(config=ReducerConfig(max_tokens=1))\n"
        "r2.reduce(existing=msgs)\n"
        "assert 'langchain_core' not in sys.modules, 'langchain_core was imported'\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ok"


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (None, r"existing\[1\]: got None"),
        (42, r"existing\[1\]: got int 42"),
        (object(), r"existing\[1\]: got object"),
        ({"content": "no role"}, r"existing\[1\]: got a dict without a string 'role'"),
        ({"role": 3, "content": "x"}, r"existing\[1\]"),
    ],
)
def test_a_non_message_is_a_type_error_naming_its_index(bad: Any, message: str) -> None:
    """A list entry that is not a message raises TypeError naming where it is."""
    with pytest.raises(TypeError, match=message):
        MessageReducer(1, 5).reduce(existing=[{"role": "user", "content": "ok"}, bad])


def test_bad_entry_in_new_is_named_by_its_index_in_new() -> None:
    with pytest.raises(TypeError, match=r"new\[0\]"):
        MessageReducer(1, 5).reduce(existing=[{"role": "user", "content": "ok"}], new=[None])


@pytest.mark.parametrize("bad", ["text", {"role": "user", "content": "x"}, 5])
def test_arguments_must_be_lists(bad: Any) -> None:
    with pytest.raises(TypeError, match="must be a list of messages"):
        MessageReducer(1, 5).reduce(existing=bad)
