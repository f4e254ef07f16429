"""A deprecated alias of :mod:`agentstate_reducer.langgraph.testing`, kept for code written
against early 0.6 previews, where the scripted chat model lived here (no released version
had this module: 0.5 shipped without it). Each name resolves to the same object in
``testing``, with a :class:`DeprecationWarning`; the module goes in 0.7."""

from __future__ import annotations

import warnings
from typing import Any

from .._deprecated import REMOVED_IN

__all__: list[str] = []  # nothing new is written against this path
_NAMES = ("ProviderRejectedError", "ScriptedChatModel", "provider_errors", "tool_call")


def __getattr__(name: str) -> Any:
    # Resolved on use rather than imported at the top, so the warning points at the code
    # that uses the old path (a warning at import time would be attributed to importlib,
    # and hidden by Python's default filters).
    if name not in _NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"{__name__} is an alias kept for early 0.6 previews and goes in {REMOVED_IN}; "
        f"import {name} from agentstate_reducer.langgraph.testing",
        DeprecationWarning,
        stacklevel=2,
    )
    from . import testing

    return getattr(testing, name)
