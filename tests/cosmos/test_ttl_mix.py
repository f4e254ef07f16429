"""Time-to-live on the real loopback server: a thread reads whole for at least ``ttl`` seconds
after its last put (the service stamps ``_ts`` in whole seconds), and instances with different
``ttl=`` (or none) on one container never expire a thread one of them keeps using."""

from __future__ import annotations

import math
import operator
import time
from typing import Annotated, Any, TypedDict

import pytest
from agentstate_cosmosdb import CosmosDBSaver
from langgraph.graph import START, StateGraph

from .conftest import DATABASE, CosmosTestServer, new_container, saver_kwargs

pytestmark = pytest.mark.cosmos

BIG = "B" * 40_000


class Shared(TypedDict, total=False):
    items: Annotated[list[str], operator.add]
    big: str


def _graph(saver: Any) -> Any:
    """Writes ``big`` once (its first turn), then only appends: later checkpoints inherit it."""
    builder = StateGraph(Shared)
    builder.add_node("n", lambda state: {} if state.get("big") else {"big": BIG})
    builder.add_edge(START, "n")
    return builder.compile(checkpointer=saver)


def _sleep_to_fraction(fraction: float) -> None:
    """Sleep until the wall clock's fractional second is ``fraction``."""
    now = time.time()
    time.sleep((fraction - (now - math.floor(now))) % 1.0)


def test_a_thread_reads_whole_until_its_ttl_has_passed(server: CosmosTestServer) -> None:
    """ttl=4, the turn's puts done between 0.4 s and 0.9 s into a second (the service rounds
    their ``_ts`` down by as much): 0.1 s before ttl seconds after the turn, the thread reads
    whole (a head stamped with exactly the ttl expired up to 0.9 s earlier), and it expires
    within a few seconds after the ttl."""
    ttl = 4
    cfg = {"configurable": {"thread_id": "whole-until-ttl"}}
    with CosmosDBSaver(DATABASE, new_container(), **saver_kwargs(server, ttl=ttl)) as saver:
        graph = _graph(saver)
        _sleep_to_fraction(0.4)
        graph.invoke({"items": ["u0"]}, cfg)
        done = time.time()
        server.advance_clock(ttl - 1)
        time.sleep(max(0.0, done + 0.9 - time.time()))
        latest = saver.get_tuple(cfg)
        assert latest is not None, "the thread expired before ttl seconds of inactivity"
        assert latest.checkpoint["channel_values"]["big"] == BIG
        server.advance_clock(3)
        assert saver.get_tuple(cfg) is None


@pytest.mark.parametrize("a_ttl", [None, 30])
def test_instances_with_different_ttls_keep_an_active_thread_whole(
    server: CosmosTestServer, a_ttl: int | None
) -> None:
    """A rolling deploy: instance B (ttl=4) writes a value once; instance A (without ttl, or
    ttl=30) then takes a turn every 2.5 s for 10 s, each checkpoint inheriting that value.
    Every turn reads it whole, after B's holder of it (8 s) expired: A's first put wrote it
    again under its own ttl. (A's first turn comes 2.5 s after B's, well within B's head's
    5 s less the service's rounding of ``_ts``, however loaded the machine.)"""
    container, cfg = new_container(), {"configurable": {"thread_id": "rolling"}}
    with (
        CosmosDBSaver(DATABASE, container, **saver_kwargs(server, ttl=4)) as b,
        CosmosDBSaver(DATABASE, container, **saver_kwargs(server, ttl=a_ttl)) as a,
    ):
        _graph(b).invoke({"items": ["b0"]}, cfg)
        graph = _graph(a)
        for turn in range(4):
            time.sleep(2.5)
            out = graph.invoke({"items": [f"a{turn}"]}, cfg)
            assert out["big"] == BIG, turn
            assert out["items"][0] == "b0", turn
        latest = a.get_tuple(cfg)
    assert latest is not None
    assert latest.checkpoint["channel_values"]["items"] == ["b0", "a0", "a1", "a2", "a3"]
