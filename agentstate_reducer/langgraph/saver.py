"""Bound what any LangGraph checkpointer stores: reduce the message channel on every put.

LangGraph stores the whole message channel in every checkpoint, so a thread's storage
grows with the square of its length, and pruning old checkpoints never shrinks the newest
one. :class:`ReducingCheckpointSaver` wraps the saver you already use and runs a
:class:`~agentstate_reducer.MessageReducer` on the message list just before each
``put`` / ``aput``::

    saver = ReducingCheckpointSaver(PostgresSaver(conn), MessageReducer(10, 40))
    graph = builder.compile(checkpointer=saver)

How the reduced list reaches storage. Savers keep one value per ``(channel, version)``
and write only the channels named in ``new_versions`` (InMemory and PostgreSQL keep
them as blobs, SQLite inline in the checkpoint). A run keeps the full list in memory and
hands it to every ``put``, so :class:`CheckpointReduction`, the shared step:

* reduces incrementally: while a run extends the list this process stored last for the
  thread, the stored (reduced) list plus the new tail is reduced, as a reducer in the
  state would, so each message is pruned, summarised and handed to ``on_prune`` once;
  a list loaded from storage (a new process, a fork) is reduced whole;
* stores the reduced list under the version the run gave it when the channel changed;
* when the channel did not change but its stored value is not known to be reduced (a
  thread written before the wrapper), gives it a fresh version if the saver draws
  versions at random (LangGraph's savers do), so blob savers write the reduced list
  instead of pointing at the old blob, and marks that version as seen by every node that
  had seen the old one, so nothing re-runs.

Long-term memory: pruned messages go to the reducer's ``on_prune`` hooks before the
checkpoint is written, with the namespace ``configurable[reducer.config.namespace_key]``
(default key ``"memory_namespace"``), or ``("memories", thread_id)`` when the run sets
none. If a hook raises, ``put`` raises :class:`~agentstate_reducer.PruneHookError` and
writes nothing, so the run fails at that step and can be resumed; the messages were
not marked as delivered and reach the hooks on the retry. In ``aput`` a reduce that calls
hooks or a summary runs in a worker thread, off the event loop.

Threads stored before the wrapper was added: :func:`compact_thread` /
:func:`acompact_thread` write a reduced checkpoint as the thread's newest.

Limits: a message channel backed by ``DeltaChannel`` is refused (its history lives in
the writes table, which a put-time reduction cannot bound); the bound applies to lists
(``list`` values) only; a ``RemoveMessage`` for an id the saver already pruned fails when
it is replayed from storage, as ``add_messages`` refuses unknown ids.
"""

from __future__ import annotations

import asyncio
import inspect
import operator
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from itertools import islice
from types import TracebackType
from typing import Any, ClassVar, NamedTuple, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
)
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.serde.base import SerializerProtocol
from typing_extensions import Self, override

from agentstate_reducer.langgraph.state import memory_namespace
from agentstate_reducer.reducer import MessageReducer

try:  # langgraph-checkpoint >= 4 stores DeltaChannel snapshots as this type
    from langgraph.checkpoint.serde.types import _DeltaSnapshot as _DeltaSnapshotType
except ImportError:  # pragma: no cover - older langgraph-checkpoint has no DeltaChannel

    class _DeltaSnapshotType:  # type: ignore[no-redef]
        pass


__all__ = [
    "CheckpointReduction",
    "ReducingCheckpointSaver",
    "acompact_thread",
    "compact_thread",
]

#: (thread_id, checkpoint_ns) pairs whose last put is remembered, per reduction. Each entry
#: holds the run's list (about max_messages messages), so this bounds the memory kept.
_REMEMBERED_CHAINS = 256

_DELTA_COUNTERS = "counters_since_delta_snapshot"


class _Stored(NamedTuple):
    """What one reduction stored, so the next put of the same chain can build on it."""

    checkpoint_id: str
    live: list[Any]  # the caller's list object (held, so its identity stays unique)
    live_len: int
    live_version: Any
    stored_version: Any
    reduced: list[Any]
    changed: bool  # whether ``reduced`` differs from ``live``


class _Put(NamedTuple):
    """One put being reduced."""

    config: RunnableConfig
    checkpoint: Checkpoint
    new_versions: ChannelVersions
    chain: tuple[Any, Any]
    live: list[Any]
    live_version: Any
    last: _Stored | None


class _Work(NamedTuple):
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

    Args:
        reducer: The reducer to run on the message list.
        messages_key: The channel holding the message list.
        next_version: The saver's ``get_next_version``, used to give the channel a
            fresh version when its stored value has to be replaced (see :meth:`apply`).
            Without it, such a value is stored inline only.

    Raises:
        TypeError: ``reducer`` is not a MessageReducer, ``messages_key`` is not a
            non-empty string, or ``next_version`` is not callable.
    """

    def __init__(
        self,
        reducer: MessageReducer,
        messages_key: str = "messages",
        *,
        next_version: Any = None,
    ) -> None:
        if not isinstance(reducer, MessageReducer):
            raise TypeError(
                f"reducer must be an agentstate_reducer.MessageReducer, got {reducer!r}"
            )
        if not isinstance(messages_key, str) or not messages_key:
            raise TypeError(f"messages_key must be a non-empty string, got {messages_key!r}")
        if next_version is not None and not callable(next_version):
            raise TypeError(f"next_version must be callable or None, got {next_version!r}")
        self._reducer = reducer
        self._key = messages_key
        limits = reducer.config
        self._whole_up_to: float | None = (
            None
            if limits.token_mode
            else float("inf")
            if limits.max_messages is None
            else limits.max_messages
        )
        self._next_version = next_version
        self._chains: OrderedDict[tuple[Any, Any], _Stored] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def reducer(self) -> MessageReducer:
        """The reducer run on the message list."""
        return self._reducer

    @property
    def messages_key(self) -> str:
        """The channel holding the message list."""
        return self._key

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

        Call it just before writing, with the arguments of ``put``. The pruned messages
        are handed to the reducer's ``on_prune`` hooks before it returns.

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
            TypeError: The message channel is a ``DeltaChannel``, or holds a list the
                reducer cannot read (the error names the position).
            PruneHookError: An ``on_prune`` hook failed. Do not write the checkpoint:
                its messages were not delivered and go out again on the retry.
            SummaryError: ``summarize_fn`` failed; do not write the checkpoint.
        """
        put = self._begin(config, checkpoint, new_versions, metadata)
        if put is None:
            return checkpoint
        outcome = self._settle(put)
        if isinstance(outcome, _Work):
            outcome = self._run(outcome)
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

        When the reduce has to run and the reducer has ``on_prune`` hooks or a
        ``summarize_fn`` (which may block on I/O), it runs in a worker thread
        (``asyncio.to_thread``) so the event loop keeps serving other runs.

        Raises:
            TypeError: The message channel is a ``DeltaChannel``, or holds a list the
                reducer cannot read.
            PruneHookError: An ``on_prune`` hook failed; do not write the checkpoint.
            SummaryError: ``summarize_fn`` failed; do not write the checkpoint.
        """
        put = self._begin(config, checkpoint, new_versions, metadata)
        if put is None:
            return checkpoint
        outcome = self._settle(put)
        if isinstance(outcome, _Work):
            config_ = self._reducer.config
            if config_.on_prune or config_.summarize_fn is not None:
                outcome = await asyncio.to_thread(self._run, outcome)
            else:
                outcome = self._run(outcome)
        return self._finish(put, *outcome)

    def _begin(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        new_versions: ChannelVersions,
        metadata: CheckpointMetadata | None,
    ) -> _Put | None:
        """What this put is about, or None when there is no message list to reduce."""
        key = self._key
        live = checkpoint["channel_values"].get(key)
        counters = metadata.get(_DELTA_COUNTERS) if metadata else None
        if isinstance(live, _DeltaSnapshotType) or (isinstance(counters, dict) and key in counters):
            raise TypeError(
                f"channel {key!r} is a DeltaChannel: its history lives in the writes "
                "table, which a reduction at put time cannot bound. Bound it in the state "
                "instead (agentstate_reducer.langgraph state reducer), or declare the "
                "channel with add_messages"
            )
        if type(live) is not list:
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

    def _settle(self, put: _Put) -> tuple[list[Any], bool] | _Work:
        """The list to store and whether it differs from the run's, or the reduce to run.

        Builds on the previous put of this chain when the run's list is that put's list
        or extends it: the run appended messages to what was stored, so only the stored
        list plus the new tail is reduced, as a reducer in the state would.
        """
        live, last = put.live, put.last
        if (
            last is not None
            and last.live is live
            and last.live_len == len(live)
            and last.live_version == put.live_version
        ):
            return last.reduced, last.changed
        if last is not None and _extends(live, last.live, last.live_len):
            if not last.changed:  # nothing cut so far: the stored list is the run's
                existing, new, changed = live, [], False
            else:
                existing, new, changed = last.reduced, live[last.live_len :], True
        else:
            existing, new, changed = live, [], False
        if self._whole_up_to is not None and len(existing) + len(new) <= self._whole_up_to:
            # Count mode prunes only lists longer than max_messages (ReducerConfig's rule),
            # so the plan, which reads every message, is skipped below that: the hot path.
            return (existing + new if new else existing), changed
        return _Work(existing, new, changed, self.namespace(put.config))

    def _run(self, work: _Work) -> tuple[list[Any], bool]:
        result = self._reducer.reduce(work.existing, work.new, work.namespace)
        if result.pruned or result.summary_messages:
            return result.surviving, True
        return result.surviving, work.changed

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
                put.live,
                len(put.live),
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
            stored["versions_seen"] = _advance_seen(
                checkpoint["versions_seen"], key, live_version, stored_version
            )
        return stored

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


def _delta_counters(metadata: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """The DeltaChannel counters LangGraph keeps in checkpoint metadata (empty if none)."""
    counters = metadata.get(_DELTA_COUNTERS) if metadata else None
    return counters if isinstance(counters, dict) else {}


def _extends(live: list[Any], previous: list[Any], previous_len: int) -> bool:
    """Whether ``live`` starts with the first ``previous_len`` items of ``previous``."""
    if len(live) < previous_len:
        return False
    if live is previous:
        return True
    return all(map(operator.is_, islice(live, previous_len), islice(previous, previous_len)))


def _same_items(a: list[Any], b: list[Any]) -> bool:
    return len(a) == len(b) and all(map(operator.is_, a, b))


def _advance_seen(
    versions_seen: Mapping[str, ChannelVersions], key: str, old: Any, new: Any
) -> dict[str, ChannelVersions]:
    """``versions_seen`` with every node that had seen ``old`` of ``key`` now at ``new``."""
    return {
        node: ({**seen, key: new} if seen.get(key) == old else dict(seen))
        for node, seen in versions_seen.items()
    }


class _Method(NamedTuple):
    name: str
    optional: bool


# Everything the wrapper delegates that a saver may or may not implement. The wrapper's
# class keeps its own version only when the inner saver's class overrides the base one,
# so capability probes (LangGraph's conformance suite compares against the base class)
# see on the wrapper exactly what the inner saver has.
_MIRRORED = (
    _Method("get_tuple", False),
    _Method("list", False),
    _Method("put", False),
    _Method("put_writes", False),
    _Method("delete_thread", False),
    _Method("aget_tuple", False),
    _Method("alist", False),
    _Method("aput", False),
    _Method("aput_writes", False),
    _Method("adelete_thread", False),
    _Method("copy_thread", True),
    _Method("acopy_thread", True),
    _Method("delete_for_runs", True),
    _Method("adelete_for_runs", True),
    _Method("prune", True),
    _Method("aprune", True),
    _Method("get_delta_channel_history", True),
    _Method("aget_delta_channel_history", True),
)


def _overrides(saver_type: type, name: str) -> bool:
    return getattr(saver_type, name, None) is not getattr(BaseCheckpointSaver, name, None)


def _takes_task_path(put_writes: Any) -> bool:
    try:
        return "task_path" in inspect.signature(put_writes).parameters
    except (TypeError, ValueError):
        return False


class ReducingCheckpointSaver(BaseCheckpointSaver[Any]):
    """Wraps any checkpoint saver and bounds the message list in every checkpoint it stores.

    The reducer runs just before each ``put`` / ``aput`` (see :class:`CheckpointReduction`
    for how the reduced list reaches storage and how pruned messages reach ``on_prune``).
    Everything else goes to the inner saver unchanged: ``get_tuple``, ``list``,
    ``put_writes``, ``delete_thread``, ``get_next_version``, ``config_specs``, ``serde``,
    context-manager use, and any attribute the wrapper does not define (``setup``,
    ``conn``, ...). The optional methods (``copy_thread``, ``delete_for_runs``,
    ``prune``, the delta-channel history, and their async twins) exist on the wrapper
    exactly when the inner saver implements them; for a method the inner saver lacks, the
    wrapper keeps ``BaseCheckpointSaver``'s default, as the inner saver does (mostly a
    ``NotImplementedError``).

    Wrapping a saver whose ``message_reduction`` already runs the same reducer object on
    the same channel is a pass-through (``reduces`` is False).

    Hooks run in the thread calling ``put``; ``aput`` runs a reduce that calls hooks or a
    summary in a worker thread, so the event loop is not blocked.

    Attributes:
        inner: The wrapped saver.
        message_reduction: The :class:`CheckpointReduction` in force (the inner saver's in
            pass-through mode).
        reduces: False when the inner saver reduces by itself and the wrapper delegates.

    Args:
        inner: The saver that stores the checkpoints.
        reducer: The reducer to run on the message list.
        messages_key: The channel holding the message list.

    Raises:
        TypeError: ``inner`` is not a BaseCheckpointSaver, ``reducer`` is not a
            MessageReducer, or ``messages_key`` is not a non-empty string.
        ValueError: ``inner`` already reduces messages with a different reducer or
            channel; pruned messages would be cut and handed to long-term memory twice.

    Example:
        >>> from langgraph.checkpoint.memory import InMemorySaver
        >>> from agentstate_reducer import MessageReducer
        >>> saver = ReducingCheckpointSaver(InMemorySaver(), MessageReducer(10, 20))
        >>> saver.reduces
        True
    """

    _specialised: ClassVar[dict[type, type[ReducingCheckpointSaver]]] = {}
    _specialised_lock: ClassVar[threading.Lock] = threading.Lock()

    inner: BaseCheckpointSaver[Any]
    message_reduction: CheckpointReduction

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:
        inner = args[0] if args else kwargs.get("inner")
        target: type[ReducingCheckpointSaver] = cls
        if cls is ReducingCheckpointSaver and isinstance(inner, BaseCheckpointSaver):
            target = cls._specialise(type(inner))
        return cast(Self, super().__new__(target))

    def __init__(
        self,
        inner: BaseCheckpointSaver[Any],
        reducer: MessageReducer,
        *,
        messages_key: str = "messages",
    ) -> None:
        if not isinstance(inner, BaseCheckpointSaver):
            raise TypeError(
                f"inner must be a LangGraph BaseCheckpointSaver, got {type(inner).__name__}"
            )
        self.inner = inner
        self._inner_takes_task_path = _takes_task_path(inner.put_writes)
        self._inner_async_takes_task_path = _takes_task_path(inner.aput_writes)
        existing = getattr(inner, "message_reduction", None)
        if isinstance(existing, CheckpointReduction):
            if existing.reducer is not reducer or existing.messages_key != messages_key:
                raise ValueError(
                    f"{type(inner).__name__} already reduces messages ({existing!r}); "
                    f"wrapping it with reducer {reducer!r} on {messages_key!r} would cut the "
                    "history twice and hand pruned messages to long-term memory twice. "
                    "Use the inner saver alone, or wrap a saver that does not reduce"
                )
            self.message_reduction = existing
            self.reduces = False
        else:
            self.message_reduction = CheckpointReduction(
                reducer, messages_key, next_version=inner.get_next_version
            )
            self.reduces = True

    @classmethod
    def _specialise(cls, inner_type: type) -> type[ReducingCheckpointSaver]:
        with cls._specialised_lock:
            found = cls._specialised.get(inner_type)
            if found is not None:
                return found
            namespace: dict[str, Any] = {
                "__module__": cls.__module__,
                "__qualname__": f"ReducingCheckpointSaver[{inner_type.__name__}]",
                "__doc__": f"ReducingCheckpointSaver around {inner_type.__qualname__}.",
            }
            for method in _MIRRORED:
                if not _overrides(inner_type, method.name):
                    namespace[method.name] = getattr(BaseCheckpointSaver, method.name)
            bases: list[type] = [cls]
            if hasattr(inner_type, "__enter__") and hasattr(inner_type, "__exit__"):
                bases.append(_SyncContext)
            if hasattr(inner_type, "__aenter__") and hasattr(inner_type, "__aexit__"):
                bases.append(_AsyncContext)
            made = type(namespace["__qualname__"], tuple(bases), namespace)
            cls._specialised[inner_type] = made
            return made

    def __getattr__(self, name: str) -> Any:
        # Only reached for names the wrapper lacks: backend helpers such as setup().
        if name == "inner" or name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        mode = "reducing" if self.reduces else "pass-through"
        return (
            f"ReducingCheckpointSaver({self.inner!r}, {self.message_reduction.reducer!r}, "
            f"messages_key={self.message_reduction.messages_key!r}, {mode})"
        )

    @property
    def serde(self) -> SerializerProtocol:
        """The inner saver's serializer (setting it sets the inner saver's)."""
        return self.inner.serde

    @serde.setter
    def serde(self, value: SerializerProtocol) -> None:
        self.inner.serde = value

    @property
    @override
    def config_specs(self) -> list[Any]:
        return self.inner.config_specs

    @override
    def with_allowlist(self, extra_allowlist: Any) -> Self:
        inner = self.inner.with_allowlist(extra_allowlist)
        if inner is self.inner:
            return self
        clone = ReducingCheckpointSaver.__new__(type(self))
        clone.__dict__.update(self.__dict__)
        clone.inner = inner
        return clone

    @override
    def get_next_version(self, current: Any, channel: None) -> Any:
        return self.inner.get_next_version(current, channel)

    @override
    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Reduce the message list, hand what it prunes to ``on_prune``, store the rest.

        Raises:
            PruneHookError: An ``on_prune`` hook failed; nothing was stored.
            SummaryError: ``summarize_fn`` failed; nothing was stored.
            TypeError: The message channel is a DeltaChannel, or holds a non-message.
        """
        if not self.reduces:
            return self.inner.put(config, checkpoint, metadata, new_versions)
        versions = dict(new_versions)
        stored = self.message_reduction.apply(config, checkpoint, versions, metadata=metadata)
        return self.inner.put(config, stored, metadata, versions)

    @override
    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Async :meth:`put`; a reduce with hooks runs in a worker thread (see ``aapply``).

        Raises:
            PruneHookError: An ``on_prune`` hook failed; nothing was stored.
            SummaryError: ``summarize_fn`` failed; nothing was stored.
            TypeError: The message channel is a DeltaChannel, or holds a non-message.
        """
        if not self.reduces:
            return await self.inner.aput(config, checkpoint, metadata, new_versions)
        versions = dict(new_versions)
        stored = await self.message_reduction.aapply(
            config, checkpoint, versions, metadata=metadata
        )
        return await self.inner.aput(config, stored, metadata, versions)

    @override
    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self.inner.get_tuple(config)

    @override
    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await self.inner.aget_tuple(config)

    @override
    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        return self.inner.list(config, filter=filter, before=before, limit=limit)

    @override
    def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        return self.inner.alist(config, filter=filter, before=before, limit=limit)

    @override
    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        if self._inner_takes_task_path:
            self.inner.put_writes(config, writes, task_id, task_path)
        else:
            self.inner.put_writes(config, writes, task_id)

    @override
    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        if self._inner_async_takes_task_path:
            await self.inner.aput_writes(config, writes, task_id, task_path)
        else:
            await self.inner.aput_writes(config, writes, task_id)

    @override
    def delete_thread(self, thread_id: str) -> None:
        self.inner.delete_thread(thread_id)

    @override
    async def adelete_thread(self, thread_id: str) -> None:
        await self.inner.adelete_thread(thread_id)

    @override
    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        self.inner.delete_for_runs(run_ids)

    @override
    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await self.inner.adelete_for_runs(run_ids)

    @override
    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self.inner.copy_thread(source_thread_id, target_thread_id)

    @override
    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await self.inner.acopy_thread(source_thread_id, target_thread_id)

    @override
    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        self.inner.prune(thread_ids, strategy=strategy)

    @override
    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await self.inner.aprune(thread_ids, strategy=strategy)

    @override
    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        return self.inner.get_delta_channel_history(config=config, channels=channels)

    @override
    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        return await self.inner.aget_delta_channel_history(config=config, channels=channels)


class _SyncContext:
    """Context-manager use, present only when the inner saver is a context manager."""

    inner: Any

    def __enter__(self) -> Self:
        self.inner.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool | None:
        result: bool | None = self.inner.__exit__(exc_type, exc, traceback)
        return result


class _AsyncContext:
    """Async context-manager use, present only when the inner saver has it."""

    inner: Any

    async def __aenter__(self) -> Self:
        await self.inner.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool | None:
        result: bool | None = await self.inner.__aexit__(exc_type, exc, traceback)
        return result


# -- compacting threads stored before the wrapper ---------------------------------------


class _Compaction(NamedTuple):
    config: RunnableConfig
    checkpoint: Checkpoint
    metadata: CheckpointMetadata
    new_versions: ChannelVersions


def _plan_compaction(
    saver: BaseCheckpointSaver[Any],
    latest: CheckpointTuple | None,
    reducer: MessageReducer,
    messages_key: str,
    run_config: RunnableConfig,
) -> _Compaction | None:
    """The checkpoint that compacts ``latest``, or None when it is already within bounds.

    Runs the reduction (and so the ``on_prune`` hooks) but writes nothing.
    """
    if latest is None:
        return None
    if latest.pending_writes:
        raise ValueError(
            f"the newest checkpoint {latest.config['configurable'].get('checkpoint_id')!r} "
            f"has {len(latest.pending_writes)} pending write(s) (the thread is interrupted "
            "or stopped mid-step); resume or finish the run before compacting, or the new "
            "checkpoint would hide those writes"
        )
    values = latest.checkpoint["channel_values"]
    messages = values.get(messages_key)
    if isinstance(messages, _DeltaSnapshotType) or messages_key in _delta_counters(latest.metadata):
        raise TypeError(
            f"channel {messages_key!r} is a DeltaChannel; compact_thread cannot bound it"
        )
    if not isinstance(messages, list):
        return None
    conf = latest.config["configurable"]
    result = reducer.reduce(messages, None, memory_namespace(reducer, run_config))
    if _same_items(result.surviving, messages):
        return None
    old_version = latest.checkpoint["channel_versions"].get(messages_key)
    new_version = saver.get_next_version(old_version, None)
    step = latest.metadata.get("step", -1)
    checkpoint: Checkpoint = {
        **latest.checkpoint,
        "id": str(uuid6(clock_seq=step + 1)),
        "channel_values": {**values, messages_key: result.surviving},
        "channel_versions": {**latest.checkpoint["channel_versions"], messages_key: new_version},
        # Seen by every node that saw the old list, and updated_channels kept as it was:
        # compaction is no write, so what runs next stays the same.
        "versions_seen": _advance_seen(
            latest.checkpoint["versions_seen"], messages_key, old_version, new_version
        ),
    }
    metadata: CheckpointMetadata = {
        "source": "update",
        "step": step + 1,
        "parents": dict(latest.metadata.get("parents") or {}),
    }
    parent: RunnableConfig = {
        "configurable": {
            "thread_id": conf["thread_id"],
            "checkpoint_ns": conf.get("checkpoint_ns", ""),
            "checkpoint_id": conf["checkpoint_id"],
        }
    }
    return _Compaction(parent, checkpoint, metadata, {messages_key: new_version})


def _storing_saver(saver: BaseCheckpointSaver[Any]) -> BaseCheckpointSaver[Any]:
    # Through a wrapper, write to its inner saver: the list is already reduced here.
    return saver.inner if isinstance(saver, ReducingCheckpointSaver) else saver


def _newest(config: RunnableConfig) -> RunnableConfig:
    conf = config.get("configurable") or {}
    if "thread_id" not in conf:
        raise ValueError("compact_thread needs config['configurable']['thread_id']")
    return {
        "configurable": {
            "thread_id": conf["thread_id"],
            "checkpoint_ns": conf.get("checkpoint_ns", ""),
        }
    }


def compact_thread(
    saver: BaseCheckpointSaver[Any],
    config: RunnableConfig,
    reducer: MessageReducer,
    *,
    messages_key: str = "messages",
) -> RunnableConfig | None:
    """Write a reduced copy of a thread's newest checkpoint as its new newest checkpoint.

    For threads stored before :class:`ReducingCheckpointSaver` was added: the next run
    resumes from the compacted list, and ``get_state`` shows it. Older checkpoints are
    left as they are (delete them with the saver's ``prune`` if it has one). The pruned
    messages reach the reducer's ``on_prune`` hooks first, with the namespace from
    ``config``; if a hook raises, nothing is written. Acts on the namespace
    ``config`` names (the root graph's by default).

    Args:
        saver: The saver holding the thread (a ReducingCheckpointSaver or a bare one).
        config: Names the thread: ``{"configurable": {"thread_id": ...}}``; may carry the
            ``memory_namespace`` for the hooks.
        reducer: The reducer to apply.
        messages_key: The channel holding the message list.

    Returns:
        The config of the checkpoint written, or None when there was nothing to do (no
        checkpoint, no message list, or a list already within bounds).

    Raises:
        ValueError: ``config`` names no thread, or the newest checkpoint has pending
            writes (an interrupted or unfinished step).
        TypeError: The message channel is a DeltaChannel.
        PruneHookError: An ``on_prune`` hook failed; nothing was written.
        SummaryError: ``summarize_fn`` failed; nothing was written.
    """
    latest = saver.get_tuple(_newest(config))
    plan = _plan_compaction(saver, latest, reducer, messages_key, config)
    if plan is None:
        return None
    return _storing_saver(saver).put(*plan)


async def acompact_thread(
    saver: BaseCheckpointSaver[Any],
    config: RunnableConfig,
    reducer: MessageReducer,
    *,
    messages_key: str = "messages",
) -> RunnableConfig | None:
    """Async :func:`compact_thread`, for async savers.

    Raises:
        ValueError: ``config`` names no thread, or the newest checkpoint has pending
            writes (an interrupted or unfinished step).
        TypeError: The message channel is a DeltaChannel.
        PruneHookError: An ``on_prune`` hook failed; nothing was written.
        SummaryError: ``summarize_fn`` failed; nothing was written.
    """
    latest = await saver.aget_tuple(_newest(config))
    # The reduce may call hooks and a summary that block: keep them off the event loop.
    plan = await asyncio.to_thread(_plan_compaction, saver, latest, reducer, messages_key, config)
    if plan is None:
        return None
    return await _storing_saver(saver).aput(*plan)
