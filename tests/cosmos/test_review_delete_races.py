"""REVIEW (branch review-cosmos): known failing reproducers of delete_thread under a run.

The two step-by-step tests failed before the proposed fix (the put's ordered way now creates
a head only beside its parent, in one batch); the random schedules cover the rest.
"""

from __future__ import annotations

import contextlib
import random
from typing import Any

import pytest
from agentstate_cosmosdb import CosmosThreadDeletedError
from agentstate_cosmosdb.ops import Batch, Delete, Read
from langgraph.checkpoint.conformance.test_utils import generate_config

from .memory import MemoryContainer, memory_saver
from .test_interleavings import THREAD, Stepper, big, chain, nth_batch, put_ops


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


def test_review_put_refused_twice_by_a_delete_does_not_resurrect_the_thread() -> None:
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


def test_review_put_ordered_way_beside_a_delete_leaves_no_headless_thread() -> None:
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
def test_review_random_schedules_of_put_writes_and_delete(variant: str, pre_delete: bool) -> None:
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
