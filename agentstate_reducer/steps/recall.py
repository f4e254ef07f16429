"""``Recall``: bring memories back into what the model sees, when the question needs them.

``SelectRelevant`` can keep only what is still in the list; what left it long ago lives in
a store (:class:`~agentstate_reducer.langgraph.StoreMemory` writes it there). This step
searches that store with the newest human message and inserts the ``k`` best memories as
one memory block (:mod:`agentstate_reducer.recalled`) after the system prompt, in the
list's own format and kind of message, within a room of its own (``max_tokens``), so the
question and the kept turns are never pushed out by it.

It is a **view-only** step (``view_only = True``): it runs in
:meth:`~agentstate_reducer.MessageReducer.view` (the agents' ``mode="view"``, and every
model call of a persistent agent whose policy has it), on every call, whether the list is
over its budget or not; a persistent ``reduce`` skips it, so the stored list never holds
recalled text (which would reach the store again). Put it first in the policy, before the
steps that prune: they then make room for its block.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._checks import check_callable, check_int
from .._memory import Bounded
from ..messages import SYSTEM, MessageFormat, detect
from ..recalled import MEMORY_HEADER, MEMORY_SOURCE, is_memory, memory_block
from ..tokens import estimate_tokens
from .contract import ReductionStep, StepContext
from .relevance import LexicalScorer, message_text, terms

__all__ = ["MEMORY_HEADER", "MEMORY_SOURCE", "Recall", "is_memory", "item_text"]

#: Questions whose search results a step remembers.
_QUESTIONS = 1_000

#: What a memory line starts with in the block.
_BULLET = "- "


def item_text(item: Any) -> str:
    """What a store item says: its value's ``text`` (or ``content``), else the value as
    JSON."""
    value = getattr(item, "value", item)
    if not isinstance(value, Mapping):
        return str(value)
    for name in ("text", "content"):
        text = value.get(name)
        if isinstance(text, str) and text:
            return text
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


class _Search:
    """``store.search`` as one effect: ``reduce``/``view`` call it, ``areduce``/``aview``
    await ``store.asearch``."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.__qualname__ = f"{type(store).__name__}.search"  # how errors name it

    def __call__(self, namespace: tuple[str, ...], query: str, limit: int) -> list[Any]:
        return list(self.store.search(namespace, query=query, limit=limit))

    async def acall(self, namespace: tuple[str, ...], query: str, limit: int) -> list[Any]:
        return list(await self.store.asearch(namespace, query=query, limit=limit))


@dataclass(frozen=True)
class _Memory:
    text: str


@dataclass(frozen=True, eq=False)
class Recall(ReductionStep):
    """Insert the memories a store holds for the newest question into the model's view.

    The store is searched (``store.search``, or ``store.asearch`` in ``aview``) under
    ``namespace`` with the text of the newest human message, for ``fetch`` items. Results
    a store scored (it has embeddings; at least ``min_score`` when set) are ranked by their
    score plus their BM25 against the question scaled to at most 1; results without scores
    (a store without an index) by BM25 alone, those sharing no word with the question left
    out. Memories the list still shows
    (the same text) are left out too. The best ``k`` go into one
    memory block, as many as fit ``max_tokens``, after the leading system messages; an
    earlier memory block in the list is replaced. The answer of a search is remembered per
    namespace and question (the newest 1,000), so the model calls of one question (a tool
    loop) search once; a new question searches again.

    Attributes:
        store: A LangGraph ``BaseStore`` (anything with ``search``; ``asearch`` for
            ``aview``).
        namespace: The store namespace searched (a prefix: sub-namespaces are searched
            too), or a function of the reduce's namespace returning one (as
            :class:`~agentstate_reducer.langgraph.StoreMemory` takes it).
        k: At most this many memories in the block.
        max_tokens: The block's room in tokens (by the reducer's counter; the estimate in
            count mode); in token mode also at most what the budget leaves beside the
            messages that are never dropped.
        fetch: Items asked of the store per search (default ``10 * k``): the candidates
            the ranking chooses from.
        min_score: With a store that ranks, leave out memories scoring below this.
        id: The step's name.
    """

    store: Any
    namespace: tuple[str, ...] | Callable[[Any], tuple[str, ...]]
    k: int = 3
    max_tokens: int = 400
    fetch: int | None = None
    min_score: float | None = None
    id: str = "recall"
    view_only: bool = field(default=True, init=False, repr=False)
    prunes: bool = field(default=False, init=False, repr=False)
    _answers: Bounded[tuple[Any, str], tuple[_Memory, ...]] = field(
        default_factory=lambda: Bounded(_QUESTIONS), init=False, repr=False
    )

    def __post_init__(self) -> None:
        if not callable(getattr(self.store, "search", None)):
            raise TypeError(
                f"Recall.store must be a LangGraph BaseStore (with search), got {self.store!r}"
            )
        if not callable(self.namespace):
            _check_namespace(self.namespace)
        check_int("Recall.k", self.k, minimum=1)
        check_int("Recall.max_tokens", self.max_tokens, minimum=1)
        if self.fetch is not None:
            check_int("Recall.fetch", self.fetch, minimum=self.k)
        if self.min_score is not None and (
            isinstance(self.min_score, bool) or not isinstance(self.min_score, (int, float))
        ):
            raise TypeError(f"Recall.min_score must be a number, got {self.min_score!r}")
        check_callable("Recall.namespace", self.namespace if callable(self.namespace) else None)

    def rewrote(self, message: Any) -> bool:
        return is_memory(message)

    def apply(self, context: StepContext) -> Generator[Any, Any, list[Any]]:
        if not context.view:
            return []  # persistent reduces skip view-only steps; nothing to do here
        question = context.newest_human()
        if question is None:
            return []
        query = message_text(context.messages[question]).strip()
        if not query:
            return []
        namespace = self.namespace
        if callable(namespace):
            namespace = _check_namespace(namespace(context.namespace), context.namespace)
        key = (namespace, query)
        known, answer = self._answers.get(key)
        if not known or answer is None:
            items = yield context.call(_Search(self.store), namespace, query, self._fetch())
            answer = self._rank(query, items)
            self._answers.put(key, answer)
        existing = [
            p
            for p in range(len(context.messages))
            if context.is_summary(p) and is_memory(context.messages[p])
        ]
        memories = self._not_in_view(context, answer)
        if not memories:
            return []
        fmt = detect(context.messages)
        if existing:
            # A block from before (a view written back into the list): its messages take
            # the new text, when the new block has as many (the roles around are the same).
            block = self._block(context, memories, existing, existing[0], fmt)
            if block is None or len(block) != len(existing):
                return []
            try:
                for position, message in zip(existing, block, strict=True):
                    context.replace(position, message)
            except ValueError:
                return []  # another role than the old block's: the old block stays
            return block
        for position in self._places(context):
            block = self._block(context, memories, existing, position, fmt)
            if block is None:
                return []
            try:
                context.insert(position, block)
            except ValueError:
                continue  # the kept first message, or inside a tool group: the next place
            return block
        return []

    def _fetch(self) -> int:
        return self.fetch if self.fetch is not None else 10 * self.k

    def _rank(self, query: str, items: Any) -> tuple[_Memory, ...]:
        """The memories worth showing, best first.

        Scored results (a store with embeddings) are ranked by their score plus their BM25
        against the question, scaled to at most 1, over the fetched candidates: the
        embedding finds the candidates (synonyms included), the words shared with the
        question order them (an embedding alone ranks a short message sharing one common
        word above the fact). Unscored results are ranked by BM25 alone, those sharing no
        word left out.
        """
        if not isinstance(items, Sequence):
            raise TypeError(f"store.search returned {items!r}; expected a list of items")
        texts = [item_text(item) for item in items]
        lexical = LexicalScorer().rank(query, texts) if terms(query) else [0.0] * len(texts)
        top = max(lexical, default=0.0) or 1.0
        found = [getattr(item, "score", None) for item in items]
        scores = [float(score) for score in found if _is_number(score)]  # type: ignore[arg-type]
        ranked: list[int]
        if found and len(scores) == len(found):
            minimum = self.min_score
            combined = {
                i: score + lexical[i] / top
                for i, score in enumerate(scores)
                if minimum is None or score >= minimum
            }
            ranked = sorted(combined, key=lambda i: -combined[i])
        else:
            ranked = [i for i in sorted(range(len(texts)), key=lambda i: -lexical[i]) if lexical[i]]
        out: list[_Memory] = []
        seen: set[str] = set()
        for i in ranked:
            text = " ".join(texts[i].split())
            if text and text not in seen:
                seen.add(text)
                out.append(_Memory(text))
        return tuple(out)

    def _not_in_view(self, context: StepContext, memories: Sequence[_Memory]) -> list[_Memory]:
        """Leave out what the list still shows (by text: ids may repeat across
        conversations): no need to recall it."""
        if not memories:
            return []
        shown = {" ".join(message_text(m).split()) for m in context.messages}
        return [memory for memory in memories if memory.text not in shown]

    def _block(
        self,
        context: StepContext,
        memories: Sequence[_Memory],
        existing: list[int],
        position: int,
        fmt: MessageFormat,
    ) -> list[Any] | None:
        """The block of the best memories that fit the room, to go at ``position``, or
        None when none fits."""
        count: Callable[[Any], int] = context.count if context.token_mode else estimate_tokens
        room = self.max_tokens
        if context.token_mode and context.target is not None:
            tokens = context.tokens
            pinned = sum(
                tokens[p]
                for p in range(len(tokens))
                if p not in existing and not context.can_drop(p)
            )
            room = min(room, context.target - pinned)
        lines: list[str] = []
        block = None
        for memory in memories[: self.k]:
            candidate = [*lines, _BULLET + memory.text]
            built = memory_block(
                MEMORY_HEADER + "\n".join(candidate),
                _block_id(candidate),
                context.messages,
                position,
                fmt,
            )
            if sum(map(count, built)) > room:
                continue  # a shorter memory further down may still fit
            lines, block = candidate, built
        return block

    @staticmethod
    def _places(context: StepContext) -> list[int]:
        """Where the block may go, best first: after the leading system (and developer)
        messages, else as early as the list allows, never after the question."""
        question = context.newest_human()
        last = question if question is not None else len(context.messages)
        first = 0
        while first < last and context.role(first) in (SYSTEM, "developer"):
            first += 1
        return list(range(first, last + 1))


def _is_number(value: Any) -> bool:
    """A score a store gave (a NaN, from a zero vector, is none)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _block_id(lines: Sequence[str]) -> str:
    digest = hashlib.sha256("\n".join(lines).encode("utf-8", "surrogatepass")).hexdigest()
    return "memory-" + digest[:32]


def _check_namespace(value: Any, argument: Any = None) -> tuple[str, ...]:
    """A store namespace (a non-empty tuple of strings), or a TypeError naming it."""
    if isinstance(value, list):
        value = tuple(value)
    if not isinstance(value, tuple) or not value or not all(isinstance(x, str) for x in value):
        where = "Recall.namespace" if argument is None else f"Recall.namespace({argument!r})"
        raise TypeError(
            f"{where} must be a non-empty tuple of strings (a store namespace such as "
            f'("memories", user_id)), got {value!r}'
        )
    return value
