"""One reducer given to an agent helper and to a checkpoint saver: both prune alike.

The agent helpers (``ReducerMiddleware``, ``make_pre_model_hook``) run their reducer with
``preserve_first="system"`` by default (an agent keeps its system prompt outside the state,
so index 0 is the first user question), through ``reducer.with_config``. A
``ReducingCheckpointSaver`` (or a Cosmos DB saver) given the same reducer object stores
the same agent's list: run with the reducer's own setting (``True`` by default) it would
pin the first question the middleware prunes, prune another window than the middleware,
and summarise some messages a second time. So the saver runs the reducer the newest
agent helper made from it (:func:`paired`): both prune the same window and reuse one
summary.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Literal
from weakref import WeakKeyDictionary

from ..reducer import check_reducer

if TYPE_CHECKING:
    from ..reducer import MessageReducer

__all__ = ["PreserveFirst", "for_agent", "paired"]

PreserveFirst = bool | Literal["system"] | None
"""The ``preserve_first`` an agent helper runs the reducer with; None keeps the reducer's."""

_lock = threading.Lock()
# reducer -> {preserve_first: the reducer an agent helper runs}, and reducer -> the one the
# newest helper made from it (weak: a reducer no one holds is forgotten with its entries).
_derived: WeakKeyDictionary[MessageReducer, dict[object, MessageReducer]] = WeakKeyDictionary()
_newest: WeakKeyDictionary[MessageReducer, MessageReducer] = WeakKeyDictionary()


def for_agent(reducer: MessageReducer, preserve_first: PreserveFirst) -> MessageReducer:
    """``reducer`` as an agent helper runs it: with ``preserve_first`` (sharing its
    memories), one derived reducer per setting; recorded for :func:`paired`.

    Raises:
        TypeError: ``reducer`` is not a ``MessageReducer``, or ``preserve_first`` has the
            wrong type.
        ValueError: ``preserve_first`` is a string other than ``"system"``.
    """
    check_reducer(reducer)
    if preserve_first is None or preserve_first == reducer.config.preserve_first:
        agent = reducer
    else:
        with _lock:
            known = _derived.get(reducer, {}).get(preserve_first)
        if known is None:
            known = reducer.with_config(preserve_first=preserve_first)
            with _lock:
                known = _derived.setdefault(reducer, {}).setdefault(preserve_first, known)
        agent = known
    with _lock:
        _newest[reducer] = agent
    return agent


def paired(reducer: MessageReducer) -> MessageReducer:
    """The reducer a saver given ``reducer`` runs: the one the newest agent helper given
    ``reducer`` runs (same memories, the helper's ``preserve_first``), else ``reducer``."""
    with _lock:
        return _newest.get(reducer, reducer)
