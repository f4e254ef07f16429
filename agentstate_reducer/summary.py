"""Running-summary blocks: what they look like, how they are marked, and their ids.

A summarising prune replaces the pruned messages, and the summary block already in the
list, with one new block: by default a single message whose text is
:data:`~agentstate_reducer.messages.SUMMARY_HEADER` followed by the summary, in the list's
own format and kind of message (LangChain messages in a LangChain list, dicts with the
list's own keys and role names in a dict list, LangChain's serialised form in a serialised
list, a ``types.Content`` among google-genai objects, a ``ChatMessage`` among llama-index
ones, ...). It is a user message, except in formats whose roles alternate (Anthropic,
Bedrock, Gemini): there its role differs from its neighbours' (an assistant message after
a kept first user message), and where no single role does, the block is two messages, the
summary and a marked filler of the other role (see
:func:`~agentstate_reducer.messages.block_sides`).

Marking: every summary message carries LangChain's marker for messages the harness added,
``lc_source = "summarization"`` (in ``additional_kwargs`` for LangChain messages and the
serialised form, as a top-level key in LangChain-shaped dicts, which
``convert_to_messages`` moves into ``additional_kwargs``), except in formats a provider
receives as they are, which reject unknown keys (plain OpenAI-format dicts, Anthropic,
Responses, Gemini, Bedrock, llama-index): there the header line is the mark. UIs and later
reduces recognise summaries by :func:`~agentstate_reducer.messages.is_summary`.

Ids are derived from what was summarised (:func:`summary_id`), so replaying the same
reduce (LangGraph's ``get_state``, a resume after ``interrupt()``) gives the same ids.

A list of other objects needs ``summary_message_factory``; its messages must be marked
(:func:`mark_summary` does it for dicts and LangChain messages).
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._calls import Call, Effects, Outage, Signal, Wait
from ._memory import Bounded
from .errors import SummaryError
from .messages import (
    AI,
    HUMAN,
    SUMMARY_HEADER,
    SUMMARY_SOURCE,
    MessageFormat,
    content_of,
    detect,
    fingerprint,
    id_of,
    is_serialized,
    is_summary,
    read_view,
    reader_of,
    slots_of,
    with_id,
    with_slots,
)
from .messages.chat import ChatFormat

logger = logging.getLogger("agentstate_reducer.reducer")

if TYPE_CHECKING:
    from .config import ReducerConfig
    from .planner import PlanLimits, PlanState

__all__ = [
    "SUMMARY_HEADER",
    "SUMMARY_ID_PREFIX",
    "RunningSummary",
    "SummaryBuilder",
    "SummaryMemory",
    "SummaryRequest",
    "default_summary_builder",
    "is_summary",
    "mark_summary",
    "summary_id",
    "summary_text",
]

SUMMARY_ID_PREFIX = "summary-"
"""How the ids :func:`summary_id` gives injected summary messages begin."""

SummaryBuilder = Callable[[str, int], list[Any]]
"""``(summary, pruned_count) -> block``: the messages a summary is injected as."""


def summary_text(summary: str) -> str:
    """The text of the default summary message: the header line, then the summary."""
    return SUMMARY_HEADER + summary


def summary_id(folded: Sequence[Any], pruned: Sequence[Any]) -> str:
    """A deterministic id for the block that summarises ``folded`` summaries and ``pruned``.

    Derived from the messages' fingerprints (role, id, content, tool calls), so the same
    reduce gives the same id every time and different conversations different ids.
    """
    digest = hashlib.sha256()
    for message in (*folded, *pruned):
        digest.update(fingerprint(message).encode())
        digest.update(b"\x00")
    return SUMMARY_ID_PREFIX + digest.hexdigest()[:32]


def mark_summary(message: Any) -> Any:
    """A copy of ``message`` marked as a summary.

    LangChain messages get ``additional_kwargs["lc_source"] = "summarization"``, LangChain's
    serialised form the same in ``data.additional_kwargs``, dicts a top-level ``lc_source``
    key (which ``convert_to_messages`` moves into ``additional_kwargs``). A plain
    OpenAI-format dict sent to a provider as it is should not carry that key: start its
    text with :data:`~agentstate_reducer.messages.SUMMARY_HEADER` instead, which marks it
    as well (then it is returned unchanged). A message of a format without a metadata slot
    a provider accepts (Anthropic, Responses, Gemini, Bedrock, llama-index) gets the header
    line in front of its first text.

    Raises:
        TypeError: ``message`` is another kind of object, or a message of such a format
            without text.
    """
    fmt = reader_of(message)
    if not isinstance(fmt, ChatFormat):
        if is_summary(message):
            return message
        texts = [slot for slot in slots_of(message) if slot.kind == "text"]
        if not texts:
            raise TypeError(
                f"cannot mark a {fmt.name} message without text as a summary: its format has "
                f"no metadata slot, so a summary is marked by its first line, {SUMMARY_HEADER!r}"
            )
        return with_slots(message, {texts[0].path: SUMMARY_HEADER + texts[0].text})
    if isinstance(message, Mapping):
        if is_summary(message):
            return message
        if is_serialized(message):
            data = dict(message["data"])
            data["additional_kwargs"] = {
                **(data.get("additional_kwargs") or {}),
                "lc_source": SUMMARY_SOURCE,
            }
            return {**message, "data": data}
        return {**message, "lc_source": SUMMARY_SOURCE}
    extra = getattr(message, "additional_kwargs", None)
    model_copy = getattr(message, "model_copy", None)
    if isinstance(extra, Mapping) and callable(model_copy):
        return model_copy(update={"additional_kwargs": {**extra, "lc_source": SUMMARY_SOURCE}})
    raise TypeError(
        f"cannot mark a {type(message).__name__} as a summary: build summary messages that "
        "carry additional_kwargs['lc_source'] == 'summarization' (or dicts or LangChain "
        "messages, which mark_summary can mark)"
    )


BlockBuilder = Callable[[str, str], list[Any]]
"""``(summary, block_id) -> block``: how the reducer builds a block in a list's kind."""


def default_summary_builder(
    messages: Sequence[Any], position: int = 0, format: MessageFormat | None = None
) -> BlockBuilder:
    """A builder of the summary block in the format and kind ``messages`` hold, for a block
    placed before ``messages[position]`` (see each format's
    :meth:`~agentstate_reducer.messages.MessageFormat.summary_block`: in formats whose roles
    alternate, the block's role fits its neighbours).

    Args:
        messages: The list the block goes into.
        position: Where it goes.
        format: The list's format (default: told from ``messages``).

    Raises:
        TypeError: The list holds objects the reducer cannot construct, or mixes formats.
    """
    fmt = format if format is not None else detect(messages)
    before, after = _sides_around(messages, position)

    def build(summary: str, block_id: str) -> list[Any]:
        return fmt.summary_block(summary_text(summary), block_id, messages, before, after)

    return build


_SIDES = {HUMAN: HUMAN, "tool": HUMAN, AI: AI}


def _sides_around(messages: Sequence[Any], position: int) -> tuple[str | None, str | None]:
    """The sides (``human``/``ai``) of the messages a block at ``position`` goes between
    (system and other roles skipped; None where there is none)."""
    before = after = None
    for message in reversed(messages[:position]):
        before = _SIDES.get(read_view(message).role)
        if before is not None:
            break
    for message in messages[position:]:
        view = read_view(message)
        after = None if view.summary else _SIDES.get(view.role)
        if after is not None:
            break
    return before, after


def factory_builder(
    factory: SummaryBuilder, *, dict_ids: bool
) -> Callable[[str, str, int], list[Any]]:
    """Wrap a user's ``summary_message_factory``: its messages are marked as summaries when
    :func:`is_summary` does not already recognise them, and get deterministic ids when
    they lack one (dicts only when ``dict_ids``: the list's own dicts carry ids).

    The returned builder raises ``TypeError`` when the factory returns something other
    than a list, or messages :func:`is_summary` does not recognise and
    :func:`mark_summary` cannot mark.
    """

    def build(summary: str, block_id: str, pruned_count: int) -> list[Any]:
        block = factory(summary, pruned_count)
        if not isinstance(block, list) or not block:
            raise TypeError(
                f"summary_message_factory must return a non-empty list of messages, got {block!r}"
            )
        out = []
        for index, message in enumerate(block):
            if not is_summary(message):
                message = mark_summary(message)
            if dict_ids or not isinstance(message, Mapping) or is_serialized(message):
                message = with_id(message, block_id if index == 0 else f"{block_id}-{index}")
            out.append(message)
        return out

    return build


# -- making the running summary ---------------------------------------------------------

#: Summaries remembered per conversation and content (see :class:`SummaryMemory`).
SUMMARY_MEMORY = 256
#: The newest summary blocks remembered per conversation (see RunningSummary.newer_than).
RECENT_BLOCKS = 8

#: Messages owed to one conversation's next summary (see :meth:`RunningSummary.carry`).
CARRIED_LIMIT = 1_000


@dataclass
class SummaryRequest:
    """What one summarising prune asks ``summarize_fn`` to summarise.

    Attributes:
        position: Where the block goes in the list (after the kept first message).
        folded: The summary messages it replaces, oldest first.
        pruned: The pruned messages, as they were given, oldest first.
        made: A block already made for exactly this request (found in the list), to use
            as it is.
    """

    position: int
    folded: list[Any]
    pruned: list[Any]
    made: Any = None

    @property
    def messages(self) -> list[Any]:
        """What ``summarize_fn`` receives: the folded summary first, then the pruned."""
        return [*self.folded, *self.pruned]


def summary_request(
    position: int,
    folded: list[Any],
    pruned: list[Any],
    block_id: Callable[[Any], str | None] = id_of,
) -> SummaryRequest:
    """The summary request of a prune, recognising a block already made for it.

    A folded block whose id (``block_id``; :meth:`RunningSummary.block_id` knows the
    blocks of formats that carry none) is the id this prune's block would get (from the
    other folded blocks and the pruned messages) is that block, made by the same reducer
    elsewhere: a subgraph sharing the channel summarises, then its parent merges its list
    and prunes the same messages. It is used as it is, without another ``summarize_fn``
    call.
    """
    for index, block in enumerate(folded):
        ident = block_id(block)
        others = folded[:index] + folded[index + 1 :]
        if ident is not None and ident == summary_id(others, pruned):
            return SummaryRequest(position, others, pruned, made=block)
    return SummaryRequest(position, folded, pruned)


def summary_of_block(block: Any) -> str | None:
    """The summary text of a block the reducer made (its header line removed)."""
    content = content_of(block)
    if isinstance(content, str):
        return content.removeprefix(SUMMARY_HEADER)
    texts = [slot.text for slot in slots_of(block) if slot.kind == "text"]
    return texts[0].removeprefix(SUMMARY_HEADER) if texts else None


class SummaryMemory(Bounded[tuple[Hashable, str], str | None]):
    """The summaries a reducer made, keyed by conversation (namespace) and by the content
    of what was summarised, never by message ids alone: LangGraph replays the same writes
    (``get_state``, a resume), which must not call the LLM again, while another
    conversation reusing ids, or an edited message, must get a summary of its own. Bounded
    (the least recently used forgotten first); safe to share between threads."""

    def __init__(self, size: int = SUMMARY_MEMORY) -> None:
        super().__init__(size)

    @staticmethod
    def key(namespace_key: Hashable, messages: Sequence[Any]) -> tuple[Hashable, str]:
        digest = hashlib.sha256("\x00".join(map(fingerprint, messages)).encode()).hexdigest()
        return (namespace_key, digest)


class RunningSummary:
    """How one reducer makes its running summary: calls ``summarize_fn`` (or reuses what
    :class:`SummaryMemory` holds), builds the block in the list's kind, and says how much
    room a summarising prune leaves for it."""

    def __init__(
        self,
        config: ReducerConfig,
        limits: PlanLimits,
        count: Callable[[Any], int],
        memory: SummaryMemory,
    ) -> None:
        self._config = config
        self._limits = limits
        self._count = count
        self.memory = memory
        self._factory_size: int | None = None
        self.outage = Outage(config.retry_backoff)
        """After ``summarize_fn`` fails, it is not called again for a while (see Outage)."""
        # What each block made here summarised: the ids of the blocks it folded and the
        # fingerprints of the messages it pruned (bounded, newest kept). A list merged back
        # from before a fold (a subgraph resumed after an interrupt returns the list it
        # started with) brings old blocks and already summarised messages next to the block
        # that covers them; they leave with it instead of being summarised twice.
        self._lineage: OrderedDict[str, tuple[tuple[str, ...], frozenset[str]]] = OrderedDict()
        # The newest blocks per conversation, newest first: a subgraph sharing its parent's
        # messages prunes the list the parent had before its fold (or the parent's put,
        # run late, prunes the list its subgraph had before its folds); one of those
        # blocks already says it.
        self._latest: OrderedDict[Hashable, tuple[Any, ...]] = OrderedDict()
        # Per conversation: (the block that owes them, message), oldest first (see carry).
        self._carried: OrderedDict[Hashable, list[tuple[str | None, Any]]] = OrderedDict()
        # The id of each block made here whose format carries none (Anthropic, Gemini,
        # Bedrock, Responses, llama-index, plain OpenAI dicts), by the block's fingerprint;
        # None when two blocks share one (the same text for two prunes: not told apart).
        self._ids_by_mark: OrderedDict[str, str | None] = OrderedDict()
        # The conversations a reduce is making a summary for, each with the signal it
        # sets when done: another reduce of the same conversation waits, then sees that
        # block (so overlapping reduces summarise each message once).
        self._settling: dict[Hashable, Signal] = {}
        self._lineage_lock = threading.Lock()

    def share(self, other: RunningSummary) -> None:
        """Use ``other``'s memories from now on: the summaries made, what each block
        folded, the newest block and the debt per conversation, the summary being made per
        conversation, and the summarizer's outage (``MessageReducer.with_config``: a
        reducer that differs in a setting or two still speaks for the same conversations)."""
        self.memory = other.memory
        self.outage = other.outage
        self._lineage = other._lineage
        self._latest = other._latest
        self._carried = other._carried
        self._ids_by_mark = other._ids_by_mark
        self._settling = other._settling
        self._lineage_lock = other._lineage_lock

    def block_id(self, block: Any) -> str | None:
        """The id of a summary block: its own, or for a block of a format that carries none
        the id it was made with here (None when unknown, or when two blocks made here
        look alike)."""
        ident = id_of(block)
        if isinstance(ident, str):
            return ident
        return self._ids_by_mark.get(fingerprint(block))

    def remember_latest(self, namespace_key: Hashable, block: Any) -> None:
        """Record ``block`` as the newest summary of the conversation ``namespace_key``
        (the blocks made before it stay candidates for :meth:`newer_than`: a replay of
        an older reduce, a put that LangGraph's ``durability="async"`` ran late or a
        fork's first put, rebuilds an older block, and the newer ones still speak for
        the lists that went on)."""
        block_id = self.block_id(block)
        with self._lineage_lock:
            recent = self._latest.get(namespace_key, ())
            others = (b for b in recent if self.block_id(b) != block_id)
            self._latest[namespace_key] = (block, *others)[:RECENT_BLOCKS]
            self._latest.move_to_end(namespace_key)
            while len(self._latest) > SUMMARY_MEMORY:
                self._latest.popitem(last=False)

    def newer_than(
        self,
        namespace_key: Hashable,
        folded: Sequence[Any],
        pruned: Sequence[Any],
        following: Sequence[Any] = (),
    ) -> tuple[Any, int] | None:
        """The most recent of the conversation's newest blocks (up to
        :data:`RECENT_BLOCKS`) that is the summary of this same prune made on a sibling
        list (a subgraph's, or the next put of the same run that LangGraph's
        ``durability="async"`` stored first): every block of ``folded`` was folded into
        it, and everything it summarises is in ``folded``, in ``pruned``, or among the
        first messages of ``following`` (what this list keeps after the block's place: a
        longer list sharing this one's start pruned further). Returns the block and how
        many messages of ``following`` it says (they leave with this prune too). Else
        None: a fork from an older checkpoint keeps its own summary (the newer ones speak
        of messages it never had), and another conversation never gets text about
        messages it does not hold."""
        with self._lineage_lock:
            recent = self._latest.get(namespace_key, ())
        if not recent:
            return None
        kinds = {isinstance(m, dict) for m in (*folded, *pruned)}
        mine = {self.block_id(b) for b in folded}
        _, held = self._walk(folded)
        held |= set(map(fingerprint, pruned))
        # The most recently made block that is this prune: recency only orders the
        # candidates (a replayed or forked list makes an older block the most recent);
        # what decides is the lineage, which _prune_of checks.
        for block in recent:
            if self.block_id(block) in mine or kinds - {isinstance(block, dict)}:
                continue  # this list's own block, or a block of the other list kind
            found = self._prune_of(block, folded, held, following)
            if found is not None:
                return block, found
        return None

    def _prune_of(
        self, block: Any, folded: Sequence[Any], held: set[str], following: Sequence[Any]
    ) -> int | None:
        """How many of ``following`` ``block`` says, when it folded every block of
        ``folded`` and says nothing but ``held`` and a run of ``following``'s first
        messages; else None."""
        kind = isinstance(block, dict)
        older, says = self._walk([block])
        if not says or not all(self.block_id(b) in older for b in folded):
            return None
        rest = says - held
        further = 0
        for message in following:
            if not rest:
                break
            mark = fingerprint(message)
            if isinstance(message, dict) != kind or mark not in rest:
                return None  # the block says a message this list keeps further on
            rest.discard(mark)
            further += 1
        return None if rest else further

    def _walk(self, blocks: Sequence[Any]) -> tuple[set[str], set[str]]:
        """The block ids and message fingerprints ``blocks`` cover, through every fold."""
        with self._lineage_lock:
            return self._walk_locked(blocks)

    def _walk_locked(self, blocks: Sequence[Any]) -> tuple[set[str], set[str]]:
        """:meth:`_walk`, the lineage lock held by the caller."""
        blocks_seen: set[str] = set()
        messages_seen: set[str] = set()
        todo = [i for i in map(self.block_id, blocks) if isinstance(i, str)]
        while todo:
            block_id = todo.pop()
            folded, pruned = self._lineage.get(block_id, ((), frozenset()))
            messages_seen.update(pruned)
            for older in folded:
                if older not in blocks_seen:
                    blocks_seen.add(older)
                    todo.append(older)
        return blocks_seen, messages_seen

    def superseded(self, blocks: Sequence[Any]) -> set[int]:
        """Indexes of ``blocks`` already folded into another of ``blocks`` (by this reducer,
        in this process): their text is in that block, so they are not summarised again."""
        older, _ = self._walk(blocks)
        return {i for i, block in enumerate(blocks) if self.block_id(block) in older}

    def covered(self, blocks: Sequence[Any], pruned: Sequence[Any]) -> set[int]:
        """Indexes of ``pruned`` messages ``blocks`` already summarise, as they are now (an
        edited message has another fingerprint, so it is summarised again)."""
        _, seen = self._walk(blocks)
        return {i for i, message in enumerate(pruned) if fingerprint(message) in seen}

    def remembers(self, namespace_key: Hashable, messages: Sequence[Any]) -> bool:
        """Whether a summary of exactly ``messages`` was made for the conversation."""
        return self.memory.get(SummaryMemory.key(namespace_key, messages))[0]

    def summary_for(self, request: SummaryRequest, namespace_key: Hashable) -> Effects[str | None]:
        """The summary of ``request``: one ``summarize_fn`` call, or the one remembered.

        Raises:
            SummaryError: ``summarize_fn`` raised (the cause is attached).
            TypeError: ``summarize_fn`` returned something other than a str or None.
        """
        summarize = self._config.summarize_fn
        assert summarize is not None  # the config refuses a summarising step without one
        messages = request.messages
        key = SummaryMemory.key(namespace_key, messages)
        found, remembered = self.memory.get(key)
        if found:
            return remembered
        down = self.outage.blocked()
        if down is not None:
            raise SummaryError(
                f"summarize_fn failed moments ago ({type(down).__name__}: {down}); it is "
                f"tried again in {self.outage.retry_in:.1f} s; nothing was pruned",
                messages,
                waiting=True,
            ) from down
        outcome = yield Call(summarize, (messages,))
        if outcome.error is not None:
            error = outcome.error
            self.outage.failed(error)
            raise SummaryError(
                f"summarize_fn failed on {len(messages)} message(s): "
                f"{type(error).__name__}: {error}; nothing was pruned",
                messages,
            ) from error
        self.outage.succeeded()
        value = outcome.value
        if value is not None and not isinstance(value, str):
            raise TypeError(f"summarize_fn must return a str or None, got {value!r}")
        # An empty text has nothing to say, as None says: no empty block is injected.
        summary: str | None = value if value is not None and value.strip() else None
        self.memory.put(key, summary)
        return summary

    def block(
        self,
        text: str,
        request: SummaryRequest,
        messages: list[Any],
        format: MessageFormat | None = None,
    ) -> list[Any]:
        """The summary block for ``text``, in ``format`` (default: the one ``messages``
        are in) and the kind of message they hold, with its id."""
        block_id = summary_id(request.folded, request.pruned)
        folded_ids = tuple(i for i in map(self.block_id, request.folded) if isinstance(i, str))
        with self._lineage_lock:
            self._lineage[block_id] = (folded_ids, frozenset(map(fingerprint, request.pruned)))
            self._lineage.move_to_end(block_id)
            while len(self._lineage) > SUMMARY_MEMORY:
                self._lineage.popitem(last=False)
        position = request.position if messages else 0
        sample = messages or request.messages
        block = self._build(text, block_id, len(request.pruned), sample, position, format)
        self._name_block(block, block_id)
        return block

    def _name_block(self, block: list[Any], block_id: str) -> None:
        """Remember ``block_id`` for the messages of ``block`` that carry no id."""
        marks = [fingerprint(m) for m in block if not isinstance(id_of(m), str)]
        if not marks:
            return
        with self._lineage_lock:
            known = self._ids_by_mark
            for mark in marks:
                known[mark] = block_id if known.get(mark, block_id) == block_id else None
                known.move_to_end(mark)
            while len(known) > SUMMARY_MEMORY:
                known.popitem(last=False)

    def placeholder(
        self, messages: list[Any], position: int, format: MessageFormat | None = None
    ) -> list[Any]:
        """A block of the size the summary will take, in the list's format and kind, for
        ``position``, holding its room while a reduce's steps run (the reduce replaces it
        before it returns)."""
        return self._build("…", SUMMARY_ID_PREFIX + "pending", 0, messages, position, format)

    def _build(
        self,
        text: str,
        block_id: str,
        pruned: int,
        sample: list[Any],
        position: int,
        format: MessageFormat | None,
    ) -> list[Any]:
        factory = self._config.summary_message_factory
        if factory is not None:
            dict_ids = any(isinstance(m, dict) and "id" in m for m in sample)
            return factory_builder(factory, dict_ids=dict_ids)(text, block_id, pruned)
        fmt = format if format is not None else detect(sample, self._config.format)
        return default_summary_builder(sample, position, fmt)(text, block_id)

    # -- one summary at a time per conversation ---------------------------------------------

    @property
    def wait(self) -> float:
        """Seconds :meth:`begin` waits for another reduce's summary (``Handoff.wait``)."""
        return self._config.handoff.wait

    def begin(self, namespace_key: Hashable) -> Effects[Signal | None]:
        """Take the conversation's summary slot, waiting (at most ``Handoff.wait``
        seconds) while another reduce of it makes its summary; returns the slot to pass to
        :meth:`end` (None after the wait ran out: the other summary may still cover the
        same messages, so the caller keeps them and prunes nothing, rather than hang or
        summarise them a second time).

        Raises:
            LoopBlockedError: A sync reduce on the thread of the event loop whose task
                makes that summary (it could not finish while this reduce waits).
        """
        deadline = time.monotonic() + self._config.handoff.wait
        while True:
            with self._lineage_lock:
                busy = self._settling.get(namespace_key)
                if busy is None:
                    mine = self._settling[namespace_key] = Signal()
                    return mine
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            outcome = yield Wait(busy, remaining)
            if outcome.error is not None:
                raise outcome.error  # waiting would freeze the loop that makes that summary

    def end(self, namespace_key: Hashable, slot: Signal | None) -> None:
        """Give the slot :meth:`begin` took back, waking the reduces waiting for it."""
        if slot is None:
            return
        with self._lineage_lock:
            if self._settling.get(namespace_key) is slot:
                del self._settling[namespace_key]
        slot.set()

    # -- messages pruned after a block overflowed, owed to the next summary ----------------

    def carry(self, namespace_key: Hashable, messages: Sequence[Any], owner: Any = None) -> None:
        """Owe ``messages`` to the conversation's next summary: a reduce pruned them to
        make room for ``owner``, a block larger than planned, after its one
        ``summarize_fn`` call. Only a summary that folds ``owner`` (or a block made from
        it) takes them: a fork that never held them does not (no ``owner``: any summary of
        the conversation). Bounded (the newest :data:`CARRIED_LIMIT` per conversation, the
        newest :data:`SUMMARY_MEMORY` conversations); in the process only."""
        if not messages:
            return
        owner_id = None if owner is None else self.block_id(owner)
        with self._lineage_lock:
            owed = self._carried.pop(namespace_key, [])
            known = {fingerprint(m) for _, m in owed}
            owed.extend((owner_id, m) for m in messages if fingerprint(m) not in known)
            if len(owed) > CARRIED_LIMIT:
                logger.warning(
                    "%d messages pruned to make room for oversized summaries are owed to "
                    "the next summary of one conversation; the oldest %d will not be "
                    "summarised (they did reach the on_prune hooks): lower "
                    "summary_max_tokens' overrun, or raise the summarizer's budget",
                    len(owed),
                    len(owed) - CARRIED_LIMIT,
                )
                del owed[: len(owed) - CARRIED_LIMIT]
            self._carried[namespace_key] = owed
            while len(self._carried) > SUMMARY_MEMORY:
                self._carried.popitem(last=False)

    def carried(
        self, namespace_key: Hashable, held: set[str], folded: Sequence[Any] = ()
    ) -> list[Any]:
        """The messages owed to the next summary of a list folding ``folded``, oldest
        first: those owed by one of those blocks or a block they were made from, without
        those whose fingerprint is in ``held`` (still in the list, or pruned again: a
        reduce whose result was not kept)."""
        owners = self._owners(folded)
        with self._lineage_lock:
            owed = list(self._carried.get(namespace_key, ()))
        return [m for owner, m in owed if owner in owners and fingerprint(m) not in held]

    def settle_carried(self, namespace_key: Hashable, folded: Sequence[Any] = ()) -> None:
        """A summary folding ``folded`` was made: what those blocks owed is paid (it is in
        the list, or in this summary's pruned messages); other lists' debts stay."""
        owners = self._owners(folded)
        with self._lineage_lock:
            owed = self._carried.get(namespace_key)
            if owed is not None:
                owed[:] = [(owner, m) for owner, m in owed if owner not in owners]

    def _owners(self, folded: Sequence[Any]) -> set[str | None]:
        """The blocks whose debts a summary folding ``folded`` pays: those blocks, every
        block they were made from, and None (a debt of no known block)."""
        older, _ = self._walk(folded)
        return {None, *older, *map(self.block_id, folded)}

    def reserve(self, state: PlanState, messages: list[Any]) -> int:
        """Room a summarising prune leaves for the block: messages in count mode, tokens in
        token mode (at least what the summary now in the list takes)."""
        empty = SummaryRequest(0, [], [])
        if self._limits.max_tokens is None:
            if self._config.summary_message_factory is None:
                return 1
            if self._factory_size is None:
                self._factory_size = len(self.block("…", empty, messages, state.format))
            return self._factory_size
        held = sum(state.tokens[p] for p, view in enumerate(state.views) if view.summary)
        budget = self._config.summary_max_tokens
        if budget is None:
            budget = getattr(self._config.summarize_fn, "max_summary_tokens", None)
        if not isinstance(budget, int) or isinstance(budget, bool) or budget < 1:
            target = self._limits.target_tokens or self._limits.max_tokens or 0
            budget = max(32, target // 10)
        framing = self._count(self.block("", empty, messages, state.format)[0])
        return max(held, framing + budget)


def __getattr__(name: str) -> Any:
    # 0.5's default_summary_messages_factory resolves with a DeprecationWarning.
    from ._deprecated import resolve

    return resolve(__name__, name)
