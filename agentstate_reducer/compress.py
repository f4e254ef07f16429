"""Kept for imports written against 0.6: ``Compress`` lives in
:mod:`agentstate_reducer.steps.compress` (and is exported by :mod:`agentstate_reducer.policy`)."""

from __future__ import annotations

from .steps.compress import Compress, Compressor

__all__ = ["Compress", "Compressor"]
