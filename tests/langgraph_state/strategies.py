"""Hypothesis strategies for LangGraph state updates.

An update is drawn as a *recipe* (plain data) and built into fresh objects each time it is
applied, so two implementations compared side by side never share (and never mutate) the
same message objects. A recipe may refer to the current state by position ("remove the
message at index 3", "replace it"): each side resolves that against its own state, so
ids that ``add_messages`` generated can be targeted even though they differ per side.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langgraph.graph.message import REMOVE_ALL_MESSAGES

POOL_IDS = ("m0", "m1", "m2", "m3", "m4")
"""Explicit ids recipes reuse, so updates collide with earlier messages on purpose."""

CALL_IDS = ("c0", "c1", "c2")

Recipe = tuple[Any, ...]

_ids = st.none() | st.sampled_from(POOL_IDS)
_text = st.sampled_from(["", "hi", "ok", "long " * 5, "ünï"])

_human = st.tuples(
    st.just("human"), _text, _ids, st.sampled_from(["obj", "role", "type", "tuple", "str"])
)
_ai = st.tuples(
    st.just("ai"),
    _text,
    _ids,
    st.sampled_from(["obj", "role", "chunk"]),
    st.lists(st.sampled_from(CALL_IDS), max_size=2, unique=True),
)
_tool = st.tuples(
    st.just("tool"), _text, _ids, st.sampled_from(["obj", "role"]), st.sampled_from(CALL_IDS)
)
_system = st.tuples(st.just("system"), _text, _ids, st.sampled_from(["obj", "tuple"]))
_remove = st.tuples(
    st.just("remove"),
    st.one_of(
        st.tuples(st.just("id"), st.sampled_from([*POOL_IDS, "never-seen"])),
        st.tuples(st.just("index"), st.integers(0, 30)),
        st.tuples(st.just("all")),
    ),
)
_replace = st.tuples(st.just("replace"), st.integers(0, 30), _text)

recipes: st.SearchStrategy[Recipe] = st.one_of(
    _human, _ai, _tool, _system, _remove.filter(lambda r: r[1][0] != "all"), _replace
)
"""One update item, anything ``add_messages`` accepts (remove-all drawn separately, rarely)."""

updates: st.SearchStrategy[Any] = st.one_of(
    st.lists(recipes | _remove, max_size=4),
    recipes,
)
"""One update: a list of items, or a single item (LangGraph passes both)."""

update_sequences = st.lists(updates, min_size=1, max_size=8)


def build(recipe: Recipe, state: list[Any]) -> Any:
    """A fresh message-like object for ``recipe``, resolving positions against ``state``."""
    kind = recipe[0]
    if kind == "human":
        _, text, msg_id, form = recipe
        if form == "obj":
            return HumanMessage(content=text, id=msg_id)
        if form == "role":
            return _with_id({"role": "user", "content": text}, msg_id)
        if form == "type":
            return _with_id({"type": "human", "content": text}, msg_id)
        if form == "tuple":
            return ("user", text)
        return text
    if kind == "ai":
        _, text, msg_id, form, call_ids = recipe
        calls = [{"name": "add", "args": {"a": 1}, "id": c, "type": "tool_call"} for c in call_ids]
        if form == "obj":
            return AIMessage(content=text, id=msg_id, tool_calls=calls)
        if form == "chunk":
            chunks = [
                {"name": "add", "args": '{"a": 1}', "id": c, "index": i, "type": "tool_call_chunk"}
                for i, c in enumerate(call_ids)
            ]
            return AIMessageChunk(content=text, id=msg_id, tool_call_chunks=chunks)
        return _with_id(
            {
                "role": "assistant",
                "content": text,
                "tool_calls": [
                    {"id": c, "type": "function", "function": {"name": "add", "arguments": "{}"}}
                    for c in call_ids
                ],
            },
            msg_id,
        )
    if kind == "tool":
        _, text, msg_id, form, call_id = recipe
        if form == "obj":
            return ToolMessage(content=text, id=msg_id, tool_call_id=call_id)
        return _with_id({"role": "tool", "content": text, "tool_call_id": call_id}, msg_id)
    if kind == "system":
        _, text, msg_id, form = recipe
        if form == "obj":
            return SystemMessage(content=text, id=msg_id)
        return ("system", text)
    if kind == "remove":
        target = recipe[1]
        if target[0] == "all":
            return RemoveMessage(id=REMOVE_ALL_MESSAGES)
        if target[0] == "id":
            return RemoveMessage(id=target[1])
        return RemoveMessage(id=_id_at(state, target[1]))
    if kind == "replace":
        _, index, text = recipe
        return HumanMessage(content=f"replaced {text}", id=_id_at(state, index))
    raise AssertionError(f"unknown recipe {recipe!r}")


def build_update(update: Any, state: list[Any]) -> Any:
    """Build a whole update (a list of recipes, or one recipe) against ``state``."""
    if isinstance(update, list):
        return [build(recipe, state) for recipe in update]
    return build(update, state)


def _id_at(state: list[Any], index: int) -> str:
    if not state:
        return "never-seen"
    found = getattr(state[index % len(state)], "id", None)
    return found if isinstance(found, str) else "never-seen"


def _with_id(message: dict[str, Any], msg_id: str | None) -> dict[str, Any]:
    if msg_id is not None:
        message["id"] = msg_id
    return message
