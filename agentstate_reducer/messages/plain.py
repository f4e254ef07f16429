"""The counting fast path: :func:`plain_parts` reads the parts of the messages a token
budget meets on nearly every turn (LangChain messages and Chat dicts with text content)
without telling their format first.

:func:`~agentstate_reducer.messages.parts_of` finds the message's format, then reads it;
:class:`~agentstate_reducer.tokens.TokenCounter` also reads its view first, to refuse what
is not a message. For a LangChain ``HumanMessage``, ``AIMessage``, ``ToolMessage`` or
``SystemMessage``, or a dict with a ``role`` of ``user``, ``assistant``, ``system`` or
``tool``, whose content is a ``str`` and whose other fields have their usual exact types,
neither step can change the answer: such a message is read here directly, anything else
is left to them (``None``).
"""

from __future__ import annotations

from typing import Any

from .base import AI, TOOL, Parts
from .chat import function_call_attribute, plain_call_ids, tool_call_parts
from .langchain import is_langchain_module

#: The ``type`` of each LangChain message class read here, and its role.
_LANGCHAIN_TYPES = {"human": "human", "ai": AI, "tool": TOOL, "system": "system"}
#: The ``role`` of each Chat dict read here, and its role.
_CHAT_ROLES = {"user": "human", "assistant": AI, "tool": TOOL, "system": "system"}
#: Per class: whether it is a LangChain class (what the format reader tells by its module).
_LANGCHAIN_CLASSES: dict[type, bool] = {}


def plain_parts(msg: Any) -> Parts | None:
    """``parts_of(msg)`` for a LangChain message or a role-keyed Chat dict with text
    content and usual field types (see the module docstring), else None.

    Invariant: when it is not None, it equals ``parts_of(msg)``, and ``read_view(msg)``
    returns a view rather than raising (``msg`` is a message); tests/test_hot_path.py
    checks both over messages of every shape, usual and odd. What it requires is what both
    read directly: a ``str`` content; an id that is None or a ``str``; ``additional_kwargs``
    None or a dict that holds no ``tool_calls`` or ``function_call`` (nor, on a dict, a
    non-string ``lc_source``); on an ai message, no legacy ``function_call`` and tool calls
    that are a list of dicts whose ids are None or strings; on a tool message, a call id
    that is None or a ``str``. Anything else returns None.
    """
    cls = type(msg)
    if cls is dict:
        raw = msg.get("role")
        role = _CHAT_ROLES.get(raw) if type(raw) is str else None
        if role is None or "data" in msg:
            return None
        content = msg.get("content")
        ident = msg.get("id")
        extra = msg.get("additional_kwargs")
        source = msg.get("lc_source")
        if source is not None and type(source) is not str:
            return None
        calls = msg.get("tool_calls") if role is AI else None
        legacy = msg.get("function_call") if role is AI else None
        answered = msg.get("tool_call_id") if role is TOOL else None
    else:
        langchain = _LANGCHAIN_CLASSES.get(cls)
        if langchain is None:
            langchain = _LANGCHAIN_CLASSES[cls] = is_langchain_module(msg)
        if not langchain:
            return None
        raw = getattr(msg, "type", None)
        role = _LANGCHAIN_TYPES.get(raw) if type(raw) is str else None
        if role is None:
            return None
        content = getattr(msg, "content", None)
        ident = getattr(msg, "id", None)
        extra = getattr(msg, "additional_kwargs", None)
        calls = getattr(msg, "tool_calls", None) if role is AI else None
        legacy = function_call_attribute(msg) if role is AI else None
        answered = getattr(msg, "tool_call_id", None) if role is TOOL else None
    if type(content) is not str or (ident is not None and type(ident) is not str):
        return None
    if answered is not None and type(answered) is not str:
        return None
    if extra is not None and (
        type(extra) is not dict or "tool_calls" in extra or "function_call" in extra
    ):
        return None
    if legacy is not None:
        return None
    if not calls:
        return _new(Parts, ([content], [], 0))
    if type(calls) is not list or plain_call_ids(calls) is None:
        return None
    return _new(Parts, ([content], [tool_call_parts(call) for call in calls], 0))


#: ``tuple.__new__``: builds the parts without the Python frame of ``Parts.__new__``.
_new = tuple.__new__
