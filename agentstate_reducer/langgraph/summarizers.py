"""A ready LLM summarizer for ``summarize_fn``, on any LangChain chat model.

``LLMSummarizer(model)`` is a ``summarize_fn`` with a sync form (``__call__``, used by
``reduce``) and an async one (``acall``, awaited by ``areduce``, the async savers, nodes
and middleware), so an async graph never blocks its event loop on the summary::

    reducer = MessageReducer(
        config=ReducerConfig(
            max_tokens=8_000,
            summarize_fn=LLMSummarizer(model, max_summary_tokens=400),
            inject_summary=True,
        )
    )

It receives what the reducer hands a summarizer (the running summary first, marked as a
summary, then the pruned messages), writes them out as a transcript, and asks the model for
an updated summary within ``max_summary_tokens`` (the room the reducer also keeps for the
summary block). A transcript over ``max_input_tokens`` is summarised in parts, each part
folded into the summary so far; a single message over the budget is cut, with a marker.
A failing model call is retried ``retries`` times with a growing delay, then the error
propagates (the reducer turns it into ``SummaryError``, or keeps every message with
``on_prune_error="keep"``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig

from .._checks import check_callable, check_int, check_name, check_number
from ..messages import (
    FUNCTION_CALL_KEY_PREFIX,
    SUMMARY_HEADER,
    call_parts_of,
    content_of,
    function_name_of,
    is_summary,
    read_view,
    reader_of,
    role_of,
    slots_of,
    tool_call_id_of,
)
from ..messages.chat import ChatFormat
from ..tokens import estimate_text_tokens

__all__ = ["DEFAULT_SUMMARY_PROMPT", "LLMSummarizer", "transcript"]

DEFAULT_SUMMARY_PROMPT = (
    "You keep the running summary of a conversation between a user and an AI assistant "
    "(which may call tools). Older turns are being removed from the conversation to save "
    "room; your summary is all that will remain of them.\n\n"
    "Write an updated summary that merges the previous summary (if any) with the new "
    "turns below. Keep what later turns may need: the user's goals and preferences, facts "
    "and numbers established, decisions and their reasons, tool results that matter, and "
    "open questions or tasks. Leave out greetings, repetition and anything already "
    "superseded. Write plain prose or short bullet points, in the conversation's language, "
    "and stay under {max_words} words. Answer with the summary only."
)

_CUT = "\n[... cut to fit the summarizer's input budget ...]"

#: Marks the summarizer's model calls in traces, as LangChain marks its own summaries.
_CALL_CONFIG: RunnableConfig = {
    "metadata": {"lc_source": "summarization"},
    "tags": ["agentstate-summary"],
}
_ROLE_NAMES = {"human": "User", "ai": "Assistant", "system": "System", "tool": "Tool"}


def transcript(messages: Sequence[Any]) -> str:
    """``messages`` written out as ``Role: text`` lines, tool calls and results (legacy
    function calls and results too) included."""
    lines: list[str] = []
    for message in messages:
        if not isinstance(reader_of(message), ChatFormat):
            lines += _format_lines(message)
            continue
        role = role_of(message)
        text = _text(content_of(message))
        if role == "tool":
            call = tool_call_id_of(message)
            lines.append(f"Tool result{f' ({call})' if call else ''}: {text}")
            continue
        if role == "function":
            function = function_name_of(message)
            lines.append(f"Function result{f' ({function})' if function else ''}: {text}")
            continue
        name = _ROLE_NAMES.get(role, role.capitalize())
        if text:
            lines.append(f"{name}: {text}")
        for tool, arguments in call_parts_of(message):
            lines.append(f"{name} called tool {tool}({arguments})")
    return "\n".join(lines)


def _format_lines(message: Any) -> list[str]:
    """The transcript lines of a message of another format (Anthropic, Responses, Gemini,
    Bedrock, llama-index): its text, each result it holds, each call it makes."""
    view = read_view(message)
    slots = slots_of(message)
    lines: list[str] = []
    name = _ROLE_NAMES.get(view.role, view.role.capitalize())
    text = " ".join(slot.text for slot in slots if slot.kind == "text" and slot.text)
    if text:
        lines.append(f"{'User' if view.role == 'tool' else name}: {text}")
    results = [slot.text for slot in slots if slot.kind == "result"]
    for call, output in zip(view.results_for, results, strict=False):
        lines.append(f"Tool result ({call.removeprefix(FUNCTION_CALL_KEY_PREFIX)}): {output}")
    for tool, arguments in call_parts_of(message):
        lines.append(f"{name} called tool {tool}({arguments})")
    return lines


def _plain_text(message: Any) -> str:
    """What a message says, as text, in any format."""
    if isinstance(reader_of(message), ChatFormat):
        return _text(content_of(message))
    return " ".join(slot.text for slot in slots_of(message) if slot.kind == "text")


def _answer(reply: Any) -> str:
    """The summary text of a model's reply; an empty one is an error."""
    text = _text(getattr(reply, "content", reply)).strip()
    if not text:
        raise ValueError("the summary model answered with no text")
    return text


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"])
            elif isinstance(block, dict):
                parts.append(f"[{block.get('type', 'block')}]")
        return " ".join(parts)
    return str(content)


class LLMSummarizer:
    """A ``summarize_fn`` that asks a LangChain chat model for a running summary.

    Args:
        model: Any LangChain chat model (``invoke`` / ``ainvoke``).
        prompt: The instructions, sent as a system message; ``{max_words}`` is filled in.
        max_summary_tokens: How long the summary may be; the reducer reserves this much
            room for the summary block in token mode.
        max_input_tokens: The most transcript sent in one call; longer input is
            summarised in parts, folded one into the next.
        token_counter: ``(text) -> int`` for the input budget; our offline estimate by
            default.
        retries: Extra attempts for a failing model call (the chat model may retry by
            itself too; the reducer also leaves a failing summarizer alone for a while).
        retry_delay: Seconds before the first retry (doubled each time).

    A model that answers with no text is a failure too (an empty summary would silently
    drop what was pruned from the running summary).

    Raises:
        TypeError: ``model`` has no ``invoke``, or an argument has the wrong type.
        ValueError: A budget or count is out of range, or ``prompt`` has a placeholder
            other than ``{max_words}``.
    """

    def __init__(
        self,
        model: BaseChatModel,
        *,
        prompt: str = DEFAULT_SUMMARY_PROMPT,
        max_summary_tokens: int = 512,
        max_input_tokens: int = 12_000,
        token_counter: Callable[[str], int] | None = None,
        retries: int = 1,
        retry_delay: float = 0.5,
    ) -> None:
        if not callable(getattr(model, "invoke", None)):
            raise TypeError(f"LLMSummarizer needs a LangChain chat model, got {model!r}")
        self.model = model
        self.prompt = check_name("LLMSummarizer.prompt", prompt)
        try:
            prompt.format(max_words=1)
        except (KeyError, IndexError, ValueError) as exc:
            raise ValueError(
                f"LLMSummarizer.prompt has a placeholder other than {{max_words}} ({exc!r}): "
                "write literal braces as {{ and }}"
            ) from None
        self.max_summary_tokens = check_int(
            "LLMSummarizer.max_summary_tokens", max_summary_tokens, minimum=1
        )
        self.max_input_tokens = check_int(
            "LLMSummarizer.max_input_tokens", max_input_tokens, minimum=64
        )
        self._count: Callable[[str], int] = (
            check_callable("LLMSummarizer.token_counter", token_counter) or estimate_text_tokens
        )
        self.retries = check_int("LLMSummarizer.retries", retries, minimum=0)
        self.retry_delay = check_number("LLMSummarizer.retry_delay", retry_delay, minimum=0)
        self.calls = 0
        """Model calls made (retries included)."""

    def __repr__(self) -> str:
        model = type(self.model).__name__
        return f"LLMSummarizer({model}, max_summary_tokens={self.max_summary_tokens})"

    def __call__(self, messages: list[Any]) -> str:
        """Summarise ``messages`` (the running summary first, if any) with ``invoke``.

        Raises:
            ValueError: The model answered with no text, after the retries.
            Exception: What the model raised, after the retries.
        """
        summary, parts = self._split(messages)
        for part in parts:
            summary = self._with_retries(self._request(summary, part))
        return summary

    async def acall(self, messages: list[Any]) -> str:
        """Async ``__call__``, with ``ainvoke``.

        Raises:
            ValueError: The model answered with no text, after the retries.
            Exception: What the model raised, after the retries.
        """
        summary, parts = self._split(messages)
        for part in parts:
            summary = await self._awith_retries(self._request(summary, part))
        return summary

    # -- building the calls --------------------------------------------------------------

    def _split(self, messages: list[Any]) -> tuple[str, list[str]]:
        """The previous summary's text and the transcript cut into parts within budget."""
        previous = "\n".join(
            _plain_text(m).removeprefix(SUMMARY_HEADER) for m in messages if is_summary(m)
        )
        lines = transcript([m for m in messages if not is_summary(m)]).split("\n")
        budget = max(32, self.max_input_tokens - self._count(previous) - self.max_summary_tokens)
        parts: list[str] = []
        current: list[str] = []
        used = 0
        for line in lines:
            cost = self._count(line) + 1
            if cost > budget:
                line = self._cut(line, budget)
                cost = budget
            if current and used + cost > budget:
                parts.append("\n".join(current))
                current, used = [], 0
            current.append(line)
            used += cost
        if current:
            parts.append("\n".join(current))
        return previous, parts

    def _cut(self, line: str, budget: int) -> str:
        low, high = 0, len(line)
        while low < high:
            middle = (low + high + 1) // 2
            if self._count(line[:middle] + _CUT) <= budget:
                low = middle
            else:
                high = middle - 1
        return line[:low] + _CUT

    def _request(self, previous: str, part: str) -> list[BaseMessage]:
        words = max(20, self.max_summary_tokens * 3 // 4)
        body = (
            f"<previous_summary>\n{previous or '(none yet)'}\n</previous_summary>\n\n"
            f"<new_turns>\n{part}\n</new_turns>"
        )
        return [SystemMessage(self.prompt.format(max_words=words)), HumanMessage(body)]

    def _invoke(self, request: list[BaseMessage]) -> str:
        self.calls += 1
        return _answer(self.model.invoke(request, config=_CALL_CONFIG))

    async def _ainvoke(self, request: list[BaseMessage]) -> str:
        self.calls += 1
        return _answer(await self.model.ainvoke(request, config=_CALL_CONFIG))

    def _with_retries(self, request: list[BaseMessage]) -> str:
        delay = self.retry_delay
        for attempt in range(self.retries + 1):
            try:
                return self._invoke(request)
            except Exception:
                if attempt == self.retries:
                    raise
                time.sleep(delay)
                delay *= 2
        raise AssertionError("unreachable")  # pragma: no cover

    async def _awith_retries(self, request: list[BaseMessage]) -> str:
        delay = self.retry_delay
        for attempt in range(self.retries + 1):
            try:
                return await self._ainvoke(request)
            except Exception:
                if attempt == self.retries:
                    raise
                await asyncio.sleep(delay)
                delay *= 2
        raise AssertionError("unreachable")  # pragma: no cover
