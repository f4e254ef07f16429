"""Bound what any LangGraph checkpointer stores: :class:`ReducingCheckpointSaver`.

LangGraph stores the whole message channel in every checkpoint, so a thread's storage
grows with the square of its length, and pruning old checkpoints never shrinks the newest
one. The wrapper runs a :class:`~agentstate_reducer.MessageReducer` on the message list
just before each ``put`` / ``aput`` of the saver you already use (the reduction itself is
:class:`~agentstate_reducer.langgraph.reduction.CheckpointReduction`)::

    saver = ReducingCheckpointSaver(PostgresSaver(conn), MessageReducer(10, 40))
    graph = builder.compile(checkpointer=saver)

Long-term memory: what leaves the list goes to the reducer's ``on_prune`` hooks before the
checkpoint is written, with the namespace ``configurable[reducer.config.namespace_key]``
(default key ``"memory_namespace"``), or ``("memories", thread_id)`` when the run sets
none. A memory store (or summarizer) that is down never costs the user's turn: the
checkpoint is stored unpruned, the list grows past the bound for a while, and each later
put hands the messages over again until the store is back (``on_prune_error="keep"``, the
default). ``on_prune_error="raise"`` fails the put instead. ``aput`` awaits coroutine hooks
and runs blocking ones in worker threads, off the event loop.

Bounded storage per thread: ``keep_checkpoints=N`` prunes a thread to its latest
checkpoint every N puts, with the inner saver's ``prune`` (see
:mod:`~agentstate_reducer.langgraph.retention`).

Limits: a message channel backed by ``DeltaChannel`` is refused with
``NotImplementedError``; the bound applies to lists (``list`` values) only; a
``RemoveMessage`` for an id the saver already pruned fails when it is replayed from
storage, as ``add_messages`` refuses unknown ids.
"""

from __future__ import annotations

import inspect
import threading
import warnings
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any, ClassVar, Literal, NamedTuple, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from typing_extensions import Self, override

from .._checks import check_name
from ..reducer import MessageReducer
from .reduction import CheckpointReduction
from .retention import CheckpointRetention

__all__ = ["ReducingCheckpointSaver"]


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
    the same channel is a pass-through (``reduces`` is False), and so is wrapping a saver
    whose ``reducer`` attribute is that same reducer (as 0.5 did for
    ``langgraph-checkpoint-cosmosdb``'s ``CosmosDBSaver(reducer=...)``).

    Hooks run in the thread calling ``put``; ``aput`` runs a reduce that calls hooks or a
    summary in a worker thread, so the event loop is not blocked.

    Attributes:
        inner: The wrapped saver.
        reducer: The reducer in force (the inner saver's in pass-through mode).
        messages_key: The channel holding the message list.
        retention: The ``keep_checkpoints`` pruning in force, or None.
        message_reduction: The :class:`CheckpointReduction` in force (the inner saver's in
            pass-through mode).
        reduces: False when the inner saver reduces by itself and the wrapper delegates.

    Args:
        inner: The saver that stores the checkpoints.
        reducer: The reducer to run on the message list.
        messages_key: The channel holding the message list.
        on_prune_error: ``"keep"`` (default): a failing hook or summarizer stores the
            checkpoint unpruned and the hand-off is retried on later puts; ``"raise"``:
            the put fails (LangGraph then fails the step or, with ``durability="async"``,
            the run).
        keep_checkpoints: Prune each thread to its latest checkpoint every this many puts
            (the inner saver's ``prune``), so its storage stays bounded; None keeps all.

    Raises:
        TypeError: ``inner`` is not a BaseCheckpointSaver, ``reducer`` is not a
            MessageReducer, or ``messages_key`` or ``keep_checkpoints`` has the wrong type.
        ValueError: ``messages_key`` is empty, ``on_prune_error`` is unknown,
            ``keep_checkpoints`` is below 1, or ``inner`` already reduces messages with a
            different reducer or channel (pruned messages would be cut and handed to
            long-term memory twice).
        NotImplementedError: ``keep_checkpoints`` is set and ``inner`` cannot prune.

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
        on_prune_error: Literal["keep", "raise"] = "keep",
        keep_checkpoints: int | None = None,
    ) -> None:
        if not isinstance(inner, BaseCheckpointSaver):
            raise TypeError(
                f"inner must be a LangGraph BaseCheckpointSaver, got {type(inner).__name__}"
            )
        check_name("messages_key", messages_key)
        self.retention = (
            CheckpointRetention(inner, keep_checkpoints) if keep_checkpoints is not None else None
        )
        self.inner = inner
        self._inner_takes_task_path = _takes_task_path(inner.put_writes)
        self._inner_async_takes_task_path = _takes_task_path(inner.aput_writes)
        existing = getattr(inner, "message_reduction", None)
        own = getattr(inner, "reducer", None)
        if not isinstance(existing, CheckpointReduction) and isinstance(own, MessageReducer):
            # A saver of the 0.5 era (langgraph-checkpoint-cosmosdb's reducer=) runs its
            # reducer itself: the same one is a pass-through, another would cut twice.
            if own is not reducer:
                raise ValueError(
                    f"{type(inner).__name__} already reduces messages with its own reducer "
                    f"({own!r}); wrapping it with {reducer!r} would cut the history twice "
                    "and hand pruned messages to long-term memory twice. Use the inner "
                    "saver alone, or build it without reducer="
                )
            existing = CheckpointReduction(
                reducer, messages_key, next_version=inner.get_next_version
            )
            self.message_reduction = existing
            self.reduces = False
        elif isinstance(existing, CheckpointReduction):
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
                reducer,
                messages_key,
                next_version=inner.get_next_version,
                on_prune_error=on_prune_error,
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
    def reducer(self) -> MessageReducer:
        """The reducer in force (the inner saver's in pass-through mode)."""
        return self.message_reduction.reducer

    @property
    def messages_key(self) -> str:
        """The channel holding the message list."""
        return self.message_reduction.messages_key

    @property
    def passthrough(self) -> bool:
        """0.5's name for ``not reduces``; deprecated, removed in 0.7."""
        warnings.warn(
            "ReducingCheckpointSaver.passthrough is deprecated since agentstate-reducer 0.6 "
            "and goes in 0.7; use `not saver.reduces`",
            DeprecationWarning,
            stacklevel=2,
        )
        return not self.reduces

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
            PruneHookError: With ``on_prune_error="raise"``, an ``on_prune`` hook failed;
                nothing was stored.
            SummaryError: With ``on_prune_error="raise"``, ``summarize_fn`` failed;
                nothing was stored.
            NotImplementedError: The message channel is a DeltaChannel, or with
                ``keep_checkpoints`` any channel is; nothing was stored.
            ValueError: With ``keep_checkpoints``, the config names a checkpoint that is no
                longer stored while the thread has a newer one (pruned: continue from the
                latest); nothing was stored.
            TypeError: The message channel holds a non-message.
        """
        if self.retention is not None:
            self.retention.before_put(checkpoint, metadata)
            self.retention.check_parent(config)
        if self.reduces:
            new_versions = dict(new_versions)
            checkpoint = self.message_reduction.apply(
                config, checkpoint, new_versions, metadata=metadata
            )
        stored = self.inner.put(config, checkpoint, metadata, new_versions)
        if self.retention is not None:
            self.retention.after_put(stored)
        return stored

    @override
    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Async :meth:`put`: coroutine hooks and summarizers are awaited, blocking ones run
        in worker threads (see ``CheckpointReduction.aapply``).

        Raises:
            PruneHookError: With ``on_prune_error="raise"``, an ``on_prune`` hook failed;
                nothing was stored.
            SummaryError: With ``on_prune_error="raise"``, ``summarize_fn`` failed;
                nothing was stored.
            NotImplementedError: The message channel is a DeltaChannel, or with
                ``keep_checkpoints`` any channel is; nothing was stored.
            ValueError: With ``keep_checkpoints``, the config names a checkpoint that is no
                longer stored while the thread has a newer one (pruned: continue from the
                latest); nothing was stored.
            TypeError: The message channel holds a non-message.
        """
        if self.retention is not None:
            self.retention.before_put(checkpoint, metadata)
            await self.retention.acheck_parent(config)
        if self.reduces:
            new_versions = dict(new_versions)
            checkpoint = await self.message_reduction.aapply(
                config, checkpoint, new_versions, metadata=metadata
            )
        stored = await self.inner.aput(config, checkpoint, metadata, new_versions)
        if self.retention is not None:
            await self.retention.aafter_put(stored)
        return stored

    @override
    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        found = self.inner.get_tuple(config)
        if self.retention is not None:
            self.retention.note_read(config, found)
        return found

    @override
    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        found = await self.inner.aget_tuple(config)
        if self.retention is not None:
            self.retention.note_read(config, found)
        return found

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
        if self.retention is not None:
            # Writes for a checkpoint get_tuple found nothing under (a Command(resume=...) run
            # from a pruned checkpoint stores its resume value first): refused before its
            # nodes run, as its first put would be.
            self.retention.check_parent(config)
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
        if self.retention is not None:
            await self.retention.acheck_parent(config)
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
