"""Audit a message list without changing it: budget overrun and provider-validity problems.

Providers reject histories that break their tool-call protocol, and each format states its
own (see :mod:`agentstate_reducer.messages`):

* Chat Completions, LangChain, llama-index, Anthropic, Bedrock and Gemini: every message
  with calls must be followed directly by the results of all of them (one message per
  result in Chat; one user message holding them all in Anthropic, Bedrock and Gemini), and
  a result must answer a call of the message right before. OpenAI's legacy function calling
  is held to the same rule: an ai message's ``function_call`` must be followed directly by
  one ``function`` message of that name (the run of results after an ai message may mix
  both kinds);
* the Responses API: every output answers a call made before it, every call has its
  output later on (not necessarily right after), and a ``reasoning`` item is followed by
  an item of its turn;
* Anthropic, Bedrock and Gemini: roles alternate between the user and the model, a Gemini
  list holds only ``user`` and ``model`` contents, and an Anthropic or Bedrock list only
  user and assistant messages (their system prompt goes in its own parameter);
* each format's own shape: a role it does not have (Gemini ``assistant``, Bedrock
  ``model``), a block in a message of the wrong role (a tool result in an assistant
  message, a tool call in a user message), a malformed block (a call or result without
  its id, a Bedrock block with two keys, arguments that are not a JSON string, a
  ``tool_calls`` that is not a list of calls): read as the module docstrings say, and
  reported here;
* several providers also want the conversation (after system and developer messages) to
  open with a user message (every format whose roles alternate requires it);
* extended thinking (Anthropic, Bedrock, and the frameworks that send their blocks): the
  model message that opens the newest turn's tool loop must still hold its thinking block.
  A list cannot show a block that is gone, so this is reported when the list uses thinking
  elsewhere (another model message holds a block) and the newest turn's first model
  message makes tool calls without one while the turn goes on (the list does not end with
  its answer).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from .messages import (
    AI,
    FUNCTION,
    FUNCTION_CALL_KEY_PREFIX,
    HUMAN,
    REASONING_ITEM,
    SYSTEM,
    TOOL,
    MessageFormat,
    MessageView,
)
from .messages.base import FLAW_BLOCK, FLAW_PLACEMENT

OVER_BUDGET = "over_budget"
ORPHAN_RESULT = "orphan_result"
DANGLING_CALL = "dangling_call"
BAD_FIRST_MESSAGE = "bad_first_message"
ROLES_NOT_ALTERNATING = "roles_not_alternating"
UNEXPECTED_ROLE = "unexpected_role"
ORPHAN_REASONING = "orphan_reasoning"
TURN_WITHOUT_THINKING = "turn_without_thinking"
MISPLACED_BLOCK = FLAW_PLACEMENT
INVALID_BLOCK = FLAW_BLOCK


_RESULT_ROLES = (TOOL, FUNCTION)
#: The roles a message of the Chat family may have (any other is never pruned, and no
#: provider takes it).
_KNOWN_ROLES = frozenset((HUMAN, AI, SYSTEM, "developer", TOOL, FUNCTION))
#: Roles a conversation may open with before its first user message.
_INSTRUCTIONS = (SYSTEM, "developer")


@dataclass(frozen=True)
class Problem:
    """One finding of an audit.

    Attributes:
        kind: ``over_budget``, ``orphan_result``, ``dangling_call``, ``bad_first_message``,
            ``roles_not_alternating``, ``unexpected_role`` (also a role the format does
            not have, such as a Gemini ``assistant``), ``orphan_reasoning``,
            ``turn_without_thinking``, ``misplaced_block`` (a block in a message of the
            wrong role: a tool result in an assistant message, a tool call in a user one)
            or ``invalid_block`` (a call or result block without its id, a Bedrock block
            with two keys, a tool call list or arguments of the wrong type).
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
    format: MessageFormat | None = None,
) -> list[Problem]:
    """Every problem in a list, in list order (``over_budget`` first).

    Args:
        views: One view per message.
        total_tokens: The list's token count (token mode).
        max_tokens: The token limit (token mode).
        max_messages: The message limit (count mode).
        format: The list's format, whose rules apply (the Chat rules when None).
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
    first = next((i for i, view in enumerate(views) if view.role not in _INSTRUCTIONS), None)
    if first is not None and views[first].role != HUMAN:
        problems.append(
            Problem(
                BAD_FIRST_MESSAGE,
                first,
                f"the conversation opens with a {views[first].role} message; "
                + (
                    f"{format.name} requires a user message first"
                    if format is not None and format.alternates
                    else "several providers require a user message first"
                ),
            )
        )
    if format is not None and not format.adjacent_results:
        problems += _unordered_pairs(views)
    else:
        problems += _adjacent_pairs(views)
    if format is not None and format.alternates:
        problems += _alternation(views, format)
    elif format is None or format.name == "chat":
        problems += _unknown_roles(views)
    problems += _thinking(views)
    problems += [
        Problem(kind, position, detail)
        for position, view in enumerate(views)
        for kind, detail in view.flaws
    ]
    return sorted(problems, key=lambda p: -1 if p.index is None else p.index)


def _answers(view: MessageView) -> bool:
    """Whether a message holds results (a tool or function message, or a user message
    that holds tool results)."""
    return view.role in _RESULT_ROLES or (bool(view.results_for) and view.role == HUMAN)


def _adjacent_pairs(views: Sequence[MessageView]) -> list[Problem]:
    """Results right after the message whose calls they answer."""
    problems: list[Problem] = []
    position = 0
    while position < len(views):
        view = views[position]
        if view.role == AI and view.call_ids:
            caller_at = position
            waiting = list(view.call_ids)
            position += 1
            while position < len(views) and _answers(views[position]):
                result = views[position]
                for answered in result.results_for or (None,):
                    if answered in waiting:
                        waiting.remove(answered)
                    else:
                        problems.append(_orphan(position, result, answered, "the one before"))
                position += 1
                if result.role == HUMAN:
                    break  # a user message with text too: the turn goes on from it
            for call_id in waiting:
                problems.append(
                    Problem(
                        DANGLING_CALL,
                        caller_at,
                        f"{_call_name(call_id)} has no result right after its message",
                    )
                )
            continue
        if _answers(view):
            for answered in view.results_for or (None,):
                problems.append(_orphan(position, view, answered, "a message right before it"))
        position += 1
    return problems


def _unordered_pairs(views: Sequence[MessageView]) -> list[Problem]:
    """Responses API: each output after its call, each call with its output, each
    reasoning item followed by an item of its turn."""
    problems: list[Problem] = []
    made: Counter[str] = Counter()
    open_calls: dict[str, int] = {}
    for position, view in enumerate(views):
        if view.joins == REASONING_ITEM and (
            position + 1 >= len(views) or not views[position + 1].joins
        ):
            problems.append(
                Problem(
                    ORPHAN_REASONING,
                    position,
                    "a reasoning item must be followed by an item of its turn (a message or "
                    "a call); the Responses API refuses it alone",
                )
            )
        if view.role == AI:
            for call_id in view.call_ids:
                made[call_id] += 1
                open_calls.setdefault(call_id, position)
        for answered in view.results_for or ((None,) if _answers(view) else ()):
            if answered is not None and made[answered] > 0:
                made[answered] -= 1
                if made[answered] == 0:
                    open_calls.pop(answered, None)
            else:
                problems.append(_orphan(position, view, answered, "an item before it"))
    for call_id, position in open_calls.items():
        problems.append(
            Problem(DANGLING_CALL, position, f"{_call_name(call_id)} has no output after it")
        )
    return problems


_SIDES = {HUMAN: HUMAN, TOOL: HUMAN, AI: AI}


def _alternation(views: Sequence[MessageView], format: MessageFormat) -> list[Problem]:
    problems: list[Problem] = []
    last: str | None = None
    for position, view in enumerate(views):
        side = _SIDES.get(view.role)
        if side is None:
            problems.append(
                Problem(
                    UNEXPECTED_ROLE,
                    position,
                    f"a {view.role} message: {format.name} lists hold only user and "
                    f"{'model' if format.name == 'gemini' else 'assistant'} messages",
                )
            )
            continue
        if side == last:
            problems.append(
                Problem(
                    ROLES_NOT_ALTERNATING,
                    position,
                    f"two {'user' if side == HUMAN else 'model'} messages in a row; "
                    f"{format.name} requires the roles to alternate",
                )
            )
        last = side
    return problems


def _thinking(views: Sequence[MessageView]) -> list[Problem]:
    """The newest turn's tool loop opened without the thinking block the list uses."""
    if not any(view.thinking for view in views):
        return []
    # A summary block is not a turn (its filler is no question, its summary no opener).
    question = next(
        (
            i
            for i in range(len(views) - 1, -1, -1)
            if views[i].role == HUMAN and not views[i].summary
        ),
        None,
    )
    if question is None:
        return []
    opener = next(
        (
            i
            for i in range(question + 1, len(views))
            if views[i].role == AI and not views[i].summary
        ),
        None,
    )
    if opener is None or views[opener].thinking or not views[opener].call_ids:
        return []
    if views[-1].role == AI and not views[-1].call_ids:
        return []  # the turn is answered: an earlier turn once the next question comes
    return [
        Problem(
            TURN_WITHOUT_THINKING,
            opener,
            "the newest turn's first model message makes tool calls without a thinking "
            "block while the list uses thinking; with extended thinking, Anthropic refuses "
            "a final assistant turn that does not start with one",
        )
    ]


def _call_name(call_id: str) -> str:
    """How a problem names a call: a call without an id by its function's name."""
    if call_id.startswith(FUNCTION_CALL_KEY_PREFIX):
        return f"function_call {call_id.removeprefix(FUNCTION_CALL_KEY_PREFIX)!r}"
    return f"tool call {call_id!r}"


def _orphan(position: int, result: MessageView, answered: str | None, where: str) -> Problem:
    name = None if answered is None else answered.removeprefix(FUNCTION_CALL_KEY_PREFIX)
    if result.role == FUNCTION:
        detail = f"function result for {name!r} does not answer a function_call of {where}"
    elif answered is not None and answered.startswith(FUNCTION_CALL_KEY_PREFIX):
        detail = f"result for {name!r} does not answer a call of that name of {where}"
    else:
        detail = f"tool result for call {answered!r} does not answer a call of {where}"
    return Problem(ORPHAN_RESULT, position, detail)


def _unknown_roles(views: Sequence[MessageView]) -> list[Problem]:
    """A role no provider has (a typo such as ``"usr"``): the reducer never prunes such a
    message (it cannot tell what it is), so a list of them is never bounded either."""
    return [
        Problem(
            UNEXPECTED_ROLE,
            position,
            f"a message with role {view.role!r}, which no provider has: it is never pruned "
            "(the roles are user, assistant, system, developer, tool and function)",
        )
        for position, view in enumerate(views)
        if view.role not in _KNOWN_ROLES and not view.summary
    ]
