"""One exception policy: the same misuse raises the same error from every entry point.

Wrong types are ``TypeError``, wrong values ``ValueError``, both naming the argument and
showing the value; LangGraph features we do not support are ``NotImplementedError``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from agentstate_reducer import Background, MessageReducer, ReducerConfig
from agentstate_reducer.langgraph import (
    CheckpointReduction,
    ReducingCheckpointSaver,
    compact_thread,
    create_reduction_node,
    create_reduction_step_node,
)
from agentstate_reducer.langgraph.agents import make_pre_model_hook
from agentstate_reducer.policy import ClearToolOutputs, TruncateLargest

REDUCER = MessageReducer(min_messages=2, max_messages=4)
CONFIG = {"configurable": {"thread_id": "t"}}

#: Every entry point that takes a ``messages_key``, as ``build(key)``.
MESSAGES_KEY_ENTRY_POINTS: dict[str, Callable[[Any], object]] = {
    "create_reduction_node": lambda key: create_reduction_node(REDUCER, messages_key=key),
    "create_reduction_step_node": lambda key: create_reduction_step_node(
        REDUCER, "drop_oldest", messages_key=key
    ),
    "make_pre_model_hook": lambda key: make_pre_model_hook(REDUCER, messages_key=key),
    "ReducingCheckpointSaver": lambda key: ReducingCheckpointSaver(
        InMemorySaver(), REDUCER, messages_key=key
    ),
    "CheckpointReduction": lambda key: CheckpointReduction(REDUCER, key),
    "compact_thread": lambda key: compact_thread(
        InMemorySaver(), CONFIG, REDUCER, messages_key=key
    ),
    "CosmosDBSaver": lambda key: _cosmos(key),
}


def _cosmos(key: Any) -> object:
    """A Cosmos DB saver built (not connected: construction checks its arguments)."""
    from agentstate_cosmosdb import CosmosDBSaver

    return CosmosDBSaver(
        "db", "c", endpoint="https://127.0.0.1:1/", credential="k" * 12, messages_key=key
    )


@pytest.mark.parametrize("entry", sorted(MESSAGES_KEY_ENTRY_POINTS))
def test_a_messages_key_of_the_wrong_type_is_a_type_error_everywhere(entry: str) -> None:
    """``messages_key=5`` is a TypeError naming ``messages_key`` and showing 5."""
    with pytest.raises(TypeError, match=r"messages_key must be a string, got 5"):
        MESSAGES_KEY_ENTRY_POINTS[entry](5)


@pytest.mark.parametrize("entry", sorted(MESSAGES_KEY_ENTRY_POINTS))
def test_an_empty_messages_key_is_a_value_error_everywhere(entry: str) -> None:
    """``messages_key=""`` is a ValueError naming ``messages_key``."""
    with pytest.raises(ValueError, match=r"messages_key must be a non-empty string, got ''"):
        MESSAGES_KEY_ENTRY_POINTS[entry]("")


#: Every integer argument of the core, as ``build(value)`` and the name it is reported as.
INT_ARGUMENTS: dict[str, tuple[str, Callable[[Any], object]]] = {
    "config": ("keep_groups", lambda value: ReducerConfig(keep_groups=value)),
    "policy": (
        "ClearToolOutputs.keep_last",
        lambda value: ClearToolOutputs(keep_last=value),
    ),
    "hooks": ("Background max_pending", lambda value: Background(print, max_pending=value)),
}


@pytest.mark.parametrize("where", sorted(INT_ARGUMENTS))
def test_a_non_int_is_a_type_error_and_a_negative_int_a_value_error(where: str) -> None:
    """Config, policy steps and hooks check integers alike: a string is a TypeError, a
    number below the minimum a ValueError, both naming the argument."""
    name, build = INT_ARGUMENTS[where]
    with pytest.raises(TypeError, match=rf"{name} must be an int, got '3'"):
        build("3")
    with pytest.raises(ValueError, match=rf"{name} must be at least \d+, got -1"):
        build(-1)


def test_a_step_text_of_the_wrong_type_is_a_type_error() -> None:
    """A placeholder or marker that is not a string is a TypeError naming it."""
    with pytest.raises(TypeError, match=r"ClearToolOutputs\.placeholder"):
        ClearToolOutputs(placeholder=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"TruncateLargest\.marker"):
        TruncateLargest(marker=None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"start_on_human": "no"}, TypeError, r"start_on_human must be True or False, got 'no'"),
        ({"policy": []}, ValueError, r"policy is empty"),
        (
            {"summary_message_factory": lambda text, n: [{"role": "user", "content": text}]},
            ValueError,
            r"summary_message_factory .* inject_summary is False",
        ),
    ],
)
def test_silent_configs_are_refused(kwargs: dict[str, Any], error: type, match: str) -> None:
    """Settings that would silently do nothing (an empty policy never prunes, a factory
    without injection is never used, a non-bool flag reads as on) are refused."""
    with pytest.raises(error, match=match):
        ReducerConfig(**kwargs)


def test_a_factory_returning_no_messages_is_refused_when_it_runs() -> None:
    """An empty summary block would lose the folded summary: a TypeError, nothing pruned."""
    reducer = MessageReducer(
        config=ReducerConfig(
            min_messages=1,
            max_messages=2,
            summarize_fn=lambda messages: "s",
            inject_summary=True,
            summary_message_factory=lambda text, n: [],
        )
    )
    with pytest.raises(TypeError, match="non-empty list of messages"):
        reducer.reduce([{"role": "user", "content": str(n)} for n in range(4)])


#: Every LangGraph entry point that takes the reducer, as ``build(reducer)``.
REDUCER_ENTRY_POINTS: dict[str, Callable[[Any], object]] = {
    "create_reduction_node": lambda r: create_reduction_node(r),
    "create_reduction_step_node": lambda r: create_reduction_step_node(r, "drop_oldest"),
    "make_pre_model_hook": lambda r: make_pre_model_hook(r),
    "ReducerMiddleware": lambda r: _middleware(r),
    "ReducingCheckpointSaver": lambda r: ReducingCheckpointSaver(InMemorySaver(), r),
    "CheckpointReduction": lambda r: CheckpointReduction(r),
}


def _middleware(reducer: Any) -> object:
    from agentstate_reducer.langgraph.agents import ReducerMiddleware

    return ReducerMiddleware(reducer)


@pytest.mark.parametrize("entry", sorted(REDUCER_ENTRY_POINTS))
def test_something_other_than_a_reducer_is_a_type_error(entry: str) -> None:
    """None, or a ReducerConfig passed where a MessageReducer goes, is a TypeError naming
    what is expected, never an AttributeError from inside."""
    with pytest.raises(TypeError, match="MessageReducer"):
        REDUCER_ENTRY_POINTS[entry](None)
    with pytest.raises(TypeError, match="MessageReducer"):
        REDUCER_ENTRY_POINTS[entry](ReducerConfig())
