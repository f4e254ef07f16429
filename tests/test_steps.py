"""Policy steps written against the public ``StepContext``, and the built-in steps that call
user code: ``Compress`` and ``SelectRelevant``; ``MessageReducer.view``.

The custom steps here import only from ``agentstate_reducer`` and
``agentstate_reducer.policy``, as a user's step would. Every reduce runs both ways
(``reduce`` and ``areduce``) where the behaviour must be the same.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st
from langchain_core.embeddings import Embeddings

from agentstate_reducer import Handoff, MessageReducer, ReducerConfig, ReducerResult, StepError
from agentstate_reducer.policy import (
    ClearToolOutputs,
    Compress,
    DropOldest,
    LexicalScorer,
    ReductionStep,
    SelectRelevant,
    StepContext,
    Summarize,
    TruncateLargest,
)

from .strategies import Msg, conversations, rendered, shapes

EXAMPLES = settings(max_examples=150, deadline=None)
HOWS = ("reduce", "areduce")


# -- helpers ---------------------------------------------------------------------------


def call_of(call_id: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "lookup", "arguments": "{}"}}


def tool_chat(
    turns: int, output: Callable[[int], str] = lambda t: f"result {t}: " + "data " * 60
) -> list[dict[str, Any]]:
    """A system prompt, then per turn: question, a call to two tools at once, both results,
    an answer. Turn ``t``'s results say ``output(t)``."""
    out: list[dict[str, Any]] = [{"role": "system", "content": "Be brief.", "id": "sys"}]
    for t in range(turns):
        out += [
            {"role": "user", "content": f"question {t}", "id": f"q{t}"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [call_of(f"c{t}a"), call_of(f"c{t}b")],
                "id": f"a{t}",
            },
            {"role": "tool", "tool_call_id": f"c{t}a", "content": output(t), "id": f"t{t}a"},
            {"role": "tool", "tool_call_id": f"c{t}b", "content": output(t), "id": f"t{t}b"},
            {"role": "assistant", "content": f"answer {t}", "id": f"b{t}"},
        ]
    return out


@dataclass
class Hook:
    """An ``on_prune`` hook that records every message it is handed."""

    got: list[Any] = field(default_factory=list)
    calls: int = 0

    def __call__(self, messages: list[Any], namespace: Any) -> None:
        self.calls += 1
        self.got.extend(messages)


def reducer_for(
    policy: Sequence[ReductionStep], hook: Hook | None = None, **config: Any
) -> MessageReducer:
    """A reducer with ``policy`` whose hook sees every hand-off (no dedupe hides a repeat);
    a policy of rewriting steps only gets ``DropOldest()`` last (a policy must prune)."""
    config.setdefault("max_tokens", 300)
    on_error = config.pop("on_prune_error", "raise")
    steps = list(policy)
    if not any(step.prunes for step in steps):
        steps.append(DropOldest())
    return MessageReducer(
        config=ReducerConfig(
            policy=steps,
            on_prune=[hook] if hook is not None else [],
            handoff=Handoff(dedupe=False, on_error=on_error),
            **config,
        )
    )


def run(
    reducer: MessageReducer, how: str, existing: list[Any], new: list[Any] | None = None, **kw: Any
) -> ReducerResult:
    if how == "reduce":
        return reducer.reduce(existing=existing, new=new, **kw)
    return asyncio.run(reducer.areduce(existing=existing, new=new, **kw))


def ids(messages: Sequence[Any]) -> list[str]:
    return [m["id"] for m in messages]


def tokens_of(reducer: MessageReducer, messages: Sequence[Any]) -> int:
    return sum(reducer.count_tokens(m) for m in messages)


def pairing_problems(messages: Sequence[Any]) -> list[str]:
    """The tool-pairing problems of ``messages`` (orphan results, dangling calls)."""
    found = MessageReducer().validate(messages).problems
    return [p.kind for p in found if p.kind in ("orphan_result", "dangling_call")]


def once_each(got: Sequence[Any]) -> bool:
    return len({id(m) for m in got}) == len(got)


# -- custom steps, against the public protocol only -------------------------------------


@dataclass(frozen=True)
class KeepNewestToolGroups(ReductionStep):
    """Drop every tool group but the newest ``keep`` (by asking for one of its results)."""

    keep: int = 1
    id: str = "keep_newest_tool_groups"

    def apply(self, context: StepContext) -> list[Any]:
        results = [p for p in range(len(context.messages)) if context.role(p) == "tool"]
        callers: list[int] = []
        for position in results:
            first = context.group(position)[0]
            if first not in callers:
                callers.append(first)
        old = callers[: max(0, len(callers) - self.keep)]
        # Name the last result of each old group: the context takes the call and siblings.
        picked = [context.group(c)[-1] for c in old if context.can_drop(c)]
        return context.drop(picked)


class DropThese(ReductionStep):
    """Drop the positions ``pick(context)`` names (a probe of the guarantees)."""

    id = "drop_these"

    def __init__(self, pick: Callable[[StepContext], list[int]]) -> None:
        self.pick = pick

    def apply(self, context: StepContext) -> list[Any]:
        return context.drop(self.pick(context))


class Edit(ReductionStep):
    """Run ``edit(context)``: replace or insert, then return what it touched."""

    id = "edit"
    prunes = False

    def __init__(self, edit: Callable[[StepContext], Any]) -> None:
        self.edit = edit

    def apply(self, context: StepContext) -> Any:
        return self.edit(context)


@dataclass(frozen=True)
class NoteBeforeQuestion(ReductionStep):
    """Insert a note before the newest question."""

    text: str = "note: earlier turns were trimmed"
    id: str = "note"
    prunes: bool = False

    def apply(self, context: StepContext) -> list[Any]:
        at = context.newest_human()
        if at is None:
            return []
        note = {"role": "user", "content": self.text, "id": "note"}
        context.insert(at, [note])
        return [note]


@dataclass(frozen=True)
class AskWhichToDrop(ReductionStep):
    """A generator step: ``chooser(texts)`` (sync or async user code) names the old
    human/ai messages to drop, by index into the texts it was given."""

    chooser: Callable[[list[str]], Any]
    id: str = "ask_which_to_drop"

    def apply(self, context: StepContext) -> Any:
        droppable = [
            p
            for p in range(len(context.messages))
            if context.role(p) in ("human", "ai") and context.can_drop(p)
        ]
        texts = [str(context.messages[p].get("content") or "") for p in droppable]
        chosen = yield context.call(self.chooser, texts)
        return context.drop([droppable[i] for i in chosen])


# -- the guarantees of drop / insert / replace -----------------------------------------


@pytest.mark.parametrize("how", HOWS)
def test_a_custom_step_drops_old_tool_groups_whole(how: str) -> None:
    """Naming one tool result takes its call and the sibling result; the newest group
    stays; what left reaches the hook once each, as given."""
    history = tool_chat(4)
    hook = Hook()
    reducer = reducer_for([KeepNewestToolGroups(keep=1)], hook, max_tokens=200)
    result = run(reducer, how, history)
    old_groups = {f"{k}{t}" for t in range(3) for k in ("a", "t")}
    expected = [m for m in history if m["id"].rstrip("ab") in old_groups]
    assert ids(result.pruned) == ids(expected)
    assert all(a is b for a, b in zip(result.pruned, expected, strict=True))
    assert ids(result.surviving) == ids([m for m in history if m not in expected])
    assert pairing_problems(result.surviving) == []
    assert hook.got == result.pruned and once_each(hook.got)
    [report] = result.steps
    assert report.step == "keep_newest_tool_groups" and report.touched == result.pruned
    assert report.tokens_before - report.tokens_after == tokens_of(reducer, expected)


def test_pairing_problems_sees_a_broken_pair() -> None:
    """The check the tests here rely on can fail: a result without its call, a call
    without one of its results."""
    history = tool_chat(2)
    assert pairing_problems(history) == []
    assert pairing_problems([m for m in history if m["id"] != "a0"]) == ["orphan_result"] * 2
    assert pairing_problems([m for m in history if m["id"] != "t1b"]) == ["dangling_call"]


@pytest.mark.parametrize(
    ("pick", "position", "why"),
    [
        (lambda c: [c.newest_human()], 16, "newest human message"),
        (lambda c: [0], 0, "preserve_first"),
        (lambda c: [c.group(2)[0], 99], 99, "out of range"),
    ],
)
def test_drop_refuses_what_a_reduce_never_drops(pick: Any, position: int, why: str) -> None:
    """The newest question, the kept first message and a position past the end are
    refused with a ValueError naming the position; nothing is handed over."""
    history = tool_chat(4)
    hook = Hook()
    reducer = reducer_for([DropThese(pick)], hook, max_tokens=200, preserve_first=True)
    with pytest.raises(ValueError, match=rf"position {position}\b.*{why}"):
        reducer.reduce(existing=history)
    assert hook.got == []


def test_drop_refuses_a_mid_list_system_message() -> None:
    history = tool_chat(3)
    history.insert(6, {"role": "system", "content": "New rule: be kind.", "id": "rule"})
    reducer = reducer_for(
        [DropThese(lambda c: [next(p for p in range(1, 99) if c.role(p) == "system")])],
        max_tokens=100,
    )
    with pytest.raises(ValueError, match=r"position 6\b.*system"):
        reducer.reduce(existing=history)


def test_drop_refuses_the_newest_keep_groups_turns() -> None:
    history = tool_chat(4)
    reducer = reducer_for([DropThese(lambda c: [c.turns()[-2][0]])], max_tokens=100, keep_groups=2)
    at = 1 + 5 * 2  # where turn 2 (of 0..3) starts
    with pytest.raises(ValueError, match=rf"position {at}\b.*keep_groups"):
        reducer.reduce(existing=history)


def test_the_context_reads_the_list_as_the_plan_does() -> None:
    """turns(), group(), newest_human(), tokens, total, budget and target as the docs say."""
    history = tool_chat(3)
    seen: dict[str, Any] = {}

    def look(context: StepContext) -> list[Any]:
        seen.update(
            turns=context.turns(),
            group=[context.group(p) for p in range(len(context.messages))],
            newest=context.newest_human(),
            tokens=list(context.tokens),
            total=context.total,
            budget=context.budget,
            target=context.target,
            token_mode=context.token_mode,
            roles=[context.role(p) for p in range(len(context.messages))],
        )
        return []

    reducer = reducer_for([Edit(look), DropOldest()], max_tokens=120, target_tokens=100)
    reducer.reduce(existing=history)
    assert seen["turns"] == [range(1 + 5 * t, 6 + 5 * t) for t in range(3)]
    for t in range(3):
        call = 2 + 5 * t
        assert seen["group"][call] == seen["group"][call + 1] == [call, call + 1, call + 2]
        assert seen["group"][call - 1] == [call - 1]
    assert seen["newest"] == 11
    assert seen["tokens"] == [reducer.count_tokens(m) for m in history]
    assert seen["total"] == sum(seen["tokens"])
    assert (seen["budget"], seen["target"], seen["token_mode"]) == (120, 100, True)
    assert seen["roles"][:4] == ["system", "human", "ai", "tool"]


def test_turns_of_a_list_without_a_human_message_is_empty() -> None:
    """A list with no human message has no user turn (turns() raised ValueError from a
    strict zip before this branch, so SelectRelevant failed on such a list)."""
    seen: list[Any] = []
    agent_only = [m for m in tool_chat(2) if m["role"] != "user"]
    reducer = reducer_for([Edit(lambda c: seen.append(c.turns())), DropOldest()], max_tokens=10)
    reducer.reduce(existing=agent_only)
    assert seen == [[]]
    for history in (agent_only, [{"role": "system", "content": "aaa " * 20, "id": "s"}]):
        select = reducer_for([SelectRelevant(), DropOldest()], max_tokens=5)
        result = select.reduce(existing=history)
        assert result.steps[0].step == "select_relevant" and result.steps[0].touched == []


def test_insert_between_a_call_and_its_results_is_refused() -> None:
    history = tool_chat(2)
    note = {"role": "user", "content": "note", "id": "n"}
    for at in (3, 4):  # before the first result, between the two results
        reducer = reducer_for([Edit(lambda c, at=at: c.insert(at, [note]))], max_tokens=100)
        with pytest.raises(ValueError, match=rf"position {at}\b.*tool call"):
            reducer.reduce(existing=history)
    first = reducer_for([Edit(lambda c: c.insert(0, [note]))], max_tokens=100, preserve_first=True)
    with pytest.raises(ValueError, match=r"position 0\b.*first message"):
        first.reduce(existing=history)
    bad = reducer_for([Edit(lambda c: c.insert(1, ["not a message"]))], max_tokens=100)
    with pytest.raises(TypeError, match=r"inserted messages\[0\]"):
        bad.reduce(existing=history)


def test_replace_keeps_role_and_tool_links() -> None:
    history = tool_chat(2)
    cases: list[tuple[Any, type[Exception], str]] = [
        (lambda c: c.replace(1, {"role": "assistant", "content": "x"}), ValueError, "role"),
        (
            lambda c: c.replace(3, {"role": "tool", "tool_call_id": "other", "content": "x"}),
            ValueError,
            "tool links",
        ),
        (
            lambda c: c.replace(2, {"role": "assistant", "content": "no calls"}),
            ValueError,
            "tool links",
        ),
        (lambda c: c.replace(1, 42), TypeError, r"replacement for messages\[1\]"),
    ]
    for edit, error, words in cases:
        hook = Hook()
        reducer = reducer_for([Edit(edit)], hook, max_tokens=100)
        with pytest.raises(error, match=words):
            reducer.reduce(existing=history)
        assert hook.got == []


@pytest.mark.parametrize("how", HOWS)
def test_originals_of_rewrites_reach_the_hook_once(how: str) -> None:
    """A message rewritten twice, one rewritten then dropped, and one rewritten and kept:
    each original reaches the hook exactly once and no rewrite does."""
    history = tool_chat(4)
    rewrites: list[Any] = []

    def rewrite(context: StepContext) -> list[Any]:
        for position, text in ((3, "short"), (3, "shorter"), (8, "tiny"), (13, "mini")):
            new = {**context.messages[position], "content": text}
            context.replace(position, new)
            rewrites.append(new)
        return rewrites

    hook = Hook()
    reducer = reducer_for(
        [Edit(rewrite), DropThese(lambda c: [c.group(7)[0]])], hook, max_tokens=100
    )
    result = run(reducer, how, history)
    dropped = [history[p] for p in (7, 8, 9)]  # turn 1's call: rewritten 8 leaves with it
    assert result.pruned == dropped and result.pruned[1] is history[8]
    assert result.rewritten == [history[3], history[13]]
    assert sorted(map(id, hook.got)) == sorted(map(id, [*dropped, history[3], history[13]]))
    assert once_each(hook.got) and not any(m in rewrites for m in hook.got if m["id"] == "t0a")
    kept = {m["id"]: m["content"] for m in result.surviving}
    assert (kept["t0a"], kept["t2a"]) == ("shorter", "mini")
    assert history[3]["content"].startswith("result 0"), "the caller's message is untouched"


@pytest.mark.parametrize("how", HOWS)
def test_an_inserted_note_is_new_and_reaches_the_hook_when_pruned(how: str) -> None:
    history = tool_chat(3)
    history[-5] = {**history[-5], "content": "question 2, at length: " + "detail " * 200}
    hook = Hook()
    # DropOldest cannot fit the long question, so the note step runs after it.
    reducer = reducer_for([DropOldest(), NoteBeforeQuestion()], hook, max_tokens=150)
    first = run(reducer, how, history)
    assert [r.step for r in first.steps] == ["drop_oldest", "note"]
    at = ids(first.surviving).index("q2")
    assert first.surviving[at - 1]["id"] == "note"
    assert first.tokens_after == tokens_of(reducer, first.surviving)
    assert not any(m["id"] == "note" for m in hook.got), "a new message is not handed over"
    # The next turn pushes the note out: it leaves like any message.
    more = tool_chat(6)[len(history) :]
    second = run(reducer_for([DropOldest()], hook, max_tokens=150), how, first.surviving, more)
    assert "note" in ids(second.pruned)
    assert [m["id"] for m in hook.got].count("note") == 1


@pytest.mark.parametrize("how", HOWS)
def test_a_generator_step_calls_sync_and_async_user_code(how: str) -> None:
    """``yield context.call(fn, ...)`` returns fn's result in both drivers; in areduce an
    async fn runs on the caller's loop and a sync one in a worker thread."""
    history = tool_chat(3)
    where: dict[str, Any] = {}

    def sync_chooser(texts: list[str]) -> list[int]:
        where["sync"] = threading.current_thread()
        return [i for i, t in enumerate(texts) if t.startswith("question")][:1]

    async def async_chooser(texts: list[str]) -> list[int]:
        where["async"] = (asyncio.get_running_loop(), asyncio.current_task())
        await asyncio.sleep(0)
        return [i for i, t in enumerate(texts) if t.startswith("answer")][:1]

    policy = [
        AskWhichToDrop(sync_chooser, id="sync"),
        AskWhichToDrop(async_chooser, id="async"),
    ]
    reducer = reducer_for(policy, max_tokens=60)

    async def areduce() -> tuple[ReducerResult, Any]:
        return await reducer.areduce(existing=history), asyncio.get_running_loop()

    if how == "reduce":
        result = reducer.reduce(existing=history)
        assert where["sync"] is threading.current_thread()
    else:
        result, loop = asyncio.run(areduce())
        assert where["sync"] is not threading.current_thread()
        assert where["async"][0] is loop
    assert where["async"][1] is not None
    assert ids(result.pruned) == ["q0", "b0"]
    assert [r.step for r in result.steps] == ["sync", "async"]


def test_a_failing_call_becomes_a_step_error_or_is_caught_by_the_step() -> None:
    history = tool_chat(3)
    boom = RuntimeError("store down")

    def chooser(texts: list[str]) -> list[int]:
        raise boom

    hook = Hook()
    reducer = reducer_for([AskWhichToDrop(chooser), DropOldest()], hook, max_tokens=100)
    with pytest.raises(StepError, match="store down") as raised:
        reducer.reduce(existing=history)
    assert raised.value.step == "ask_which_to_drop" and raised.value.__cause__ is boom
    assert hook.got == []
    kept = reducer.reduce(existing=history, on_prune_error="keep")
    assert [r.step for r in kept.steps] == ["ask_which_to_drop", "drop_oldest"]
    assert isinstance(kept.steps[0].error, StepError) and kept.steps[0].error.__cause__ is boom
    assert kept.steps[0].touched == [] and kept.pruned and hook.got == kept.pruned

    class Careful(ReductionStep):
        id = "careful"

        def apply(self, context: StepContext) -> Any:
            try:
                yield context.call(chooser, [])
            except RuntimeError as exc:
                assert exc is boom  # thrown in: the step may handle it
            return context.drop_oldest()

    handled = reducer_for([Careful()], max_tokens=100).reduce(existing=history)
    assert handled.steps[0].error is None and handled.pruned


def test_a_step_must_yield_calls_and_return_a_list() -> None:
    class YieldsJunk(ReductionStep):
        id = "junk"

        def apply(self, context: StepContext) -> Any:
            yield "not a call"

    with pytest.raises(TypeError, match=r"yielded 'not a call'"):
        reducer_for([YieldsJunk()], max_tokens=100).reduce(existing=tool_chat(3))
    with pytest.raises(TypeError, match=r"returned int"):
        reducer_for([Edit(lambda c: 3)], max_tokens=100).reduce(existing=tool_chat(3))


class NoApply(ReductionStep):
    id = "no_apply"


class NoId(ReductionStep):
    def apply(self, context: StepContext) -> list[Any]:
        return []


class TokenStep(ReductionStep):
    id = "token_step"
    needs_tokens = True

    def apply(self, context: StepContext) -> list[Any]:
        return []


@pytest.mark.parametrize(
    ("policy", "config", "error", "words"),
    [
        ([NoId()], {}, TypeError, r"policy\[0\] \(NoId\) has id ''"),
        ([DropOldest(), NoApply()], {}, TypeError, r"policy\[1\].*does not implement apply"),
        ([lambda c: c], {}, TypeError, r"policy\[0\] is not a reduction step"),
        ([DropOldest(), DropOldest()], {}, ValueError, r"policy\[1\].*'drop_oldest'.*twice"),
        (
            [TokenStep()],
            {"max_messages": 5, "min_messages": 2},
            ValueError,
            r"token_step.*set max_tokens",
        ),
        (
            [Compress(lambda ms: ms)],
            {"max_messages": 5, "min_messages": 2},
            ValueError,
            r"compress.*set max_tokens",
        ),
        (
            [SelectRelevant(summarize=True)],
            {"max_messages": 5, "min_messages": 2},
            ValueError,
            "summarize_fn",
        ),
        ([], {}, ValueError, "policy is empty"),
    ],
)
def test_bad_policies_are_refused_when_the_config_is_built(
    policy: list[Any], config: dict[str, Any], error: type[Exception], words: str
) -> None:
    config.setdefault("max_tokens", None if "max_messages" in config else 100)
    with pytest.raises(error, match=words):
        ReducerConfig(policy=policy, **config)


def test_pruned_is_oldest_first_when_two_steps_prune() -> None:
    history = tool_chat(3)
    reducer = reducer_for([KeepNewestToolGroups(keep=1), DropOldest()], max_tokens=30)
    result = reducer.reduce(existing=history)
    assert [r.step for r in result.steps] == ["keep_newest_tool_groups", "drop_oldest"]
    order = ids(history)
    assert [order.index(i) for i in ids(result.pruned)] == sorted(
        order.index(i) for i in ids(result.pruned)
    )


def test_drop_of_a_pending_call_orphans_its_results() -> None:
    history = tool_chat(2)
    pending, late = history[:-2], history[-2]  # turn 1: one result in, one still running
    reducer = reducer_for([DropThese(lambda c: [c.group(len(c.messages) - 1)[0]])], max_tokens=50)
    assert pairing_problems([*pending, late]) == []
    # Today the call goes, and the second result, when it comes in, answers nothing:
    # reducer.reduce(existing=pending).surviving + [late] has an orphan_result.
    with pytest.raises(ValueError, match=r"position 7\b"):
        reducer.reduce(existing=pending)


# -- Compress ------------------------------------------------------------------------


@dataclass
class Shortener:
    """A compressor that keeps the first ``keep`` characters, recording what it got."""

    keep: int = 12
    given: list[list[str]] = field(default_factory=list)

    def __call__(self, messages: list[Any]) -> list[str]:
        self.given.append([m["id"] for m in messages])
        return ["gist: " + str(m["content"])[: self.keep] for m in messages]

    @property
    def seen(self) -> list[str]:
        return [i for batch in self.given for i in batch]


def tool_ids(messages: Sequence[Any]) -> list[str]:
    return [m["id"] for m in messages if m["role"] == "tool"]


@pytest.mark.parametrize("how", HOWS)
def test_compress_replaces_old_outputs_and_hands_the_originals_over(how: str) -> None:
    history = tool_chat(4)
    compressor = Shortener()
    hook = Hook()
    step = Compress(compressor, keep_last=2)
    reducer = reducer_for([step, DropOldest()], hook, max_tokens=400)
    result = run(reducer, how, history)
    old = tool_ids(history)[:-2]
    assert compressor.given == [old]
    assert result.pruned == [] and [r.step for r in result.steps] == ["compress"]
    by_id = {m["id"]: m for m in result.surviving}
    original = {m["id"]: m for m in history}
    touched = result.steps[0].touched
    for message in touched:
        assert message["content"] == "gist: " + original[message["id"]]["content"][:12]
        assert by_id[message["id"]] is message
        assert reducer.rewrites.holds(message, None), "an output is remembered as a rewrite"
    # Replaced oldest first, only as far as the target needs.
    assert ids(touched) == old[: len(touched)]
    assert result.tokens_after <= 400 < tokens_of(reducer, history)
    assert 0 < len(touched) < len(old), "it stopped once the list fitted"
    assert result.tokens_after == tokens_of(reducer, result.surviving)
    assert ids(result.rewritten) == ids(touched)
    assert all(original[m["id"]] is m for m in result.rewritten)
    assert hook.got == result.rewritten and once_each(hook.got)


def test_compress_calls_the_compressor_once_per_message_across_reduces() -> None:
    """The same list reduced (or viewed) again is not compressed again; a growing chat
    sends only new messages; the step's own outputs are never sent, and when DropOldest
    later prunes them they are not handed over again."""
    compressor = Shortener()
    hook = Hook()
    step = Compress(compressor, keep_last=1)
    reducer = reducer_for([step, DropOldest()], hook, max_tokens=220)
    history = tool_chat(8)
    for turns in (3, 3, 4, 6, 8):
        reducer.view(history[: 1 + 5 * turns])
    viewed = list(compressor.seen)
    assert len(viewed) == len(set(viewed)), "an answer is remembered"
    assert hook.got == [], "view hands nothing over"
    stored: list[Any] = []
    end = 0
    for turns in range(1, 9):
        grown = 1 + 5 * turns
        stored = reducer.reduce(existing=stored, new=history[end:grown]).surviving
        end = grown
    sent = compressor.seen
    assert len(sent) == len(set(sent)), "no message is compressed twice"
    assert not any(i.startswith("gist") for i in sent)
    outputs = [m for m in hook.got if str(m["content"]).startswith("gist")]
    assert outputs == [], "compressed versions are not handed over"
    assert once_each(hook.got) and all(m in history for m in hook.got)
    assert len({m["id"] for m in hook.got}) == len(hook.got)
    gone = {m["id"] for m in history} - {m["id"] for m in stored}
    assert gone and gone <= {m["id"] for m in hook.got}


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        (lambda ms: ["short"] * (len(ms) - 1), r"returned \d+ entries for \d+ messages"),
        (lambda ms: "short", "returned str"),
        (lambda ms: {"a": "short"}, "returned dict"),
        (lambda ms: [42] * len(ms), r"answer \[0\]: got int"),
        (lambda ms: [{"role": "user", "content": "x"} for _ in ms], r"with a human message"),
    ],
)
def test_compress_refuses_wrong_answers(answer: Any, words: str) -> None:
    """An unusable answer (an LLM that lost count, returned text or junk) is the
    compressor failing: StepError with ``raise``, nothing pruned or handed over; with
    ``keep`` the step stops, its report says why, and DropOldest keeps the budget."""
    hook = Hook()
    step = Compress(answer, keep_last=1, retry_backoff=0)
    reducer = reducer_for([step, DropOldest()], hook, max_tokens=60)
    with pytest.raises(StepError, match=words):
        reducer.reduce(existing=tool_chat(3), on_prune_error="raise")
    assert hook.got == []
    kept = reducer.reduce(existing=tool_chat(3), on_prune_error="keep")
    error = kept.steps[0].error
    assert isinstance(error, StepError) and re.search(words, str(error))
    assert [r.step for r in kept.steps] == ["compress", "drop_oldest"]
    assert kept.tokens_after <= 60 and hook.got == kept.pruned


def test_compress_keeps_what_does_not_help_and_what_it_must_not_touch() -> None:
    """None and longer answers leave a message as it is; only messages of ``roles``,
    older than the newest ``keep_last`` and over ``min_tokens`` are sent; never the
    question, a system message or a summary block."""
    history = tool_chat(4)
    history[-5] = {**history[-5], "content": "question 3 " + "in detail " * 40}
    history[0] = {**history[0], "content": "Be brief. " * 40}
    sizes = {m["id"]: MessageReducer().count_tokens(m) for m in history}
    sent: list[list[str]] = []

    def answer(messages: list[Any]) -> list[Any]:
        sent.append(ids(messages))
        out: list[Any] = []
        for m in messages:
            if m["id"] == "q0":
                out.append(None)
            elif m["id"] == "t0a":
                out.append(str(m["content"]) * 2)  # longer: not used
            else:
                out.append({**m, "content": "gist"})
        return out

    step = Compress(answer, roles=("tool", "human"), keep_last=2, min_tokens=5)
    picked = [m for m in history if m["role"] in ("tool", "user") and m["id"] != "q3"]
    expected = [m["id"] for m in picked[:-2] if sizes[m["id"]] > 5]
    # A budget met only once every usable answer is in: Compress uses them all, and the
    # DropOldest after it has nothing left to do.
    counter = MessageReducer()
    saved = sum(
        sizes[m["id"]] - counter.count_tokens({**m, "content": "gist"})
        for m in history
        if m["id"] in expected and m["id"] not in ("q0", "t0a")
    )
    budget = sum(sizes.values()) - saved
    result = reducer_for([step], max_tokens=budget).reduce(existing=history)
    assert [r.step for r in result.steps] == ["compress"]
    assert sent == [expected] and "q3" not in expected and "sys" not in expected
    kept = {m["id"]: m for m in result.surviving}
    assert kept["q0"] is history[1] and kept["t0a"] is history[3]
    assert ids(result.steps[0].touched) == [i for i in expected if i not in ("q0", "t0a")]


def test_compress_arguments_are_checked() -> None:
    with pytest.raises(TypeError, match=r"Compress\.compressor"):
        Compress("not callable")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'system'"):
        Compress(lambda ms: ms, roles=("tool", "system"))
    with pytest.raises(TypeError, match="non-empty list of roles"):
        Compress(lambda ms: ms, roles=())
    with pytest.raises(TypeError, match="non-empty list of roles"):
        Compress(lambda ms: ms, roles="tool")
    with pytest.raises(ValueError, match=r"Compress\.keep_last"):
        Compress(lambda ms: ms, keep_last=-1)
    with pytest.raises(ValueError, match=r"Compress\.retry_backoff"):
        Compress(lambda ms: ms, retry_backoff=-1.0)


def test_an_async_compressor_is_awaited_on_the_loop_in_areduce_and_run_in_reduce() -> None:
    seen: list[tuple[Any, Any]] = []

    async def compressor(messages: list[Any]) -> list[str]:
        seen.append((asyncio.get_running_loop(), asyncio.current_task()))
        await asyncio.sleep(0)
        return ["gist" for _ in messages]

    history = tool_chat(4)

    async def areduce(reducer: MessageReducer) -> tuple[ReducerResult, Any]:
        return await reducer.areduce(existing=history), asyncio.get_running_loop()

    for how in HOWS:
        seen.clear()
        reducer = reducer_for([Compress(compressor, keep_last=1), DropOldest()], max_tokens=300)
        if how == "reduce":
            result = reducer.reduce(existing=history)
        else:
            result, loop = asyncio.run(areduce(reducer))
            assert seen[0][0] is loop, "awaited on the caller's loop, not a private one"
        assert len(seen) == 1 and seen[0][1] is not None
        assert [m["content"] for m in result.steps[0].touched] == ["gist"] * len(
            result.steps[0].touched
        )
        assert result.steps[0].touched and result.tokens_after <= 300


@pytest.mark.parametrize("how", HOWS)
def test_a_failing_compressor_raises_and_nothing_leaves(how: str) -> None:
    """With "raise" the reduce raises StepError: nothing pruned, nothing handed over, not
    even what an earlier step rewrote; with "keep" the next step runs and the report
    carries the error."""
    boom = ConnectionError("model down")

    def compressor(messages: list[Any]) -> list[Any]:
        raise boom

    history = tool_chat(4, output=lambda t: f"{t} " + "data " * 60)
    hook = Hook()

    def policy() -> list[ReductionStep]:  # a fresh Compress: the first one is in its backoff
        return [ClearToolOutputs(keep_last=6), Compress(compressor, keep_last=1), DropOldest()]

    reducer = reducer_for(policy(), hook, max_tokens=300, on_prune_error="raise")
    with pytest.raises(StepError, match=r"step 'compress'.*model down") as raised:
        run(reducer, how, history)
    assert raised.value.step == "compress" and raised.value.__cause__ is boom
    assert hook.got == [] and history == tool_chat(4, output=lambda t: f"{t} " + "data " * 60)
    kept = run(reducer_for(policy(), hook, max_tokens=300, on_prune_error="keep"), how, history)
    assert [r.step for r in kept.steps] == ["clear_tool_outputs", "compress", "drop_oldest"]
    error = kept.steps[1].error
    assert isinstance(error, StepError) and error.__cause__ is boom
    assert kept.steps[0].error is None and kept.steps[2].error is None
    assert kept.pruned and kept.tokens_after <= 300
    assert sorted(map(id, hook.got)) == sorted(map(id, [*kept.pruned, *kept.rewritten]))


def test_a_failing_compressor_waits_out_its_backoff() -> None:
    calls: list[float] = []
    failing = [True]

    def compressor(messages: list[Any]) -> list[str]:
        calls.append(time.monotonic())
        if failing[0]:
            raise TimeoutError("slow model")
        return ["gist" for _ in messages]

    step = Compress(compressor, keep_last=1, retry_backoff=0.3)
    reducer = reducer_for([step, DropOldest()], max_tokens=300, on_prune_error="keep")
    history = tool_chat(4)
    first = reducer.reduce(existing=history)
    assert len(calls) == 1 and first.steps[0].error is not None
    for _ in range(3):
        again = reducer.reduce(existing=history)
        assert again.pruned, "DropOldest still bounds the list"
    assert len(calls) == 1, "not called again within the backoff"
    time.sleep(0.35)
    failing[0] = False
    healed = reducer.reduce(existing=history)
    assert len(calls) == 2 and healed.steps[0].error is None
    assert healed.steps[0].touched and healed.pruned == []
    # Without a backoff a failing compressor is tried on every reduce.
    failing[0] = True
    calls.clear()
    eager = reducer_for(
        [Compress(compressor, keep_last=1, retry_backoff=0), DropOldest()],
        max_tokens=300,
        on_prune_error="keep",
    )
    for _ in range(3):
        eager.reduce(existing=history)
    assert len(calls) == 3


def test_under_raise_a_compressor_in_its_backoff_still_stops_the_reduce() -> None:
    def compressor(messages: list[Any]) -> list[Any]:
        raise ConnectionError("model down")

    hook = Hook()
    step = Compress(compressor, keep_last=1, retry_backoff=30)
    reducer = reducer_for([step, DropOldest()], hook, max_tokens=300, on_prune_error="raise")
    history = tool_chat(4)
    with pytest.raises(StepError):
        reducer.reduce(existing=history)
    with pytest.raises(StepError):
        reducer.reduce(existing=history)
    assert hook.got == []


def test_clear_tool_outputs_leaves_outputs_shorter_than_its_placeholder() -> None:
    """Clearing "3" with a 40-character placeholder would grow the list and hand the
    output over for nothing (it did before this branch)."""
    history = tool_chat(6, output=lambda t: str(t))
    hook = Hook()
    step = ClearToolOutputs(keep_last=1)
    reducer = reducer_for([step, DropOldest()], hook, max_tokens=60)
    result = reducer.reduce(existing=history)
    assert result.steps[0].touched == [] and result.rewritten == []
    assert result.steps[0].tokens_after == result.steps[0].tokens_before
    assert hook.got == result.pruned
    long = tool_chat(6)
    cleared = reducer_for([step, DropOldest()], max_tokens=300).reduce(existing=long)
    assert len(cleared.steps[0].touched) > 0


# -- SelectRelevant ------------------------------------------------------------------

CODE = "QX-4471"
TOPICS = [
    "the weather in Lisbon",
    "a recipe for lentil soup",
    "how tides work",
    "the rules of chess",
    "a haiku about autumn",
    "the history of the printing press",
    "tips for running a marathon",
    "how vaccines train immunity",
    "the plot of Hamlet",
    "why the sky is blue",
]
QUESTION = "What was my booking code for the Oslo flight?"


def long_chat(question: str = QUESTION) -> list[dict[str, Any]]:
    """The booking code is given in the first turn; ten unrelated turns follow, then the
    question that needs it."""
    out: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a travel assistant.", "id": "sys"},
        {
            "role": "user",
            "content": f"My booking code is {CODE} for the flight to Oslo.",
            "id": "u0",
        },
        {"role": "assistant", "content": f"Noted: booking {CODE}, flight to Oslo.", "id": "r0"},
    ]
    for n, topic in enumerate(TOPICS, start=1):
        out.append({"role": "user", "content": f"Tell me about {topic}.", "id": f"u{n}"})
        answer = f"About {topic}: " + "more detail follows here. " * 20
        out.append({"role": "assistant", "content": answer, "id": f"r{n}"})
    out.append({"role": "user", "content": question, "id": "q"})
    return out


def has_code(messages: Sequence[Any]) -> bool:
    return any(CODE in str(m["content"]) for m in messages if m["id"] in ("u0", "r0"))


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("mode", ["tokens", "count"])
def test_select_relevant_keeps_the_turn_that_holds_the_answer(how: str, mode: str) -> None:
    history = long_chat()
    limits: dict[str, Any] = (
        {"max_tokens": 400} if mode == "tokens" else {"max_messages": 10, "min_messages": 8}
    )
    relevant = reducer_for([SelectRelevant(), DropOldest()], **limits)
    recency = reducer_for([DropOldest()], **limits)
    result = run(relevant, how, history)
    plain = run(recency, how, history)
    assert has_code(result.surviving) and not has_code(plain.surviving)
    assert result.surviving[0]["id"] == "sys" and result.surviving[-1]["id"] == "q"
    if mode == "tokens":
        assert result.tokens_after == tokens_of(relevant, result.surviving) <= 400
    else:
        assert len(result.surviving) <= 10
    # Whole turns: a kept question keeps its answer.
    kept = set(ids(result.surviving))
    assert all((f"u{n}" in kept) == (f"r{n}" in kept) for n in range(len(TOPICS) + 1))
    assert pairing_problems(result.surviving) == []


def test_the_default_scorer_ranks_by_shared_terms() -> None:
    scorer = LexicalScorer()
    texts = [m["content"] for m in long_chat()[1:-1] if m["role"] == "user"]
    scores = scorer.rank(QUESTION, texts)
    assert scores.index(max(scores)) == 0 and scores[0] > 0
    assert scorer(QUESTION, "completely unrelated words") == 0.0


@dataclass
class WordOverlap:
    """A user scorer: the share of the query's words found in the text."""

    calls: list[tuple[str, str]] = field(default_factory=list)

    def words(self, text: str) -> set[str]:
        return {w.strip(".,?:").lower() for w in text.split()} - {""}

    def share(self, query: str, text: str) -> float:
        wanted = self.words(query)
        return len(wanted & self.words(text)) / len(wanted)

    def score(self, query: str, text: str) -> float:
        self.calls.append((query, text))
        return self.share(query, text)


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("kind", ["sync", "async"])
def test_select_relevant_uses_a_user_scorer(how: str, kind: str) -> None:
    overlap = WordOverlap()
    loops: list[Any] = []

    async def ascore(query: str, text: str) -> float:
        loops.append(asyncio.get_running_loop())
        return overlap.score(query, text)

    scorer: Any = overlap.score if kind == "sync" else ascore
    # Asking about chess: the scorer, not recency nor the code, decides what stays.
    history = long_chat("Remind me of the rules of chess you told me.")
    reducer = reducer_for([SelectRelevant(scorer=scorer), DropOldest()], max_tokens=400)
    result = run(reducer, how, history)
    older = history[1:-1]
    assert len(overlap.calls) == len(TOPICS) + 1
    assert {q for q, _ in overlap.calls} == {history[-1]["content"]}
    texts = [t for _, t in overlap.calls]
    assert texts == [
        f"{a['content']}\n{b['content']}" for a, b in zip(older[::2], older[1::2], strict=True)
    ]
    query = history[-1]["content"]
    best = max(range(len(texts)), key=lambda i: (overlap.share(query, texts[i]), i))
    assert f"u{best}" in ids(result.surviving) and "chess" in texts[best]
    assert result.tokens_after <= 400
    if kind == "async" and how == "areduce":
        assert loops and len(set(map(id, loops))) == 1, "awaited on the caller's loop"


class BagOfWords(Embeddings):
    """A deterministic embedding: counts of each word hashed into a few dimensions."""

    def __init__(self, dimensions: int = 64) -> None:
        self.dimensions = dimensions
        self.documents: list[list[str]] = []
        self.queries: list[str] = []

    def vector(self, text: str) -> list[float]:
        out = [0.0] * self.dimensions
        for word in text.lower().split():
            word = word.strip(".,?:!")
            if len(word) > 3:
                out[sum(map(ord, word)) % self.dimensions] += 1.0
        return out

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.documents.append(list(texts))
        return [self.vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        self.queries.append(text)
        return self.vector(text)


@pytest.mark.parametrize("how", HOWS)
def test_select_relevant_with_embeddings_remembers_vectors(how: str) -> None:
    embeddings = BagOfWords()
    step = SelectRelevant(embeddings=embeddings)
    reducer = reducer_for([step, DropOldest()], max_tokens=400)
    history = long_chat()
    first = run(reducer, how, history)
    assert has_code(first.surviving) and first.tokens_after <= 400
    assert len(embeddings.documents) == 1 and len(embeddings.documents[0]) == len(TOPICS) + 1
    assert embeddings.queries == [QUESTION]
    # The next turn: the question and its answer become an older turn, a new one is asked.
    answer = {"role": "assistant", "content": f"Your code is {CODE}. " + "Safe trip! " * 40}
    answer["id"] = "rq"
    follow = {"role": "user", "content": f"Is {CODE} valid for the Oslo flight?", "id": "q2"}
    second = run(reducer, how, first.surviving, [answer, follow])
    assert has_code(second.surviving)
    assert len(embeddings.documents) == 2
    [new_texts] = embeddings.documents[1:]
    assert new_texts == [f"{QUESTION}\n{answer['content']}"], "only the new turn is embedded"
    seen = [t for batch in embeddings.documents for t in batch]
    assert len(seen) == len(set(seen))


def test_select_relevant_keeps_the_newest_turns_and_tool_pairs() -> None:
    """keep_groups newest turns stay whole even when irrelevant; an older turn's tool
    calls go or stay with it."""
    history = tool_chat(6)
    history[1] = {**history[1], "content": "The password is swordfish."}
    history.append({"role": "user", "content": "What was the password?", "id": "q"})
    for keep in (1, 2, 3):
        reducer = reducer_for([SelectRelevant(keep_groups=keep), DropOldest()], max_tokens=700)
        result = reducer.reduce(existing=history)
        kept = set(ids(result.surviving))
        newest = [m["id"] for m in history if m["role"] == "user"][-keep:]
        start = ids(history).index(newest[0])
        assert set(ids(history[start:])) <= kept
        assert "q0" in kept and "swordfish" in result.surviving[1]["content"]
        assert pairing_problems(result.surviving) == []
        for t in range(6):
            members = {f"q{t}", f"a{t}", f"t{t}a", f"t{t}b", f"b{t}"}
            assert members <= kept or not members & kept
        assert result.tokens_after <= 700 and result.pruned


def test_select_relevant_summarizes_what_it_drops() -> None:
    summarized: list[list[str]] = []

    def summarize(messages: list[Any]) -> str:
        summarized.append([m["id"] for m in messages])
        return "small talk about several topics"

    reducer = reducer_for(
        [SelectRelevant(summarize=True), Summarize()], max_tokens=400, summarize_fn=summarize
    )
    result = reducer.reduce(existing=long_chat())
    assert has_code(result.surviving) and result.summary == "small talk about several topics"
    assert summarized and set(summarized[0]) == set(ids(result.pruned[: len(summarized[0])]))
    assert "u0" not in summarized[0]


def test_a_scorer_that_returns_no_number_is_a_step_error() -> None:
    reducer = reducer_for([SelectRelevant(scorer=lambda q, t: "high"), DropOldest()])
    with pytest.raises(StepError, match="must return a number") as raised:
        reducer.reduce(existing=long_chat())
    assert isinstance(raised.value.__cause__, TypeError)
    kept = reducer.reduce(existing=long_chat(), on_prune_error="keep")
    assert kept.steps[0].error is not None and kept.pruned


def test_select_relevant_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match=r"SelectRelevant\.keep_groups"):
        SelectRelevant(keep_groups=0)
    with pytest.raises(TypeError, match=r"SelectRelevant\.scorer"):
        SelectRelevant(scorer="bm25")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"SelectRelevant\.embeddings"):
        SelectRelevant(embeddings=object())
    with pytest.raises(TypeError, match=r"SelectRelevant\.summarize"):
        SelectRelevant(summarize="yes")  # type: ignore[arg-type]


# -- view ------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["view", "aview"])
def test_view_runs_the_policy_on_a_copy(how: str) -> None:
    """The model's list is bounded (cleared, compressed, dropped) while nothing is
    summarised, handed over, or changed in the stored list."""
    history = tool_chat(6)
    snapshot = [dict(m) for m in history]
    hook = Hook()
    summaries: list[Any] = []
    compressor = Shortener()
    policy = [ClearToolOutputs(keep_last=4), Compress(compressor, keep_last=1), Summarize()]
    reducer = reducer_for(
        policy, hook, max_tokens=200, summarize_fn=lambda ms: summaries.append(ms) or "s"
    )
    result = reducer.view(history) if how == "view" else asyncio.run(reducer.aview(history))
    assert hook.got == [] and summaries == [] and result.summary is None
    assert history == snapshot
    assert [r.step for r in result.steps] == ["clear_tool_outputs", "compress", "summarize"]
    assert result.pruned and result.tokens_after <= 200
    assert result.tokens_after == tokens_of(reducer, result.surviving)
    assert not any(str(m.get("content", "")).startswith("Summary") for m in result.surviving)
    # Viewing again asks the compressor nothing new; a reduce would now hand over.
    before = list(compressor.given)
    reducer.view(history)
    assert compressor.given == before
    reducer.reduce(existing=history)
    assert hook.got and summaries


# -- invariants, over random conversations -------------------------------------------


def counted(message: Any) -> int:
    """A deterministic counter for every shape (content length, plus one)."""
    from agentstate_reducer.messages import content_of

    content = content_of(message)
    return 1 + len(content if isinstance(content, str) else "") // 3


def halve(messages: list[Any]) -> list[Any]:
    """A deterministic shortening compressor: the first half of the text."""
    from agentstate_reducer.messages import content_of

    out: list[Any] = []
    for m in messages:
        content = content_of(m)
        out.append(content[: len(content) // 2] if isinstance(content, str) else None)
    return out


@st.composite
def step_reducers(draw: st.DrawFn) -> MessageReducer:
    """Token-mode reducers whose policy mixes Compress, SelectRelevant and a custom step,
    always ending with DropOldest."""
    middle: list[ReductionStep] = []
    if draw(st.booleans()):
        roles = draw(st.sampled_from([("tool",), ("tool", "ai"), ("human", "ai", "tool")]))
        middle.append(Compress(halve, roles=roles, keep_last=draw(st.integers(0, 3))))
    if draw(st.booleans()):
        middle.append(KeepNewestToolGroups(keep=draw(st.integers(0, 2))))
    if draw(st.booleans()):
        middle.append(SelectRelevant(keep_groups=draw(st.integers(1, 3))))
    middle = draw(st.permutations(middle))
    max_tokens = draw(st.integers(1, 120))
    return MessageReducer(
        config=ReducerConfig(
            max_tokens=max_tokens,
            target_tokens=draw(st.integers(1, max_tokens)),
            token_counter=counted,
            preserve_first=draw(st.booleans()),
            policy=[*middle, DropOldest()],
            on_prune=[Hook()],
            handoff=Handoff(dedupe=False),
        )
    )


def hook_of(reducer: MessageReducer) -> Hook:
    [hook] = reducer.config.on_prune
    assert isinstance(hook, Hook)
    return hook


def newest_human(records: list[Msg]) -> int | None:
    humans = [i for i, m in enumerate(records) if m.role == "human"]
    return humans[-1] if humans else None


@EXAMPLES
@given(conversations(), shapes, step_reducers())
def test_step_policies_keep_the_reducer_invariants(
    records: list[Msg], shape: str, reducer: MessageReducer
) -> None:
    """No orphan result or dangling call; the question stays; every input message is
    surviving, pruned or a rewritten original, once; each that left reached the hook once;
    the target is met whenever the plain plan meets it."""
    messages = rendered(records, shape)
    result = reducer.reduce(existing=messages)
    if not pairing_problems(messages):
        assert pairing_problems(result.surviving) == []
    assert len(pairing_problems(result.surviving)) <= len(pairing_problems(messages))
    question = newest_human(records)
    if question is not None:
        assert any(m is messages[question] for m in result.surviving)
    given_ids = {id(m): i for i, m in enumerate(messages)}
    kept = [given_ids[id(m)] for m in result.surviving if id(m) in given_ids]
    gone = [given_ids[id(m)] for m in result.pruned]
    rewritten = [given_ids[id(m)] for m in result.rewritten]
    assert sorted(kept + gone + rewritten) == list(range(len(messages)))
    assert len(result.surviving) == len(kept) + len(rewritten), "a rewrite per original"
    assert kept == sorted(kept)
    delivered = hook_of(reducer).got
    assert sorted(given_ids[id(m)] for m in delivered) == sorted(gone + rewritten)
    assert result.tokens_after == sum(counted(m) for m in result.surviving)
    target = reducer.config.effective_target_tokens
    assert target is not None
    plain = MessageReducer(
        config=ReducerConfig(
            max_tokens=reducer.config.max_tokens,
            target_tokens=target,
            token_counter=counted,
            preserve_first=reducer.config.preserve_first,
        )
    ).plan(messages)
    if sum(counted(m) for m in plain.surviving) <= target:
        assert result.tokens_after <= target


@EXAMPLES
@given(conversations(max_turns=10), shapes, step_reducers(), st.data())
def test_across_reduces_every_message_reaches_the_hook_at_most_once(
    records: list[Msg], shape: str, reducer: MessageReducer, data: st.DataObject
) -> None:
    """A chat reduced as it grows: every message given that is not in the final list was
    handed over exactly once, as given; no compressed version is ever handed over."""
    note(f"policy: {reducer.steps}")
    messages = rendered(records, shape)
    # Cuts anywhere, also while a call waits for its results: no step may drop it then
    # (see test_drop_of_a_pending_call_orphans_its_results), so once the results are in,
    # a history that pairs up still pairs up.
    cuts = sorted(data.draw(st.lists(st.integers(0, len(messages)), max_size=3)))
    stored: list[Any] = []
    at = 0
    for cut in [*cuts, len(messages)]:
        stored = reducer.reduce(existing=stored, new=messages[at:cut]).surviving
        at = cut
    if not pairing_problems(messages):
        assert pairing_problems(stored) == []
    delivered = hook_of(reducer).got
    given_ids = {id(m) for m in messages}
    assert all(id(m) in given_ids for m in delivered), "only originals are handed over"
    assert once_each(delivered)
    final = {id(m) for m in stored}
    assert {id(m) for m in delivered} == given_ids - final


@EXAMPLES
@given(conversations(), shapes, st.integers(1, 120), st.data())
def test_truncate_never_cuts_instructions_or_the_question(
    records: list[Msg], shape: str, max_tokens: int, data: st.DataObject
) -> None:
    """Whatever TruncateLargest cuts, it is never a system/developer message nor the
    newest human message; the original of what it cut is handed over."""
    reducer = MessageReducer(
        config=ReducerConfig(
            max_tokens=max_tokens,
            token_counter=counted,
            policy=[DropOldest(), TruncateLargest()],
            on_prune=[Hook()],
            handoff=Handoff(dedupe=False),
        )
    )
    messages = rendered(records, shape)
    result = reducer.reduce(existing=messages)
    question = newest_human(records)
    by_id = {id(m): i for i, m in enumerate(messages)}
    for original in result.rewritten:
        position = by_id[id(original)]
        assert records[position].role not in ("system", "developer")
        assert position != question
    assert sorted(map(id, hook_of(reducer).got)) == sorted(
        map(id, [*result.pruned, *result.rewritten])
    )


# -- what the review of the protocol found -------------------------------------------


def test_a_step_cannot_change_the_list_behind_the_context() -> None:
    """``messages`` and ``tokens`` are read-only views: removing a message without
    ``drop`` would keep it from the hooks."""

    class Popper(ReductionStep):
        id = "popper"

        def apply(self, context: StepContext) -> list[Any]:
            context.messages.pop(1)  # type: ignore[attr-defined]
            return []

    with pytest.raises(AttributeError):
        reducer_for([Popper(), DropOldest()], max_tokens=60).reduce(existing=tool_chat(3))

    class Writer(ReductionStep):
        id = "writer"

        def apply(self, context: StepContext) -> list[Any]:
            context.messages[1] = {"role": "user", "content": "x"}  # type: ignore[index]
            return []

    with pytest.raises(TypeError):
        reducer_for([Writer(), DropOldest()], max_tokens=60).reduce(existing=tool_chat(3))


class Shorten(ReductionStep):
    """A rewriting step with no ``rewrote()`` of its own: the context remembers its
    rewrites, so an original reaches the hooks once and its rewrite never does."""

    id = "shorten"
    prunes = False

    def apply(self, context: StepContext) -> list[Any]:
        touched = []
        for position, message in enumerate(context.messages):
            if context.role(position) != "tool":
                continue
            content = message["content"]
            if not content.startswith("[short]"):
                shorter = {**message, "content": "[short] " + content[:5]}
                context.replace(position, shorter)
                touched.append(shorter)
        return touched


def test_a_custom_rewrite_is_not_handed_over_again_when_it_leaves() -> None:
    hook = Hook()
    history = tool_chat(8)
    reducer = reducer_for([Shorten(), DropOldest()], hook, max_tokens=80)
    stored: list[Any] = []
    for turn in range(0, len(history), 4):
        stored = reducer.reduce(existing=stored, new=history[turn : turn + 4]).surviving
    assert once_each(hook.got)
    assert all(not str(m["content"]).startswith("[short]") for m in hook.got), "no rewrite"
    given = {id(m) for m in history}
    assert {id(m) for m in hook.got} <= given
    # Every tool output that left, as text or as a message, reached the hook as given.
    shortened = {m["id"] for m in stored if str(m["content"]).startswith("[short]")}
    left = {m["id"] for m in history} - {m["id"] for m in stored}
    handed = [m["id"] for m in hook.got]
    tools = {m["id"] for m in history if m["role"] == "tool"}
    assert (left | (shortened & tools)) == set(handed)


def test_the_rewrite_memory_is_per_conversation() -> None:
    """The same rewrite in another conversation (ids reused) is that conversation's
    original: it is handed over there."""
    hook = Hook()
    history = tool_chat(3)
    total = sum(MessageReducer().count_tokens(m) for m in history)
    reducer = reducer_for([Shorten(), DropOldest()], hook, max_tokens=total - 1)
    first = reducer.reduce(existing=history, namespace=("memories", "a"))
    assert [r.step for r in first.steps] == ["shorten"]
    rewrite = next(m for m in first.surviving if str(m["content"]).startswith("[short]"))
    other = [rewrite if m["id"] == rewrite["id"] else m for m in history]
    hook.got.clear()
    small = reducer_for([DropOldest()], hook, max_tokens=5)
    small.rewrites.add(rewrite, ("memories", "a"))  # as if this reducer had made it there
    small.reduce(existing=other, namespace=("memories", "b"))
    assert rewrite in hook.got


@pytest.mark.parametrize(
    ("block", "words"),
    [
        ([{"role": "tool", "tool_call_id": "zz", "content": "x"}], "orphan|answers no"),
        (
            [
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "zz",
                            "type": "function",
                            "function": {"name": "f", "arguments": "{}"},
                        }
                    ],
                }
            ],
            "zz",
        ),
    ],
)
def test_an_inserted_block_must_pair_up_by_itself(block: list[Any], words: str) -> None:
    reducer = reducer_for([Edit(lambda c: c.insert(1, block))], max_tokens=60)
    with pytest.raises(ValueError, match=rf"pair its tool calls.*|{words}"):
        reducer.reduce(existing=tool_chat(3))


def test_nothing_is_inserted_after_the_question() -> None:
    note = {"role": "assistant", "content": "a note"}
    history = [*tool_chat(3), {"role": "user", "content": "and now?", "id": "q"}]
    at_end = reducer_for([Edit(lambda c: c.insert(len(c.messages), [note]))], max_tokens=60)
    with pytest.raises(ValueError, match="after the newest human message"):
        at_end.reduce(existing=history)
    before = reducer_for([Edit(lambda c: c.insert(len(c.messages) - 1, [note]))], max_tokens=60)
    assert note in before.reduce(existing=history).surviving


def test_select_relevant_with_a_summary_keeps_room_for_the_block() -> None:
    """Summarising what it drops, the step leaves the summary's room free, so the reduce
    does not make room by dropping the turn it chose to keep."""
    calls: list[int] = []

    def summarize(messages: list[Any]) -> str:
        calls.append(len(messages))
        return "The user asked about many topics."

    history = long_chat()
    budget = MessageReducer().count_tokens(history[1]) * 2 + 200
    reducer = MessageReducer(
        config=ReducerConfig(
            max_tokens=budget,
            summarize_fn=summarize,
            inject_summary=True,
            summary_max_tokens=30,
            start_on_human=True,
            policy=[SelectRelevant(summarize=True), DropOldest()],
        )
    )
    result = reducer.reduce(existing=history)
    assert has_code(result.surviving)
    assert len(calls) == 1 and result.tokens_after <= budget
    assert reducer.validate(result.surviving).problems == []


def test_a_policy_of_rewriting_steps_only_bounds_nothing_but_is_allowed() -> None:
    """Clearing without pruning is what a view-only context editor does; such a reducer
    rewrites what it can and leaves the list over the budget rather than refuse to run."""
    reducer = MessageReducer(config=ReducerConfig(max_tokens=60, policy=[ClearToolOutputs()]))
    history = tool_chat(6)
    result = reducer.reduce(existing=history)
    assert result.pruned == [] and len(result.surviving) == len(history)
    assert result.rewritten and result.tokens_after < result.tokens_before


def test_a_truncation_marker_with_an_unknown_field_is_refused_when_built() -> None:
    with pytest.raises(ValueError, match=r"TruncateLargest\.marker.*\{removed\}"):
        TruncateLargest(marker=" [cut {removed} {other}]")
    assert TruncateLargest(marker=" [cut {removed} of {{many}}]").marker


def test_numpy_scores_are_numbers_and_mismatched_vectors_are_refused() -> None:
    numpy = pytest.importorskip("numpy")

    def scorer(query: str, text: str) -> Any:
        return numpy.float32(1.0 if CODE in text else 0.0)

    history = long_chat()
    budget = MessageReducer().count_tokens(history[1]) * 2 + 200
    kept = reducer_for([SelectRelevant(scorer=scorer), DropOldest()], max_tokens=budget)
    assert has_code(kept.reduce(existing=history).surviving)

    class Mismatched(BagOfWords):
        def embed_query(self, text: str) -> list[float]:
            return [1.0, 0.0]

    step = SelectRelevant(embeddings=Mismatched())
    with pytest.raises(StepError, match="dimensions"):
        reducer_for([step, DropOldest()], max_tokens=budget).reduce(
            existing=history, on_prune_error="raise"
        )


def test_the_hooks_get_what_left_in_list_order_when_two_steps_prune() -> None:
    """As ``result.pruned``: the README's custom-step example compares the two."""
    hook = Hook()
    history = tool_chat(4)
    reducer = reducer_for([KeepNewestToolGroups(keep=1), DropOldest()], hook, max_tokens=30)
    result = reducer.reduce(existing=history)
    assert [r.step for r in result.steps] == ["keep_newest_tool_groups", "drop_oldest"]
    assert hook.got == result.pruned
    order = ids(history)
    assert [order.index(i) for i in ids(hook.got)] == sorted(order.index(i) for i in ids(hook.got))


def test_a_marker_whose_field_is_indexed_is_refused_when_built() -> None:
    with pytest.raises(ValueError, match=r"TruncateLargest\.marker"):
        TruncateLargest(marker=" [cut {removed[0]}]")


def test_compress_shortens_legacy_function_results_by_default() -> None:
    history: list[Any] = [{"role": "system", "content": "sys", "id": "sys"}]
    for n in range(4):
        call = {"name": "weather", "arguments": "{}"}
        history += [
            {"role": "user", "content": f"q{n}", "id": f"q{n}"},
            {"role": "assistant", "content": None, "function_call": call, "id": f"a{n}"},
            {"role": "function", "name": "weather", "content": "sunny " * 80, "id": f"f{n}"},
        ]
    step = Compress(Shortener(keep=5), keep_last=1)
    total = sum(MessageReducer().count_tokens(m) for m in history)
    result = reducer_for([step, DropOldest()], max_tokens=total - 1).reduce(existing=history)
    assert [r.step for r in result.steps] == ["compress"]
    assert ids(result.rewritten) == ["f0"]
    assert result.surviving[3]["content"].startswith("gist: ")


class IdlessShorten(ReductionStep):
    """A custom step that rewrites tool outputs with new messages that carry no id."""

    id = "idless_shorten"
    prunes = False

    def apply(self, context: StepContext) -> list[Any]:
        touched = []
        for position, message in enumerate(context.messages):
            if context.role(position) == "tool" and not message["content"].startswith("["):
                shorter = {
                    "role": "tool",
                    "tool_call_id": message["tool_call_id"],
                    "content": "[short] " + message["content"][:5],
                }
                context.replace(position, shorter)
                touched.append(shorter)
        return touched


@pytest.mark.parametrize("how", HOWS)
def test_an_id_less_replacement_takes_the_id_of_the_message_it_replaces(how: str) -> None:
    """A custom step's context.replace with an id-less message: the list holds it with the
    replaced message's id (in its own shape), so the next reduce of the stored list knows
    it as a rewrite and hands over nothing twice; the hook got the originals once."""
    hook = Hook()
    history = tool_chat(4)
    total = tokens_of(MessageReducer(), history)
    reducer = reducer_for([IdlessShorten(), DropOldest()], hook, max_tokens=total - 1)
    result = run(reducer, how, history)
    rewrites = [m for m in result.surviving if str(m["content"]).startswith("[short]")]
    assert rewrites and all("id" in m for m in rewrites)
    originals = {m["id"]: m for m in history}
    for rewrite in rewrites:
        assert originals[rewrite["id"]]["tool_call_id"] == rewrite["tool_call_id"]
    assert hook.got == [originals[m["id"]] for m in rewrites]
    hook.got.clear()
    later = run(reducer, how, result.surviving, [{"role": "user", "content": "next " * 2000}])
    assert any(str(m["content"]).startswith("[short]") for m in later.pruned)
    assert not any(str(m["content"]).startswith("[short]") for m in hook.got)


def strip_markup(messages: list[Any]) -> list[str]:
    return [re.sub(r"<[^>]+>", "", m["content"]) for m in messages]


def test_another_users_identical_tool_result_is_that_users_own() -> None:
    """User A's output compressed to "result 3"; user B's tool result says exactly that,
    with the same call id and message id (ids reused across conversations): it is B's
    original, handed to B's hook when it is pruned (before, Compress's memory knew no
    conversation and took it for A's output, so B's memory never got it)."""
    hook = Recorder()

    def message(content: str) -> dict[str, Any]:
        return {"role": "tool", "tool_call_id": "c0a", "content": content, "id": "t0a"}

    def chat(output: str, question: str) -> list[dict[str, Any]]:
        return [
            {"role": "user", "content": "question 0", "id": "q0"},
            {"role": "assistant", "content": None, "tool_calls": [call_of("c0a")], "id": "a0"},
            message(output),
            {"role": "assistant", "content": "answer 0", "id": "b0"},
            {"role": "user", "content": question, "id": "q1"},
        ]

    a_history = chat("result 3 <b>" + "bold " * 40 + "</b>", "question 1")
    reducer = MessageReducer(
        config=ReducerConfig(
            max_tokens=tokens_of(MessageReducer(), a_history) - 1,
            policy=[Compress(strip_markup, keep_last=0), DropOldest()],
            on_prune=[hook],
            preserve_first=False,
        )
    )
    a = reducer.reduce(existing=a_history, namespace="user-a")
    assert a.rewritten and a.surviving[2]["content"] == strip_markup([a_history[2]])[0]
    b_history = chat(a.surviving[2]["content"], "a long question " * 200)
    reducer.reduce(existing=b_history, namespace="user-b")
    assert ("user-b", "t0a") in hook.taken, "user B's own tool result never reached B's hook"


class Recorder:
    """An ``on_prune`` hook recording ``(namespace, id)`` of each message taken."""

    def __init__(self) -> None:
        self.taken: list[tuple[Any, str]] = []

    def __call__(self, messages: list[Any], namespace: Any) -> None:
        self.taken.extend((namespace, m["id"]) for m in messages)
