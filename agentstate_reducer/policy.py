"""Reduction steps, applied in order until the list fits its budget.

A policy is a list of steps, for example::

    ReducerConfig(
        max_tokens=8_000,
        policy=[ClearToolOutputs(keep_last=3), DropOldest()],
    )

Once a list is over its limit, the reducer runs the steps in order and stops as soon as
the list fits its target. Each step reports what it touched and the tokens before and
after (``ReducerResult.steps``). Without a policy the reducer drops the oldest messages (and
summarises them when ``summarize_fn`` is set), which is ``[DropOldest()]`` or
``[Summarize()]``.

Steps:

* :class:`ClearToolOutputs`: replace the content of tool results older than the newest
  ``keep_last`` with a short placeholder; the call and its result stay, so the
  conversation stays valid. A result already showing the placeholder is not touched again.
* :class:`~agentstate_reducer.compress.Compress`: hand old messages to a compressor (an
  LLM that condenses tool outputs, a rule that strips markup) and put the shorter versions
  in their place.
* :class:`DropOldest`: prune the oldest messages (or whole user turns, with
  ``start_on_human``) as far as the target needs.
* :class:`~agentstate_reducer.relevance.SelectRelevant`: keep the older user turns most
  relevant to the newest question, within the budget, and prune the others.
* :class:`Summarize`: the same as ``DropOldest``, then ``summarize_fn`` summarises what
  went together with the summary already in the list (a running summary), and
  ``inject_summary`` puts the new summary where the pruned block was; the room it takes
  counts towards the bound.
* :class:`TruncateLargest` (opt-in): cut the text of the single largest message so the
  list fits, leaving a visible marker.

Text that leaves the list by any step reaches the ``on_prune`` hooks as it was: the
original of a rewritten message is handed over when the step rewrites it, and
``result.pruned`` holds originals.

Writing a step: subclass :class:`ReductionStep` and implement ``apply(context)`` against
:class:`StepContext`; see its docstring and the README's "Writing your own step".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ._checks import check_int, check_name
from .messages import FUNCTION, HUMAN, SYSTEM, TOOL, Slot, content_of, slots_of, with_slots

DEFAULT_PLACEHOLDER = "[tool output cleared to save context]"
DEFAULT_MARKER = "\n[... truncated: about {removed} tokens removed to fit the context window ...]"


@dataclass
class StepReport:
    """What one step did.

    Attributes:
        step: The step's id.
        touched: The messages the step pruned, or the new versions of those it rewrote.
        tokens_before: The list's token count before the step (0 in count mode).
        tokens_after: The list's token count after the step (0 in count mode).
        messages_before: The list's length before the step.
        messages_after: The list's length after the step.
        error: With ``on_prune_error="keep"``, the failure of user code the step called
            (a compressor, an embeddings model) that made it stop; the policy went on
            with the next step. None otherwise.
    """

    step: str
    touched: list[Any] = field(default_factory=list)
    tokens_before: int = 0
    tokens_after: int = 0
    messages_before: int = 0
    messages_after: int = 0
    error: Exception | None = None


class StepContext(Protocol):
    """What a step receives: one reduce in progress, and what a step may do to it.

    Read the list through ``messages``, ``tokens`` and the questions below; change it only
    through ``drop``, ``drop_oldest``, ``replace`` and ``insert``. Whatever a step asks,
    the context keeps the guarantees of every reduce:

    * a tool call and its results leave together (``drop`` takes the whole group);
    * the newest human message, the kept first message (``preserve_first``), summary
      blocks, system messages, the newest ``keep_groups`` turns and an ai message whose
      tool calls still wait for their results are never dropped (``drop`` raises
      ``ValueError`` naming the position and why);
    * everything that leaves the list, pruned or rewritten, reaches the ``on_prune`` hooks
      once, as it was given;
    * a replacement keeps its message's role and tool links.

    A step that calls user code (a model, a store) is written as a generator and yields
    ``context.call(fn, *args)``; it receives what ``fn`` returned (or the exception it
    raised, thrown in). ``reduce`` calls ``fn`` directly (a coroutine function on a private
    event loop); ``areduce`` awaits a coroutine function and runs a blocking one in a
    worker thread, so one step serves both.

    Attributes:
        messages: The list as it stands, oldest first (read-only).
        tokens: One token count per message (zeros in count mode).
        total: The list's token count (0 in count mode).
        token_mode: Whether the budget is in tokens (``max_tokens`` set).
        budget: The history's token limit, above which pruning starts (``max_tokens``
            minus ``reply_reserve``); None in count mode.
        target: The token count pruning aims for; None in count mode.
        max_messages: The count limit (count mode; None in token mode or when unset).
        min_messages: The messages count mode keeps once it prunes.
        namespace: The reduce's namespace (the hooks' and memories' key).
        view: True when the reduce only bounds what a model sees
            (``MessageReducer.view``): nothing is summarised or handed over, and the
            stored list does not change.
    """

    @property
    def messages(self) -> Sequence[Any]: ...

    @property
    def tokens(self) -> Sequence[int]: ...

    @property
    def total(self) -> int: ...

    @property
    def token_mode(self) -> bool: ...

    @property
    def budget(self) -> int | None: ...

    @property
    def target(self) -> int | None: ...

    @property
    def max_messages(self) -> int | None: ...

    @property
    def min_messages(self) -> int: ...

    @property
    def namespace(self) -> Any: ...

    @property
    def view(self) -> bool: ...

    def fits(self) -> bool:
        """Whether the list is within what pruning aims for (the step may stop)."""
        ...

    def summary_room(self) -> int:
        """The room a summarising drop keeps for the summary block it will insert (tokens
        in token mode, messages in count mode; 0 when no block is injected): a step that
        chooses what to keep leaves it free."""
        ...

    def count(self, message: Any) -> int:
        """Tokens of one message by the reducer's counter (0 in count mode)."""
        ...

    def role(self, position: int) -> str:
        """The normalised role at ``position``: ``human``, ``ai``, ``system``, ``tool``,
        ``function``, or an unknown role lowercased (``developer``)."""
        ...

    def is_summary(self, position: int) -> bool:
        """Whether the message at ``position`` is a summary block."""
        ...

    def can_drop(self, position: int) -> bool:
        """Whether ``drop`` accepts ``position`` (see the guarantees above)."""
        ...

    def group(self, position: int) -> list[int]:
        """The positions that leave together with ``position``: an ai message and its
        tool results; just ``position`` for any other message."""
        ...

    def newest_human(self) -> int | None:
        """The position of the newest human message (the question), or None."""
        ...

    def turns(self) -> list[range]:
        """The user turns, oldest first: each from a human message up to the next one
        (summary blocks and what precedes the first human message belong to none)."""
        ...

    def drop(self, positions: Iterable[int], *, summarize: bool = False) -> list[Any]:
        """Prune ``positions`` (each with its tool group) and return what left, as given.

        With ``summarize`` (which needs ``Summarize`` semantics: ``summarize_fn`` set and
        ``summarizes = True`` on the step), what left is summarised together with the
        summary blocks in the list, and the new block is injected after the kept first
        message.

        Raises:
            ValueError: A position is out of range or may not be dropped (the message
                says which and why).
        """
        ...

    def drop_oldest(self, *, summarize: bool = False) -> list[Any]:
        """Prune the oldest prunable messages as far as the target needs (whole turns
        with ``start_on_human``), as ``DropOldest`` does; return what left."""
        ...

    def replace(self, position: int, message: Any) -> None:
        """Put a rewritten ``message`` at ``position``; the original reaches the hooks.

        Raises:
            ValueError: ``message`` has another role or other tool links than the message
                it replaces.
            TypeError: ``message`` is not a message.
        """
        ...

    def insert(self, position: int, messages: Sequence[Any]) -> None:
        """Insert new ``messages`` before ``position`` (a note, a digest of what a step
        removed). They are new: pruned later, they reach the hooks like any message.

        Raises:
            ValueError: ``position`` is before the kept first message, past the end,
                between a tool call and one of its results, or after the newest human
                message; or the block holds a tool call without its results or a result
                without its call (it must pair up by itself).
            TypeError: An entry is not a message.
        """
        ...

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """An effect to ``yield`` from a generator step: ``value = yield
        context.call(fn, *args)``."""
        ...


class ReductionStep:
    """Base class of the steps a policy is made of.

    Subclasses implement :meth:`apply`. ``ReducerConfig`` checks each step when it is
    created: an ``id`` that is a non-empty string unique in the policy, ``apply``
    implemented, a token step (``needs_tokens``) only in token mode, a summarising step
    (``summarizes``) only with ``summarize_fn``.

    Attributes:
        id: The step's name in a policy (unique there); used by ``reducer.apply_step``.
        needs_tokens: The step works on tokens, so it needs token mode.
        summarizes: The step's drops are summarised (it needs ``summarize_fn``).
        prunes: The step removes messages (False for steps that only rewrite them).
    """

    id: str = ""
    needs_tokens: bool = False
    summarizes: bool = False
    prunes: bool = True

    def apply(self, context: StepContext) -> Any:  # pragma: no cover - overridden
        """Change the list through ``context`` and return the messages touched (or, for
        a generator step, yield ``context.call`` effects and return them)."""
        raise NotImplementedError

    def rewrote(self, message: Any) -> bool:
        """Whether ``message`` is this step's own rewrite (its original already reached
        the hooks, so it is not handed over again when it is pruned later); False for
        steps that rewrite nothing."""
        return False


#: The roles of tool output: tool results, and legacy function results.
_RESULTS = (TOOL, FUNCTION)


@dataclass(frozen=True)
class ClearToolOutputs(ReductionStep):
    """Replace old tool outputs with a placeholder, keeping every call and result.

    Tool results and legacy function results (``role: "function"``) are both tool output.

    An output that counts no more tokens than the placeholder is left as it is (clearing
    it would only lose its text).

    Attributes:
        keep_last: Tool results kept as they are, counted from the newest.
        placeholder: The text that replaces a cleared output.
        id: The step's name.
    """

    keep_last: int = 3
    placeholder: str = DEFAULT_PLACEHOLDER
    id: str = "clear_tool_outputs"
    needs_tokens: bool = field(default=True, init=False, repr=False)
    prunes: bool = field(default=False, init=False, repr=False)

    def __post_init__(self) -> None:
        check_int("ClearToolOutputs.keep_last", self.keep_last, minimum=0)
        check_name("ClearToolOutputs.placeholder", self.placeholder)

    def apply(self, context: StepContext) -> list[Any]:
        # Every result a message holds counts (an Anthropic, Bedrock or Gemini user message
        # holds the results of all calls of a turn; Chat one per message).
        results: list[tuple[int, Slot]] = []
        for position in range(len(context.messages)):
            role = context.role(position)
            if role in _RESULTS or role == HUMAN:
                found = [s for s in slots_of(context.messages[position]) if s.kind == "result"]
                results += [(position, slot) for slot in found]
        older = results[: max(0, len(results) - self.keep_last)]
        clear: dict[int, dict[tuple[Any, ...], str | None]] = {}
        for position, slot in older:
            if slot.text and slot.text != self.placeholder:
                clear.setdefault(position, {})[slot.path] = self.placeholder
        touched: list[Any] = []
        for position, changes in clear.items():
            message = context.messages[position]
            cleared = with_slots(message, changes)
            if context.count(cleared) >= context.tokens[position]:
                continue  # an output no longer than the placeholder: clearing saves nothing
            context.replace(position, cleared)
            touched.append(cleared)
        return touched

    def rewrote(self, message: Any) -> bool:
        content = content_of(message)
        if isinstance(content, str) or content is None:
            return content == self.placeholder
        return any(s.kind == "result" and s.text == self.placeholder for s in slots_of(message))


@dataclass(frozen=True)
class DropOldest(ReductionStep):
    """Prune the oldest prunable messages (whole turns with ``start_on_human``).

    Attributes:
        id: The step's name.
    """

    id: str = "drop_oldest"
    summarizes: bool = field(default=False, init=False, repr=False)

    def apply(self, context: StepContext) -> list[Any]:
        return context.drop_oldest(summarize=self.summarizes)


@dataclass(frozen=True)
class Summarize(DropOldest):
    """Prune as :class:`DropOldest` does, then summarise what went with ``summarize_fn``.

    The summary block already in the list is folded in: ``summarize_fn`` receives it first
    (marked, see :func:`~agentstate_reducer.messages.is_summary`), then the pruned
    messages, and the new block replaces it. The block counts towards the bound: in count
    mode it is one of the ``min_messages`` kept, in token mode room is left for it
    (``summary_max_tokens``). In view mode (``MessageReducer.view``) nothing is
    summarised: it drops as ``DropOldest`` does.

    Attributes:
        id: The step's name.
    """

    id: str = "summarize"
    summarizes: bool = field(default=True, init=False, repr=False)


#: Roles whose text :class:`TruncateLargest` never cuts: instructions.
_INSTRUCTIONS = (SYSTEM, "developer")


@dataclass(frozen=True)
class TruncateLargest(ReductionStep):
    """Cut the text of the largest message so the list fits, with a visible marker.

    The message's text is cut from its end: its last text (a string content, the last text
    block of a list content, or the last tool result it holds, in the message's own
    format; other blocks, such as images and calls, stay). Never cut: system and developer
    messages (their last rules are what a cut would lose), the newest human message (the
    question), summary blocks. Opt-in: it changes what a message says; the original
    reaches the ``on_prune`` hooks. One message, all or nothing: when cutting the largest
    one's last text block cannot make the list fit (the rest alone is over the target, or
    the text is in an earlier block), nothing is cut and the next step goes on.

    Attributes:
        marker: Appended to the cut text; ``{removed}`` is replaced by the tokens removed.
        id: The step's name.
    """

    marker: str = DEFAULT_MARKER
    id: str = "truncate_largest"
    needs_tokens: bool = field(default=True, init=False, repr=False)
    prunes: bool = field(default=False, init=False, repr=False)
    _marker_at_end: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_name("TruncateLargest.marker", self.marker)
        try:
            self.marker.format(removed=0)
        except (KeyError, IndexError, ValueError, TypeError, AttributeError) as exc:
            raise ValueError(
                f"TruncateLargest.marker {self.marker!r} is not a format string with only "
                f"{{removed}} in it ({type(exc).__name__}: {exc}); write literal braces "
                "as {{ and }}"
            ) from None
        head, _, tail = self.marker.partition("{removed}")
        pattern = re.escape(head) + (r"\d+" + re.escape(tail) if "{removed}" in self.marker else "")
        object.__setattr__(self, "_marker_at_end", re.compile(pattern + r"\Z"))

    def apply(self, context: StepContext) -> list[Any]:
        if context.fits() or context.target is None:
            return []
        question = context.newest_human()
        candidates = [
            (tokens, position)
            for position, tokens in enumerate(context.tokens)
            if position != question
            and context.role(position) not in _INSTRUCTIONS
            and not context.is_summary(position)
            and _last_text(context.messages[position]) is not None
        ]
        if not candidates:
            return []
        tokens, position = max(candidates)
        excess = context.total - context.target
        message = context.messages[position]
        slot = _last_text(message)
        assert slot is not None  # a candidate has one
        text = slot.text

        def rebuilt(cut: str) -> Any:
            return with_slots(message, {slot.path: cut})

        cut = _truncate(text, tokens - excess, lambda t: context.count(rebuilt(t)), self.marker)
        if cut is None:
            return []
        shorter = rebuilt(cut)
        context.replace(position, shorter)
        return [shorter]

    def rewrote(self, message: Any) -> bool:
        content = content_of(message)
        if isinstance(content, str):
            return self._marker_at_end.search(content) is not None
        found = _last_text(message)
        return found is not None and self._marker_at_end.search(found.text) is not None


def _last_text(message: Any) -> Slot | None:
    """The message's last non-empty text or tool result (see
    :func:`~agentstate_reducer.messages.slots_of`), None when it has none to cut."""
    found = slots_of(message)
    for index in range(len(found) - 1, -1, -1):
        if found[index].kind in ("text", "result") and found[index].text:
            return found[index]
    return None


def _truncate(text: str, budget: int, count: Callable[[str], int], marker: str) -> str | None:
    """The longest head of ``text`` that, with the marker, counts at most ``budget``."""
    full = count(text)

    def candidate(length: int) -> str:
        return text[:length] + marker.format(removed=max(0, full - count(text[:length])))

    if count(candidate(0)) > budget:
        return None
    low, high = 0, len(text)
    while low < high:
        middle = (low + high + 1) // 2
        if count(candidate(middle)) <= budget:
            low = middle
        else:
            high = middle - 1
    return candidate(low)


def check_policy(policy: Sequence[Any] | None, *, token_mode: bool, can_summarize: bool) -> None:
    """Raise if ``policy`` cannot run with the rest of the configuration.

    Raises:
        TypeError: An entry is not a ReductionStep, has no id, or does not implement
            ``apply``.
        ValueError: The policy is empty, ids repeat, a token step runs in count mode,
            ``Summarize`` has no ``summarize_fn``, or a ``summarize_fn`` is set that no step
            would call.
    """
    if policy is None:
        return
    if isinstance(policy, (str, bytes)) or not isinstance(policy, Sequence):
        raise TypeError(f"policy must be a list of reduction steps, got {policy!r}")
    if not policy:
        raise ValueError(
            "policy is empty: no step would ever prune, so the list would grow unbounded; "
            "leave policy=None for the default ([DropOldest()] or [Summarize()])"
        )
    seen: set[str] = set()
    for index, step in enumerate(policy):
        if not isinstance(step, ReductionStep):
            raise TypeError(
                f"policy[{index}] is not a reduction step: {step!r}; use ClearToolOutputs, "
                "Compress, DropOldest, SelectRelevant, Summarize, TruncateLargest or a "
                "subclass of ReductionStep"
            )
        if not isinstance(step.id, str) or not step.id:
            raise TypeError(
                f"policy[{index}] ({type(step).__name__}) has id {step.id!r}: a step's id "
                "must be a non-empty string (set it as a class attribute or field)"
            )
        if type(step).apply is ReductionStep.apply:
            raise TypeError(
                f"policy[{index}] ({type(step).__name__}) does not implement apply(context)"
            )
        for flag in ("needs_tokens", "summarizes", "prunes"):
            if not isinstance(getattr(step, flag), bool):
                raise TypeError(
                    f"policy[{index}] ({step.id}): {flag} must be True or False, got "
                    f"{getattr(step, flag)!r}"
                )
        if step.id in seen:
            raise ValueError(
                f"policy[{index}]: step id {step.id!r} is used twice; give each step its own id"
            )
        seen.add(step.id)
        if step.needs_tokens and not token_mode:
            raise ValueError(f"policy[{index}] ({step.id}) works on tokens: set max_tokens")
        if step.summarizes and not can_summarize:
            raise ValueError(f"policy[{index}] ({step.id}) needs summarize_fn")
    if can_summarize and not any(step.summarizes for step in policy):
        raise ValueError(
            "summarize_fn is set but no step of the policy summarises, so it would never be "
            "called: add Summarize() to the policy (in place of DropOldest()), or drop "
            "summarize_fn"
        )


def default_policy(can_summarize: bool) -> tuple[ReductionStep, ...]:
    """The policy used when none is given."""
    return (Summarize(),) if can_summarize else (DropOldest(),)


# The steps that call user code live in their own modules (one concept each) and are
# importable from here with the others; they import this module's base classes, so they
# come last.
from .compress import Compress  # noqa: E402
from .relevance import LexicalScorer, SelectRelevant  # noqa: E402

__all__ = [
    "DEFAULT_MARKER",
    "DEFAULT_PLACEHOLDER",
    "ClearToolOutputs",
    "Compress",
    "DropOldest",
    "LexicalScorer",
    "ReductionStep",
    "SelectRelevant",
    "StepContext",
    "StepReport",
    "Summarize",
    "TruncateLargest",
    "check_policy",
    "default_policy",
]
