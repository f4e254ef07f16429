"""One reduce in progress: the :class:`~agentstate_reducer.policy.StepContext` the steps
work on, and the running summary.

:class:`ReduceContext` holds the list being changed, its plan state and what the steps
did. It remembers the original of every message a step rewrites (so the text that leaves
the list reaches the hooks as it was) and turns a summarising prune into a
:class:`SummaryRequest`: the summary blocks it folds and the messages it pruned. The
reducer settles each request (one ``summarize_fn`` call, or a summary remembered for the
same messages) and the context injects the block where the pruned block was. When the new
block leaves the list over its limit, more is pruned and folded into a further request
(a few rounds at most).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ._calls import Effects
from .hooks import namespace_key
from .messages import SUMMARY_HEADER, content_of, id_of
from .planner import PlanState
from .policy import ReductionStep, StepReport
from .result import ReducerResult
from .summary import SummaryRequest, summary_id

if TYPE_CHECKING:
    from .reducer import MessageReducer

#: How many times one reduce prunes further to make room for a summary block that came
#: out larger than the room planned for it.
_SUMMARY_ROUNDS = 3


@dataclass
class ReduceContext:
    """The list a reduce is changing (see the module docstring).

    Implements :class:`~agentstate_reducer.policy.StepContext`.
    """

    reducer: MessageReducer
    original: list[Any]
    state: PlanState
    namespace: Any
    messages: list[Any] = field(init=False)
    target: int = field(init=False)
    pruned: list[Any] = field(default_factory=list, init=False)
    summary: str | None = field(default=None, init=False)
    summary_messages: list[Any] = field(default_factory=list, init=False)
    folded_summaries: list[Any] = field(default_factory=list, init=False)
    reports: list[StepReport] = field(default_factory=list, init=False)
    tokens_before: int = field(init=False)
    _requests: list[SummaryRequest] = field(default_factory=list, init=False)
    _originals: dict[int, Any] = field(default_factory=dict, init=False)
    _rewrites: list[Any] = field(default_factory=list, init=False)
    _elsewhere: set[int] = field(default_factory=set, init=False)
    """Blocks folded that were not in the list (so no caller removes them from it)."""

    def __post_init__(self) -> None:
        self.messages = list(self.original)
        limits = self.reducer.limits
        target = limits.target_tokens if limits.target_tokens is not None else limits.max_tokens
        self.target = target or 0
        self.tokens_before = self.state.total

    # -- StepContext ---------------------------------------------------------------------

    def count(self, message: Any) -> int:
        """Tokens of one message (0 in count mode)."""
        return self.reducer._count_one(message)

    def replace(self, position: int, message: Any) -> None:
        """Put a rewritten message (same role and tool links) at ``position``."""
        from .messages import view_of

        current = self.messages[position]
        self._originals[id(message)] = self._original_of(current)
        self._rewrites.append(message)  # held, so its id stays unique
        view = view_of(message, f"messages[{position}]")
        self.state.replace(position, view, self.count(message))
        self.messages[position] = message

    def drop(self, *, summarize: bool) -> list[Any]:
        """Prune towards the target; with ``summarize``, ask for a summary of what goes
        (folding the summary block already in the list when the summary is injected)."""
        inject = summarize and self.reducer.config.inject_summary
        state = self.state
        reserve = self.reducer.summaries.reserve(state, self.messages) if inject else 0
        end = state.end_for_target(reserve, fold=inject)
        if end is None:
            return []
        pruned_at = state.pruned_positions(end)
        if not pruned_at:
            return []
        messages = self.messages
        # Every summary block is folded, also one outside the window: a list holds one
        # running summary (a subgraph's list merged into its parent's appends its block).
        folded_at = state.summary_positions(len(messages)) if inject else []
        gone = set(pruned_at).union(folded_at)
        start = state.start
        kept = [messages[p] for p in range(start, len(messages)) if p not in gone]
        pruned = [self._original_of(messages[p]) for p in pruned_at]
        folded = [messages[p] for p in folded_at]
        if len(folded) > 1:
            # A block already folded into another one here leaves with it, unsummarised.
            stale = self.reducer.summaries.superseded(folded)
            self.folded_summaries.extend(b for i, b in enumerate(folded) if i in stale)
            folded = [b for i, b in enumerate(folded) if i not in stale]
        self.messages = messages[:start] + kept
        self.pruned.extend(pruned)
        if summarize:
            # The block goes first after the kept first message: it stands for what came
            # before everything the window keeps (a mid-list system message, the question).
            self._requests.append(self._summary_request(start, folded, pruned))
        if folded:
            self._rebuild()
        else:
            state.prune(end)
        return pruned

    def _summary_request(
        self, position: int, folded: list[Any], pruned: list[Any]
    ) -> SummaryRequest:
        """The request for a summarising prune, leaving out pruned messages the folded
        block already summarises (they still leave the list and reach the hooks)."""
        summaries = self.reducer.summaries
        newer = summaries.newer_than(namespace_key(self.namespace), folded, pruned)
        if newer is not None:
            # The list holds older versions of the conversation's summary (a subgraph's list
            # from before its parent folded): they leave, and the newest one is folded.
            self.folded_summaries.extend(folded)
            self._elsewhere.add(id(newer))
            folded = [newer]
        if folded:
            covered = summaries.covered(folded, pruned)
            pruned = [m for i, m in enumerate(pruned) if i not in covered]
            if not pruned and len(folded) == 1:
                return SummaryRequest(position, [], [], made=folded[0])  # nothing new
        return _request(position, folded, pruned)

    # -- running the policy ----------------------------------------------------------------

    def run(self, steps: Sequence[ReductionStep]) -> Effects[None]:
        """Run ``steps`` in order until the list fits, settling each summary request."""
        for step in steps:
            if self.state.fits():
                break
            tokens, length = self.state.total, len(self.messages)
            touched = step.apply(self)
            yield from self._settle_summaries()
            self.reports.append(
                StepReport(
                    step=step.id,
                    touched=touched,
                    tokens_before=tokens,
                    tokens_after=self.state.total,
                    messages_before=length,
                    messages_after=len(self.messages),
                )
            )

    def _settle_summaries(self) -> Effects[None]:
        rounds = 0
        while self._requests:
            request = self._requests.pop(0)
            if request.made is not None:
                text = _summary_of(request.made)
            else:
                text = yield from self.reducer.summaries.summary_for(
                    request, namespace_key(self.namespace)
                )
            self._inject(request, text)
            rounds += 1
            if (
                rounds < _SUMMARY_ROUNDS
                and self.reducer.config.inject_summary
                and self.state.over_limit()
            ):
                self.drop(summarize=True)  # the block took more room than planned

    def _inject(self, request: SummaryRequest, text: str | None) -> None:
        if text is not None:
            self.summary = text
        if not self.reducer.config.inject_summary:
            return
        skip = {id(m) for m in self.summary_messages} | self._elsewhere
        self.folded_summaries.extend(m for m in request.folded if id(m) not in skip)
        if request.made is not None:
            block = [request.made]
            self.summary_messages = block
        elif text is None:
            block = request.folded  # nothing new to say: the old summary stays
        else:
            block = self.reducer.summaries.block(text, request, self.messages)
            self.summary_messages = block
            if len(block) == 1:
                self.reducer.summaries.remember_latest(namespace_key(self.namespace), block[0])
        at = request.position
        self.messages = self.messages[:at] + block + self.messages[at:]
        self._rebuild()

    def _rebuild(self) -> None:
        """Plan afresh: a block inserted mid-list has no place in the incremental state."""
        state = PlanState(self.reducer.limits)
        views, tokens = self.reducer._read(self.messages, lambda i: f"messages[{i}]")
        state.extend(views, tokens)
        self.state = state

    def _original_of(self, message: Any) -> Any:
        return self._originals.get(id(message), message)

    # -- what came of it -----------------------------------------------------------------

    def rewritten(self) -> list[Any]:
        """The originals of the messages rewritten and still in the list."""
        return [self._originals[id(m)] for m in self.messages if id(m) in self._originals]

    def handoff(self, is_rewrite: Callable[[Any], bool]) -> list[Any]:
        """What leaves the list, as it was: the pruned messages and the originals of the
        rewritten ones, without messages a step rewrote in an earlier reduce (their
        originals reached the hooks then)."""
        return [m for m in (*self.pruned, *self.rewritten()) if not is_rewrite(m)]

    def result(self) -> ReducerResult:
        return ReducerResult(
            surviving=self.messages,
            pruned=self.pruned,
            summary=self.summary,
            summary_messages=self.summary_messages,
            folded_summaries=self.folded_summaries,
            rewritten=self.rewritten(),
            steps=self.reports,
            tokens_before=self.tokens_before,
            tokens_after=self.state.total,
        )


def _request(position: int, folded: list[Any], pruned: list[Any]) -> SummaryRequest:
    """The summary request of a prune, recognising a block already made for it.

    A folded block whose id is the id this prune's block would get (from the other folded
    blocks and the pruned messages) is that block, made by the same reducer elsewhere: a
    subgraph sharing the channel summarises, then its parent merges its list and prunes the
    same messages. It is used as it is, without another ``summarize_fn`` call.
    """
    for index, block in enumerate(folded):
        others = folded[:index] + folded[index + 1 :]
        if id_of(block) is not None and id_of(block) == summary_id(others, pruned):
            return SummaryRequest(position, others, pruned, made=block)
    return SummaryRequest(position, folded, pruned)


def _summary_of(block: Any) -> str | None:
    """The summary text of a block the reducer made (its header line removed)."""
    content = content_of(block)
    if not isinstance(content, str):
        return None
    return content.removeprefix(SUMMARY_HEADER)
