"""Kept for imports written against 0.6: ``SelectRelevant`` lives in
:mod:`agentstate_reducer.steps.relevance` (and is exported by :mod:`agentstate_reducer.policy`)."""

from __future__ import annotations

from .steps.relevance import LexicalScorer, Scorer, SelectRelevant, message_text, terms

__all__ = ["LexicalScorer", "Scorer", "SelectRelevant", "message_text", "terms"]
