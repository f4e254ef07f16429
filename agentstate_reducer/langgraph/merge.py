"""The channel reducer: ``Annotated[list, reducer.as_langgraph_reducer()]``.

Every update is merged exactly as LangGraph's ``add_messages`` merges it (or, for states
of plain dicts, by the same rules without coercion), and the merged list is then bounded by
the reducer, inside the channel.
"""

from __future__ import annotations

import hashlib
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from itertools import repeat
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, cast

from langchain_core.messages import (
    BaseMessage,
    BaseMessageChunk,
    RemoveMessage,
    convert_to_messages,
    message_chunk_to_message,
)
from langgraph.channels.binop import BinaryOperatorAggregate
from langgraph.errors import InvalidUpdateError
from langgraph.graph.message import REMOVE_ALL_MESSAGES, add_messages
from typing_extensions import Self, override

from .._checks import check_choice
from ..messages import fingerprint, id_of, with_id
from ..reducer import check_reducer
from ..summary import SUMMARY_ID_PREFIX
from .reduction import warn_if_summary_is_dropped

try:  # LangGraph's Overwrite (newer releases); without it there is nothing to recognise
    from langgraph.types import Overwrite
except ImportError:  # pragma: no cover - depends on the installed langgraph
    Overwrite = None  # type: ignore[assignment,misc]

#: The key of LangGraph's dict form of ``Overwrite``.
_OVERWRITE_KEY = "__overwrite__"

if TYPE_CHECKING:
    from ..reducer import MessageReducer, OnPruneError
    from ..result import ReducerResult

__all__ = ["BoundedMessagesChannel", "ChannelReducer", "MergeMode", "langgraph_reducer"]

MergeMode = Literal["add_messages", "append"]
"""How :func:`langgraph_reducer` merges an update before bounding the list."""

ChannelReducer = Callable[[Any, Any], list[Any]]
"""What ``as_langgraph_reducer()`` returns: ``(existing, update) -> merged, bounded list``."""

_MERGE_MODES: tuple[str, ...] = ("add_messages", "append")

# add_messages is typed through a decorator that hides its ``format`` keyword.
_add_messages: Callable[..., list[Any]] = cast(Callable[..., list[Any]], add_messages)

# One merge function per (reducer, options): LangGraph compares channel reducers by
# identity when a key appears in several schemas (state, input, output, subgraph), so
# calling as_langgraph_reducer() twice must give the same function. The functions are
# kept on the reducer itself: a global weak-keyed table would never release a reducer,
# since each function holds its reducer.
_CACHE_ATTRIBUTE = "_agentstate_channel_reducers"
_cache_lock = threading.Lock()


def langgraph_reducer(
    reducer: MessageReducer,
    *,
    merge: MergeMode = "add_messages",
    format: Literal["langchain-openai"] | None = None,
    on_prune_error: OnPruneError = "keep",
) -> BoundedMessagesChannel:
    """A LangGraph channel reducer that merges like ``add_messages``, then bounds the list.

    Use it as ``messages: Annotated[list, reducer.as_langgraph_reducer()]``. In each
    super-step every write is merged into the current list, in LangGraph's order, then the
    merged list goes to ``reducer.reduce`` once and what survives is stored. Summary
    messages the reducer injects carry a deterministic id (one is added to dicts and
    LangChain messages that lack it), so replays see the same ids and a later
    ``RemoveMessage`` can target them.
    Calling it twice with the same reducer and options returns the same function, as
    LangGraph requires when a key appears in several schemas (a reducer object without
    instance attributes gets a new function each time).

    Merge modes:

    * ``"add_messages"`` (default): the update is merged by LangGraph's ``add_messages``
      itself, so everything it does holds: dicts, ``(role, content)`` tuples and strings
      become messages, missing ids are assigned (deterministic ones: see above; the
      message objects a node wrote are left as they are), a message with a known id replaces the
      old one in place, ``RemoveMessage(id=...)`` deletes, ``RemoveMessage(id=
      REMOVE_ALL_MESSAGES)`` clears the list, and removing an unknown id raises the same
      ``ValueError``. ``format`` is passed to ``add_messages``.
    * ``"append"``: for states that hold plain dicts (OpenAI or LangChain shape) and want
      to keep them. Nothing is converted and no ids are assigned: each new item is
      appended as given, except that an item whose id equals an existing item's id
      replaces it in place, a ``RemoveMessage`` (or a dict ``{"type": "remove", "id":
      ...}``) deletes by id, and ``REMOVE_ALL_MESSAGES`` clears the list, with the same
      error as ``add_messages`` for an unknown id. ``format`` must be None.

    The channel reducer runs outside any node, so it cannot see the run's config: the
    ``on_prune`` hooks receive ``namespace=None``. Use :func:`create_reduction_node` or
    the checkpoint saver when hooks need a per-thread namespace. LangGraph may apply the
    same write more than once (``get_state`` on a thread with pending writes, resuming
    after an interrupt): a message written without an id gets a deterministic one (see
    ``_StepIds``), the same in every replay, so hooks are deduplicated by message id and
    content, and the reducer reuses the summary it made for the same messages instead of
    calling ``summarize_fn`` again.
    While a hook or summarizer is down the list is stored unpruned (the retry buffer),
    while nodes read the reducer's view of it, within the bound (see
    :class:`BoundedMessagesChannel`).
    An update wrapped in LangGraph's ``Overwrite`` bypasses channel reducers, so it is
    stored unbounded (nodes read the view).

    Args:
        reducer: The reducer that bounds the merged list.
        merge: ``"add_messages"`` or ``"append"``, as above.
        format: ``add_messages``' output format (``"langchain-openai"`` or None).
        on_prune_error: ``"keep"`` (default): a memory store or summarizer that is down
            never fails the run; the list is stored unpruned and the next write tries
            again. ``"raise"``: the write (and so the step) fails with the reducer's error.

    Returns:
        A :class:`BoundedMessagesChannel`: LangGraph uses it as the channel (all writes of
        a super-step merged, then bounded once); called as ``(existing, new) -> list`` it
        is the channel reducer.

    Raises:
        TypeError: ``merge`` or ``format`` is not a string (``format`` may be None).
        ValueError: ``merge`` or ``format`` is not one of the accepted values.

    The returned function raises ``ValueError`` when called with None for either list,
    what ``add_messages`` raises for a bad update (and, in ``"append"`` mode, the same
    ``ValueError`` for an unknown id), ``TypeError`` for items the reducer cannot read, and,
    with ``on_prune_error="raise"``, ``SummaryError`` / ``PruneHookError`` from the
    reducer.
    """
    check_reducer(reducer)
    check_choice("merge", merge, _MERGE_MODES)
    check_choice("format", format, ("langchain-openai",), allow_none=True)
    check_choice("on_prune_error", on_prune_error, ("keep", "raise"))
    if merge == "append" and format is not None:
        raise ValueError(
            f"format={format!r} converts messages, which merge='append' never does; "
            "use merge='add_messages' to get formatted messages"
        )
    key = (merge, format, on_prune_error)
    with _cache_lock:
        try:
            cache: dict[tuple[str, str | None, str], BoundedMessagesChannel] = vars(
                reducer
            ).setdefault(_CACHE_ATTRIBUTE, {})
        except TypeError:  # a reducer without instance attributes: no reuse
            return _make_channel(reducer, merge, format, on_prune_error)
        function = cache.get(key)
        if function is None:
            warn_if_summary_is_dropped(reducer, "a state channel")
            function = _make_channel(reducer, merge, format, on_prune_error)
            cache[key] = function
    return function


def _make_channel(
    reducer: MessageReducer,
    merge: str,
    format: Literal["langchain-openai"] | None,
    on_prune_error: OnPruneError,
) -> BoundedMessagesChannel:
    return BoundedMessagesChannel(list, _BoundedMerge(reducer, merge, format, on_prune_error))


class _BoundedMerge:
    """The two halves of the channel reducer: merge one update, bound a merged list."""

    def __init__(
        self,
        reducer: MessageReducer,
        merge: str,
        format: Literal["langchain-openai"] | None,
        on_prune_error: OnPruneError,
    ) -> None:
        self.reducer = reducer
        self.mode = merge
        self.format = format
        self.on_prune_error: OnPruneError = on_prune_error
        # LangGraph compares channel operators by name (and lambdas as equal).
        self.__name__ = f"bounded_{merge}"

    def merge(self, existing: Any, update: Any, ids: _StepIds | None = None) -> list[Any]:
        """Merge one update; ``ids`` names the id-less messages of the super-step's
        updates (a fresh one per call when None: the update is a step of its own)."""
        return self.merge_known(existing, update, ids, None)[0]

    def merge_known(
        self,
        existing: Any,
        update: Any,
        ids: _StepIds | None,
        known: _Known | None,
        owner: object = None,
    ) -> tuple[list[Any], _Known | None]:
        """:meth:`merge`, given what the caller knows of ``existing`` (``known``: a record
        that describes it, or None), and returning the merged list with what is known of
        it (None: the next merge works it out). ``owner`` stands for the caller: the id
        sets it made it may change in place (see :class:`_IdSet`).

        When ``existing`` is a list of plain messages with ids (known, or found by one
        O(n) scan), ``name_left`` has nothing to do, and an update that only appends new
        messages skips ``add_messages``: :func:`_append_merge` returns what it would."""
        if self.mode != "add_messages":
            return _append(existing, update), None
        if existing is None or update is None:
            return _add_messages(existing, update, format=self.format), None  # its own error
        if known is None and self.format is None:
            known = _scan(existing, owner)
        if known is None:  # a list to name first, or a format for add_messages to apply
            ids = ids or _StepIds(existing)
            left = ids.name_left(existing)
            return _add_messages(left, ids.name(update, left), format=self.format), None
        # An update of plain messages that all have ids is what ``name`` would return.
        appended = _append_merge(existing, update, known, owner)
        if appended is not None:
            return appended
        ids = ids or _StepIds(existing)
        right = ids.name(update, existing, known)
        if right is not update:  # wrapped, converted or named: it may append now
            appended = _append_merge(existing, right, known, owner)
            if appended is not None:
                return appended
        return _add_messages(existing, right), None

    def bound(self, merged: list[Any]) -> list[Any]:
        return self.bound_and_view(merged)[0]

    def bound_and_view(
        self, merged: list[Any], known: _Known | None = None, owner: object = None
    ) -> tuple[list[Any], _View | None, _Known | None]:
        """The list to store, what nodes read instead of it (None: the list itself), and
        what is known of the stored list, given ``known`` of ``merged`` (None: nothing;
        ``owner`` as for :meth:`merge_known`).

        The channel's list is the retry buffer whatever the mode ("raise" fails the
        write): while a hook or summarizer is down it is stored unpruned, and nodes (the
        model) read the reducer's view of it, within the bound."""
        result = self.reducer.reduce(merged, on_prune_error="keep")
        error = result.hook_error or result.summary_error
        if error is not None and self.on_prune_error == "raise":
            raise error
        stored = _surviving_with_ids(result, coerce=self.mode == "add_messages", format=self.format)
        stored_known = None if known is None else _known_after(result, merged, stored, known, owner)
        return stored, (self.view(stored) if error is not None else None), stored_known

    def view(self, stored: list[Any]) -> _View | None:
        """The reducer's view of ``stored`` (what a model may be sent), or None when that
        is ``stored`` itself (within the bound)."""
        if not self.reducer.limits.may_prune(len(stored)):
            return None
        result = self.reducer.view(stored, on_prune_error="keep")
        if not result.pruned and not result.rewritten:
            return None
        given = {id(m) for m in stored}
        rewrites = {
            message_id: fingerprint(m)
            for m in result.surviving
            if id(m) not in given and (message_id := id_of(m)) is not None
        }
        return _View(result.surviving, rewrites)

    def __call__(self, existing: Any, update: Any) -> list[Any]:
        return self.call_known(existing, update, None)[0]

    def call_known(
        self, existing: Any, update: Any, known: _Known | None, owner: object = None
    ) -> tuple[list[Any], _Known | None]:
        """Merge one update and bound the result, as LangGraph's channel reducer; ``known``
        is what the caller remembers of the list it stored last (used only when
        ``existing`` is that list; ``owner`` as for :meth:`merge_known`). Returns the
        stored list and what to remember of it."""
        if existing is None or update is None:
            # add_messages(None, None) returns a partial of itself (its decorator form), which
            # the reducer would then refuse as "not a list"; name the real mistake instead.
            missing = " and ".join(
                f"{name}=None" for name, value in (("existing", existing), ("update", update))
                if value is None
            )  # fmt: skip
            raise ValueError(
                f"as_langgraph_reducer()(existing, update) got {missing}: LangGraph calls it "
                "with the channel's current list ([] before the first write) and the update "
                "a node returned, never None; called directly, pass two lists of messages "
                "(for example ([], [message]))"
            )
        known = _known_of(known, existing)
        merged, merged_known = self.merge_known(existing, update, None, known, owner)
        stored, _, stored_known = self.bound_and_view(merged, merged_known, owner)
        return stored, stored_known


class _View(NamedTuple):
    """What nodes read from a channel whose stored list is over the bound: the reducer's
    view, and the fingerprints (by id) of the rewritten messages in it."""

    messages: list[Any]
    rewrites: dict[str, str]


#: The view of a value not computed yet (a channel restored from a checkpoint).
_UNKNOWN: Any = object()


class BoundedMessagesChannel(BinaryOperatorAggregate[list[Any]]):
    """The channel ``as_langgraph_reducer()`` returns (also callable as the reducer).

    LangGraph applies a channel's reducer once per write; this channel merges all the
    writes of a super-step first, in LangGraph's order, exactly as ``add_messages`` would
    see them, and bounds the merged list once. So parallel nodes that append, edit an old
    message by id, or remove one with ``RemoveMessage`` in the same step behave as with
    plain ``add_messages``; only the bound comes after. An ``Overwrite`` write is stored as
    given (LangGraph's rule: it bypasses the reducer).

    What is stored and what is read can differ: while a hook or summarizer is down the
    list is stored unpruned (``checkpoint()``: the retry buffer, nothing lost), but
    ``get()``, what nodes (and so the model) read, is the reducer's view of it
    (:meth:`MessageReducer.view`), within the bound; likewise for a stored list over the
    bound for another reason (an ``Overwrite``, a thread stored before the reducer). The
    view may hold rewritten messages (cleared, compressed) under their originals' ids: a
    node writing such a message back unchanged writes nothing (the stored original stays,
    and reaches the hooks when it leaves).

    Called directly, ``channel(existing, update)`` merges one update and bounds the result.
    """

    operator: _BoundedMerge

    def __init__(self, typ: Any, operator: _BoundedMerge) -> None:
        super().__init__(typ, operator)
        self._view: _View | None = None
        # The ids of the list this channel stored (or, called directly, returned) last; it
        # holds that list. Replaced whole, never changed: copies may share it (its id set
        # is versioned, see _IdSet), and direct calls from several threads at worst find
        # it describes another list and work the ids out again.
        self._known: _Known | None = None
        # Stands for this channel as the owner of the id sets it made (a copy gets its own).
        self._owner = object()

    def __call__(self, existing: Any, update: Any) -> list[Any]:
        stored, self._known = self.operator.call_known(existing, update, self._known, self._owner)
        return stored

    @override
    def copy(self) -> Self:
        clone = super().copy()
        clone._view = self._view
        clone._known = self._known
        return clone

    @override
    def from_checkpoint(self, checkpoint: Any) -> Self:
        restored = super().from_checkpoint(checkpoint)
        restored._view = _UNKNOWN  # computed when first read: the stored list may be over
        return restored

    @override
    def get(self) -> list[Any]:
        value = super().get()
        view = self._known_view()
        return value if view is None else view.messages

    def _known_view(self) -> _View | None:
        if self._view is _UNKNOWN:
            value = self.value
            self._view = self.operator.view(value) if isinstance(value, list) else None
        return self._view

    @override
    def update(self, values: Sequence[list[Any]]) -> bool:
        if not values:
            return False
        merged: Any = self.value if isinstance(self.value, list) else []
        known = _known_of(self._known, merged)
        overwritten = False
        ids = _StepIds(merged)
        view = self._known_view()
        for value in values:
            if view is not None and view.rewrites:
                value = _without_write_backs(value, view.rewrites)
            is_overwrite, replacement = _overwrite_of(value)
            if is_overwrite:
                if overwritten:
                    raise InvalidUpdateError(
                        "Can receive only one Overwrite value per super-step "
                        f"(channel {self.key!r})"
                    )
                merged, overwritten = replacement, True
            elif not overwritten:
                merged, known = self.operator.merge_known(merged, value, ids, known, self._owner)
        if overwritten:
            self.value, self._view, self._known = merged, _UNKNOWN, None
        else:
            self.value, self._view, self._known = self.operator.bound_and_view(
                merged, known, self._owner
            )
        return True


def _without_write_backs(update: Any, rewrites: dict[str, str]) -> Any:
    """``update`` without the view's rewritten messages a node wrote back unchanged
    (they would replace the stored originals, which never reached the hooks)."""
    items = update if isinstance(update, list) else [update]
    kept = [
        m
        for m in items
        if not (
            isinstance(m, (BaseMessage, Mapping))
            and (message_id := id_of(m)) in rewrites
            and fingerprint(m) == rewrites[message_id]
        )
    ]
    if len(kept) == len(items):
        return update
    return kept


class _StepIds:
    """Deterministic ids for the messages without one in a super-step's updates.

    ``add_messages`` gives such a message a random id each time it merges it, and
    LangGraph merges the same writes again on every ``get_state`` of a thread with pending
    writes and on the resume after an ``interrupt()``: each replay would make new messages
    of old ones, so the summary, its id and the hand-off would see them as new. Here a
    message without an id gets one derived from

    * the id of the last message of the list the super-step started from (the same in
      every replay of the step: it is what the checkpoint holds);
    * a digest of the whole update it came in (its messages' fingerprints, so two writes
      of different content never share ids), and its index in that update;
    * how many equal updates came before it in the step (parallel tasks writing exactly
      the same messages stay distinct).

    LangGraph applies a step's writes sorted by task path, so the same tasks always come
    in the same order. Parallel tasks with different writes get the same ids whether or
    not a task still waits in an ``interrupt()`` (a ``get_state`` preview applies the
    writes of the finished tasks only, the resume all of them); only tasks writing
    exactly equal updates are numbered in order, so one of those may be numbered
    differently in a preview than after the resume. A list with no message yet has
    nothing to derive from: there the ids are random, as ``add_messages`` makes them (a
    chain of derived ids then starts from a random one, so two threads saying the same
    things still get ids of their own). Invariant: the ids depend only on the stored list
    and the step's writes, never on time or on the process. Unlike ``add_messages``, the
    message object a node wrote is not given the id in place: a copy with it is merged, so
    a saver that stores the write after this merge stores what the node wrote.
    """

    __slots__ = ("_last", "_seen")

    def __init__(self, existing: Any) -> None:
        # The anchor's message; its id is read only when an id is derived (rarely needed).
        self._last: Any = existing[-1] if isinstance(existing, list) and existing else None
        self._seen: dict[str, int] = {}  # a plain dict: one is made at every write

    def name(self, update: Any, existing: list[Any], known: _Known | None = None) -> list[Any]:
        """``update`` as messages (coerced as ``add_messages`` coerces it), every one with
        an id that no message of ``existing`` has (``known``: a record of ``existing``)."""
        right = _coerce(update if isinstance(update, list) else [update])
        if None not in map(_ID, right):
            return right
        digest = hashlib.sha256()
        for message in right:
            digest.update(fingerprint(message).encode())
        write = digest.hexdigest()
        occurrence = self._seen.get(write, 0)
        self._seen[write] = occurrence + 1
        taken = _ids_now(known)
        if taken is None:
            taken = set(map(_ID, existing))
        taken.update(m.id for m in right if m.id is not None)
        named: list[Any] = []
        for index, message in enumerate(right):
            if message.id is None:
                name = f"{write}:{occurrence}:{index}"
                new_id = self._derive(name)
                salt = 0
                # Only a list reordered by REMOVE_ALL_MESSAGES can hold a derived id again;
                # a new message must never replace it (add_messages would append).
                while new_id in taken:
                    salt += 1
                    new_id = self._derive(f"{name}:{salt}")
                taken.add(new_id)
                message = _with_id(message, new_id)
            named.append(message)
        return named

    def name_left(self, existing: Any) -> list[Any]:
        """The stored list with ids for messages that lack one (a value an ``Overwrite``
        stored as given): derived from the message before it and its content."""
        left = existing if isinstance(existing, list) else [existing]
        if _all_messages(left) and None not in map(_ID, left):
            return left
        previous = ""
        seen: Counter[tuple[str, str]] = Counter()
        named: list[Any] = []
        for message in _coerce(left):
            if message.id is None:
                fp = fingerprint(message)
                count = seen[(previous, fp)]
                seen[(previous, fp)] += 1
                message = _with_id(
                    message, str(uuid.uuid5(_ID_NAMESPACE, f"left:{previous}:{fp}:{count}"))
                )
            previous = message.id
            named.append(message)
        return named

    def _derive(self, name: str) -> str:
        anchor = None if self._last is None else id_of(self._last)
        if anchor is None:
            return str(uuid.uuid4())
        return str(uuid.uuid5(_ID_NAMESPACE, f"{anchor}:{name}"))


#: The uuid5 namespace of the ids the channel derives (any fixed uuid would do).
_ID_NAMESPACE = uuid.UUID("5f0cfe5e-4b43-4a0b-9a43-0b9d8e1fd3a7")


def _with_id(message: BaseMessage, new_id: str) -> BaseMessage:
    """A copy of ``message`` with ``new_id``: the object a node wrote is left as it is, so
    a write a saver stores later (after this merge) is stored as the node wrote it, and
    every replay derives the same id from it."""
    return message.model_copy(update={"id": new_id})


_ID = attrgetter("id")


def _all_messages(items: list[Any]) -> bool:
    """Whether every item is a LangChain message (a C-level loop: this runs on the whole
    list at every write)."""
    return all(map(isinstance, items, repeat(BaseMessage)))


def _coerce(messages: list[Any]) -> list[Any]:
    """Messages as ``add_messages`` coerces them (dicts, tuples and strings converted,
    chunks made whole; a list of plain messages returned as it is)."""
    if _all_messages(messages) and not any(map(isinstance, messages, repeat(BaseMessageChunk))):
        return messages
    return [message_chunk_to_message(m) for m in convert_to_messages(messages)]


def _overwrite_of(value: Any) -> tuple[bool, Any]:
    """LangGraph's ``Overwrite`` in its three forms: the dataclass, the sentinel-keyed
    dict, and the dict a JSON round trip makes of the dataclass."""
    if Overwrite is not None and isinstance(value, Overwrite):
        return True, value.value
    if isinstance(value, dict):
        if len(value) == 1 and _OVERWRITE_KEY in value:
            return True, value[_OVERWRITE_KEY]
        if value.get("type") == _OVERWRITE_KEY and "value" in value:
            return True, value["value"]
    return False, None


def _surviving_with_ids(
    result: ReducerResult, *, coerce: bool, format: Literal["langchain-openai"] | None
) -> list[Any]:
    """``result.surviving`` with every injected summary message carrying an id.

    In ``add_messages`` mode the summary also becomes a message (a custom
    ``summary_message_factory`` may return dicts), so the list keeps ``add_messages``'
    guarantee that it holds only messages with ids.
    """
    injected = result.summary_messages
    if not injected:
        return result.surviving
    with_ids = [with_id(m, SUMMARY_ID_PREFIX + fingerprint(m)) for m in injected]
    replacements = _add_messages([], with_ids, format=format) if coerce else with_ids
    by_identity = {id(old): new for old, new in zip(injected, replacements, strict=True)}
    return [by_identity.get(id(message), message) for message in result.surviving]


class _IdSet:
    """The ids of a list the channel produced, kept from one list to the next of a chain.

    The channel that made the set (``owner``) adds the ids of what it appends to it in
    place, and removes those of what it prunes, instead of copying the set
    (O(len(update)), not O(n), per write). Each change bumps ``version``: a
    :class:`_Known` record of an older list of the chain then no longer matches and its
    ids are worked out again. A copy of the channel (LangGraph makes one to show a
    conditional edge the state with a node's writes, and for ``get_state`` previews)
    shares the record, but extends a copy of the set, so the channel it was copied from
    keeps its fast path. Ownership only saves copies: correctness rests on the versions.
    Read and changed only under ``_id_sets_lock``: copies of a channel, and direct calls
    from several threads, may share a set.
    """

    __slots__ = ("ids", "owner", "version")

    def __init__(self, ids: set[str], owner: object) -> None:
        self.ids = ids
        self.owner = owner
        self.version = 0


_id_sets_lock = threading.Lock()


class _Known:
    """What the channel knows of a list it produced: the ids of its messages.

    Invariant: ``messages`` is a plain list of plain LangChain messages (no chunks: see
    :func:`_scan`), each with an id, and while ``id_set.version == version``,
    ``id_set.ids`` is exactly the set of their ids. The record holds the list itself (so
    another list can never pass for it) and a copy of it made with the record: LangGraph
    hands nodes the channel's own list, so a node may change it in place (append, pop,
    replace ``state["messages"][i]``), and a list that is no longer item for item its copy
    is not described by the record any more (the comparison is C-level and stops at the
    first item that is not the same object; an equal message in its place has the same id).
    Not seen: a message object whose ``id`` a node reassigns in place.
    """

    __slots__ = ("id_set", "messages", "snapshot", "version")

    def __init__(self, messages: list[Any], id_set: _IdSet, version: int) -> None:
        self.messages = messages
        self.snapshot = messages.copy()
        self.id_set = id_set
        self.version = version

    def describes(self, value: Any) -> bool:
        """Whether ``value`` is the list this record was made of, as it was then (whether
        its ids are still those of ``id_set`` is checked under the lock, where used)."""
        return value is self.messages and value == self.snapshot


def _known_of(known: _Known | None, value: Any) -> _Known | None:
    """``known`` if it describes ``value``, else None."""
    return known if known is not None and known.describes(value) else None


def _ids_now(known: _Known | None) -> set[str] | None:
    """A copy of the ids ``known`` records, or None when it has none or they have changed."""
    if known is None:
        return None
    id_set = known.id_set
    with _id_sets_lock:
        return set(id_set.ids) if id_set.version == known.version else None


#: Message types ``add_messages`` appends as they are (a bounded cache: the test walks the
#: class hierarchy, and a program has few message types).
_appendable_types: set[type] = set()


def _appendable(messages: list[Any]) -> bool:
    """Whether every item is of a plain message type that removes nothing: a message
    (``add_messages`` converts anything else), not a chunk (it makes a whole message of
    one) and not a ``RemoveMessage``."""
    for kind in set(map(type, messages)) - _appendable_types:
        if not issubclass(kind, BaseMessage) or issubclass(kind, (BaseMessageChunk, RemoveMessage)):
            return False
        if len(_appendable_types) < 64:
            _appendable_types.add(kind)
    return True


def _scan(items: Any, owner: object = None) -> _Known | None:
    """A record of ``items`` when it is a list the fast path may extend (a plain list of
    plain messages, each with an id: ``add_messages`` would neither convert nor name any of
    them, and a RemoveMessage stored there is just a message), else None. O(n)."""
    if type(items) is not list:
        return None
    for kind in set(map(type, items)):
        if not issubclass(kind, BaseMessage) or issubclass(kind, BaseMessageChunk):
            return None
    ids = set(map(_ID, items))
    if None in ids:
        return None
    return _Known(items, _IdSet(ids, owner), 0)


def _append_merge(
    left: list[Any], right: Any, known: _Known, owner: object = None
) -> tuple[list[Any], _Known] | None:
    """``left + right`` and its record, when that is exactly what ``add_messages(left,
    right)`` returns (with ``format=None``); None when it may not be (the caller falls back
    to ``add_messages``). The record's id set is ``known``'s, extended in place, if
    ``owner`` owns it, else an extended copy that ``owner`` owns.

    The caller's invariant: ``known`` describes ``left`` (see :class:`_Known`), so
    ``add_messages`` would leave ``left`` as it is. Checked here: ``known``'s ids are
    current, and ``right`` is a list of plain messages (none to convert), none a
    ``RemoveMessage`` (no removal, no ``REMOVE_ALL_MESSAGES``), each with an id (none to
    assign), no id twice (the second would replace the first) and none of ``left``'s (it
    would replace a stored message). Then ``add_messages`` appends each message of
    ``right``, in order, to a copy of ``left``. O(len(right)) plus the list copy (and the
    id set's copy when it is not ``owner``'s).
    """
    if type(right) is not list:
        return None
    if not _appendable_types.issuperset(map(type, right)) and not _appendable(right):
        return None
    new_ids = set(map(_ID, right))
    if None in new_ids or len(new_ids) != len(right):
        return None
    id_set = known.id_set
    with _id_sets_lock:
        if id_set.version != known.version or not id_set.ids.isdisjoint(new_ids):
            return None
        if id_set.owner is owner:
            id_set.ids |= new_ids
            id_set.version += 1
        else:
            id_set = _IdSet(id_set.ids | new_ids, owner)
        version = id_set.version
    merged = left + right
    return merged, _Known(merged, id_set, version)


def _known_after(
    result: ReducerResult,
    merged: list[Any],
    stored: list[Any],
    known: _Known,
    owner: object = None,
) -> _Known | None:
    """The record of ``stored``, the list the reduce of ``merged`` left, from ``known``, the
    record of ``merged``; None when it cannot be had cheaply (the next merge scans). Its
    id set is changed in place only if ``owner`` owns it (see :class:`_IdSet`).

    By the result's contract, when the reduce rewrote and injected nothing, ``stored``
    holds ``merged``'s messages as given but for the ``pruned`` ones. Kept as given (the
    lists equal: the same objects, a C-level loop that stops at identity), the ids are
    the same; pruned (ids all distinct, lengths adding up), they lose the pruned ids.
    """
    if result.rewritten or result.summary_messages or result.folded_summaries:
        return None
    if not result.pruned:
        if stored is merged:
            return known
        return _Known(stored, known.id_set, known.version) if stored == merged else None
    if len(stored) + len(result.pruned) != len(merged):
        return None
    id_set = known.id_set
    with _id_sets_lock:
        if id_set.version != known.version or len(id_set.ids) != len(merged):
            return None  # changed since, or an id twice: pruning one copy keeps the id
        pruned_ids = [getattr(m, "id", None) for m in result.pruned]
        if id_set.owner is owner:
            id_set.ids.difference_update(pruned_ids)
            id_set.version += 1
        else:
            id_set = _IdSet(id_set.ids.difference(pruned_ids), owner)
        if len(id_set.ids) != len(stored):
            return None
        return _Known(stored, id_set, id_set.version)


def _is_remove(message: Any) -> bool:
    if isinstance(message, RemoveMessage):
        return True
    return isinstance(message, Mapping) and message.get("type") == "remove"


def _append(existing: Any, new: Any) -> list[Any]:
    """``add_messages``' merge rules without coercion or id assignment."""
    if existing is None or new is None:
        # The same complaint add_messages makes, for the same mistake.
        which = "left" if existing is not None else "right"
        raise ValueError(
            "Must specify non-null arguments for both 'left' and 'right'. "
            f"Only received: '{which}'."
        )
    left = existing if isinstance(existing, list) else [existing]
    right = new if isinstance(new, list) else [new]
    for index in range(len(right) - 1, -1, -1):
        if _is_remove(right[index]) and id_of(right[index]) == REMOVE_ALL_MESSAGES:
            return list(right[index + 1 :])
    merged = list(left)
    position = {message_id: i for i, m in enumerate(merged) if (message_id := id_of(m)) is not None}
    removed: set[str] = set()
    for message in right:
        message_id = id_of(message)
        at = position.get(message_id) if message_id is not None else None
        if at is not None and message_id is not None:
            if _is_remove(message):
                removed.add(message_id)
            else:
                removed.discard(message_id)
                merged[at] = message
        elif _is_remove(message):
            raise ValueError(
                f"Attempting to delete a message with an ID that doesn't exist ('{message_id}')"
            )
        else:
            if message_id is not None:
                position[message_id] = len(merged)
            merged.append(message)
    if removed:
        merged = [m for m in merged if id_of(m) not in removed]
    return merged
