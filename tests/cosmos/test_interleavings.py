"""Races between writers, readers and clean-up, played step by step (issue 19).

The operation generators of two savers (two processes: each its own head cache) run against
one in-memory container, and the test decides which one's next storage step runs: so the
interleavings that are rare on a real service (a fork reading its parent while another
process's clean-up removes it; clean-up reading a thread while a fork stores a checkpoint;
pending writes stored before their checkpoint; a delete under a run) happen on purpose, and
hypothesis explores the rest.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest
from agentstate_cosmosdb import CosmosMissingDocumentError, CosmosThreadDeletedError
from agentstate_cosmosdb._state import ORPHAN_GRACE_SECONDS
from agentstate_cosmosdb.ops import Batch, Emit, Ops
from agentstate_cosmosdb.schema import checkpoint_doc_id
from hypothesis import given, settings
from hypothesis import strategies as st
from langgraph.checkpoint.base import Checkpoint
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.conformance.test_utils import (
    generate_checkpoint,
    generate_config,
    generate_metadata,
)

from .memory import MemoryContainer, memory_saver

THREAD = "t"


class Stepper:
    """One operation generator, advanced a storage step at a time on ``store``."""

    def __init__(self, store: MemoryContainer, ops: Ops[Any]) -> None:
        self.store = store
        self.ops = ops
        self.done = False
        self.value: Any = None
        self.emitted: list[Any] = []
        self.step: Any = None
        self._advance(None, first=True)

    def _advance(self, result: Any, first: bool = False) -> None:
        try:
            self.step = next(self.ops) if first else self.ops.send(result)
            while isinstance(self.step, Emit):
                self.emitted.append(self.step.value)
                self.step = self.ops.send(None)
        except StopIteration as stop:
            self.done, self.value = True, stop.value

    def run_one(self) -> None:
        """Run the pending step."""
        assert not self.done
        self._advance(self.store._step(self.step))

    def run_until(self, stop: Callable[[Any], bool]) -> None:
        """Run steps until the pending one matches ``stop`` (not run) or the operation ends."""
        while not self.done and not stop(self.step):
            self.run_one()

    def finish(self) -> Any:
        while not self.done:
            self.run_one()
        return self.value


def is_batch(step: Any) -> bool:
    return isinstance(step, Batch)


def nth_batch(n: int) -> Callable[[Any], bool]:
    seen = [0]

    def stop(step: Any) -> bool:
        if isinstance(step, Batch):
            seen[0] += 1
            return seen[0] == n
        return False

    return stop


_serial = iter(range(1, 10**9))


def put_ops(saver: Any, parent: Any, value: Any, *, new: bool = True) -> tuple[Ops[Any], Any]:
    """A put of channel ``a`` (a new version when ``new``) on ``parent``; (ops, checkpoint)."""
    serial = next(_serial)
    version = f"{serial:032}.{random.random():016}"
    versions = {"a": version if new else parent_version(parent)}
    checkpoint = generate_checkpoint(
        checkpoint_id=str(uuid6(clock_seq=serial)),
        channel_values={"a": value},
        channel_versions=versions,
    )
    ops = saver._put_ops(
        parent, checkpoint, generate_metadata(step=serial), versions if new else {}
    )
    return ops, checkpoint


_versions: dict[str, str] = {}


def parent_version(parent: Any) -> str:
    return _versions[parent["configurable"]["checkpoint_id"]]


def big(seed: int) -> dict[str, Any]:
    """A value big enough for a blob document of its own."""
    return {"seed": seed, "blob": random.Random(seed).randbytes(300_000)}


def chain(saver: Any, store: MemoryContainer, values: list[Any]) -> list[Any]:
    """Put a linear history, one new value of ``a`` per checkpoint; their configs."""
    configs, parent = [], generate_config(THREAD)
    for value in values:
        ops, checkpoint = put_ops(saver, parent, value)
        parent = store.run(ops)
        _versions[checkpoint["id"]] = checkpoint["channel_versions"]["a"]
        configs.append(parent)
    return configs


def read_all(saver: Any, store: MemoryContainer) -> list[Any]:
    """The latest checkpoint and every listed one, each read whole (raises otherwise)."""
    latest = store.run(saver._get_tuple_ops(generate_config(THREAD)))
    assert latest is not None
    listed = store.stream(saver._list_ops(generate_config(THREAD)))
    for tup in listed:
        again = store.run(saver._get_tuple_ops(tup.config))
        assert again is not None and again.checkpoint == tup.checkpoint
    return listed


# --------------------------------------------------------------------------------------------
# Forks and clean-up in two processes
# --------------------------------------------------------------------------------------------


def test_a_fork_whose_parent_clean_up_removes_meanwhile_writes_the_values_again() -> None:
    """Process A forks from an older checkpoint and has built its batch (inheriting the
    parent's value document); process B's put with keep_checkpoints=1 then removes that
    checkpoint and its value. A's batch is refused (it reads the value document it inherits),
    A builds the checkpoint again from what is stored (the parent is gone: the value is written
    again), and the thread reads whole: the fork, and B's checkpoint."""
    store = MemoryContainer()
    a, b = memory_saver(), memory_saver(keep_checkpoints=1)
    configs = chain(a, store, [big(1), big(2), big(3)])
    fork_ops, fork = put_ops(a, configs[1], None, new=False)
    fork["channel_values"]["a"] = big(2)  # the parent's value, inherited
    forking = Stepper(store, fork_ops)
    forking.run_until(is_batch)
    b_ops, _ = put_ops(b, configs[2], big(4))
    store.run(b_ops)
    parent_doc = checkpoint_doc_id("", configs[1]["configurable"]["checkpoint_id"])
    assert (forking.step.pk, parent_doc) not in store.docs  # removed, with its value
    batches = store.counts.get("Batch", 0)
    stored = forking.finish()
    assert store.counts["Batch"] >= batches + 2  # refused, then built again
    tup = store.run(a._get_tuple_ops(stored))
    assert tup is not None and tup.checkpoint["channel_values"]["a"] == big(2)
    read_all(memory_saver(), store)


def test_clean_up_that_read_the_thread_before_a_fork_is_refused() -> None:
    """Process B's clean-up has read the thread (and decided to remove an older checkpoint and
    its value); process A then forks from that checkpoint and stores its batch (moving the
    head). B's clean-up batch is refused by its fence (the head moved): nothing A's checkpoint
    needs is deleted, and the thread reads whole."""
    store = MemoryContainer()
    a, b = memory_saver(), memory_saver(keep_checkpoints=1)
    configs = chain(a, store, [big(1), big(2), big(3)])
    b_ops, _ = put_ops(b, configs[2], big(4))
    cleaning = Stepper(store, b_ops)
    cleaning.run_until(nth_batch(2))  # stored its checkpoint; its clean-up is next
    assert not cleaning.done
    fork_ops, fork = put_ops(a, configs[1], None, new=False)
    fork["channel_values"]["a"] = big(2)
    stored = store.run(fork_ops)
    cleaning.finish()
    tup = store.run(a._get_tuple_ops(stored))
    assert tup is not None and tup.checkpoint["channel_values"]["a"] == big(2)
    read_all(memory_saver(), store)


def test_a_reader_racing_clean_up_reads_the_new_head_not_a_missing_value() -> None:
    """A reader has read the head and is about to read the value documents it references;
    another process's put (keep_checkpoints=1) moves the head and removes them. The reader
    reads the head again and returns the newest checkpoint: never a missing document."""
    store = MemoryContainer()
    writer, reader = memory_saver(keep_checkpoints=1), memory_saver()
    configs = chain(writer, store, [big(1), big(2)])
    store.run(reader._get_tuple_ops(generate_config(THREAD)))  # the reader knows the head
    # Cold cache: head first, then the values it references.
    reading = Stepper(store, memory_saver()._get_tuple_ops(generate_config(THREAD)))
    reading.run_one()  # the head
    put, checkpoint = put_ops(writer, configs[-1], big(3))
    store.run(put)
    latest = reading.finish()
    assert latest is not None and latest.checkpoint["id"] == checkpoint["id"]


def test_a_list_racing_clean_up_leaves_removed_checkpoints_out() -> None:
    """list() read a page of five checkpoints; clean-up in another process (keep_checkpoints=2)
    removes four of them, with their values, before those are read: they are left out of the
    list, none raises, and the one that stays is listed whole."""
    store = MemoryContainer()
    writer = memory_saver(keep_checkpoints=2)
    configs = chain(memory_saver(), store, [big(i) for i in range(5)])
    listing = Stepper(store, memory_saver()._list_ops(generate_config(THREAD)))
    listing.run_one()  # the page of checkpoint documents
    put, checkpoint = put_ops(writer, configs[-1], big(9))
    store.run(put)
    listing.finish()
    assert [t.config for t in listing.emitted] == [configs[-1]]
    assert listing.emitted[0].checkpoint["channel_values"] == {"a": big(4)}
    del checkpoint


@settings(max_examples=60, deadline=None)
@given(
    keep=st.integers(min_value=1, max_value=3),
    rounds=st.lists(
        st.lists(
            st.tuples(
                st.sampled_from(["put", "fork", "fork", "writes", "read", "list"]),
                st.integers(min_value=0, max_value=1),  # which process
                st.integers(min_value=1, max_value=3),  # how far back a fork goes
                st.booleans(),  # a new big value (else the big value is inherited)
            ),
            min_size=2,
            max_size=5,
        ),
        min_size=1,
        max_size=4,
    ),
    schedule=st.lists(st.integers(min_value=0, max_value=4), min_size=50, max_size=200),
)
def test_two_processes_interleaved_never_break_a_thread(
    keep: int, rounds: list[list[tuple[str, int, int, bool]]], schedule: list[int]
) -> None:
    """Two processes with keep_checkpoints: puts, forks from older checkpoints (inheriting a big
    value, or writing a new one), pending writes, reads and lists, their storage steps
    interleaved in any order. No read raises; every put succeeds; afterwards every listed
    checkpoint reads whole with the values it was put with and the pending writes put to it,
    and the latest checkpoint is the newest put."""
    store = MemoryContainer()
    savers = [memory_saver(keep_checkpoints=keep), memory_saver(keep_checkpoints=keep)]
    stored: dict[str, Checkpoint] = {}
    writes: dict[str, list[Any]] = {}

    def build(parent: Any, new_big: bool) -> tuple[Checkpoint, dict[str, str]]:
        serial = next(_serial)
        before = stored.get(parent["configurable"].get("checkpoint_id", ""))
        values = dict(before["channel_values"]) if before else {}
        versions = dict(before["channel_versions"]) if before else {}
        new: dict[str, str] = {"a": f"{serial:032}.{random.random():016}"}
        values["a"] = ["small", serial]
        if new_big or "b" not in values:
            new["b"] = f"{serial:032}.{random.random():016}"
            values["b"] = big(serial)
        versions.update(new)
        checkpoint = generate_checkpoint(
            checkpoint_id=str(uuid6(clock_seq=serial)),
            channel_values=values,
            channel_versions=versions,
        )
        stored[checkpoint["id"]] = checkpoint
        return checkpoint, new

    first, first_new = build(generate_config(THREAD), True)
    configs = [
        store.run(
            savers[0]._put_ops(generate_config(THREAD), first, generate_metadata(), first_new)
        )
    ]
    picks = iter(schedule * 50)
    for round_ops in rounds:
        steppers: list[tuple[str, Stepper, Any]] = []
        for kind, who, back, large in round_ops:
            saver = savers[who]
            parent = configs[max(0, len(configs) - 1 - (back if kind == "fork" else 0))]
            if kind in ("put", "fork"):
                checkpoint, new = build(parent, large)
                ops = saver._put_ops(parent, checkpoint, generate_metadata(), new)
                steppers.append((kind, Stepper(store, ops), checkpoint))
            elif kind == "writes":
                write = [("out", ["w", next(_serial)])]
                cp_id = parent["configurable"]["checkpoint_id"]
                ops = saver._put_writes_ops(parent, write, f"task-{next(_serial)}", "p")
                steppers.append((kind, Stepper(store, ops), (cp_id, write)))
            elif kind == "read":
                ops = saver._get_tuple_ops(generate_config(THREAD))
                steppers.append((kind, Stepper(store, ops), None))
            else:
                steppers.append(
                    (kind, Stepper(store, saver._list_ops(generate_config(THREAD))), None)
                )
        live = [s for s in steppers if not s[1].done]
        while live:
            kind, stepper, extra = live[next(picks) % len(live)]
            stepper.run_one()
            live = [s for s in steppers if not s[1].done]
        for kind, stepper, extra in steppers:
            if kind in ("put", "fork"):
                configs.append(stepper.value)
            elif kind == "writes":
                cp_id, write = extra
                writes.setdefault(cp_id, []).extend(write)
    reader = memory_saver()
    listed = read_all(reader, store)
    latest = store.run(reader._get_tuple_ops(generate_config(THREAD)))
    assert latest.checkpoint["id"] == max(stored)
    for tup in listed:
        assert tup.checkpoint["channel_values"] == stored[tup.checkpoint["id"]]["channel_values"]
        got = sorted((w[1], w[2]) for w in tup.pending_writes or [])
        assert got == sorted(writes.get(tup.checkpoint["id"], []))


# --------------------------------------------------------------------------------------------
# Pending writes stored before their checkpoint, orphans, delete under a run
# --------------------------------------------------------------------------------------------


def test_writes_stored_before_their_checkpoint_survive_the_clean_up_in_between() -> None:
    """LangGraph (durability="async") stores a task's writes for checkpoint k+1 before k+1
    itself: the clean-up after put(k) reads the thread in between, and keeps them (without
    the fix it deleted them: the branch ran again after a crash, an interrupt vanished);
    once k+1 is stored, it has them."""
    store = MemoryContainer()
    saver = memory_saver(keep_checkpoints=1)
    configs = chain(saver, store, [big(1), big(2)])
    ops, checkpoint = put_ops(saver, configs[-1], ["k"])
    putting = Stepper(store, ops)
    putting.run_until(is_batch)
    putting.run_one()  # put(k) stored; its clean-up reads the thread next
    next_id = str(uuid6(clock_seq=next(_serial)))
    early = generate_config(THREAD, checkpoint_id=next_id)
    store.run(saver._put_writes_ops(early, [("out", "early")], "task", "p"))
    stored_k = putting.finish()
    kinds = {d["kind"] for d in store.docs.values() if d.get("checkpoint_id") == next_id}
    assert kinds == {"writes", "writes_mark"}
    serial = next(_serial)
    k1 = generate_checkpoint(
        checkpoint_id=next_id,
        channel_values={"a": ["k+1"]},
        channel_versions={"a": f"{serial:032}.0"},
    )
    store.run(saver._put_ops(stored_k, k1, generate_metadata(), {"a": f"{serial:032}.0"}))
    latest = store.run(saver._get_tuple_ops(generate_config(THREAD)))
    assert latest.checkpoint["id"] == next_id
    assert latest.pending_writes == [("task", "out", "early")]
    del checkpoint


def test_orphans_are_removed_once_older_than_the_grace_period() -> None:
    """The leftovers of a run that died (writes of a checkpoint never stored, a value written
    for a put that never stored its batch) stay while they may be work in progress, and go
    with the first clean-up after the grace period."""
    store = MemoryContainer()
    saver = memory_saver(keep_checkpoints=2)
    configs = chain(saver, store, [["a"], ["b"]])
    dead = generate_config(THREAD, checkpoint_id=str(uuid6(clock_seq=next(_serial))))
    store.run(saver._put_writes_ops(dead, [("out", big(7))], "task", "p"))
    ops, _ = put_ops(saver, configs[-1], ["c"])
    configs.append(store.run(ops))
    dead_id = dead["configurable"]["checkpoint_id"]
    assert any(d.get("checkpoint_id") == dead_id for d in store.docs.values())
    store.now += ORPHAN_GRACE_SECONDS + 5
    ops, _ = put_ops(saver, configs[-1], ["d"])
    store.run(ops)
    assert not any(d.get("checkpoint_id") == dead_id for d in store.docs.values())
    read_all(saver, store)


def test_delete_thread_under_a_run_refuses_the_run_and_keeps_the_id_usable() -> None:
    """A run has stored checkpoints; the thread is deleted; the run's next pending writes and
    its next checkpoint are refused with CosmosThreadDeletedError and store nothing; a new
    run on the same thread id starts afresh and reads whole."""
    store = MemoryContainer()
    run, other = memory_saver(), memory_saver()
    configs = chain(run, store, [big(1), ["b"]])
    store.run(other._delete_thread_ops(THREAD))
    assert [d["kind"] for d in store.docs.values()] == ["deleted"]
    with pytest.raises(CosmosThreadDeletedError, match="deleted"):
        store.run(run._put_writes_ops(configs[-1], [("out", 1)], "task", "p"))
    ops, _ = put_ops(run, configs[-1], ["c"])
    with pytest.raises(CosmosThreadDeletedError, match="Start the thread again"):
        store.run(ops)
    assert [d["kind"] for d in store.docs.values()] == ["deleted"]
    assert store.run(run._get_tuple_ops(generate_config(THREAD))) is None
    fresh, _ = put_ops(run, generate_config(THREAD), ["new"])
    store.run(fresh)
    assert read_all(run, store)[0].checkpoint["channel_values"] == {"a": ["new"]}


def test_writes_stored_beside_their_refused_checkpoint_go_with_it() -> None:
    """durability="async": the next task's writes for checkpoint k+1 are stored while the
    put of k+1 (whose parent the delete removed) is refused. When its clean-up of k+1's writes
    reads the thread before they land, the writes still go, and refuse the run; only the
    tombstone is left (the full-suite run that found this: tests/cosmos/
    test_delete_under_run.py kept a writes mark and a writes document)."""
    store = MemoryContainer()
    run, other = memory_saver(), memory_saver()
    configs = chain(run, store, [big(1), ["b"]])
    store.run(other._delete_thread_ops(THREAD))
    ops, checkpoint = put_ops(run, configs[-1], ["c"])
    next_config = generate_config(THREAD, checkpoint_id=checkpoint["id"])
    writing = Stepper(store, run._put_writes_ops(next_config, [("out", 1)], "task", "p"))
    writing.run_until(is_batch)  # past its checks, its first batch (which reads the head) next
    with pytest.raises(CosmosThreadDeletedError, match="Start the thread again"):
        store.run(ops)  # refused; its clean-up finds none of the writes yet
    with pytest.raises(CosmosThreadDeletedError, match="are refused too"):
        writing.finish()
    assert [d["kind"] for d in store.docs.values()] == ["deleted"]
    fresh, _ = put_ops(run, generate_config(THREAD), ["new"])
    store.run(fresh)
    assert read_all(run, store)[0].checkpoint["channel_values"] == {"a": ["new"]}


def test_a_missing_value_of_an_unchanged_head_is_still_an_error() -> None:
    """The re-reads that absorb races do not hide real damage: a value document deleted
    behind the savers' back (the head has not moved) raises CosmosMissingDocumentError."""
    store = MemoryContainer()
    saver = memory_saver()
    chain(saver, store, [big(1), big(2)])
    blob = next(
        k
        for k, d in store.docs.items()
        if d["kind"] == "blob" and d["version"] == parent_version_of(store)
    )
    del store.docs[blob]
    with pytest.raises(CosmosMissingDocumentError):
        store.run(memory_saver()._get_tuple_ops(generate_config(THREAD)))


def parent_version_of(store: MemoryContainer) -> str:
    head = next(d for d in store.docs.values() if d["kind"] == "head")
    return str(head["versions"]["a"])
