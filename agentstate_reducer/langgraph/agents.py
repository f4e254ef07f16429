"""Bounding what an agent's model sees: LangChain v1 middleware and a LangGraph pre-model hook.

* :class:`ReducerMiddleware` plugs into ``langchain.agents.create_agent``.
* :func:`make_pre_model_hook` builds a ``pre_model_hook`` for
  ``langgraph.prebuilt.create_react_agent``.

Both work in one of two modes, and both default to ``"persistent"``:

* ``"persistent"`` (default): the reducer prunes the agent's state before each model call
  (with ``RemoveMessage`` updates, plus any injected summary), so the checkpointed history
  stays bounded, and what leaves the list reaches the summary and the ``on_prune`` hooks
  (long-term memory). This is the default because it is what the library is for: bounded
  storage and a hand-off that actually happens.
* ``"view"``: the state keeps every message (its storage keeps growing); only the list
  handed to the model is bounded, using :meth:`MessageReducer.view`. Nothing has left the
  conversation, so the summary and the ``on_prune`` hooks never run in this mode.

In persistent mode, while a memory store or summarizer is down (``on_prune_error=
"keep"``), the state is left unpruned: it is the retry buffer, and nothing is lost. The
model still gets a bounded list then: the reducer's view of the state (the policy run on
a copy, the oldest messages left out, no new summary), as in view mode. So the model's
input stays within the budget in every outage, and the stored list is bounded again once
the hand-off succeeds.

Both bound the conversation list only. ``create_agent``'s ``system_prompt`` (and
``create_react_agent``'s ``prompt``) is kept outside that list, so index 0 is the first
user question: both helpers therefore run the reducer with ``preserve_first="system"``
(keep index 0 only if it is a system message) unless told otherwise.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal

from .._extras import missing_extra

try:
    # langchain (create_agent's middleware) comes only with the [agents] extra; [langgraph]
    # alone must get the install line, not a bare "No module named 'langchain'".
    from langchain.agents.middleware.types import (
        AgentMiddleware,
        AgentState,
        ExtendedModelResponse,
        ModelRequest,
        ModelResponse,
    )
except ImportError as exc:
    raise missing_extra("agentstate_reducer.langgraph.agents", "agents", exc) from exc
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.config import get_config
from langgraph.runtime import Runtime
from typing_extensions import override

from .._checks import check_choice, check_name
from ._pairing import PreserveFirst, for_agent
from .namespace import memory_namespace
from .nodes import areduction_update, read_messages, reduction_update
from .reduction import warn_if_summary_is_dropped

if TYPE_CHECKING:
    from ..reducer import MessageReducer, OnPruneError
    from ..result import ReducerResult

__all__ = ["AgentMode", "ReducerMiddleware", "make_pre_model_hook"]

AgentMode = Literal["persistent", "view"]
"""``"persistent"`` prunes the agent's state; ``"view"`` bounds only what the model sees."""

_MODES: tuple[str, ...] = ("persistent", "view")

ModelCallResult = ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]


def _check_mode(mode: str) -> None:
    # 'persistent' prunes the state; 'view' bounds only the model's input.
    check_choice("mode", mode, _MODES)


def _run_config(runtime: Runtime[Any]) -> RunnableConfig:
    """The run's config, for the hooks' memory namespace.

    ``get_config()`` needs the run's context, which async code carries only from Python
    3.11; before that the runtime still names the thread (so the namespace is
    ``("memories", thread_id)``; a ``memory_namespace`` set in the config is not seen).
    """
    try:
        return get_config()
    except RuntimeError:
        info = getattr(runtime, "execution_info", None)
        thread_id = getattr(info, "thread_id", None)
        return {"configurable": {"thread_id": thread_id}} if thread_id is not None else {}


def _bounded_view(
    reducer: MessageReducer,
    messages: list[Any],
    on_prune_error: OnPruneError,
    namespace: Any = None,
) -> list[Any]:
    """The messages the model should see: the reducer's policy run on a copy (clearing,
    compressing, pruning, recalling; no summary, no hooks, the state untouched). A list
    within the bound comes back as it is, unless a view-only step (``Recall``) adds to it."""
    if not reducer.adds_to_view and not reducer.limits.may_prune(len(messages)):
        return messages  # count mode, within max_messages: nothing to read
    surviving = reducer.view(messages, namespace, on_prune_error=on_prune_error).surviving
    return surviving if surviving else messages


async def _abounded_view(
    reducer: MessageReducer,
    messages: list[Any],
    on_prune_error: OnPruneError,
    namespace: Any = None,
) -> list[Any]:
    """Async :func:`_bounded_view` (coroutine compressors, scorers and stores awaited)."""
    if not reducer.adds_to_view and not reducer.limits.may_prune(len(messages)):
        return messages
    result = await reducer.aview(messages, namespace, on_prune_error=on_prune_error)
    return result.surviving if result.surviving else messages


class ReducerMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """``create_agent`` middleware that keeps the agent's history bounded by a reducer.

    In ``"persistent"`` mode (default) ``before_model`` reduces ``state["messages"]`` and
    returns the ``RemoveMessage`` updates (and any injected summary) that store the
    surviving list, so the checkpointed state shrinks; the ``on_prune`` hooks get the
    namespace of :func:`~agentstate_reducer.langgraph.memory_namespace`; while a memory
    store or summarizer is down the state is kept unpruned (the retry buffer) and
    ``wrap_model_call`` hands the model the reducer's view of it instead, so the model's
    input stays within the budget. In ``"view"`` mode ``wrap_model_call`` always hands the
    model the list :meth:`MessageReducer.view` makes (the policy run on a copy: old tool
    outputs cleared, messages compressed, old turns left out, as
    ``ContextEditingMiddleware`` does) and leaves the state alone (no summary is made and
    no hook runs). Either way, with the
    reducer's default ``cascade_tool_messages=True``, tool calls and their results are
    kept or dropped together.

    Example:
        ``create_agent(model, tools, system_prompt=..., middleware=[ReducerMiddleware(r)])``

    Args:
        reducer: The reducer that bounds the messages.
        mode: ``"persistent"`` (default) or ``"view"``.
        preserve_first: The ``preserve_first`` the reducer runs with here: ``"system"``
            (default), since ``create_agent`` keeps its system prompt outside the state and
            index 0 is the first question; None keeps the reducer's own setting. The
            reducer's memories (hand-off, summaries) are shared either way. A
            ``ReducingCheckpointSaver`` given the same reducer runs it with this setting
            too, so the two prune the same window and keep one running summary.
        on_prune_error: ``"keep"`` (default): a memory store or summarizer that is down
            never fails the user's turn; the state stays unpruned and the next model call
            tries again. ``"raise"`` fails the turn with the reducer's error.
        name: The middleware's name in the agent graph (``create_agent`` requires unique
            names); defaults to ``"ReducerMiddleware"``.

    Raises:
        TypeError: ``mode`` is not a string, or ``preserve_first`` has the wrong type.
        ValueError: ``mode`` is not ``"persistent"`` or ``"view"``.
    """

    def __init__(
        self,
        reducer: MessageReducer,
        *,
        mode: AgentMode = "persistent",
        preserve_first: PreserveFirst = "system",
        on_prune_error: OnPruneError = "keep",
        name: str | None = None,
    ) -> None:
        _check_mode(mode)
        check_choice("on_prune_error", on_prune_error, ("keep", "raise"))
        super().__init__()
        self.reducer = for_agent(reducer, preserve_first)
        self.mode: AgentMode = mode
        self.on_prune_error: OnPruneError = on_prune_error
        self._name = name or type(self).__name__
        if mode == "persistent":
            warn_if_summary_is_dropped(reducer, "the agent middleware")

    @property
    @override
    def name(self) -> str:
        return self._name

    @override
    def before_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """In persistent mode, prune the state; returns the ``messages`` update or None.

        Raises:
            SummaryError: With ``on_prune_error="raise"``, ``summarize_fn`` failed.
            PruneHookError: With ``on_prune_error="raise"``, an ``on_prune`` hook failed.
        """
        if self.mode != "persistent":
            return None
        messages = read_messages(state, "messages")
        _, update = reduction_update(
            self.reducer, messages, _run_config(runtime), on_prune_error=self.on_prune_error
        )
        return {"messages": update} if update else None

    @override
    async def abefore_model(
        self, state: AgentState[Any], runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """Async :meth:`before_model` (``areduce``: never blocks the event loop).

        Raises:
            SummaryError: With ``on_prune_error="raise"``, ``summarize_fn`` failed.
            PruneHookError: With ``on_prune_error="raise"``, an ``on_prune`` hook failed.
        """
        if self.mode != "persistent":
            return None
        messages = read_messages(state, "messages")
        _, update = await areduction_update(
            self.reducer, messages, _run_config(runtime), on_prune_error=self.on_prune_error
        )
        return {"messages": update} if update else None

    @override
    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelCallResult:
        """Call the model with the bounded list: in view mode always; in persistent mode
        the state is already bounded, except during an outage (the state is kept
        unpruned then), when the model gets the reducer's view of it."""
        if not request.messages:
            return handler(request)
        view = _bounded_view(
            self.reducer, list(request.messages), self.on_prune_error, self._namespace(request)
        )
        return handler(self._with_messages(request, view))

    @override
    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelCallResult:
        """Async :meth:`wrap_model_call`."""
        if not request.messages:
            return await handler(request)
        view = await _abounded_view(
            self.reducer, list(request.messages), self.on_prune_error, self._namespace(request)
        )
        return await handler(self._with_messages(request, view))

    def _namespace(self, request: ModelRequest[Any]) -> Any:
        """The conversation the view belongs to (the steps' memories are keyed by it)."""
        runtime = getattr(request, "runtime", None)
        if runtime is None:
            return None
        return memory_namespace(self.reducer, _run_config(runtime))

    @staticmethod
    def _with_messages(request: ModelRequest[Any], view: list[Any]) -> ModelRequest[Any]:
        unchanged = len(view) == len(request.messages) and all(
            a is b for a, b in zip(view, request.messages, strict=True)
        )
        return request if unchanged else request.override(messages=view)


def make_pre_model_hook(
    reducer: MessageReducer,
    *,
    mode: AgentMode = "persistent",
    messages_key: str = "messages",
    preserve_first: PreserveFirst = "system",
    on_prune_error: OnPruneError = "keep",
) -> RunnableLambda[Any, dict[str, list[Any]]]:
    """A ``pre_model_hook`` for ``langgraph.prebuilt.create_react_agent``.

    ``create_react_agent`` is deprecated since LangGraph 1.0 in favour of LangChain's
    ``create_agent``; for that, use :class:`ReducerMiddleware`. The hook always returns
    ``llm_input_messages``: the bounded list the model is called with, never empty
    (``create_react_agent`` would silently fall back to the whole history on an empty one).
    In ``"persistent"`` mode (default) it also returns the ``messages`` update that prunes
    the state (``RemoveMessage`` updates plus any injected summary; see
    :func:`~agentstate_reducer.langgraph.messages_update`), and the summary and
    ``on_prune`` hooks run, with the namespace of
    :func:`~agentstate_reducer.langgraph.memory_namespace`; while a memory store or
    summarizer is down the state is kept unpruned and ``llm_input_messages`` is the
    reducer's view of it (within the budget). In ``"view"`` mode the state keeps every
    message and neither the summary nor the hooks run.

    Args:
        reducer: The reducer that bounds the messages.
        mode: ``"persistent"`` (default) or ``"view"``.
        messages_key: The state key holding the messages.
        preserve_first: As for :class:`ReducerMiddleware` (default ``"system"``: the
            agent's ``prompt`` lives outside the state).
        on_prune_error: As for :class:`ReducerMiddleware` (default ``"keep"``).

    Returns:
        A runnable usable as ``create_react_agent(..., pre_model_hook=hook)``, sync or async.

    Raises:
        TypeError: ``mode`` or ``messages_key`` is not a string.
        ValueError: ``mode`` is not ``"persistent"`` or ``"view"``, or ``messages_key`` is
            empty.

    When run, the hook raises ``ValueError`` if the state holds no messages (there is
    nothing to call the model with), and, with ``on_prune_error="raise"``,
    ``SummaryError`` / ``PruneHookError`` from the reducer in persistent mode.
    """
    _check_mode(mode)
    check_name("messages_key", messages_key)
    check_choice("on_prune_error", on_prune_error, ("keep", "raise"))
    bound = for_agent(reducer, preserve_first)
    if mode == "persistent":
        warn_if_summary_is_dropped(reducer, "the pre-model hook")

    def messages_of(state: Any) -> list[Any]:
        messages = read_messages(state, messages_key)
        if not messages:
            raise ValueError(
                f"pre_model_hook found no messages under {messages_key!r}: invoke the agent "
                'with at least one message, e.g. {"messages": [("user", "hi")]}'
            )
        return messages

    def output(model_input: list[Any], update: list[Any]) -> dict[str, Any]:
        out: dict[str, list[Any]] = {"llm_input_messages": model_input}
        if update:
            out[messages_key] = update
        return out

    def kept(result: ReducerResult) -> bool:
        """Whether the reduce kept the list as it was because of an outage."""
        return result.hook_error is not None or result.summary_error is not None

    def pre_model_hook(state: Any, config: RunnableConfig) -> dict[str, list[Any]]:
        messages = messages_of(state)
        namespace = memory_namespace(bound, config)
        if mode == "view":
            return {"llm_input_messages": _bounded_view(bound, messages, on_prune_error, namespace)}
        result, update = reduction_update(bound, messages, config, on_prune_error=on_prune_error)
        if kept(result):  # an outage: the state stays unpruned, the model gets the view
            return output(_bounded_view(bound, messages, on_prune_error, namespace), update)
        shown = result.surviving or messages
        if bound.adds_to_view:  # Recall: the model sees the view of the bounded list
            shown = _bounded_view(bound, shown, on_prune_error, namespace)
        return output(shown, update)

    async def apre_model_hook(state: Any, config: RunnableConfig) -> dict[str, list[Any]]:
        messages = messages_of(state)
        namespace = memory_namespace(bound, config)
        if mode == "view":
            view = await _abounded_view(bound, messages, on_prune_error, namespace)
            return {"llm_input_messages": view}
        result, update = await areduction_update(
            bound, messages, config, on_prune_error=on_prune_error
        )
        if kept(result):
            view = await _abounded_view(bound, messages, on_prune_error, namespace)
            return output(view, update)
        shown = result.surviving or messages
        if bound.adds_to_view:
            shown = await _abounded_view(bound, shown, on_prune_error, namespace)
        return output(shown, update)

    return RunnableLambda(pre_model_hook, afunc=apre_model_hook, name="pre_model_hook")
