"""agentstate-reducer: keep LLM agent message histories bounded without breaking them.

Works with plain dicts (OpenAI or LangChain shape), LangChain messages and duck-typed
message objects, with no required dependency. LangGraph support lives in
``agentstate_reducer.langgraph`` (extra ``[langgraph]``).
"""

from typing import Any

from .config import DEFAULT_NAMESPACE_KEY, Handoff, ReducerConfig, RememberFn
from .errors import BackgroundHookError, PruneHookError, ReducerError, StepError, SummaryError
from .hooks import Background
from .reducer import MessageReducer
from .result import ReducerResult
from .tokens import estimate_tokens, resolve_token_counter

__version__ = "0.6.0"

__all__ = [
    "DEFAULT_NAMESPACE_KEY",
    "Background",
    "BackgroundHookError",
    "Handoff",
    "MessageReducer",
    "PruneHookError",
    "ReducerConfig",
    "ReducerError",
    "ReducerResult",
    "RememberFn",
    "StepError",
    "SummaryError",
    "__version__",
    "estimate_tokens",
    "resolve_token_counter",
]


def __getattr__(name: str) -> Any:
    # 0.5 names that 0.6 dropped, kept one minor release with a DeprecationWarning.
    from ._deprecated import resolve

    return resolve(__name__, name)
