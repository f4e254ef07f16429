"""Deprecated: 0.5's message field readers. Use :mod:`agentstate_reducer.messages`.

``get_role``, ``get_id``, ``get_content``, ``get_tool_calls`` and ``get_tool_call_id``
resolve to ``role_of``, ``id_of``, ``content_of``, ``tool_calls_of`` and
``tool_call_id_of``, each access with a ``DeprecationWarning``; the module goes in 0.7.
"""

from __future__ import annotations

from typing import Any

from ._deprecated import resolve

__all__: list[str] = []


def __getattr__(name: str) -> Any:
    return resolve(__name__, name)
