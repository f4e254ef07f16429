"""Running summaries: part of the bound, folded, marked, deterministic, never leaking."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from agentstate_reducer import Handoff, MessageReducer, ReducerConfig, SummaryError
from agentstate_reducer.messages import SUMMARY_HEADER, content_of, is_summary, role_of
from agentstate_reducer.policy import ClearToolOutputs, Summarize
from agentstate_reducer.summary import mark_summary

from .strategies import Duck, conversations, rendered, shapes
from .test_properties import tokens_of


def chat(n: int, prefix: str = "") -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": "sys"}]
    for i in range(n):
        out.append({"role": "user", "content": f"{prefix}q{i}"})
        out.append({"role": "assistant", "content": f"{prefix}a{i}"})
    return out


def with_ids(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The README's pattern: ids m0, m1, ... (so two conversations reuse the same ids)."""
    return [dict(m, id=f"m{i}") for i, m in enumerate(messages)]


class Summarizer:
    """A summarize_fn that records what it is asked and says what it saw."""

    def __init__(self) -> None:
        self.calls: list[list[Any]] = []

    def __call__(self, messages: list[Any]) -> str:
        self.calls.append(list(messages))
        texts = [str(content_of(m)) for m in messages if not is_summary(m)]
        prior = [m for m in messages if is_summary(m)]
        return ("[+prior] " if prior else "") + " ".join(texts)


def injecting(summarize: Any, **kwargs: Any) -> MessageReducer:
    options: dict[str, Any] = {"min_messages": 4, "max_messages": 6}
    options.update(kwargs)
    return MessageReducer(
        config=ReducerConfig(summarize_fn=summarize, inject_summary=True, **options)
    )


def test_summarize_fn_gets_exactly_the_pruned_messages_once() -> None:
    """Without injection there is nothing to fold: summarize_fn gets the pruned messages,
    and a reduce that prunes nothing calls nothing."""
    summarize = Summarizer()
    reducer = MessageReducer(
        config=ReducerConfig(min_messages=4, max_messages=6, summarize_fn=summarize)
    )
    history = chat(4)
    result = reducer.reduce(existing=history)
    assert len(summarize.calls) == 1
    assert all(a is b for a, b in zip(summarize.calls[0], result.pruned, strict=True))
    assert result.summary == "q0 a0 q1 a1"
    reducer.reduce(existing=history[:5])
    assert len(summarize.calls) == 1, "summarize_fn must not run when nothing is pruned"


def test_the_block_is_one_marked_human_message_and_counts_towards_min_messages() -> None:
    """Count mode: the block is one of the min_messages kept, so the list ends at
    min_messages (plus the kept system prompt), below max_messages."""
    result = injecting(Summarizer()).reduce(existing=chat(5))
    assert len(result.surviving) == 1 + 4
    block = result.summary_messages
    assert len(block) == 1 and result.surviving[1] is block[0]
    assert block[0]["role"] == "user" and block[0]["content"].startswith(SUMMARY_HEADER)
    assert is_summary(block[0]) and "id" not in block[0] and "lc_source" not in block[0], (
        "a plain OpenAI dict list gets a plain OpenAI dict, marked by its header line"
    )


@pytest.mark.parametrize(("low", "high"), [(4, 6), (19, 20), (0, 3), (5, 5)])
def test_reducing_a_reduced_list_prunes_nothing_and_calls_nothing(low: int, high: int) -> None:
    """Turn by turn through one reducer, with min 19 / max 20 too: after every reduce a
    second reduce of the result changes nothing and calls summarize_fn no more."""
    summarize = Summarizer()
    reducer = injecting(summarize, min_messages=low, max_messages=high)
    history: list[Any] = chat(0)
    for turn in range(30):
        history = reducer.reduce(
            existing=history,
            new=[{"role": "user", "content": f"q{turn}"}, {"role": "assistant", "content": "a"}],
        ).surviving
        # Within max_messages, or at the floor: the kept system prompt plus the newest
        # min_messages (the summary one of them), or system, summary and the newest turn.
        assert len(history) <= max(high, 1 + low, 4)
        calls = len(summarize.calls)
        again = reducer.reduce(existing=history)
        assert again.pruned == [] and again.surviving == history
        assert len(summarize.calls) == calls


def test_the_previous_summary_is_folded_into_the_next() -> None:
    """The summarizer receives the block already in the list first, marked as a summary,
    then the newly pruned messages; the new block replaces the old one."""
    summarize = Summarizer()
    reducer = injecting(summarize)
    first = reducer.reduce(existing=chat(5)).surviving
    old_block = first[1]
    second = reducer.reduce(existing=first, new=chat(3, prefix="x")[1:])
    prior, *pruned = summarize.calls[1]
    assert prior is old_block and is_summary(prior)
    assert not any(is_summary(m) for m in pruned)
    assert sum(is_summary(m) for m in second.surviving) == 1
    assert second.surviving[1]["content"].startswith(SUMMARY_HEADER + "[+prior]")
    assert old_block not in second.pruned


def test_summaries_do_not_leak_between_conversations_that_reuse_ids() -> None:
    """Two users through one reducer, with the same ids m0, m1, ... and other words: each
    gets a summary of their own conversation, and summarize_fn runs for both."""
    summarize = Summarizer()
    reducer = injecting(summarize)
    alice = reducer.reduce(existing=with_ids(chat(5, prefix="alice-")), namespace="alice")
    bob = reducer.reduce(existing=with_ids(chat(5, prefix="bob-")), namespace="bob")
    assert len(summarize.calls) == 2
    assert "alice" in alice.summary_messages[0]["content"]
    assert "bob" in bob.summary_messages[0]["content"]
    assert "alice" not in bob.summary_messages[0]["content"]
    # Same ids, no namespace (a channel reducer): content still tells them apart.
    plain = injecting(summarize)
    a = plain.reduce(existing=with_ids(chat(5, prefix="alice-")))
    b = plain.reduce(existing=with_ids(chat(5, prefix="bob-")))
    assert a.summary != b.summary and "bob" in (b.summary or "")


def test_an_edited_message_gets_a_new_summary() -> None:
    """A message replaced by id with corrected content (an edit, a fork) is summarised
    again instead of reusing the stale summary."""
    summarize = Summarizer()
    reducer = injecting(summarize)
    history = with_ids(chat(5))
    reducer.reduce(existing=history, namespace="t")
    edited = list(history)
    edited[1] = dict(history[1], content="q0 (corrected)")
    result = reducer.reduce(existing=edited, namespace="t")
    assert len(summarize.calls) == 2 and "corrected" in (result.summary or "")


def test_a_replayed_reduce_reuses_the_summary_and_its_id() -> None:
    """LangGraph replays writes (get_state, resuming after interrupt()): the same messages
    in the same conversation give the same summary, the same block id, and no new call."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

    summarize = Summarizer()
    reducer = injecting(summarize)
    history = [SystemMessage("s", id="s")] + [
        cls(f"m{i}", id=f"{cls.__name__}{i}") for i in range(5) for cls in (HumanMessage, AIMessage)
    ]
    first = reducer.reduce(existing=history, namespace="t")
    again = reducer.reduce(existing=history, namespace="t")
    fresh = injecting(Summarizer()).reduce(existing=history, namespace="t")
    assert len(summarize.calls) == 1
    ids = [m.id for m in first.summary_messages]
    assert ids == [m.id for m in again.summary_messages] == [m.id for m in fresh.summary_messages]
    assert ids[0].startswith("summary-")


def test_blocks_keep_the_lists_kind_and_carry_the_marker() -> None:
    """LangChain lists get a HumanMessage with LangChain's own marker; LangChain-shaped
    dicts and the serialised form keep their shape, with the marker where LangChain
    reads it."""
    from langchain_core.messages import (
        AIMessage,
        HumanMessage,
        SystemMessage,
        convert_to_messages,
        messages_from_dict,
        messages_to_dict,
    )

    history = [SystemMessage("s")] + [
        cls(f"m{i}") for i in range(6) for cls in (HumanMessage, AIMessage)
    ]
    (block,) = injecting(Summarizer()).reduce(existing=history).summary_messages
    assert type(block) is HumanMessage
    assert block.additional_kwargs == {"lc_source": "summarization"}

    typed = [
        {"type": "human" if i % 2 == 0 else "ai", "content": str(i), "id": f"i{i}"}
        for i in range(9)
    ]
    (made,) = injecting(Summarizer()).reduce(existing=typed).summary_messages
    assert made["type"] == "human" and made["id"].startswith("summary-")
    converted = convert_to_messages([made])[0]
    assert converted.additional_kwargs["lc_source"] == "summarization"

    serial = messages_to_dict([HumanMessage("a"), AIMessage("b")] * 5)
    (stored,) = injecting(Summarizer()).reduce(existing=serial).summary_messages
    (loaded,) = messages_from_dict([stored])
    assert type(loaded) is HumanMessage and loaded.additional_kwargs["lc_source"] == (
        "summarization"
    )


def test_langchains_own_summary_is_folded_like_ours() -> None:
    """A summary LangChain's SummarizationMiddleware left in the list is recognised by its
    marker and folded, not pruned as an ordinary message."""
    from langchain_core.messages import AIMessage, HumanMessage

    theirs = HumanMessage("Here is a summary...", additional_kwargs={"lc_source": "summarization"})
    history = [theirs] + [cls(f"m{i}") for i in range(6) for cls in (HumanMessage, AIMessage)]
    summarize = Summarizer()
    result = injecting(summarize, preserve_first=False).reduce(existing=history)
    assert summarize.calls[0][0] is theirs
    assert result.folded_summaries == [theirs] and theirs not in result.pruned


def test_duck_lists_need_a_factory_whose_messages_are_marked() -> None:
    ducks = [Duck(type="human" if i % 2 else "ai", content=str(i)) for i in range(9)]
    with pytest.raises(TypeError, match="pass summary_message_factory"):
        injecting(Summarizer()).reduce(existing=ducks)

    class Marked(Duck):
        additional_kwargs: dict[str, Any]

    def factory(text: str, count: int) -> list[Any]:
        made = Marked(type="human", content=text)
        made.additional_kwargs = {"lc_source": "summarization"}
        return [made]

    result = injecting(Summarizer(), summary_message_factory=factory).reduce(existing=ducks)
    assert is_summary(result.summary_messages[0])
    unmarked = injecting(
        Summarizer(), summary_message_factory=lambda t, n: [Duck(type="human", content=t)]
    )
    with pytest.raises(TypeError, match="cannot mark a Duck as a summary"):
        unmarked.reduce(existing=ducks)


def test_a_dict_factory_is_marked_for_it() -> None:
    """A factory returning plain dicts gets them marked (and counted towards the bound)."""
    reducer = injecting(
        Summarizer(), summary_message_factory=lambda text, n: [{"role": "user", "content": text}]
    )
    result = reducer.reduce(existing=chat(5))
    assert result.summary_messages == [mark_summary({"role": "user", "content": result.summary})]
    assert reducer.reduce(existing=result.surviving).pruned == []


def test_summary_failure_prunes_nothing_and_says_why() -> None:
    def broken(messages: list[Any]) -> str:
        raise RuntimeError("model down")

    history = chat(3)
    reducer = injecting(broken, min_messages=2, max_messages=3)
    with pytest.raises(SummaryError, match="model down; nothing was pruned") as info:
        reducer.reduce(existing=history)
    assert info.value.pruned and all(m in history for m in info.value.pruned)
    kept = reducer.reduce(existing=history, on_prune_error="keep")
    assert kept.surviving == history and isinstance(kept.summary_error, SummaryError)


def test_a_summarizer_with_nothing_to_say_keeps_the_old_summary() -> None:
    """summarize_fn returning None injects nothing new, and the block already in the list
    stays (nothing it summarised is lost)."""
    answers = iter(["first", None])
    reducer = injecting(lambda messages: next(answers))
    first = reducer.reduce(existing=chat(5)).surviving
    second = reducer.reduce(existing=first, new=chat(3, prefix="x")[1:])
    assert first[1] in second.surviving and second.summary_messages == []


def test_a_summarize_fn_no_step_calls_is_refused() -> None:
    """A policy without a summarising step would never call summarize_fn: say so."""
    from agentstate_reducer.policy import DropOldest

    with pytest.raises(ValueError, match="no step of the policy summarises"):
        ReducerConfig(max_tokens=50, summarize_fn=Summarizer(), policy=[DropOldest()])
    ReducerConfig(max_tokens=50, summarize_fn=Summarizer(), policy=[Summarize()])


def test_cleared_text_reaches_the_summarizer_as_it_was() -> None:
    """A tool output cleared and then pruned in the same reduce is summarised (and listed
    in result.pruned) with its original text, never the placeholder."""
    call = {"id": "c1", "type": "function", "function": {"name": "search", "arguments": "{}"}}
    history = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "find it"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "the secret is 42 " * 20},
        {"role": "assistant", "content": "found"},
        {"role": "user", "content": "thanks " * 30},
    ]
    summarize = Summarizer()
    reducer = MessageReducer(
        config=ReducerConfig(
            max_tokens=60,
            token_counter=tokens_of,
            summarize_fn=summarize,
            inject_summary=True,
            summary_max_tokens=8,
            policy=[ClearToolOutputs(keep_last=0), Summarize()],
        )
    )
    result = reducer.reduce(existing=history)
    tool = next(m for m in result.pruned if m["role"] == "tool")
    assert tool is history[3], "result.pruned holds the message as it was given"
    assert "secret is 42" in " ".join(str(content_of(m)) for m in summarize.calls[0])


@settings(max_examples=150, deadline=None)
@given(conversations(max_turns=10), shapes.filter(lambda s: s != "duck"), st.data())
def test_with_summaries_the_bound_holds_every_turn_and_a_second_reduce_is_a_no_op(
    records: Any, shape: str, data: st.DataObject
) -> None:
    """Turn by turn, count or token mode: after every reduce the list is within the bound
    (or nothing more can be pruned: pinned messages, the newest turn), holds exactly one
    summary block once something was summarised, never directly before a system or
    developer message, and reducing it again prunes nothing and calls summarize_fn no
    more."""
    summarize = Summarizer()
    if data.draw(st.booleans(), label="token mode"):
        high = data.draw(st.integers(15, 120), label="max_tokens")
        config = ReducerConfig(
            max_tokens=high,
            target_tokens=data.draw(st.integers(10, high), label="target"),
            token_counter=tokens_of,
            summarize_fn=lambda m: summarize(m)[:20],
            inject_summary=True,
            summary_max_tokens=10,
        )
    else:
        high = data.draw(st.integers(2, 12), label="max_messages")
        config = ReducerConfig(
            min_messages=data.draw(st.integers(0, high), label="min_messages"),
            max_messages=high,
            summarize_fn=summarize,
            inject_summary=True,
        )
    reducer = MessageReducer(config=config)
    judge = MessageReducer(config=replace(config, summarize_fn=None, inject_summary=False))
    messages = rendered(records, shape)
    history: list[Any] = []
    summarised = False
    for message in messages:
        result = reducer.reduce(existing=history, new=[message])
        history = result.surviving
        summarised = summarised or bool(result.summary_messages)
        assert sum(is_summary(m) for m in history) == (1 if summarised else 0)
        if result.summary_messages:
            after = history.index(result.summary_messages[-1]) + 1
            assert after == len(history) or role_of(history[after]) not in ("system", "developer")
        over = any(p.kind == "over_budget" for p in judge.validate(history).problems)
        assert not (over and judge.plan(history).pruned), "over the bound, prunable left"
        calls = len(summarize.calls)
        again = reducer.reduce(existing=history)
        assert again.pruned == [] and [id(m) for m in again.surviving] == [id(m) for m in history]
        assert len(summarize.calls) == calls


def test_a_failing_summarizer_is_left_alone_for_a_while() -> None:
    """An LLM that is down is called once per wait (retry_backoff, doubling), not on every
    reduce: in keep mode each reduce meanwhile keeps every message at once, without the
    failing call's latency; after the wait it is tried again."""
    calls: list[int] = []
    up = {"yes": False}

    def summarize(messages: list[Any]) -> str:
        calls.append(len(messages))
        if not up["yes"]:
            raise TimeoutError("model timed out")
        return "gist"

    reducer = injecting(summarize, handoff=Handoff(retry_backoff=0.3, on_error="keep"))
    history = chat(5)
    for _ in range(5):
        result = reducer.reduce(existing=history)
        assert result.summary_error is not None and result.surviving == history
    assert len(calls) == 1
    assert result.summary_error.waiting, "the later reduces did not call it at all"
    up["yes"] = True
    time.sleep(0.35)
    assert reducer.reduce(existing=history).summary == "gist" and len(calls) == 2


def test_a_summary_block_anywhere_in_the_list_is_folded() -> None:
    """A block that sits after the newest question (merged in from elsewhere) is folded
    into the next summary too: the list keeps one block, right after the first message."""
    from langchain_core.messages import AIMessage, HumanMessage

    summarize = Summarizer()
    reducer = injecting(summarize, min_messages=3, max_messages=5)
    first = reducer.reduce([HumanMessage(f"q{n}", id=f"q{n}") for n in range(6)]).surviving
    block = next(m for m in first if is_summary(m))
    moved = [
        HumanMessage("q0", id="q0"),
        *[HumanMessage(f"x{n}", id=f"x{n}") for n in range(4)],
        HumanMessage("last", id="last"),
        block,
        AIMessage("a", id="a"),
    ]
    result = reducer.reduce(moved)
    assert [i for i, m in enumerate(result.surviving) if is_summary(m)] == [1]
    assert result.folded_summaries == [block] and summarize.calls[-1][0] is block


def _merge_by_id(base: list[dict[str, Any]], update: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``add_messages``' merge for dicts: an id already there is replaced, a new one appended."""
    merged = list(base)
    where = {m["id"]: i for i, m in enumerate(merged)}
    for message in update:
        if message["id"] in where:
            merged[where[message["id"]]] = message
        else:
            where[message["id"]] = len(merged)
            merged.append(message)
    return merged


def _sibling_put(
    summarize: Callable[[list[Any]], str],
) -> Callable[[list[dict[str, Any]]], list[dict[str, Any]]]:
    """The put of the sibling-list models: one reducer (3..5 messages, a running summary
    by ``summarize``) reducing every list of one conversation."""
    reducer = MessageReducer(
        config=ReducerConfig(
            min_messages=3,
            max_messages=5,
            preserve_first=False,
            summarize_fn=summarize,
            inject_summary=True,
        )
    )

    def put(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return reducer.reduce(existing=messages, namespace="conversation").surviving

    return put


def _interleave(
    put: Callable[[list[dict[str, Any]]], list[dict[str, Any]]],
    parent_adds: list[list[dict[str, Any]]],
    sub_adds: list[list[dict[str, Any]]],
    order: list[bool],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The puts of a parent and of its subgraph in one turn, each list of puts in its own
    order, interleaved by ``order`` (True: the parent's next put, False: the subgraph's;
    the parent's first once ``order`` runs out): each put stores what the previous put of
    its list stored plus what it adds. The two lists last stored."""
    parent: list[dict[str, Any]] = []
    sub: list[dict[str, Any]] = []
    choices = iter(order)
    while parent_adds or sub_adds:
        parent_next = next(choices, True) if parent_adds and sub_adds else bool(parent_adds)
        if parent_next:
            parent = put([*parent, *parent_adds.pop(0)])
        else:
            sub = put([*sub, *sub_adds.pop(0)])
    return parent, sub


@settings(max_examples=150, deadline=None)
@example(  # the subgraph's steps prune what the parent then prunes on its own list
    turns=2,
    sibling_steps=[0, 3, *[0] * 10],
    resumes=[False] * 12,
    replies=[1, 2, *[0] * 10],
    orders=[[]] * 12,
)
@example(  # the parent's first put of a turn lands after the subgraph's (async durability):
    # the subgraph folded further on a longer list, the parent prunes a shorter window
    turns=2,
    sibling_steps=[3, 3, *[0] * 10],
    resumes=[False] * 12,
    replies=[1, 1, *[0] * 10],
    orders=[[], [False, True], *[[]] * 10],
)
@example(  # the parent's put replays a prune the subgraph made, after the subgraph folded
    # that block into a newer one: the replayed (older) block must not become the newest
    turns=3,
    sibling_steps=[3] * 12,
    resumes=[False] * 12,
    replies=[2] * 12,
    orders=[[], [True, False, False, False, True], *[[]] * 10],
)
@given(
    turns=st.integers(min_value=2, max_value=12),
    sibling_steps=st.lists(st.integers(min_value=0, max_value=3), min_size=12, max_size=12),
    resumes=st.lists(st.booleans(), min_size=12, max_size=12),
    replies=st.lists(st.integers(min_value=0, max_value=2), min_size=12, max_size=12),
    orders=st.lists(st.lists(st.booleans(), max_size=8), min_size=12, max_size=12),
)
def test_sibling_lists_summarise_every_message_once(
    turns: int,
    sibling_steps: list[int],
    resumes: list[bool],
    replies: list[int],
    orders: list[list[bool]],
) -> None:
    """A parent graph and a subgraph sharing its messages, reduced by one reducer at each
    put, modelled on lists: a run loads the stored list and appends the question; the
    subgraph starts from the run's list (not reduced in memory) and adds steps; what it
    returns (its in-memory list, or after an interrupt its stored, reduced one) is merged
    by id, and the parent stores that. Under ``durability="async"`` the parent's puts of
    a turn may land after any of the subgraph's (``orders``: True runs the parent's next
    put, False the subgraph's; each keeps its own order), before the parent's last put.
    Whatever the interleaving, ``summarize_fn`` receives every message at most once and
    at most one earlier summary."""
    seen: list[str] = []
    priors: list[int] = []

    def summarize(messages: list[Any]) -> str:
        priors.append(sum(map(is_summary, messages)))
        seen.extend(m["id"] for m in messages if not is_summary(m))
        return f"summary {len(priors)}"

    put = _sibling_put(summarize)

    stored: list[dict[str, Any]] = []
    for turn in range(turns):
        question = {"role": "user", "content": f"q{turn}", "id": f"q{turn}"}
        live = [*stored, question]
        # The parent's puts of this turn, in order: the input, then its own nodes' answers
        # (each put builds on the list the previous one stored, as the wrapper does).
        parent_adds: list[list[dict[str, Any]]] = [[*stored, question]]
        for i in range(replies[turn]):
            reply = {"role": "assistant", "content": f"reply {turn}.{i}", "id": f"r{turn}.{i}"}
            live = [*live, reply]
            parent_adds.append([reply])
        steps = [
            {"role": "assistant", "content": f"step {turn}.{i}", "id": f"s{turn}.{i}"}
            for i in range(sibling_steps[turn])
        ]
        sub_live = [*live, *steps]
        # The subgraph's own puts: its input, then each of its steps on its reduced list.
        sub_adds: list[list[dict[str, Any]]] = [list(live), *([step] for step in steps)]
        stored, sub_stored = _interleave(put, parent_adds, sub_adds, orders[turn])
        if resumes[turn]:
            # Resumed after an interrupt: the parent reloads its stored list and the subgraph
            # returns its stored one, which may keep what the parent pruned and its own block.
            live, returned = stored, sub_stored
        else:
            returned = sub_live
        merged = _merge_by_id(live, returned)
        # The wrapper stores the reduced list plus what the run added since its last put.
        stored = put([*stored, *merged[len(live) :]])
        assert sum(map(is_summary, stored)) <= 2  # a stale block leaves at the next fold
    assert len(seen) == len(set(seen)), "a message was summarised twice"
    assert max(priors, default=0) <= 1


@settings(max_examples=150, deadline=None)
@example(turns=3, sibling_steps=[2] * 12, replies=[1] * 12, orders=[[]] * 12)
@given(
    turns=st.integers(min_value=2, max_value=12),
    sibling_steps=st.lists(st.integers(min_value=0, max_value=3), min_size=12, max_size=12),
    replies=st.lists(st.integers(min_value=0, max_value=2), min_size=12, max_size=12),
    orders=st.lists(st.lists(st.booleans(), max_size=8), min_size=12, max_size=12),
)
def test_sibling_lists_without_ids_summarise_every_message_once(
    turns: int, sibling_steps: list[int], replies: list[int], orders: list[list[bool]]
) -> None:
    """The sibling lists of the test above in plain OpenAI dicts without ids, whose summary
    blocks carry no id either (as in the formats a provider receives as they are): the
    reducer knows its blocks by their content, so nothing reaches ``summarize_fn`` twice."""
    seen: list[str] = []

    def summarize(messages: list[Any]) -> str:
        seen.extend(m["content"] for m in messages if not is_summary(m))
        return f"summary {len(seen)}"

    put = _sibling_put(summarize)

    stored: list[dict[str, Any]] = []
    for turn in range(turns):
        question = {"role": "user", "content": f"q{turn}"}
        live = [*stored, question]
        parent_adds: list[list[dict[str, Any]]] = [[*stored, question]]
        for i in range(replies[turn]):
            reply = {"role": "assistant", "content": f"reply {turn}.{i}"}
            live = [*live, reply]
            parent_adds.append([reply])
        steps = [
            {"role": "assistant", "content": f"step {turn}.{i}"} for i in range(sibling_steps[turn])
        ]
        sub_adds: list[list[dict[str, Any]]] = [list(live), *([step] for step in steps)]
        parent_stored, _ = _interleave(put, parent_adds, sub_adds, orders[turn])
        stored = put([*parent_stored, *steps])
        assert all("id" not in m for m in stored)
    assert len(seen) == len(set(seen)), "a message was summarised twice"


def test_a_shorter_list_takes_a_longer_lists_block_and_what_it_says() -> None:
    """A list that is the start of one reduced before it (a put LangGraph stored late)
    takes the block the longer list made for its window, and prunes the messages that
    block says as well: nothing reaches ``summarize_fn`` twice, each message reaches the
    hook once, and both lists keep the same messages after the block."""
    summarize = Summarizer()
    handed: list[str] = []
    reducer = injecting(
        summarize,
        min_messages=3,
        max_messages=5,
        preserve_first=False,
        on_prune=[lambda pruned, _: handed.extend(m["id"] for m in pruned)],
    )
    turns = [("user", "u0"), ("assistant", "a0"), ("assistant", "a1"), ("assistant", "a2")]
    turns += [("assistant", "a3"), ("user", "u1"), ("assistant", "a4")]
    full = [{"role": role, "content": f"text {i}", "id": i} for role, i in turns]
    longer = reducer.reduce(full[:7], namespace="c").surviving
    shorter = reducer.reduce(full[:6], namespace="c").surviving
    assert len(summarize.calls) == 1
    assert [m["id"] for m in shorter if not is_summary(m)] == ["u1"]
    assert shorter[0] is longer[0] and is_summary(shorter[0])
    assert sorted(handed) == sorted(set(handed)) == ["a0", "a1", "a2", "a3", "u0"]


def test_a_newer_block_never_takes_the_newest_question_of_a_shorter_list() -> None:
    """A longer list with a newer question summarised the shorter list's newest question:
    the shorter list does not take that block (a prune never takes the newest question);
    it makes its own summary and keeps its question."""
    summarize = Summarizer()
    reducer = injecting(summarize, min_messages=2, max_messages=5, preserve_first=False)
    turns = [("user", "u0"), ("assistant", "a0"), ("assistant", "a1"), ("user", "u1")]
    turns += [("assistant", "a2"), ("assistant", "a3"), ("user", "u2"), ("assistant", "a4")]
    full = [{"role": role, "content": f"text {i}", "id": i} for role, i in turns]
    longer = reducer.reduce(full, namespace="c").surviving
    assert "u1" not in [m["id"] for m in longer]
    shorter = reducer.reduce(full[:6], namespace="c").surviving
    assert "u1" in [m["id"] for m in shorter]
    assert len(summarize.calls) == 2


# -- where the block goes, and one summarizer call per reduce -----------------------------


@pytest.mark.parametrize("instruction", ["system", "developer"])
@pytest.mark.parametrize("preserve_first", [False, "system"])
def test_a_summary_never_goes_before_an_instruction_message(
    instruction: str, preserve_first: Any
) -> None:
    """With preserve_first off (or "system" and a user message first, an instruction
    message right after it), the block goes after the leading instruction messages, never
    before them: [summary, system, ...] is refused by OpenAI-strict, Anthropic and Gemini."""
    summarize = Summarizer()
    head = [{"role": instruction, "content": "Be brief.", "id": "sys"}]
    if preserve_first == "system":
        head = [{"role": "user", "content": "hello", "id": "hello"}, *head]
    history = [*head, *with_ids(chat(6))[1:]]
    reducer = injecting(summarize, preserve_first=preserve_first)
    for turn in range(3):
        result = reducer.reduce(
            existing=history,
            new=[
                {"role": "user", "content": f"more {turn}.{n}", "id": f"{turn}.{n}"}
                for n in range(3)
            ],
        )
        history = result.surviving
        assert result.summary_messages, "the test must summarise"
        roles = [m["role"] for m in history]
        at = next(i for i, m in enumerate(history) if is_summary(m))
        assert history[0]["id"] == "sys" and at == 1, roles


def total(messages: list[Any]) -> int:
    return sum(tokens_of(m) for m in messages)


def _long_turns(words: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": "sys", "id": "sys"}]
    for n in range(8):
        out.append({"role": "user", "content": f"topic {n} " + "words " * words, "id": f"u{n}"})
        out.append({"role": "assistant", "content": "reply " * words, "id": f"r{n}"})
    return out


def test_select_relevant_and_summarize_call_the_summarizer_once_per_reduce() -> None:
    """SelectRelevant(summarize=True) drops old turns, then the newest turn alone is still
    over the budget and Summarize() drops its older tool calls too: both drops go into one
    summary, one summarize_fn call (before, a second call folded the first's block)."""
    from agentstate_reducer.policy import SelectRelevant

    summarize = Summarizer()
    big = "figures " * 120
    history = [
        *_long_turns(20),
        {"role": "user", "content": "fetch the report", "id": "q"},
        {"role": "assistant", "content": None, "id": "c1", "tool_calls": [_call("x1")]},
        {"role": "tool", "tool_call_id": "x1", "content": big, "id": "t1"},
        {"role": "assistant", "content": None, "id": "c2", "tool_calls": [_call("x2")]},
        {"role": "tool", "tool_call_id": "x2", "content": big, "id": "t2"},
    ]
    budget = total([history[-5], history[-2], history[-1]]) + 60
    reducer = MessageReducer(
        config=ReducerConfig(
            max_tokens=budget,
            token_counter=tokens_of,
            summarize_fn=lambda messages: summarize(messages)[:40],
            inject_summary=True,
            summary_max_tokens=20,
            policy=[SelectRelevant(summarize=True), Summarize()],
        )
    )
    result = reducer.reduce(existing=history)
    assert [r.step for r in result.steps] == ["select_relevant", "summarize"]
    assert all(r.touched for r in result.steps), "both steps must drop"
    assert len(summarize.calls) == 1, f"{len(summarize.calls)} summarizer calls in one reduce"
    summarised = {m["id"] for m in summarize.calls[0]}
    assert summarised == {m["id"] for m in result.pruned}
    assert result.tokens_after <= budget


def _call(call_id: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "get", "arguments": "{}"}}


def test_a_summary_larger_than_its_room_costs_no_second_call() -> None:
    """summarize_fn answers with more than summary_max_tokens: the reduce prunes further
    to fit without calling it again, and carries what it pruned that way into the next
    summary (the next call receives it); every pruned message is summarised once."""
    calls: list[list[str]] = []

    def verbose(messages: list[Any]) -> str:
        calls.append([m.get("id", "summary") if not is_summary(m) else "summary" for m in messages])
        return "a long summary " * 12

    history = _long_turns(3)
    reducer = MessageReducer(
        config=ReducerConfig(
            max_tokens=total(history) - 5,
            token_counter=tokens_of,
            summarize_fn=verbose,
            inject_summary=True,
            summary_max_tokens=8,
        )
    )
    first = reducer.reduce(existing=history)
    assert len(calls) == 1
    assert first.tokens_after <= reducer.config.max_tokens
    carried = [m["id"] for m in first.pruned if m["id"] not in calls[0]]
    assert carried, "the block overflowed: more was pruned, unsummarised yet"
    second = reducer.reduce(
        existing=first.surviving,
        new=[{"role": "user", "content": "words " * 40, "id": "late"}],
    )
    assert len(calls) == 2 and second.summary_messages
    assert set(carried) <= set(calls[1]), "the carried messages reach the next summary"
    summarised = [i for call in calls for i in call if i != "summary"]
    assert len(summarised) == len(set(summarised)), "a message was summarised twice"


def test_messages_carried_after_an_overflow_go_only_to_lists_that_fold_that_block() -> None:
    """A block larger than its room makes its reduce prune a tool pair more and owe it to
    the next summary; a fork of the same conversation (sharing only the first messages,
    never folding that block) does not get those messages in its summary (its block
    would speak of messages it never held), and the list that folds the block does."""
    got: list[list[str]] = []

    def summarize(messages: list[Any]) -> str:
        got.append([str(m["content"]) for m in messages if not is_summary(m)])
        return f"summary {len(got)}: " + "word " * 30  # about 30 tokens, over its room of 10

    reducer = MessageReducer(
        config=ReducerConfig(
            max_tokens=60,
            summary_max_tokens=10,
            preserve_first=False,
            summarize_fn=summarize,
            inject_summary=True,
            format="anthropic",
        )
    )

    def call(n: int) -> list[dict[str, Any]]:
        use = {"type": "tool_use", "id": f"t{n}", "name": "f", "input": {}}
        result = {"type": "tool_result", "tool_use_id": f"t{n}", "content": f"result {n}"}
        return [{"role": "assistant", "content": [use]}, {"role": "user", "content": [result]}]

    def user(text: str) -> dict[str, Any]:
        return {"role": "user", "content": text}

    def assistant(text: str) -> dict[str, Any]:
        return {"role": "assistant", "content": text}

    start = [user("q1"), assistant("a1"), user("q2")]
    main = [*start, *call(1), assistant("a2"), user("q3"), *call(2), *call(3), assistant("a3")]
    first = reducer.reduce(main, namespace="c")
    summarised = {text for call_texts in got for text in call_texts}
    owed = [m for m in first.pruned if str(m["content"]) not in summarised]
    assert owed, "the block must outgrow its room (the test's premise)"
    owed_texts = {str(m["content"]) for m in owed}
    fork = [*start, assistant("other"), user("q9"), *call(7), *call(8), assistant("done")]
    reducer.reduce(fork, namespace="c")
    assert not owed_texts & set(got[-1]), "the fork's summary got another list's messages"
    more = [assistant(f"more {n}") for n in range(4)]
    reducer.reduce([*first.surviving, user("q4"), *more], namespace="c")
    assert owed_texts <= set(got[-1]), "the list folding the block gets what it owes"


@pytest.mark.parametrize("derived", [False, True], ids=["same-reducer", "with_config"])
def test_overlapping_reduces_of_a_conversation_make_one_summary(derived: bool) -> None:
    """Two reduces of the same list at once (a double-submitted request; or the agent
    middleware's with_config reducer and the saver's own): the second waits while the
    first makes its summary, then reuses it: one summarize_fn call, the same block in both
    results."""
    import threading

    entered, release = threading.Event(), threading.Event()
    calls: list[int] = []

    def slow(messages: list[Any]) -> str:
        calls.append(len(messages))
        entered.set()
        release.wait(5)
        return "what was said"

    reducer = injecting(slow)
    history = with_ids(chat(5))
    results: list[Any] = []
    first = threading.Thread(target=lambda: results.append(reducer.reduce(history)))
    first.start()
    assert entered.wait(5)
    other = reducer.with_config(min_messages=4) if derived else reducer
    second = threading.Thread(target=lambda: results.append(other.reduce(history)))
    second.start()
    second.join(0.2)
    assert second.is_alive(), "the second reduce did not wait for the summary being made"
    release.set()
    first.join(5)
    second.join(5)
    assert len(calls) == 1
    assert [m["id"] for m in results[0].surviving] == [m["id"] for m in results[1].surviving]


def test_a_replay_after_another_writer_summarised_calls_nothing() -> None:
    """Found by the many-writers checker: two writers of one conversation reduce lists one
    message apart (the second one's block becomes the conversation's newest); replaying
    the first one's reduce (its result is the stored one) must reuse its own summary, not
    fold the other writer's block into a new one."""
    summarize = Summarizer()
    reducer = injecting(summarize, preserve_first=True)
    history = with_ids(chat(4))
    first = [
        *history,
        {"role": "user", "content": "late", "id": "late"},
        {"role": "assistant", "content": "x", "id": "x"},
    ]
    second = first[:-1]
    stored = reducer.reduce(first, namespace="c")
    reducer.reduce(second, namespace="c")
    calls = len(summarize.calls)
    replayed = reducer.reduce(first, namespace="c")
    assert len(summarize.calls) == calls, "the replay called summarize_fn again"
    assert [m["id"] for m in replayed.surviving] == [m.get("id") for m in stored.surviving]


_PRESERVE = st.sampled_from([True, "system", False])


@settings(max_examples=120, deadline=None)
@given(
    conversations(max_turns=10),
    shapes.filter(lambda s: s != "duck"),
    _PRESERVE,
    _PRESERVE,
    st.integers(2, 10),
    st.data(),
)
def test_writers_pinning_differently_keep_one_summary_and_summarise_each_message_once(
    records: Any, shape: str, first: Any, second: Any, high: int, data: st.DataObject
) -> None:
    """One conversation, two writers sharing memories whose ``preserve_first`` differ (the
    agent middleware runs the reducer with ``"system"``, a saver with the reducer's
    ``True``), taking turns on the growing list: a summary block one of them put at index
    0 is never pinned there as the "first message" by the other, so the list holds one
    block at most, every message given reaches ``summarize_fn`` at most once, and the
    block at index 0 is folded by whichever writer summarises next."""
    summarize = Summarizer()
    low = data.draw(st.integers(0, high), label="min_messages")
    one = injecting(summarize, min_messages=low, max_messages=high, preserve_first=first)
    other = one.with_config(preserve_first=second)
    history: list[Any] = []
    for turn, message in enumerate(rendered(records, shape)):
        writer = one if turn % 2 == 0 else other
        at_front = history[0] if history and is_summary(history[0]) else None
        result = writer.reduce(existing=history, new=[message])
        history = result.surviving
        assert sum(is_summary(m) for m in history) <= 1, [content_of(m) for m in history]
        if at_front is not None and result.summary_messages:
            assert any(m is at_front for m in result.folded_summaries), "a block was pinned"
    summarised = [id(m) for call in summarize.calls for m in call if not is_summary(m)]
    assert len(summarised) == len(set(summarised)), "a message was summarised twice"


@pytest.mark.parametrize("mode", ["keep", "raise"])
@pytest.mark.parametrize("runner", ["threads", "asyncio"])
def test_a_summary_still_being_made_after_the_wait_is_not_made_twice(
    runner: str, mode: str
) -> None:
    """A summarizer that outlasts ``Handoff.wait``: the overlapping reduce of the same
    conversation stops waiting, then keeps the messages that summary may cover and prunes
    nothing (``"keep"``: the input comes back with ``summary_error`` saying why;
    ``"raise"``: ``SummaryError`` from a ``TimeoutError``), as it does for a hook still
    handing them over. ``summarize_fn`` runs once; the first reduce's block stands."""
    import asyncio
    import threading

    calls: list[int] = []
    entered = threading.Event()
    history = with_ids(chat(4))

    def record(messages: list[Any]) -> bool:
        calls.append(len(messages))
        entered.set()
        return len(calls) == 1

    def slow(messages: list[Any]) -> str:
        if record(messages):
            time.sleep(0.8)
        return f"summary {len(calls)}"

    async def aslow(messages: list[Any]) -> str:
        if record(messages):
            await asyncio.sleep(0.8)
        return f"summary {len(calls)}"

    summarize = slow if runner == "threads" else aslow
    reducer = injecting(summarize, handoff=Handoff(wait=0.2, on_error=mode))

    def second() -> Any:
        if mode == "keep":
            return reducer.reduce(history) if runner == "threads" else None
        with pytest.raises(SummaryError, match=r"Handoff.wait=0.2 s") as caught:
            reducer.reduce(history)
        return caught

    if runner == "threads":
        first: list[Any] = []
        worker = threading.Thread(target=lambda: first.append(reducer.reduce(history)))
        worker.start()
        assert entered.wait(5)
        other = second()
        worker.join(5)
        made = first[0]
    else:

        async def both() -> tuple[Any, Any]:
            task = asyncio.create_task(reducer.areduce(history))
            while not calls:
                await asyncio.sleep(0.01)
            if mode == "keep":
                late = await reducer.areduce(history)
            else:
                with pytest.raises(SummaryError, match=r"Handoff.wait=0.2 s") as late:
                    await reducer.areduce(history)
            return await task, late

        made, other = asyncio.run(both())
    assert calls == [calls[0]], "summarize_fn ran twice"
    assert made.summary == "summary 1"
    if mode == "keep":
        assert other.surviving == history and other.pruned == []
        assert isinstance(other.summary_error.__cause__, TimeoutError)
    else:
        assert isinstance(other.value.__cause__, TimeoutError)
        assert [m["id"] for m in other.value.pruned] == [m["id"] for m in made.pruned]


def test_a_sync_reduce_on_the_loop_making_the_summary_does_not_wait() -> None:
    """``reduce()`` from a coroutine while an ``areduce()`` task of that loop makes the
    conversation's summary: it does not block the loop for ``Handoff.wait`` (30 s here),
    keeps the messages, prunes nothing and says to call ``areduce()``; one summary."""
    import asyncio

    calls: list[int] = []

    async def summarize(messages: list[Any]) -> str:
        calls.append(len(messages))
        await asyncio.sleep(0.05)
        return "gist"

    reducer = injecting(summarize, handoff=Handoff(wait=30, on_error="keep"))
    history = with_ids(chat(4))

    async def main() -> Any:
        task = asyncio.create_task(reducer.areduce(history))
        while not calls:
            await asyncio.sleep(0.01)
        late = reducer.reduce(history)
        return await task, late

    made, late = asyncio.run(main())
    assert late.surviving == history and late.pruned == []
    assert "call areduce()" in str(late.summary_error)
    assert calls == [calls[0]] and made.summary == "gist"


@pytest.mark.parametrize("nothing", [None, "", "  \n"])
def test_a_summarizer_with_nothing_to_say_adds_no_block(nothing: str | None) -> None:
    """``summarize_fn`` returning None, an empty string or only whitespace: the messages
    are pruned and no block is injected (an empty string used to inject a block holding
    only its header line)."""
    history = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}", "id": f"m{i}"}
        for i in range(10)
    ]
    reducer = MessageReducer(
        config=ReducerConfig(
            min_messages=2,
            max_messages=4,
            preserve_first=False,
            summarize_fn=lambda messages: nothing,
            inject_summary=True,
        )
    )
    result = reducer.reduce(history)
    assert result.surviving == history[-2:]
    assert result.summary is None
    assert not any(is_summary(m) for m in result.surviving)
