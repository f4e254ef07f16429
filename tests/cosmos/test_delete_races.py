"""delete_thread under a run, played step by step on an in-memory container (see
test_interleavings): a put refused twice that takes the ordered way, subgraph calls whose
root checkpoint belongs to the deleted run, a namespace left with a head and no checkpoint,
and random schedules of put, put_writes and delete_thread. After each, only the tombstone is
left and every error is CosmosThreadDeletedError.
"""

from __future__ import annotations

import contextlib
import random
from typing import Any

import pytest
from agentstate_cosmosdb import CosmosThreadDeletedError
from agentstate_cosmosdb._state import MAINTENANCE_ROUNDS
from agentstate_cosmosdb.errors import CosmosOperationError
from agentstate_cosmosdb.ops import Batch, Delete, Query, Read, Sleep
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.conformance.test_utils import (
    generate_checkpoint,
    generate_config,
    generate_metadata,
)

from .memory import MemoryContainer, memory_saver
from .test_interleavings import THREAD, Stepper, big, chain, is_batch, nth_batch, put_ops


def deletes_a_head(step: Any) -> bool:
    return isinstance(step, Batch) and any(
        isinstance(op, Delete) and op.id.startswith("h.") for op in step.ops
    )


def reads_a_head(step: Any) -> bool:
    return isinstance(step, Read) and step.id.startswith("h.")


def _setup() -> tuple[MemoryContainer, Any, Stepper, Stepper]:
    store = MemoryContainer()
    run, other = memory_saver(), memory_saver()
    configs = chain(run, store, [big(1), ["b"]])
    ops, _ = put_ops(run, configs[-1], ["c"])
    deleting = Stepper(store, other._delete_thread_ops(THREAD))
    putting = Stepper(store, ops)
    # delete_thread: tombstone, fences (the head replaced), history removed; next: the batch
    # that removes the last checkpoint and its head.
    deleting.run_until(deletes_a_head)
    # the put: its first batch (cached head, etag stale now) is refused; it reads the head
    # again (still there) and builds on it; next: its second batch.
    putting.run_until(nth_batch(2))
    return store, run, deleting, putting


def test_put_refused_twice_by_a_delete_does_not_resurrect_the_thread() -> None:
    """The delete removes the head between the put's fresh read and its second batch; the put
    takes the ordered way (self-contained checkpoint, head created by _advance_head_ops) after
    delete_thread returned. Seen: the put returns normally, and a checkpoint and a head of the
    deleted run are stored after delete_thread returned."""
    store, _, deleting, putting = _setup()
    deleting.finish()  # returns: the thread is gone, only the tombstone is left
    assert [d["kind"] for d in store.docs.values()] == ["deleted"]
    with pytest.raises(CosmosThreadDeletedError):
        putting.finish()
    assert [d["kind"] for d in store.docs.values()] == ["deleted"]


def test_put_ordered_way_beside_a_delete_leaves_no_headless_thread() -> None:
    """As above, but the delete's next round removes the put's (headless) checkpoint before
    the put creates the head. Seen: only a head is left beside the tombstone; get_tuple returns
    the deleted run's checkpoint, and delete_thread can no longer delete the thread (it raises
    "kept changing ... What is left is a valid thread" after 6 rounds, every time)."""
    store, _, deleting, putting = _setup()
    deleting.run_one()  # the last checkpoint and the head go
    putting.run_one()  # its second batch is refused (no head)
    putting.run_until(reads_a_head)  # the ordered way: the checkpoint is stored, no head yet
    deleting.finish()  # finds that checkpoint, removes it; delete_thread returns
    with contextlib.suppress(CosmosThreadDeletedError):
        putting.finish()  # no head: it created one (now: refused)
    kinds = sorted(d["kind"] for d in store.docs.values())
    fresh = memory_saver()
    again_error = None
    try:
        store.run(fresh._delete_thread_ops(THREAD))
    except Exception as exc:
        again_error = exc
    assert kinds == ["deleted"], kinds
    assert again_error is None
    assert store.run(fresh._get_tuple_ops(generate_config(THREAD))) is None


WRITES = {
    "small": [("out", 1)],
    "big": [("out", big(7))],
    "special": [("__interrupt__", ("x",))],
    "error": [("__error__", "boom")],
    "parts": [(f"c{i}", "x" * 600_000) for i in range(3)],
}


@pytest.mark.parametrize("variant", sorted(WRITES))
@pytest.mark.parametrize("pre_delete", [False, True])
def test_random_schedules_of_put_writes_and_delete(variant: str, pre_delete: bool) -> None:
    """put(k+1), put_writes (for k+1, or for k: a checkpoint the delete covers) and
    delete_thread, one storage step at a time in random order: only the tombstone is left and
    every error is CosmosThreadDeletedError."""
    for seed in range(120):
        rnd = random.Random(seed)
        store = MemoryContainer()
        run, other = memory_saver(), memory_saver()
        configs = chain(run, store, [big(1), ["b"]])
        ops, checkpoint = put_ops(run, configs[-1], ["c"])
        target = (
            configs[-1] if pre_delete else generate_config(THREAD, checkpoint_id=checkpoint["id"])
        )
        steppers = [
            Stepper(store, ops),
            Stepper(store, run._put_writes_ops(target, WRITES[variant], "task1", "p1")),
            Stepper(store, other._delete_thread_ops(THREAD)),
        ]
        live = [s for s in steppers if not s.done]
        while live:
            stepper = rnd.choice(live)
            try:
                stepper.run_one()
            except CosmosThreadDeletedError:
                stepper.done = True
            live = [s for s in steppers if not s.done]
        assert [d["kind"] for d in store.docs.values()] == ["deleted"], seed


# -- subgraph calls ------------------------------------------------------------------------

CALL_NS = "sub:9f0c"


def call_config(root: str, checkpoint_id: str | None = None) -> Any:
    """A config in a subgraph call's namespace, run under root checkpoint ``root``."""
    config = generate_config(THREAD, checkpoint_ns=CALL_NS, checkpoint_id=checkpoint_id)
    config["configurable"]["checkpoint_map"] = {"": root}
    return config


def call_put_ops(saver: Any, root: str, parent: Any = None) -> tuple[Any, Any]:
    """A put in the call's namespace (its first without ``parent``); (ops, checkpoint)."""
    checkpoint = generate_checkpoint(checkpoint_id=str(uuid6()), channel_values={"s": ["x"]})
    config = parent if parent is not None else call_config(root)
    metadata = generate_metadata(parents={"": root})
    return saver._put_ops(config, checkpoint, metadata, {}), checkpoint


def only_the_tombstone(store: MemoryContainer) -> bool:
    return [d["kind"] for d in store.docs.values()] == ["deleted"]


def deleted_under_a_node() -> tuple[MemoryContainer, Any, list[Any]]:
    """A run stored C1 and C2; another process deleted the thread."""
    store = MemoryContainer()
    run, other = memory_saver(), memory_saver()
    configs = chain(run, store, [big(1), ["b"]])
    store.run(other._delete_thread_ops(THREAD))
    return store, run, configs


def test_a_call_under_a_root_the_tombstone_covers_stores_nothing() -> None:
    """durability="sync": the node started from C2, which was stored before the delete; the
    subgraph it calls afterwards is refused at its first put and first write."""
    store, run, configs = deleted_under_a_node()
    root = configs[-1]["configurable"]["checkpoint_id"]
    # LangGraph reads the call's namespace first: the saver then remembers it has no head,
    # which must not pass for a call stored here before.
    assert store.run(run._get_tuple_ops(call_config(root))) is None
    ops, checkpoint = call_put_ops(run, root)
    with pytest.raises(CosmosThreadDeletedError, match="subgraph call"):
        store.run(ops)
    writes = call_config(root, checkpoint["id"])
    with pytest.raises(CosmosThreadDeletedError, match="subgraph call"):
        store.run(run._put_writes_ops(writes, [("s", 1)], "task", "p"))
    assert only_the_tombstone(store)


def test_writes_of_a_call_made_after_the_delete_are_never_stored() -> None:
    """A call of the deleted run goes on after the delete and makes a new checkpoint (not
    covered by the tombstone), with no head in its namespace: its writes are refused before
    anything is stored. Stored first and removed afterwards, they were visible after the
    run had failed: LangGraph stops awaiting the other Send calls' writes when one call
    fails, and the event loop may end before the removal (asyncio.run returning)."""
    store, run, configs = deleted_under_a_node()
    root = configs[-1]["configurable"]["checkpoint_id"]
    made_after = str(uuid6())
    stepper = Stepper(
        store, run._put_writes_ops(call_config(root, made_after), [("s", 1)], "t", "p")
    )
    stored: list[str] = []
    with pytest.raises(CosmosThreadDeletedError, match="subgraph call"):
        while not stepper.done:
            stepper.run_one()
            stored += [doc_id for _, doc_id in store.docs if doc_id.startswith(("w.", "m."))]
    assert stored == []
    assert only_the_tombstone(store)


def root_after_the_delete(run: Any, configs: list[Any]) -> tuple[Any, str]:
    """The put of C3 (made after the delete, on the removed C2): (ops, its id)."""
    ops, checkpoint = put_ops(run, configs[-1], ["c"])
    return ops, checkpoint["id"]


def test_a_call_stored_before_its_root_is_refused_goes_with_the_root() -> None:
    """durability="async": a subgraph node under C3 stores checkpoints and writes while the
    put of C3 is on its way; C3 is refused and takes the call's namespace with it; the
    call's next put is refused."""
    store, run, configs = deleted_under_a_node()
    root_ops, root = root_after_the_delete(run, configs)
    ops, first = call_put_ops(run, root)
    stored = store.run(ops)
    store.run(run._put_writes_ops(call_config(root, first["id"]), [("s", 1)], "task", "p"))
    assert {d.get("ns") for d in store.docs.values()} == {None, CALL_NS}
    with pytest.raises(CosmosThreadDeletedError, match="Start the thread again"):
        store.run(root_ops)
    assert only_the_tombstone(store)
    ops, _ = call_put_ops(run, root, stored)
    with pytest.raises(CosmosThreadDeletedError, match="subgraph call"):
        store.run(ops)
    assert only_the_tombstone(store)


def test_a_call_that_lands_after_its_roots_clean_up_removes_itself() -> None:
    """The call's put is past its checks when the root's refusal reads the thread; it stores,
    sees the refusal, removes its namespace and raises."""
    store, run, configs = deleted_under_a_node()
    root_ops, root = root_after_the_delete(run, configs)
    ops, _ = call_put_ops(run, root)
    putting = Stepper(store, ops)
    putting.run_until(is_batch)
    with pytest.raises(CosmosThreadDeletedError):
        store.run(root_ops)
    with pytest.raises(CosmosThreadDeletedError, match="subgraph call"):
        putting.finish()
    assert only_the_tombstone(store)


def test_writes_of_a_call_without_a_checkpoint_go_with_its_next_put() -> None:
    """The call's writes landed before any of its checkpoints (nothing there names the root
    to the root's clean-up); the call's first put, refused, removes them."""
    store, run, configs = deleted_under_a_node()
    root_ops, root = root_after_the_delete(run, configs)
    ops, first = call_put_ops(run, root)
    store.run(run._put_writes_ops(call_config(root, first["id"]), [("s", 1)], "task", "p"))
    with pytest.raises(CosmosThreadDeletedError):
        store.run(root_ops)
    assert not only_the_tombstone(store)  # the writes: the root's clean-up cannot tell
    with pytest.raises(CosmosThreadDeletedError, match="subgraph call"):
        store.run(ops)
    assert only_the_tombstone(store)


def test_a_call_on_a_thread_never_deleted_is_stored() -> None:
    """The root checks cost a fresh call one read and refuse nothing: its checkpoints and
    writes read back."""
    store = MemoryContainer()
    run = memory_saver()
    configs = chain(run, store, [["a"]])
    root = configs[-1]["configurable"]["checkpoint_id"]
    ops, first = call_put_ops(run, root)
    stored = store.run(ops)
    store.run(run._put_writes_ops(stored, [("s", 1)], "task", "p"))
    again, _ = call_put_ops(run, root, stored)
    store.run(again)
    tup = store.run(run._get_tuple_ops(stored))
    assert tup is not None and tup.checkpoint["id"] == first["id"]
    assert tup.pending_writes == [("task", "s", 1)]


# -- a namespace left with a head and no checkpoint ----------------------------------------


def test_delete_thread_removes_a_head_whose_checkpoints_are_gone() -> None:
    """However such a head came about (a removal cut short, a document deleted by hand),
    delete_thread removes it and returns (was: six rounds, then CosmosOperationError saying
    the thread kept changing)."""
    store = MemoryContainer()
    run = memory_saver()
    chain(run, store, [["a"], ["b"]])
    for key in [k for k, d in store.docs.items() if d["kind"] != "head"]:
        del store.docs[key]
    assert [d["kind"] for d in store.docs.values()] == ["head"]
    store.run(memory_saver()._delete_thread_ops(THREAD))
    assert only_the_tombstone(store)


def reads_a_writes_document(step: Any) -> bool:
    return isinstance(step, Read) and step.id.startswith("w.")


def test_a_task_writing_again_across_a_delete_stores_nothing() -> None:
    """A task writes again for C2 (a retry with an index it lacked): its create is refused
    (the first writes are there), then delete_thread removes them before it reads them back;
    its create then goes beside the head like a first write, and the tombstone refuses it
    (was: a plain create, stored after delete_thread returned)."""
    store = MemoryContainer()
    run, other = memory_saver(), memory_saver()
    configs = chain(run, store, [big(1), ["b"]])
    store.run(run._put_writes_ops(configs[-1], [("out", 1)], "task", "p"))
    again = Stepper(store, run._put_writes_ops(configs[-1], [("out", 1), ("more", 2)], "task", "p"))
    again.run_until(reads_a_writes_document)
    store.run(other._delete_thread_ops(THREAD))
    assert only_the_tombstone(store)
    with pytest.raises(CosmosThreadDeletedError):
        again.finish()
    assert only_the_tombstone(store)


def test_a_call_under_a_root_written_again_after_the_delete_is_stored() -> None:
    """History written again on a deleted thread id (a migration stores its old checkpoints,
    roots first, whose ids the tombstone covers): a call under a stored root is not the
    deleted run's, and is stored."""
    store, run, configs = deleted_under_a_node()
    old_root = configs[0]["configurable"]["checkpoint_id"]
    checkpoint = generate_checkpoint(checkpoint_id=old_root, channel_values={"a": ["again"]})
    store.run(run._put_ops(generate_config(THREAD), checkpoint, generate_metadata(), {}))
    ops, first = call_put_ops(memory_saver(), old_root)
    stored = store.run(ops)
    assert stored["configurable"]["checkpoint_id"] == first["id"]
    kinds = sorted(d["kind"] for d in store.docs.values() if d.get("ns") == CALL_NS)
    assert kinds == ["checkpoint", "head"]


@pytest.mark.parametrize("first", ["delete", "root", "call"])
def test_random_schedules_of_a_run_with_a_subgraph_call_and_delete(first: str) -> None:
    """delete_thread beside a run whose next root checkpoint C3 has a subgraph call under it
    (its first put, its writes, and the root's writes), one storage step at a time in random
    order (``first`` starts ahead); then the call's next put, as LangGraph makes it. Only the
    tombstone is left, and every error is CosmosThreadDeletedError."""
    for seed in range(100):
        rnd = random.Random(seed)
        store = MemoryContainer()
        run, other = memory_saver(), memory_saver()
        configs = chain(run, store, [big(1), ["b"]])
        root_ops, checkpoint = put_ops(run, configs[-1], ["c"])
        root = checkpoint["id"]
        call_ops, call_first = call_put_ops(run, root)
        call_writes = call_config(root, call_first["id"])
        root_writes = generate_config(THREAD, checkpoint_id=root)
        steppers = {
            "delete": Stepper(store, other._delete_thread_ops(THREAD)),
            "root": Stepper(store, root_ops),
            "call": Stepper(store, call_ops),
            "call writes": Stepper(
                store, run._put_writes_ops(call_writes, [("s", big(seed))], "t1", "p")
            ),
            "root writes": Stepper(store, run._put_writes_ops(root_writes, [("o", 1)], "t2", "p")),
        }
        for _ in range(rnd.randint(0, 6)):
            if not steppers[first].done:
                steppers[first].run_one()
        live = [s for s in steppers.values() if not s.done]
        while live:
            stepper = rnd.choice(live)
            try:
                stepper.run_one()
            except CosmosThreadDeletedError:
                stepper.done = True
            live = [s for s in steppers.values() if not s.done]
        parent = call_config(root, call_first["id"])
        ops, _ = call_put_ops(run, root, parent)
        with contextlib.suppress(CosmosThreadDeletedError):
            store.run(ops)
        assert only_the_tombstone(store), (seed, sorted(d["kind"] for d in store.docs.values()))


# -- a run that keeps writing while delete_thread runs -----------------------------------------


@pytest.mark.parametrize("busy_rounds", [3, None])
def test_delete_thread_waits_between_rounds_for_a_run_that_keeps_writing(
    busy_rounds: int | None,
) -> None:
    """A run puts its next checkpoint right after each read of the thread delete_thread
    makes, so every such round finds the head moved and starts again. Each new round waits
    a backoff first (a run under way gets the time to finish its step); when the run stops
    (after 3 rounds) the delete ends with only the tombstone left, and when it never does
    the delete gives up after MAINTENANCE_ROUNDS rounds with a valid thread left."""
    store = MemoryContainer()
    run, other = memory_saver(), memory_saver()
    parent = chain(run, store, [["a"], ["b"]])[-1]
    ops = other._delete_thread_ops(THREAD)
    rounds = sleeps = 0

    def reads_the_thread(step: Any) -> bool:
        return isinstance(step, Query) or (
            isinstance(step, list) and any(isinstance(op, Query) for op in step)
        )

    outcome: Exception | None = None
    try:
        step = next(ops)
        while True:
            answer = store._step(step)
            if isinstance(step, Sleep):
                sleeps += 1
                assert step.seconds >= 0
            if reads_the_thread(step) and (busy_rounds is None or rounds < busy_rounds):
                rounds += 1
                put, _ = put_ops(run, parent, [f"step {rounds}"])
                parent = store.run(put)
            step = ops.send(answer)
    except StopIteration:
        pass
    except CosmosOperationError as exc:
        outcome = exc
    if busy_rounds is not None:
        assert outcome is None and only_the_tombstone(store)
        assert sleeps == busy_rounds  # none before the read that finds the thread gone
    else:
        assert outcome is not None and "kept changing" in str(outcome)
        assert sleeps == MAINTENANCE_ROUNDS - 1  # a backoff before every round but the first
        latest = store.run(memory_saver()._get_tuple_ops(generate_config(THREAD)))
        assert latest is not None and latest.checkpoint["channel_values"]["a"] == [f"step {rounds}"]


def test_delete_thread_without_a_writer_does_not_wait() -> None:
    """No round cut short, no backoff: a delete nothing races sleeps not at all."""
    store = MemoryContainer()
    chain(memory_saver(), store, [["a"], ["b"]])
    store.run(memory_saver()._delete_thread_ops(THREAD))
    assert only_the_tombstone(store) and store.slept == 0
