"""Kept for imports written against 0.6.0: the scripted chat model now lives in
:mod:`agentstate_reducer.langgraph.testing`."""

from .testing import ProviderRejectedError, ScriptedChatModel, provider_errors, tool_call

__all__ = ["ProviderRejectedError", "ScriptedChatModel", "provider_errors", "tool_call"]
