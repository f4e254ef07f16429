"""Audit a message list without changing it: budget overrun and provider-validity problems.

Providers reject histories that break the tool-call protocol: every ai message with tool
calls must be followed directly by one tool result per call, and a tool result must answer
a call of the ai message it follows. OpenAI's legacy function calling is held to the same
rule: an ai message's ``function_call`` must be followed directly by one ``function``
message of that name (the run of results after an ai message may mix both kinds), and a
function message must answer it. Several also want the conversation (after system
messages) to open with a user message.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .messages import AI, FUNCTION, FUNCTION_CALL_KEY_PREFIX, HUMAN, SYSTEM, TOOL, MessageView

OVER_BUDGET = "over_budget"
ORPHAN_RESULT = "orphan_result"
DANGLING_CALL = "dangling_call"
BAD_FIRST_MESSAGE = "bad_first_message"

_RESULT_ROLES = (TOOL, FUNCTION)


@dataclass(frozen=True)
class Problem:
    """One finding of an audit.

    Attributes:
        kind: ``over_budget``, ``orphan_result``, ``dangling_call`` or ``bad_first_message``.
        index: The position of the message at fault (None for ``over_budget``).
        detail: A sentence saying what is wrong.
    """

    kind: str
    index: int | None
    detail: str


def find_problems(
    views: Sequence[MessageView],
    *,
    total_tokens: int | None = None,
    max_tokens: int | None = None,
    max_messages: int | None = None,
) -> list[Problem]:
    """Every problem in a list, in list order (``over_budget`` first).

    Args:
        views: One view per message.
        total_tokens: The list's token count (token mode).
        max_tokens: The token limit (token mode).
        max_messages: The message limit (count mode).
    """
    problems: list[Problem] = []
    if max_tokens is not None and total_tokens is not None and total_tokens > max_tokens:
        problems.append(
            Problem(OVER_BUDGET, None, f"{total_tokens} tokens, over max_tokens={max_tokens}")
        )
    elif max_tokens is None and max_messages is not None and len(views) > max_messages:
        problems.append(
            Problem(OVER_BUDGET, None, f"{len(views)} messages, over max_messages={max_messages}")
        )
    first = next((i for i, view in enumerate(views) if view.role != SYSTEM), None)
    if first is not None and views[first].role != HUMAN:
        problems.append(
            Problem(
                BAD_FIRST_MESSAGE,
                first,
                f"the conversation opens with a {views[first].role} message; several "
                "providers require a user message first",
            )
        )
    position = 0
    while position < len(views):
        view = views[position]
        if view.role == AI and view.call_ids:
            caller_at = position
            waiting = list(view.call_ids)
            position += 1
            while position < len(views) and views[position].role in _RESULT_ROLES:
                answered = views[position].result_for
                if answered in waiting:
                    waiting.remove(answered)
                else:
                    problems.append(_orphan(position, views[position], "the ai message before it"))
                position += 1
            for call_id in waiting:
                problems.append(
                    Problem(
                        DANGLING_CALL,
                        caller_at,
                        f"{_call_name(call_id)} has no result right after its ai message",
                    )
                )
            continue
        if view.role in _RESULT_ROLES:
            problems.append(_orphan(position, view, "an ai message right before it"))
        position += 1
    return sorted(problems, key=lambda p: -1 if p.index is None else p.index)


def _call_name(call_id: str) -> str:
    """How a problem names a call: a legacy function call by its function's name."""
    if call_id.startswith(FUNCTION_CALL_KEY_PREFIX):
        return f"function_call {call_id.removeprefix(FUNCTION_CALL_KEY_PREFIX)!r}"
    return f"tool call {call_id!r}"


def _orphan(position: int, result: MessageView, where: str) -> Problem:
    answered = result.result_for
    if result.role == FUNCTION:
        name = None if answered is None else answered.removeprefix(FUNCTION_CALL_KEY_PREFIX)
        detail = f"function result for {name!r} does not answer a function_call of {where}"
    else:
        detail = f"tool result for call {answered!r} does not answer a call of {where}"
    return Problem(ORPHAN_RESULT, position, detail)
