"""0.5's ``apply_reducer``, kept for 0.6 only: it resolves as
``agentstate_reducer.langgraph.apply_reducer`` with a DeprecationWarning (see
:mod:`agentstate_reducer._deprecated`) and goes in 0.7."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from .namespace import memory_namespace


def apply_reducer(
    reducer: Any,
    checkpoint: Mapping[str, Any],
    config: Any,
    messages_key: str = "messages",
) -> Any:
    """0.5's ``apply_reducer``: a shallow copy of ``checkpoint`` with its message list reduced.

    Returns ``checkpoint`` itself when there is no reducer, no message list, or nothing to
    prune. The pruned messages reach the reducer's ``on_prune`` hooks with the namespace of
    :func:`agentstate_reducer.langgraph.memory_namespace`, as in 0.5. Unlike the saver
    wrapper it keeps no per-thread memory and gives the channel no new version.

    Raises:
        PruneHookError: An ``on_prune`` hook failed (0.5 logged and went on).
        SummaryError: ``summarize_fn`` failed (0.5 logged and went on).
    """
    if reducer is None:
        return checkpoint
    channel_values = checkpoint.get("channel_values") or {}
    messages = channel_values.get(messages_key)
    if not messages:
        return checkpoint
    result = reducer.reduce(existing=messages, namespace=memory_namespace(reducer, config))
    if len(result.surviving) == len(messages) and not result.pruned:
        return checkpoint
    reduced = copy.copy(dict(checkpoint))
    reduced["channel_values"] = {**channel_values, messages_key: result.surviving}
    return reduced
