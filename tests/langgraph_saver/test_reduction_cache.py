"""CheckpointReduction's per-chain memory gives what the obvious, memoryless rule gives.

The rule (what a reducer in the state would do): a put whose parent is the chain's previous
put, with a run's list that still starts with that put's objects, stores
``fresh_reduce(previous_stored + new_tail)``; any other put stores ``fresh_reduce(list)``.
The implementation adds an identity fast path for a replayed put, skips the plan for lists
the limits cannot prune, reuses the reducer's plan state and tracks versions. The test
drives both with the same random puts: appends, replays, lists changed in place, forks,
lists reloaded from storage, and restarts, in count and token mode.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.base.id import uuid6

from agentstate_reducer import MessageReducer, ReducerConfig
from agentstate_reducer.langgraph import CheckpointReduction
from tests.strategies import conversations, rendered
from tests.test_properties import tokens_of

KEY = "messages"


@st.composite
def configs(draw: st.DrawFn) -> ReducerConfig:
    if draw(st.booleans()):
        high = draw(st.integers(1, 12))
        return ReducerConfig(min_messages=draw(st.integers(0, high)), max_messages=high)
    high = draw(st.integers(5, 80))
    return ReducerConfig(
        max_tokens=high, target_tokens=draw(st.integers(1, high)), token_counter=tokens_of
    )


@dataclass
class Reference:
    """The memoryless rule, remembering only what the rule itself needs."""

    config: ReducerConfig
    last: dict[str, tuple[str, tuple[Any, ...], list[Any]]] = field(default_factory=dict)

    def put(self, chain: str, parent: str | None, checkpoint_id: str, live: list[Any]) -> list[Any]:
        fresh = MessageReducer(config=self.config)
        previous = self.last.get(chain)
        if (
            previous is not None
            and previous[0] == parent
            and len(live) >= len(previous[1])
            and all(a is b for a, b in zip(live, previous[1], strict=False))
        ):
            stored = fresh.reduce(previous[2], live[len(previous[1]) :]).surviving
        else:
            stored = fresh.reduce(live).surviving
        self.last[chain] = (checkpoint_id, tuple(live), stored)
        return stored


ACTIONS = ("append", "replay", "append_in_place", "replace_in_place", "fork", "reload", "restart")


@settings(max_examples=150, deadline=None)
@given(configs(), conversations(max_turns=14), st.data())
def test_the_chain_memory_stores_what_the_memoryless_rule_stores(
    config: ReducerConfig, records: Any, data: st.DataObject
) -> None:
    """Every stored list (compared item by item, by identity) is the rule's, and a fresh
    version is only ever taken when the list changed but its version did not."""
    pool = iter(rendered(records, "langchain"))
    reduction = CheckpointReduction(MessageReducer(config=config), KEY)
    reference = Reference(config)
    history: list[tuple[str, list[Any]]] = []  # (checkpoint id, the list put then)
    live: list[Any] = []
    parent: str | None = None
    version = 0
    for _ in range(data.draw(st.integers(1, 25))):
        action = data.draw(st.sampled_from(ACTIONS))
        new = [m for _, m in zip(range(data.draw(st.integers(0, 3))), pool, strict=False)]
        changed = True
        if action == "append":
            live = live + new
        elif action == "replay":
            changed = False
        elif action == "append_in_place":
            live.extend(new)
        elif action == "replace_in_place" and live and new:
            live[data.draw(st.integers(0, len(live) - 1))] = new[0]
        elif action == "fork" and history:
            parent, older = history[data.draw(st.integers(0, len(history) - 1))]
            live = older + new
        elif action == "reload" and parent is not None:
            stored_last = reference.last["t"][2]
            live = [copy.deepcopy(m) for m in stored_last] + new
        elif action == "restart":
            reduction = CheckpointReduction(MessageReducer(config=config), KEY)
            reference.last.clear()
            live = live + new
        if changed:
            version += 1
        checkpoint = empty_checkpoint()
        checkpoint["id"] = str(uuid6())
        checkpoint["channel_values"] = {KEY: live}
        checkpoint["channel_versions"] = {KEY: version}
        put_config: dict[str, Any] = {
            "configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": parent}
        }
        new_versions = {KEY: version} if changed else {}
        stored = reduction.apply(put_config, checkpoint, new_versions)  # type: ignore[arg-type]
        expected = reference.put("t", parent, checkpoint["id"], live)
        got = stored["channel_values"][KEY]
        assert [id(m) for m in got] == [id(m) for m in expected], action
        stored_version = stored["channel_versions"][KEY]
        if stored_version != version:
            assert not changed and new_versions.get(KEY) == stored_version
        history.append((checkpoint["id"], list(live)))
        parent = checkpoint["id"]
