"""Many writers, one reducer: a randomized checker of the hand-off and the running summary.

A hypothesis ``RuleBasedStateMachine`` plays schedules against one shared reducer: several
conversations (namespaces whose message ids collide on purpose), turns of chat, tool
calls and repeated "ok"s, concurrent reduces of one conversation (threads; an asyncio
variant runs them as tasks on one loop), a memory store that goes down, slows down,
hangs past ``Handoff.wait`` and comes back, a summarizer and a compressor failing and
recovering, replays of a reduce (as LangGraph's ``get_state`` replays writes) and forks
from older stored lists. Concurrent reduces of one input race; which result is stored is
drawn, as whichever write lands last in a checkpointer.

After every step the checkers of :mod:`tests.invariants.checks` run on every branch:

* nothing lost: every message a branch ever held is in its stored list, or taken by
  every hook (or kept for a retry, with ``on_prune_error="raise"``);
* nothing twice: no hook took a message of a conversation twice, and what it took is
  the message as created (never a compressed version or a summary);
* no tool pair broken in any stored list or model input;
* the model input (the reducer's view of the stored list, what the agent integrations
  send during an outage) is within the bound;
* at most one summarizer call per reduce, and none when a reduce that made its summary
  is replayed.

Seeded and shrinkable (hypothesis). The CI run is sized to a couple of minutes on a
shared machine; ``AGENTSTATE_SOAK=<examples>`` runs that many schedules per machine.
"""

from __future__ import annotations

import asyncio
import contextvars
import itertools
import os
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from agentstate_reducer import (
    Handoff,
    MessageReducer,
    PruneHookError,
    ReducerConfig,
    StepError,
    SummaryError,
)
from agentstate_reducer.messages import content_of, id_of, is_summary
from agentstate_reducer.policy import Compress, DropOldest, Summarize

from . import checks

SOAK = int(os.environ.get("AGENTSTATE_SOAK", "0") or 0)
CONVERSATIONS = ("alice", "bob", "carol")
KINDS = ("chat", "tool", "ok")
STORE_STATES = ("up", "down", "slow", "hang")
SLOW = 0.004  # a slow store: within Handoff.wait, so overlapping reduces wait for it
HANG = 0.03  # a hanging store: past Handoff.wait, so the waiter times out
HANDOFF_WAIT = 0.015
MAX_BRANCHES = 6

_tag: contextvars.ContextVar[int] = contextvars.ContextVar("reduce_tag", default=-1)
_tags = itertools.count()
_POOL = ThreadPoolExecutor(4, thread_name_prefix="many-writers")


def _tokens(message: Any) -> int:
    """A cheap deterministic counter (the checker runs thousands of reduces)."""
    return 1 + len(str(content_of(message) or "")) // 4


@dataclass
class Branch:
    """One line of a conversation's history, as a checkpointer stores it."""

    namespace: str
    stored: list[Any]
    created: set[str] = field(default_factory=set)
    snapshots: list[tuple[list[Any], set[str]]] = field(default_factory=list)
    last_input: list[Any] | None = None
    last_summarised: bool = False
    """The last reduce made its summary and its result was kept (a replay calls nothing)."""


class World:
    """The user code the reducer calls: a flaky memory store, an audit log that never
    fails, a flaky summarizer and compressor; and what each of them saw."""

    def __init__(self) -> None:
        self.store = "up"
        self.summarizer_up = True
        self.compressor_up = True
        self.lock = threading.Lock()
        self.taken: dict[str, list[tuple[str, str]]] = {"memory": [], "audit": []}
        self.messages: list[Any] = []
        self.calls: Counter[int] = Counter()

    def record(self, hook: str, messages: list[Any], namespace: Any) -> None:
        with self.lock:
            self.taken[hook].extend((namespace, id_of(m) or "") for m in messages)
            self.messages.extend((namespace, m) for m in messages)

    # -- sync forms ------------------------------------------------------------------------

    def memory(self, messages: list[Any], namespace: Any) -> None:
        state = self.store
        if state == "down":
            raise ConnectionError("memory store down")
        if state == "hang":
            time.sleep(HANG)
            raise TimeoutError("memory store timed out")
        if state == "slow":
            time.sleep(SLOW)
        self.record("memory", messages, namespace)

    def audit(self, messages: list[Any], namespace: Any) -> None:
        self.record("audit", messages, namespace)

    def summarize(self, messages: list[Any]) -> str:
        if not self.summarizer_up:
            raise RuntimeError("summarizer overloaded")
        with self.lock:
            self.calls[_tag.get()] += 1
        return f"{len(messages)} earlier messages"

    def compress(self, messages: list[Any]) -> list[Any]:
        if not self.compressor_up:
            raise RuntimeError("compressor down")
        # Id-less answers (the original's id is theirs to take), or plain text.
        return [
            {"role": "tool", "tool_call_id": m["tool_call_id"], "content": "gist"}
            if n % 2
            else "gist"
            for n, m in enumerate(messages)
        ]

    # -- async forms -----------------------------------------------------------------------

    async def amemory(self, messages: list[Any], namespace: Any) -> None:
        state = self.store
        if state == "down":
            raise ConnectionError("memory store down")
        if state == "hang":
            await asyncio.sleep(HANG)
            raise TimeoutError("memory store timed out")
        if state == "slow":
            await asyncio.sleep(SLOW)
        self.record("memory", messages, namespace)

    async def aaudit(self, messages: list[Any], namespace: Any) -> None:
        await asyncio.sleep(0)
        self.record("audit", messages, namespace)

    async def asummarize(self, messages: list[Any]) -> str:
        await asyncio.sleep(0)
        return self.summarize(messages)


class ManyWriters(RuleBasedStateMachine):
    """Schedules of turns, overlapping reduces, outages, replays and forks (see the
    module docstring); reduces run in threads."""

    is_async = False

    def __init__(self) -> None:
        super().__init__()
        self.world = World()
        self.branches: dict[str, list[Branch]] = {}
        self.originals: dict[tuple[str, str], Any] = {}
        self.serial = itertools.count()
        self.replay_calls: list[int] = []

    @initialize(
        token_mode=st.booleans(),
        on_prune_error=st.sampled_from(["keep", "keep", "raise"]),
        preserve_first=st.sampled_from([True, False, "system"]),
        summarize=st.booleans(),
    )
    def setup(
        self, token_mode: bool, on_prune_error: str, preserve_first: Any, summarize: bool
    ) -> None:
        world = self.world
        hooks = [world.amemory, world.aaudit] if self.is_async else [world.memory, world.audit]
        summarizer = world.asummarize if self.is_async else world.summarize
        common: dict[str, Any] = {
            "on_prune": hooks,
            "handoff": Handoff(on_error=on_prune_error, retry_backoff=0, wait=HANDOFF_WAIT),
            "preserve_first": preserve_first,
        }
        if token_mode:
            policy: list[Any] = [Compress(world.compress, keep_last=1)]
            if summarize:
                policy.append(Summarize())
                common.update(summarize_fn=summarizer, inject_summary=True, summary_max_tokens=24)
            else:
                policy.append(DropOldest())
            config = ReducerConfig(max_tokens=220, token_counter=_tokens, policy=policy, **common)
            judge = ReducerConfig(
                max_tokens=220, token_counter=_tokens, preserve_first=preserve_first
            )
        else:
            if summarize:
                common.update(summarize_fn=summarizer, inject_summary=True)
            config = ReducerConfig(min_messages=4, max_messages=9, **common)
            judge = ReducerConfig(min_messages=4, max_messages=9, preserve_first=preserve_first)
        self.reducer = MessageReducer(config=config)
        self.judge = MessageReducer(config=judge)
        for name in CONVERSATIONS:
            system = {"role": "system", "content": "Be brief.", "id": "sys"}
            self.originals[(name, "sys")] = system
            self.branches[name] = [Branch(name, [system], {"sys"})]

    # -- the writers -------------------------------------------------------------------------

    def _turn(self, namespace: str, kind: str) -> list[dict[str, Any]]:
        """New messages with ids that repeat across conversations (m0, m1, ...)."""
        n = next(self.serial)
        ids = (f"m{n}.{k}" for k in itertools.count())
        if kind == "ok":
            out = [
                {"role": "user", "content": "ok", "id": next(ids)},
                {"role": "assistant", "content": "ok", "id": next(ids)},
            ]
        elif kind == "tool":
            call = {
                "id": f"call{n}",
                "type": "function",
                "function": {"name": "get", "arguments": "{}"},
            }
            out = [
                {"role": "user", "content": f"fetch {n}", "id": next(ids)},
                {"role": "assistant", "content": None, "tool_calls": [call], "id": next(ids)},
                {
                    "role": "tool",
                    "tool_call_id": f"call{n}",
                    "content": f"data {n} " * 20,
                    "id": next(ids),
                },
                {"role": "assistant", "content": f"found {n}", "id": next(ids)},
            ]
        else:
            out = [
                {"role": "user", "content": f"question {n} from {namespace}", "id": next(ids)},
                {"role": "assistant", "content": f"answer {n}", "id": next(ids)},
            ]
        for message in out:
            self.originals[(namespace, message["id"])] = message
        return out

    def _reduce_many(self, inputs: list[list[Any]], namespace: str) -> list[tuple[int, Any]]:
        """Run one reduce per input at once; ``(tag, result or error)`` each."""
        tags = [next(_tags) for _ in inputs]

        def one(tag: int, messages: list[Any]) -> Any:
            _tag.set(tag)
            try:
                return self.reducer.reduce(messages, namespace=namespace)
            except (PruneHookError, SummaryError, StepError) as exc:
                return exc

        futures = [
            _POOL.submit(contextvars.copy_context().run, one, tag, messages)
            for tag, messages in zip(tags, inputs, strict=True)
        ]
        return [(tag, future.result(timeout=30)) for tag, future in zip(tags, futures, strict=True)]

    def _store(self, branch: Branch, given: list[Any], tag: int, outcome: Any) -> None:
        """Store what a checkpointer would store after ``outcome`` of reducing ``given``."""
        summarised = False
        if isinstance(outcome, PruneHookError):
            result = outcome.result
            assert result is not None, "a PruneHookError always carries a result to go on with"
        elif isinstance(outcome, (SummaryError, StepError)):
            result = None  # with "raise": nothing pruned, the input is stored
        else:
            result = outcome
            summarised = (
                bool(result.summary_messages)
                and result.hook_error is None
                and self.world.calls[tag] == 1
            )
        stored = list(given) if result is None else list(result.surviving)
        branch.snapshots.append((branch.stored, set(branch.created)))
        branch.created |= {id_of(m) for m in given if id_of(m) and not _is_block(m)}
        branch.stored = stored
        branch.last_input = given
        branch.last_summarised = summarised

    # -- rules -----------------------------------------------------------------------------

    @rule(conversation=st.sampled_from(CONVERSATIONS), kind=st.sampled_from(KINDS))
    def turn(self, conversation: str, kind: str) -> None:
        branch = self.branches[conversation][-1]
        given = [*branch.stored, *self._turn(conversation, kind)]
        ((tag, outcome),) = self._reduce_many([given], conversation)
        self._store(branch, given, tag, outcome)

    @rule(
        conversation=st.sampled_from(CONVERSATIONS),
        kind=st.sampled_from(KINDS),
        writers=st.integers(2, 4),
        same=st.booleans(),
        stored=st.integers(0, 3),
    )
    def overlapping_reduces(
        self, conversation: str, kind: str, writers: int, same: bool, stored: int
    ) -> None:
        """A double-submitted request (``same``), or writers holding the list at
        different moments (one message less each): all reduce at once; one result is
        stored, as the last write of a checkpointer."""
        branch = self.branches[conversation][-1]
        new = self._turn(conversation, kind)
        inputs = [
            [*branch.stored, *(new if same else new[: max(1, len(new) - n % 2)])]
            for n in range(writers)
        ]
        outcomes = self._reduce_many(inputs, conversation)
        chosen = stored % writers
        tag, outcome = outcomes[chosen]
        self._store(branch, inputs[chosen], tag, outcome)

    @rule(conversation=st.sampled_from(CONVERSATIONS))
    def replay(self, conversation: str) -> None:
        """The last reduce again, on the same input (LangGraph's get_state, a resume);
        its result is thrown away, as a preview's is."""
        branch = self.branches[conversation][-1]
        if branch.last_input is None:
            return
        ((tag, _),) = self._reduce_many([list(branch.last_input)], conversation)
        if branch.last_summarised:
            self.replay_calls.append(self.world.calls[tag])

    @precondition(lambda self: sum(map(len, self.branches.values())) < MAX_BRANCHES + 3)
    @rule(
        conversation=st.sampled_from(CONVERSATIONS),
        back=st.integers(1, 4),
        kind=st.sampled_from(KINDS),
    )
    def fork(self, conversation: str, back: int, kind: str) -> None:
        """Time travel: a new branch from an older stored list of the conversation."""
        branch = self.branches[conversation][-1]
        if not branch.snapshots:
            return
        stored, created = branch.snapshots[-min(back, len(branch.snapshots))]
        fork = Branch(conversation, list(stored), set(created))
        self.branches[conversation].append(fork)
        given = [*fork.stored, *self._turn(conversation, kind)]
        ((tag, outcome),) = self._reduce_many([given], conversation)
        self._store(fork, given, tag, outcome)

    @rule(state=st.sampled_from(STORE_STATES))
    def memory_store(self, state: str) -> None:
        self.world.store = state

    @rule(up=st.booleans())
    def summarizer(self, up: bool) -> None:
        self.world.summarizer_up = up

    @rule(up=st.booleans())
    def compressor(self, up: bool) -> None:
        self.world.compressor_up = up

    # -- invariants ------------------------------------------------------------------------

    @invariant()
    def nothing_lost(self) -> None:
        for name, branches in self.branches.items():
            safe = self._safe(name)
            for branch in branches:
                checks.not_lost(branch.created, branch.stored, safe)

    @invariant()
    def nothing_twice_and_originals_only(self) -> None:
        world = self.world
        checks.delivered_once(
            (hook, ns, i) for hook, taken in world.taken.items() for ns, i in taken
        )
        for namespace, message in world.messages:
            checks.originals_only(
                [message], {i: m for (ns, i), m in self.originals.items() if ns == namespace}
            )

    @invariant()
    def tool_pairs_and_the_model_input_bound(self) -> None:
        for name, branches in self.branches.items():
            for branch in branches:
                checks.tool_pairs_whole(branch.stored)
                model_input = self.reducer.view(
                    branch.stored, name, on_prune_error="keep"
                ).surviving
                checks.tool_pairs_whole(model_input)
                checks.within_bound(self.judge, self.judge, model_input)

    @invariant()
    def summaries(self) -> None:
        checks.one_call_per_reduce(self.world.calls)
        checks.replays_call_nothing(self.replay_calls)

    def _safe(self, namespace: str) -> set[str]:
        """Ids no list needs to hold any more: taken by every hook, or kept for a retry
        for the hooks that did not take them."""
        per_hook = []
        for index, hook in enumerate(("memory", "audit")):
            taken = {i for ns, i in self.world.taken[hook] if ns == namespace}
            per_hook.append(taken | _pending(self.reducer, index, namespace))
        return set.intersection(*per_hook)

    def teardown(self) -> None:
        # The store is back: every pending hand-off goes out, and still nothing twice.
        self.world.store = "up"
        self.reducer.retry_handoffs()
        checks.delivered_once(
            (hook, ns, i) for hook, taken in self.world.taken.items() for ns, i in taken
        )


class ManyAsyncWriters(ManyWriters):
    """The same schedules with ``areduce``: the overlapping reduces are tasks on one event
    loop (waits for another's hand-off are awaited there), hooks and the summarizer are
    coroutine functions."""

    is_async = True

    def _reduce_many(self, inputs: list[list[Any]], namespace: str) -> list[tuple[int, Any]]:
        tags = [next(_tags) for _ in inputs]

        async def one(tag: int, messages: list[Any]) -> Any:
            _tag.set(tag)
            try:
                return await self.reducer.areduce(messages, namespace=namespace)
            except (PruneHookError, SummaryError, StepError) as exc:
                return exc

        async def all_at_once() -> list[Any]:
            return await asyncio.gather(
                *(one(tag, messages) for tag, messages in zip(tags, inputs, strict=True))
            )

        return list(zip(tags, asyncio.run(all_at_once()), strict=True))

    def teardown(self) -> None:
        self.world.store = "up"
        asyncio.run(self.reducer.aretry_handoffs())
        checks.delivered_once(
            (hook, ns, i) for hook, taken in self.world.taken.items() for ns, i in taken
        )


def _is_block(message: Any) -> bool:
    return is_summary(message)


def _pending(reducer: MessageReducer, hook: int, namespace: str) -> set[str]:
    """Ids kept for a retry for one hook (the reducer's retry store; read here, as a test
    may, to count them as safe)."""
    memory = reducer._delivery._memories[hook]
    return {
        id_of(m) or ""
        for batch in memory.pending
        if batch.namespace == namespace
        for m in batch.messages
    }


def _settings(examples: int, steps: int) -> settings:
    return settings(
        max_examples=SOAK or examples,
        stateful_step_count=steps,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )


ManyWriters.TestCase.settings = _settings(examples=1500, steps=25)
ManyAsyncWriters.TestCase.settings = _settings(examples=500, steps=20)

test_many_writers = pytest.mark.filterwarnings("ignore")(ManyWriters.TestCase)
test_many_async_writers = pytest.mark.filterwarnings("ignore")(ManyAsyncWriters.TestCase)
