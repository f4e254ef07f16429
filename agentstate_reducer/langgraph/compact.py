"""Shrinking threads stored before the wrapper: :func:`compact_thread`.

A thread written by a bare saver keeps its full history in its newest checkpoint.
Compaction reduces that list once and writes it as the thread's new newest checkpoint
(the next run resumes from it), handing the pruned messages to ``on_prune`` first.
"""

from __future__ import annotations

import asyncio
from typing import Any, NamedTuple

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.base.id import uuid6

from .._checks import check_name
from ..reducer import MessageReducer
from .namespace import memory_namespace
from .reduction import advance_seen, refuse_delta_channel, same_items
from .wrapper import ReducingCheckpointSaver

__all__ = ["acompact_thread", "compact_thread"]


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
    refuse_delta_channel(messages_key, messages, latest.metadata, "compact_thread")
    if not isinstance(messages, list):
        return None
    conf = latest.config["configurable"]
    result = reducer.reduce(messages, None, memory_namespace(reducer, run_config))
    if same_items(result.surviving, messages):
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
        "versions_seen": advance_seen(
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
        TypeError: ``messages_key`` is not a string.
        ValueError: ``config`` names no thread, ``messages_key`` is empty, or the newest
            checkpoint has pending writes (an interrupted or unfinished step).
        NotImplementedError: The message channel is a DeltaChannel.
        PruneHookError: An ``on_prune`` hook failed; nothing was written.
        SummaryError: ``summarize_fn`` failed; nothing was written.
    """
    check_name("messages_key", messages_key)
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
        TypeError: ``messages_key`` is not a string.
        ValueError: ``config`` names no thread, ``messages_key`` is empty, or the newest
            checkpoint has pending writes (an interrupted or unfinished step).
        NotImplementedError: The message channel is a DeltaChannel.
        PruneHookError: An ``on_prune`` hook failed; nothing was written.
        SummaryError: ``summarize_fn`` failed; nothing was written.
    """
    check_name("messages_key", messages_key)
    latest = await saver.aget_tuple(_newest(config))
    # The reduce may call hooks and a summary that block: keep them off the event loop.
    plan = await asyncio.to_thread(_plan_compaction, saver, latest, reducer, messages_key, config)
    if plan is None:
        return None
    return await _storing_saver(saver).aput(*plan)
