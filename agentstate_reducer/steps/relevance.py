"""``SelectRelevant``: keep the older user turns that matter to the newest question.

Recency-only trimming forgets an early turn however much the question depends on it ("what
was the booking code I gave you at the start?"). This step scores each older user turn
against the newest human message and keeps the best ones the budget has room for, whole
(a turn's tool calls and results stay together), dropping the rest; the newest
``keep_groups`` turns always stay. Relevance comes from, in this order of preference:

* a user ``scorer(query, text) -> float`` (sync or async);
* any LangChain ``Embeddings`` (``embeddings=``): cosine similarity of
  ``embed_query(question)`` and ``embed_documents(turns)`` (the async forms in
  ``areduce``), each turn's vector remembered by its text;
* by default :class:`LexicalScorer`: BM25 over the older turns, no dependency.
"""

from __future__ import annotations

import functools
import hashlib
import math
import numbers
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._calls import call_async, call_sync, hook_name, is_async_only
from .._checks import check_bool, check_callable, check_int
from .._memory import Bounded
from ..messages import parts_of
from .contract import ReductionStep, StepContext

Scorer = Callable[[str, str], float]
"""``(query, text) -> float``: how relevant ``text`` is to ``query`` (higher is more)."""

#: Turn vectors (embeddings) or term counts (BM25) a step remembers.
_VECTORS = 10_000

_WORD = re.compile(r"\w+")
#: Words too common to say anything about relevance (English; other languages' words
#: weigh by BM25's inverse document frequency alone).
_STOPWORDS = frozenset(
    """a about above after again all am an and any are as at be been before being below
    between both but by can could did do does doing down during each few for from further
    had has have having he her here hers him his how i if in into is it its itself just me
    more most my no nor not now of off on once only or other our ours out over own same she
    should so some such than that the their theirs them then there these they this those
    through to too under until up very was we were what when where which while who whom why
    will with would you your yours yourself please thanks thank hi hello tell said say ok
    okay yes""".split()  # noqa: SIM905 - a word list reads best as text
)


def message_text(message: Any) -> str:
    """The text a message carries, in any format: what counts towards its tokens (text,
    reasoning, tool results; see :func:`~agentstate_reducer.messages.parts_of`) and, for a
    message with tool calls, their names and arguments."""
    parts = parts_of(message)
    pieces = list(parts.texts)
    for name, arguments in parts.calls:
        pieces += [name, arguments]
    return "\n".join(piece for piece in pieces if piece)


def terms(text: str) -> list[str]:
    """The terms lexical scoring compares: lowercased words without stopwords, digits
    kept (codes and numbers are what questions ask back), CJK characters one by one
    (those scripts do not separate words)."""
    words = _WORD.findall(unicodedata.normalize("NFKC", text).lower())
    if _CJK.search(text) is None:
        return [_stem(w) for w in words if w not in _STOPWORDS and (len(w) > 1 or w.isdigit())]
    out: list[str] = []
    for word in words:
        if _CJK.search(word):
            out.extend(_CJK.findall(word))
            rest = _CJK.sub(" ", word).split()
            out.extend(_stem(w) for w in rest if w not in _STOPWORDS and len(w) > 1)
        elif word not in _STOPWORDS and (len(word) > 1 or word.isdigit()):
            out.append(_stem(word))
    return out


_CJK = re.compile("[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")


@functools.lru_cache(maxsize=65_536)
def _stem(word: str) -> str:
    """A light English stem, so "flights" meets "flight" and "booked" meets "booking"."""
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


@dataclass(frozen=True)
class LexicalScorer:
    """BM25 relevance of texts to a query, with no dependency.

    ``rank(query, texts)`` scores every text with inverse document frequencies taken over
    ``texts`` (what :class:`SelectRelevant` uses); calling the scorer on one pair scores
    it alone.

    Attributes:
        k1: BM25 term-frequency saturation.
        b: BM25 length normalisation.
    """

    k1: float = 1.2
    b: float = 0.75

    def __call__(self, query: str, text: str) -> float:
        return self.rank(query, [text])[0]

    def rank(self, query: str, texts: Sequence[str]) -> list[float]:
        """BM25 scores of ``texts`` for ``query`` (0 for a text sharing no term)."""
        return self.rank_terms(terms(query), [Counter(terms(text)) for text in texts])

    def rank_terms(self, query: Sequence[str], documents: Sequence[Counter[str]]) -> list[float]:
        """:meth:`rank` on texts already split by :func:`terms` (counted per document)."""
        wanted = set(query)
        if not wanted or not documents:
            return [0.0] * len(documents)
        size = len(documents)
        average = sum(sum(d.values()) for d in documents) / size or 1.0
        frequency = {t: sum(1 for d in documents if t in d) for t in wanted}
        weights = {
            t: math.log(1 + (size - df + 0.5) / (df + 0.5)) for t, df in frequency.items() if df
        }
        scores: list[float] = []
        for document in documents:
            length = sum(document.values())
            score = 0.0
            for term, weight in weights.items():
                count = document.get(term, 0)
                if count:
                    norm = self.k1 * (1 - self.b + self.b * length / average)
                    score += weight * count * (self.k1 + 1) / (count + norm)
            scores.append(score)
        return scores


class _PairScores:
    """A user scorer applied to every turn: called as one effect, so ``areduce`` awaits
    an async scorer and runs a blocking one in a worker thread."""

    def __init__(self, scorer: Scorer) -> None:
        self.scorer = scorer
        self.__qualname__ = f"scorer {hook_name(scorer)}"  # how errors name it

    def __call__(self, query: str, texts: list[str]) -> list[float]:
        if is_async_only(self.scorer):  # one private event loop for all turns, not one each
            scores: list[float] = call_sync(self.acall, query, texts)
            return scores
        return [_score(self.scorer, call_sync(self.scorer, query, text)) for text in texts]

    async def acall(self, query: str, texts: list[str]) -> list[float]:
        return [_score(self.scorer, await call_async(self.scorer, query, text)) for text in texts]


def _score(scorer: Any, value: Any) -> float:
    # numbers.Real admits numpy's floats and ints (an embeddings library's scores).
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or math.isnan(value):
        raise TypeError(
            f"SelectRelevant scorer {scorer!r} returned {value!r}; it must return a number "
            "(higher is more relevant)"
        )
    return float(value)


class _EmbeddingScores:
    """Cosine similarity by a LangChain ``Embeddings``, turn vectors remembered by text (in
    the step's memory: one step may serve reduces in several threads)."""

    def __init__(self, embeddings: Any, vectors: Bounded[str, list[float]]) -> None:
        self.embeddings = embeddings
        self.vectors = vectors
        self.__qualname__ = f"embeddings {type(embeddings).__name__}"  # how errors name it

    def __call__(self, query: str, texts: list[str]) -> list[float]:
        missing = self._missing(texts)
        found = self.embeddings.embed_documents(missing) if missing else []
        return self._cosines(self.embeddings.embed_query(query), texts, missing, found)

    async def acall(self, query: str, texts: list[str]) -> list[float]:
        missing = self._missing(texts)
        found = await self.embeddings.aembed_documents(missing) if missing else []
        query_vector = await self.embeddings.aembed_query(query)
        return self._cosines(query_vector, texts, missing, found)

    def _missing(self, texts: list[str]) -> list[str]:
        return list(dict.fromkeys(t for t in texts if _key(t) not in self.vectors))

    def _cosines(self, query: Any, texts: list[str], missing: list[str], found: Any) -> list[float]:
        if len(found) != len(missing):
            raise TypeError(
                f"embeddings.embed_documents returned {len(found)} vectors for {len(missing)} texts"
            )
        known = {
            _key(text): [float(x) for x in vector]
            for text, vector in zip(missing, found, strict=True)
        }
        for key, fresh in known.items():
            self.vectors.put(key, fresh)
        # Read back through ``known``: a memory shared with other threads may already have
        # forgotten a vector just put.
        vectors = [
            known[key] if key in known else self.vectors.get(key)[1] for key in map(_key, texts)
        ]
        wanted = [float(x) for x in query]
        for vector in vectors:
            if vector is not None and len(vector) != len(wanted):
                raise ValueError(
                    f"embed_query returned a vector of {len(wanted)} dimensions and "
                    f"embed_documents one of {len(vector)}: they must come from one model"
                )
        return [0.0 if v is None else _cosine(wanted, v) for v in vectors]


def _key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


@dataclass(frozen=True, eq=False)
class SelectRelevant(ReductionStep):
    """Keep the older user turns most relevant to the newest question; drop the rest.

    The turns before the newest ``keep_groups`` are scored against the newest human
    message and kept, best first, while the budget has room for them: in token mode the
    ``target`` less everything that stays anyway, in count mode ``min_messages`` less the
    newest turns (what is never dropped comes on top, as with ``DropOldest``). Ties go to
    the newer turn. A turn is kept or dropped whole (its tool calls with their results);
    messages a reduce never drops (system messages, the kept first message) stay either
    way. With ``summarize`` what is dropped is summarised as
    ``Summarize`` does (it needs ``summarize_fn``). Put ``DropOldest()`` after it so the
    list fits even when the newest turns alone are over the budget.

    Attributes:
        keep_groups: The newest user turns always kept (the question's own included).
        scorer: ``(query, text) -> float``, sync or async; overrides ``embeddings``.
        embeddings: A LangChain ``Embeddings`` (``embed_query``/``embed_documents``).
        summarize: Summarise what the step drops.
        id: The step's name.
    """

    keep_groups: int = 1
    scorer: Scorer | None = None
    embeddings: Any = None
    summarize: bool = False
    id: str = "select_relevant"
    _vectors: Bounded[str, list[float]] = field(
        default_factory=lambda: Bounded(_VECTORS), init=False, repr=False
    )
    _term_counts: Bounded[str, Counter[str]] = field(
        default_factory=lambda: Bounded(_VECTORS), init=False, repr=False
    )

    def __post_init__(self) -> None:
        check_int("SelectRelevant.keep_groups", self.keep_groups, minimum=1)
        check_callable("SelectRelevant.scorer", self.scorer)
        if self.embeddings is not None and not (
            callable(getattr(self.embeddings, "embed_query", None))
            and callable(getattr(self.embeddings, "embed_documents", None))
        ):
            raise TypeError(
                f"SelectRelevant.embeddings must be a LangChain Embeddings (with embed_query "
                f"and embed_documents), got {self.embeddings!r}"
            )
        check_bool("SelectRelevant.summarize", self.summarize)
        object.__setattr__(self, "summarizes", self.summarize)

    def apply(self, context: StepContext) -> Generator[Any, Any, list[Any]]:
        question = context.newest_human()
        turns = context.turns()
        if question is None or len(turns) <= self.keep_groups:
            return []
        older = turns[: len(turns) - self.keep_groups]
        members = [[p for p in turn if context.can_drop(p)] for turn in older]
        candidates = [i for i, m in enumerate(members) if m]
        if not candidates:
            return []
        query = message_text(context.messages[question])
        texts = [
            "\n".join(message_text(context.messages[p]) for p in members[i]) for i in candidates
        ]
        scores = yield from self._scores(context, query, texts)
        room = self._room(context, [p for i in candidates for p in members[i]], older[-1].stop)
        ranked = sorted(range(len(candidates)), key=lambda k: (scores[k], k), reverse=True)
        kept: set[int] = set()
        for k in ranked:
            cost = self._cost(context, members[candidates[k]])
            if cost <= room:
                kept.add(k)
                room -= cost
        dropped = [p for k, i in enumerate(candidates) if k not in kept for p in members[i]]
        if not dropped:
            return []
        return context.drop(dropped, summarize=self.summarize)

    def _scores(
        self, context: StepContext, query: str, texts: list[str]
    ) -> Generator[Any, Any, list[float]]:
        if self.scorer is not None:
            scores = yield context.call(_PairScores(self.scorer), query, texts)
        elif self.embeddings is not None:
            scores = yield context.call(
                _EmbeddingScores(self.embeddings, self._vectors), query, texts
            )
        else:
            scores = LexicalScorer().rank_terms(terms(query), [self._terms(t) for t in texts])
        return list(scores)

    def _terms(self, text: str) -> Counter[str]:
        """The terms of a turn's text, remembered: a growing chat re-scores the same
        older turns on every reduce."""
        known, found = self._term_counts.get(text)
        if not known or found is None:
            found = Counter(terms(text))
            self._term_counts.put(text, found)
        return found

    def _room(self, context: StepContext, candidates: list[int], kept_from: int) -> int:
        """What the budget leaves for the older turns once they are all gone: in token
        mode the target less every other message; in count mode, as ``DropOldest``
        counts, ``min_messages`` less the newest turns kept (``kept_from`` on), with what
        is never dropped before them on top."""
        # A summarising drop inserts a block: room for it is kept, or the reduce would
        # make room by dropping the oldest turns kept, which are the ones chosen here.
        reserve = context.summary_room() if self.summarize else 0
        if context.token_mode:
            assert context.target is not None
            rest = context.total - sum(context.tokens[p] for p in candidates)
            return context.target - rest - reserve
        return context.min_messages - (len(context.messages) - kept_from) - reserve

    def _cost(self, context: StepContext, positions: list[int]) -> int:
        if context.token_mode:
            return sum(context.tokens[p] for p in positions)
        return len(positions)
