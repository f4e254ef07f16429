"""A policy: the steps a reducer runs, in order. Checked when a config is built
(:func:`check_policy`); :func:`default_policy` when none is given."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .contract import ReductionStep
from .drop import DropOldest
from .summarize import Summarize


def check_policy(policy: Sequence[Any] | None, *, token_mode: bool, can_summarize: bool) -> None:
    """Raise if ``policy`` cannot run with the rest of the configuration.

    Raises:
        TypeError: An entry is not a ReductionStep, has no id, or does not implement
            ``apply``.
        ValueError: The policy is empty, ids repeat, a token step runs in count mode,
            ``Summarize`` has no ``summarize_fn``, or a ``summarize_fn`` is set that no step
            would call.
    """
    if policy is None:
        return
    if isinstance(policy, (str, bytes)) or not isinstance(policy, Sequence):
        raise TypeError(f"policy must be a list of reduction steps, got {policy!r}")
    if not policy:
        raise ValueError(
            "policy is empty: no step would ever prune, so the list would grow unbounded; "
            "leave policy=None for the default ([DropOldest()] or [Summarize()])"
        )
    seen: set[str] = set()
    for index, step in enumerate(policy):
        if not isinstance(step, ReductionStep):
            raise TypeError(
                f"policy[{index}] is not a reduction step: {step!r}; use ClearToolOutputs, "
                "Compress, DropOldest, Recall, SelectRelevant, Summarize, TruncateLargest or "
                "a subclass of ReductionStep"
            )
        if not isinstance(step.id, str) or not step.id:
            raise TypeError(
                f"policy[{index}] ({type(step).__name__}) has id {step.id!r}: a step's id "
                "must be a non-empty string (set it as a class attribute or field)"
            )
        if type(step).apply is ReductionStep.apply:
            raise TypeError(
                f"policy[{index}] ({type(step).__name__}) does not implement apply(context)"
            )
        for flag in ("needs_tokens", "summarizes", "prunes", "view_only"):
            if not isinstance(getattr(step, flag), bool):
                raise TypeError(
                    f"policy[{index}] ({step.id}): {flag} must be True or False, got "
                    f"{getattr(step, flag)!r}"
                )
        if step.id in seen:
            raise ValueError(
                f"policy[{index}]: step id {step.id!r} is used twice; give each step its own id"
            )
        seen.add(step.id)
        if step.needs_tokens and not token_mode:
            raise ValueError(f"policy[{index}] ({step.id}) works on tokens: set max_tokens")
        if step.summarizes and not can_summarize:
            raise ValueError(f"policy[{index}] ({step.id}) needs summarize_fn")
        if step.view_only:
            earlier = next(
                (i for i, s in enumerate(policy[:index]) if s.prunes and not s.view_only), None
            )
            if earlier is not None:
                raise ValueError(
                    f"policy[{index}] ({step.id}) adds to the model's view: put it before "
                    f"policy[{earlier}] ({policy[earlier].id}), which prunes, so that the "
                    "pruning makes room for what it adds"
                )
    if can_summarize and not any(step.summarizes for step in policy):
        raise ValueError(
            "summarize_fn is set but no step of the policy summarises, so it would never be "
            "called: add Summarize() to the policy (in place of DropOldest()), or drop "
            "summarize_fn"
        )


def default_policy(can_summarize: bool) -> tuple[ReductionStep, ...]:
    """The policy used when none is given."""
    return (Summarize(),) if can_summarize else (DropOldest(),)
