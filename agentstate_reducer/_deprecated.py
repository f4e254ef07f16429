"""The public names of agentstate-reducer 0.5 that 0.6 renamed or removed, kept for 0.6 only.

Each old name still resolves, from the module 0.5 published it in, and every access raises
a :class:`DeprecationWarning` naming what to use instead. They go in 0.7.

===========================================  ===============================================
0.5 name                                     0.6 replacement
===========================================  ===============================================
``agentstate_reducer.models.*``              the same names from ``agentstate_reducer``
``agentstate_reducer.adapters.get_*``        ``agentstate_reducer.messages.*_of``
``default_summary_messages_factory``         leave ``summary_message_factory`` unset (the
                                             block is built in the list's own kind), or
                                             pass your own factory
``agentstate_reducer.langgraph.ReducingSaver``  ``ReducingCheckpointSaver``
``agentstate_reducer.langgraph.apply_reducer``  ``ReducingCheckpointSaver``, or
                                             ``CheckpointReduction.apply`` in a saver
===========================================  ===============================================

Modules resolve old names through :func:`resolve`, from a module-level ``__getattr__``, so
nothing an alias names is imported (LangGraph included) until an old name is used. This
module imports nothing of the package: every module may use it (0.5's ``apply_reducer``,
which needs LangGraph, lives in ``agentstate_reducer.langgraph._legacy``).
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["REMOVED_IN", "Alias", "aliases", "resolve"]

REMOVED_IN = "0.7"
"""The release that drops the aliases."""


class Alias:
    """One 0.5 name: how to load what it now stands for, and what to use instead.

    Attributes:
        load: Returns the object the old name resolves to (imported on first use).
        replacement: What to write instead, as the warning says it.
    """

    __slots__ = ("load", "replacement")

    def __init__(self, load: Callable[[], Any], replacement: str) -> None:
        self.load = load
        self.replacement = replacement


def _attr(module: str, name: str) -> Callable[[], Any]:
    def load() -> Any:
        return getattr(importlib.import_module(module), name)

    return load


def default_summary_messages_factory(text: str, count: int) -> list[Any]:
    """0.5's injected summary block: a human message with the summary and an ai ``"OK"``.

    Kept as 0.5 built it (two dicts with LangChain role names), so a config that passes it
    as ``summary_message_factory`` injects the same messages as before.

    Args:
        text: What ``summarize_fn`` returned.
        count: How many messages were summarised.

    Returns:
        ``[{"role": "human", ...}, {"role": "ai", "content": "OK"}]``.
    """
    return [
        {"role": "human", "content": f"Here is the summary of previous {count} messages: {text}"},
        {"role": "ai", "content": "OK"},
    ]


_OURS = "agentstate_reducer._deprecated"

_ALIASES: dict[str, dict[str, Alias]] = {
    "agentstate_reducer": {
        "default_summary_messages_factory": Alias(
            _attr(_OURS, "default_summary_messages_factory"),
            "leave ReducerConfig.summary_message_factory unset (0.6 builds the summary "
            "block as the list's own kind of message) or pass your own factory",
        ),
    },
    # Resolves once agentstate_reducer/summary.py delegates its __getattr__ here.
    "agentstate_reducer.summary": {
        "default_summary_messages_factory": Alias(
            _attr(_OURS, "default_summary_messages_factory"),
            "leave ReducerConfig.summary_message_factory unset (0.6 builds the summary "
            "block as the list's own kind of message) or pass your own factory",
        ),
    },
    "agentstate_reducer.tokens": {
        # 0.5's character heuristic; 0.6's estimate still counts ASCII at four per token.
        "CHARS_PER_TOKEN": Alias(
            lambda: 4, "agentstate_reducer.tokens.estimate_text_tokens(text) to count text"
        ),
        "PER_MESSAGE_OVERHEAD": Alias(
            _attr("agentstate_reducer.tokens", "MESSAGE_OVERHEAD"),
            "agentstate_reducer.tokens.MESSAGE_OVERHEAD (3 tokens in 0.6, 4 in 0.5)",
        ),
    },
    "agentstate_reducer.models": {
        name: Alias(_attr(module, name), f"agentstate_reducer.{name}")
        for name, module in (
            ("DEFAULT_NAMESPACE_KEY", "agentstate_reducer.config"),
            ("ReducerConfig", "agentstate_reducer.config"),
            ("RememberFn", "agentstate_reducer.config"),
            ("ReducerResult", "agentstate_reducer.result"),
        )
    },
    "agentstate_reducer.adapters": {
        old: Alias(_attr("agentstate_reducer.messages", new), f"agentstate_reducer.messages.{new}")
        for old, new in (
            ("get_role", "role_of"),
            ("get_id", "id_of"),
            ("get_content", "content_of"),
            ("get_tool_calls", "tool_calls_of"),
            ("get_tool_call_id", "tool_call_id_of"),
        )
    },
    "agentstate_reducer.langgraph": {
        "ReducingSaver": Alias(
            _attr("agentstate_reducer.langgraph", "ReducingCheckpointSaver"),
            "agentstate_reducer.langgraph.ReducingCheckpointSaver (same arguments)",
        ),
        "apply_reducer": Alias(
            _attr("agentstate_reducer.langgraph._legacy", "apply_reducer"),
            "agentstate_reducer.langgraph.ReducingCheckpointSaver around your saver, or "
            "CheckpointReduction(reducer).apply(config, checkpoint, new_versions) inside one",
        ),
    },
}


def aliases(module: str) -> Mapping[str, Alias]:
    """The 0.5 names ``module`` still resolves (empty for a module that had none)."""
    return _ALIASES.get(module, {})


def resolve(module: str, name: str) -> Any:
    """What the 0.5 name ``module.name`` now stands for, with a :class:`DeprecationWarning`.

    Meant for a module-level ``__getattr__``: the warning is attributed to the code that
    used the old name.

    Raises:
        AttributeError: ``name`` was never a public name of ``module``.
    """
    alias = _ALIASES.get(module, {}).get(name)
    if alias is None:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    warnings.warn(
        f"{module}.{name} is deprecated since agentstate-reducer 0.6 and goes in "
        f"{REMOVED_IN}; use {alias.replacement}",
        DeprecationWarning,
        stacklevel=3,
    )
    return alias.load()
