"""The long-term memory namespace a run's pruned messages are handed over with."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain_core.runnables import RunnableConfig

if TYPE_CHECKING:
    from ..reducer import MessageReducer

__all__ = ["memory_namespace"]


def memory_namespace(reducer: MessageReducer, config: RunnableConfig | None) -> Any:
    """The namespace a run's pruned messages are handed to ``on_prune`` hooks with.

    ``config["configurable"][reducer.config.namespace_key]`` when set (the key defaults to
    ``"memory_namespace"``), else ``("memories", thread_id)`` when the run has a thread,
    else None.

    Args:
        reducer: The reducer whose ``namespace_key`` is looked up.
        config: The run's config (a node's ``config`` argument).

    Returns:
        The namespace, or None.
    """
    configurable = (config or {}).get("configurable") or {}
    namespace = configurable.get(reducer.config.namespace_key)
    if namespace is not None:
        return namespace
    thread_id = configurable.get("thread_id")
    return ("memories", thread_id) if thread_id is not None else None
