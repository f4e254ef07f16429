"""Graph nodes that bound an ``add_messages`` list in state with ``RemoveMessage`` updates.

* :func:`messages_update`: the ``add_messages`` update that turns one message list into
  another (shared by the nodes and the agent middleware);
* :func:`create_reduction_node`: a node that reduces ``state[messages_key]`` and returns
  that update, so the stored state shrinks (``MessagesState`` graphs);
* :func:`create_reduction_step_node`: the same for exactly one step of the reducer's
  policy.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.messages import RemoveMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from .._checks import check_choice, check_name
from ..messages import id_of
from ..reducer import check_reducer
from .namespace import memory_namespace
from .reduction import warn_if_summary_is_dropped

if TYPE_CHECKING:
    from ..reducer import MessageReducer, OnPruneError
    from ..result import ReducerResult

__all__ = [
    "StepChoice",
    "create_reduction_node",
    "create_reduction_step_node",
    "messages_update",
    "read_messages",
]


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


def read_messages(state: Any, messages_key: str) -> list[Any]:
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


def reduction_update(
    reducer: MessageReducer,
    messages: Sequence[Any],
    config: RunnableConfig | None,
    step_id: str | None = None,
    *,
    on_prune_error: OnPruneError = "keep",
) -> tuple[ReducerResult, list[Any]]:
    """Reduce ``messages`` and compute the ``add_messages`` update that stores the result.

    Runs the summary and the ``on_prune`` hooks (with :func:`memory_namespace`).

    Args:
        reducer: The reducer.
        messages: The list in state.
        config: The run's config, for the hooks' namespace.
        step_id: Run only this step of the reducer's policy (``reducer.apply_step``).
        on_prune_error: ``"keep"`` (a failing hook or summarizer leaves the state as it
            is, to be retried on the next run of the node) or ``"raise"``.

    Returns:
        The reducer's result and the update (empty when nothing changes).

    Raises:
        SummaryError: With ``on_prune_error="raise"``, ``summarize_fn`` failed.
        PruneHookError: With ``on_prune_error="raise"``, an ``on_prune`` hook failed.
    """
    namespace = memory_namespace(reducer, config)
    # Always "keep": the state is the retry buffer (a failed hand-off is retried from it,
    # not from the reducer's memory, so a resumed step cannot drop what was not delivered);
    # "raise" then fails the step as well.
    if step_id is None:
        result = reducer.reduce(list(messages), namespace=namespace, on_prune_error="keep")
    else:
        result = reducer.apply_step(
            step_id, list(messages), namespace=namespace, on_prune_error="keep"
        )
    return _checked(result, on_prune_error), messages_update(messages, result.surviving)


async def areduction_update(
    reducer: MessageReducer,
    messages: Sequence[Any],
    config: RunnableConfig | None,
    step_id: str | None = None,
    *,
    on_prune_error: OnPruneError = "keep",
) -> tuple[ReducerResult, list[Any]]:
    """Async :func:`reduction_update` (``areduce``: coroutine hooks and summarizers are
    awaited, blocking ones run in worker threads).

    Raises:
        SummaryError: With ``on_prune_error="raise"``, ``summarize_fn`` failed.
        PruneHookError: With ``on_prune_error="raise"``, an ``on_prune`` hook failed.
    """
    namespace = memory_namespace(reducer, config)
    if step_id is None:
        result = await reducer.areduce(list(messages), namespace=namespace, on_prune_error="keep")
    else:
        result = await reducer.aapply_step(
            step_id, list(messages), namespace=namespace, on_prune_error="keep"
        )
    return _checked(result, on_prune_error), messages_update(messages, result.surviving)


def _checked(result: ReducerResult, on_prune_error: OnPruneError) -> ReducerResult:
    """``result``, or, with ``on_prune_error="raise"``, the error of what it kept."""
    error = result.hook_error or result.summary_error
    if error is not None and on_prune_error == "raise":
        raise error
    return result


def create_reduction_node(
    reducer: MessageReducer,
    *,
    messages_key: str = "messages",
    on_prune_error: OnPruneError = "keep",
) -> RunnableLambda[Any, dict[str, list[Any]]]:
    """A graph node that bounds the ``add_messages`` list in state, so the state shrinks.

    For graphs that keep LangGraph's plain ``add_messages`` channel (``MessagesState``).
    The node reads ``state[messages_key]``, reduces it (running the summary and the
    ``on_prune`` hooks with :func:`memory_namespace` of the run's config) and returns the
    update that stores the surviving list; see :func:`messages_update` for its two forms.
    When an injected summary must sit where the pruned block was, the update replaces the
    whole list, so the summary stays in place and the list stays valid. When nothing is
    pruned the node returns ``{}`` and writes nothing.

    The node works with ``invoke`` and ``ainvoke``; on the async path the reduction awaits
    coroutine hooks and summarizers and runs blocking ones in worker threads.

    A memory store or summarizer that is down never fails the run (``on_prune_error=
    "keep"``, the default): the node leaves the state as it is and the next run of the node
    tries again; ``"raise"`` fails the step instead.

    Args:
        reducer: The reducer that bounds the list.
        messages_key: The state key holding the messages.
        on_prune_error: ``"keep"`` or ``"raise"``, as above.

    Returns:
        A runnable node, named ``"reduce_messages"``: ``builder.add_node(node)`` or
        ``builder.add_node("my_name", node)``.

    Raises:
        TypeError: ``messages_key`` is not a string.
        ValueError: ``messages_key`` is empty.

    When run, the node raises ``KeyError`` if the state lacks ``messages_key``, and, with
    ``on_prune_error="raise"``, ``SummaryError`` / ``PruneHookError`` from the reducer (the
    state is then unchanged).
    """
    check_reducer(reducer)
    check_name("messages_key", messages_key)
    check_choice("on_prune_error", on_prune_error, ("keep", "raise"))
    warn_if_summary_is_dropped(reducer, "a reduction node")

    def reduce_messages(state: Any, config: RunnableConfig) -> dict[str, list[Any]]:
        messages = read_messages(state, messages_key)
        _, update = reduction_update(reducer, messages, config, on_prune_error=on_prune_error)
        return {messages_key: update} if update else {}

    async def areduce_messages(state: Any, config: RunnableConfig) -> dict[str, list[Any]]:
        messages = read_messages(state, messages_key)
        _, update = await areduction_update(
            reducer, messages, config, on_prune_error=on_prune_error
        )
        return {messages_key: update} if update else {}

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
    on_prune_error: OnPruneError = "keep",
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
        on_prune_error: As for :func:`create_reduction_node` (default ``"keep"``).

    Returns:
        A runnable node, usable with ``invoke`` and ``ainvoke``.

    Raises:
        KeyError: A fixed ``step_id`` is not in the reducer's policy.
        TypeError: ``messages_key`` is not a string, or ``step_id`` is neither a string nor
            callable.
        ValueError: ``messages_key`` is empty.

    When run, the node raises ``KeyError`` for a chosen id not in the policy or a state
    without ``messages_key``, and, with ``on_prune_error="raise"``, ``SummaryError`` /
    ``PruneHookError`` from the reducer.
    """
    check_name("messages_key", messages_key)
    check_reducer(reducer)
    check_choice("on_prune_error", on_prune_error, ("keep", "raise"))
    warn_if_summary_is_dropped(reducer, "a reduction node")
    known = [step.id for step in reducer.steps]
    if isinstance(step_id, str):
        if step_id not in known:
            raise KeyError(f"no reduction step {step_id!r} in the reducer's policy ({known})")
    elif not callable(step_id):
        raise TypeError(f"step_id must be a step id or a function of the state, got {step_id!r}")

    def output(result: ReducerResult, messages: list[Any], state: Any) -> dict[str, Any]:
        out: dict[str, Any] = {messages_key: messages} if messages else {}
        if update is not None:
            out.update(update(result, state))
        return out

    def reduce_step(state: Any, config: RunnableConfig) -> dict[str, Any]:
        chosen = step_id if isinstance(step_id, str) else step_id(state)
        found = read_messages(state, messages_key)
        reduced = reduction_update(
            reducer, found, config, step_id=chosen, on_prune_error=on_prune_error
        )
        return output(*reduced, state)

    async def areduce_step(state: Any, config: RunnableConfig) -> dict[str, Any]:
        chosen = step_id if isinstance(step_id, str) else step_id(state)
        found = read_messages(state, messages_key)
        reduced = await areduction_update(
            reducer, found, config, step_id=chosen, on_prune_error=on_prune_error
        )
        return output(*reduced, state)

    node_name = name or (f"reduce_{step_id}" if isinstance(step_id, str) else "reduce_step")
    return RunnableLambda(reduce_step, afunc=areduce_step, name=node_name)
