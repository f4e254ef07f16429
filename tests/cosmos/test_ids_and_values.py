"""Hostile identifiers and values too big for one Cosmos DB item."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from agentstate_cosmosdb import AsyncCosmosDBSaver, CosmosDBSaver
from agentstate_cosmosdb.documents import CHUNK_BYTES
from agentstate_cosmosdb.schema import partition_key
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.checkpoint.conformance.test_utils import (
    generate_checkpoint,
    generate_config,
    generate_metadata,
)

pytestmark = pytest.mark.cosmos

# Characters Cosmos DB forbids in ids, quotes, separators, spaces, non-ASCII and control
# characters, in any mix.
HOSTILE = st.text(
    alphabet=st.sampled_from([*list("/\\#?'\"` :|.$%&*"), "é", "中", "🙂", "\x00", "\n", "a", "Z"])
    | st.characters(codec="utf-8", exclude_categories=("Cs",)),
    min_size=1,
    max_size=40,
)


def _put(saver: CosmosDBSaver, thread_id: str, ns: str, value: Any) -> dict[str, Any]:
    config = generate_config(thread_id, checkpoint_ns=ns)
    checkpoint = generate_checkpoint(
        channel_values={"ch": value, "small": 7}, channel_versions={"ch": "1", "small": "1"}
    )
    stored: dict[str, Any] = saver.put(config, checkpoint, generate_metadata(), {"ch": "1"})
    return stored


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(thread_id=HOSTILE, ns=st.one_of(st.just(""), HOSTILE), other=HOSTILE)
def test_hostile_ids_round_trip_and_stay_isolated(
    sync_saver: CosmosDBSaver, thread_id: str, ns: str, other: str
) -> None:
    """Any thread id and namespace round-trips exactly, and another id never sees its data."""
    marker = uuid.uuid4().hex
    stored = _put(sync_saver, thread_id, ns, {"marker": marker})
    assert stored["configurable"]["thread_id"] == thread_id
    assert stored["configurable"]["checkpoint_ns"] == ns

    latest = sync_saver.get_tuple(generate_config(thread_id, checkpoint_ns=ns))
    assert latest is not None
    assert latest.config["configurable"]["thread_id"] == thread_id
    assert latest.config["configurable"]["checkpoint_ns"] == ns
    assert latest.checkpoint["channel_values"]["ch"] == {"marker": marker}
    listed = list(sync_saver.list(generate_config(thread_id, checkpoint_ns=ns)))
    assert listed and all(t.config["configurable"]["thread_id"] == thread_id for t in listed)

    if other != thread_id:
        seen = sync_saver.get_tuple(generate_config(other, checkpoint_ns=ns))
        assert seen is None or seen.checkpoint["channel_values"].get("ch") != {"marker": marker}
        assert all(
            t.checkpoint["channel_values"].get("ch") != {"marker": marker}
            for t in sync_saver.list(generate_config(other))
        )


def test_similar_ids_do_not_collide(sync_saver: CosmosDBSaver) -> None:
    """Ids that differ only in characters Cosmos DB rejects or that encoders confuse stay apart."""
    ids = ["a/b", "a\\b", "a#b", "a?b", "a b", "a%2Fb", "a_b", "a-b", "A/b", "a/b "]
    for i, thread_id in enumerate(ids):
        _put(sync_saver, thread_id, "", i)
    for i, thread_id in enumerate(ids):
        found = sync_saver.get_tuple(generate_config(thread_id))
        assert found is not None and found.checkpoint["channel_values"]["ch"] == i
    assert len({partition_key(t) for t in ids}) == len(ids)


def _big(size: int) -> bytes:
    return (uuid.uuid4().bytes * (size // 16 + 1))[:size]


def test_values_over_two_megabytes_round_trip(sync_saver: CosmosDBSaver, server: Any) -> None:
    """A 5 MB channel value and a 3 MB pending write are split across items and come back whole.

    The test server refuses items over 2 MiB with 413, as Cosmos DB does.
    """
    value = {"blob": _big(5 * 1024 * 1024), "text": "x" * (2 * 1024 * 1024 + 5)}
    config = generate_config("big")
    checkpoint = generate_checkpoint(channel_values={"ch": value}, channel_versions={"ch": "1"})
    stored = sync_saver.put(config, checkpoint, generate_metadata(), {"ch": "1"})
    write = _big(3 * 1024 * 1024)
    sync_saver.put_writes(stored, [("ch", write), ("small", 1)], "task-1")

    for fetch in (stored, generate_config("big")):
        tup = sync_saver.get_tuple(fetch)
        assert tup is not None
        assert tup.checkpoint["channel_values"]["ch"] == value
        assert [(w[1], w[2]) for w in tup.pending_writes or []] == [("ch", write), ("small", 1)]
    assert len(value["blob"]) > 2 * CHUNK_BYTES


async def test_values_over_two_megabytes_round_trip_async(async_saver: AsyncCosmosDBSaver) -> None:
    """The same through the async saver (chunks read concurrently)."""
    value = ["y" * (3 * 1024 * 1024)]
    config = generate_config("big-async")
    checkpoint = generate_checkpoint(channel_values={"ch": value}, channel_versions={"ch": "1"})
    stored = await async_saver.aput(config, checkpoint, generate_metadata(), {"ch": "1"})
    tup = await async_saver.aget_tuple(stored)
    assert tup is not None and tup.checkpoint["channel_values"]["ch"] == value
    listed = [t async for t in async_saver.alist(generate_config("big-async"))]
    assert listed[0].checkpoint["channel_values"]["ch"] == value


def _chain(saver: CosmosDBSaver, thread: str, run_ids: list[str]) -> list[dict[str, Any]]:
    """Checkpoints where ``b`` is written once (first) and inherited by all the later ones."""
    stored: list[dict[str, Any]] = []
    parent = generate_config(thread)
    for i, run_id in enumerate(run_ids):
        new = {"a": str(i + 1)} if i else {"a": "1", "b": "1"}
        checkpoint = generate_checkpoint(
            channel_values={"a": [i], "b": ["kept"]},
            channel_versions={"a": str(i + 1), "b": "1"},
        )
        parent = saver.put(parent, checkpoint, generate_metadata(step=i, run_id=run_id), new)
        stored.append(parent)
    return stored


def test_prune_keeps_values_the_latest_still_uses(sync_saver: CosmosDBSaver) -> None:
    """keep_latest removes older checkpoints from the history but not the value of a channel
    the latest inherited from one of them."""
    stored = _chain(sync_saver, "prune-values", ["r1", "r1", "r1"])
    sync_saver.prune(["prune-values"], strategy="keep_latest")
    listed = list(sync_saver.list(generate_config("prune-values")))
    assert [t.config for t in listed] == [stored[-1]]
    assert listed[0].checkpoint["channel_values"] == {"a": [2], "b": ["kept"]}
    assert sync_saver.get_tuple(stored[0]) is None
    fresh = sync_saver.get_tuple(generate_config("prune-values"))
    assert fresh is not None and fresh.checkpoint["channel_values"]["b"] == ["kept"]


def test_delete_for_runs_keeps_values_later_runs_use(sync_saver: CosmosDBSaver) -> None:
    """Deleting the run that wrote a value keeps that value for the runs that inherited it."""
    stored = _chain(sync_saver, "runs-values", ["old", "new", "new"])
    sync_saver.delete_for_runs(["old"])
    listed = list(sync_saver.list(generate_config("runs-values")))
    assert [t.config for t in listed] == [stored[2], stored[1]]
    assert all(t.checkpoint["channel_values"]["b"] == ["kept"] for t in listed)
    sync_saver.delete_for_runs(["new"])
    assert sync_saver.get_tuple(generate_config("runs-values")) is None
    assert list(sync_saver.list(generate_config("runs-values"))) == []


def test_copy_thread_copies_inherited_values(sync_saver: CosmosDBSaver) -> None:
    """A copied thread reads the same values, inherited ones included, and is independent."""
    stored = _chain(sync_saver, "copy-src", ["r", "r", "r"])
    sync_saver.copy_thread("copy-src", "copy-dst")
    sync_saver.delete_thread("copy-src")
    copied = list(sync_saver.list(generate_config("copy-dst")))
    assert [t.config["configurable"]["checkpoint_id"] for t in copied] == [
        c["configurable"]["checkpoint_id"] for c in reversed(stored)
    ]
    assert all(t.checkpoint["channel_values"]["b"] == ["kept"] for t in copied)
    assert sync_saver.get_tuple(generate_config("copy-src")) is None


def test_repeated_writes_keep_the_first_unless_special(sync_saver: CosmosDBSaver) -> None:
    """As in PostgresSaver: a second put_writes for the same task and index keeps the first
    value, large values included; writes to special channels (errors, interrupts) replace it."""
    from langgraph.checkpoint.base import ERROR

    stored = _put(sync_saver, "repeat", "", 1)
    first, second = "a" * 100_000, "b" * 100_000
    sync_saver.put_writes(stored, [("ch", first), (ERROR, "e1")], "task")
    sync_saver.put_writes(stored, [("ch", second)], "task")
    sync_saver.put_writes(stored, [(ERROR, "e2")], "task")
    tup = sync_saver.get_tuple(stored)
    assert tup is not None
    assert sorted((w[1], w[2]) for w in tup.pending_writes or []) == [
        (ERROR, "e2"),
        ("ch", first),
    ]
