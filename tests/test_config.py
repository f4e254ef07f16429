"""Impossible configurations fail at construction, naming the field and the value."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import warnings
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentstate_reducer import Handoff, MessageReducer, PruneHookError, ReducerConfig
from agentstate_reducer.config import HANDOFF_KEYWORDS
from agentstate_reducer.policy import ClearToolOutputs, DropOldest


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
        ({"handoff": {"on_error": "keep"}}, TypeError, r"handoff must be an agentstate_reducer"),
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
    """The published 0.5 configuration names exist, so its users can switch (the hand-off
    ones, now grouped in ``Handoff``, with a DeprecationWarning)."""
    with pytest.warns(DeprecationWarning, match=r"is deprecated: pass handoff=Handoff\("):
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
    assert config.dedupe_window == config.handoff.dedupe_window == 100
    assert "max_tokens=4000" in repr(MessageReducer(config=config))


# -- Handoff: the hand-off settings, grouped ------------------------------------------------

#: A valid value other than the default, for each old keyword.
_OLD_VALUES: dict[str, Any] = {
    "namespace_key": "user_ns",
    "dedupe_on_prune": False,
    "dedupe_window": 7,
    "on_prune_error": "keep",
    "max_pending_handoff": 3,
    "retry_backoff": 0.5,
}


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"dedupe_window": 0}, ValueError, r"Handoff.dedupe_window must be at least 1, got 0"),
        (
            {"on_error": "ignore"},
            ValueError,
            r"Handoff.on_error must be 'raise' or 'keep', got 'ignore'",
        ),
        ({"namespace_key": ""}, ValueError, r"Handoff.namespace_key must be a non-empty string"),
        ({"namespace_key": 7}, TypeError, r"Handoff.namespace_key must be a string, got 7"),
        ({"dedupe": "yes"}, TypeError, r"Handoff.dedupe must be True or False, got 'yes'"),
        ({"max_pending": -1}, ValueError, r"Handoff.max_pending must be at least 0, got -1"),
        ({"retry_backoff": "1"}, TypeError, r"Handoff.retry_backoff must be a number, got '1'"),
        (
            {"retry_backoff": float("nan")},
            ValueError,
            r"Handoff.retry_backoff must be at least 0, got nan",
        ),
    ],
)
def test_bad_handoff_is_rejected(
    kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    """Each ``Handoff`` field is checked when it is built, the error naming the field."""
    with pytest.raises(error, match=match):
        Handoff(**kwargs)


def test_handoff_settings_read_back_without_a_warning() -> None:
    """``ReducerConfig(handoff=Handoff(...))`` raises no warning, and the config's former
    attributes read the handoff's fields."""
    handoff = Handoff(
        namespace_key="ns", dedupe=False, dedupe_window=5, on_error="keep", max_pending=2,
        retry_backoff=5,
    )  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        config = ReducerConfig(on_prune=[print], handoff=handoff)
        read = {keyword: getattr(config, keyword) for keyword in HANDOFF_KEYWORDS}
    assert config.handoff is handoff
    assert read == {k: getattr(handoff, field) for k, field in HANDOFF_KEYWORDS.items()}
    assert ReducerConfig().handoff == Handoff()


@pytest.mark.parametrize("keyword", sorted(HANDOFF_KEYWORDS))
def test_each_old_keyword_warns_naming_its_handoff_field(keyword: str) -> None:
    """An old keyword still sets its setting, with a DeprecationWarning naming the
    ``Handoff`` field to use instead."""
    field = HANDOFF_KEYWORDS[keyword]
    value = _OLD_VALUES[keyword]
    with pytest.warns(DeprecationWarning, match=rf"handoff=Handoff\({field}=\.\.\.\)"):
        config = ReducerConfig(**{keyword: value})
    assert getattr(config.handoff, field) == value
    assert getattr(config, keyword) == value
    assert config == ReducerConfig(handoff=Handoff(**{field: value}))


@pytest.mark.parametrize("keyword", sorted(HANDOFF_KEYWORDS))
def test_an_old_keyword_contradicting_handoff_is_refused(keyword: str) -> None:
    """The old keyword and ``handoff=`` saying different things is a ValueError naming
    both; saying the same thing is accepted (still with the warning)."""
    field = HANDOFF_KEYWORDS[keyword]
    value = _OLD_VALUES[keyword]
    with (
        pytest.warns(DeprecationWarning),
        pytest.raises(ValueError, match=rf"{keyword}=.* contradicts handoff=Handoff\({field}="),
    ):
        ReducerConfig(**{keyword: value}, handoff=Handoff())
    agreeing = Handoff(**{field: value})
    with pytest.warns(DeprecationWarning):
        config = ReducerConfig(**{keyword: value}, handoff=agreeing)
    assert config.handoff == agreeing


def test_an_old_keyword_with_a_bad_value_names_the_handoff_field() -> None:
    """The old keywords are checked as before, the error naming the ``Handoff`` field."""
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match=r"Handoff\.on_error"):
        ReducerConfig(on_prune_error="ignore")  # type: ignore[arg-type]
    with (
        pytest.warns(DeprecationWarning),
        pytest.raises(TypeError, match=r"Handoff\.namespace_key"),
    ):
        ReducerConfig(namespace_key=None)  # type: ignore[arg-type]


@given(
    st.fixed_dictionaries(
        {},
        optional={
            "namespace_key": st.text(min_size=1, max_size=5),
            "dedupe_on_prune": st.booleans(),
            "dedupe_window": st.integers(1, 10**6),
            "on_prune_error": st.sampled_from(["raise", "keep"]),
            "max_pending_handoff": st.integers(0, 10**6),
            "retry_backoff": st.floats(0, 100) | st.integers(0, 100),
        },
    )
)
def test_old_keywords_and_handoff_build_the_same_config(old: dict[str, Any]) -> None:
    """Any mix of old keywords gives the config that ``handoff=`` with the same values
    gives, field for field."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from_keywords = ReducerConfig(min_messages=2, max_messages=4, **old)
    grouped = Handoff(**{HANDOFF_KEYWORDS[k]: v for k, v in old.items()})
    assert from_keywords == ReducerConfig(min_messages=2, max_messages=4, handoff=grouped)


def test_the_written_init_takes_every_field_with_its_default() -> None:
    """``ReducerConfig.__init__`` is written out (for the old keywords): it takes every field,
    with the field's default, and only the old keywords besides."""
    parameters = dict(inspect.signature(ReducerConfig).parameters)
    for field in dataclasses.fields(ReducerConfig):
        parameter = parameters.pop(field.name)
        default = (
            field.default_factory()  # type: ignore[misc]
            if field.default is dataclasses.MISSING
            else field.default
        )
        if field.name == "handoff":
            assert parameter.default is None and default == Handoff()
        else:
            assert parameter.default == default, field.name
    assert set(parameters) == set(HANDOFF_KEYWORDS)


def test_handoff_reaches_the_hand_off() -> None:
    """The grouped settings drive the hand-off: ``on_error="keep"`` keeps every message when
    the hook fails, ``dedupe=False`` hands a message over each time it leaves,
    ``max_pending=0`` keeps nothing for a retry."""
    calls: list[list[str]] = []
    down = [True]

    def hook(pruned: list[Any], namespace: Any) -> None:
        if down[0]:
            raise ConnectionError("store down")
        calls.append([m["id"] for m in pruned])

    history = [{"role": "user", "content": f"q{n}", "id": f"m{n}"} for n in range(4)]
    keep = MessageReducer(
        config=ReducerConfig(
            min_messages=2, max_messages=3, on_prune=[hook],
            handoff=Handoff(on_error="keep", retry_backoff=0),
        )
    )  # fmt: skip
    result = keep.reduce(existing=history)
    assert result.surviving == history and isinstance(result.hook_error, PruneHookError)

    full = MessageReducer(
        config=ReducerConfig(
            min_messages=2, max_messages=3, on_prune=[hook],
            handoff=Handoff(max_pending=0, retry_backoff=0),
        )
    )  # fmt: skip
    with pytest.raises(PruneHookError) as raised:
        full.reduce(existing=history)
    assert raised.value.kept is False and full.handoff_status().pending_messages == 0

    down[0] = False
    for dedupe, times in ((False, 2), (True, 1)):
        calls.clear()
        reducer = MessageReducer(
            config=ReducerConfig(
                min_messages=2, max_messages=3, on_prune=[hook], handoff=Handoff(dedupe=dedupe)
            )
        )
        pruned = [m["id"] for m in reducer.reduce(existing=history).pruned]
        reducer.reduce(existing=history)
        assert pruned and calls == [pruned] * times


def _changes_for_every_field() -> dict[str, Any]:
    """A valid new value for every ``ReducerConfig`` field but ``on_prune`` and ``handoff``
    (on a token-mode config, so the token fields are valid)."""
    return {
        "min_messages": 1,
        "max_messages": 50,
        "max_tokens": 900,
        "target_tokens": 800,
        "token_counter": "approximate",
        "preserve_first": "system",
        "cascade_tool_messages": False,
        "summarize_fn": None,
        "inject_summary": False,
        "summary_message_factory": None,
        "summary_max_tokens": 40,
        "reply_reserve": 10,
        "start_on_human": True,
        "keep_groups": 2,
        "policy": [ClearToolOutputs(), DropOldest()],
        "mode": "validate",
        "calibrate": True,
        "format": "anthropic",
    }


def test_with_config_changes_any_field_but_the_hand_off() -> None:
    """``with_config`` accepts a change of every field but ``on_prune`` and ``handoff``
    (and the old hand-off keywords), which it refuses with one clear error; unchanged
    values of those are accepted."""
    base = MessageReducer(
        config=ReducerConfig(max_tokens=1000, on_prune=[print], handoff=Handoff(dedupe_window=9))
    )
    changes = _changes_for_every_field()
    names = {f.name for f in dataclasses.fields(ReducerConfig)}
    assert set(changes) == names - {"on_prune", "handoff"}, "a new field needs a case here"
    for name, value in changes.items():
        derived = base.with_config(**{name: value})
        assert getattr(derived.config, name) == (tuple(value) if name == "policy" else value)
        assert derived.config.handoff == base.config.handoff
    refused = {
        "on_prune": [print, print],
        "handoff": Handoff(dedupe_window=10),
        **_OLD_VALUES,
    }
    for name, value in refused.items():
        with pytest.raises(ValueError, match=f"with_config cannot change {name}: the derived"):
            base.with_config(**{name: value})
    same = base.with_config(handoff=Handoff(dedupe_window=9), on_prune=(print,))
    assert same.config == base.config
    with pytest.warns(DeprecationWarning):
        assert base.with_config(dedupe_window=9).config == base.config


def test_a_hook_that_cannot_take_the_pruned_messages_and_the_namespace_is_refused() -> None:
    """A hook of one argument failed on every prune, was taken for an outage and retried
    forever while the list grew; it is refused when the config is made, naming it and the
    signature it needs. Hooks that can take both (also through defaults, ``*args``, a
    bound method or an async function) are accepted."""
    with pytest.raises(TypeError, match=r"on_prune\[1\] is called with \(pruned_messages, "):
        ReducerConfig(on_prune=[lambda pruned, namespace: None, lambda pruned: None])
    with pytest.raises(TypeError, match=r"on_prune\[0\].*signature"):
        ReducerConfig(on_prune=lambda pruned, namespace, extra: None)

    class Store:
        def save(self, pruned: list[Any], namespace: Any = None) -> None: ...

    async def remember(pruned: list[Any], namespace: Any) -> None: ...

    def ignoring_the_namespace(save: Any) -> Any:
        @functools.wraps(save)
        def hook(pruned: list[Any], namespace: Any) -> None:
            save(pruned)

        return hook

    @ignoring_the_namespace
    def save(pruned: list[Any]) -> None: ...

    accepted = [
        Store().save, remember, lambda *args: None, lambda p, n, extra=1: None, print, save,
    ]  # fmt: skip
    assert len(ReducerConfig(on_prune=accepted).on_prune) == 6
