"""What every message format shares: roles, the light view, what counts, text slots.

Each format module (:mod:`.chat`, :mod:`.langchain`, :mod:`.duck`, :mod:`.anthropic`,
:mod:`.responses`, :mod:`.gemini`, :mod:`.bedrock`, :mod:`.llama_index`,
:mod:`.pydantic_ai`) reads its messages
into the same few things:

* a :class:`MessageView`: role, id, the calls a message makes, the calls it answers, whether
  it is a summary block, which formats it fits, and how it joins its neighbours; the
  pruning plan, ``validate()`` and the step context work on views only;
* :class:`Parts`: what counts towards tokens (text, reasoning, tool results, tool names and
  arguments, images), each counted once;
* :class:`Slot` s: the texts a step may rewrite (a placeholder in every result a message
  holds, a cut at the end of its last text), written back in the message's own shape.

A format is a :class:`MessageFormat` subclass; :mod:`.detect` holds one instance of each and
tells a list's format from the list itself.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, NamedTuple

HUMAN = "human"
AI = "ai"
SYSTEM = "system"
TOOL = "tool"
FUNCTION = "function"

#: Role names as they appear in the wild, mapped to the role the reducer reasons about.
ROLE_ALIASES: Mapping[str, str] = {
    "human": HUMAN,
    "user": HUMAN,
    "ai": AI,
    "assistant": AI,
    "agent": AI,
    # Gemini's and llama-index's name for the model's turns (MessageRole.MODEL), and
    # llama-index's MessageRole.CHATBOT.
    "model": AI,
    "chatbot": AI,
    "system": SYSTEM,
    "tool": TOOL,
    "function": FUNCTION,
    # LangChain's streaming chunk classes report their class name as ``type``.
    "humanmessagechunk": HUMAN,
    "aimessagechunk": AI,
    "systemmessagechunk": SYSTEM,
    "toolmessagechunk": TOOL,
    "functionmessagechunk": FUNCTION,
}

#: The lc_source of summary messages: LangChain's marker for a message the agent
#: harness added (``add_notification_metadata``), which its summarization middleware uses.
SUMMARY_SOURCE = "summarization"

#: The first line of the default summary text. A format without a metadata slot a provider
#: would accept (plain OpenAI dicts, Anthropic, Responses, Gemini, Bedrock, llama-index)
#: marks a summary by this header.
SUMMARY_HEADER = "Summary of the earlier conversation:\n"

#: The ``lc_source`` of memory blocks (what ``Recall`` inserts into a model's view).
MEMORY_SOURCE = "recall"

#: The first line of a memory block's text; the mark where a format has no metadata slot.
MEMORY_HEADER = "Memories from earlier conversations that may help:\n"

#: How a legacy function call's link key starts (see :func:`function_call_key`).
FUNCTION_CALL_KEY_PREFIX = "function_call:"


def function_call_key(name: str) -> str:
    """The key that links a call without an id to its result: a legacy ``function_call``
    of function ``name``, or a Gemini ``function_call`` part without an id.

    Such calls are answered by name: one call, answered by the next result of the same
    name. So the call and its result share this key (in :attr:`MessageView.call_ids` and
    :attr:`MessageView.results_for`), and the planner pairs a result with the newest
    unanswered call of that name (a Gemini content calling one function twice waits for
    two results of that name).
    """
    return FUNCTION_CALL_KEY_PREFIX + name


# -- formats ---------------------------------------------------------------------------

#: Bits of :attr:`MessageView.formats`: the formats a message fits.
CHAT = 1
ANTHROPIC = 2
RESPONSES = 4
GEMINI = 8
BEDROCK = 16
LLAMA_INDEX = 32
PYDANTIC_AI = 64
#: Every format.
ANY_FORMAT = CHAT | ANTHROPIC | RESPONSES | GEMINI | BEDROCK | LLAMA_INDEX | PYDANTIC_AI
#: A role dict with text content (``{"role": "user", "content": "hi"}``): it reads the same
#: in Chat Completions, Anthropic and the Responses API (an easy input message).
PLAIN = CHAT | ANTHROPIC | RESPONSES

#: A format's name for each bit, in the order a list that fits several is read as
#: (a list of plain text messages is read as Chat).
FORMAT_BITS: Mapping[int, str] = {
    CHAT: "chat",
    ANTHROPIC: "anthropic",
    RESPONSES: "responses",
    GEMINI: "gemini",
    BEDROCK: "bedrock",
    LLAMA_INDEX: "llama_index",
    PYDANTIC_AI: "pydantic_ai",
}


def format_names(mask: int) -> list[str]:
    """The names of the formats in ``mask``, in reading order."""
    return [name for bit, name in FORMAT_BITS.items() if mask & bit]


class MessageView(NamedTuple):
    """What the pruning plan needs to know about one message."""

    role: str
    """Normalised role: ``human``, ``ai``, ``system``, ``tool``, ``function`` or, for
    unknown roles, the lowercased original. A user message that holds only tool results
    (Anthropic ``tool_result``, Bedrock ``toolResult``, Gemini ``function_response``
    blocks) is ``tool``: it is a result, never a question."""
    id: str | None
    call_ids: tuple[str, ...]
    """Ids of the tool calls the message makes (a :func:`function_call_key` for a legacy
    ``function_call`` or a call without an id; empty for messages that make none)."""
    result_for: str | None
    """The first of :attr:`results_for` (None when the message answers no call); kept for
    code written when a message could answer one call only."""
    summary: bool = False
    """Whether the message is a block the reducer inserted: a summary block (see
    :func:`~.reader.is_summary`) or a memory block (:func:`~.reader.is_memory`); either is
    kept as a block, never pruned as an ordinary message, and starts no user turn."""
    results_for: tuple[str, ...] = ()
    """The ids (or :func:`function_call_key` s) of every call the message answers: one
    for a Chat tool message, several for an Anthropic, Bedrock or Gemini user message that
    holds several results. A ``human`` message with results also holds text: it leaves
    only with its call, and it may be the newest question."""
    formats: int = ANY_FORMAT
    """The formats the message fits, as bits (:data:`CHAT`, :data:`ANTHROPIC`, ...): a
    list's format is the one all its messages fit (see :mod:`.detect`)."""
    joins: int = 0
    """How the message joins its neighbours: 0 for not at all; 1 for an item of one
    model turn in the Responses API (reasoning, an assistant message, a call): a run of
    such items leaves together; 2 for a ``reasoning`` item, which is such an item and
    also needs an item of its turn right after it."""
    thinking: bool = False
    """Whether an ai message holds a thinking block (Anthropic ``thinking`` or
    ``redacted_thinking``, a Bedrock ``reasoningContent``, a pydantic-ai thinking part, a
    LangChain ``reasoning`` block): when it opens the newest turn, its tool loop sends it
    back (Anthropic refuses a final assistant turn that starts without it), so it stays
    while any later message of that turn does."""
    flaws: tuple[tuple[str, str], ...] = ()
    """What the format's rules refuse in the message's own shape, as ``(kind, detail)``:
    a role the format does not have (:data:`FLAW_ROLE`), a block in a message of the
    wrong role (:data:`FLAW_PLACEMENT`), a malformed block (:data:`FLAW_BLOCK`). The
    message is still read (as the module docstrings say); ``validate()`` reports them."""


#: :attr:`MessageView.flaws` kinds (the ``Problem.kind`` ``validate()`` reports them as).
FLAW_ROLE = "unexpected_role"
FLAW_PLACEMENT = "misplaced_block"
FLAW_BLOCK = "invalid_block"

#: View.joins for an item of a model turn (Responses API).
TURN_ITEM = 1
#: View.joins for a reasoning item: it belongs to the item after it.
REASONING_ITEM = 2


class Parts(NamedTuple):
    """What counts towards a message's tokens, each part once."""

    texts: list[str]
    """Text, reasoning or thinking text, and tool results, in message order."""
    calls: list[tuple[str, str]]
    """``(name, arguments as text)`` of every call the message makes."""
    images: int
    """Images and other binary media (documents, audio, video, files), each counted at a
    fixed cost."""


class Slot(NamedTuple):
    """A text of a message that a step may rewrite."""

    kind: str
    """``"text"`` (what the message says), ``"result"`` (a tool result's output) or
    ``"reasoning"``."""
    path: tuple[Any, ...]
    """Where the text is in the message (opaque: hand it back to ``rewrite``)."""
    text: str


#: The text a Compress answer leaves in the second and later results of a message that
#: holds several: the answer, written into the first result, condenses them all.
COMBINED_RESULT = "[condensed together with the first result of this message]"

#: The text of the second message of a two-message summary block (see
#: :func:`block_sides`): marked by the header too, so that it is folded with the summary.
SUMMARY_FILLER = SUMMARY_HEADER + "(see the previous message)"

#: The second message of a two-message memory block, as :data:`SUMMARY_FILLER` is of a
#: summary block's.
MEMORY_FILLER = MEMORY_HEADER + "(see the previous message)"

#: The headers that mark a block the reducer inserted (a summary, memories): such a
#: message's view is a block (``MessageView.summary``), never an ordinary user turn.
BLOCK_HEADERS = (SUMMARY_HEADER, MEMORY_HEADER)


class MessageFormat:
    """One wire format: how its messages are read, counted and written.

    Subclasses implement :meth:`parse` (everything the other methods derive from), and
    override :meth:`view` where a faster direct read pays. Reading never changes a message;
    writing returns a new message of the same kind (a dict for a dict, an object of the
    same class for an object).

    Attributes:
        name: The format's name (``ReducerConfig(format=...)``).
        bit: Its bit in :attr:`MessageView.formats`.
        alternates: Roles must alternate (user, assistant, user, ...) and the first
            message must come from the user: the window's end and the summary block keep
            that (Anthropic, Bedrock, Gemini).
        adjacent_results: A call's results must come right after the message that makes
            it (every format but the Responses API, where an output needs its call
            anywhere before it).
    """

    name: ClassVar[str] = ""
    bit: ClassVar[int] = 0
    alternates: ClassVar[bool] = False
    adjacent_results: ClassVar[bool] = True

    # -- reading -------------------------------------------------------------------

    def parse(self, msg: Any) -> Parsed:
        """Everything the reducer reads in ``msg``.

        Raises:
            TypeError: ``msg`` is not a message of this format.
        """
        raise NotImplementedError

    def view(self, msg: Any) -> MessageView:
        """The light view of ``msg`` (see :class:`MessageView`).

        Raises:
            TypeError: ``msg`` is not a message of this format.
        """
        return self.parse(msg).view()

    def parts(self, msg: Any) -> Parts:
        """What counts in ``msg``."""
        return self.parse(msg).parts()

    def slots(self, msg: Any) -> list[Slot]:
        """The texts of ``msg`` a step may rewrite, in message order."""
        return self.parse(msg).slots

    # -- writing -------------------------------------------------------------------

    def rewrite(self, msg: Any, changes: Mapping[tuple[Any, ...], str | None]) -> Any:
        """A copy of ``msg`` with the slots at ``changes``' paths set to new texts (None
        removes a text block; a result keeps its block). Everything else is shared.

        Raises:
            TypeError: The message cannot be copied with new content.
        """
        raise NotImplementedError

    def summary_block(
        self,
        text: str,
        block_id: str,
        messages: Sequence[Any],
        before: str | None,
        after: str | None,
    ) -> list[Any]:
        """The summary block for ``text``: one message (two where one cannot keep the
        roles alternating, see :func:`block_sides`), in the kind of message ``messages``
        hold, marked as a summary.

        Args:
            text: The whole text, :data:`SUMMARY_HEADER` first.
            block_id: The block's deterministic id, for a kind that carries ids.
            messages: The list the block goes into (the kind to write).
            before: The side (``human`` or ``ai``) of the message the block follows, or
                None at the start.
            after: The side of the message the block precedes, or None at the end.
        """
        raise NotImplementedError

    def fingerprint_payload(self, msg: Any) -> Any:
        """What, beside role, id, content and calls, tells two messages apart (for
        formats whose content is not in a ``content`` field); JSON-able or repr-able."""
        return None


def block_sides(alternates: bool, before: str | None, after: str | None) -> list[str]:
    """The roles (``human``/``ai``) of a summary block placed between a message of side
    ``before`` and one of side ``after``: one user message in formats where roles need
    not alternate; otherwise one message of the side that differs from both neighbours
    and lets the list start with the user, or two (the summary, then a filler of the
    other side) where no single side does."""
    if not alternates:
        return [HUMAN]
    for side in (HUMAN, AI):
        if side in (before, after):
            continue
        if before is None and side != HUMAN:
            continue
        return [side]
    first = HUMAN if before is None or before == AI else AI
    return [first, AI if first == HUMAN else HUMAN]


class Parsed:
    """A message as a format reads it (see :meth:`MessageFormat.parse`)."""

    __slots__ = (
        "calls",
        "content",
        "flaws",
        "formats",
        "id",
        "images",
        "joins",
        "raw_role",
        "result_extras",
        "result_media",
        "results",
        "role",
        "slots",
        "summary",
        "texts",
        "thinking",
    )

    def __init__(self, role: str, raw_role: str | None, formats: int) -> None:
        self.role = role
        """Normalised role, as :func:`~.reader.role_of` gives it."""
        self.raw_role = raw_role
        self.formats = formats
        self.id: str | None = None
        self.content: Any = None
        self.calls: list[tuple[str | None, str, str, Any]] = []
        """``(id, name, arguments, raw entry)`` per call; id None when the call has none."""
        self.results: list[tuple[str, str]] = []
        """``(key, text)`` per result: the id of the call it answers (or
        :func:`function_call_key` of the function's name)."""
        self.texts: list[str] = []
        self.images = 0
        # What a tool result holds beside its text (media a tool returned, Gemini's extra
        # response parts): counted with the message, but not the message's own content, so
        # a message of results alone stays a result, never a question.
        self.result_media = 0
        self.result_extras: list[str] = []
        self.slots: list[Slot] = []
        self.summary = False
        self.joins = 0
        self.thinking = False
        self.flaws: list[tuple[str, str]] = []

    def call_keys(self) -> tuple[str, ...]:
        """The view's ``call_ids``: each call's id, or the key of its name."""
        keys: list[str] = []
        for call_id, name, _, _ in self.calls:
            if call_id:
                if call_id not in keys:
                    keys.append(call_id)
            elif name:
                keys.append(function_call_key(name))
        return tuple(keys)

    def view(self) -> MessageView:
        results = tuple(key for key, _ in self.results)
        role = self.role
        if results and role == HUMAN and not self.texts and not self.images:
            role = TOOL  # only results: a result, never a question
        return MessageView(
            role,
            self.id,
            self.call_keys() if role == AI else (),
            results[0] if results else None,
            self.summary,
            results,
            self.formats,
            self.joins,
            self.thinking and role == AI,
            tuple(self.flaws),
        )

    def flaw(self, kind: str, detail: str) -> None:
        """Note something the format's rules refuse (see :attr:`MessageView.flaws`)."""
        self.flaws.append((kind, detail))

    def parts(self) -> Parts:
        texts = [*self.texts, *self.result_extras, *(text for _, text in self.results)]
        calls = [(name, arguments) for _, name, arguments, _ in self.calls]
        return Parts(texts, calls if self.role == AI else [], self.images + self.result_media)

    def add_text(self, text: str, path: tuple[Any, ...], kind: str = "text") -> None:
        """A text that counts (reasoning too) and may be rewritten."""
        self.texts.append(text)
        self.slots.append(Slot(kind, path, text))

    def add_result(self, key: str, text: str, path: tuple[Any, ...]) -> None:
        self.results.append((key, text))
        self.slots.append(Slot("result", path, text))

    def header_marked(self) -> bool:
        """Whether the first text slot starts with :data:`SUMMARY_HEADER` or
        :data:`MEMORY_HEADER` (a block the reducer inserted)."""
        for slot in self.slots:
            if slot.kind == "text":
                return slot.text.startswith(BLOCK_HEADERS)
        return False


# -- shared helpers -----------------------------------------------------------------------


def get(entry: Any, key: str, default: Any = None) -> Any:
    """``entry[key]`` for a mapping, ``entry.key`` for an object (SDK types), else
    ``default``."""
    if isinstance(entry, Mapping):
        return entry.get(key, default)
    return getattr(entry, key, default)


def as_text(value: Any) -> str:
    """A value as the text a model is sent: strings as they are, the rest as compact
    JSON (or its ``str`` when it is not JSON-able)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if _UNCHECKED_JSON is not None:
        try:
            return "".join(_UNCHECKED_JSON(value, 0))
        except RecursionError:
            pass  # a value holding itself (or nested too deep): the checked encoder says which
        except (TypeError, ValueError):
            return str(value)
    try:
        return _COMPACT_JSON.encode(value)
    except (TypeError, ValueError):
        return str(value)


def _plain(value: Any) -> Any:
    """JSON for SDK objects (pydantic models) inside arguments and results."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(exclude_none=True)
    if isinstance(value, (bytes, bytearray)):
        return f"<{len(value)} bytes>"
    return str(value)


#: What ``json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=_plain)``
#: builds on every call, built once (counting reads every call's arguments as text).
_COMPACT_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=_plain)


def _unchecked_json() -> Callable[[Any, int], list[str]] | None:
    """The C encoder ``_COMPACT_JSON.encode`` makes on every call (its options, one list of
    chunks per call), made once and without the check for values that hold themselves
    (``markers=None``: a shared markers dict would not be safe between threads, nor after
    an error leaves an entry in it); None where ``json`` has no C accelerator.

    Invariant: ``"".join(encoder(value, 0))`` is ``_COMPACT_JSON.encode(value)`` for every
    value both encode, and raises what it raises otherwise, but for a value that holds
    itself, where it raises RecursionError (:func:`as_text` then asks ``_COMPACT_JSON``);
    tests/test_hot_path.py checks it on hypothesis-drawn values.
    """
    from json import encoder

    make = getattr(encoder, "c_make_encoder", None)
    if make is None:  # pragma: no cover - CPython ships the accelerator
        return None
    made: Callable[[Any, int], list[str]] = make(
        None, _plain, encoder.encode_basestring, None, ":", ",", False, False, True
    )
    return made


_UNCHECKED_JSON = _unchecked_json()


def text_or_none(value: Any) -> str | None:
    """``value`` when it is a non-empty string, else None."""
    return value if isinstance(value, str) and value else None


def is_sequence(value: Any) -> bool:
    """A list or tuple (not a string)."""
    kind = type(value)
    if kind is list or kind is tuple:
        return True
    if kind is str or value is None:
        return False
    return isinstance(value, (list, tuple)) or (
        isinstance(value, Sequence) and not isinstance(value, (str, bytes, bytearray))
    )


def describe(msg: Any) -> str:
    """How an error names a value that is not a message."""
    if msg is None:
        return "got None"
    if isinstance(msg, Mapping):
        keys = ", ".join(repr(k) for k in list(msg)[:6])
        for key in ("role", "type"):
            value = msg.get(key)
            if isinstance(value, str):
                return f"got a dict with {key} {value!r} (keys: {keys})"
        return f"got a dict without a string 'role' or 'type' (keys: {keys or 'none'})"
    return f"got {type(msg).__name__} {short_repr(msg)}"


def short_repr(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def module_of(msg: Any) -> str:
    """The module of ``msg``'s class (how SDK objects are told apart without imports)."""
    return getattr(type(msg), "__module__", "") or ""
