"""``StoreMemory``: an ``on_prune`` hook that keeps what leaves the list in a LangGraph store.

Messages pruned (or rewritten) by a reduce reach the ``on_prune`` hooks once each; this hook
writes them into any LangGraph ``BaseStore`` (``InMemoryStore``, ``PostgresStore``, ...),
where :class:`~agentstate_reducer.policy.Recall` finds them again when a later question
needs them.

Each message is one item (or, with ``extract=``, each fact an extractor draws from the
batch is one), under the namespace the user chose, not the thread's: a user's memories are
found from any of their threads. Keys are derived from what is stored, so a retried or
replayed hand-off, or the same message handed over by two processes, writes the same item
again instead of a second one:

* a message's key is ``"message-"`` and a digest of the conversation it left (the hook's
  namespace argument) and the message (role, id, content, tool calls): the same message
  is one item however often it arrives, and two conversations' equal messages stay two;
* with ``extract``, a fact's key is ``"fact-"`` and a digest of the keys of the messages it
  was drawn from and its place in the extractor's answer; each message extracted is
  recorded under ``("agentstate_reducer", "extracted", *namespace)`` (not searchable
  under ``namespace``), and a later batch holding it again leaves it out, so it is never
  extracted twice.

Every batch is one ``store.batch`` (``abatch`` in ``areduce``) of put operations, written
once as a generator of store operations run by a sync and an async driver. A store that
fails raises, and the reducer keeps the messages and hands them over again (see the
guide docs/guides/summaries-and-memory.md, "Long-term memory hand-off").

Item values (what :class:`~agentstate_reducer.policy.Recall` shows is ``text``):

* a message: ``{"text", "role", "message_id", "conversation", "kind": "message"}``, where
  ``text`` is its content's text and its tool calls' names and arguments;
* a fact: the dict the extractor returned, as it is (give it a ``text`` field).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Generator, Mapping, Sequence
from typing import Any, Literal, TypeAlias

from langgraph.store.base import BaseStore, GetOp, Op, PutOp

from .._calls import call_async, call_sync, hook_name
from .._checks import check_callable
from ..messages import fingerprint, id_of, role_of
from ..steps.recall import is_memory
from ..steps.relevance import message_text

__all__ = ["EXTRACTED_ROOT", "StoreMemory", "store_namespace"]

Namespace: TypeAlias = tuple[str, ...]
NamespaceSpec: TypeAlias = "Namespace | Callable[[Any], Namespace]"
"""A store namespace, or a function of the hook's namespace argument returning one."""
Index: TypeAlias = "Literal[False] | list[str] | None"

#: The root label of the namespaces that record which messages were extracted.
EXTRACTED_ROOT = ("agentstate_reducer", "extracted")

_Step: TypeAlias = "list[Op] | tuple[str, list[Any]]"
"""What the writing generator asks its driver for: store operations to run in one batch,
or ``("extract", messages)`` for the extractor."""


def store_namespace(value: Any, what: str = "namespace") -> Namespace:
    """``value`` as a LangGraph store namespace: a non-empty tuple (or list) of non-empty
    strings without ``.`` or NUL, not rooted at ``"langgraph"``.

    Raises:
        TypeError: ``value`` is not a tuple of strings.
        ValueError: It is empty, or a label is empty or holds a ``.`` or NUL (which
            LangGraph stores refuse), or its root is ``"langgraph"``.
    """
    if isinstance(value, list):
        value = tuple(value)
    if not isinstance(value, tuple) or not all(isinstance(label, str) for label in value):
        raise TypeError(
            f"{what} must be a tuple of strings (a LangGraph store namespace such as "
            f'("memories", user_id)), got {value!r}'
        )
    if not value:
        raise ValueError(f"{what} is empty: a store namespace needs at least one label")
    for label in value:
        if not label or "." in label or "\x00" in label:
            raise ValueError(
                f"{what}={value!r}: label {label!r} is empty or holds '.' or a NUL byte, "
                "which LangGraph stores refuse; replace those characters"
            )
    if value[0] == "langgraph":
        raise ValueError(f"{what}={value!r}: LangGraph reserves the root label 'langgraph'")
    return value


def resolve_namespace(spec: NamespaceSpec, argument: Any, owner: str) -> Namespace:
    """The store namespace ``spec`` gives for the hook's (or reduce's) ``argument``.

    Raises:
        TypeError: A callable ``spec`` returned something that is not a namespace.
        ValueError: It returned an invalid namespace.
    """
    if callable(spec):
        return store_namespace(spec(argument), f"{owner}.namespace({argument!r})")
    return spec


def _digest(*parts: str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\x00")
    return digest.hexdigest()[:32]


def _conversation(namespace: Any) -> Any:
    """The hook's namespace argument in a JSON-able form (for the item and its key)."""
    if namespace is None or isinstance(namespace, (str, int, float, bool)):
        return namespace
    if isinstance(namespace, (tuple, list)) and all(isinstance(p, str) for p in namespace):
        return list(namespace)
    return repr(namespace)


class StoreMemory:
    """An ``on_prune`` hook writing what leaves the list into a LangGraph ``BaseStore``.

    Use it as ``ReducerConfig(on_prune=[StoreMemory(store, namespace=...)])``; it is
    called by ``reduce`` and, through its ``acall``, awaited by ``areduce`` (the async
    savers, nodes and middleware), with ``store.batch`` / ``store.abatch``. See the module
    docstring for keys and values.

    Args:
        store: Any LangGraph ``BaseStore`` (``InMemoryStore``, ``PostgresStore``,
            ``AsyncPostgresStore``, ...).
        namespace: Where the items go: a store namespace such as ``("memories",
            "user-42")``, or a function of the hook's namespace argument returning one
            (the integrations pass ``configurable["memory_namespace"]``, else
            ``("memories", thread_id)``; so ``namespace=lambda ns: ns`` stores per the run's
            ``memory_namespace``). Not the thread's by default: memories outlive threads.
        index: Which fields of each item the store embeds for semantic search: None (the
            store's own ``index`` configuration), False (none: found by filter only), or a
            list of fields (``["text"]`` for messages).
        extract: ``(messages) -> list of dicts`` (sync or async), for example an LLM that
            extracts facts: each dict becomes one item instead of one item per message.
            Messages already extracted (in any earlier batch) are left out.

    Raises:
        TypeError: ``store`` has no ``batch``/``abatch``, ``namespace`` is neither a
            namespace nor callable, ``index`` is not None, False or a list of strings, or
            ``extract`` is not callable.
        ValueError: ``namespace`` is not a valid store namespace.

    When called, it raises what the store raises (the reducer keeps the messages for a
    retry), ``TypeError``/``ValueError`` for a ``namespace`` function returning no valid
    namespace or an ``extract`` returning anything but a list of dicts.
    """

    def __init__(
        self,
        store: BaseStore,
        namespace: NamespaceSpec,
        index: Index = None,
        extract: Callable[[list[Any]], Any] | None = None,
    ) -> None:
        if not (
            callable(getattr(store, "batch", None)) and callable(getattr(store, "abatch", None))
        ):
            raise TypeError(
                f"store must be a LangGraph BaseStore (with batch and abatch), got {store!r}"
            )
        if not callable(namespace):
            namespace = store_namespace(namespace, "StoreMemory.namespace")
        if index is not None and index is not False:
            if isinstance(index, str) or not isinstance(index, Sequence):
                raise TypeError(
                    f"StoreMemory.index must be None, False or a list of field names, got {index!r}"
                )
            if not all(isinstance(f, str) and f for f in index):
                raise TypeError(f"StoreMemory.index must list field names (strings), got {index!r}")
            index = list(index)
        check_callable("StoreMemory.extract", extract)
        self.store = store
        self.namespace: NamespaceSpec = namespace
        self.index: Index = index
        self.extract = extract
        self.__qualname__ = f"StoreMemory({type(store).__name__})"  # how hand-off errors name it

    def __repr__(self) -> str:
        shown = self.namespace if not callable(self.namespace) else hook_name(self.namespace)
        return f"StoreMemory({type(self.store).__name__}, namespace={shown!r})"

    def __call__(self, messages: list[Any], namespace: Any = None) -> None:
        """Write ``messages`` (what left a list of conversation ``namespace``) to the store."""
        writing = self._write(messages, namespace)
        try:
            step = next(writing)
            while True:
                if isinstance(step, tuple):
                    extract = self._extractor()
                    step = writing.send(_facts(extract, call_sync(extract, step[1])))
                else:
                    step = writing.send(self.store.batch(step))
        except StopIteration:
            return

    async def acall(self, messages: list[Any], namespace: Any = None) -> None:
        """Async :meth:`__call__` (``store.abatch``; an async extractor awaited, a sync one
        run in a worker thread)."""
        writing = self._write(messages, namespace)
        try:
            step = next(writing)
            while True:
                if isinstance(step, tuple):
                    extract = self._extractor()
                    step = writing.send(_facts(extract, await call_async(extract, step[1])))
                else:
                    step = writing.send(await self.store.abatch(step))
        except StopIteration:
            return

    # -- the writing, once for both drivers ---------------------------------------------

    def _extractor(self) -> Callable[[list[Any]], Any]:
        assert self.extract is not None  # the writing asks for it only then
        return self.extract

    def message_key(self, message: Any, namespace: Any = None) -> str:
        """The key the message's item gets (or, with ``extract``, its record), for the
        conversation ``namespace`` it left."""
        conversation = json.dumps(_conversation(namespace), sort_keys=True)
        return "message-" + _digest(conversation, fingerprint(message))

    def _write(self, messages: list[Any], namespace: Any) -> Generator[_Step, Any, None]:
        target = resolve_namespace(self.namespace, namespace, "StoreMemory")
        # A memory block Recall inserted is what the store already holds: never again.
        kept = [m for m in messages if not is_memory(m)]
        if not kept:
            return
        keys = [self.message_key(m, namespace) for m in kept]
        if self.extract is None:
            conversation = _conversation(namespace)
            items = [
                PutOp(target, key, _message_value(m, conversation), self.index)
                for key, m in zip(keys, kept, strict=True)
            ]
            for part in _distinct_texts(items):
                yield part
            return
        records = (*EXTRACTED_ROOT, *target)
        found = yield [GetOp(records, key) for key in keys]
        todo = [(key, m) for key, m, item in zip(keys, kept, found, strict=True) if item is None]
        todo = list(dict(todo).items())  # one message listed twice is extracted once
        if not todo:
            return
        facts = yield ("extract", [m for _, m in todo])
        source = _digest(*(key for key, _ in todo))
        fact_keys = [f"fact-{_digest(source, str(n))}" for n in range(len(facts))]
        puts = [
            PutOp(target, key, dict(fact), self.index)
            for key, fact in zip(fact_keys, facts, strict=True)
        ]
        batches = _distinct_texts(puts)
        # The records come after the facts, in the last batch: a write that fails before
        # them is extracted again (the same keys), never skipped.
        batches[-1] += [PutOp(records, key, {"facts": fact_keys}, False) for key, _ in todo]
        for part in batches:
            yield part


def _distinct_texts(ops: Sequence[Op]) -> list[list[Op]]:
    """``ops`` in as few batches as keep the items of each batch apart by text: LangGraph's
    ``InMemoryStore`` embeds each distinct text of a batch once and then refuses the batch
    ("Number of embeddings does not match number of indices") when two items share one (two
    "Noted." answers pruned together). Order is kept within each batch."""
    batches: list[list[Op]] = []
    seen: list[set[str]] = []
    for op in ops:
        value = getattr(op, "value", None)
        text = value.get("text") if isinstance(value, Mapping) else None
        key = text if isinstance(text, str) else json.dumps(value, sort_keys=True, default=str)
        for batch, texts in zip(batches, seen, strict=True):
            if key not in texts:
                batch.append(op)
                texts.add(key)
                break
        else:
            batches.append([op])
            seen.append({key})
    return batches or [[]]


def _facts(extract: Any, answer: Any) -> list[dict[str, Any]]:
    if not isinstance(answer, list) or not all(
        isinstance(fact, Mapping) and all(isinstance(k, str) for k in fact) for fact in answer
    ):
        raise TypeError(
            f"StoreMemory.extract {hook_name(extract)} returned {answer!r}; it must return a "
            "list of dicts (one per fact, each an item's value)"
        )
    return [dict(fact) for fact in answer]


def _message_value(message: Any, conversation: Any) -> dict[str, Any]:
    return {
        "text": message_text(message),
        "role": role_of(message),
        "message_id": id_of(message),
        "conversation": conversation,
        "kind": "message",
    }
