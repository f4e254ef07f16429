"""Google ADK support (extra ``[google-adk]``): a ``before_model_callback`` for ``LlmAgent``.

ADK stores a session as an append-only log of events, and before every model call it
rebuilds the request's ``contents`` (google-genai ``Content`` objects) from all of them. No
session service (in memory, database, SQLite, Vertex AI) offers a way to remove an event, only
a whole session; ADK's own event compaction (``EventsCompactionConfig``) hides ranges of events
from the request behind a summary and keeps the events themselves. So what a reducer can bound
in ADK is the model's input, and what it keeps in storage is a record of where that input
starts.

:func:`before_model_callback` reduces ``llm_request.contents`` before each model call, as the
Gemini format's rules say (calls leave with their responses, roles alternate, the newest
question and what follows stay), and keeps in the session's state (key
``agentstate_reducer:<agent name>``, saved by the session service with the next event) how
many contents have left the model's view for good and the summary block that stands for them.
The next call starts from there, so:

* the view is stable between prunes (it grows by the new turns until ``max_messages`` or
  ``max_tokens``, then drops to the window), as a stored list would;
* each content that leaves reaches the ``on_prune`` hooks once, across calls, runs and
  restarts (the record lives with the session), and the summary is made once per prune;
* a hook or summarizer that fails moves nothing: the model is shown a bounded view of
  everything (``MessageReducer.aview``: dropped, not summarised) and the record stays, so
  once the hook is back the next call hands over everything that left meanwhile.

The events stay in the session: ADK keeps them, and the record only says where the model's
view begins.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from ._extras import missing_extra
from .messages import fingerprint, is_summary, role_of
from .reducer import MessageReducer, check_reducer
from .steps.drop import DropOldest

try:
    from google.adk.agents.callback_context import CallbackContext
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.llm_response import LlmResponse
    from google.genai import types
except ImportError as exc:
    raise missing_extra("agentstate_reducer.google_adk", "google-adk", exc) from exc

__all__ = ["STATE_KEY_PREFIX", "BeforeModelCallback", "before_model_callback"]

logger = logging.getLogger(__name__)

STATE_KEY_PREFIX = "agentstate_reducer:"
"""The session state key of an agent's record is this prefix and the agent's name."""

BeforeModelCallback = Callable[[CallbackContext, LlmRequest], Awaitable[LlmResponse | None]]
"""What :func:`before_model_callback` returns: an async ADK ``before_model_callback``."""

_SIDES = {"human": "user", "ai": "model"}


def before_model_callback(
    reducer: MessageReducer,
    *,
    namespace: Any = None,
) -> BeforeModelCallback:
    """A ``before_model_callback`` for ``LlmAgent`` that keeps the model's input bounded
    with ``reducer`` (see the module docstring for what is kept where).

    The callback is a coroutine function (ADK awaits it, in ``Runner.run_async`` and in the
    thread ``Runner.run`` starts); blocking hooks and summarizers run in worker threads
    (``MessageReducer.areduce``). It never answers for the model: it returns None after
    setting ``llm_request.contents``.

    Only pruning policies fit ADK: ADK rebuilds the contents from its events before every
    call, so a step that rewrites the messages it keeps (``ClearToolOutputs``, ``Compress``,
    ``TruncateLargest``) or keeps older turns out of order (``SelectRelevant``) would be
    undone and redone on every call, its originals handed over each time.

    Args:
        reducer: The reducer; its policy must be ``DropOldest`` or ``Summarize`` (the
            default policies). With ``inject_summary=True`` the summary block is part of
            the model's input and is kept in the record.
        namespace: Passed to the hooks; a value, or a callable of the ``CallbackContext``.
            By default ``(app_name, user_id, session_id)`` of the session.

    Returns:
        The callback: ``LlmAgent(..., before_model_callback=before_model_callback(reducer))``.

    Raises:
        TypeError: ``reducer`` is not a ``MessageReducer``.
        NotImplementedError: The reducer's policy has a step other than ``DropOldest`` and
            ``Summarize``.
    """
    check_reducer(reducer)
    for step in reducer.steps:
        if not isinstance(step, DropOldest):
            raise NotImplementedError(
                f"before_model_callback: the policy step {step.id!r} ({type(step).__name__}) "
                "rewrites or reorders the messages it keeps; ADK rebuilds the model's "
                "contents from its events before every call, so it would be redone (and its "
                "originals handed over) on every call. Use DropOldest() or Summarize()"
            )
    pinned = 1 if reducer.config.preserve_first is True else 0
    name_of: Callable[[CallbackContext], Any] | None = namespace if callable(namespace) else None

    async def callback(
        callback_context: CallbackContext, llm_request: LlmRequest
    ) -> LlmResponse | None:
        """Bound ``llm_request.contents`` (see :func:`before_model_callback`)."""
        where = name_of(callback_context) if name_of is not None else namespace
        if where is None and name_of is None:
            where = _session_namespace(callback_context)
        key = STATE_KEY_PREFIX + callback_context.agent_name
        contents = list(llm_request.contents)
        record = _Record.load(callback_context.state.get(key), contents, pinned, key)
        start = pinned + record.left
        skipped = record.skipped_positions()
        tail = [p for p in range(start, len(contents)) if p not in skipped]
        view = [*contents[:pinned], *record.block(), *(contents[p] for p in tail)]
        result = await reducer.areduce(view, namespace=where, on_prune_error="keep")
        if result.hook_error is not None or result.summary_error is not None:
            # Nothing may leave for good while a hook or the summarizer is down: show the
            # model a bounded view and keep the record where it was.
            shown = await reducer.aview(view, namespace=where, on_prune_error="keep")
            llm_request.contents = list(shown.surviving)
            return None
        kept = {id(message) for message in result.surviving}
        # What left the view: the oldest contents, and also, inside a long tool loop, older
        # call and response pairs after the newest question (which stays): both recorded,
        # so neither comes back (nor reaches the hooks again) on the next call.
        gone = [p for p in tail if id(contents[p]) not in kept]
        block = [m for m in result.surviving[pinned:] if is_summary(m)]
        updated = record.advanced(contents, gone, block)
        if updated != record:
            callback_context.state[key] = updated.dump()
        llm_request.contents = list(result.surviving)
        return None

    return callback


def _session_namespace(callback_context: CallbackContext) -> Any:
    """``(app_name, user_id, session_id)`` of the callback's session."""
    session = getattr(callback_context, "session", None)
    if session is None:  # ADK 1.x: the session is on the invocation context
        invocation = getattr(callback_context, "_invocation_context", None)
        session = getattr(invocation, "session", None)
    if session is None:
        return None
    return (session.app_name, session.user_id, session.id)


def _digest(message: Any) -> str:
    return hashlib.sha256(fingerprint(message).encode()).hexdigest()[:16]


class _Record:
    """Where an agent's view begins: ``left`` contents after the pinned first one have gone
    for good, the last of them with digest ``last`` (the first content's digest is
    ``first``); the contents after those that have gone too (``skipped``: position and
    digest each, older tool pairs of a turn whose question stays); and the summary block
    standing for them (``(role, text)`` per message)."""

    __slots__ = ("blocks", "first", "last", "left", "pinned", "skipped")

    def __init__(
        self,
        pinned: int,
        left: int = 0,
        first: str | None = None,
        last: str | None = None,
        blocks: Sequence[tuple[str, str]] = (),
        skipped: Sequence[tuple[int, str]] = (),
    ) -> None:
        self.pinned = pinned
        self.left = left
        self.first = first
        self.last = last
        self.blocks = tuple(blocks)
        self.skipped = tuple(skipped)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Record):
            return NotImplemented
        return self.dump() == other.dump()

    __hash__ = None  # type: ignore[assignment]

    @classmethod
    def load(cls, stored: Any, contents: list[Any], pinned: int, key: str) -> _Record:
        """The record in the session's state, if it still fits ``contents``; else a new
        one (logged: what had left is handed over again when it leaves again)."""
        if stored is None:
            return cls(pinned)
        try:
            record = cls(
                pinned,
                int(stored["left"]),
                stored.get("first"),
                stored.get("last"),
                [(str(role), str(text)) for role, text in stored.get("block", ())],
                [(int(position), str(digest)) for position, digest in stored.get("skipped", ())],
            )
        except (TypeError, KeyError, ValueError):
            logger.warning("session state %r is not a reducer record; starting over", key)
            return cls(pinned)
        end = pinned + record.left
        fits = (
            record.left >= 0
            and len(contents) > end
            and (not pinned or record.first == _digest(contents[0]))
            and (record.left == 0 or record.last == _digest(contents[end - 1]))
            and all(
                end <= position < len(contents) and _digest(contents[position]) == digest
                for position, digest in record.skipped[-1:]
            )
        )
        if not fits:
            logger.warning(
                "the contents ADK built no longer start as %r recorded (ADK's own event "
                "compaction, a rewind or a changed instruction rewrote them); the view starts "
                "over, and contents that had left are handed over again when they leave",
                key,
            )
            return cls(pinned)
        return record

    def skipped_positions(self) -> set[int]:
        return {position for position, _ in self.skipped}

    def block(self) -> list[Any]:
        return [
            types.Content(role=role, parts=[types.Part(text=text)]) for role, text in self.blocks
        ]

    def advanced(self, contents: list[Any], gone: Sequence[int], block: list[Any]) -> _Record:
        """The record once the contents at ``gone`` (positions, ascending) have left too:
        the run of gone contents right after the prefix joins it, the rest are skipped."""
        skipped = {position: digest for position, digest in self.skipped}
        for position in gone:
            skipped[position] = ""  # digested below, if it stays skipped
        left = self.left
        while self.pinned + left in skipped:
            del skipped[self.pinned + left]
            left += 1
        end = self.pinned + left
        for position, digest in skipped.items():
            if not digest:
                skipped[position] = _digest(contents[position])
        blocks = [(_SIDES.get(role_of(m), "user"), _text(m)) for m in block]
        return _Record(
            self.pinned,
            left,
            _digest(contents[0]) if self.pinned and contents else None,
            _digest(contents[end - 1]) if left else None,
            blocks,
            sorted(skipped.items()),
        )

    def dump(self) -> dict[str, Any]:
        return {
            "left": self.left,
            "first": self.first,
            "last": self.last,
            "block": [list(pair) for pair in self.blocks],
            "skipped": [list(pair) for pair in self.skipped],
        }


def _text(content: Any) -> str:
    parts = content.parts if not isinstance(content, Mapping) else content.get("parts")
    return "".join(
        (part.text if not isinstance(part, Mapping) else part.get("text")) or ""
        for part in parts or ()
    )
