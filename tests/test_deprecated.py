"""0.5-era code keeps working on 0.6, with a DeprecationWarning naming the replacement.

Every public name the published 0.5 wheel exported and 0.6 dropped is imported here the
way 0.5 code imports it, and used; each test asserts the warning (pytest turns any other
DeprecationWarning from our modules into an error, see ``pyproject.toml``) and that the
old name does what it did.
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

import pytest

from agentstate_reducer import MessageReducer, ReducerConfig, ReducerResult, _deprecated
from agentstate_reducer.messages import is_summary

_RENAMED = r"deprecated since agentstate-reducer 0\.6 and goes in 0\.7; use "


def test_models_module_names_resolve_to_the_0_6_classes() -> None:
    """``from agentstate_reducer.models import ...`` gives the same objects as the package,
    one warning per name naming ``agentstate_reducer.<name>``."""
    import agentstate_reducer

    for name in ("ReducerConfig", "ReducerResult", "RememberFn", "DEFAULT_NAMESPACE_KEY"):
        with pytest.warns(DeprecationWarning, match=_RENAMED + rf"agentstate_reducer\.{name}"):
            old = getattr(importlib.import_module("agentstate_reducer.models"), name)
        assert old is getattr(agentstate_reducer, name)


def test_models_config_builds_a_working_reducer() -> None:
    """0.5 code that builds its config from ``models`` prunes as before."""
    with pytest.warns(DeprecationWarning, match="agentstate_reducer.models.ReducerConfig"):
        from agentstate_reducer.models import ReducerConfig as OldConfig
    reducer = MessageReducer(config=OldConfig(min_messages=2, max_messages=3))
    history = [{"role": "user", "content": f"q{n}"} for n in range(4)]
    result = reducer.reduce(existing=history)
    assert isinstance(result, ReducerResult)
    assert [m["content"] for m in result.surviving] == ["q0", "q2", "q3"]


def test_default_summary_messages_factory_injects_the_0_5_block() -> None:
    """The 0.5 factory still builds ``[human summary, ai "OK"]`` and works as a config's
    ``summary_message_factory``."""
    with pytest.warns(DeprecationWarning, match="summary_message_factory unset"):
        from agentstate_reducer import default_summary_messages_factory
    reducer = MessageReducer(
        config=ReducerConfig(
            min_messages=2,
            max_messages=4,
            summarize_fn=lambda pruned: f"{len(pruned)} gone",
            inject_summary=True,
            summary_message_factory=default_summary_messages_factory,
        )
    )
    history = [{"role": "system", "content": "S"}]
    history += [{"role": "user", "content": f"q{n}"} for n in range(5)]
    result = reducer.reduce(existing=history)
    assert [(m["role"], m["content"]) for m in result.summary_messages] == [
        ("human", f"Here is the summary of previous {len(result.pruned)} messages: "
         f"{len(result.pruned)} gone"),
        ("ai", "OK"),
    ]  # fmt: skip
    # 0.6 marks the block as a summary, so the next reduce folds it instead of pruning it.
    assert all(is_summary(m) for m in result.summary_messages)
    assert result.surviving[1:3] == result.summary_messages


def test_adapters_readers_still_read_each_shape() -> None:
    """``agentstate_reducer.adapters.get_*`` read roles, ids, content and tool calls of the
    shapes 0.5 read, through the 0.6 readers they name."""
    adapters = importlib.import_module("agentstate_reducer.adapters")
    readers: dict[str, Any] = {}
    for old, new in (
        ("get_role", "role_of"),
        ("get_id", "id_of"),
        ("get_content", "content_of"),
        ("get_tool_calls", "tool_calls_of"),
        ("get_tool_call_id", "tool_call_id_of"),
    ):
        with pytest.warns(DeprecationWarning, match=rf"agentstate_reducer\.messages\.{new}"):
            readers[old] = getattr(adapters, old)
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    ai = {"role": "assistant", "id": "m1", "content": "", "tool_calls": [call]}
    tool = {"role": "tool", "tool_call_id": "c1", "content": "42"}
    assert readers["get_role"](ai) == "ai"
    assert readers["get_role"]({"role": "user", "content": "hi"}) == "human"
    assert readers["get_id"](ai) == "m1"
    assert readers["get_content"](tool) == "42"
    assert readers["get_tool_calls"](ai) == [call]
    assert readers["get_tool_call_id"](tool) == "c1"


def test_unknown_names_are_still_attribute_errors() -> None:
    """Only 0.5's names resolve: a typo is an AttributeError, with no warning."""
    import agentstate_reducer

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(AttributeError, match="no attribute 'ReducingSaverr'"):
            _ = agentstate_reducer.ReducingSaverr  # type: ignore[attr-defined]
        with pytest.raises(ImportError):
            from agentstate_reducer.models import MessageReducer  # type: ignore[attr-defined]  # noqa: F401


def test_every_name_the_0_5_wheel_exported_still_resolves() -> None:
    """The inventory of 0.5's public names (read from its wheel, see the CHANGELOG): each
    one resolves from the module 0.5 published it in, as itself or through an alias."""
    exported = {
        "agentstate_reducer": [
            "MessageReducer", "ReducerConfig", "ReducerResult", "RememberFn", "Background",
            "DEFAULT_NAMESPACE_KEY", "resolve_token_counter", "default_summary_messages_factory",
        ],
        "agentstate_reducer.models": [
            "DEFAULT_NAMESPACE_KEY", "ReducerConfig", "ReducerResult", "RememberFn",
        ],
        "agentstate_reducer.adapters": [
            "get_role", "get_id", "get_content", "get_tool_calls", "get_tool_call_id",
        ],
        "agentstate_reducer.hooks": ["Background"],
        "agentstate_reducer.reducer": ["MessageReducer"],
        "agentstate_reducer.tokens": ["resolve_token_counter"],
        "agentstate_reducer.summary": ["default_summary_messages_factory"],
        "agentstate_reducer.langgraph": ["ReducingSaver", "memory_namespace", "apply_reducer"],
    }  # fmt: skip
    for module_name, names in exported.items():
        module = importlib.import_module(module_name)
        for name in names:
            if name in _deprecated.aliases(module_name):
                with pytest.warns(DeprecationWarning):
                    value = _deprecated.resolve(module_name, name)
            else:
                value = getattr(module, name)
            assert value is not None, f"{module_name}.{name}"


# -- the LangGraph names: agentstate_reducer.langgraph.ReducingSaver and apply_reducer ------


def _langgraph_alias(name: str) -> Any:
    with pytest.warns(DeprecationWarning, match=_RENAMED + "agentstate_reducer.langgraph"):
        return _deprecated.resolve("agentstate_reducer.langgraph", name)


def test_reducing_saver_is_the_0_6_wrapper_and_bounds_a_graph() -> None:
    """0.5's ``ReducingSaver(inner, reducer)`` builds the 0.6 wrapper, which bounds what a
    real graph stores."""
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import START, MessagesState, StateGraph

    from agentstate_reducer.langgraph import ReducingCheckpointSaver

    reducing_saver = _langgraph_alias("ReducingSaver")
    assert reducing_saver is ReducingCheckpointSaver
    saver = reducing_saver(InMemorySaver(), MessageReducer(min_messages=2, max_messages=4))
    builder = StateGraph(MessagesState)
    builder.add_node("echo", lambda state: {"messages": [("ai", "ok")]})
    builder.add_edge(START, "echo")
    graph = builder.compile(checkpointer=saver)
    config: Any = {"configurable": {"thread_id": "t"}}
    for n in range(5):
        graph.invoke({"messages": [("user", f"q{n}")]}, config)
    stored = saver.get_tuple(config)
    assert stored is not None
    assert len(stored.checkpoint["channel_values"]["messages"]) <= 4


def test_apply_reducer_reduces_a_checkpoint_copy_and_hands_over_the_pruned() -> None:
    """0.5's ``apply_reducer`` returns a reduced shallow copy, leaves the input alone, and
    gives the pruned messages to ``on_prune`` with the run's namespace."""
    apply_reducer = _langgraph_alias("apply_reducer")
    handed: list[tuple[Any, list[Any]]] = []
    reducer = MessageReducer(
        config=ReducerConfig(
            min_messages=2,
            max_messages=3,
            on_prune=[lambda pruned, ns: handed.append((ns, list(pruned)))],
        )
    )
    messages = [{"role": "user", "content": f"q{n}", "id": f"m{n}"} for n in range(5)]
    checkpoint = {"id": "c", "channel_values": {"messages": messages, "other": 1}}
    config = {"configurable": {"thread_id": "t1"}}
    reduced = apply_reducer(reducer, checkpoint, config)
    assert reduced is not checkpoint
    assert checkpoint["channel_values"]["messages"] is messages and len(messages) == 5
    assert [m["id"] for m in reduced["channel_values"]["messages"]] == ["m0", "m3", "m4"]
    assert reduced["channel_values"]["other"] == 1
    assert handed == [(("memories", "t1"), messages[1:3])]
    assert apply_reducer(reducer, reduced, config) is reduced  # nothing more to prune
    assert apply_reducer(None, checkpoint, config) is checkpoint


def test_langgraph_module_resolves_its_0_5_names() -> None:
    """``from agentstate_reducer.langgraph import ReducingSaver, apply_reducer`` as 0.5 code
    writes it."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from agentstate_reducer.langgraph import (  # type: ignore[attr-defined]
            ReducingSaver,
            apply_reducer,
        )
    messages = [str(w.message) for w in caught if w.category is DeprecationWarning]
    assert any("ReducingCheckpointSaver" in m for m in messages)
    assert callable(ReducingSaver) and callable(apply_reducer)


def test_0_5_call_forms_still_work() -> None:
    """``Background(workers=...)`` (0.5's keyword, with a warning naming ``max_workers``) and
    ``resolve_token_counter()`` without an argument (0.5's default) still work."""
    from agentstate_reducer import Background, resolve_token_counter

    with pytest.warns(DeprecationWarning, match="use max_workers="):
        background = Background(print, workers=2)
    background.close()
    assert resolve_token_counter()({"role": "user", "content": "hello there"}) > 0


def test_0_5_attributes_and_protocols_still_work() -> None:
    """What 0.5's README documented beyond names: ``with Background(...)`` closes (draining)
    on exit; ``Background.close(wait=False)`` returns at once and the batch still runs;
    ``ReducingSaver``'s ``reducer``, ``messages_key`` and ``passthrough``; the token
    constants of ``agentstate_reducer.tokens``."""
    import threading

    from langgraph.checkpoint.memory import InMemorySaver

    from agentstate_reducer import Background, tokens
    from agentstate_reducer.langgraph import ReducingCheckpointSaver

    seen: list[Any] = []
    with Background(lambda pruned, ns: seen.extend(pruned)) as background:
        background(["m1", "m2"], "ns")
    assert seen == ["m1", "m2"]  # __exit__ drained before returning

    release = threading.Event()
    slow = Background(lambda pruned, ns: (release.wait(5), seen.extend(pruned)))
    slow(["m3"], "ns")
    slow.close(wait=False)  # returns while the batch is still blocked
    assert "m3" not in seen
    release.set()
    slow.drain(timeout=5)
    assert seen[-1] == "m3"

    reducer = MessageReducer(min_messages=2, max_messages=4)
    saver = ReducingCheckpointSaver(InMemorySaver(), reducer, messages_key="history")
    assert saver.reducer is reducer and saver.messages_key == "history"
    with pytest.warns(DeprecationWarning, match="not saver.reduces"):
        assert saver.passthrough is False

    with pytest.warns(DeprecationWarning, match="estimate_text_tokens"):
        assert tokens.CHARS_PER_TOKEN == 4  # type: ignore[attr-defined]
    with pytest.warns(DeprecationWarning, match="MESSAGE_OVERHEAD"):
        assert tokens.PER_MESSAGE_OVERHEAD == tokens.MESSAGE_OVERHEAD  # type: ignore[attr-defined]
    assert tokens.estimate_text_tokens("a" * 40) >= 1  # still importable and counting


def test_a_0_5_era_saver_with_its_own_reducer_is_a_pass_through() -> None:
    """A saver that runs ``reducer=`` itself (langgraph-checkpoint-cosmosdb 0.4 did): the
    wrapper with that same reducer delegates (0.5's ``passthrough``), with another it
    refuses (the history would be cut twice)."""
    from langgraph.checkpoint.memory import InMemorySaver

    from agentstate_reducer.langgraph import ReducingCheckpointSaver

    reducer = MessageReducer(min_messages=2, max_messages=4)
    inner = InMemorySaver()
    inner.reducer = reducer  # type: ignore[attr-defined]
    saver = ReducingCheckpointSaver(inner, reducer)
    assert saver.reduces is False and saver.reducer is reducer
    with pytest.raises(ValueError, match="already reduces messages with its own reducer"):
        ReducingCheckpointSaver(inner, MessageReducer(min_messages=2, max_messages=4))
    inner.reducer = None  # type: ignore[attr-defined]
    assert ReducingCheckpointSaver(inner, reducer).reduces is True


@pytest.mark.parametrize(
    "name", ["ScriptedChatModel", "tool_call", "provider_errors", "ProviderRejectedError"]
)
def test_the_scripted_module_is_a_warning_alias_of_testing(name: str) -> None:
    """``agentstate_reducer.langgraph.scripted`` (early 0.6 previews only) gives the very
    objects of ``testing``, each with a warning naming the module to import instead."""
    from agentstate_reducer.langgraph import testing

    scripted = importlib.import_module("agentstate_reducer.langgraph.scripted")
    match = r"alias kept for early 0\.6 previews and goes in 0\.7; import "
    with pytest.warns(DeprecationWarning, match=match + name + " from agentstate_reducer"):
        old = getattr(scripted, name)
    assert old is getattr(testing, name)
    with pytest.raises(AttributeError, match="has no attribute 'tool_calls'"):
        _ = scripted.tool_calls
