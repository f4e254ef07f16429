"""The reduction step every saver runs on the way in: :class:`CheckpointReduction`.

One path for :class:`~agentstate_reducer.langgraph.ReducingCheckpointSaver` and the Cosmos
DB savers. LangGraph stores the whole message channel in every checkpoint; a run keeps the
full list in memory and hands it to every ``put``. The reduction

* reduces incrementally: while a run extends the list this instance stored last for the
  chain (thread and namespace), the stored (reduced) list plus the new tail is reduced, as a
  reducer in the state would, so each message is pruned, summarised and handed to
  ``on_prune`` once; a list loaded from storage (a new process, a fork) is reduced whole;
* stores the reduced list under the version the run gave it when the channel changed;
* when the channel did not change but its stored value is not known to be reduced (a
  thread written before the wrapper), gives it a fresh version if the saver draws versions
  at random (LangGraph's savers do), so blob savers write the reduced list instead of
  pointing at the old blob, and marks that version as seen by every node that had seen the
  old one, so nothing re-runs.

Message channels backed by LangGraph's ``DeltaChannel`` are refused with
``NotImplementedError``: their history lives in the writes table, which a reduction at put
time cannot bound.
"""

from __future__ import annotations

import operator
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, Literal, NamedTuple

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata

from .._checks import check_callable, check_choice, check_name
from ..messages import read_view
from ..reducer import MessageReducer
from ..result import ReducerResult
from ._pairing import paired
from .namespace import memory_namespace

try:  # langgraph-checkpoint >= 4 stores DeltaChannel snapshots as this type
    from langgraph.checkpoint.serde.types import _DeltaSnapshot as _DeltaSnapshotType
except ImportError:  # pragma: no cover - older langgraph-checkpoint has no DeltaChannel

    class _DeltaSnapshotType:  # type: ignore[no-redef]
        pass


__all__ = [
    "CheckpointReduction",
    "advance_seen",
    "refuse_delta_channel",
    "same_items",
    "warn_if_summary_is_dropped",
]

#: (thread_id, checkpoint_ns) pairs whose last put is remembered, per reduction. Each entry
#: holds the run's list (about max_messages messages), so this bounds the memory kept.
_REMEMBERED_CHAINS = 256

_DELTA_COUNTERS = "counters_since_delta_snapshot"


class _Stored(NamedTuple):
    """What one reduction stored, so the next put of the same chain can build on it.

    Invariant (what makes building on it correct): ``reduced`` is what this instance
    stored, under ``stored_version``, for checkpoint ``checkpoint_id`` of the chain, whose
    run's list held exactly the objects of ``snapshot`` (in order) at channel version
    ``live_version``; ``changed`` says whether ``reduced`` differs from ``snapshot``. It is
    only used for a put whose parent is ``checkpoint_id`` (LangGraph names the parent in
    the put config), so forks and time travel never build on it, and only while the run's
    list still starts with the same objects (compared by identity, which also sees a list
    changed in place), so an edited or reloaded list is reduced whole.
    """

    checkpoint_id: str
    snapshot: tuple[Any, ...]
    live_version: Any
    stored_version: Any
    reduced: list[Any]
    changed: bool  # whether ``reduced`` differs from ``snapshot``


class _Put(NamedTuple):
    """One put being reduced."""

    config: RunnableConfig
    checkpoint: Checkpoint
    new_versions: ChannelVersions
    chain: tuple[Any, Any]
    live: list[Any]
    live_version: Any
    last: _Stored | None


class _PendingReduce(NamedTuple):
    """A reduce to run: ``existing + new``, and whether ``existing`` already differs."""

    existing: list[Any]
    new: list[Any]
    changed: bool
    namespace: Any


class CheckpointReduction:
    """Reduces the message channel of checkpoints on their way into a saver.

    The one reduction path of :class:`ReducingCheckpointSaver` and the Cosmos DB savers.
    A saver that reduces by itself exposes its instance as ``message_reduction``, which is
    how a wrapper recognises it and does not reduce twice. One instance may be shared by
    threads and event loops.

    A memory store or summarizer that fails never costs the user's turn (the default,
    ``on_prune_error="keep"``): the checkpoint is stored unpruned (the list grows past the
    bound for a while), nothing is marked as handed over, and the next put prunes and
    hands the same messages over again, until the store is back. ``"raise"`` fails the
    put instead (docs/guides/langgraph.md says what LangGraph's durability modes make of
    that).

    Args:
        reducer: The reducer to run on the message list; a reducer also given to an
            agent helper (``ReducerMiddleware``, ``make_pre_model_hook``) runs with the
            helper's ``preserve_first``, so both prune the same window.
        messages_key: The channel holding the message list.
        next_version: The saver's ``get_next_version``, used to give the channel a
            fresh version when its stored value has to be replaced (see :meth:`apply`).
            Without it, such a value is stored inline only.
        on_prune_error: ``"keep"`` (store unpruned and retry later) or ``"raise"``.

    Raises:
        TypeError: ``reducer`` is not a MessageReducer, ``messages_key`` is not a string,
            or ``next_version`` is not callable.
        ValueError: ``messages_key`` is empty, or ``on_prune_error`` is unknown.
    """

    def __init__(
        self,
        reducer: MessageReducer,
        messages_key: str = "messages",
        *,
        next_version: Callable[[Any, None], Any] | None = None,
        on_prune_error: Literal["keep", "raise"] = "keep",
    ) -> None:
        if not isinstance(reducer, MessageReducer):
            raise TypeError(
                f"reducer must be an agentstate_reducer.MessageReducer, got {reducer!r}"
            )
        self._reducer = reducer
        self._key = check_name("messages_key", messages_key)
        self._next_version: Callable[[Any, None], Any] | None = check_callable(
            "next_version", next_version
        )
        self._on_prune_error: Literal["keep", "raise"] = on_prune_error
        check_choice("on_prune_error", on_prune_error, ("keep", "raise"))
        self._chains: OrderedDict[tuple[Any, Any], _Stored] = OrderedDict()
        self._lock = threading.Lock()
        self._warned_missing = False
        warn_if_summary_is_dropped(reducer, "a checkpoint saver")

    @property
    def reducer(self) -> MessageReducer:
        """The reducer run on the message list."""
        return self._reducer

    @property
    def messages_key(self) -> str:
        """The channel holding the message list."""
        return self._key

    @property
    def on_prune_error(self) -> Literal["keep", "raise"]:
        """What a failing hook or summarizer does to a put (``"keep"`` or ``"raise"``)."""
        return self._on_prune_error

    def __repr__(self) -> str:
        return f"CheckpointReduction({self._reducer!r}, messages_key={self._key!r})"

    def namespace(self, config: RunnableConfig | None) -> Any:
        """The namespace ``on_prune`` hooks get for a put with ``config``."""
        return memory_namespace(self._reducer, config)

    def apply(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        new_versions: ChannelVersions,
        *,
        metadata: CheckpointMetadata | None = None,
    ) -> Checkpoint:
        """Return the checkpoint to store: ``checkpoint`` with its message list reduced.

        Call it just before writing, with the arguments of ``put``. What leaves the list
        is handed to the reducer's ``on_prune`` hooks before it returns.

        Args:
            config: The ``put`` config (thread, namespace, parent checkpoint id).
            checkpoint: The checkpoint LangGraph asked to store; never modified.
            new_versions: The channels to write. Updated in place when the message
                channel gets a fresh version: pass the same dict on to the write.
            metadata: The ``put`` metadata, used to recognise a ``DeltaChannel``.

        Returns:
            ``checkpoint`` itself when nothing changes, else a shallow copy whose
            ``channel_values`` (and, after a fresh version, ``channel_versions`` and
            ``versions_seen``) are new dicts.

        Raises:
            NotImplementedError: The message channel is a ``DeltaChannel``.
            TypeError: The message channel holds a list the reducer cannot read (the
                error names the position).
            PruneHookError: With ``on_prune_error="raise"``, an ``on_prune`` hook failed;
                do not write the checkpoint (its messages are kept for the retry).
            SummaryError: With ``on_prune_error="raise"``, ``summarize_fn`` failed; do not
                write the checkpoint.
        """
        put = self._begin(config, checkpoint, new_versions, metadata)
        if put is None:
            return checkpoint
        outcome = self._settle(put)
        if isinstance(outcome, _PendingReduce):
            # Always "keep": the stored list is the retry buffer, never the reducer's memory,
            # so a failed hand-off is retried from storage whatever the mode; "raise" then
            # fails the put as well.
            result = paired(self._reducer).reduce(
                outcome.existing, outcome.new, outcome.namespace, on_prune_error="keep"
            )
            self._raise_if_asked(result)
            outcome = _reduced(outcome, result)
        return self._finish(put, *outcome)

    async def aapply(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        new_versions: ChannelVersions,
        *,
        metadata: CheckpointMetadata | None = None,
    ) -> Checkpoint:
        """Async :meth:`apply`, for async savers: same arguments, result and errors.

        The reduce runs with ``areduce``: coroutine hooks and summarizers are awaited and
        blocking ones run in worker threads, so the event loop keeps serving other runs.

        Raises:
            NotImplementedError: The message channel is a ``DeltaChannel``.
            TypeError: The message channel holds a list the reducer cannot read.
            PruneHookError: As for :meth:`apply`.
            SummaryError: As for :meth:`apply`.
        """
        put = self._begin(config, checkpoint, new_versions, metadata)
        if put is None:
            return checkpoint
        outcome = self._settle(put)
        if isinstance(outcome, _PendingReduce):
            result = await paired(self._reducer).areduce(
                outcome.existing, outcome.new, outcome.namespace, on_prune_error="keep"
            )
            self._raise_if_asked(result)
            outcome = _reduced(outcome, result)
        return self._finish(put, *outcome)

    def _raise_if_asked(self, result: ReducerResult) -> None:
        """With ``on_prune_error="raise"``, fail the put for what the reduce kept."""
        error = result.hook_error or result.summary_error
        if error is not None and self._on_prune_error == "raise":
            raise error

    def _begin(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        new_versions: ChannelVersions,
        metadata: CheckpointMetadata | None,
    ) -> _Put | None:
        """What this put is about, or None when there is no message list to reduce."""
        key = self._key
        values = checkpoint["channel_values"]
        live = values.get(key)
        refuse_delta_channel(key, live, metadata, "a reduction at put time")
        if type(live) is not list:
            if live is None and not self._warned_missing:
                self._warn_if_misnamed(values)
            return None
        conf: Mapping[str, Any] = config.get("configurable") or {}
        chain = (conf.get("thread_id"), conf.get("checkpoint_ns", ""))
        return _Put(
            config,
            checkpoint,
            new_versions,
            chain,
            live,
            checkpoint["channel_versions"].get(key),
            self._recall(chain, conf.get("checkpoint_id")),
        )

    def _settle(self, put: _Put) -> tuple[list[Any], bool] | _PendingReduce:
        """The list to store and whether it differs from the run's, or the reduce to run.

        Builds on the previous put of this chain when the run's list is that put's list
        or extends it: the run appended messages to what was stored, so only the stored
        list plus the new tail is reduced, as a reducer in the state would.
        """
        live, last = put.live, put.last
        if last is not None and _starts_with(live, last.snapshot):
            known = len(last.snapshot)
            if known == len(live) and last.live_version == put.live_version:
                return last.reduced, last.changed  # the same list again (a replayed put)
            if not last.changed:  # nothing cut so far: the stored list is the run's
                existing, new, changed = live, [], False
            else:
                existing, new, changed = last.reduced, live[known:], True
        else:
            existing, new, changed = live, [], False
        if not self._reducer.limits.may_prune(len(existing) + len(new)):
            # A list the limits cannot prune (count mode, at most max_messages) is stored
            # as it is, without the plan reading every message: the hot path.
            return (existing + new if new else existing), changed
        return _PendingReduce(existing, new, changed, self.namespace(put.config))

    def _finish(self, put: _Put, reduced: list[Any], changed: bool) -> Checkpoint:
        """Choose the version the list is stored under, remember the put, build the result."""
        key, checkpoint, live_version, last = self._key, put.checkpoint, put.live_version, put.last
        stored_version: Any = live_version
        if key not in put.new_versions and live_version is not None:
            if last is not None and last.live_version == live_version:
                # The last put of this chain stored this version: reuse where it went.
                stored_version = last.stored_version
                if stored_version != live_version:
                    # Written again each time: one blob, and a lost earlier write heals.
                    put.new_versions[key] = stored_version
            elif changed and (fresh := self._fresh_version(live_version)) is not None:
                # The value stored under this version is not known to be reduced (a
                # thread from before the wrapper): store the reduced list under a new one.
                stored_version = put.new_versions[key] = fresh

        self._remember(
            put.chain,
            _Stored(
                checkpoint["id"],
                tuple(put.live),
                live_version,
                stored_version,
                reduced,
                changed,
            ),
        )
        if not changed and stored_version == live_version:
            return checkpoint
        stored: Checkpoint = checkpoint.copy()
        stored["channel_values"] = {**checkpoint["channel_values"], key: reduced}
        if stored_version != live_version:
            stored["channel_versions"] = {**checkpoint["channel_versions"], key: stored_version}
            stored["versions_seen"] = advance_seen(
                checkpoint["versions_seen"], key, live_version, stored_version
            )
        return stored

    def _warn_if_misnamed(self, values: Mapping[str, Any]) -> None:
        """Warn once when the checkpoint has no ``messages_key`` channel but another
        channel holds messages: the saver would silently store it unbounded."""
        for channel, value in values.items():
            if isinstance(value, list) and value and _reads_as_messages(value):
                self._warned_missing = True
                warnings.warn(
                    f"the checkpoint has no {self._key!r} channel, but {channel!r} holds "
                    f"messages: nothing is bounded; pass messages_key={channel!r}",
                    UserWarning,
                    stacklevel=4,
                )
                return

    def _recall(self, chain: tuple[Any, Any], parent_id: Any) -> _Stored | None:
        last = self._chains.get(chain)  # one dict read: atomic, no lock needed
        if last is None or parent_id is None or last.checkpoint_id != parent_id:
            return None
        return last

    def _remember(self, chain: tuple[Any, Any], stored: _Stored) -> None:
        chains = self._chains
        with self._lock:
            chains[chain] = stored
            chains.move_to_end(chain)
            if len(chains) > _REMEMBERED_CHAINS:
                chains.popitem(last=False)

    def _fresh_version(self, current: Any) -> Any:
        """A new version for the channel, or None when one could collide with the run's.

        The run keeps counting from the version it holds, so a version taken from the
        same counter is safe only if the saver draws it at random (LangGraph's savers
        add a random fraction); a deterministic counter would hand the run the same
        version for different contents later.
        """
        if self._next_version is None:
            return None
        first = self._next_version(current, None)
        if first == self._next_version(current, None):
            return None
        return first


def _reduced(work: _PendingReduce, result: ReducerResult) -> tuple[list[Any], bool]:
    """The list to store after a reduce, and whether it differs from the run's list."""
    if result.pruned or result.summary_messages or result.rewritten:
        return result.surviving, True
    return result.surviving, work.changed


def _reads_as_messages(values: list[Any]) -> bool:
    """Whether every item of ``values`` reads as a message (a cheap look at a few)."""
    try:
        for value in values[:3]:
            read_view(value)
    except TypeError:
        return False
    return True


def warn_if_summary_is_dropped(reducer: MessageReducer, where: str) -> None:
    """Warn when the reducer summarises without injecting the summary: in ``where`` only
    the list is kept, so every summary would be made and thrown away."""
    config = reducer.config
    if config.summarize_fn is not None and not config.inject_summary:
        warnings.warn(
            f"the reducer has summarize_fn but inject_summary=False: in {where} only the "
            "message list is kept, so each summary would be made (an LLM call) and "
            "thrown away; set inject_summary=True",
            UserWarning,
            stacklevel=3,
        )


def refuse_delta_channel(
    key: str, value: Any, metadata: Mapping[str, Any] | None, what: str
) -> None:
    """Raise if channel ``key`` is backed by LangGraph's ``DeltaChannel``.

    Recognised by its stored snapshot type or by the counters LangGraph keeps for it in
    checkpoint metadata.

    Raises:
        NotImplementedError: It is; ``what`` (the operation refused) is named.
    """
    counters = metadata.get(_DELTA_COUNTERS) if metadata else None
    if isinstance(value, _DeltaSnapshotType) or (isinstance(counters, dict) and key in counters):
        raise NotImplementedError(
            f"channel {key!r} is a DeltaChannel: its history lives in the writes table, "
            f"which {what} cannot bound. Bound it in the state instead "
            "(reducer.as_langgraph_reducer()), or declare the channel with add_messages"
        )


def _starts_with(live: list[Any], snapshot: tuple[Any, ...]) -> bool:
    """Whether ``live`` starts with the objects of ``snapshot``, in order."""
    return len(live) >= len(snapshot) and all(map(operator.is_, live, snapshot))


def same_items(a: list[Any], b: list[Any]) -> bool:
    """Whether two lists hold the same objects, in the same order."""
    return len(a) == len(b) and all(map(operator.is_, a, b))


def advance_seen(
    versions_seen: Mapping[str, ChannelVersions], key: str, old: Any, new: Any
) -> dict[str, ChannelVersions]:
    """``versions_seen`` with every node that had seen ``old`` of ``key`` now at ``new``."""
    return {
        node: ({**seen, key: new} if seen.get(key) == old else dict(seen))
        for node, seen in versions_seen.items()
    }
