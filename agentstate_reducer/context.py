"""One reduce in progress: the :class:`~agentstate_reducer.policy.StepContext` the steps
work on, and the running summary.

:class:`ReduceContext` holds the list being changed, its plan state and what the steps
did. It remembers the original of every message a step rewrites (so the text that leaves
the list reaches the hooks as it was), and gathers every summarising prune of the
reduce (by any step) into one :class:`SummaryRequest`: the summary blocks folded and the
messages pruned, settled once, after the last step, with one ``summarize_fn`` call (or a
summary remembered for the same messages): **at most one call per reduce**.

Until then a *placeholder* block holds the summary's room in the list (its planned size:
``summary_room()`` tokens, or the block's messages in count mode), so later steps see the
list as it will be; a later summarising drop folds the placeholder into the same request.
The real block replaces it after the leading system and developer messages (a summary
never precedes an instruction message). A block that comes out larger than its room
leaves the list over its limit: then more is pruned, without another call, and those
messages are *carried* into the conversation's next summary (see
:meth:`~agentstate_reducer.summary.RunningSummary.carry`).

The context holds the parts of its reducer it uses (limits, reader, running summary,
rewrite memory), never the reducer itself: it reads messages through its own
:class:`~agentstate_reducer.reader.Reader`, the one the reducer planned with.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, overload

from ._calls import Call, Effects, LoopBlockedError, hook_name
from ._memory import namespace_key
from .errors import StepError, SummaryError
from .messages import fingerprint, id_of, read_view, view_of, with_id
from .planner import PlanLimits, PlanState
from .reader import Reader
from .recalled import is_memory
from .result import ReducerResult
from .rewrites import Rewrites
from .steps.contract import ReductionStep, StepReport
from .summary import RunningSummary, SummaryRequest, summary_of_block, summary_request
from .validate import DANGLING_CALL, ORPHAN_RESULT, find_problems

logger = logging.getLogger("agentstate_reducer.reducer")

_T = TypeVar("_T")


class ReadOnly(Sequence[_T]):
    """A read-only view of a list: what ``StepContext.messages`` and ``tokens`` return, so
    a step cannot remove a message behind the context's back (it would never reach the
    hooks)."""

    __slots__ = ("_items",)

    def __init__(self, items: list[_T]) -> None:
        self._items = items

    @overload
    def __getitem__(self, index: int) -> _T: ...

    @overload
    def __getitem__(self, index: slice) -> list[_T]: ...

    def __getitem__(self, index: int | slice) -> _T | list[_T]:
        return self._items[index]

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[_T]:
        return iter(self._items)

    def __repr__(self) -> str:
        return f"ReadOnly({self._items!r})"


#: Roles the summary block never goes before (the leading instruction messages).
_INSTRUCTIONS = frozenset({"system", "developer"})


@dataclass
class ReduceContext:
    """The list a reduce is changing (see the module docstring).

    Implements :class:`~agentstate_reducer.policy.StepContext`.
    """

    original: list[Any]
    state: PlanState
    namespace: Any
    limits: PlanLimits
    """The reducer's limits (the history budget, after the reply reserve)."""
    reader: Reader
    """Reads messages and counts their tokens as the reducer's plan does."""
    summaries: RunningSummary
    """The reducer's running summary (makes, remembers and places the block)."""
    rewrites: Rewrites
    """The reducer's memory of rewritten messages, whose originals were handed over."""
    inject_summary: bool
    """Whether a summary is injected into the list (``ReducerConfig.inject_summary``)."""
    view: bool = False
    """Only bound what a model sees: no summary, no hand-off (``MessageReducer.view``)."""
    keep_going: bool = False
    """A failing call of a step (``on_prune_error="keep"``) stops that step, not the reduce."""
    _messages: list[Any] = field(init=False)
    target: int | None = field(init=False)
    pruned: list[Any] = field(default_factory=list, init=False)
    summary: str | None = field(default=None, init=False)
    summary_messages: list[Any] = field(default_factory=list, init=False)
    folded_summaries: list[Any] = field(default_factory=list, init=False)
    reports: list[StepReport] = field(default_factory=list, init=False)
    tokens_before: int = field(init=False)
    _summary_folded: list[Any] = field(default_factory=list, init=False)
    """The summary blocks the reduce's summarising drops folded (oldest first)."""
    _summary_pruned: list[Any] = field(default_factory=list, init=False)
    """The messages the reduce's summarising drops pruned, as given (oldest drop first)."""
    _summarising: bool = field(default=False, init=False)
    _placeholder: list[Any] = field(default_factory=list, init=False)
    """The block holding the summary's room until it is made (empty when none)."""
    _placeholder_tokens: int = field(default=0, init=False)
    _originals: dict[int, Any] = field(default_factory=dict, init=False)
    _rewrites: list[Any] = field(default_factory=list, init=False)
    _elsewhere: set[int] = field(default_factory=set, init=False)
    """Blocks folded that were not in the list (so no caller removes them from it)."""
    _counted: dict[int, tuple[int, bool]] | None = field(default=None, init=False)
    """With calibrated counts: each message's count and whether it is estimated, by
    ``id``, so that planning afresh (after an insert) keeps the calibration."""
    _in_input_order: bool = field(default=True, init=False)
    """Whether ``pruned`` is known to be in input order already (see :meth:`_oldest_first`):
    True until a second prune, or a prune after a message was inserted."""
    _inserted: bool = field(default=False, init=False)
    """Whether a message not of the input (a block, a placeholder) was inserted."""

    def __post_init__(self) -> None:
        self._messages = list(self.original)
        limits = self.limits
        target = limits.target_tokens if limits.target_tokens is not None else limits.max_tokens
        self.target = target
        self.tokens_before = self.state.total
        if self.state.calibrated:
            start = self.state.estimated_from()
            self._counted = {
                id(message): (count, position >= start)
                for position, (message, count) in enumerate(
                    zip(self._messages, self.state.tokens, strict=True)
                )
            }

    # -- StepContext: reading ------------------------------------------------------------

    @property
    def messages(self) -> Sequence[Any]:
        """The list as it stands, read-only (change it through the operations below)."""
        return ReadOnly(self._messages)

    @property
    def tokens(self) -> Sequence[int]:
        """One token count per message (zeros in count mode), read-only."""
        return ReadOnly(self.state.tokens) if self.token_mode else (0,) * len(self._messages)

    def summary_room(self) -> int:
        """The room a summarising drop keeps for the summary block it will insert: tokens
        in token mode, messages in count mode; 0 when no block is injected."""
        if self.view or not self.inject_summary:
            return 0
        return self.summaries.reserve(self.state, self._messages)

    @property
    def total(self) -> int:
        return self.state.total

    @property
    def token_mode(self) -> bool:
        return self.limits.max_tokens is not None

    @property
    def budget(self) -> int | None:
        return self.limits.max_tokens

    @property
    def max_messages(self) -> int | None:
        return None if self.token_mode else self.limits.max_messages

    @property
    def min_messages(self) -> int:
        return self.limits.min_messages

    def fits(self) -> bool:
        return self.state.fits()

    def count(self, message: Any) -> int:
        """Tokens of one message (0 in count mode)."""
        return self.reader.count(message)

    def role(self, position: int) -> str:
        return self.state.views[position].role

    def is_summary(self, position: int) -> bool:
        return self.state.views[position].summary

    def can_drop(self, position: int) -> bool:
        return self.state.can_drop(position)

    def group(self, position: int) -> list[int]:
        return self.state.group_of(position)

    def newest_human(self) -> int | None:
        return self.state.newest_human()

    def turns(self) -> list[range]:
        starts = self.state.turn_starts()
        if not starts:
            return []  # no human message, so no user turn
        bounds = [*starts[1:], len(self._messages)]
        return [range(a, b) for a, b in zip(starts, bounds, strict=True)]

    def call(self, fn: Callable[..., Any], *args: Any) -> Call:
        return Call(fn, args)

    # -- StepContext: changing -----------------------------------------------------------

    def replace(self, position: int, message: Any) -> None:
        """Put a rewritten message (same role and tool links) at ``position``; one without
        an id takes the id of the message it replaces (in its own shape), so the rewrite is
        recognised on the next reduce (and LangGraph replaces by id, instead of appending
        it with a fresh one)."""
        current = self._messages[self._position(position)]
        current_id = id_of(current)
        if current_id is not None:
            message = with_id(message, current_id)
        view = view_of(message, f"the replacement for messages[{position}]")
        self.state.replace(position, view, self.count(message))
        if self._counted is not None:
            estimated = self._counted.get(id(current), (0, True))[1]
            self._counted[id(message)] = (self.state.tokens[position], estimated)
        self._originals[id(message)] = self._original_of(current)
        self._rewrites.append(message)  # held, so its id stays unique
        self._messages[position] = message
        if not self.view:
            # Its original reaches the hooks now: when the rewrite itself leaves later, it
            # is not handed over again (for any step, also one without its own rewrote()).
            self.rewrites.add(message, namespace_key(self.namespace))

    def insert(self, position: int, messages: Sequence[Any]) -> None:
        """Insert new messages before ``position``."""
        if position != len(self._messages):
            self._position(position)
        if position < self.state.start:
            raise ValueError(
                f"cannot insert at position {position}: the first message is kept "
                "(preserve_first) and stays first"
            )
        if self.state.splits_group(position):
            raise ValueError(
                f"cannot insert at position {position}: it is between a tool call and one "
                "of its results, which must stay together"
            )
        question = self.state.newest_human()
        if question is not None and position > question:
            raise ValueError(
                f"cannot insert at position {position}: it is after the newest human message "
                f"(position {question}), the question being answered"
            )
        block = list(messages)
        views = [view_of(message, f"inserted messages[{i}]") for i, message in enumerate(block)]
        problems = find_problems(views, format=self.state.format)
        unpaired = [p for p in problems if p.kind in (ORPHAN_RESULT, DANGLING_CALL)]
        if unpaired:
            first = unpaired[0]
            raise ValueError(
                f"cannot insert these messages: inserted messages[{first.index}]: "
                f"{first.detail}; an inserted block must pair its tool calls and results "
                "by itself"
            )
        self._messages = self._messages[:position] + block + self._messages[position:]
        self._inserted = True
        self._rebuild()

    def drop(self, positions: Iterable[int], *, summarize: bool = False) -> list[Any]:
        """Prune ``positions``, each with its tool group; see ``StepContext.drop``."""
        state = self.state
        gone: set[int] = set()
        for position in positions:
            self._position(position)
            if not state.can_drop(position):
                raise ValueError(
                    f"cannot drop position {position}: it is {state.why_kept(position)}"
                )
            gone.update(state.group_of(position))
        if not gone:
            return []
        summarize = summarize and not self.view
        inject = summarize and self.inject_summary
        room = self.summary_room() if inject else 0
        folded_at = state.summary_positions(len(self._messages)) if inject else []
        return self._take(sorted(gone), folded_at, summarize=summarize, room=room)

    def drop_oldest(self, *, summarize: bool = False) -> list[Any]:
        """Prune towards the target; with ``summarize``, ask for a summary of what goes
        (folding the summary block already in the list when the summary is injected)."""
        summarize = summarize and not self.view
        inject = summarize and self.inject_summary
        state = self.state
        room = self.summary_room() if summarize else 0
        end = state.end_for_target(room, fold=inject)
        if end is None:
            return []
        pruned_at, kept_at = state.split_window(end, block=inject)
        if not pruned_at:
            return []
        # Every summary block is folded, also one outside the window: a list holds one
        # running summary (a subgraph's list merged into its parent's appends its block).
        folded_at = state.summary_positions(len(self._messages)) if inject else []
        return self._take(
            pruned_at,
            folded_at,
            summarize=summarize,
            window_end=end,
            room=room if inject else 0,
            block=inject,
            kept_at=kept_at,
        )

    def _position(self, position: int) -> int:
        if not isinstance(position, int) or isinstance(position, bool):
            raise TypeError(f"a position must be an int, got {position!r}")
        if not 0 <= position < len(self._messages):
            raise ValueError(
                f"position {position} is out of range: the list has {len(self._messages)} messages"
            )
        return position

    def _take(
        self,
        pruned_at: list[int],
        folded_at: list[int],
        *,
        summarize: bool,
        window_end: int | None = None,
        room: int = 0,
        block: bool = False,
        kept_at: list[int] | None = None,
    ) -> list[Any]:
        """Remove the messages at ``pruned_at`` (and fold the summary blocks at
        ``folded_at``); with ``summarize`` they join the reduce's summary request, and with
        a ``room`` a placeholder that big stands for the block until it is made.
        ``kept_at``: what the window keeps, when the caller has it from ``split_window``."""
        messages = self._messages
        state = self.state
        start = state.start
        if window_end is not None and not folded_at:
            # Only the window changes: what it keeps, then the rest as it is.
            if kept_at is None:
                kept_at = state.kept_in_window(window_end, block=block)
            kept = [messages[p] for p in kept_at]
            kept += messages[window_end:]
        else:
            gone = set(pruned_at).union(folded_at)
            kept = [messages[p] for p in range(start, len(messages)) if p not in gone]
        originals = self._originals
        pruned = (
            [originals.get(id(messages[p]), messages[p]) for p in pruned_at]
            if originals
            else [messages[p] for p in pruned_at]
        )
        ours = {id(m) for m in self._placeholder}
        folded = [messages[p] for p in folded_at if id(messages[p]) not in ours]
        if len(folded) > 1:
            # A block already folded into another one here leaves with it, unsummarised.
            stale = self.summaries.superseded(folded)
            self.folded_summaries.extend(b for i, b in enumerate(folded) if i in stale)
            folded = [b for i, b in enumerate(folded) if i not in stale]
        self._messages = messages[:start] + kept
        if ours and not ours & {id(m) for m in self._messages}:
            self._placeholder = []  # folded: a new one goes in below
        if self.pruned or self._inserted:
            self._in_input_order = False
        self.pruned.extend(pruned)
        if summarize:
            self._summarising = True
            self._summary_folded.extend(folded)
            self._summary_pruned.extend(pruned)
            if room and not self._placeholder:
                self._hold_room(room)
        if folded or window_end is None or self._placeholder:
            self._rebuild()
        else:
            state.prune(window_end, pruned_at, kept_at, block=block)
        return pruned

    def _hold_room(self, room: int) -> None:
        """Put a placeholder block of ``room`` (tokens, or its messages in count mode)
        where the block will go, so the steps after this one plan with it."""
        at = self._block_position()
        self._placeholder = self.summaries.placeholder(self._messages, at, self.state.format)
        self._placeholder_tokens = room
        self._messages = self._messages[:at] + self._placeholder + self._messages[at:]
        self._inserted = True

    def _block_position(self) -> int:
        """Where the summary block goes: after the kept first message and the leading
        system and developer messages (a summary never precedes an instruction)."""
        messages = self._messages
        position = self.state.start
        while position < len(messages):
            view = read_view(messages[position])
            if view.summary or view.role not in _INSTRUCTIONS:
                break
            position += 1
        return position

    def _summary_request(
        self, position: int, folded: list[Any], pruned: list[Any], carried: list[Any]
    ) -> SummaryRequest:
        """The request for the reduce's summarising prunes, leaving out pruned messages the
        folded block already summarises (they still leave the list and reach the hooks),
        with the messages ``carried`` from an earlier overflow first."""
        summaries = self.summaries
        conversation = namespace_key(self.namespace)
        plain = pruned
        if folded:
            covered = summaries.covered(folded, pruned)
            plain = [m for i, m in enumerate(pruned) if i not in covered]
        # A request summarised before is a replay (get_state, a resume, a request sent
        # twice): made as it was, before any other list's newer block can stand in.
        for extra in [carried, []] if carried else [[]]:
            if summaries.remembers(conversation, [*folded, *extra, *plain]):
                return summary_request(position, folded, [*extra, *plain], summaries.block_id)
        # What a newer block may also say: the messages before the newest question (which
        # a prune never takes), or before the last message when there is none.
        question = self.state.newest_human()
        stop = question if question is not None else len(self._messages) - 1
        found = summaries.newer_than(conversation, folded, pruned, self._messages[position:stop])
        if found is not None:
            # The list holds older versions of the conversation's summary (a subgraph's list
            # from before its parent folded): they leave, and the newest one is folded.
            newer, further = found
            if further:
                # That block also says the first messages this list keeps: a longer list
                # sharing this one's start pruned them with it. They leave here too
                # (handed over, not summarised again), so both lists hold the same.
                self._take(list(range(position, position + further)), [], summarize=False)
            self.folded_summaries.extend(folded)
            self._elsewhere.add(id(newer))
            folded = [newer]
        if folded:
            covered = summaries.covered(folded, pruned)
            pruned = [m for i, m in enumerate(pruned) if i not in covered]
            if not pruned and len(folded) == 1:
                return SummaryRequest(position, [], [], made=folded[0])  # nothing new
        return summary_request(position, folded, [*carried, *pruned], summaries.block_id)

    # -- running the policy ----------------------------------------------------------------

    def run(self, steps: Sequence[ReductionStep]) -> Effects[None]:
        """Run ``steps`` in order until the list fits, settling each summary request."""
        for step in steps:
            if step.view_only:
                # Adds to what a model sees, on every view (fitting or not); a persistent
                # reduce never stores what it adds.
                if not self.view:
                    continue
            elif self.state.fits():
                continue
            tokens, length = self.state.total, len(self._messages)
            error: StepError | None = None
            try:
                outcome = step.apply(self)
                if inspect.isgenerator(outcome):
                    outcome = yield from self._run_generator(step, outcome)
            except StepError as exc:
                if not self.keep_going:
                    raise
                # Once per failing call; while the code is left alone after a failure, quieter.
                level = logging.DEBUG if exc.waiting else logging.WARNING
                logger.log(level, "%s; going on with the next step", exc)
                error, outcome = exc, []
            touched = _touched(step, outcome)
            self.reports.append(
                StepReport(
                    step=step.id,
                    touched=touched,
                    tokens_before=tokens,
                    tokens_after=self.state.total,
                    messages_before=length,
                    messages_after=len(self._messages),
                    error=error,
                )
            )
        yield from self._settle_summary()

    def _run_generator(
        self, step: ReductionStep, effects: Generator[Any, Any, Any]
    ) -> Effects[Any]:
        """Drive a generator step: each ``context.call`` it yields goes to the reduce's
        driver; a call that raises is thrown into the step, and becomes a
        :class:`StepError` if the step lets it out."""
        try:
            request = effects.send(None)
            while True:
                if not isinstance(request, Call):
                    raise TypeError(
                        f"step {step.id!r} yielded {request!r}; a step yields only "
                        "context.call(fn, *args)"
                    )
                outcome = yield request
                if outcome.error is None:
                    request = effects.send(outcome.value)
                    continue
                try:
                    request = effects.throw(outcome.error)
                except Exception as exc:
                    if exc is outcome.error:
                        raise StepError(
                            f"step {step.id!r}: {hook_name(request.fn)} raised "
                            f"{type(exc).__name__}: {exc}",
                            step=step.id,
                        ) from exc
                    raise
        except StopIteration as stop:
            return stop.value

    def _settle_summary(self) -> Effects[None]:
        """Make the reduce's one summary (one ``summarize_fn`` call at most) and put the
        block where the placeholder held its room; if it came out larger than that room,
        prune further without another call and carry those messages into the next
        summary. One reduce of a conversation at a time does this (the others wait, at
        most ``Handoff.wait`` seconds), so an overlapping reduce sees the block the first
        one made and does not summarise the same messages again."""
        if not self._summarising:
            return
        summaries = self.summaries
        conversation = namespace_key(self.namespace)
        if self._placeholder:
            ours = {id(m) for m in self._placeholder}
            self._messages = [m for m in self._messages if id(m) not in ours]
            self._placeholder = []
            self._rebuild()
        try:
            slot = yield from summaries.begin(conversation)
        except LoopBlockedError as blocked:
            slot, why = None, f": {blocked}"
        else:
            why = f" after Handoff.wait={summaries.wait:g} s"
        if slot is None:
            # As with a hook still handing messages over: keep them, prune nothing.
            busy = TimeoutError(
                f"another reduce of this conversation was still making its summary{why}"
            )
            raise SummaryError(
                f"{busy}; nothing was pruned (this list keeps those messages, so they are "
                "not summarised twice)",
                self._summary_pruned,
            ) from busy
        try:
            position = self._block_position()
            pruned = self._summary_pruned
            held = {fingerprint(m) for m in (*self._messages, *pruned)}
            carried = summaries.carried(conversation, held, self._summary_folded)
            request = self._summary_request(position, self._summary_folded, pruned, carried)
            if request.made is not None:
                text = summary_of_block(request.made)
            else:
                text = yield from summaries.summary_for(request, conversation)
                summaries.settle_carried(conversation, self._summary_folded)
            self._inject(request, text)
        finally:
            summaries.end(conversation, slot)
        if self.inject_summary and self.state.over_limit():
            # The block took more room than planned: no second call; what goes now is
            # summarised by the conversation's next summary.
            end = self.state.end_for_target(0)
            pruned_at = self.state.pruned_positions(end) if end is not None else []
            if pruned_at:
                over = self._take(pruned_at, [], summarize=False)
                owner = self.summary_messages[0] if self.summary_messages else None
                summaries.carry(conversation, over, owner)

    def _inject(self, request: SummaryRequest, text: str | None) -> None:
        if text is not None:
            self.summary = text
        if not self.inject_summary:
            return
        skip = {id(m) for m in self.summary_messages} | self._elsewhere
        self.folded_summaries.extend(m for m in request.folded if id(m) not in skip)
        if request.made is not None:
            block = [request.made]
            self.summary_messages = block
        elif text is None:
            block = request.folded  # nothing new to say: the old summary stays
        else:
            block = self.summaries.block(text, request, self._messages, self.state.format)
            self.summary_messages = block
            if len(block) == 1:
                self.summaries.remember_latest(namespace_key(self.namespace), block[0])
        at = request.position
        self._messages = self._messages[:at] + block + self._messages[at:]
        self._inserted = True
        self._rebuild()

    def _rebuild(self) -> None:
        """Plan afresh: a block inserted mid-list has no place in the incremental state.
        The list keeps the format it was read in (pruning may have left only messages that
        several formats read alike)."""
        # Once the input's index 0 was not kept (a block stood there), what pruning brings
        # to the front is not the conversation's first message: it is not pinned.
        state = PlanState(self.limits, first_gone=self.state.start == 0)
        state.formats = self.state.formats
        views, tokens = self.reader.read(self._messages, lambda i: f"messages[{i}]")
        state.extend(views, tokens)
        counted = self._counted
        if counted is not None:
            # Messages keep their calibrated counts; a new one (a summary block) is estimated.
            found = [counted.get(id(message)) for message in self._messages]
            estimated_from = next(
                (i for i, entry in enumerate(found) if entry is not None and entry[1]), len(found)
            )
            state.carry(
                self.state, [None if entry is None else entry[0] for entry in found], estimated_from
            )
        if self._placeholder and tokens is not None:
            # The placeholder counts what the block will take, not its own few tokens.
            first = self._placeholder[0]
            rest = {id(m) for m in self._placeholder[1:]}
            for position, message in enumerate(self._messages):
                if message is first:
                    state.replace(position, views[position], self._placeholder_tokens)
                elif id(message) in rest:
                    state.replace(position, views[position], 0)
        self.state = state

    def _oldest_first(self, messages: list[Any]) -> list[Any]:
        """``messages`` in input order (steps prune in their own order; messages a step
        inserted come after the input's, in the order they left)."""
        if len(messages) < 2:
            return messages
        if self._in_input_order and messages is self.pruned:
            # Fast path. Invariant: the messages of the input keep their relative order in
            # ``_messages`` (steps remove and replace in place; only blocks are inserted),
            # so the ascending positions of one prune, before anything was inserted, are
            # in input order (a rewrite stands for its original, at its original's place).
            # ``tests/test_incremental.py`` compares it with the sort below.
            return list(messages)
        where = {id(m): i for i, m in enumerate(self.original)}
        late = len(self.original)
        return sorted(messages, key=lambda m: where.get(id(m), late))

    def _original_of(self, message: Any) -> Any:
        return self._originals.get(id(message), message)

    # -- what came of it -----------------------------------------------------------------

    def rewritten(self) -> list[Any]:
        """The originals of the messages rewritten and still in the list."""
        if not self._originals:
            return []
        return [self._originals[id(m)] for m in self._messages if id(m) in self._originals]

    def handoff(self, is_rewrite: Callable[[Any], bool]) -> list[Any]:
        """What leaves the list, as it was: the pruned messages and the originals of the
        rewritten ones, without messages a step rewrote in an earlier reduce (their
        originals reached the hooks then)."""
        # A memory block is a block: never pruned as a message; a step rewriting one (a
        # truncation) does not hand its text over either, the store holds it already.
        rewritten = [m for m in self.rewritten() if not is_memory(m)]
        leaving = (*self._oldest_first(self.pruned), *rewritten)
        return [m for m in leaving if not is_rewrite(m)]

    def result(self) -> ReducerResult:
        return ReducerResult(
            surviving=self._messages,
            pruned=self._oldest_first(self.pruned),
            summary=self.summary,
            summary_messages=self.summary_messages,
            folded_summaries=self.folded_summaries,
            rewritten=self.rewritten(),
            steps=self.reports,
            tokens_before=self.tokens_before,
            tokens_after=self.state.total,
        )


def _touched(step: ReductionStep, outcome: Any) -> list[Any]:
    """What a step returned, as the list its report holds."""
    if outcome is None:
        return []
    if isinstance(outcome, (str, bytes)) or not isinstance(outcome, Sequence):
        raise TypeError(
            f"step {step.id!r} returned {type(outcome).__name__}; apply() returns the list "
            "of messages it touched (or None)"
        )
    return list(outcome)
