"""The pruning plan: which positions of a message list go. Pure, and incremental.

Rules, in the words of the guide (docs/guides/policy-and-counting.md):

* only human and ai messages are pruned directly; a tool result, or a legacy function
  result, goes only with the ai message that called it (when cascading); system and unknown
  roles stay, and so does a result that answers no call;
* a summary block (``MessageView.summary``) is never pruned as an ordinary message: a
  summarising prune folds it into the new summary instead (``fold=True``), and it does not
  start a user turn;
* the first message stays when ``preserve_first`` is True, and when it is ``"system"``
  if that message is a system or developer message; a summary or memory block at index 0
  is never that kept first message (it is folded as any block is);
* the newest human message (the question being answered) is never pruned, but the older
  tool calls and results of its turn may be, so a long tool loop or a fan-out after one
  question is bounded too; where roles alternate, such a window keeps the ai message
  right before the question when a kept first user message would meet it (see
  :meth:`PlanState._bridge`), and an ai message opening the newest turn with a thinking
  block stays with its results while the turn does (``MessageView.thinking``);
* pruning takes the prunable messages of a *window* ``[start, end)``; everything at or after
  ``end`` stays. ``end`` never passes the newest message, and never falls between an ai
  message and any of its tool (or function) results, so no call loses a result and no
  result its call;
* with ``start_on_human``, ``end`` is at a human message (whole user turns go) or inside
  the newest turn (its question kept, so the history still starts on it); in a format whose
  roles alternate, with a kept first question, no such end is valid before the newest
  turn has a model message (the first and a later question would meet), and then the end
  is where the roles alternate, as without ``start_on_human``; and with
  ``keep_groups`` it never passes the start of the newest ``keep_groups`` user turns;
* count mode: ``end`` is at most ``len - (min_messages - reserve)``, once the list is
  longer than ``max_messages``, and as large as the rules allow (``reserve``: the messages
  of the summary block a summarising prune will insert, which count towards
  ``min_messages``);
* token mode: the smallest ``end`` whose survivors fit ``target_tokens - reserve``, once
  the list is over ``max_tokens`` (``reserve``: the summary block's tokens); when nothing
  fits, the largest ``end`` allowed (so only the newest message, its tool group and what
  is never pruned remain).

:class:`PlanState` holds what the plan needs per position (token count, whether prunable,
tool links) for one list, and keeps it as the list grows and is pruned, so a chat that
grows by a turn and is pruned from the front costs work in proportion to what was added
and what was pruned, not to the whole window. Positions carry sequence numbers that only
grow, so tool links survive the compaction that pruning does.

A tool result is linked to the ai message whose call has its id; a message may hold several
results (an Anthropic, Bedrock or Gemini user message), linked by the first it answers. A
call without an id (a legacy function call, a Gemini function call) has a key
(:func:`~agentstate_reducer.messages.function_call_key`) that names the function, and a
result of that name is linked to the newest unanswered call of that name, which it then
answers, so a function called again in a later turn pairs with its own result, a second
result of one call answers nothing, and a message that calls one function twice waits for
two results.

Format rules the plan keeps (see :mod:`agentstate_reducer.messages`):

* the items of one model turn (Responses API: reasoning, assistant messages, calls; views
  with ``joins``) are linked to the first of their run and leave together, with the
  outputs of their calls;
* a human message that also holds tool results leaves only with its call; when it is the
  newest question, its whole group stays;
* in formats whose roles alternate (``alternates``: Anthropic, Bedrock, Gemini), a window
  end is valid only if the survivors still alternate where pruning joins them and the
  list still starts with the user; a summarising prune's block is placed between the kept
  first message and the rest (one message of the side that fits, see
  :func:`~agentstate_reducer.messages.block_sides`), so ends where one message fits are
  preferred, and ends where it takes two are used only when no other end is valid.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from .messages import (
    AI,
    ANY_FORMAT,
    CHAT,
    FUNCTION_CALL_KEY_PREFIX,
    HUMAN,
    SYSTEM,
    TOOL,
    MessageFormat,
    MessageView,
    combine,
    format_named,
    format_of_mask,
)
from .messages.chat import CHAT_FORMAT, plain_call_ids
from .messages.reader import BLOCK_SOURCES, plain_roles, read_views
from .tokens.usage import UsageReport

if TYPE_CHECKING:
    from .config import ReducerConfig

_NO_LINK = -1
#: A prune of a whole window of at least this many messages drops their links by seq
#: range, one pass over each table, rather than message by message (see ``prune``).
_FORGET_BY_RANGE = 16
#: LangChain's own message classes, by the role each is read as (see ``extend_plain``).
_PLAIN_ROLES = plain_roles()
#: ``tuple.__new__``: a view without the Python frame of ``MessageView.__new__``.
_new = tuple.__new__
_FORMATS_OF = attrgetter("formats")
#: In count mode, the view :meth:`PlanState.extend_plain` gives every plain message of a
#: role that makes no call and answers none (a human, system or call-less ai message): one
#: per role, without the message's id. Nothing reads a view's id in count mode (the token
#: cache keys counts by it), and a message whose view is the same as many others' costs no
#: view of its own to build, keep and free.
_SHARED_VIEWS: dict[str, MessageView] = {
    role: MessageView(role, None, (), None, False, (), CHAT) for role in (HUMAN, AI, SYSTEM)
}
#: Roles of the message ``preserve_first="system"`` keeps at index 0.
_INSTRUCTION_ROLES = (SYSTEM, "developer")


@dataclass(frozen=True)
class PlanLimits:
    """The parts of the configuration the plan needs.

    ``max_tokens`` and ``target_tokens`` are the history's own budget: the configured
    ones minus the reply reserve.
    """

    preserve_first: bool | str
    """True, False, or ``"system"`` (keep index 0 only if it is a system/developer message)."""
    cascade: bool
    min_messages: int
    max_messages: int | None
    max_tokens: int | None = None
    target_tokens: int | None = None
    start_on_human: bool = False
    keep_groups: int = 0
    format: str | None = None
    """The wire format ``ReducerConfig(format=...)`` names; None: told from each list."""

    @classmethod
    def from_config(cls, config: ReducerConfig) -> PlanLimits:
        """The limits a :class:`~agentstate_reducer.ReducerConfig` sets."""
        return cls(
            preserve_first=config.preserve_first,
            cascade=config.cascade_tool_messages,
            min_messages=config.min_messages,
            max_messages=config.max_messages,
            max_tokens=config.history_max_tokens,
            target_tokens=config.history_target_tokens,
            start_on_human=config.start_on_human,
            keep_groups=config.keep_groups,
            format=config.format,
        )

    def may_prune(self, length: int) -> bool:
        """Whether a list of ``length`` messages can be over the limit at all.

        False only when that is sure without reading the messages: in count mode, a list
        of at most ``max_messages`` (or any list, when ``max_messages`` is None). Token
        mode has to count, so it is always True there.
        """
        if self.max_tokens is not None:
            return True
        return self.max_messages is not None and length > self.max_messages


class PlanState:
    """Per-position facts of one message list, kept up to date as it grows and shrinks."""

    __slots__ = (
        "_anchor_seq",
        "_caller_of_call",
        "_caller_seq",
        "_first_gone",
        "_forced",
        "_format_mask",
        "_human_seqs",
        "_last_result",
        "_limits",
        "_named_calls",
        "_next_seq",
        "_opener",
        "_prunable",
        "_seq",
        "_start",
        "alternates",
        "format",
        "formats",
        "offset",
        "raw",
        "report",
        "tokens",
        "total",
        "views",
    )

    def __init__(self, limits: PlanLimits, *, first_gone: bool = False) -> None:
        """A state for an empty list.

        Args:
            limits: The limits it plans with.
            first_gone: The conversation's first message is no longer in the list (a
                reduce planning its own list afresh, after pruning from an input whose
                index 0 was not kept): the message now at index 0 is not pinned as the
                first, unless it is a system or developer message.
        """
        self._limits = limits
        self._first_gone = first_gone
        self._start = 1 if limits.preserve_first is True and not first_gone else 0
        self._forced = None if limits.format is None else format_named(limits.format)
        self.format: MessageFormat = self._forced or CHAT_FORMAT
        """The list's format (its rules: alternating roles, where results go)."""
        self.alternates = self.format.alternates
        """The list's roles must alternate (its format's rule): window ends keep that."""
        self.formats = ANY_FORMAT
        """The formats every message of the list fits."""
        self._format_mask = ANY_FORMAT  # the formats ``format`` was told from
        self.views: list[MessageView] = []
        self.tokens: list[int] = []
        self.total = 0
        self._prunable: list[bool] = []
        self._seq: list[int] = []
        # For a linked member of a group (a tool result, a later item of a model turn, a
        # human message holding results): the sequence number of the group's first
        # (prunable) message, its anchor.
        self._caller_seq: list[int] = []
        self._next_seq = 0
        # call id -> anchor seq of the group that makes the call.
        self._caller_of_call: dict[str, int] = {}
        # function-call key (a call without an id) -> [anchor seq, calls of that name still
        # unanswered]: removed once answered (one call, one result).
        self._named_calls: dict[str, list[int]] = {}
        self._last_result: dict[int, int] = {}  # anchor seq -> seq of its last member
        self._human_seqs: list[int] = []  # where each user turn starts, oldest first
        # The seq of the ai message that opens the newest turn when it holds a thinking
        # block: it stays, with its results, while the turn does (see _goes).
        self._opener = _NO_LINK
        # Calibration (see calibrate()): None and 0 until a provider-reported count is used.
        self.raw: list[int] | None = None
        """Each message's count by the reducer's counter, once calibrated (``tokens`` then
        holds the calibrated counts); None otherwise."""
        self.offset = 0
        """Tokens counted for no message: the part of a provider-reported count carried on
        its own (see :meth:`calibrate`); included in ``total``, never pruned."""
        self._anchor_seq = _NO_LINK
        self.report: tuple[UsageReport, int, float] | None = None
        """The report the counts are calibrated to, the reducer's count of what the model
        was shown for it, and the scale applied (see :meth:`calibrate`)."""

    def __len__(self) -> int:
        return len(self.views)

    def extend(
        self,
        views: Sequence[MessageView],
        tokens: Sequence[int] | None = None,
        where: Callable[[int], str] | None = None,
    ) -> None:
        """Append messages (oldest first) with their token counts (token mode).

        Args:
            views: Their views.
            tokens: Their token counts (token mode).
            where: How an error names ``views[i]`` (``where(i)``; a negative ``i`` names a
                message the state already holds); ``messages[i]`` by default.

        Raises:
            TypeError: A message is of another format than the list's (or than the format
                the limits name): the error names it and one of the list's.
        """
        position = len(self.views)
        if where is None:

            def where(index: int) -> str:
                return f"messages[{position + index}]"

        mask = self.formats
        for formats in set(map(_FORMATS_OF, views)):
            mask &= formats
        if not mask or (self._forced is not None and not mask & self._forced.bit):
            # A message of another format (combine says which two, and raises).
            combine(views, where, mask=self.formats, forced=self._forced, earlier=self.views)
        self.formats = mask
        if self._forced is None and mask != self._format_mask:
            self._format_mask = mask
            self.format = format_of_mask(mask)
            self.alternates = self.format.alternates
        if position == 0 and views:
            self._start = self._first_kept(views[0])
        start = self._start
        cascade = self._limits.cascade
        caller_of_call = self._caller_of_call
        all_views = self.views
        all_views.extend(views)
        # The lists and the counter as locals: this loop runs once per new message of every
        # reduce (the ``self`` look-ups were a third of its time).
        prunable_of, seq_of, caller_seq_of = self._prunable, self._seq, self._caller_seq
        human_seqs, last_result = self._human_seqs, self._last_result
        seq = self._next_seq - 1
        at = position - 1
        for view in views:
            seq += 1
            at += 1
            role = view.role
            prunable = False
            caller = _NO_LINK
            if view.summary:
                pass  # kept, and folded by a summarising prune; not a user turn
            elif role in (HUMAN, AI):
                prunable = at >= start
                if role == HUMAN:
                    human_seqs.append(seq)
                    self._opener = _NO_LINK
                elif view.thinking and at and self._follows_question(at):
                    self._opener = seq
                if prunable and cascade and role == AI:
                    if view.joins and at > start and prunable_of[at - 1]:
                        before = all_views[at - 1]
                        if before.joins and not before.summary:
                            # The next item of a model turn: one group with the run.
                            anchor = caller_seq_of[at - 1]
                            caller = seq_of[at - 1] if anchor == _NO_LINK else anchor
                            last_result[caller] = seq
                    anchor = seq if caller == _NO_LINK else caller
                    for call_id in view.call_ids:
                        if call_id.startswith(FUNCTION_CALL_KEY_PREFIX):
                            self._name_call(call_id, anchor, view.call_ids)
                        else:
                            caller_of_call[call_id] = anchor
            answers = view.results_for if role != AI else ()
            if answers and cascade and caller == _NO_LINK and not view.summary:
                # One result answering a call by its id: the common case, looked up here.
                found = caller_of_call.get(answers[0]) if len(answers) == 1 else None
                if found is None:
                    found = self._answer(answers)
                if found is not None:
                    caller = found
                    if role not in (HUMAN, AI):
                        prunable = True
                    last_result[found] = seq
            prunable_of.append(prunable)
            seq_of.append(seq)
            caller_seq_of.append(caller)
        self._next_seq = seq + 1
        if tokens is not None:
            self.tokens.extend(tokens)
            self.total += sum(tokens)
            if self.raw is not None:
                self.raw.extend(tokens)  # newer than the anchor: estimated as they are

    def extend_plain(self, messages: list[Any]) -> int:
        """Read and append the leading messages of ``messages`` that are LangChain's own
        messages in their plain shape (text content, calls as dicts with ids, none a
        summary or memory block: what the class readers of
        :mod:`~agentstate_reducer.messages.reader` read without the general reader), in
        one pass: how many it took. The rest are for :meth:`extend`, their views read the
        general way. Token counts are not added: in token mode, :meth:`add_tokens` follows.

        Why: every reduce reads each new message and appends it here, and that is most of
        what a reduce that prunes nothing costs. Reading with planning in one pass spares
        a call per message, a list of views and a second loop over them (about a fifth of
        that cost; bench/hot_path.py).

        Invariant: taking ``n`` messages leaves the state exactly as
        ``extend(read_views(messages[:n]))`` does (views, links, turn starts, format),
        except that in count mode a message that makes no call and answers none has the
        shared view of its role, without its id (:data:`_SHARED_VIEWS`); and it takes a
        message only where the class reader would give its view, or, as the first of an
        empty state, where ``read_views`` reads it;
        ``tests/test_hot_path.py`` compares the two on drawn lists of LangChain's
        messages, plain and odd, split at random, in count and token mode.
        """
        mask = self.formats & CHAT  # each view read here fits the Chat family only
        forced = self._forced
        limits = self._limits
        if not mask or (forced is not None and not mask & forced.bit) or not limits.cascade:
            return 0  # another format's list (extend names the mix), or no tool links
        roles = _PLAIN_ROLES
        all_views = self.views
        if not all_views:
            # The list's first message decides where the window starts (_first_kept): it is
            # read the general way, so that the loop below never meets position 0 (where
            # a message may be the kept first one: not pruned on its own).
            if not messages or roles.get(type(messages[0])) is None:
                return 0
            try:
                self.extend(read_views(messages[:1]))
            except TypeError:  # a field of the wrong type, another format: extend names it
                return 0
            return 1 + self.extend_plain(messages[1:])
        prunable_of, caller_seq_of = self._prunable, self._caller_seq
        human_seqs, last_result = self._human_seqs, self._last_result
        caller_of_call = self._caller_of_call
        first_seq = self._next_seq
        seq = first_seq - 1
        # Count mode: one view for every message of a shape without calls or results (no
        # id in it: only the token cache reads a view's id, see _SHARED_VIEWS).
        shared = _SHARED_VIEWS if limits.max_tokens is None else None
        view: tuple[Any, ...]  # the fields of a MessageView, built with _new
        ids: tuple[str, ...] | None
        for message in messages:
            role = roles.get(type(message))
            if role is None:
                break
            # Read as the class readers of messages.reader read (their checks, in the
            # same order; they stay the specification): what they leave to the general
            # reader, and a summary or memory block, is left to extend. The fields are
            # read from the instance's __dict__, where pydantic keeps them (an attribute
            # read of a pydantic model is not specialised by the interpreter: a few times
            # slower); a field missing there is left to the general reader too. Each
            # message is appended as extend appends it (not at position 0: each human or
            # ai message is pruned on its own, a result with its call).
            fields = message.__dict__
            try:
                ident = fields["id"]
                extra = fields["additional_kwargs"]
                if (
                    fields["type"] != role  # each class's type is its role's name
                    or (ident is not None and type(ident) is not str)
                    or type(extra) is not dict
                    or (extra and extra.get("lc_source") in BLOCK_SOURCES)
                ):
                    break
                ident = ident or None  # an empty id is no id
                if role == TOOL:
                    answered = fields["tool_call_id"]
                    if answered is not None and type(answered) is not str:
                        break
                    seq += 1
                    if answered:
                        answers = (answered,)
                        view = (TOOL, ident, (), answered, False, answers, CHAT, 0, False, ())
                        all_views.append(_new(MessageView, view))
                        found = caller_of_call.get(answered)
                        if found is None:
                            found = self._answer(answers)
                        if found is not None:
                            last_result[found] = seq
                            prunable_of.append(True)
                            caller_seq_of.append(found)
                            continue
                    else:
                        view = (TOOL, ident, (), None, False, (), CHAT, 0, False, ())
                        all_views.append(_new(MessageView, view))
                    prunable_of.append(False)  # a result of no call: kept
                    caller_seq_of.append(_NO_LINK)
                    continue
                if type(fields["content"]) is not str:  # blocks: calls, results, thinking
                    break
                if role == AI:
                    calls = fields["tool_calls"]
                    if (
                        type(calls) is not list
                        or message.__pydantic_extra__  # may hold a legacy function_call
                        or (extra and ("tool_calls" in extra or "function_call" in extra))
                    ):
                        break
                    if not calls:
                        ids = ()
                    elif len(calls) == 1:  # one call, the common case: plain_call_ids inline
                        call = calls[0]
                        if type(call) is not dict:
                            break
                        call_id = call.get("id")
                        if type(call_id) is str:
                            ids = (call_id,) if call_id else ()
                        elif call_id is None:
                            ids = ()
                        else:
                            break
                    else:
                        ids = plain_call_ids(calls)
                        if ids is None:
                            break
                    seq += 1
                    if ids:
                        view = (AI, ident, ids, None, False, (), CHAT, 0, False, ())
                        all_views.append(_new(MessageView, view))
                        for call_id in ids:
                            if call_id.startswith(FUNCTION_CALL_KEY_PREFIX):
                                self._name_call(call_id, seq, ids)
                            else:
                                caller_of_call[call_id] = seq
                    elif shared is not None:
                        all_views.append(shared[AI])
                    else:
                        view = (AI, ident, (), None, False, (), CHAT, 0, False, ())
                        all_views.append(_new(MessageView, view))
                    prunable_of.append(True)
                else:  # human or system
                    seq += 1
                    if shared is not None:
                        all_views.append(shared[role])
                    else:
                        view = (role, ident, (), None, False, (), CHAT, 0, False, ())
                        all_views.append(_new(MessageView, view))
                    if role == HUMAN:  # a turn starts
                        prunable_of.append(True)
                        human_seqs.append(seq)
                        self._opener = _NO_LINK
                    else:  # a system message: kept
                        prunable_of.append(False)
                caller_seq_of.append(_NO_LINK)
            except KeyError:
                break
        taken = seq + 1 - first_seq
        if taken:
            self._seq.extend(range(first_seq, seq + 1))  # consecutive: one per message
            self._next_seq = seq + 1
            self.formats = mask
            if forced is None and mask != self._format_mask:
                self._format_mask = mask
                self.format = format_of_mask(mask)
                self.alternates = self.format.alternates
        return taken

    def add_tokens(self, tokens: list[int]) -> None:
        """The token counts of the messages :meth:`extend_plain` appended last, in order."""
        self.tokens.extend(tokens)
        self.total += sum(tokens)
        if self.raw is not None:
            self.raw.extend(tokens)  # newer than the anchor: estimated as they are

    def _first_kept(self, first: MessageView) -> int:
        """1 when ``preserve_first`` keeps ``first`` at index 0, else 0. A summary or memory
        block there is never the kept first message: the conversation's first message has
        left already (another writer, a middleware with ``preserve_first="system"``, put
        the block in its place), and a pinned block would never be folded again."""
        preserve = self._limits.preserve_first
        if first.summary or preserve is False:
            return 0
        if first.role in _INSTRUCTION_ROLES:
            return 1
        return 1 if preserve is True and not self._first_gone else 0

    def _name_call(self, key: str, anchor: int, keys: tuple[str, ...]) -> None:
        """Register the calls of ``key`` a message makes (a newer message's call of a name
        supersedes an older one's that is still unanswered)."""
        entry = self._named_calls.get(key)
        if entry is not None and entry[0] == anchor:
            return  # counted already, with every call of that name in ``keys``
        self._named_calls[key] = [anchor, keys.count(key)]

    def _answer(self, keys: tuple[str, ...]) -> int | None:
        """The anchor seq of the group whose calls a message with results for ``keys``
        answers (the first found), consuming the calls of a name it answers."""
        found: int | None = None
        for key in keys:
            if key.startswith(FUNCTION_CALL_KEY_PREFIX):
                entry = self._named_calls.get(key)
                if entry is None:
                    continue
                anchor = entry[0]
                entry[1] -= 1
                if entry[1] <= 0:
                    del self._named_calls[key]
            else:
                got = self._caller_of_call.get(key)
                if got is None:
                    continue
                anchor = got
            if found is None:
                found = anchor
        return found

    def over_limit(self) -> bool:
        """Whether the list is over the limit that starts pruning."""
        limits = self._limits
        if limits.max_tokens is not None:
            return self.total > limits.max_tokens
        return limits.may_prune(len(self.views))

    def fits(self) -> bool:
        """Whether the list is within what pruning aims for (always, in count mode, once
        nothing is over the limit)."""
        limits = self._limits
        if limits.max_tokens is not None:
            target = limits.target_tokens if limits.target_tokens is not None else limits.max_tokens
            return self.total <= target
        return not self.over_limit()

    def window_end(self) -> int | None:
        """Where the pruning window ends, or None when nothing is to be pruned."""
        return self.end_for_target() if self.over_limit() else None

    def end_for_target(self, reserve: int = 0, *, fold: bool = False) -> int | None:
        """Where the window must end to bring the list down to its target, pruning as
        little as possible, or None when no allowed window prunes anything.

        Args:
            reserve: Room to leave for a summary block that will be inserted: messages in
                count mode, tokens in token mode.
            fold: The summary blocks inside the window go too (they are folded into the
                new summary), so their tokens do not count as surviving.
        """
        limits = self._limits
        size = len(self.views)
        bound = min(size - 1, self._kept_turns_start())
        if limits.max_tokens is None:
            bound = min(size - max(limits.min_messages - reserve, 0), bound)
        # With several tries (a summary block of one message or two): the first whose
        # window brings the list within its bound; when none does, the first try's end, as
        # with one try, unless that window prunes nothing (it only folds a block) and a later
        # try's shrinks the list. An empty window of the first try (only a summary block
        # kept after the first message, where one block message cannot stand) so gives way
        # to the two-message block's window, while a reduced list still reduces to itself.
        tries = self._alternation(block=fold)
        fallback: int | None = None
        left = 0  # what the list holds after the first try's window (as it is: prunes nothing)
        for allowed in tries:
            on_human = limits.start_on_human
            latest = self._last_valid_end(bound, allowed, on_human=on_human)
            if limits.max_tokens is None and on_human:
                # First past min_messages, to a later question (a summary block may bridge
                # the kept first question and that one), as _end_past_min says.
                latest = self._end_past_min(latest, reserve, fold, allowed)
            if latest is None and on_human and self._opens_on_question():
                # An end at a later question would put two user messages together, so
                # none is valid: end where the roles alternate, as without start_on_human
                # (the history still starts on the kept first question).
                on_human = False
                latest = self._last_valid_end(bound, allowed, on_human=on_human)
            if latest is None:
                continue
            if limits.max_tokens is None:
                end = latest
            else:
                target = (
                    limits.target_tokens if limits.target_tokens is not None else limits.max_tokens
                )
                end = self._first_fitting_end(
                    latest, target - reserve, fold=fold, allowed=allowed, on_human=on_human
                )
            if len(tries) == 1:
                return end
            gone = self.pruned_positions(end, block=fold)
            if gone and self._within_bound(end, reserve, fold, gone):
                return end
            if fallback is None:
                fallback = end
                if gone:
                    left = self._left_after(end, reserve, fold, gone)
                else:
                    left = len(self.views) if limits.max_tokens is None else self.total
            elif gone and self._left_after(end, 2 * reserve, fold, gone) < left:
                # A later try's block may be two messages (a filler): its window is taken
                # when it leaves less than the first try's would even so. Compared with the
                # first try's list, not only when that try prunes nothing: else a list the
                # first try left ([block, answer, question] with the question over budget)
                # is reduced again by the later try (a reduced list must reduce to itself).
                return end
        return fallback

    def _end_past_min(
        self, latest: int | None, reserve: int, fold: bool, allowed: list[bool] | None
    ) -> int | None:
        """Count mode with ``start_on_human``: ``latest`` (the end that keeps
        ``min_messages``), unless the list stays over ``max_messages`` with it (or it is
        None); then the first end past it that brings the list within ``max_messages``, at
        a question or inside the newest turn, keeping fewer than ``min_messages``. When the
        newest turn holds fewer than ``min_messages``, the only ends at a question within
        ``min_messages`` are older ones, which kept every older turn's tool loop: the list
        stayed over the bound until the next question came.
        """
        if latest is not None and self._within_bound(latest, reserve, fold):
            return latest
        furthest = min(len(self.views) - 1, self._kept_turns_start())
        first = self._start + 1 if latest is None else latest + 1
        if first > furthest:
            return latest
        # Ends that split no group, from the newest down (see _last_valid_end), marked.
        seq, caller_seq = self._seq, self._caller_seq
        splits_none = [False] * (furthest + 1)
        lowest = self._next_seq
        for position in range(len(seq) - 1, first - 1, -1):
            caller = caller_seq[position]
            if caller != _NO_LINK and caller < lowest:
                lowest = caller
            if position <= furthest:
                splits_none[position] = lowest >= seq[position]
        pinned = self._pinned()
        views = self.views
        for end in range(first, furthest + 1):
            if (
                splits_none[end]
                and (views[end].role == HUMAN or seq[end] > pinned)
                and (allowed is None or allowed[end])
                and self._prunes_within_bound(end, reserve, fold)
            ):
                return end
        return latest

    def _prunes_within_bound(self, end: int, reserve: int, fold: bool) -> bool:
        """Whether a window ending at ``end`` prunes something and leaves the list within
        its bound (see :meth:`_within_bound`)."""
        gone = self.pruned_positions(end, block=fold)
        return bool(gone) and self._within_bound(end, reserve, fold, gone)

    def _within_bound(
        self, end: int, reserve: int, fold: bool, gone: list[int] | None = None
    ) -> bool:
        """Whether the list a window ending at ``end`` (pruning ``gone``, found when None)
        leaves is within the limit that starts pruning (``max_messages``, or the target
        tokens): with ``fold``, the summary blocks go and ``reserve`` (messages or tokens)
        of the new block come."""
        limits = self._limits
        if limits.max_tokens is None:
            if limits.max_messages is None:
                return True
            return self._left_after(end, reserve, fold, gone) <= limits.max_messages
        target = limits.target_tokens if limits.target_tokens is not None else limits.max_tokens
        return self._left_after(end, reserve, fold, gone) <= target

    def _left_after(self, end: int, reserve: int, fold: bool, gone: list[int] | None) -> int:
        """Messages (count mode) or tokens the list holds after a window ending at ``end``
        (pruning ``gone``, found when None), with ``fold``: its blocks gone, ``reserve`` of
        the new block come."""
        if gone is None:
            gone = self.pruned_positions(end, block=fold)
        folded = self.summary_positions(len(self.views)) if fold else []
        if self._limits.max_tokens is None:
            return len(self.views) - len(gone) - len(folded) + reserve
        tokens = self.tokens
        left = self.total - sum(tokens[p] for p in gone) - sum(tokens[p] for p in folded)
        return left + reserve

    def _opens_on_question(self) -> bool:
        """Whether the roles alternate and the kept first message is a question (an
        Anthropic, Bedrock or Gemini list opening on the user's first message, kept by
        ``preserve_first``): the list then starts on the user whatever the window."""
        return self.alternates and self._start == 1 and self.views[0].role == HUMAN

    def plain_cut(self) -> tuple[int, list[int], list[int]] | None:
        """``end_for_target()`` and ``split_window`` of that end, in one pass over the
        window, for the common list: roles that need not alternate, no thinking opener
        and no pinned group (the window then keeps what is not prunable and the newest
        question, nothing else). ``(end, gone, kept)``, with ``gone`` empty when nothing is
        to be pruned; None for any other list (ask the two instead).

        Invariant: for such a list, the result equals ``(end, *split_window(end))`` with
        ``end = end_for_target()``; ``tests/test_hot_path.py`` checks it through
        ``MessageReducer._drop_oldest`` against the policy path.
        """
        if self.alternates or self._opener != _NO_LINK or self._pinned_anchor() != _NO_LINK:
            return None
        limits = self._limits
        size = len(self.views)
        bound = min(size - 1, self._kept_turns_start())
        if limits.max_tokens is None:
            bound = min(size - max(limits.min_messages, 0), bound)
        latest = self._last_valid_end(bound)
        past_min = limits.max_tokens is None and limits.start_on_human
        if latest is None:
            # With start_on_human the end may have to pass min_messages (_end_past_min).
            return None if past_min else (0, [], [])
        start = self._start
        pinned = self._pinned()
        prunable, seq = self._prunable, self._seq
        gone: list[int] = []
        kept: list[int] = []
        if limits.max_tokens is None:
            # seq is sorted and holds pinned (when there is one): it is in the window when
            # it falls between the window's first seq and the seq at its end.
            if all(prunable[start:latest]) and not (seq[start] <= pinned < seq[latest]):
                gone = list(range(start, latest))  # the common window: all of it goes
            else:
                for position in range(start, latest):
                    if prunable[position] and seq[position] != pinned:
                        gone.append(position)
                    else:
                        kept.append(position)
            if past_min and not self._within_bound(latest, 0, False, gone):
                return None  # end_for_target may find an end past min_messages
            return latest, gone, kept
        # _first_fitting_end, classifying each position as the window passes it.
        target = limits.target_tokens if limits.target_tokens is not None else limits.max_tokens
        tokens = self.tokens
        last_result = self._last_result
        surviving = self.total
        on_human = limits.start_on_human
        views = self.views
        reach = _NO_LINK
        for end in range(start + 1, latest + 1):
            before = end - 1
            if prunable[before] and seq[before] != pinned:
                gone.append(before)
                surviving -= tokens[before]
                result = last_result.get(seq[before], _NO_LINK)
                if result > reach:
                    reach = result
            else:
                kept.append(before)
            if (
                surviving <= target
                and reach < seq[end]
                and (not on_human or views[end].role == HUMAN or seq[end] > pinned)
            ):
                return end, gone, kept
        return latest, gone, kept

    def _alternation(self, *, block: bool) -> list[list[bool] | None]:
        """The window ends each try allows, most preferred first: any end (None) when the
        list's roles need not alternate; else the ends that keep them alternating, first
        those where a summary block (``block``) is one message, then those where it is
        two."""
        if not self.alternates:
            return [None]
        if not block:
            allowed = self._alternating_ends("strict")
            bridge = self._bridge(block=False)
            if bridge != _NO_LINK:
                # Windows past the question keep the answer before it (see _bridge).
                question = bridge + 1
                allowed[question + 1 :] = self._alternating_ends("strict", bridge)[question + 1 :]
            return [allowed]
        return [self._alternating_ends("single"), self._alternating_ends("adaptive")]

    def _bridge(self, *, block: bool) -> int:
        """The message a window past the newest question keeps so that the roles still
        alternate, or -1.

        In a format whose roles alternate, a window that passes the newest human message
        (pruning older tool pairs of its turn) removes every prunable message before it,
        so a kept first message of the user's side would meet the question: two user
        messages in a row, and no such window was valid, so the newest turn's tool loop
        was never bounded. Such a window keeps the ai message right before the question
        instead (the previous turn's answer): ``[first, answer, question, newest pair]``.
        Not with a summary block (``block``), which bridges the two itself.
        """
        if block or not self.alternates:
            return _NO_LINK
        pinned = self._pinned()
        if pinned == _NO_LINK:
            return _NO_LINK
        question = bisect_left(self._seq, pinned)
        bridge = question - 1
        anchor = self._pinned_anchor()
        views = self.views
        if (
            bridge < self._start
            or views[bridge].role != AI
            or views[bridge].summary
            or not self._goes(bridge, pinned, anchor)
        ):
            return _NO_LINK
        for position in range(bridge - 1, -1, -1):
            if position >= self._start and self._goes(position, pinned, anchor):
                continue
            side = _SIDES.get(views[position].role)
            if side is not None:
                return bridge if side == HUMAN else _NO_LINK
        return _NO_LINK

    def _kept_bridge(self, end: int, block: bool) -> int:
        """The bridge a window ending at ``end`` keeps (see :meth:`_bridge`), or -1."""
        bridge = self._bridge(block=block)
        return bridge if bridge != _NO_LINK and end > bridge + 1 else _NO_LINK

    def _alternating_ends(self, mode: str, keep: int = _NO_LINK) -> list[bool]:
        """For each end ``e``, whether pruning the window ``[start, e)`` keeps the roles
        alternating wherever it joins two messages, and the list starting with the user.

        ``mode``: ``strict`` (no block is inserted), ``single`` (a summary block goes after
        the kept first message and must fit there as one message: its neighbours have the
        same side, or there is none before it and an assistant message after it) or
        ``adaptive`` (the block fits anywhere: one message or two). Summary blocks are
        folded by a summarising prune, so in those modes they neither stay nor count.
        ``keep``: a position that stays although the window holds it (the bridge).
        """
        views = self.views
        size = len(views)
        start = self._start
        block = mode != "strict"
        sides: list[str | None] = []
        for view in views:
            if block and view.summary:
                sides.append(None)
            else:
                sides.append(_SIDES.get(view.role))
        after: list[str | None] = [None] * (size + 1)
        for position in range(size - 1, -1, -1):
            after[position] = sides[position] or after[position + 1]
        last: str | None = None
        for position in range(start):
            last = sides[position] or last
        pinned = self._pinned()
        anchor = self._pinned_anchor()
        allowed = [False] * (size + 1)
        prefix_ok = True
        removed = False
        at_head = True
        for end in range(start, size + 1):
            allowed[end] = prefix_ok and _seam(last, after[end], removed, at_head and block, mode)
            if end == size:
                break
            if (end != keep and self._goes(end, pinned, anchor)) or (block and views[end].summary):
                removed = True
            elif sides[end] is not None:
                side = sides[end]
                prefix_ok = prefix_ok and _seam(last, side, removed, at_head and block, mode)
                last, removed, at_head = side, False, False
        return allowed

    def _pinned(self) -> int:
        """The sequence number of the newest human message (never pruned), or -1."""
        humans = self._human_seqs
        return humans[-1] if humans else _NO_LINK

    def _pinned_anchor(self) -> int:
        """The anchor of the newest human message's group, when it holds tool results
        (its call and the other results stay with it), else -1."""
        pinned = self._pinned()
        if pinned == _NO_LINK:
            return _NO_LINK
        return self._caller_seq[bisect_left(self._seq, pinned)]

    def _goes(self, position: int, pinned: int, anchor: int = _NO_LINK) -> bool:
        seq = self._seq[position]
        if not self._prunable[position] or seq == pinned:
            return False
        opener = self._opener
        if (
            opener != _NO_LINK
            and (seq == opener or self._caller_seq[position] == opener)
            and self._turn_open()
        ):
            return False  # the newest turn's thinking opener and its results
        return anchor == _NO_LINK or (seq != anchor and self._caller_seq[position] != anchor)

    def _turn_open(self) -> bool:
        """Whether the newest turn's tool loop goes on: the list does not end with a final
        model message (one that calls nothing). A finished turn is an earlier one once the
        next question comes, and its thinking block may go with the rest of its loop."""
        last = self.views[-1]
        return not (last.role == AI and not last.call_ids)

    def _kept_turns_start(self) -> int:
        """The position of the oldest of the ``keep_groups`` newest turns (or the end)."""
        wanted = self._limits.keep_groups
        humans = self._human_seqs
        if wanted == 0 or not humans:
            return len(self.views)
        first_kept = humans[-wanted] if len(humans) >= wanted else humans[0]
        return bisect_left(self._seq, first_kept)

    @property
    def start(self) -> int:
        """Where the pruning window starts (1 when the first message is preserved)."""
        return self._start

    def can_drop(self, position: int) -> bool:
        """Whether ``position`` may leave the list: a human or ai message after the kept
        first message, or a tool result linked to its call; never the newest human
        message, a summary block, or a message of the newest ``keep_groups`` turns."""
        return (
            self._goes(position, self._pinned(), self._pinned_anchor())
            and position < self._kept_turns_start()
            and not self._awaits_results(position)
        )

    def _awaits_results(self, position: int) -> bool:
        """Whether ``position`` is an ai message of a group with calls still unanswered
        and nothing after it but members of its group: its tool calls are running, and
        their results, when they come, would answer nothing if it left now (the plan never
        prunes it either, as the window never passes the newest message)."""
        views = self.views
        if views[position].role != AI:
            return False
        group = self.group_of(position)
        if any(p not in group for p in range(position, len(views))):
            return False
        calls = Counter(c for p in group if views[p].role == AI for c in views[p].call_ids)
        if not calls:
            return False
        answered = Counter(r for p in group for r in views[p].results_for)
        return bool(calls - answered)

    def why_kept(self, position: int) -> str:
        """Why :meth:`can_drop` is False for ``position`` (for error messages)."""
        view = self.views[position]
        if position < self._start:
            return "the first message, which preserve_first keeps"
        if view.summary:
            return "the summary block (a summarising drop folds it instead)"
        if self._seq[position] == self._pinned():
            return "the newest human message (the question being answered)"
        if self._prunable[position] and not self._goes(
            position, self._pinned(), self._pinned_anchor()
        ):
            return "in the group of the newest human message, which holds tool results"
        if self._prunable[position] and position >= self._kept_turns_start():
            return "in the newest keep_groups turns"
        opener = self._opener
        if (
            self._prunable[position]
            and opener in (self._seq[position], self._caller_seq[position])
            and self._turn_open()
        ):
            return (
                "the first model message of the newest turn, which holds its thinking block "
                "(or a result of its calls): the turn's later tool calls need it"
            )
        if self._prunable[position] and self._awaits_results(position):
            return "an ai message whose tool calls still wait for their results"
        if view.role == TOOL:
            return "a tool result whose call is not in the list (or cascade is off)"
        return f"a {view.role} message, which pruning never removes"

    def group_of(self, position: int) -> list[int]:
        """The positions that leave the list together with ``position``: an ai message and
        the tool results linked to it (ascending); just ``position`` otherwise."""
        seq = self._seq
        caller = self._caller_seq[position]
        if caller == _NO_LINK:
            caller = seq[position]
            first = position
        else:
            first = bisect_left(seq, caller)
            if first == len(seq) or seq[first] != caller:  # pragma: no cover - kept linked
                return [position]
        if caller not in self._last_result:
            return [position]
        last = bisect_left(seq, self._last_result[caller])
        members = [first]
        members += [p for p in range(first + 1, last + 1) if self._caller_seq[p] == caller]
        return members

    def splits_group(self, position: int) -> bool:
        """Whether inserting before ``position`` would separate a tool call from one of its
        results (a result at ``position`` or later whose call comes before it)."""
        if position == 0:
            return False
        seq = self._seq
        for later in range(position, len(seq)):
            caller = self._caller_seq[later]
            if caller != _NO_LINK and caller <= seq[position - 1]:
                return True
        return False

    def newest_human(self) -> int | None:
        """The position of the newest human message (never pruned), or None."""
        pinned = self._pinned()
        if pinned == _NO_LINK:
            return None
        return bisect_left(self._seq, pinned)

    def turn_starts(self) -> list[int]:
        """The positions where user turns start (human messages), oldest first."""
        return [bisect_left(self._seq, s) for s in self._human_seqs]

    def pruned_positions(self, end: int, *, block: bool = False) -> list[int]:
        """The positions a window ending at ``end`` prunes, ascending (``block``: a
        summary block will be inserted, as ``end_for_target(fold=True)`` planned)."""
        pinned, anchor = self._pinned(), self._pinned_anchor()
        keep = self._kept_bridge(end, block)
        return [p for p in range(self._start, end) if p != keep and self._goes(p, pinned, anchor)]

    def split_window(self, end: int, *, block: bool = False) -> tuple[list[int], list[int]]:
        """``(pruned_positions(end), kept_in_window(end))`` in one pass over the window:
        each position before ``end`` (from the start) is in exactly one of the two."""
        pinned, anchor = self._pinned(), self._pinned_anchor()
        keep = self._kept_bridge(end, block)
        gone: list[int] = []
        kept: list[int] = []
        prunable = self._prunable
        seq = self._seq
        goes = self._goes
        # _goes, inlined for the common positions: a message that is not prunable stays, and
        # without a thinking opener or a pinned group only the newest question stays too.
        plain = anchor == _NO_LINK and self._opener == _NO_LINK
        for position in range(self._start, end):
            if position == keep or not prunable[position] or seq[position] == pinned:
                kept.append(position)
            elif plain or goes(position, pinned, anchor):
                gone.append(position)
            else:
                kept.append(position)
        return gone, kept

    def summary_positions(self, end: int) -> list[int]:
        """The summary blocks before ``end`` (after the kept first message), ascending."""
        views = self.views
        return [p for p in range(self._start, end) if views[p].summary]

    def kept_in_window(self, end: int, *, block: bool = False) -> list[int]:
        """The positions before ``end`` that a window ending there keeps (never prunable,
        the newest human message, and the answer before it that keeps roles alternating)."""
        pinned, anchor = self._pinned(), self._pinned_anchor()
        keep = self._kept_bridge(end, block)
        return [
            p for p in range(self._start, end) if p == keep or not self._goes(p, pinned, anchor)
        ]

    def prune(
        self,
        end: int,
        gone: list[int] | None = None,
        kept: list[int] | None = None,
        *,
        block: bool = False,
    ) -> None:
        """Drop the prunable positions before ``end``, as :meth:`pruned_positions` lists
        (``block``: as a window planned for a summary block).

        ``gone`` and ``kept``, when given, are :meth:`pruned_positions` and
        :meth:`kept_in_window` of ``end`` (and ``block``) as the caller already computed
        them (for this state, unchanged since)."""
        start = self._start
        pinned = self._pinned()
        if gone is None or kept is None:
            gone, kept = self.split_window(end, block=block)
        # A window that passes the newest question changes what comes right after it: the
        # opener is then found again (as a fresh state reading the pruned list finds it).
        passes_question = pinned != _NO_LINK and end > bisect_left(self._seq, pinned)
        views, seq, last_result = self.views, self._seq, self._last_result
        if kept or self._named_calls or len(gone) < _FORGET_BY_RANGE:
            for p in gone:
                if views[p].call_ids:
                    self._forget(p)
                else:
                    last_result.pop(seq[p], None)  # what _forget does for a message without calls
        else:
            # The whole window goes, so what _forget does for each of its messages is to
            # drop every link anchored in it: found by the anchor's seq, one pass over each
            # table (the window's seqs are [low, high); no message that left before has a
            # link left).
            low = seq[start]
            high = seq[end] if end < len(seq) else self._next_seq
            caller_of_call = self._caller_of_call
            for call_id in [k for k, anchor in caller_of_call.items() if low <= anchor < high]:
                del caller_of_call[call_id]
            for anchor in [k for k in last_result if low <= k < high]:
                del last_result[anchor]
        if end > start:
            # Pruned turn starts are a run of the sorted list (only index 0 and the newest
            # human message, the last of the list, are ever kept).
            low = bisect_left(self._human_seqs, self._seq[start])
            high = bisect_left(self._human_seqs, self._seq[end])
            if high and self._human_seqs[high - 1] == pinned:
                high -= 1
            del self._human_seqs[low:high]
        columns: list[list[Any]] = [self.views, self._prunable, self._seq, self._caller_seq]
        if self.tokens:
            tokens = self.tokens
            self.total -= sum([tokens[p] for p in gone])
            columns.append(tokens)
            if self.raw is not None:
                columns.append(self.raw)
        # The window's survivors in its place, in each list (in place: no list of the state
        # is shared, each is the state's own). A window that keeps nothing (the common
        # prune) is one memmove per list, without building an empty list for each.
        if kept:
            for column in columns:
                column[start:end] = [column[p] for p in kept]
        else:
            for column in columns:
                del column[start:end]
        if passes_question:
            self._opener = self._opener_after(pinned)

    def _opener_after(self, pinned: int) -> int:
        """The seq of the message right after the newest question (seq ``pinned``), past
        any summary block, when it is an ai message holding a thinking block (the turn's
        opener, as :meth:`extend` marks it), else -1."""
        views = self.views
        after = bisect_left(self._seq, pinned) + 1
        while after < len(views) and views[after].summary:
            after += 1
        if after < len(views):
            view = views[after]
            if view.role == AI and view.thinking:
                return self._seq[after]
        return _NO_LINK

    def _follows_question(self, position: int) -> bool:
        """Whether the message at ``position`` comes right after the newest question, or
        after it and summary blocks only: a summarising prune puts its block between the
        kept question and the rest, and the ai message after the block still opens the
        question's turn (with a two-message block, the filler is a user message too)."""
        pinned = self._pinned()
        if pinned == _NO_LINK:
            return False
        views = self.views
        before = position - 1
        while before >= 0 and views[before].summary:
            before -= 1
        return before >= 0 and self._seq[before] == pinned

    def replace(self, position: int, view: MessageView, tokens: int = 0) -> None:
        """Swap in a message whose content changed (same role, id and tool calls)."""
        old = self.views[position]
        if (old.role, old.call_ids, old.results_for, old.joins) != (
            view.role,
            view.call_ids,
            view.results_for,
            view.joins,
        ):
            raise ValueError(f"position {position}: a replacement must keep role and tool links")
        self.views[position] = view
        if self.tokens:
            raw = self.raw
            if raw is not None:
                # A calibrated count keeps its calibration: the new text is counted at the
                # old message's measured-to-estimated ratio.
                before, counted = raw[position], self.tokens[position]
                raw[position] = tokens
                if before and counted != before:
                    tokens = -(-tokens * counted // before)
            self.total += tokens - self.tokens[position]
            self.tokens[position] = tokens

    # -- calibration to a provider-reported count ----------------------------------------

    def calibrate(self, anchor: int, report: UsageReport, shown: int) -> None:
        """Calibrate the counts of the messages before ``anchor`` to ``reported``, the
        input tokens a provider reported for the call that produced the response at
        ``anchor``, for which the model was shown messages the reducer counted ``shown``.

        When ``reported >= shown`` every message keeps its own count and the difference
        becomes :attr:`offset` (what the provider counts beyond the messages: a system
        prompt and tool schemas outside the list, framing, a tokenizer that counts more),
        which no prune removes, so the count never drops below the truth after a prune.
        When it is below, the counts before ``anchor`` are scaled by ``reported / shown``
        (rounded up along the running sum, so they add up to the scaled total exactly)
        and the offset is 0. Messages from ``anchor`` on keep their estimates. Only the
        counts change, so the plan reads them as always. Replaces any earlier calibration.

        Args:
            anchor: The position of the reporting response (``0..len``).
            report: What it reported (``report.tokens > 0``).
            shown: The reducer's count of what the model was shown (``>= 0``).
        """
        reported = report.tokens
        raw = self.raw if self.raw is not None else list(self.tokens)
        self.raw = raw
        if reported >= shown:
            offset, scale = reported - shown, 1.0
            tokens = list(raw)
        else:
            offset, scale = 0, reported / shown
            tokens = []
            running = rounded = 0
            for count in raw[:anchor]:
                running += count
                now = -(-running * reported // shown)  # ceil, in ints
                tokens.append(now - rounded)
                rounded = now
            tokens += raw[anchor:]
        self.tokens = tokens
        self.offset = offset
        self.total = sum(tokens) + offset
        self._anchor_seq = self._seq[anchor] if anchor < len(self._seq) else self._next_seq
        self.report = (report, shown, scale)

    def carry(self, other: PlanState, counts: Sequence[int | None], estimated_from: int) -> None:
        """Take over ``other``'s calibration (after a block was inserted, the list is
        planned afresh): ``counts`` per position (None: keep this state's own count, for a
        new message); ``estimated_from`` is where estimated counts start."""
        self.raw = list(self.tokens)
        self.tokens = [
            own if given is None else given for own, given in zip(self.raw, counts, strict=True)
        ]
        self.offset = offset = other.offset
        self.report = other.report
        self.total = sum(self.tokens) + offset
        seq = self._seq
        self._anchor_seq = seq[estimated_from] if estimated_from < len(seq) else self._next_seq

    @property
    def calibrated(self) -> bool:
        """Whether the counts are calibrated to a provider-reported count."""
        return self.raw is not None

    def estimated_from(self) -> int:
        """Where estimated counts start: the position of the reporting response (or of the
        first message after it, when it has left the list); 0 when not calibrated."""
        if self._anchor_seq == _NO_LINK:
            return 0
        return bisect_left(self._seq, self._anchor_seq)

    def _forget(self, position: int) -> None:
        seq = self._seq[position]
        calls = self.views[position].call_ids
        if calls:
            anchor = self._caller_seq[position]
            anchor = seq if anchor == _NO_LINK else anchor
            named = self._named_calls
            for call_id in calls:
                if self._caller_of_call.get(call_id) == anchor:
                    del self._caller_of_call[call_id]
                if named:
                    entry = named.get(call_id)
                    if entry is not None and entry[0] == anchor:
                        del named[call_id]
        self._last_result.pop(seq, None)

    def _last_valid_end(
        self, bound: int, allowed: list[bool] | None = None, *, on_human: bool | None = None
    ) -> int | None:
        """The largest end <= ``bound`` that splits no group (and that ``allowed`` allows,
        when given), if above ``start``.

        An end ``e`` splits no group when every linked member at ``e`` or later has its
        anchor at ``e`` or later: scanning down from the newest message, keep the lowest
        anchor seen and stop at the first position not past it.
        """
        seq = self._seq
        caller_seq = self._caller_seq
        lowest_caller = self._next_seq
        start = self._start
        if on_human is None:
            on_human = self._limits.start_on_human
        pinned = self._pinned()
        views = self.views
        top = len(seq) - 1
        if bound < top:
            # No end above ``bound`` is taken: the lowest anchor linked from above it, at C
            # speed (what the loop below would have gathered on its way down to it).
            anchors = set(caller_seq[bound + 1 :])
            anchors.discard(_NO_LINK)
            if anchors:
                lowest_caller = min(lowest_caller, min(anchors))
            top = bound
        for position in range(top, start, -1):
            caller = caller_seq[position]
            if caller != _NO_LINK and caller < lowest_caller:
                lowest_caller = caller
            if (
                position <= bound
                and lowest_caller >= seq[position]
                and (not on_human or views[position].role == HUMAN or seq[position] > pinned)
                and (allowed is None or allowed[position])
            ):
                return position
        return None

    def _first_fitting_end(
        self,
        latest: int,
        target: int,
        *,
        fold: bool = False,
        allowed: list[bool] | None = None,
        on_human: bool | None = None,
    ) -> int:
        """The smallest valid end whose survivors fit ``target``; ``latest`` if none does."""
        seq = self._seq
        tokens = self.tokens
        last_result = self._last_result
        surviving = self.total
        if on_human is None:
            on_human = self._limits.start_on_human
        pinned = self._pinned()
        anchor = self._pinned_anchor()
        views = self.views
        reach = _NO_LINK  # the furthest member seq of any group anchored inside the window
        bridge = self._bridge(block=fold)
        prunable = self._prunable
        goes = self._goes
        # Without a thinking opener or a pinned group, _goes is "prunable and not the newest
        # question": read inline (this loop runs over the window on every prune).
        plain = anchor == _NO_LINK and self._opener == _NO_LINK
        for end in range(self._start + 1, latest + 1):
            before = end - 1
            if bridge != _NO_LINK and before == bridge + 1:
                surviving += tokens[bridge]  # the window passes the question: it stays
            if (
                prunable[before] and seq[before] != pinned
                if plain
                else goes(before, pinned, anchor)
            ):
                surviving -= tokens[before]
                result = last_result.get(seq[before], _NO_LINK)
                if result > reach:
                    reach = result
            elif fold and views[before].summary:
                surviving -= tokens[before]
            if (
                surviving <= target
                and reach < seq[end]
                and (not on_human or views[end].role == HUMAN or seq[end] > pinned)
                and (allowed is None or allowed[end])
            ):
                return end
        return latest


#: The side of each role in a list whose roles alternate: a results-only user message is
#: the user's (Anthropic, Bedrock, Gemini send results as user messages).
_SIDES = {HUMAN: HUMAN, TOOL: HUMAN, AI: AI}


def _seam(before: str | None, after: str | None, removed: bool, block: bool, mode: str) -> bool:
    """Whether survivors of sides ``before`` and ``after`` may be neighbours: always when
    nothing was removed between them (the list was so) or nothing follows; where the
    summary block goes (``block``), when one message fits (``single``) or always
    (``adaptive``); elsewhere when the sides differ, or, at the start, when the first is
    the user's."""
    if after is None:
        return True
    if block:
        if mode == "adaptive":
            return True
        return before == after or (before is None and after == AI)
    if not removed:
        return True
    return after == HUMAN if before is None else before != after


def plan_prune(
    views: Sequence[MessageView],
    limits: PlanLimits,
    tokens: Sequence[int] | None = None,
) -> list[int]:
    """Positions to prune from a list, ascending (a fresh, one-shot plan).

    Args:
        views: One view per message, oldest first.
        limits: The limits to enforce.
        tokens: One count per message; required when ``limits.max_tokens`` is set.

    Raises:
        ValueError: Token mode without token counts.
    """
    if limits.max_tokens is not None and tokens is None:
        raise ValueError("token mode needs a token count per message")
    state = PlanState(limits)
    state.extend(views, tokens)
    end = state.window_end()
    return [] if end is None else state.pruned_positions(end)
