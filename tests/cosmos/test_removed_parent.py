"""A config naming a checkpoint that retention removed never replaces the thread's history.

LangGraph's ``get_tuple`` finds nothing under a removed id and the run starts from an empty
state; the savers refuse its put (CosmosCheckpointRemovedError, nothing stored) while the
thread has a newer checkpoint.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest
from agentstate_cosmosdb import AsyncCosmosDBSaver, CosmosCheckpointRemovedError, CosmosDBSaver
from langgraph.graph import START, StateGraph
from langgraph.types import Command, interrupt

from .conftest import DATABASE, CosmosTestServer, new_container, saver_kwargs

pytestmark = pytest.mark.cosmos


class Items(TypedDict, total=False):
    items: Annotated[list[str], operator.add]


def _ask(state: Items) -> dict[str, Any]:
    return {"items": ["a:" + str(interrupt("approve?"))]}


def _approval_graph(saver: Any) -> Any:
    builder = StateGraph(Items)
    builder.add_node("ask", _ask)
    builder.add_edge(START, "ask")
    return builder.compile(checkpointer=saver)


def _chat_graph(saver: Any) -> Any:
    builder = StateGraph(Items)
    builder.add_node("chat", lambda state: {"items": ["reply"]})
    builder.add_edge(START, "chat")
    return builder.compile(checkpointer=saver)


def test_late_resume_from_a_removed_checkpoint_is_refused(server: CosmosTestServer) -> None:
    """A UI's late resume with a config another instance's retention removed is refused with
    the thread, namespace and both ids named (at its resume value, so nothing of it is
    stored), and the thread's latest state is untouched."""
    container, cfg = new_container(), {"configurable": {"thread_id": "hitl"}}
    kwargs = saver_kwargs(server, keep_checkpoints=2)
    with (
        CosmosDBSaver(DATABASE, container, **kwargs) as a,
        CosmosDBSaver(DATABASE, container, **kwargs) as b,
    ):
        ga, gb = _approval_graph(a), _approval_graph(b)
        ga.invoke({"items": ["u0"]}, cfg)
        gb.invoke(Command(resume="yes0"), cfg)
        ga.invoke({"items": ["u1"]}, cfg)
        ui_cfg = ga.get_state(cfg).config
        gb.invoke(Command(resume="yes1"), cfg)
        gb.invoke({"items": ["u2"]}, cfg)
        gb.invoke(Command(resume="yes2"), cfg)
        before = gb.get_state(cfg)
        with pytest.raises(CosmosCheckpointRemovedError) as info:
            ga.invoke(Command(resume="late"), ui_cfg)
        after = gb.get_state(cfg)
        # Refused at the run's first put (durability 'async': the node has run once by then,
        # on the empty state; README): nothing stored.
        removed_id = ui_cfg["configurable"]["checkpoint_id"]
        assert [d for d in a.thread_documents("hitl") if d.get("checkpoint_id") == removed_id] == []
    assert after.values == before.values
    assert after.config == before.config
    err = info.value
    assert isinstance(err, ValueError)
    assert err.thread_id == "hitl" and err.checkpoint_ns == ""
    assert err.checkpoint_id == ui_cfg["configurable"]["checkpoint_id"]
    assert err.latest_id == before.config["configurable"]["checkpoint_id"]
    assert err.checkpoint_id in str(err) and err.latest_id in str(err)
    assert "drop checkpoint_id" in str(err)


async def test_time_travel_to_a_removed_checkpoint_is_refused(server: CosmosTestServer) -> None:
    """One async instance, keep_checkpoints=3: invoking from a config held five turns ago is
    refused; the latest state keeps every turn, and a run from the latest goes on."""
    container, cfg = new_container(), {"configurable": {"thread_id": "travel"}}
    async with AsyncCosmosDBSaver(
        DATABASE, container, **saver_kwargs(server, keep_checkpoints=3)
    ) as saver:
        graph = _chat_graph(saver)
        await graph.ainvoke({"items": ["u0"]}, cfg)
        held = (await graph.aget_state(cfg)).config
        for turn in range(1, 6):
            await graph.ainvoke({"items": [f"u{turn}"]}, cfg)
        before = (await graph.aget_state(cfg)).values
        with pytest.raises(CosmosCheckpointRemovedError, match="travel"):
            await graph.ainvoke({"items": ["retry"]}, held)
        assert (await graph.aget_state(cfg)).values == before
        out = await graph.ainvoke({"items": ["u6"]}, cfg)
    assert out["items"] == [*before["items"], "u6", "reply"]


def test_a_fork_of_a_stored_checkpoint_still_works(server: CosmosTestServer) -> None:
    """The refusal is only for a parent that is gone: forking from a kept older checkpoint
    (update_state on it, then a run) is stored as before, beside the newer head."""
    container, cfg = new_container(), {"configurable": {"thread_id": "fork"}}
    with CosmosDBSaver(DATABASE, container, **saver_kwargs(server, keep_checkpoints=10)) as s:
        graph = _chat_graph(s)
        graph.invoke({"items": ["u0"]}, cfg)
        held = graph.get_state(cfg).config
        graph.invoke({"items": ["u1"]}, cfg)
        fork = graph.update_state(held, {"items": ["edited"]}, as_node="chat")
        out = graph.invoke({"items": ["again"]}, fork)
    assert out["items"] == ["u0", "reply", "edited", "again", "reply"]
