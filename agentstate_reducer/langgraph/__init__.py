"""LangGraph support (extra ``[langgraph]``): state, nodes, agents and checkpointers.

* ``Annotated[list, reducer.as_langgraph_reducer()]``: a channel reducer that merges like
  ``add_messages`` and then bounds the list (:func:`langgraph_reducer`).
* :func:`create_reduction_node`: a node returning the ``RemoveMessage`` updates that bound a
  plain ``MessagesState``; :func:`create_reduction_step_node` runs one step of a policy.
* :class:`ReducerMiddleware` (LangChain ``create_agent``, needs ``langchain``) and
  :func:`make_pre_model_hook` (``create_react_agent``).
* :class:`ReducingCheckpointSaver`: wraps any checkpointer so the message channel is
  reduced before each checkpoint is written; :func:`compact_thread` shrinks a thread
  stored before the wrapper was added.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

try:
    from .saver import (
        CheckpointReduction,
        ReducingCheckpointSaver,
        acompact_thread,
        compact_thread,
    )
    from .state import (
        MergeMode,
        create_reduction_node,
        create_reduction_step_node,
        langgraph_reducer,
        memory_namespace,
        messages_update,
    )
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        'agentstate_reducer.langgraph needs LangGraph: pip install "agentstate-reducer[langgraph]"'
    ) from exc

if TYPE_CHECKING:
    from .agents import AgentMode, ReducerMiddleware, make_pre_model_hook

_AGENT_NAMES = ("AgentMode", "ReducerMiddleware", "make_pre_model_hook")

__all__ = [
    "AgentMode",
    "CheckpointReduction",
    "MergeMode",
    "ReducerMiddleware",
    "ReducingCheckpointSaver",
    "acompact_thread",
    "compact_thread",
    "create_reduction_node",
    "create_reduction_step_node",
    "langgraph_reducer",
    "make_pre_model_hook",
    "memory_namespace",
    "messages_update",
]


def __getattr__(name: str) -> Any:
    # The agent helpers import ``langchain`` (for create_agent middleware), which the
    # ``[langgraph]`` extra does not require: load them on first use.
    if name in _AGENT_NAMES:
        from . import agents

        return getattr(agents, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
