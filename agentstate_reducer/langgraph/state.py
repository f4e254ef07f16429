"""Kept for imports written against 0.6.0: the channel reducer and the reduction nodes now
live in :mod:`agentstate_reducer.langgraph.merge`, :mod:`~agentstate_reducer.langgraph.nodes`
and :mod:`~agentstate_reducer.langgraph.namespace`."""

from .merge import ChannelReducer, MergeMode, langgraph_reducer
from .namespace import memory_namespace
from .nodes import StepChoice, create_reduction_node, create_reduction_step_node, messages_update

__all__ = [
    "ChannelReducer",
    "MergeMode",
    "StepChoice",
    "create_reduction_node",
    "create_reduction_step_node",
    "langgraph_reducer",
    "memory_namespace",
    "messages_update",
]
