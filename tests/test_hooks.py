"""on_prune hand-off: once per id per hook, bounded memory, never silently lost."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentstate_reducer import (
    Background,
    BackgroundHookError,
    Handoff,
    MessageReducer,
    PruneHookError,
    ReducerConfig,
)


def turns(n: int, prefix: str = "m") -> list[dict[str, Any]]:
    return [
        {"role": "user" if i % 2 == 0 else "assistant", "content": str(i), "id": f"{prefix}{i}"}
        for i in range(n)
    ]


class Recorder:
    def __init__(self) -> None:
        self.batches: list[tuple[list[Any], Any]] = []
        self.lock = threading.Lock()

    def __call__(self, pruned: list[Any], namespace: Any) -> None:
        with self.lock:
            self.batches.append((list(pruned), namespace))

    @property
    def ids(self) -> list[str]:
        return [m["id"] for batch, _ in self.batches for m in batch]


def reducer_with(*hooks: Any, **kwargs: Any) -> MessageReducer:
    # No wait after a failure here: these tests retry at once (the wait has its own tests).
    options: dict[str, Any] = {
        "min_messages": 4,
        "max_messages": 6,
        "preserve_first": False,
        "handoff": Handoff(retry_backoff=0),
    }
    options.update(kwargs)
    return MessageReducer(config=ReducerConfig(on_prune=list(hooks), **options))


def test_hooks_get_the_pruned_messages_and_the_namespace() -> None:
    hook = Recorder()
    result = reducer_with(hook).reduce(existing=turns(8), namespace=("memories", "t1"))
    assert hook.batches == [(result.pruned, ("memories", "t1"))]


def test_overlapping_reduces_deliver_each_id_once() -> None:
    """A checkpointer reduces overlapping lists several times per run: one delivery each."""
    hook = Recorder()
    reducer = reducer_with(hook)
    history = turns(20)
    for end in range(1, 21):
        reducer.reduce(existing=history[:end])
        reducer.reduce(existing=history[:end])
    assert sorted(hook.ids) == sorted(set(hook.ids))
    assert len(hook.ids) > 0


def test_messages_without_ids_are_named_by_the_list_they_left() -> None:
    """An id-less message is recognised by its place in the list it was pruned from: the
    same list reduced again (a replay, a double-submitted request) hands nothing over
    twice, while the same words pruned from another list (a later turn saying "ok"
    again, another conversation) are messages of their own and go to the hook."""
    hook = Recorder()
    reducer = reducer_with(hook)
    history = [{"role": "user", "content": str(i)} for i in range(8)]
    reducer.reduce(existing=history)
    reducer.reduce(existing=history)
    assert len(hook.batches) == 1
    later = [*history[4:], *({"role": "user", "content": str(i)} for i in range(4))]
    reducer.reduce(existing=later)
    assert [m["content"] for batch, _ in hook.batches for m in batch] == [
        "0",
        "1",
        "2",
        "3",
        "4",
        "5",
        "6",
        "7",
    ]
    reducer.reduce(existing=history, namespace="another conversation")
    assert len(hook.batches) == 3


def test_dedupe_off_delivers_every_prune() -> None:
    hook = Recorder()
    reducer = reducer_with(hook, handoff=Handoff(dedupe=False, retry_backoff=0))
    reducer.reduce(existing=turns(8))
    reducer.reduce(existing=turns(8))
    assert len(hook.ids) == 2 * len(set(hook.ids))


def test_dedupe_memory_is_bounded() -> None:
    hook = Recorder()
    reducer = reducer_with(hook, handoff=Handoff(dedupe_window=2, retry_backoff=0))
    reducer.reduce(existing=turns(8))  # prunes m0..m3; only m2, m3 are remembered
    reducer.reduce(existing=turns(8))
    assert hook.ids.count("m0") == 2 and hook.ids.count("m3") == 1


@pytest.mark.parametrize(
    ("first", "second", "again"),
    [
        (("memories", "t1"), None, False),  # the saver, then the channel
        (None, ("memories", "t1"), False),  # the channel, then the saver
        (("memories", "t1"), ("memories", "t2"), True),  # two threads: each its own
        (None, None, False),
    ],
)
def test_a_hand_off_without_a_namespace_is_the_same_as_one_with_a_namespace(
    first: Any, second: Any, again: bool
) -> None:
    """The LangGraph channel hands over with ``namespace=None`` and the checkpoint saver
    on the same reducer with ``("memories", thread_id)``: the same message pruned by both
    reaches each hook once. Two namespaces still hand the same message over once each."""
    hook = Recorder()
    reducer = reducer_with(hook)
    reducer.reduce(existing=turns(8), namespace=first)
    reducer.reduce(existing=turns(8), namespace=second)
    assert hook.ids.count("m0") == (2 if again else 1)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from([None, "a", "b"]), st.integers(0, 5)), min_size=1, max_size=12
    ),
    st.integers(1, 6),
)
def test_the_namespace_free_index_follows_the_window(
    deliveries: list[tuple[str | None, int]], window: int
) -> None:
    """Whatever hand-offs came, in any namespaces, with any window: a message is handed
    over under a namespace exactly when the window holds no key of it under that namespace
    or, for one side without a namespace, under the other side (a model of the memory, run
    beside the reducer's)."""
    hook = Recorder()
    reducer = reducer_with(hook, handoff=Handoff(dedupe_window=window, retry_backoff=0))
    remembered: list[tuple[str | None, str]] = []
    for namespace, index in deliveries:
        message = {"role": "user", "content": str(index), "id": f"m{index}"}
        before = len(hook.ids)
        reducer.deliver([message], namespace)
        taken = any(
            ident == message["id"] and (ns == namespace or ns is None or namespace is None)
            for ns, ident in remembered
        )
        assert len(hook.ids) - before == (0 if taken else 1)
        if not taken:
            remembered.append((namespace, message["id"]))
            del remembered[:-window]


def test_a_failing_hook_raises_and_its_messages_come_again() -> None:
    """Nothing is lost: the failure reaches the caller and the next reduce re-delivers."""
    good = Recorder()
    attempts: list[list[Any]] = []

    def flaky(pruned: list[Any], namespace: Any) -> None:
        attempts.append(pruned)
        if len(attempts) == 1:
            raise ConnectionError("memory store down")

    reducer = reducer_with(good, flaky)
    history = turns(8)
    with pytest.raises(PruneHookError, match="memory store down") as info:
        reducer.reduce(existing=history)
    error = info.value
    assert error.pruned == history[:4] and error.result is not None
    assert [hook for hook, _ in error.failures] == [flaky]
    result = reducer.reduce(existing=history)
    assert attempts[1] == result.pruned, "the failed messages are handed over again"
    assert len(good.batches) == 1, "the hook that succeeded is not called twice"


def test_keep_mode_prunes_nothing_when_a_hook_fails() -> None:
    def down(pruned: list[Any], namespace: Any) -> None:
        raise TimeoutError("slow store")

    history = turns(8)
    keep = Handoff(on_error="keep", retry_backoff=0)
    result = reducer_with(down, handoff=keep).reduce(existing=history)
    assert result.surviving == history and result.pruned == []
    assert isinstance(result.hook_error, PruneHookError)


def test_background_runs_off_the_caller_thread_and_drains() -> None:
    seen: list[str] = []
    caller = threading.get_ident()

    def slow(pruned: list[Any], namespace: Any) -> None:
        time.sleep(0.05)
        assert threading.get_ident() != caller
        seen.extend(m["id"] for m in pruned)

    background = Background(slow)
    reducer = reducer_with(background)
    reducer.reduce(existing=turns(8))
    background.drain()  # raises if the hook's own assertion (another thread) failed
    assert seen == ["m0", "m1", "m2", "m3"]
    background.close()


def test_background_keeps_failed_batches_until_the_hook_works_again() -> None:
    """A Background whose store is down keeps the failed batch (drain reports it and it
    stays kept), refuses the next batch so the reducer keeps that one too, and once the
    store is back every message reaches it exactly once."""
    up = threading.Event()
    stored: list[str] = []

    def store(pruned: list[Any], namespace: Any) -> None:
        if not up.is_set():
            raise ConnectionError("vector store unreachable")
        stored.extend(m["id"] for m in pruned)

    background = Background(store, retries=1, retry_delay=0.001)
    reducer = reducer_with(background)
    reducer.reduce(existing=turns(8), namespace="ns")  # m0..m3 go to the pool and fail
    with pytest.raises(BackgroundHookError, match=r"still fails on 1 batch"):
        background.drain()
    assert [m["id"] for m in background.failed_batches[0][0]] == ["m0", "m1", "m2", "m3"]
    with pytest.raises(PruneHookError) as info:
        reducer.reduce(existing=turns(8, prefix="n"), namespace="ns")
    assert isinstance(info.value.failures[0][1], BackgroundHookError)
    assert info.value.kept and reducer.handoff_status().pending_messages == 4
    up.set()
    background.drain()  # the kept m* go through now
    reducer.reduce(existing=turns(8, prefix="o"), namespace="ns")  # retries n*, takes o*
    background.drain()
    assert sorted(stored) == sorted(f"{p}{i}" for p in "mno" for i in range(4))
    assert reducer.handoff_status().pending_messages == 0
    background.close()


def test_background_applies_back_pressure_instead_of_dropping() -> None:
    release = threading.Event()
    done: list[int] = []

    def blocked(pruned: list[Any], namespace: Any) -> None:
        release.wait(5)
        done.append(len(pruned))

    background = Background(blocked, max_pending=1)
    background([1], None)
    second = threading.Thread(target=background, args=([2, 2], None))
    second.start()
    time.sleep(0.05)
    assert second.is_alive(), "the second submit waits for a free slot"
    release.set()
    second.join(5)
    background.close()
    assert sorted(done) == [1, 2]


def test_background_rejects_bad_arguments() -> None:
    with pytest.raises(TypeError, match="needs a callable hook"):
        Background(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_pending must be at least 1, got 0"):
        Background(print, max_pending=0)


def test_a_shared_reducer_delivers_each_id_once_across_threads() -> None:
    """Eight threads reducing overlapping lists through one reducer: one delivery per id."""
    hook = Recorder()
    reducer = reducer_with(hook, min_messages=10, max_messages=20)
    history = turns(400)

    def work(offset: int) -> None:
        for end in range(offset, 401, 7):
            reducer.reduce(existing=history[:end])

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(work, range(1, 9)))
    assert len(hook.ids) == len(set(hook.ids))
    assert {m["id"] for m in reducer.plan(history).pruned} <= set(hook.ids)


def test_a_failing_hook_is_left_alone_for_a_while_then_tried_again() -> None:
    """After a failure the hook is not called for retry_backoff seconds (doubling), so a
    store that is down costs one failing call per wait, not one per reduce; when the wait
    is over it is tried again, and once it works everything goes out, once."""
    calls: list[float] = []
    up = {"yes": False}
    taken: list[str] = []

    def store(pruned: list[Any], namespace: Any) -> None:
        calls.append(time.monotonic())
        if not up["yes"]:
            raise ConnectionError("down")
        taken.extend(m["id"] for m in pruned)

    reducer = reducer_with(store, handoff=Handoff(retry_backoff=0.3, on_error="keep"))
    history = turns(8)
    for _ in range(6):
        assert reducer.reduce(existing=history).hook_error is not None
    assert len(calls) == 1, "the hook was called again while it was left alone"
    time.sleep(0.35)
    reducer.reduce(existing=history)
    assert len(calls) == 2 and reducer.reduce(existing=history).hook_error is not None
    assert len(calls) == 2, "the second wait (0.6 s) was not honoured"
    up["yes"] = True
    time.sleep(0.65)
    result = reducer.reduce(existing=history)
    assert result.hook_error is None and taken == [m["id"] for m in result.pruned]


def test_pending_hand_offs_are_retried_by_reduces_that_prune_nothing() -> None:
    """A reduce under the bound still retries what waits (its hand-off is not only on
    the next prune)."""
    up = {"yes": False}
    taken: list[str] = []

    def store(pruned: list[Any], namespace: Any) -> None:
        if not up["yes"]:
            raise ConnectionError("down")
        taken.extend(m["id"] for m in pruned)

    reducer = reducer_with(store)
    with pytest.raises(PruneHookError):
        reducer.reduce(existing=turns(8))
    up["yes"] = True
    reducer.reduce(existing=turns(2))  # nothing to prune: only the retry
    assert taken == ["m0", "m1", "m2", "m3"] and reducer.handoff_status().pending_messages == 0


def test_keep_mode_asks_for_no_summary_while_a_hook_waits_out_its_backoff() -> None:
    """A prune that no hook could take is not planned: the summarizer is not called for a
    summary the reduce would throw away, and the error says the hook is waiting."""
    hook_calls, summaries = [], []

    def down(pruned: list[Any], namespace: Any) -> None:
        hook_calls.append(len(pruned))
        raise ConnectionError("store down")

    def summarize(messages: list[Any]) -> str:
        summaries.append(len(messages))
        return "earlier questions"

    r = reducer_with(
        down,
        handoff=Handoff(on_error="keep", retry_backoff=60),
        summarize_fn=summarize,
        inject_summary=True,
    )
    history = turns(8)
    for n in range(8, 14):
        result = r.reduce(existing=history)
        assert result.surviving == history and result.pruned == []
        assert isinstance(result.hook_error, PruneHookError)
        history = [*history, {"role": "user", "content": f"question {n}", "id": f"m{n}"}]
    assert len(hook_calls) == 1 and len(summaries) == 1
    assert "tried again in" in str(result.hook_error)
    assert isinstance(result.hook_error.__cause__, ConnectionError)
    assert result.hook_error.result is not None
    assert result.hook_error.result.surviving == result.surviving


# -- overlapping reduces of one conversation: claims on messages in flight ------------------


class Gate:
    """A hook whose first call blocks until released, then fails or succeeds as told;
    later calls record and succeed."""

    def __init__(self, *, first_fails: bool) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.first_fails = first_fails
        self.calls: list[list[str]] = []
        self.lock = threading.Lock()

    def __call__(self, pruned: list[Any], namespace: Any) -> None:
        with self.lock:
            self.calls.append([m["id"] for m in pruned])
            first = len(self.calls) == 1
        if first:
            self.entered.set()
            self.release.wait(10)
            if self.first_fails:
                raise ConnectionError("store down")

    @property
    def delivered(self) -> list[str]:
        """Ids the hook took (the first call only if it did not fail)."""
        calls = self.calls[1:] if self.first_fails else self.calls
        return [i for call in calls for i in call]


def _blocked_in_wait(thread: threading.Thread, timeout: float = 10.0) -> bool:
    """Whether ``thread`` comes to block in the driver's wait for another reduce's claim
    (its stack holds ``Signal.wait``), within ``timeout`` seconds."""
    import sys

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        frame = sys._current_frames().get(thread.ident or -1)
        while frame is not None:
            code = frame.f_code
            if code.co_name == "wait" and code.co_filename.endswith("_calls.py"):
                return True
            frame = frame.f_back
        time.sleep(0.005)
    return False


def _overlap(
    reducer: MessageReducer, gate: Gate, first: Any, second: Any, *, hang: bool = False
) -> tuple[Any, Any]:
    """Run ``first`` until its hook call is under way, start ``second`` and let it block on
    the claimed messages, release the hook (with ``hang``, only once ``second`` has given
    up waiting); return both outcomes (result or error)."""
    out: dict[str, Any] = {}

    def run(name: str, work: Any) -> None:
        try:
            out[name] = work()
        except PruneHookError as exc:
            out[name] = exc

    a = threading.Thread(target=run, args=("first", first))
    a.start()
    assert gate.entered.wait(5)
    b = threading.Thread(target=run, args=("second", second))
    b.start()
    assert _blocked_in_wait(b), "the second reduce never waited for the claim"
    if hang:  # the hook hangs past the wait: the second reduce gives up first
        b.join(10)
    gate.release.set()
    a.join(10)
    b.join(10)
    return out["first"], out["second"]


@pytest.mark.parametrize("first_fails", [True, False])
def test_an_overlapping_reduce_waits_for_the_hand_off_under_way(first_fails: bool) -> None:
    """Two reduces of one conversation prune the same messages at once (keep mode): the
    second waits for the first's delivery instead of skipping the messages. Delivered:
    both prune them and the hook took them once. Failed: both keep them in their lists,
    so whichever list is stored, nothing is lost (before, the second stored a list without
    them while the first's delivery failed)."""
    gate = Gate(first_fails=first_fails)
    reducer = reducer_with(gate, handoff=Handoff(on_error="keep", retry_backoff=0))
    history = turns(8)
    first, second = _overlap(
        reducer, gate, lambda: reducer.reduce(history), lambda: reducer.reduce(history)
    )
    assert len(gate.calls) == 1, "the second reduce handed the same messages over again"
    for result in (first, second):
        if first_fails:
            assert result.surviving == history and result.pruned == []
            assert isinstance(result.hook_error, PruneHookError)
        else:
            assert result.pruned == history[:4] and result.hook_error is None
    assert gate.delivered == ([] if first_fails else ["m0", "m1", "m2", "m3"])
    follow_up = reducer.reduce(history)  # the store answers now: handed over exactly once
    assert follow_up.hook_error is None
    assert sorted(gate.delivered) == ["m0", "m1", "m2", "m3"]


def test_a_waiting_reduce_in_raise_mode_keeps_a_failed_claim_pending() -> None:
    """The first reduce (keep) fails to hand the messages over and keeps them in its list;
    the overlapping one (raise) meets them, waits, and keeps them for a retry as its own
    failure would: PruneHookError(kept=True), then the retry delivers them once."""
    gate = Gate(first_fails=True)
    reducer = reducer_with(gate)
    history = turns(8)
    first, second = _overlap(
        reducer,
        gate,
        lambda: reducer.reduce(history, on_prune_error="keep"),
        lambda: reducer.reduce(history, on_prune_error="raise"),
    )
    assert first.surviving == history and first.hook_error is not None
    assert isinstance(second, PruneHookError) and second.kept
    assert second.result is not None and second.result.pruned == history[:4]
    assert reducer.handoff_status().pending_messages == 4
    reducer.retry_handoffs()
    reducer.reduce(history)  # handed over already: nothing goes twice
    assert sorted(gate.delivered) == ["m0", "m1", "m2", "m3"]
    assert reducer.handoff_status().pending_messages == 0


def test_a_pending_claim_is_not_handed_over_twice_by_an_overlapping_reduce() -> None:
    """The first reduce (raise) fails and keeps the messages pending; a second reduce of
    the same list (raise) while the store is still down keeps them pending too, once: the
    store, back, gets each message once."""
    down = {"yes": True}
    taken: list[str] = []

    def store(pruned: list[Any], namespace: Any) -> None:
        if down["yes"]:
            raise ConnectionError("down")
        taken.extend(m["id"] for m in pruned)

    reducer = reducer_with(store)
    history = turns(8)
    for _ in range(2):
        with pytest.raises(PruneHookError) as info:
            reducer.reduce(history)
        assert info.value.kept
    assert reducer.handoff_status().pending_messages == 4
    down["yes"] = False
    reducer.retry_handoffs()
    reducer.reduce(history)
    assert taken == ["m0", "m1", "m2", "m3"]


@pytest.mark.parametrize("on_prune_error", ["keep", "raise"])
def test_a_hook_that_hangs_does_not_hang_the_overlapping_reduce(on_prune_error: str) -> None:
    """The first reduce's hook hangs longer than ``Handoff.wait``: the overlapping reduce
    stops waiting after that timeout and keeps the messages in its list (prunes nothing),
    in both modes; once the first delivery succeeds the messages go out once."""
    gate = Gate(first_fails=False)
    reducer = reducer_with(gate, handoff=Handoff(wait=0.1, retry_backoff=0))
    history = turns(8)
    began = time.monotonic()
    first, second = _overlap(
        reducer,
        gate,
        lambda: reducer.reduce(history, on_prune_error="keep"),
        lambda: reducer.reduce(history, on_prune_error=on_prune_error),
        hang=True,
    )
    assert first.pruned == history[:4] and first.hook_error is None
    if on_prune_error == "raise":
        assert isinstance(second, PruneHookError) and not second.kept
        assert "Handoff.wait" in str(second)
        # Nothing was pending and the retry store was not full: the message says why
        # they were not kept (the other hand-off may still succeed), not max_pending.
        assert "max_pending" not in str(second) and "nothing was pruned" in str(second)
        assert reducer.handoff_status().pending_messages == 0
        second = second.result
    assert second.surviving == history and second.pruned == []
    assert isinstance(second.hook_error, PruneHookError)
    assert time.monotonic() - began < 5
    reducer.reduce(history)
    assert gate.delivered == ["m0", "m1", "m2", "m3"]


def test_overlapping_async_reduces_wait_without_blocking_the_event_loop() -> None:
    """``areduce`` meets a claim and waits on the loop (other tasks keep running), then
    follows the first delivery's outcome: a failure keeps the messages in both lists."""
    import asyncio

    async def main() -> None:
        release = asyncio.Event()
        entered = asyncio.Event()
        calls: list[list[str]] = []

        async def hook(pruned: list[Any], namespace: Any) -> None:
            calls.append([m["id"] for m in pruned])
            if len(calls) == 1:
                entered.set()
                await release.wait()
                raise ConnectionError("down")

        reducer = reducer_with(hook, handoff=Handoff(on_error="keep", retry_backoff=0))
        history = turns(8)
        first = asyncio.create_task(reducer.areduce(history))
        await entered.wait()
        second = asyncio.create_task(reducer.areduce(history))
        ticks = 0
        for _ in range(10):
            await asyncio.sleep(0.01)
            ticks += 1
        assert not second.done(), "the second reduce did not wait for the claim"
        release.set()
        a, b = await asyncio.gather(first, second)
        assert ticks == 10
        assert a.surviving == history and b.surviving == history
        assert isinstance(b.hook_error, PruneHookError) and len(calls) == 1

    asyncio.run(main())


@settings(max_examples=200, deadline=None)
@given(
    texts=st.lists(st.sampled_from(["ok", "thanks", "fact"]), min_size=1, max_size=12),
    cut=st.integers(0, 11),
)
def test_id_less_keys_name_a_place_in_a_list(texts: list[str], cut: int) -> None:
    """Property: the hand-off's keys of id-less messages are the same when the same list is
    reduced again (a replay), distinct for distinct positions of one list however often
    the same words repeat, and never shared with a list that differs in any message."""
    from agentstate_reducer.hooks import message_keys

    listing = [{"role": "user", "content": text} for text in texts]
    size = max(1, cut % (len(listing) + 1))
    keys = message_keys(listing[:size], "ns", listing)
    replayed = [dict(m) for m in listing]  # a replay: fresh objects, the same list
    assert keys == message_keys(replayed[:size], "ns", replayed)
    assert len(set(keys)) == len(keys)
    twice = [listing[0], listing[0]]  # one object listed twice: two places
    assert len(set(message_keys(twice, "ns", twice))) == 2
    longer = [*listing, {"role": "user", "content": "new"}]
    assert not set(keys) & set(message_keys(longer[:size], "ns", longer))
    assert not set(keys) & set(message_keys(listing[:size], "other", listing))


@pytest.mark.parametrize("on_prune_error", ["keep", "raise"])
def test_a_sync_reduce_on_the_loop_of_the_hand_off_it_meets_does_not_wait(
    on_prune_error: str,
) -> None:
    """``reduce()`` called from a coroutine (on the loop's thread) while an ``areduce()``
    task of that loop hands the same messages over: blocking the thread would stop the
    loop that has to finish that hand-off, for the whole ``Handoff.wait`` (30 s here). It
    does not wait: it keeps the messages, prunes nothing, and its error says to call
    ``areduce()``; the task's hand-off then completes, once."""
    import asyncio

    taken: list[str] = []
    entered: list[bool] = []

    async def hook(pruned: list[Any], namespace: Any) -> None:
        entered.append(True)
        await asyncio.sleep(0.05)
        taken.extend(m["id"] for m in pruned)

    reducer = reducer_with(hook, handoff=Handoff(wait=30, retry_backoff=0))
    history = turns(8)

    async def main() -> Any:
        task = asyncio.create_task(reducer.areduce(history))
        while not entered:  # until the task is in its hook, holding the messages
            await asyncio.sleep(0.01)
        try:
            late = reducer.reduce(history, on_prune_error=on_prune_error)
        except PruneHookError as error:
            assert on_prune_error == "raise" and not error.kept
            late = error.result
        first = await task
        return first, late

    first, late = asyncio.run(main())
    assert late.surviving == history and late.pruned == []
    assert isinstance(late.hook_error, PruneHookError)
    assert "call areduce()" in str(late.hook_error)
    assert first.pruned == history[:4] and taken == ["m0", "m1", "m2", "m3"]
