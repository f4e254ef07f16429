"""Provider-reported input token counts, read from the responses a list holds.

A model's response often says how many input tokens its call was charged: the count of
everything the model was sent, measured with the provider's own tokenizer. Calibration
(``ReducerConfig(calibrate=True)``, on by default in ``ReducerConfig.for_model``) anchors
the reducer's count of a list to the newest such report, so only the messages after it are
estimated.

What is read, on a message of the ai role, first found wins:

* LangChain's ``usage_metadata["input_tokens"]`` (an ``AIMessage``, its dict forms): already
  the whole prompt, prompt-cache reads and writes included;
* ``usage.input_tokens`` plus ``usage.cache_read_input_tokens`` and
  ``usage.cache_creation_input_tokens`` when present: the Anthropic Messages API (whose
  ``input_tokens`` leaves out the cached part) and the OpenAI Responses API (whose
  ``input_tokens`` holds it, and which has no such fields);
* ``usage.prompt_tokens``: OpenAI Chat Completions;
* ``usage.inputTokens`` plus ``cacheReadInputTokens`` and ``cacheWriteInputTokens``:
  Bedrock Converse (as Strands keeps it);
* ``usage_metadata.prompt_token_count``: Gemini (google-genai, Google ADK), cached content
  included.

``usage`` and ``usage_metadata`` may be dicts or SDK objects. A count that is not a
positive int is no report (a prompt always costs a token); a report of another shape is
ignored, never guessed at.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

__all__ = ["Calibration", "UsageReport", "reported_input_tokens"]


class UsageReport(NamedTuple):
    """The input tokens a provider reported for the call that produced a response."""

    tokens: int
    """The input tokens the call was charged (the whole prompt, cached parts included)."""
    source: str
    """Where it was read: ``"usage_metadata.input_tokens"``, ``"usage.input_tokens"``,
    ``"usage.prompt_tokens"``, ``"usage.inputTokens"`` or
    ``"usage_metadata.prompt_token_count"``."""


@dataclass(frozen=True)
class Calibration:
    """How a reduce's token count was calibrated to a provider-reported count
    (``ReducerResult.calibration``).

    The response at ``anchor`` reported ``reported`` input tokens for its call: the
    messages before it (as the model was shown them) plus what the provider counts
    outside the list (the system prompt and tool schemas an agent keeps outside its state,
    the provider's framing). The messages before the anchor are **measured**: together
    they count ``measured`` tokens, the report less what has left the list since. The
    anchor and every message after it are **estimated** by the reducer's counter:
    ``estimated`` tokens. ``tokens_before`` is ``measured + estimated``.

    How the report is spread over the measured messages: when it is at least the
    reducer's own count of what the model was shown (``shown``), each message keeps its
    count and the difference (``outside``: the system prompt, tool schemas, framing, and
    any tokenizer difference) is carried as a count of its own that pruning never
    removes, so a budget never under-counts after a prune; when it is below, each
    measured message's count is scaled by ``reported / shown`` (``scale``) and
    ``outside`` is 0.

    Attributes:
        anchor: The position, in the reduce's input, of the response whose report is used
            (the newest one that has a report).
        reported: The input tokens that response reported.
        source: The field it was read from (see :class:`UsageReport`).
        shown: The reducer's own count of the messages the model was shown for that call:
            what the reducer counted before it the first time it saw it, or what
            :meth:`~agentstate_reducer.MessageReducer.view` last returned ending with the
            message before it.
        measured: The count now given to the messages before the anchor, ``outside``
            included.
        estimated: The count of the anchor and the messages after it, by the reducer's
            counter.
        outside: The part of the report carried on its own (see above).
        scale: The factor the measured messages' counts were multiplied by (1.0 when
            ``outside`` carries the difference).
    """

    anchor: int
    reported: int
    source: str
    shown: int
    measured: int
    estimated: int
    outside: int
    scale: float


def _field(value: Any, name: str) -> Any:
    if isinstance(value, Mapping):
        return value.get(name)
    return getattr(value, name, None)


def _count(value: Any) -> int | None:
    """``value`` when it is a positive int (not a bool), else None."""
    if type(value) is int and value > 0:
        return value
    return None


def _extra(value: Any) -> int:
    """A count that adds to another (a cache part): 0 when absent or malformed."""
    return value if type(value) is int and value > 0 else 0


def reported_input_tokens(message: Any) -> UsageReport | None:
    """The input tokens the provider reported for the call that produced ``message``, or
    None when it carries no report (see the module docstring for what is read).

    Reads, never raises: a message of any shape, or not a message at all, gives None.
    """
    if isinstance(message, Mapping):
        fields: Any = message
        data = message.get("data")
        if isinstance(data, Mapping) and "content" not in message and "role" not in message:
            fields = data  # LangChain's serialised form
        usage_metadata = fields.get("usage_metadata")
        usage = fields.get("usage")
    else:
        usage_metadata = getattr(message, "usage_metadata", None)
        usage = None if usage_metadata is not None else getattr(message, "usage", None)
    if usage_metadata is not None:
        found = _count(_field(usage_metadata, "input_tokens"))
        if found is not None:
            return UsageReport(found, "usage_metadata.input_tokens")
        found = _count(_field(usage_metadata, "prompt_token_count"))
        if found is not None:
            return UsageReport(found, "usage_metadata.prompt_token_count")
    if usage is not None:
        uncached = _field(usage, "input_tokens")
        if type(uncached) is int and uncached >= 0:
            # Anthropic leaves what the prompt cache read or wrote out of input_tokens (a
            # fully cached prompt may report 0 there).
            total = (
                uncached
                + _extra(_field(usage, "cache_read_input_tokens"))
                + _extra(_field(usage, "cache_creation_input_tokens"))
            )
            if total > 0:
                return UsageReport(total, "usage.input_tokens")
        found = _count(_field(usage, "prompt_tokens"))
        if found is not None:
            return UsageReport(found, "usage.prompt_tokens")
        uncached = _field(usage, "inputTokens")
        if type(uncached) is int and uncached >= 0:
            # Bedrock Converse, whose inputTokens leave out the cache's reads and writes too.
            total = (
                uncached
                + _extra(_field(usage, "cacheReadInputTokens"))
                + _extra(_field(usage, "cacheWriteInputTokens"))
            )
            if total > 0:
                return UsageReport(total, "usage.inputTokens")
    return None
