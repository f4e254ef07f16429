"""Summaries: called once per pruning reduce, injected in the list's own kind of message."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings

from agentstate_reducer import MessageReducer, ReducerConfig, SummaryError

from .strategies import Duck, conversations, rendered, shapes


def chat(n: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": "sys"}]
    for i in range(n):
        out.append({"role": "user", "content": f"q{i}"})
        out.append({"role": "assistant", "content": f"a{i}"})
    return out


def test_summarize_fn_gets_exactly_the_pruned_messages_once() -> None:
    calls: list[list[Any]] = []

    def summarize(pruned: list[Any]) -> str:
        calls.append(pruned)
        return f"{len(pruned)} gone"

    reducer = MessageReducer(
        config=ReducerConfig(min_messages=4, max_messages=6, summarize_fn=summarize)
    )
    history = chat(4)
    result = reducer.reduce(existing=history)
    assert (
        len(calls) == 1
        and calls[0] == result.pruned
        and all(a is b for a, b in zip(calls[0], history[1:5], strict=True))
    )
    assert result.summary == "4 gone"
    reducer.reduce(existing=history[:5])
    assert len(calls) == 1, "summarize_fn must not run when nothing is pruned"


def test_summary_failure_prunes_nothing_and_says_why() -> None:
    def broken(pruned: list[Any]) -> str:
        raise RuntimeError("model down")

    reducer = MessageReducer(
        config=ReducerConfig(min_messages=2, max_messages=3, summarize_fn=broken)
    )
    history = chat(3)
    with pytest.raises(SummaryError, match="model down; nothing was pruned") as info:
        reducer.reduce(existing=history)
    assert info.value.pruned and all(m in history for m in info.value.pruned)


def injecting(**kwargs: Any) -> MessageReducer:
    return MessageReducer(
        config=ReducerConfig(
            min_messages=2,
            max_messages=4,
            summarize_fn=lambda p: "S",
            inject_summary=True,
            **kwargs,
        )
    )


def test_injected_summary_sits_where_the_pruned_block_was_openai() -> None:
    result = injecting().reduce(existing=chat(3))
    roles = [(m["role"], m["content"][:10]) for m in result.surviving]
    assert roles[0] == ("system", "sys")
    assert [r for r, _ in roles[1:3]] == ["user", "assistant"]
    assert result.surviving[1]["content"].startswith("Summary of the 4 earlier messages")
    assert result.surviving[-2:] == chat(3)[-2:]
    assert "id" not in result.surviving[1], (
        "the list's dicts carry no id, so neither does the summary"
    )
    assert result.summary_messages == result.surviving[1:3]


def test_injected_summary_in_langchain_lists_is_langchain() -> None:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

    history = [SystemMessage("s")] + [
        cls(f"m{i}") for i in range(6) for cls in (HumanMessage, AIMessage)
    ]
    result = injecting().reduce(existing=history)
    block = result.summary_messages
    assert [type(m) for m in block] == [HumanMessage, AIMessage]
    assert all(m.id and m.id.startswith("summary-") for m in block)
    assert result.surviving[1:3] == block


def test_injected_summary_keeps_langchain_dict_and_serialised_shapes() -> None:
    from langchain_core.messages import (
        AIMessage,
        HumanMessage,
        messages_from_dict,
        messages_to_dict,
    )

    typed = [
        {"type": "human" if i % 2 == 0 else "ai", "content": str(i), "id": f"i{i}"}
        for i in range(7)
    ]
    block = injecting().reduce(existing=typed).summary_messages
    assert [m["type"] for m in block] == ["human", "ai"] and all("id" in m for m in block)

    serial = messages_to_dict([HumanMessage("a"), AIMessage("b")] * 4)
    block = injecting().reduce(existing=serial).summary_messages
    loaded = messages_from_dict(block)
    assert [type(m) for m in loaded] == [HumanMessage, AIMessage]


def test_duck_lists_need_a_factory() -> None:
    ducks = [Duck(type="human" if i % 2 else "ai", content=str(i)) for i in range(7)]
    with pytest.raises(TypeError, match="pass summary_message_factory"):
        injecting().reduce(existing=ducks)
    made = injecting(summary_message_factory=lambda text, n: [Duck(type="system", content=text)])
    result = made.reduce(existing=ducks)
    assert result.summary_messages[0].content == "S"


@settings(max_examples=200, deadline=None)
@given(conversations(), shapes)
def test_injection_only_adds_the_summary_block(records: Any, shape: str) -> None:
    """Surviving with injection, minus the summary block, is surviving without injection."""
    messages = rendered(records, shape)
    if shape == "duck":
        return
    plain = MessageReducer(config=ReducerConfig(min_messages=2, max_messages=5)).reduce(
        existing=messages
    )
    injected = MessageReducer(
        config=ReducerConfig(
            min_messages=2, max_messages=5, summarize_fn=lambda p: "S", inject_summary=True
        )
    ).reduce(existing=messages)
    block = {id(m) for m in injected.summary_messages}
    assert [m for m in injected.surviving if id(m) not in block] == plain.surviving
    assert bool(injected.summary_messages) == bool(plain.pruned)


def test_the_same_pruned_messages_are_summarised_once() -> None:
    """LangGraph replays writes through channel reducers: the same pruned ids reuse the
    summary instead of calling summarize_fn (an LLM) again."""
    calls: list[int] = []

    def summarize(pruned: list[Any]) -> str:
        calls.append(len(pruned))
        return f"summary {len(calls)}"

    reducer = MessageReducer(
        config=ReducerConfig(min_messages=2, max_messages=4, summarize_fn=summarize)
    )
    history = [dict(m, id=f"m{i}") for i, m in enumerate(chat(3))]
    first = reducer.reduce(existing=history)
    again = reducer.reduce(existing=history)
    assert calls == [4] and first.summary == again.summary == "summary 1"
    other = reducer.reduce(existing=history[:-1])
    assert calls == [4, 3] and other.summary == "summary 2"
