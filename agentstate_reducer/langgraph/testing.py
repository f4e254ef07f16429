"""A scripted chat model: deterministic answers, tool calls, no network.

``ScriptedChatModel`` is a real ``langchain_core`` chat model, so it runs inside
``StateGraph`` nodes, ``create_agent`` and ``create_react_agent`` exactly where a
provider model would. It answers from a script, records every message list it
answered (``model.calls``), and by default rejects the message lists a
provider would reject (see ``provider_errors``), so a test or demo that bounds
history badly fails loudly instead of passing silently.

    from agentstate_reducer.langgraph.testing import ScriptedChatModel, tool_call

    model = ScriptedChatModel(script=[tool_call("add", {"a": 1, "b": 2}), "It is 3."])
"""

from __future__ import annotations

import hashlib
import math
import threading
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import PrivateAttr, field_validator
from typing_extensions import override

from ..steps.relevance import terms

__all__ = [
    "HashedWordEmbeddings",
    "ProviderRejectedError",
    "ScriptedChatModel",
    "provider_errors",
    "tool_call",
]

Reply = AIMessage | str
"""One scripted answer: a message, or plain text for an ``AIMessage``."""

ScriptStep = Reply | Callable[[list[BaseMessage]], Reply]
"""A fixed answer, or a function of the messages the model was called with."""


class ProviderRejectedError(ValueError):
    """The model was called with messages a chat provider would reject."""


def tool_call(name: str, args: dict[str, Any] | None = None, *, id: str | None = None) -> AIMessage:
    """Build an ``AIMessage`` that calls one tool.

    Args:
        name: The tool's name.
        args: The tool's arguments.
        id: The tool call id; the model assigns a fresh unique one when omitted.

    Returns:
        An ``AIMessage`` with empty content and one tool call.
    """
    call = {"name": name, "args": dict(args or {}), "id": id, "type": "tool_call"}
    return AIMessage(content="", tool_calls=[call])


def provider_errors(messages: Sequence[BaseMessage]) -> list[str]:
    """List the reasons a chat provider would reject ``messages``; empty when it would accept them.

    The rules are the strictest common ones (OpenAI's tool pairing, Anthropic's system
    placement): system messages form a prefix; every tool call is answered by a tool
    message in the block that directly follows its ``AIMessage``; every tool message
    answers a call of that ``AIMessage``; at least one non-system message is present.

    Args:
        messages: The messages a model would be called with.

    Returns:
        One human-readable line per problem found, in list order.
    """
    errors: list[str] = []
    seen_other = False
    open_calls: dict[str, int] = {}
    open_at = -1

    def close_block(at: int) -> None:
        for call_id in open_calls:
            errors.append(
                f"message {open_at}: tool call {call_id!r} has no tool result before message {at}"
            )
        open_calls.clear()

    for i, message in enumerate(messages):
        if isinstance(message, ToolMessage):
            if message.tool_call_id not in open_calls:
                errors.append(
                    f"message {i}: tool result {message.tool_call_id!r} does not answer a call"
                    " of the AI message right before its block"
                )
            else:
                del open_calls[message.tool_call_id]
            seen_other = True
            continue
        close_block(i)
        if isinstance(message, SystemMessage):
            if seen_other:
                errors.append(f"message {i}: system message after non-system messages")
            continue
        seen_other = True
        if isinstance(message, AIMessage) and message.tool_calls:
            open_at = i
            for call in message.tool_calls:
                open_calls[str(call["id"])] = i
    close_block(len(messages))
    if not any(not isinstance(m, SystemMessage) for m in messages):
        errors.append("no message besides system messages")
    return errors


class ScriptedChatModel(BaseChatModel):
    """A chat model that replays a script of answers and records what it was asked.

    Each call consumes the next step of ``script``: an ``AIMessage`` (copied, so a
    step can be reused), a string (an ``AIMessage`` with that text), or a callable
    that receives the messages and returns either. Tool calls without an id get a
    fresh unique one; an ``AIMessage`` step's own id is kept, so leave it unset on steps
    that repeat (``add_messages`` would treat a repeat as an update of the first
    answer). With ``cycle=True`` the script restarts when exhausted;
    otherwise an exhausted script raises ``IndexError``. ``bind_tools`` works like a
    provider's (tools are converted to the OpenAI schema and passed as ``tools``),
    so ``create_agent`` and ``create_react_agent`` accept the model.

    Attributes:
        script: The answers, in order.
        cycle: Restart the script instead of raising when it runs out.
        strict: Raise ``ProviderRejectedError`` when called with messages that
            ``provider_errors`` reports, as a provider would.
        input_tokens: ``(messages, tools) -> int``: when set, each answer reports
            ``usage_metadata`` as a provider does, ``input_tokens`` being what this
            returns for the messages the model was called with and the tool schemas it
            was bound to (OpenAI form), so calibration can be tried without a provider
            (count them with a real tokenizer, such as tiktoken's ``o200k_base``).

    Raises:
        pydantic.ValidationError: A script step is not an ``AIMessage``, a string or a
            callable (raised when the model is built).
    """

    script: list[Any]
    """The answers, in order: ``ScriptStep`` values (checked when the model is built)."""
    cycle: bool = False
    strict: bool = True
    input_tokens: Callable[[list[BaseMessage], list[dict[str, Any]]], int] | None = None

    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _cursor: int = PrivateAttr(default=0)
    _calls: list[list[BaseMessage]] = PrivateAttr(default_factory=list)

    @field_validator("script")
    @classmethod
    def _check_script(cls, script: list[Any]) -> list[Any]:
        for index, step in enumerate(script):
            if not isinstance(step, (AIMessage, str)) and not callable(step):
                raise ValueError(
                    f"script[{index}] must be an AIMessage, a string or a callable "
                    f"(messages) -> AIMessage | str, got {step!r}"
                )
        return script

    @property
    def calls(self) -> list[list[BaseMessage]]:
        """The message lists the model answered, oldest first (copies of the lists)."""
        with self._lock:
            return [list(call) for call in self._calls]

    @property
    @override
    def _llm_type(self) -> str:
        return "scripted"

    @override
    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        return self.bind(tools=[convert_to_openai_tool(tool) for tool in tools], **kwargs)

    @override
    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self.strict and (problems := provider_errors(messages)):
            raise ProviderRejectedError(
                "ScriptedChatModel was called with messages a provider would reject: "
                + "; ".join(problems)
            )
        with self._lock:
            if self._cursor >= len(self.script):
                if not self.cycle or not self.script:
                    raise IndexError(
                        f"ScriptedChatModel script exhausted after {self._cursor} calls; "
                        "add steps to `script` or pass cycle=True"
                    )
                self._cursor = 0
            step = self.script[self._cursor]
            self._cursor += 1
            self._calls.append(list(messages))
        reply = _as_ai_message(step(list(messages)) if callable(step) else step)
        if self.input_tokens is not None:
            used = self.input_tokens(list(messages), list(kwargs.get("tools") or []))
            output = max(1, len(str(reply.content)) // 4)
            usage: Any = {
                "input_tokens": used,
                "output_tokens": output,
                "total_tokens": used + output,
            }
            reply.usage_metadata = usage
        return ChatResult(generations=[ChatGeneration(message=reply)])


def _as_ai_message(reply: Reply) -> AIMessage:
    if isinstance(reply, str):
        return AIMessage(content=reply)
    calls = [
        {**call, "id": call["id"] or f"call_{uuid.uuid4().hex[:16]}"} for call in reply.tool_calls
    ]
    return reply.model_copy(update={"tool_calls": calls}, deep=True)


class HashedWordEmbeddings(Embeddings):
    """A deterministic LangChain ``Embeddings``: each text is the counts of its words hashed
    into ``dims`` buckets, normalised; words as ``SelectRelevant``'s BM25 reads them
    (lowercased, English stopwords left out, a light stem, numbers kept).

    Texts that share words point the same way, so similarity search works on word overlap,
    with no model, no download and no network: for tests, demos and benchmarks of semantic
    memory (``InMemoryStore(index={"embed": HashedWordEmbeddings(), "dims": 256})``). It
    knows no synonyms; a real embedding model does.

    Args:
        dims: The vectors' length.
    """

    def __init__(self, dims: int = 256) -> None:
        self.dims = dims

    def _vector(self, text: str) -> list[float]:
        vector = [0.0] * self.dims
        for word in terms(text):
            digest = hashlib.blake2b(word.encode("utf-8", "surrogatepass"), digest_size=8)
            vector[int.from_bytes(digest.digest(), "big") % self.dims] += 1.0
        if not any(vector):
            vector[0] = 1.0  # a text of no words: one fixed direction (a zero vector has none)
        norm = math.sqrt(sum(x * x for x in vector))
        return [x / norm for x in vector]

    @override
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(text) for text in texts]

    @override
    def embed_query(self, text: str) -> list[float]:
        return self._vector(text)
