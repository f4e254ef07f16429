"""Bounded message lists in LangGraph state: the channel reducer and the reduction node.

Two ways to keep a graph's ``messages`` bounded, both built on LangGraph's own
``add_messages`` so ids, updates by id and ``RemoveMessage`` behave as users expect:

* :func:`langgraph_reducer` (what ``MessageReducer.as_langgraph_reducer()`` returns) is a
  channel reducer: ``Annotated[list, reducer.as_langgraph_reducer()]``. Every update is
  merged by ``add_messages`` and the merged list is then bounded, inside the channel.
* :func:`create_reduction_node` is a graph node for states that keep the plain
  ``add_messages`` channel (``MessagesState``): it returns the ``RemoveMessage`` updates
  (plus any injected summary) that bound the list, so the stored state shrinks.

:func:`messages_update` is the piece both the node and the agent middleware share: the
``add_messages`` update that turns one message list into another.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, cast

from langchain_core.messages import BaseMessage, RemoveMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langchain_core.runnables.config import run_in_executor
from langgraph.graph.message import REMOVE_ALL_MESSAGES, add_messages

from ..messages import id_of

if TYPE_CHECKING:
    from ..reducer import MessageReducer
    from ..result import ReducerResult

__all__ = [
    "MergeMode",
    "create_reduction_node",
    "create_reduction_step_node",
    "langgraph_reducer",
    "memory_namespace",
    "messages_update",
]

MergeMode = Literal["add_messages", "append"]
"""How :func:`langgraph_reducer` merges an update before bounding the list."""

ChannelReducer = Callable[[Any, Any], list[Any]]

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
        ValueError: ``merge`` or ``format`` is not one of the accepted values.

    The returned function raises what ``add_messages`` raises for a bad update (and, in
    ``"append"`` mode, the same ``ValueError`` for an unknown id), ``TypeError`` for items
    the reducer cannot read, and ``SummaryError`` / ``PruneHookError`` from the reducer.
    """
    if merge not in _MERGE_MODES:
        raise ValueError(f"merge must be 'add_messages' or 'append', got {merge!r}")
    if format not in (None, "langchain-openai"):
        raise ValueError(f"format must be None or 'langchain-openai', got {format!r}")
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


def messages_update(before: Sequence[Any], after: Sequence[Any]) -> list[Any]:
    """The ``add_messages`` update that turns the list ``before`` into the list ``after``.

    ``after`` is typically a reducer's surviving list: messages of ``before`` (matched by
    id) in their original order, plus new ones such as an injected summary. When
    ``add_messages`` can reach ``after`` by removing and appending (every message of
    ``before`` has a unique id, the kept ones keep their order and every new one comes
    after them) the update is one ``RemoveMessage`` per dropped id, the kept messages that
    were replaced by a different object, and the new messages. Otherwise (a summary that
    sits where the pruned block was, before kept messages; or messages without ids) it is
    ``RemoveMessage(id=REMOVE_ALL_MESSAGES)`` followed by all of ``after``, which
    ``add_messages`` stores verbatim.

    The first form leaves messages that other nodes write in the same super-step alone;
    the second replaces the whole list, so a message written by a parallel node in the
    same step may be lost or land before the update. Run reduction where no other node
    writes messages in the same step (for example right before the model).

    Args:
        before: The list as it is in state.
        after: The list it should become.

    Returns:
        The update to write to the ``add_messages`` channel; empty when ``after`` already
        equals ``before`` item for item.
    """
    before_list = list(before)
    after_list = list(after)
    if len(before_list) == len(after_list) and all(
        a is b for a, b in zip(before_list, after_list, strict=True)
    ):
        return []
    by_id: dict[str, Any] = {}
    for message in before_list:
        message_id = id_of(message)
        if message_id is None or message_id in by_id:
            return _replace_all(after_list)
        by_id[message_id] = message
    order = {message_id: i for i, message_id in enumerate(by_id)}
    last_kept = -1
    seen_new = False
    kept_ids: set[str] = set()
    replaced: list[Any] = []
    added: list[Any] = []
    for message in after_list:
        message_id = id_of(message)
        if message_id is not None and message_id in by_id:
            if seen_new or order[message_id] <= last_kept:
                return _replace_all(after_list)
            last_kept = order[message_id]
            kept_ids.add(message_id)
            if message is not by_id[message_id]:
                replaced.append(message)
        else:
            if message_id is not None and any(id_of(m) == message_id for m in added):
                return _replace_all(after_list)
            seen_new = True
            added.append(message)
    removals: list[Any] = [
        RemoveMessage(id=message_id) for message_id in by_id if message_id not in kept_ids
    ]
    return [*removals, *replaced, *added]


def _replace_all(after: list[Any]) -> list[Any]:
    return [RemoveMessage(id=REMOVE_ALL_MESSAGES), *after]


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


def _read_messages(state: Any, messages_key: str) -> list[Any]:
    """The message list under ``messages_key`` in a dict or attribute-style state.

    Raises:
        KeyError: The state has no such key; the message names the keys it has.
    """
    if isinstance(state, Mapping):
        if messages_key not in state:
            raise KeyError(
                f"state has no {messages_key!r} key (keys: {sorted(map(str, state))}); "
                "pass messages_key= naming the key that holds the message list"
            )
        value = state[messages_key]
    else:
        if not hasattr(state, messages_key):
            raise KeyError(
                f"state {type(state).__name__} has no {messages_key!r} attribute; "
                "pass messages_key= naming the field that holds the message list"
            )
        value = getattr(state, messages_key)
    return list(value or [])


def _reduction_update(
    reducer: MessageReducer,
    messages: Sequence[Any],
    config: RunnableConfig | None,
    step_id: str | None = None,
) -> tuple[ReducerResult, list[Any]]:
    """Reduce ``messages`` and compute the ``add_messages`` update that stores the result.

    Runs the summary and the ``on_prune`` hooks (with :func:`memory_namespace`).

    Args:
        reducer: The reducer.
        messages: The list in state.
        config: The run's config, for the hooks' namespace.
        step_id: Run only this step of the reducer's policy (``reducer.apply_step``).

    Returns:
        The reducer's result and the update (empty when nothing changes).

    Raises:
        SummaryError: ``summarize_fn`` failed; nothing was pruned.
        PruneHookError: An ``on_prune`` hook failed (with ``on_prune_error="raise"``).
    """
    namespace = memory_namespace(reducer, config)
    if step_id is None:
        result = reducer.reduce(list(messages), namespace=namespace)
    else:
        result = reducer.apply_step(step_id, list(messages), namespace=namespace)
    return result, messages_update(messages, result.surviving)


def create_reduction_node(
    reducer: MessageReducer, *, messages_key: str = "messages"
) -> RunnableLambda[Any, dict[str, list[Any]]]:
    """A graph node that bounds the ``add_messages`` list in state, so the state shrinks.

    For graphs that keep LangGraph's plain ``add_messages`` channel (``MessagesState``).
    The node reads ``state[messages_key]``, reduces it (running the summary and the
    ``on_prune`` hooks with :func:`memory_namespace` of the run's config) and returns the
    update that stores the surviving list; see :func:`messages_update` for its two forms.
    When an injected summary must sit where the pruned block was, the update replaces the
    whole list, so the summary stays in place and the list stays valid. When nothing is
    pruned the node returns ``{}`` and writes nothing.

    The node works with ``invoke`` and ``ainvoke``; on the async path the reduction (which
    may call a blocking ``summarize_fn`` or hook) runs in the config's executor.

    Args:
        reducer: The reducer that bounds the list.
        messages_key: The state key holding the messages.

    Returns:
        A runnable node, named ``"reduce_messages"``: ``builder.add_node(node)`` or
        ``builder.add_node("my_name", node)``.

    Raises:
        ValueError: ``messages_key`` is empty or not a string.

    When run, the node raises ``KeyError`` if the state lacks ``messages_key``, and
    ``SummaryError`` / ``PruneHookError`` from the reducer (the state is then unchanged).
    """
    if not isinstance(messages_key, str) or not messages_key:
        raise ValueError(f"messages_key must be a non-empty string, got {messages_key!r}")

    def reduce_messages(state: Any, config: RunnableConfig) -> dict[str, list[Any]]:
        _, update = _reduction_update(reducer, _read_messages(state, messages_key), config)
        return {messages_key: update} if update else {}

    async def areduce_messages(state: Any, config: RunnableConfig) -> dict[str, list[Any]]:
        return await run_in_executor(config, reduce_messages, state, config)

    return RunnableLambda(reduce_messages, afunc=areduce_messages, name="reduce_messages")


StepChoice = str | Callable[[Any], str]
"""A step id, or a function of the state that returns one."""


def create_reduction_step_node(
    reducer: MessageReducer,
    step_id: StepChoice,
    *,
    messages_key: str = "messages",
    update: Callable[[ReducerResult, Any], Mapping[str, Any]] | None = None,
    name: str | None = None,
) -> RunnableLambda[Any, dict[str, Any]]:
    """A graph node that applies exactly one step of the reducer's policy.

    The Python form of a context-reduction node that runs one registered reduction step:
    it works like :func:`create_reduction_node`, but runs only the step ``step_id`` (fixed,
    or chosen from the state when it runs), and only when the list is over the reducer's
    limit. Chain several such nodes, with your own routing between them, to run a policy
    one step per node.

    Args:
        reducer: The reducer whose policy holds the step.
        step_id: The step's id, or a function ``(state) -> id``.
        messages_key: The state key holding the messages.
        update: Optional ``(result, state) -> dict`` whose keys are added to the node's
            update (for example to record ``result.steps`` in state).
        name: The node's name; defaults to ``"reduce_" + step_id`` for a fixed id.

    Returns:
        A runnable node, usable with ``invoke`` and ``ainvoke``.

    Raises:
        KeyError: A fixed ``step_id`` is not in the reducer's policy.
        ValueError: ``messages_key`` is empty or not a string.
        TypeError: ``step_id`` is neither a string nor callable.

    When run, the node raises ``KeyError`` for a chosen id not in the policy or a state
    without ``messages_key``, and ``SummaryError`` / ``PruneHookError`` from the reducer.
    """
    if not isinstance(messages_key, str) or not messages_key:
        raise ValueError(f"messages_key must be a non-empty string, got {messages_key!r}")
    known = [step.id for step in reducer.steps]
    if isinstance(step_id, str):
        if step_id not in known:
            raise KeyError(f"no reduction step {step_id!r} in the reducer's policy ({known})")
    elif not callable(step_id):
        raise TypeError(f"step_id must be a step id or a function of the state, got {step_id!r}")

    def reduce_step(state: Any, config: RunnableConfig) -> dict[str, Any]:
        chosen = step_id if isinstance(step_id, str) else step_id(state)
        result, messages = _reduction_update(
            reducer, _read_messages(state, messages_key), config, step_id=chosen
        )
        out: dict[str, Any] = {messages_key: messages} if messages else {}
        if update is not None:
            out.update(update(result, state))
        return out

    async def areduce_step(state: Any, config: RunnableConfig) -> dict[str, Any]:
        return await run_in_executor(config, reduce_step, state, config)

    node_name = name or (f"reduce_{step_id}" if isinstance(step_id, str) else "reduce_step")
    return RunnableLambda(reduce_step, afunc=areduce_step, name=node_name)
