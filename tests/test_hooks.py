"""on_prune hand-off: once per id per hook, bounded memory, never silently lost."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

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


def test_messages_without_ids_are_always_delivered() -> None:
    hook = Recorder()
    reducer = reducer_with(hook)
    history = [{"role": "user", "content": str(i)} for i in range(8)]
    reducer.reduce(existing=history)
    reducer.reduce(existing=history)
    assert len(hook.batches) == 2


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
