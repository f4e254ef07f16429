"""Bounding what an agent's model sees: LangChain v1 middleware and a LangGraph pre-model hook.

* :class:`ReducerMiddleware` plugs into ``langchain.agents.create_agent``.
* :func:`make_pre_model_hook` builds a ``pre_model_hook`` for
  ``langgraph.prebuilt.create_react_agent``.

Both work in one of two modes:

* ``"persistent"``: the reducer prunes the agent's state before each model call (with
  ``RemoveMessage`` updates, plus any injected summary), so the checkpointed history stays
  bounded; the summary and ``on_prune`` hooks run as they would in ``reduce``.
* ``"view"``: the state keeps every message; only the list handed to the model is bounded,
  using :meth:`MessageReducer.plan`. Nothing has left the conversation, so the summary
  and the ``on_prune`` hooks never run in this mode.

Both modes bound the conversation list only. ``create_agent``'s ``system_prompt`` is kept
outside that list, so it is neither counted nor pruned; pass ``preserve_first=False`` in
the reducer's config if the first user message need not be pinned.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal

from langchain.agents.middleware.types import (
    AgentMiddleware,
    AgentState,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
)
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langchain_core.runnables.config import run_in_executor
from langgraph.config import get_config
from langgraph.runtime import Runtime
from typing_extensions import override

from .._checks import check_choice, check_name
from .nodes import read_messages, reduction_update

if TYPE_CHECKING:
    from ..reducer import MessageReducer

__all__ = ["AgentMode", "ReducerMiddleware", "make_pre_model_hook"]

AgentMode = Literal["persistent", "view"]
"""``"persistent"`` prunes the agent's state; ``"view"`` bounds only what the model sees."""

_MODES: tuple[str, ...] = ("persistent", "view")

ModelCallResult = ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]


def _check_mode(mode: str) -> None:
    # 'persistent' prunes the state; 'view' bounds only the model's input.
    check_choice("mode", mode, _MODES)


def _bounded_view(reducer: MessageReducer, messages: list[Any]) -> list[Any]:
    """The messages the model should see, by the reducer's plan (no summary, no hooks)."""
    surviving = reducer.plan(messages).surviving
    return surviving if surviving else messages


class ReducerMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """``create_agent`` middleware that keeps what the model sees bounded by a reducer.

    In ``"persistent"`` mode ``before_model`` reduces ``state["messages"]`` and returns the
    ``RemoveMessage`` updates (and any injected summary) that store the surviving list, so
    the checkpointed state shrinks; the ``on_prune`` hooks get the namespace of
    :func:`~agentstate_reducer.langgraph.state.memory_namespace`. In ``"view"`` mode
    ``wrap_model_call`` hands the model the list :meth:`MessageReducer.plan` keeps and
    leaves the state alone (no summary is made and no hook runs). Either way, with the
    reducer's default ``cascade_tool_messages=True``, tool calls and their results are
    kept or dropped together.

    Example:
        ``create_agent(model, tools, middleware=[ReducerMiddleware(reducer, mode="view")])``

    Args:
        reducer: The reducer that bounds the messages.
        mode: ``"persistent"`` (default) or ``"view"``.
        name: The middleware's name in the agent graph (``create_agent`` requires unique
            names); defaults to ``"ReducerMiddleware"``.

    Raises:
        ValueError: ``mode`` is not ``"persistent"`` or ``"view"``.
    """

    def __init__(
        self, reducer: MessageReducer, *, mode: AgentMode = "persistent", name: str | None = None
    ) -> None:
        _check_mode(mode)
        super().__init__()
        self.reducer = reducer
        self.mode: AgentMode = mode
        self._name = name or type(self).__name__

    @property
    @override
    def name(self) -> str:
        return self._name

    @override
    def before_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """In persistent mode, prune the state; returns the ``messages`` update or None.

        Raises:
            SummaryError: ``summarize_fn`` failed; nothing was pruned.
            PruneHookError: An ``on_prune`` hook failed (``on_prune_error="raise"``).
        """
        if self.mode != "persistent":
            return None
        return self._prune(state, get_config())

    @override
    async def abefore_model(
        self, state: AgentState[Any], runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """Async :meth:`before_model`; the reduction runs in the run's executor.

        Raises:
            SummaryError: ``summarize_fn`` failed; nothing was pruned.
            PruneHookError: An ``on_prune`` hook failed (``on_prune_error="raise"``).
        """
        if self.mode != "persistent":
            return None
        config = get_config()
        return await run_in_executor(config, self._prune, state, config)

    def _prune(self, state: AgentState[Any], config: RunnableConfig) -> dict[str, Any] | None:
        _, update = reduction_update(self.reducer, read_messages(state, "messages"), config)
        return {"messages": update} if update else None

    @override
    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelCallResult:
        """In view mode, call the model with the bounded list; otherwise pass through."""
        return handler(self._bounded(request))

    @override
    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelCallResult:
        """Async :meth:`wrap_model_call`."""
        return await handler(self._bounded(request))

    def _bounded(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        if self.mode != "view" or not request.messages:
            return request
        view = _bounded_view(self.reducer, list(request.messages))
        if len(view) == len(request.messages):
            return request
        return request.override(messages=view)


def make_pre_model_hook(
    reducer: MessageReducer, *, mode: AgentMode = "view", messages_key: str = "messages"
) -> RunnableLambda[Any, dict[str, list[Any]]]:
    """A ``pre_model_hook`` for ``langgraph.prebuilt.create_react_agent``.

    The hook always returns ``llm_input_messages``: the bounded list the model is called
    with, never empty (``create_react_agent`` would silently fall back to the whole
    history on an empty one). In ``"view"`` mode (default) that is all; the state keeps
    every message and neither the summary nor the hooks run. In ``"persistent"`` mode the
    hook also returns the ``messages`` update that prunes the state (``RemoveMessage``
    updates plus any injected summary; see
    :func:`~agentstate_reducer.langgraph.state.messages_update`) and the summary and
    ``on_prune`` hooks run, with the namespace of
    :func:`~agentstate_reducer.langgraph.state.memory_namespace`.

    Args:
        reducer: The reducer that bounds the messages.
        mode: ``"view"`` (default) or ``"persistent"``.
        messages_key: The state key holding the messages.

    Returns:
        A runnable usable as ``create_react_agent(..., pre_model_hook=hook)``, sync or async.

    Raises:
        TypeError: ``mode`` or ``messages_key`` is not a string.
        ValueError: ``mode`` is not ``"persistent"`` or ``"view"``, or ``messages_key`` is
            empty.

    When run, the hook raises ``ValueError`` if the state holds no messages (there is
    nothing to call the model with), and ``SummaryError`` / ``PruneHookError`` from the
    reducer in persistent mode.
    """
    _check_mode(mode)
    check_name("messages_key", messages_key)

    def pre_model_hook(state: Any, config: RunnableConfig) -> dict[str, list[Any]]:
        messages = read_messages(state, messages_key)
        if not messages:
            raise ValueError(
                f"pre_model_hook found no messages under {messages_key!r}: invoke the agent "
                'with at least one message, e.g. {"messages": [("user", "hi")]}'
            )
        if mode == "view":
            return {"llm_input_messages": _bounded_view(reducer, messages)}
        result, update = reduction_update(reducer, messages, config)
        out: dict[str, list[Any]] = {"llm_input_messages": result.surviving or messages}
        if update:
            out[messages_key] = update
        return out

    async def apre_model_hook(state: Any, config: RunnableConfig) -> dict[str, list[Any]]:
        if mode == "view":
            return pre_model_hook(state, config)
        return await run_in_executor(config, pre_model_hook, state, config)

    return RunnableLambda(pre_model_hook, afunc=apre_model_hook, name="pre_model_hook")
