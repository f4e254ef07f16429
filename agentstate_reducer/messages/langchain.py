"""LangChain message objects: ``HumanMessage``, ``AIMessage``, ``ToolMessage``, chunks,
``ChatMessage``, ``FunctionMessage``.

Read attribute by attribute as :mod:`.chat` reads dicts (the Chat family: a list may mix
LangChain messages with Chat dicts and LangChain's dict forms). Beside ``tool_calls``, an
``AIMessage`` may hold its calls as content blocks: Anthropic ``tool_use`` blocks (what
``convert_to_messages`` makes of Anthropic dicts, and what ``ChatAnthropic`` keeps next to
``tool_calls``) and v1 ``tool_call`` blocks; a block whose id is also in ``tool_calls`` is
the same call, counted once. A ``HumanMessage`` may hold ``tool_result`` blocks: it answers
those calls, and is a result only (never the question) when it holds nothing else.

Pairing and validity rules are the Chat family's (see :mod:`.chat`). Everything the reducer
writes into such a list is a LangChain message of the same class (``model_copy``): a summary
is a ``HumanMessage`` marked ``additional_kwargs["lc_source"] = "summarization"``, as
LangChain's own summarization middleware marks it.
"""

from __future__ import annotations

from typing import Any

from .base import SUMMARY_SOURCE, module_of
from .chat import ChatFormat


def is_langchain(msg: Any) -> bool:
    """Whether ``msg`` is a LangChain message object (by its class, no import)."""
    return any(cls.__module__.startswith("langchain_core.") for cls in type(msg).__mro__)


def is_langchain_module(msg: Any) -> bool:
    """The cheap test: the object's own class lives in ``langchain_core``."""
    return module_of(msg).startswith("langchain_core.")


def langchain_summary(text: str, block_id: str) -> Any:
    """A summary block's message in a list of LangChain messages."""
    from langchain_core.messages import HumanMessage

    return HumanMessage(content=text, id=block_id, additional_kwargs={"lc_source": SUMMARY_SOURCE})


class LangChainFormat(ChatFormat):
    """LangChain message objects (see the module docstring); one family with Chat dicts."""

    name = "langchain"


LANGCHAIN_FORMAT = LangChainFormat()
