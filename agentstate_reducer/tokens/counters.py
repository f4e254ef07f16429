"""The counters ``token_counter`` accepts, each turned into a plain ``(message) -> int``.

* ``None`` or ``"estimate"``: :func:`~agentstate_reducer.tokens.estimate.estimate_tokens`;
* ``"approximate"``: LangChain's ``count_tokens_approximately`` (needs langchain-core);
* a tiktoken encoding name, loaded offline (:mod:`agentstate_reducer.tokens.encodings`), or
  a tiktoken ``Encoding``: exact text counts in the estimate's message framing;
* a LangChain chat model (its ``get_num_tokens_from_messages``);
* a ``(list of messages) -> int`` counter, asked about a one-message list;
* any callable ``(message) -> int``.

:func:`check_token_counter` refuses anything else when a config is built;
:func:`resolve_token_counter` builds the function.
"""

from __future__ import annotations

import functools
import inspect
import math
import operator
import sys
import typing
from collections.abc import Callable, Mapping
from typing import Any

from ..messages import parts_of, raw_role_of, read_view, reader_of
from ..messages.chat import ChatFormat
from .encodings import TIKTOKEN_NAMES, tiktoken_encoding
from .estimate import _message_tokens, estimate_tokens


def _langchain_approximate() -> Callable[[Any], int]:
    try:
        from langchain_core.messages import (
            AIMessage,
            HumanMessage,
            SystemMessage,
            ToolMessage,
        )
        from langchain_core.messages.utils import count_tokens_approximately
    except ImportError as exc:
        # Never fall back quietly: two installs would then prune the same list differently.
        raise ImportError(
            "token_counter='approximate' is LangChain's count_tokens_approximately and needs "
            'langchain-core: pip install "agentstate-reducer[langgraph]" (or langchain-core); '
            "or use token_counter='estimate' (the default, no dependency)"
        ) from exc

    roles = ((AIMessage, "assistant"), (HumanMessage, "user"), (ToolMessage, "tool"))
    # The exact classes first: one dict look-up instead of up to three ABC isinstance checks.
    exact_roles = {cls: name for cls, name in roles}

    def count(message: Any) -> int:
        # count_tokens_approximately adds up per-message counts; most of the cost of
        # calling it for one message is its set-up, so the common message classes are
        # counted here by the same rule (checked against it in the tests).
        try:
            role = exact_roles.get(type(message))
            if role is None:
                for cls, name in roles:
                    if isinstance(message, cls):
                        role = name
                        break
            if role is None and type(message) is SystemMessage:
                role = message.additional_kwargs.get("__openai_role__", "system")
            if role is not None and isinstance(role, str):
                content = message.content
                tokens = 0
                if isinstance(content, str):
                    chars = len(content)
                elif isinstance(content, list):
                    chars = 0
                    for block in content:
                        if isinstance(block, str):
                            chars += len(block)
                        elif isinstance(block, dict):
                            kind = block.get("type", "")
                            if kind in ("image", "image_url"):
                                tokens += 85
                            elif kind == "text":
                                chars += len(block.get("text", ""))
                            else:
                                chars += len(repr(block))
                        else:
                            chars += len(repr(block))
                else:
                    chars = len(repr(content))
                if role == "assistant" and not isinstance(content, list) and message.tool_calls:
                    chars += len(repr(message.tool_calls))
                if role == "tool":
                    chars += len(message.tool_call_id)
                chars += len(role)
                if message.name:
                    chars += len(message.name)
                return tokens + math.ceil(chars / 4) + 3
        except (TypeError, AttributeError, ValueError) as exc:
            # A field of a type the rule cannot read (set after validation, or a message
            # built without it): say so, not a bare len() or attribute error.
            raise TypeError(
                f"token_counter='approximate' cannot count this {type(message).__name__}: "
                f"{exc} (a field of the wrong type, or missing: build the message with its "
                "class)"
            ) from exc
        return count_converted(message)

    def count_converted(message: Any) -> int:
        """Another class, or another format: counted as LangChain counts what its
        ``convert_to_messages`` makes of it (see :func:`_as_langchain`)."""
        try:
            converted = _as_langchain(message)
        except (LookupError, TypeError, AttributeError, ValueError) as exc:
            # A dict LangChain cannot read (a tool result without tool_call_id, arguments
            # that are not JSON, a field pydantic refuses): a bare KeyError or a
            # ValidationError from inside LangChain would not say which message, or why.
            raise TypeError(
                f"token_counter='approximate' cannot count this {type(message).__name__}: "
                f"LangChain cannot convert it to one of its messages ({type(exc).__name__}: "
                f"{exc}); fix that field, or count this format with token_counter="
                "'estimate' (the default) or a tiktoken encoding"
            ) from exc
        return int(count_tokens_approximately([converted]))

    count.__dict__[CHEAP_COUNTER] = True
    return count


_langchain: Any = None


def _as_langchain(message: Any) -> Any:
    global _langchain
    if _langchain is None:
        import langchain_core.messages as _langchain_messages

        _langchain = _langchain_messages
    if isinstance(message, _langchain.BaseMessage):
        return message
    convert_to_messages = _langchain.convert_to_messages
    if (
        isinstance(message, Mapping)
        and isinstance(reader_of(message), ChatFormat)
        and not _holds_objects(message)
    ):
        if isinstance(message.get("data"), Mapping):
            return _langchain.messages_from_dict([dict(message)])[0]
        converted = dict(message)
        raw = raw_role_of(message)
        if raw is not None and "role" not in converted:
            converted["role"] = raw
        converted.pop("type", None)
        # OpenAI takes an assistant message of tool calls without content (what the SDK's
        # model_dump(exclude_none=True) gives); LangChain requires the key.
        converted.setdefault("content", "")
        return convert_to_messages([converted])[0]
    # Anything else LangChain cannot read as it is: another wire format, an object of
    # another class (a duck type), or a Chat dict holding SDK objects (the Anthropic SDK's
    # response.content appended as it came, the OpenAI SDK's tool-call objects), which
    # LangChain's validation refuses. It is given what the message counts, as a Chat dict:
    # its text, each call's name and arguments, the id a result answers, images as
    # LangChain's image blocks (a duck's role and content alone would leave its calls
    # uncounted, and a tool result without the tool_call_id LangChain requires).
    return convert_to_messages([_as_chat(message)])[0]


def _holds_objects(message: Mapping[str, Any]) -> bool:
    """Whether a Chat dict's content blocks or tool calls include objects (not str or dict)."""
    for key in ("content", "tool_calls"):
        value = message.get(key)
        if isinstance(value, (list, tuple)) and any(
            not isinstance(item, (str, Mapping)) for item in value
        ):
            return True
    return False


def _as_chat(message: Any) -> dict[str, Any]:
    """A Chat dict saying what ``message`` (of another format) counts."""
    view = read_view(message)
    parts = parts_of(message)
    text = "\n".join(t for t in parts.texts if t)
    content: Any = text
    if parts.images:
        content = [{"type": "text", "text": text}] + [
            {"type": "image_url", "image_url": {"url": "data:,"}}
        ] * parts.images
    role = {"human": "user", "ai": "assistant", "tool": "tool"}.get(view.role, "system")
    out: dict[str, Any] = {"role": role, "content": content}
    if role == "tool":
        out["tool_call_id"] = view.result_for or ""
    if parts.calls:
        out["tool_calls"] = [
            {"id": f"call_{n}", "type": "function", "function": {"name": name, "arguments": args}}
            for n, (name, args) in enumerate(parts.calls)
        ]
    return out


#: Marks a resolved counter that is cheaper to call than to cache (a few length look-ups,
#: like the cache key itself): :class:`~agentstate_reducer.tokens.TokenCounter` calls it
#: every time.
CHEAP_COUNTER = "_agentstate_cheap"


def _chat_model_counter(model: Any) -> Callable[[Any], int]:
    def count(message: Any) -> int:
        return int(model.get_num_tokens_from_messages([_as_langchain(message)]))

    return count


def _encoding_counter(encoding: Any) -> Callable[[Any], int]:
    def encode(text: str) -> int:
        return len(encoding.encode(text, disallowed_special=()))

    def count(message: Any) -> int:
        return _message_tokens(message, encode)

    return count


def _is_encoding(value: Any) -> bool:
    return callable(getattr(value, "encode", None)) and isinstance(
        getattr(value, "name", None), str
    )


def _is_chat_model(value: Any) -> bool:
    return callable(getattr(value, "get_num_tokens_from_messages", None))


#: Callables that count what a container holds (a dict's keys, a string's characters, an
#: object's bytes), not tokens: refused rather than quietly budgeting on the wrong thing.
_CONTAINER_COUNTERS = (len, operator.length_hint, sys.getsizeof)

#: How the first parameter of a ``(list of messages) -> int`` counter is annotated.
_LIST_ANNOTATIONS = ("list", "List", "Sequence", "Iterable", "Collection")


def _is_langchain_list_counter(counter: Any) -> bool:
    """LangChain's own list counters: count_tokens_approximately (or a partial of it) and a
    chat model's bound ``get_num_tokens_from_messages``."""
    while isinstance(counter, functools.partial):
        counter = counter.func
    if inspect.ismethod(counter) and counter.__name__ == "get_num_tokens_from_messages":
        return True
    # Looked up only when LangChain is imported already: if it is not, ``counter`` cannot
    # be one of its functions.
    utils = sys.modules.get("langchain_core.messages.utils")
    return utils is not None and counter is getattr(utils, "count_tokens_approximately", None)


def _is_list_counter(counter: Any) -> bool:
    """Whether ``counter`` takes a list of messages: a LangChain counter, or a callable whose
    first parameter is named ``messages`` or annotated as a list, sequence or iterable."""
    if _is_langchain_list_counter(counter):
        return True
    try:
        parameters = list(inspect.signature(counter).parameters.values())
    except (TypeError, ValueError):  # builtins and C callables without a signature
        return False
    if not parameters:
        return False
    first = parameters[0]
    if first.name == "messages":
        return True
    annotation = first.annotation
    if annotation is inspect.Parameter.empty:
        return False
    if not isinstance(annotation, str):
        origin = typing.get_origin(annotation) or annotation
        annotation = getattr(origin, "__name__", str(origin))
    name = annotation.rsplit(".", 1)[-1].split("[", 1)[0]
    return name in _LIST_ANNOTATIONS


def _list_counter(counter: Callable[[list[Any]], int]) -> Callable[[Any], int]:
    """A ``(message) -> int`` that asks a list counter about a one-message list."""
    if _is_langchain_list_counter(counter):

        def count_langchain(message: Any) -> int:
            return counter([_as_langchain(message)])

        return count_langchain

    def count(message: Any) -> int:
        return counter([message])

    return count


def check_token_counter(counter: Any) -> None:
    """Raise if ``counter`` is not a counter :func:`resolve_token_counter` accepts.

    Raises:
        TypeError: ``counter`` is of an unsupported type, or a function such as ``len``
            that counts a message's keys or characters rather than its tokens.
        ValueError: ``counter`` is an unknown name.
    """
    if any(counter is refused for refused in _CONTAINER_COUNTERS):
        name = getattr(counter, "__name__", repr(counter))
        raise TypeError(
            f"token_counter={name} counts a message's keys or characters, not its tokens "
            "(trim_messages(token_counter=len) counts messages: for that use "
            "ReducerConfig(max_messages=...)); pass token_counter='estimate' (the default), "
            "'approximate', 'cl100k_base', a chat model, or a (message) -> int or "
            "(list of messages) -> int callable"
        )
    if counter is None or _is_chat_model(counter) or _is_encoding(counter) or callable(counter):
        return
    if isinstance(counter, str):
        if counter in ("estimate", "approximate") or counter.removesuffix("_offline") in (
            TIKTOKEN_NAMES
        ):
            return
        raise ValueError(
            f"token_counter={counter!r} is not a known counter name; use 'estimate', "
            "'approximate', a tiktoken encoding name such as 'cl100k_base', a tiktoken "
            "Encoding, a LangChain chat model or a callable"
        )
    raise TypeError(
        f"token_counter must be a callable (message) -> int, 'estimate', 'approximate', a "
        f"tiktoken Encoding or a LangChain chat model, got {counter!r}"
    )


def resolve_token_counter(counter: Any = None) -> Callable[[Any], int]:
    """Turn any accepted counter into a plain ``(message) -> int`` function (uncached)."""
    check_token_counter(counter)
    if counter is None or counter == "estimate":
        return estimate_tokens
    if counter == "approximate":
        return _langchain_approximate()
    if isinstance(counter, str):
        return _encoding_counter(tiktoken_encoding(counter))
    if _is_chat_model(counter):
        return _chat_model_counter(counter)
    if _is_encoding(counter):
        return _encoding_counter(counter)
    if _is_list_counter(counter):
        return _list_counter(counter)
    fn: Callable[[Any], int] = counter
    return fn
