"""Kept for imports written against 0.6.0: the checkpointer pieces now live in
:mod:`agentstate_reducer.langgraph.reduction` (:class:`CheckpointReduction`),
:mod:`~agentstate_reducer.langgraph.wrapper` (:class:`ReducingCheckpointSaver`) and
:mod:`~agentstate_reducer.langgraph.compact` (:func:`compact_thread`)."""

from .compact import acompact_thread, compact_thread
from .reduction import CheckpointReduction
from .wrapper import ReducingCheckpointSaver

__all__ = ["CheckpointReduction", "ReducingCheckpointSaver", "acompact_thread", "compact_thread"]
