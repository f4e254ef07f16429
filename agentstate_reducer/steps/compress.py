"""``Compress``: a policy step that puts shorter versions of old messages in their place.

The compressor is user code (an LLM that condenses tool outputs, a rule that strips
markup): it receives the old messages the step picked, oldest first, and returns one
shorter version per message. The step replaces the originals (which reach the
``on_prune`` hooks), oldest first, until the list fits. Each message is compressed once: a
compressor's answer is remembered by the conversation (namespace) and the fingerprint of
the message it was given, and the step recognises its own outputs in that conversation,
so they are not compressed again; the reducer remembers them as rewrites (by
conversation), so they are not handed over again when they are pruned later. An answer
without an id takes the id of the message it replaces, so it is the same message to
LangGraph and to the next reduce.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._calls import Outage
from .._checks import check_callable, check_int, check_number
from .._memory import Bounded, namespace_key
from ..errors import StepError
from ..messages import SYSTEM, content_of, fingerprint, id_of, view_of, with_id, with_text
from .contract import ReductionStep, StepContext

#: How many compressed messages a step remembers (its answers and its outputs).
_MEMORY = 10_000

Compressor = Callable[[list[Any]], Any]
"""``(messages) -> list``: one shorter message (or its text) per message given, or None
to leave a message as it is; may be a coroutine function."""


_Key = tuple[Hashable, str]


class _Memory:
    """The compressor's answers by conversation and input fingerprint, and the step's own
    outputs by conversation and fingerprint; bounded (oldest forgotten), safe to share
    between threads. Keyed by conversation: another user's message with the same words
    (and ids) is that user's own, neither an output nor answered already."""

    def __init__(self) -> None:
        self.answers: Bounded[_Key, Any] = Bounded(_MEMORY)
        self.outputs: Bounded[_Key, None] = Bounded(_MEMORY)

    def made(self, conversation: Hashable, message: Any) -> None:
        self.outputs.put((conversation, fingerprint(message)), None)

    def is_output(self, conversation: Hashable, message: Any) -> bool:
        return (conversation, fingerprint(message)) in self.outputs


@dataclass(frozen=True, eq=False)
class Compress(ReductionStep):
    """Replace old messages with shorter versions made by ``compressor``.

    Picks the messages of ``roles`` older than the newest ``keep_last`` of them (never a
    system or developer message, the newest human message or a summary block), larger
    than ``min_tokens``, and not already compressed; calls ``compressor`` once with the
    ones it has no answer for yet; then replaces them oldest first until the list fits. A
    version that is not shorter is not used. The compressor may be sync or async (awaited
    in ``areduce``). When it raises, the reduce raises :class:`~agentstate_reducer.StepError`
    (``on_prune_error="raise"``) or goes on with the next step (``"keep"``); after a
    failure it is not called again for ``retry_backoff`` seconds (doubling while it keeps
    failing), so an outage costs one failing call per wait.

    Attributes:
        compressor: ``(messages) -> list``: one shorter message or string per message,
            or None to leave one as it is. A replacement keeps the role and tool links.
        roles: The normalised roles to compress: by default tool output (``"tool"``, and
            legacy ``"function"`` results); also ``"ai"``, ``"human"``, ...
        keep_last: Messages of those roles left as they are, counted from the newest.
        min_tokens: Only messages counting more tokens than this are compressed.
        retry_backoff: Seconds to wait after a failing call before the next one.
        id: The step's name.
    """

    compressor: Compressor
    roles: Sequence[str] = ("tool", "function")
    keep_last: int = 3
    min_tokens: int = 0
    retry_backoff: float = 1.0
    id: str = "compress"
    needs_tokens: bool = field(default=True, init=False, repr=False)
    prunes: bool = field(default=False, init=False, repr=False)
    _memory: _Memory = field(default_factory=_Memory, init=False, repr=False)
    _outage: Outage = field(init=False, repr=False)

    def __post_init__(self) -> None:
        check_callable("Compress.compressor", self.compressor, optional=False)
        roles = self.roles
        if isinstance(roles, str) or not isinstance(roles, Sequence) or not roles:
            raise TypeError(f"Compress.roles must be a non-empty list of roles, got {roles!r}")
        for index, role in enumerate(roles):
            if not isinstance(role, str) or not role:
                raise TypeError(f"Compress.roles[{index}] must be a role name, got {role!r}")
        if SYSTEM in roles:
            raise ValueError(
                "Compress.roles holds 'system': instructions are never compressed; "
                "list the roles whose old messages may be shortened ('tool', 'ai', 'human')"
            )
        object.__setattr__(self, "roles", tuple(roles))
        check_int("Compress.keep_last", self.keep_last, minimum=0)
        check_int("Compress.min_tokens", self.min_tokens, minimum=0)
        check_number("Compress.retry_backoff", self.retry_backoff, minimum=0)
        object.__setattr__(self, "_outage", Outage(self.retry_backoff))

    def apply(self, context: StepContext) -> Generator[Any, Any, list[Any]]:
        messages = context.messages
        question = context.newest_human()
        conversation = namespace_key(context.namespace)
        picked = [
            position
            for position in range(len(messages))
            if context.role(position) in self.roles
            and position != question
            and not context.is_summary(position)
            and content_of(messages[position])
            and not self._memory.is_output(conversation, messages[position])
        ]
        older = picked[: max(0, len(picked) - self.keep_last)]
        older = [p for p in older if context.tokens[p] > self.min_tokens]
        if not older:
            return []
        answers: dict[int, Any] = {}
        asked: list[int] = []
        for position in older:
            known, answer = self._memory.answers.get(
                (conversation, fingerprint(messages[position]))
            )
            if known:
                answers[position] = answer
            else:
                asked.append(position)
        if asked and (waiting := self._outage.blocked()) is not None:
            # Like a summarizer in its backoff: the reduce hears of it (raise), or the step
            # is skipped with the error on its report (keep); never quietly.
            raise StepError(
                f"step {self.id!r}: the compressor failed moments ago "
                f"({type(waiting).__name__}: {waiting}); not called again for "
                f"{self._outage.retry_in:.1f} s (retry_backoff)",
                step=self.id,
                waiting=True,
            )
        if asked:
            given = [messages[p] for p in asked]
            try:
                returned = yield context.call(self.compressor, given)
            except Exception as exc:
                self._outage.failed(exc)
                raise
            self._outage.succeeded()
            answers_given = self._answers(returned, given)
            for position, answer in zip(asked, answers_given, strict=True):
                self._memory.answers.put((conversation, fingerprint(messages[position])), answer)
                answers[position] = answer
        touched: list[Any] = []
        for position in older:
            if context.fits():
                break
            shorter = self._version(context, position, answers.get(position))
            if shorter is None:
                continue
            context.replace(position, shorter)
            self._memory.made(conversation, shorter)
            touched.append(shorter)
        return touched

    def _answers(self, returned: Any, given: list[Any]) -> list[Any]:
        """The compressor's answers, checked: an unusable answer is the compressor
        failing (a :class:`StepError`, so ``on_prune_error="keep"`` goes on without it)."""
        expected = len(given)
        problem = None
        if isinstance(returned, (str, bytes)) or not isinstance(returned, Sequence):
            problem = f"returned {type(returned).__name__}"
        elif len(returned) != expected:
            problem = f"returned {len(returned)} entries for {expected} messages"
        else:
            for index, (answer, original) in enumerate(zip(returned, given, strict=True)):
                if answer is None or isinstance(answer, str):
                    continue
                try:
                    view = view_of(answer, f"answer [{index}]")
                except TypeError as exc:
                    problem = str(exc)
                    break
                before = view_of(original, f"message [{index}]")
                if (view.role, view.call_ids, view.results_for) != (
                    before.role,
                    before.call_ids,
                    before.results_for,
                ):
                    problem = (
                        f"answered message [{index}] ({_a(before.role)} message) with "
                        f"{_a(view.role)} message or other tool links"
                    )
                    break
        if problem is None:
            return list(returned)
        error = StepError(
            f"step {self.id!r}: the compressor {problem}; it must return a list with one "
            "answer per message given, in order: a shorter message of the same role and "
            "tool links, its text, or None to leave it",
            step=self.id,
        )
        self._outage.failed(error)
        raise error

    def _version(self, context: StepContext, position: int, answer: Any) -> Any:
        """The replacement for ``position``, or None when the answer does not help."""
        if answer is None:
            return None
        original = context.messages[position]
        # A text answer is written into the original's own shape: its result (or its
        # text), calls and blocks kept (see messages.with_text).
        shorter = with_text(original, answer) if isinstance(answer, str) else answer
        original_id = id_of(original)
        if original_id is not None:
            # An answer without an id takes the original's (context.replace would too):
            # the output is then recognised on the next reduce, here and in LangGraph.
            shorter = with_id(shorter, original_id)
        if context.count(shorter) >= context.tokens[position]:
            return None
        return shorter


def _a(word: str) -> str:
    """``word`` with its indefinite article."""
    return f"an {word}" if word[:1] in "aeiou" else f"a {word}"
