"""The channel reducer: ``Annotated[list, reducer.as_langgraph_reducer()]``.

Every update is merged exactly as LangGraph's ``add_messages`` merges it (or, for states
of plain dicts, by the same rules without coercion), and the merged list is then bounded by
the reducer, inside the channel.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal, cast

from langchain_core.messages import BaseMessage, RemoveMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES, add_messages

from .._checks import check_choice
from ..messages import id_of

if TYPE_CHECKING:
    from ..reducer import MessageReducer
    from ..result import ReducerResult

__all__ = ["ChannelReducer", "MergeMode", "langgraph_reducer"]

MergeMode = Literal["add_messages", "append"]
"""How :func:`langgraph_reducer` merges an update before bounding the list."""

ChannelReducer = Callable[[Any, Any], list[Any]]
"""What ``as_langgraph_reducer()`` returns: ``(existing, update) -> merged, bounded list``."""

_MERGE_MODES: tuple[str, ...] = ("add_messages", "append")

# add_messages is typed through a decorator that hides its ``format`` keyword.
_add_messages: Callable[..., list[Any]] = cast(Callable[..., list[Any]], add_messages)

# One merge function per (reducer, options): LangGraph compares channel reducers by
# identity when a key appears in several schemas (state, input, output, subgraph), so
# calling as_langgraph_reducer() twice must give the same function. The functions are
# kept on the reducer itself: a global weak-keyed table would never release a reducer,
# since each function holds its reducer.
_CACHE_ATTRIBUTE = "_agentstate_channel_reducers"
_cache_lock = threading.Lock()


def langgraph_reducer(
    reducer: MessageReducer,
    *,
    merge: MergeMode = "add_messages",
    format: Literal["langchain-openai"] | None = None,
) -> ChannelReducer:
    """A LangGraph channel reducer that merges like ``add_messages``, then bounds the list.

    Use it as ``messages: Annotated[list, reducer.as_langgraph_reducer()]``. On every
    update LangGraph calls it with the current list and the update; it merges them, hands
    the merged list to ``reducer.reduce`` and stores what survives. Summary messages the
    reducer injects carry an id (one is added to dicts and LangChain messages that lack
    it), so a later ``RemoveMessage`` can target them.
    Calling it twice with the same reducer and options returns the same function, as
    LangGraph requires when a key appears in several schemas (a reducer object without
    instance attributes gets a new function each time).

    Merge modes:

    * ``"add_messages"`` (default): the update is merged by LangGraph's ``add_messages``
      itself, so everything it does holds: dicts, ``(role, content)`` tuples and strings
      become messages, missing ids are assigned, a message with a known id replaces the
      old one in place, ``RemoveMessage(id=...)`` deletes, ``RemoveMessage(id=
      REMOVE_ALL_MESSAGES)`` clears the list, and removing an unknown id raises the same
      ``ValueError``. ``format`` is passed to ``add_messages``.
    * ``"append"``: for states that hold plain dicts (OpenAI or LangChain shape) and want
      to keep them. Nothing is converted and no ids are assigned: each new item is
      appended as given, except that an item whose id equals an existing item's id
      replaces it in place, a ``RemoveMessage`` (or a dict ``{"type": "remove", "id":
      ...}``) deletes by id, and ``REMOVE_ALL_MESSAGES`` clears the list, with the same
      error as ``add_messages`` for an unknown id. ``format`` must be None.

    The channel reducer runs outside any node, so it cannot see the run's config: the
    ``on_prune`` hooks receive ``namespace=None``. Use :func:`create_reduction_node` or
    the checkpoint saver when hooks need a per-thread namespace. LangGraph may apply the
    same write more than once (``get_state`` on a thread with pending writes, resuming
    after an interrupt): hooks are deduplicated by message id, and the reducer reuses the
    summary it made for the same pruned messages (when they have ids) instead of calling
    ``summarize_fn`` again.
    An update wrapped in LangGraph's ``Overwrite`` bypasses channel reducers, so it is
    stored unbounded.

    Args:
        reducer: The reducer that bounds the merged list.
        merge: ``"add_messages"`` or ``"append"``, as above.
        format: ``add_messages``' output format (``"langchain-openai"`` or None).

    Returns:
        A function ``(existing, new) -> list``.

    Raises:
        TypeError: ``merge`` or ``format`` is not a string (``format`` may be None).
        ValueError: ``merge`` or ``format`` is not one of the accepted values.

    The returned function raises what ``add_messages`` raises for a bad update (and, in
    ``"append"`` mode, the same ``ValueError`` for an unknown id), ``TypeError`` for items
    the reducer cannot read, and ``SummaryError`` / ``PruneHookError`` from the reducer.
    """
    check_choice("merge", merge, _MERGE_MODES)
    check_choice("format", format, ("langchain-openai",), allow_none=True)
    if merge == "append" and format is not None:
        raise ValueError(
            f"format={format!r} converts messages, which merge='append' never does; "
            "use merge='add_messages' to get formatted messages"
        )
    key = (merge, format)
    with _cache_lock:
        try:
            cache: dict[tuple[str, str | None], ChannelReducer] = vars(reducer).setdefault(
                _CACHE_ATTRIBUTE, {}
            )
        except TypeError:  # a reducer without instance attributes: no reuse
            return _make_channel_reducer(reducer, merge, format)
        function = cache.get(key)
        if function is None:
            function = _make_channel_reducer(reducer, merge, format)
            cache[key] = function
    return function


def _make_channel_reducer(
    reducer: MessageReducer, merge: str, format: Literal["langchain-openai"] | None
) -> ChannelReducer:
    if merge == "add_messages":

        def merge_add_messages(existing: Any, new: Any) -> list[Any]:
            merged = _add_messages(existing, new, format=format)
            result = reducer.reduce(merged)
            return _surviving_with_ids(result, coerce=True, format=format)

        return merge_add_messages

    def merge_append(existing: Any, new: Any) -> list[Any]:
        result = reducer.reduce(_append(existing, new))
        return _surviving_with_ids(result, coerce=False, format=None)

    return merge_append


def _surviving_with_ids(
    result: ReducerResult, *, coerce: bool, format: Literal["langchain-openai"] | None
) -> list[Any]:
    """``result.surviving`` with every injected summary message carrying an id.

    In ``add_messages`` mode the summary also becomes a message (a custom
    ``summary_message_factory`` may return dicts), so the list keeps ``add_messages``'
    guarantee that it holds only messages with ids.
    """
    injected = result.summary_messages
    if not injected:
        return result.surviving
    if coerce:
        replacements = _add_messages([], list(injected), format=format)
    else:
        replacements = [_with_id(message) for message in injected]
    by_identity = {id(old): new for old, new in zip(injected, replacements, strict=True)}
    return [by_identity.get(id(message), message) for message in result.surviving]


def _with_id(message: Any) -> Any:
    if id_of(message) is not None:
        return message
    new_id = str(uuid.uuid4())
    if isinstance(message, Mapping):
        return {**message, "id": new_id}
    if isinstance(message, BaseMessage):
        return message.model_copy(update={"id": new_id})
    return message


def _is_remove(message: Any) -> bool:
    if isinstance(message, RemoveMessage):
        return True
    return isinstance(message, Mapping) and message.get("type") == "remove"


def _append(existing: Any, new: Any) -> list[Any]:
    """``add_messages``' merge rules without coercion or id assignment."""
    if existing is None or new is None:
        # The same complaint add_messages makes, for the same mistake.
        which = "left" if existing is not None else "right"
        raise ValueError(
            "Must specify non-null arguments for both 'left' and 'right'. "
            f"Only received: '{which}'."
        )
    left = existing if isinstance(existing, list) else [existing]
    right = new if isinstance(new, list) else [new]
    for index in range(len(right) - 1, -1, -1):
        if _is_remove(right[index]) and id_of(right[index]) == REMOVE_ALL_MESSAGES:
            return list(right[index + 1 :])
    merged = list(left)
    position = {message_id: i for i, m in enumerate(merged) if (message_id := id_of(m)) is not None}
    removed: set[str] = set()
    for message in right:
        message_id = id_of(message)
        at = position.get(message_id) if message_id is not None else None
        if at is not None and message_id is not None:
            if _is_remove(message):
                removed.add(message_id)
            else:
                removed.discard(message_id)
                merged[at] = message
        elif _is_remove(message):
            raise ValueError(
                f"Attempting to delete a message with an ID that doesn't exist ('{message_id}')"
            )
        else:
            if message_id is not None:
                position[message_id] = len(merged)
            merged.append(message)
    if removed:
        merged = [m for m in merged if id_of(m) not in removed]
    return merged
