"""Deprecated: 0.5's module of shared data models. Import the names from ``agentstate_reducer``.

``DEFAULT_NAMESPACE_KEY``, ``ReducerConfig``, ``ReducerResult`` and ``RememberFn`` still
resolve here, each access with a ``DeprecationWarning``; the module goes in 0.7.
"""

from __future__ import annotations

from typing import Any

from ._deprecated import resolve

__all__: list[str] = []


def __getattr__(name: str) -> Any:
    return resolve(__name__, name)
