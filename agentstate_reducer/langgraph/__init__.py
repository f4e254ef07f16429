"""LangGraph support (extra ``[langgraph]``): state, nodes, agents and checkpointers.

* ``Annotated[list, reducer.as_langgraph_reducer()]``: a channel reducer that merges like
  ``add_messages`` and then bounds the list (:mod:`.merge`).
* :func:`create_reduction_node`: a node returning the ``RemoveMessage`` updates that bound a
  plain ``MessagesState``; :func:`create_reduction_step_node` runs one step of a policy
  (:mod:`.nodes`).
* :class:`ReducerMiddleware` (LangChain ``create_agent``, extra ``[agents]``) and
  :func:`make_pre_model_hook` (``create_react_agent``) (:mod:`.agents`).
* :class:`ReducingCheckpointSaver`: wraps any checkpointer so the message channel is
  reduced before each checkpoint is written (:mod:`.wrapper`, on the shared step
  :class:`CheckpointReduction` of :mod:`.reduction`); :func:`compact_thread` shrinks a
  thread stored before the wrapper was added (:mod:`.compact`).
* :class:`LLMSummarizer`: a ready ``summarize_fn`` on any LangChain chat model, sync and
  async (:mod:`.summarizers`).
* :class:`StoreMemory`: an ``on_prune`` hook writing what leaves the list into any
  LangGraph store (:mod:`.store`); :class:`Recall` (from :mod:`agentstate_reducer.policy`)
  brings it back into the model's view when a question needs it.
* :mod:`.testing`: ``ScriptedChatModel``, a chat model that answers from a script.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._extras import missing_extra

try:
    from .compact import acompact_thread, compact_thread
    from .merge import ChannelReducer, MergeMode, langgraph_reducer
    from .namespace import memory_namespace
    from .nodes import create_reduction_node, create_reduction_step_node, messages_update
    from .reduction import CheckpointReduction
    from .retention import CheckpointRetention
    from .store import StoreMemory
    from .summarizers import LLMSummarizer
    from .wrapper import ReducingCheckpointSaver
except ImportError as exc:
    raise missing_extra("agentstate_reducer.langgraph", "langgraph", exc) from exc
from ..steps.recall import Recall

if TYPE_CHECKING:
    from .agents import AgentMode, ReducerMiddleware, make_pre_model_hook

_AGENT_NAMES = ("AgentMode", "ReducerMiddleware", "make_pre_model_hook")

__all__ = [
    "AgentMode",
    "ChannelReducer",
    "CheckpointReduction",
    "CheckpointRetention",
    "LLMSummarizer",
    "MergeMode",
    "Recall",
    "ReducerMiddleware",
    "ReducingCheckpointSaver",
    "StoreMemory",
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
    # The agent helpers import ``langchain`` (for create_agent middleware), which only the
    # ``[agents]`` extra installs: load them on first use, with an install hint.
    if name in _AGENT_NAMES:
        try:
            from . import agents
        except ImportError as exc:
            # agents raises its own hint from the import that failed: name this attribute
            # instead, and keep that original error as the cause.
            cause = exc.__cause__ if isinstance(exc.__cause__, ImportError) else exc
            raise missing_extra(f"agentstate_reducer.langgraph.{name}", "agents", cause) from cause
        return getattr(agents, name)
    # 0.5 names (ReducingSaver, apply_reducer) resolve with a DeprecationWarning.
    from .._deprecated import resolve

    return resolve(__name__, name)
