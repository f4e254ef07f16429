"""The channel's append fast path gives exactly what ``add_messages`` (the slow path) gives.

``_append_merge`` returns ``existing + update`` for an update that only appends new
messages with ids, and the channel remembers the ids of the list it stored (``_Known``)
so that it need not scan it; these tests hold both to the slow path: ``add_messages``
itself for the merge, and the channel with the fast path disabled (``_scan`` finding
nothing, which is the code as it was before the fast path) for whole runs, steps of
several writes, ``Overwrite`` writes, copies and replays included.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.graph.message import add_messages
from langgraph.types import Overwrite

from agentstate_reducer import MessageReducer, ReducerConfig
from agentstate_reducer.langgraph import merge as merge_module
from agentstate_reducer.langgraph.merge import langgraph_reducer

from .strategies import CALL_IDS, POOL_IDS, build, build_update

EXAMPLES = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

#: Ids no stored message has at first, so that updates often only append.
FRESH_IDS = tuple(f"f{n}" for n in range(12))
KNOWN_IDS = {*POOL_IDS, *FRESH_IDS, "never-seen", "start", "end"}

#: Update ids: mostly new ones (so that many updates only append), else none or a pool id.
_ids = st.one_of(
    st.sampled_from(FRESH_IDS), st.sampled_from(FRESH_IDS), st.none(), st.sampled_from(POOL_IDS)
)
_text = st.sampled_from(["", "hi", "ok", "ünï"])
_calls = st.lists(st.sampled_from(CALL_IDS), max_size=2, unique=True)
_recipes = st.one_of(
    st.tuples(
        st.just("human"), _text, _ids, st.sampled_from(["obj", "obj", "role", "tuple", "str"])
    ),
    st.tuples(st.just("ai"), _text, _ids, st.sampled_from(["obj", "obj", "role", "chunk"]), _calls),
    st.tuples(
        st.just("tool"), _text, _ids, st.sampled_from(["obj", "role"]), st.sampled_from(CALL_IDS)
    ),
    st.tuples(st.just("system"), _text, _ids, st.sampled_from(["obj", "tuple"])),
    st.tuples(
        st.just("remove"),
        st.one_of(
            st.tuples(st.just("id"), st.sampled_from([*POOL_IDS, *FRESH_IDS[:2], "never-seen"])),
            st.tuples(st.just("index"), st.integers(0, 30)),
        ),
    ),
    st.tuples(st.just("replace"), st.integers(0, 30), _text),
)
#: Messages a node appends: objects with ids, mostly new (an id twice, or stored, at times).
_appending_ids = st.one_of(*[st.sampled_from(FRESH_IDS)] * 6, st.none(), st.sampled_from(POOL_IDS))
_appending = st.one_of(
    st.tuples(st.just("human"), _text, _appending_ids, st.just("obj")),
    st.tuples(st.just("ai"), _text, _appending_ids, st.just("obj"), _calls),
    st.tuples(st.just("tool"), _text, _appending_ids, st.just("obj"), st.sampled_from(CALL_IDS)),
)
#: One update: mostly lists (LangGraph's usual), sometimes a single item; REMOVE_ALL rarely.
_updates = st.one_of(
    st.lists(_appending, max_size=4),
    st.lists(_appending, max_size=4),
    st.lists(_appending, max_size=4),
    st.lists(_recipes, max_size=4),
    st.lists(_recipes, max_size=3).map(lambda r: [*r[:1], ("remove", ("all",)), *r[1:]]),
    _recipes,
)
_stored_ids = st.none() | st.sampled_from(POOL_IDS)
_stored_objects = st.one_of(
    st.tuples(st.just("human"), _text, _stored_ids, st.just("obj")),
    st.tuples(st.just("ai"), _text, _stored_ids, st.sampled_from(["obj"] * 7 + ["chunk"]), _calls),
    st.tuples(st.just("tool"), _text, _stored_ids, st.just("obj"), st.sampled_from(CALL_IDS)),
)
_stored_items = _stored_objects | st.tuples(
    st.just("human"), _text, _stored_ids, st.sampled_from(["role", "str"])
)


def _named_uniquely(recipes: list[Any]) -> list[Any]:
    """The recipes with distinct ids (``m0``, ``m1``, ...: pool ids updates may hit), as
    the lists the channel stores have them."""
    return [(*r[:2], POOL_IDS[i % len(POOL_IDS)] if i < len(POOL_IDS) else f"s{i}", *r[3:])
            for i, r in enumerate(recipes)]  # fmt: skip


#: A stored list: mostly plain messages with distinct ids (what the channel stores), else
#: messages with or without ids, ids twice, chunks and items add_messages converts.
_stored = st.one_of(
    st.lists(_stored_objects, max_size=8).map(_named_uniquely),
    st.lists(_stored_objects, max_size=8).map(_named_uniquely),
    st.lists(_stored_items, max_size=8),
)


def snapshot(messages: list[Any]) -> list[tuple[str, dict[str, Any]]]:
    """Messages as comparable data (type, every field, the id included; an ``Overwrite``
    may store dicts as given)."""
    return [(type(m).__name__, m.model_dump() if hasattr(m, "model_dump") else m) for m in messages]


def _random(message_id: Any) -> bool:
    """Whether the id is a random one (uuid4: made into a list whose last message has no
    id, where nothing deterministic can be derived); the channel derives uuid5 ids."""
    try:
        return uuid.UUID(message_id).version == 4
    except (TypeError, ValueError, AttributeError):
        return False


def without_random_ids(snap: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """``snapshot`` with random ids as ``"<random>"``."""
    for _, data in snap:
        if isinstance(data, dict) and _random(data.get("id")):
            data["id"] = "<random>"
    return snap


def normal(messages: list[Any]) -> list[tuple[str, dict[str, Any]]]:
    """``snapshot`` with the ids ``add_messages`` makes at random as ``"<generated>"``."""
    out = snapshot(messages)
    for _, data in out:
        if data.get("id") not in KNOWN_IDS:
            data["id"] = "<generated>"
    return out


def outcome(function: Any, *args: Any) -> tuple[str, Any]:
    try:
        return "ok", function(*args)
    except Exception as exc:
        return "error", type(exc)


def fast_or_slow(left: Any, right: Any) -> list[Any]:
    """The channel's merge rule: the fast path when the list scans and the update only
    appends, else ``add_messages``."""
    known = merge_module._scan(left)
    appended = None if known is None else merge_module._append_merge(left, right, known)
    return add_messages(left, right) if appended is None else appended[0]


@EXAMPLES
@given(stored=_stored, update=_updates, another_owner=st.booleans())
def test_the_append_fast_path_is_add_messages(
    stored: list[Any], update: Any, another_owner: bool
) -> None:
    """Property: for any stored list and update (messages with and without ids, ids twice
    in the update or already stored, removals of present and absent ids, REMOVE_ALL,
    dicts, tuples, strings and chunks add_messages converts, AI messages with tool calls),
    whenever ``_append_merge`` answers, ``add_messages`` gives the same list (equal
    messages of the same types and ids) without raising, and the record it returns
    describes that list with exactly its ids; and the merge rule that uses it gives what
    ``add_messages`` gives (ids add_messages generates compared as generated), raising
    the same error type where it raises. Called for another owner than the id set's, it
    leaves that set as it was. (Fresh objects per side: add_messages names id-less
    messages in place.)"""
    left_a = [build(recipe, []) for recipe in stored]
    left_b = [build(recipe, []) for recipe in stored]
    expected = outcome(add_messages, left_a, build_update(update, left_a))

    known = merge_module._scan(left_b)
    appended = None
    if known is not None:
        assert known.id_set.ids == {m.id for m in left_b}
        owner = object() if another_owner else None  # _scan's set is owned by None
        right = build_update(update, left_b)
        appended = merge_module._append_merge(left_b, right, known, owner)
        if another_owner:
            assert known.id_set.ids == {m.id for m in left_b}
            assert known.id_set.version == known.version
    event(f"the list scans: {known is not None}; fast path: {appended is not None}")
    if appended is not None:
        merged, record = appended
        assert expected[0] == "ok"
        assert snapshot(merged) == snapshot(expected[1])
        assert merged == expected[1]
        assert record.describes(merged)
        assert record.id_set.version == record.version
        assert record.id_set.ids == {m.id for m in merged}

    left_c = [build(recipe, []) for recipe in stored]
    got = outcome(fast_or_slow, left_c, build_update(update, left_c))
    assert got[0] == expected[0]
    if got[0] == "ok":
        assert normal(got[1]) == normal(expected[1])
    else:
        assert got[1] is expected[1]


def test_a_plain_append_takes_the_fast_path_and_an_edit_does_not() -> None:
    """The fast path is really taken for an update of new messages with ids (add_messages
    is not called), and not for one that edits a stored message by id."""
    channel = MessageReducer(max_messages=None).as_langgraph_reducer()
    state = channel([], [SystemMessage("s", id="s"), HumanMessage("hi", id="h0")])
    calls: list[Any] = []

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return add_messages(*args, **kwargs)

    with mock.patch.object(merge_module, "_add_messages", counting):
        state = channel(state, [AIMessage("yes", id="a0"), HumanMessage("more", id="h1")])
        assert calls == []
        assert [m.id for m in state] == ["s", "h0", "a0", "h1"]
        state = channel(state, [AIMessage("edited", id="a0")])
        assert len(calls) == 1
    assert [(m.id, m.content) for m in state][2] == ("a0", "edited")


def test_a_list_changed_in_place_is_not_taken_for_the_stored_one() -> None:
    """The record of the stored list stops describing it once the list is appended to or
    popped and refilled in place: the merge then reads the list as it is."""
    channel = MessageReducer(max_messages=None).as_langgraph_reducer()
    state = channel([], [SystemMessage("s", id="s"), HumanMessage("hi", id="h0")])
    state.append(AIMessage("sneaked", id="x"))
    assert [m.content for m in channel(state, [AIMessage("edit", id="x")])][-1] == "edit"

    state = channel([], [SystemMessage("s", id="s"), HumanMessage("hi", id="h0")])
    state.pop()
    state.append(HumanMessage("swapped", id="x"))
    after = channel(state, [HumanMessage("edit", id="x")])
    assert [(m.id, m.content) for m in after] == [("s", "s"), ("x", "edit")]


def _edit_first(state: list[Any]) -> None:
    state[0] = HumanMessage("edited", id="X")


def _edit_first_without_id(state: list[Any]) -> None:
    state[0] = HumanMessage("no id")


def _swap_two(state: list[Any]) -> None:
    state[0], state[1] = state[1], state[0]


def _pop_and_insert(state: list[Any]) -> None:
    state.pop(0)
    state.insert(0, HumanMessage("edited", id="X"))


@pytest.mark.parametrize("edit", [_edit_first, _edit_first_without_id, _swap_two, _pop_and_insert])
def test_a_message_replaced_in_place_is_seen(edit: Any) -> None:
    """A list whose messages a caller replaced in place, keeping its length and its last
    message (a node may: LangGraph hands it the channel's own list), is merged as
    ``add_messages`` merges it: an update with a replaced message's id replaces it (no
    second message with that id), and an id-less message put there gets an id."""
    channel = MessageReducer(max_messages=None).as_langgraph_reducer()
    start = [HumanMessage("h0", id="h0"), AIMessage("a1", id="a1"), HumanMessage("h2", id="h2")]
    state = channel([], start)
    edit(state)
    edited = list(state)
    update = [HumanMessage("new X", id="X"), AIMessage("ok", id="ok")]
    merged = channel(state, update)
    expected = add_messages([m for m in edited if m.id is not None], update)
    assert [(m.id, m.content) for m in merged if m.content != "no id"] == [
        (m.id, m.content) for m in expected
    ]
    assert all(m.id is not None for m in merged)
    assert len({m.id for m in merged}) == len(merged)


def test_a_node_replacing_a_message_in_the_state_in_place_stores_it_once() -> None:
    """In a graph, a node that replaces ``state["messages"][0]`` in place and writes the new
    message too stores what a graph with LangGraph's own ``add_messages`` stores."""
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import START, StateGraph
    from typing_extensions import TypedDict

    def stored(merge: Any) -> list[tuple[str | None, Any]]:
        State = TypedDict("State", {"messages": Annotated[list[Any], merge]})  # noqa: UP013

        def set_prompt(state: Any) -> dict[str, Any]:
            prompt = SystemMessage("new prompt", id="sys-v2")
            state["messages"][0] = prompt
            return {"messages": [prompt]}

        builder = StateGraph(State)
        builder.add_node("model", lambda state: {"messages": [AIMessage("hi", id="a1")]})
        builder.add_node("set_prompt", set_prompt)
        builder.add_edge(START, "model")
        builder.add_edge("model", "set_prompt")
        graph = builder.compile(checkpointer=InMemorySaver())
        config = {"configurable": {"thread_id": "t"}}
        first = [SystemMessage("old", id="sys-v1"), HumanMessage("q", id="q1")]
        graph.invoke({"messages": first}, config)
        return [(m.id, m.content) for m in graph.get_state(config).values["messages"]]

    ours = stored(MessageReducer(min_messages=10, max_messages=20).as_langgraph_reducer())
    assert ours == stored(add_messages)
    assert [m_id for m_id, _ in ours].count("sys-v2") == 1


@pytest.mark.parametrize("copy_first", [True, False])
def test_channels_sharing_a_record_each_merge_exactly(copy_first: bool) -> None:
    """A channel and its ``copy()`` (LangGraph makes one for a conditional edge and for
    ``get_state`` previews) share the record of the stored list; whichever appends
    second still merges into its own list exactly: an id the other appended is no
    obstacle, and an edit by id replaces. (The copy extends a copy of the id set; the
    channel that made the set extends it in place, and the copy's record goes stale.)"""
    spec = MessageReducer(max_messages=None).as_langgraph_reducer()
    channel = spec.from_checkpoint([])
    channel.update([[SystemMessage("s", id="s"), HumanMessage("hi", id="h0")]])
    preview = channel.copy()
    first, second = (preview, channel) if copy_first else (channel, preview)
    first.update([[AIMessage("first", id="a0")]])
    second.update([[AIMessage("second", id="a0"), HumanMessage("edit", id="h0")]])
    assert [(m.id, m.content) for m in first.get()] == [("s", "s"), ("h0", "hi"), ("a0", "first")]
    assert [(m.id, m.content) for m in second.get()] == [
        ("s", "s"),
        ("h0", "edit"),
        ("a0", "second"),
    ]
    # Each goes on appending exactly.
    for target in (first, second):
        target.update([[HumanMessage("next", id="h1"), AIMessage("again", id="a0")]])
        assert [m.id for m in target.get()] == ["s", "h0", "a0", "h1"]
        assert target.get()[2].content == "again"


_windows = st.sampled_from([None, (1, 3), (2, 5), (3, 8)])
_step = st.lists(_updates, min_size=1, max_size=3)
_write = st.one_of(
    _step.map(lambda writes: ("step", writes)),
    st.lists(_stored.map(lambda r: r[:3]), min_size=1, max_size=1).map(
        lambda lists: ("overwrite", lists[0])
    ),
)


def _config(window: tuple[int, int] | None, summarize: bool) -> ReducerConfig:
    if window is None:
        return ReducerConfig(max_messages=None)
    return ReducerConfig(
        min_messages=window[0],
        max_messages=window[1],
        summarize_fn=(lambda pruned: f"{len(pruned)} gone") if summarize else None,
        inject_summary=summarize,
    )


@contextmanager
def slow_path() -> Iterator[None]:
    """The channel without the fast path: no list scans as known, so every merge names the
    stored list and goes through ``add_messages``, as before the fast path."""
    with mock.patch.object(merge_module, "_scan", lambda items, owner=None: None):
        yield


@EXAMPLES
@given(
    writes=st.lists(_write, min_size=1, max_size=8),
    window=_windows,
    summarize=st.booleans(),
    via=st.sampled_from(["call", "update"]),
    preview=st.booleans(),
)
def test_the_channel_with_the_fast_path_is_the_channel_without_it(
    writes: list[Any],
    window: tuple[int, int] | None,
    summarize: bool,
    via: str,
    preview: bool,
) -> None:
    """Property: a run of writes through the channel (called turn by turn, or as LangGraph
    drives it: ``update`` with several writes per super-step, ``Overwrite`` writes, and,
    with ``preview``, a copy applying each step first as ``get_state`` does) stores and
    shows the same messages with the same ids after every step, and fails at the same
    step with the same error, with the fast path and without it."""

    def run() -> list[Any]:
        spec = langgraph_reducer(MessageReducer(config=_config(window, summarize)))
        channel = spec.from_checkpoint([SystemMessage("start", id="start")])
        state: list[Any] = list(channel.value)
        history: list[Any] = []
        for kind, recipe in writes:
            if not state:
                break  # into an empty list ids are random, as add_messages makes them
            try:
                if kind == "overwrite":
                    # Ending in a message with an id: into a list whose last message has
                    # none, ids are random (there is nothing to derive them from).
                    value = [*(build(r, []) for r in recipe), HumanMessage("end", id="end")]
                    if via == "call":
                        break  # Overwrite is the channel's (LangGraph's) business
                    channel.update([Overwrite(value)])
                elif via == "call":
                    for update in recipe:
                        if state:  # (as above: after a REMOVE_ALL within the step)
                            state = spec(state, build_update(update, state))
                else:
                    if preview:
                        channel.copy().update([build_update(u, state) for u in recipe])
                    channel.update([build_update(u, state) for u in recipe])
                if via == "update":  # get() may raise too: a list stored as given
                    state = channel.value
                    stored, shown = snapshot(channel.checkpoint()), snapshot(channel.get())
                    history.append((without_random_ids(stored), without_random_ids(shown)))
                else:
                    history.append(without_random_ids(snapshot(state)))
            except Exception as exc:
                history.append(("error", type(exc).__name__, str(exc)))
                break
        return history

    with slow_path():
        expected = run()
    assert run() == expected


@pytest.mark.parametrize("summarize", [False, True])
def test_a_long_chat_is_the_same_with_and_without_the_fast_path(summarize: bool) -> None:
    """Many turns of a tool chat through a pruning (and summarizing) channel, with ids and
    without (ToolNode's messages have none): the same lists, the fast path taken, and the
    stored list scanned only when it must be."""

    def turn(n: int) -> list[Any]:
        call = {"name": "f", "args": {"n": n}, "id": f"c{n}", "type": "tool_call"}
        return [
            HumanMessage(f"q{n}", id=f"h{n}") if n % 3 else HumanMessage(f"q{n}"),
            AIMessage("", id=f"a{n}", tool_calls=[call]),
            ToolMessage(f"r{n}", tool_call_id=f"c{n}"),
            AIMessage(f"answer {n}", id=f"r{n}"),
        ]

    def run() -> list[Any]:
        channel = langgraph_reducer(MessageReducer(config=_config((6, 14), summarize)))
        state: list[Any] = [SystemMessage("s", id="s")]
        seen = []
        for n in range(60):
            state = channel(state, copy.deepcopy(turn(n)))
            seen.append(snapshot(state))
        return seen

    with slow_path():
        expected = run()
    real_append = merge_module._append_merge
    taken: list[bool] = []

    def counting(*args: Any) -> Any:
        result = real_append(*args)
        taken.append(result is not None)
        return result

    real_scan = merge_module._scan
    scans: list[int] = []

    def counting_scans(items: Any, owner: object = None) -> Any:
        scans.append(len(items))
        return real_scan(items, owner)

    with (
        mock.patch.object(merge_module, "_append_merge", counting),
        mock.patch.object(merge_module, "_scan", counting_scans),
    ):
        assert run() == expected
    assert sum(taken) >= 50
    # Pruning keeps the record (the pruned ids leave the set); an injected summary is a
    # new message: the list is scanned once after each summarizing prune.
    assert len(scans) == 1 if not summarize else 1 < len(scans) < 30


@pytest.mark.parametrize("copy_first", [True, False])
def test_a_prune_in_one_channel_leaves_the_other_exact(copy_first: bool) -> None:
    """A channel and its copy share the record of the stored list; a write that makes the
    reducer prune in one of them removes ids from its id set only: the other still stores
    those messages, and a write editing one of them there replaces it, not appends a
    twin."""
    spec = MessageReducer(min_messages=2, max_messages=4).as_langgraph_reducer()
    channel = spec.from_checkpoint([])
    channel.update([[HumanMessage(f"m{n}", id=f"m{n}") for n in range(4)]])
    preview = channel.copy()
    pruning, editing = (preview, channel) if copy_first else (channel, preview)
    pruning.update([[HumanMessage("more", id="x0"), HumanMessage("more", id="x1")]])
    assert [m.id for m in pruning.get()] == ["m0", "x0", "x1"]  # the first is preserved
    editing.update([[HumanMessage("edited", id="m1")]])
    assert [(m.id, m.content) for m in editing.get()] == [
        ("m0", "m0"),
        ("m1", "edited"),
        ("m2", "m2"),
        ("m3", "m3"),
    ]
    pruning.update([[HumanMessage("edited", id="x0")]])
    assert [(m.id, m.content) for m in pruning.get()] == [
        ("m0", "m0"),
        ("x0", "edited"),
        ("x1", "more"),
    ]


def test_a_conditional_edge_costs_the_channel_neither_a_scan_nor_add_messages() -> None:
    """In a graph whose conditional edge reads the state with a node's writes (LangGraph
    applies them to a copy of the channel first), every write after the first of each run
    (the list loaded from the checkpoint is scanned once) takes the fast path: no scan
    and no ``add_messages`` call."""
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, StateGraph
    from typing_extensions import TypedDict

    reducer = MessageReducer(min_messages=6, max_messages=12)

    # The functional form: evaluated here, where ``reducer`` is (annotations are strings).
    State = TypedDict(  # noqa: UP013
        "State", {"messages": Annotated[list[Any], reducer.as_langgraph_reducer()], "turn": int}
    )

    def node(state: Any) -> dict[str, Any]:
        n = state["turn"]
        return {"messages": [AIMessage(f"a{n}", id=f"a{n}"), AIMessage("no id")], "turn": n + 1}

    builder = StateGraph(State)
    builder.add_node("a", node)
    builder.add_node("b", node)
    builder.add_edge(START, "a")
    builder.add_conditional_edges("a", lambda s: "b" if s["turn"] % 3 else END)
    builder.add_edge("b", "a")
    graph = builder.compile(checkpointer=InMemorySaver())

    scans: list[int] = []
    slow: list[int] = []
    real_scan, real_add = merge_module._scan, merge_module._add_messages

    def counting_scan(items: Any, owner: object = None) -> Any:
        scans.append(len(items))
        return real_scan(items, owner)

    def counting_add(*args: Any, **kwargs: Any) -> Any:
        slow.append(1)
        return real_add(*args, **kwargs)

    config = {"configurable": {"thread_id": "t"}}
    turn = 0
    with (
        mock.patch.object(merge_module, "_scan", counting_scan),
        mock.patch.object(merge_module, "_add_messages", counting_add),
    ):
        for run in range(3):
            out = graph.invoke(
                {"messages": [HumanMessage(f"q{run}", id=f"q{run}")], "turn": turn}, config
            )  # type: ignore[arg-type]
            turn = out["turn"]
    assert len(scans) == 3
    assert slow == []
    assert [m.id for m in out["messages"]][-2:-1] == [f"a{turn - 1}"]
