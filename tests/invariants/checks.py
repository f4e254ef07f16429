"""Invariant checkers for one conversation written by many reduces.

Each function states one invariant and raises ``AssertionError`` naming what broke it.
They take plain data (ids, dicts, lists) so any driver can use them: the randomized
state machines of ``test_many_writers``, and graph tests.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from agentstate_reducer import MessageReducer
from agentstate_reducer.messages import content_of, id_of, is_summary
from agentstate_reducer.validate import DANGLING_CALL, ORPHAN_RESULT


def not_lost(created: Iterable[str], stored: Sequence[Any], safe: set[str]) -> None:
    """Every message a branch ever held is in its stored list or safe elsewhere
    (delivered to every hook, or kept for a retry)."""
    held = {id_of(m) for m in stored}
    lost = set(created) - held - safe
    assert not lost, f"lost: {sorted(lost)}"


def delivered_once(deliveries: Iterable[tuple[Any, Any, str]]) -> None:
    """No hook took a message twice in one conversation: ``deliveries`` are
    ``(hook, namespace, message id)``."""
    counts = Counter(deliveries)
    twice = [key for key, count in counts.items() if count > 1]
    assert not twice, f"handed over twice: {twice[:5]}"


def originals_only(delivered: Iterable[Any], originals: Mapping[str, Any]) -> None:
    """What reached a hook is the message as it was created (never a rewrite, a
    placeholder or a summary block)."""
    for message in delivered:
        assert not is_summary(message), f"a summary block was handed over: {message!r}"
        original = originals.get(id_of(message) or "")
        assert original is not None, f"an unknown message was handed over: {message!r}"
        assert content_of(message) == content_of(original), (
            f"a rewrite of {id_of(message)} was handed over: {content_of(message)!r}"
        )


def tool_pairs_whole(messages: Sequence[Any]) -> None:
    """No tool result without its call, no call without its results."""
    problems = MessageReducer().validate(messages).problems
    broken = [p for p in problems if p.kind in (ORPHAN_RESULT, DANGLING_CALL)]
    assert not broken, f"broken tool pairs: {broken}"


def within_bound(
    reducer: MessageReducer, judge: MessageReducer, model_input: Sequence[Any]
) -> None:
    """The model input is within the reducer's bound, or nothing more could be pruned
    (what a reduce never prunes: the newest question, whole tool groups, summaries)."""
    over = any(p.kind == "over_budget" for p in reducer.validate(model_input).problems)
    assert not (over and judge.plan(model_input).pruned), (
        f"the model input is over the bound with prunable messages left "
        f"({len(model_input)} messages)"
    )


def one_call_per_reduce(calls_per_reduce: Mapping[int, int]) -> None:
    """No reduce called the summarizer more than once."""
    many = {tag: n for tag, n in calls_per_reduce.items() if n > 1}
    assert not many, f"reduces calling summarize_fn more than once: {many}"


def replays_call_nothing(replay_calls: Sequence[int]) -> None:
    """A replay of a reduce that made its summary (the same input again) calls nothing."""
    assert not any(replay_calls), f"replays called summarize_fn: {replay_calls}"
