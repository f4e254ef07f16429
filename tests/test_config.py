"""Impossible configurations fail at construction, naming the field and the value."""

from __future__ import annotations

from typing import Any

import pytest

from agentstate_reducer import MessageReducer, ReducerConfig


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (
            {"min_messages": 30, "max_messages": 20},
            ValueError,
            r"min_messages=30 is above max_messages=20",
        ),
        ({"min_messages": -1}, ValueError, r"min_messages must be at least 0, got -1"),
        (
            {"max_messages": 0, "min_messages": 0},
            ValueError,
            r"max_messages must be at least 1, got 0",
        ),
        ({"max_tokens": 0}, ValueError, r"max_tokens must be at least 1, got 0"),
        ({"max_tokens": -5}, ValueError, r"max_tokens must be at least 1, got -5"),
        (
            {"max_tokens": 100, "target_tokens": 200},
            ValueError,
            r"target_tokens=200 is above max_tokens=100",
        ),
        ({"target_tokens": 10}, ValueError, r"target_tokens=10 needs max_tokens"),
        ({"min_messages": "3"}, TypeError, r"min_messages must be an int, got '3'"),
        ({"max_messages": 2.5}, TypeError, r"max_messages must be an int, got 2.5"),
        ({"min_messages": True}, TypeError, r"min_messages must be an int, got True"),
        (
            {"summarize_fn": "summary"},
            TypeError,
            r"summarize_fn must be callable or None, got 'summary'",
        ),
        ({"on_prune": [print, 3]}, TypeError, r"on_prune\[1\] must be callable, got 3"),
        ({"on_prune": "hook"}, TypeError, r"on_prune must be a callable or a list of callables"),
        ({"token_counter": 12}, TypeError, r"token_counter must be a callable"),
        (
            {"token_counter": "gpt4"},
            ValueError,
            r"token_counter='gpt4' is not a known counter name",
        ),
        ({"inject_summary": True}, ValueError, r"inject_summary=True needs summarize_fn"),
        (
            {"preserve_first": "yes"},
            ValueError,
            r"preserve_first must be True, False or 'system', got 'yes'",
        ),
        ({"preserve_first": 1}, TypeError, r"preserve_first must be True, False or 'system'"),
        ({"dedupe_window": 0}, ValueError, r"dedupe_window must be at least 1, got 0"),
        (
            {"on_prune_error": "ignore"},
            ValueError,
            r"on_prune_error must be 'raise' or 'keep', got 'ignore'",
        ),
        ({"namespace_key": ""}, ValueError, r"namespace_key must be a non-empty string"),
        ({"namespace_key": 7}, TypeError, r"namespace_key must be a string, got 7"),
        ({"mode": 1}, TypeError, r"mode must be 'reduce' or 'validate', got 1"),
    ],
)
def test_bad_config_is_rejected(kwargs: dict[str, Any], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        ReducerConfig(**kwargs)


def test_bad_positional_limits_are_rejected_by_the_reducer() -> None:
    with pytest.raises(ValueError, match=r"min_messages=5 is above max_messages=3"):
        MessageReducer(min_messages=5, max_messages=3)
    with pytest.raises(TypeError, match="config must be a ReducerConfig, got dict"):
        MessageReducer(config={"max_messages": 3})  # type: ignore[arg-type]


def test_seed_defaults() -> None:
    """The API reference's defaults, for the reducer and the config."""
    config = ReducerConfig()
    assert (config.min_messages, config.max_messages) == (10, 20)
    assert config.preserve_first is True and config.cascade_tool_messages is True
    assert config.summarize_fn is None
    reducer = MessageReducer()
    assert (reducer.min_messages, reducer.max_messages) == (0, None)
    # max_messages=None never prunes, however long the list.
    many = [{"role": "user", "content": str(n)} for n in range(500)]
    assert reducer.reduce(existing=many).pruned == []


def test_config_overrides_positional_limits() -> None:
    reducer = MessageReducer(1, 2, config=ReducerConfig(min_messages=3, max_messages=4))
    assert (reducer.min_messages, reducer.max_messages) == (3, 4)


def test_config_is_immutable_and_accepts_a_single_hook() -> None:
    config = ReducerConfig(on_prune=print)  # type: ignore[arg-type]
    assert config.on_prune == (print,)
    with pytest.raises(AttributeError):
        config.max_messages = 50  # type: ignore[misc]


def test_published_names_are_accepted() -> None:
    """The published 0.5 configuration names exist, so its users can switch."""
    config = ReducerConfig(
        max_tokens=4000,
        target_tokens=2000,
        token_counter=lambda message: 10,
        inject_summary=True,
        summarize_fn=lambda pruned: "s",
        summary_message_factory=lambda text, count: [{"role": "user", "content": text}],
        on_prune=[lambda pruned, ns: None],
        namespace_key="memory_namespace",
        dedupe_on_prune=True,
        dedupe_window=100,
    )
    assert config.effective_target_tokens == 2000
    assert "max_tokens=4000" in repr(MessageReducer(config=config))
