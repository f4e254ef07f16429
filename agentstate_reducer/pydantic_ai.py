"""pydantic-ai support (extra ``[pydantic-ai]``): a history processor for ``ProcessHistory``.

pydantic-ai runs a ``ProcessHistory`` capability's processor before every model request of a
run, and the list it returns replaces the run's messages: it is what the model is sent and
what ``result.all_messages()`` hands back to be stored for the next run. So
:func:`history_processor` bounds both at once::

    agent = Agent(model, capabilities=[ProcessHistory(history_processor(reducer))])

The messages are pydantic-ai's own (``ModelRequest``/``ModelResponse``), read by the
pydantic-ai format (:mod:`agentstate_reducer.messages.pydantic_ai`): a response's tool
calls leave with the request holding their results (parallel calls and retries too), the
newest question and everything after it stay, requests and responses keep alternating, and
the first request, which holds the agent's system prompt with the first question, stays while
``preserve_first`` is True (the default). What leaves reaches the ``on_prune`` hooks once:
it is no longer in the history the run stores. An injected summary is a ``ModelRequest`` or
``ModelResponse`` in the list, marked in its ``metadata``.

A hook or summarizer that fails keeps every message (``on_prune_error="keep"``): the run goes
on with the whole history, which the caller stores as usual, and a later request (in this run
or the next) prunes and hands over again once the hook is back. The reducer logs the failure
and ``reducer.handoff_status()`` shows it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ._extras import missing_extra
from .reducer import MessageReducer, check_reducer

try:
    from pydantic_ai.messages import ModelMessage
    from pydantic_ai.tools import RunContext
except ImportError as exc:
    raise missing_extra("agentstate_reducer.pydantic_ai", "pydantic-ai", exc) from exc

__all__ = ["HistoryProcessor", "history_processor"]

HistoryProcessor = Callable[[RunContext[Any], list[ModelMessage]], Awaitable[list[ModelMessage]]]
"""What :func:`history_processor` returns: an async processor taking the run context."""


def history_processor(
    reducer: MessageReducer,
    *,
    namespace: Any = None,
) -> HistoryProcessor:
    """A processor for pydantic-ai's ``ProcessHistory`` capability that keeps the run's
    history bounded with ``reducer``.

    It is a coroutine function taking the run context, so it serves ``run``, ``run_sync``
    and ``run_stream`` alike (pydantic-ai awaits it on the run's event loop; blocking hooks
    and summarizers run in worker threads there, see ``MessageReducer.areduce``). The list
    it returns replaces the run's messages, so what leaves is gone from what
    ``result.all_messages()`` returns and reaches the ``on_prune`` hooks once.

    pydantic-ai has no thread id: ``namespace`` names the conversation for the hooks and
    for the reducer's memories (summaries, hand-offs). Give each conversation its own
    (a user and chat id, say) when one reducer serves several; a callable is called with
    the run's ``RunContext`` before each reduce (``lambda ctx: ctx.deps.chat_id``, or,
    in pydantic-ai 2, ``lambda ctx: ctx.conversation_id``).

    Args:
        reducer: The reducer; its config says when and how to prune, summarise and hand
            over.
        namespace: Passed to the hooks; a value, or a callable of the run context.

    Returns:
        The processor: ``ProcessHistory(history_processor(reducer))``.

    Raises:
        TypeError: ``reducer`` is not a ``MessageReducer``.

    Example:
        >>> from pydantic_ai import Agent
        >>> from pydantic_ai.capabilities import ProcessHistory
        >>> from pydantic_ai.models.test import TestModel
        >>> from agentstate_reducer import MessageReducer
        >>> reducer = MessageReducer(min_messages=4, max_messages=8)
        >>> agent = Agent(
        ...     TestModel(), capabilities=[ProcessHistory(history_processor(reducer))]
        ... )
    """
    check_reducer(reducer)
    name_of: Callable[[RunContext[Any]], Any] | None = namespace if callable(namespace) else None

    async def process(ctx: RunContext[Any], messages: list[ModelMessage]) -> list[ModelMessage]:
        """Reduce the run's messages (see :func:`history_processor`)."""
        where = name_of(ctx) if name_of is not None else namespace
        result = await reducer.areduce(messages, namespace=where, on_prune_error="keep")
        return list(result.surviving)

    return process
