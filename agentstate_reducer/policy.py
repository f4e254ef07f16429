"""Reduction steps, applied in order until the list fits its budget.

A policy is a list of steps, for example::

    ReducerConfig(
        max_tokens=8_000,
        policy=[ClearToolOutputs(keep_last=3), DropOldest()],
    )

Once a list is over its limit, the reducer runs the steps in order and stops as soon as
the list fits its target. Each step reports what it touched and the tokens before and
after (``ReducerResult.steps``). Without a policy the reducer drops the oldest messages (and
summarises them when ``summarize_fn`` is set), which is ``[DropOldest()]`` or
``[Summarize()]``.

Steps:

* :class:`ClearToolOutputs`: replace the content of tool results older than the newest
  ``keep_last`` with a short placeholder; the call and its result stay, so the
  conversation stays valid. A result already showing the placeholder is not touched again.
* :class:`~agentstate_reducer.compress.Compress`: hand old messages to a compressor (an
  LLM that condenses tool outputs, a rule that strips markup) and put the shorter versions
  in their place.
* :class:`DropOldest`: prune the oldest messages (or whole user turns, with
  ``start_on_human``) as far as the target needs.
* :class:`~agentstate_reducer.relevance.SelectRelevant`: keep the older user turns most
  relevant to the newest question, within the budget, and prune the others.
* :class:`~agentstate_reducer.steps.recall.Recall` (view only): search a LangGraph store
  for the newest question and insert the memories found as one block after the system
  prompt (what :class:`~agentstate_reducer.langgraph.StoreMemory` stored when it left).
* :class:`Summarize`: the same as ``DropOldest``, then ``summarize_fn`` summarises what
  went together with the summary already in the list (a running summary), and
  ``inject_summary`` puts the new summary where the pruned block was; the room it takes
  counts towards the bound.
* :class:`TruncateLargest` (opt-in): cut the text of the single largest message so the
  list fits, leaving a visible marker.

Text that leaves the list by any step reaches the ``on_prune`` hooks as it was: the
original of a rewritten message is handed over when the step rewrites it, and
``result.pruned`` holds originals.

Writing a step: subclass :class:`ReductionStep` and implement ``apply(context)`` against
:class:`StepContext`; see its docstring and the guide's "Writing your own step"
(docs/guides/policy-and-counting.md).

Import the steps from here. They live in :mod:`agentstate_reducer.steps`, one module per
family (the contract in ``steps.contract``), and this module re-exports them all.
"""

from __future__ import annotations

from .steps.clear import DEFAULT_PLACEHOLDER, ClearToolOutputs
from .steps.compress import Compress
from .steps.contract import ReductionStep, StepContext, StepReport
from .steps.drop import DropOldest
from .steps.policy import check_policy, default_policy
from .steps.recall import Recall
from .steps.relevance import LexicalScorer, SelectRelevant
from .steps.summarize import Summarize
from .steps.truncate import DEFAULT_MARKER, TruncateLargest

__all__ = [
    "DEFAULT_MARKER",
    "DEFAULT_PLACEHOLDER",
    "ClearToolOutputs",
    "Compress",
    "DropOldest",
    "LexicalScorer",
    "Recall",
    "ReductionStep",
    "SelectRelevant",
    "StepContext",
    "StepReport",
    "Summarize",
    "TruncateLargest",
    "check_policy",
    "default_policy",
]
