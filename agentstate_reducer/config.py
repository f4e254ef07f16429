"""``ReducerConfig``: every knob of the reducer, checked when it is built; ``Handoff``: the
settings of the hand-off to the ``on_prune`` hooks, grouped."""

from __future__ import annotations

import dataclasses
import enum
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ._checks import (
    check_arguments,
    check_bool,
    check_callable,
    check_choice,
    check_int,
    check_name,
    check_number,
)

if TYPE_CHECKING:
    from .steps.contract import ReductionStep

#: A prune hook: ``hook(messages, namespace)``; its return value is ignored. May be a
#: coroutine function (awaited by ``areduce``).
RememberFn = Callable[[list[Any], Any], Any]

#: The key integrations read from a run's config to find the long-term memory namespace.
DEFAULT_NAMESPACE_KEY = "memory_namespace"

OnPruneError = Literal["raise", "keep"]
Mode = Literal["reduce", "validate"]


@dataclass(frozen=True)
class Handoff:
    """How the messages that leave the list reach the ``on_prune`` hooks, and what a failing
    hook (or summarizer) does to the reduce: ``ReducerConfig(handoff=Handoff(...))``.

    The hooks themselves are ``ReducerConfig.on_prune``. Each field was a ``ReducerConfig``
    keyword of its own before (``namespace_key``, ``dedupe_on_prune``, ``dedupe_window``,
    ``on_prune_error``, ``max_pending_handoff``, ``retry_backoff``); those keywords still
    work, with a ``DeprecationWarning`` naming the field to use, and the config still has
    them as attributes (``config.on_prune_error`` is ``config.handoff.on_error``).

    Attributes:
        namespace_key: The ``configurable`` key integrations read the hooks' namespace from.
        dedupe: Hand each message (namespace, id and content) to each hook at most once per
            reducer.
        dedupe_window: How many delivered messages each hook's memory keeps (oldest
            forgotten).
        on_error: What a failing hook or summarizer does to the reduce: ``"raise"``
            (default) raises :class:`~agentstate_reducer.PruneHookError` (the reducer keeps
            what the hook did not take and retries it on its next hand-off) or
            :class:`~agentstate_reducer.SummaryError` (nothing pruned); ``"keep"`` prunes
            nothing this time and reports the failure on ``ReducerResult.hook_error`` or
            ``summary_error`` (the list is the retry buffer). ``reduce(on_prune_error=...)``
            overrides it per call (the checkpoint savers use ``"keep"``).
        max_pending: Messages a failing hook may have waiting for a retry (per hook); once
            that many wait, a reduce that would hand it more prunes nothing.
        wait: Seconds a reduce waits for another reduce of the same conversation that is
            handing the same messages to a hook, or making its summary (threads, tasks, the
            agent middleware and the checkpoint saver sharing a reducer): when that
            hand-off succeeds they are not handed over again, when it fails they are kept
            as this reduce's own failure would keep them; after this long they are kept
            in the list (nothing is pruned), so a hook that never returns holds no other
            reduce for longer.
        retry_backoff: Seconds a hook or ``summarize_fn`` that failed is left alone before
            it is called again (doubled on each further failure, up to 60 s); reduces
            meanwhile treat it as still failing (keeping the messages, as on a failure), so
            an outage costs one failing call per wait instead of one per reduce. 0 calls it
            every time.

    Raises:
        TypeError: A field has the wrong type (the message names ``Handoff.<field>``).
        ValueError: A field is out of range or not one of its choices.

    Example:
        >>> from agentstate_reducer import Handoff, ReducerConfig
        >>> config = ReducerConfig(handoff=Handoff(on_error="keep", retry_backoff=5))
        >>> config.handoff.on_error, config.on_prune_error
        ('keep', 'keep')
    """

    namespace_key: str = DEFAULT_NAMESPACE_KEY
    dedupe: bool = True
    dedupe_window: int = 10_000
    on_error: OnPruneError = "raise"
    max_pending: int = 10_000
    retry_backoff: float = 1.0
    wait: float = 30.0

    def __post_init__(self) -> None:
        check_name("Handoff.namespace_key", self.namespace_key)
        check_bool("Handoff.dedupe", self.dedupe)
        check_int("Handoff.dedupe_window", self.dedupe_window, minimum=1)
        check_choice("Handoff.on_error", self.on_error, ("raise", "keep"))
        check_int("Handoff.max_pending", self.max_pending, minimum=0)
        check_number("Handoff.retry_backoff", self.retry_backoff, minimum=0)
        check_number("Handoff.wait", self.wait, minimum=0)


#: The ``ReducerConfig`` keywords :class:`Handoff` replaced, and the field each one is now.
HANDOFF_KEYWORDS: dict[str, str] = {
    "namespace_key": "namespace_key",
    "dedupe_on_prune": "dedupe",
    "dedupe_window": "dedupe_window",
    "on_prune_error": "on_error",
    "max_pending_handoff": "max_pending",
    "retry_backoff": "retry_backoff",
}


class _Unset(enum.Enum):
    """An old keyword not passed (None is not a value any of them takes, but it must still
    be refused as it was before)."""

    UNSET = enum.auto()


_UNSET = _Unset.UNSET


@dataclass(frozen=True)
class ReducerConfig:
    """How a :class:`~agentstate_reducer.MessageReducer` prunes.

    The defaults are the seed's: ``ReducerConfig()`` prunes a list longer than 20 down to
    10, while ``MessageReducer()`` built without a config never prunes
    (``max_messages=None``), as the seed documents both.

    Two modes. **Count mode** (the default): once the list holds more than
    ``max_messages`` messages, the oldest prunable messages go until ``min_messages``
    remain. **Token mode** (when ``max_tokens`` is set; it takes precedence): once the
    list counts more than ``max_tokens`` tokens, the oldest prunable messages go until it
    counts ``target_tokens`` (default: ``max_tokens``) or fewer. Either way the newest
    message always stays, tool calls and their results stay or go together, and only
    human and ai messages are pruned directly.

    Attributes:
        min_messages: Messages to keep once count mode prunes.
        max_messages: Count mode prunes when the list is longer than this; None never prunes.
        max_tokens: Switches to token mode: prune when the list counts more tokens than this.
        target_tokens: Token mode prunes down to this many tokens (hysteresis); defaults to
            ``max_tokens``.
        token_counter: How tokens are counted (token mode): None or ``"estimate"`` (the
            default), our local estimate that needs no download; ``"approximate"``,
            LangChain's ``count_tokens_approximately``; a tiktoken encoding name such as
            ``"cl100k_base"`` (loaded offline, extra ``[tokens]``); a tiktoken ``Encoding``;
            a LangChain chat model; or any callable ``(message) -> int``.
        preserve_first: Never prune the message at index 0: True (the seed's default),
            False, or ``"system"``: only when it is a system or developer message, for
            agents whose system prompt lives outside the list (LangChain's
            ``create_agent(system_prompt=...)``), where index 0 is the first question.
        cascade_tool_messages: Prune the tool results of a pruned ai message with it, and
            never cut between a tool call and its results.
        summarize_fn: ``(messages) -> str`` summarising what a reduce prunes, called at
            most once per reduce (every summarising step of the policy shares that call),
            and never again for the same messages: replays reuse it. With
            ``inject_summary`` the summary already in the list comes first in ``messages``
            (marked, see ``messages.is_summary``) and is folded in: a running summary.
            May be a coroutine function, or an object with an ``acall`` coroutine method
            too (awaited by ``areduce``); see also the LLM summarizer in
            ``agentstate_reducer.langgraph.summarizers``. Needs a policy with a summarising
            step (the default policy has one). Returning None, an empty string or only
            whitespace says there is nothing new: the messages are pruned and no block is
            made (the previous one stays).
        inject_summary: Put the summary into the list, after the kept first message and
            any leading system or developer messages (never before an instruction), as one
            human message marked as a summary, replacing the previous summary; it counts
            towards the bound. Needs ``summarize_fn``.
        summary_message_factory: ``(summary, pruned_count) -> list of messages`` building the
            injected block instead (for lists of other objects, or another layout); its
            messages are marked as summaries and given deterministic ids if they lack them.
        summary_max_tokens: Token mode: room left for the summary block when a summarising
            prune plans (the block itself may end up smaller or larger; if it is larger
            and the list is then over ``max_tokens``, more is pruned, without another
            ``summarize_fn`` call, and those messages go into the conversation's next
            summary). By default the summarizer's own ``max_summary_tokens`` when it has
            one, else a tenth of the history's target (at least 32).
        on_prune: Hooks ``(pruned_messages, namespace)`` that hand pruned messages to
            long-term memory. A single callable is accepted too; one whose signature
            cannot take those two arguments is refused here.
        handoff: How pruned messages reach the hooks and what a failing hook or summarizer
            does to the reduce (:class:`Handoff`: ``namespace_key``, ``dedupe``,
            ``dedupe_window``, ``on_error``, ``max_pending``, ``wait``, ``retry_backoff``). Its
            fields are also read as the config's attributes of their former names
            (``config.on_prune_error``, ``config.retry_backoff``, ...).
        reply_reserve: Tokens kept free for the model's reply: the history may use
            ``max_tokens - reply_reserve`` (and is pruned to ``target_tokens -
            reply_reserve``), so ``max_tokens`` can be the model's context size.
        start_on_human: Prune whole user turns (a user message and everything up to the
            next one), so the kept history starts on a user message, as some providers
            require. In a format whose roles alternate (Anthropic, Bedrock, Gemini), a
            list that opens on its first question, kept by ``preserve_first``, starts on
            the user already, and a window ending at a later question would put two user
            messages together: when no such window is valid, the window ends where the
            roles alternate instead, inside an older turn. In count mode, when the window
            that keeps ``min_messages`` leaves the list over ``max_messages`` (the newest
            turn holds fewer than ``min_messages`` and only an older question is within
            them), it ends at the first later question (or inside the newest turn) that
            brings the list within ``max_messages``, keeping fewer than ``min_messages``.
        keep_groups: The newest user turns that are always kept whole.
        policy: Reduction steps run in order until the list fits (see
            :mod:`agentstate_reducer.policy`); by default ``[DropOldest()]``, or
            ``[Summarize()]`` when ``summarize_fn`` is set.
        mode: ``"reduce"`` (default), or ``"validate"``: change nothing and report
            problems on ``ReducerResult.problems``.
        calibrate: Token mode: calibrate the count to the input tokens the provider
            reported for the newest response that says (LangChain's ``usage_metadata``,
            the ``usage`` of Anthropic, OpenAI Chat and Responses, Bedrock Converse,
            Gemini's ``usage_metadata``): the messages before it count what the provider
            measured, the rest are estimated; ``ReducerResult.calibration`` says which is
            which (see :mod:`agentstate_reducer.calibration`). On in :meth:`for_model`.
        format: The lists' wire format, when it should not be told from each list (see
            :mod:`agentstate_reducer.messages.detect`): ``"chat"`` (Chat Completions and
            LangChain, also ``"langchain"`` and ``"duck"``), ``"anthropic"``,
            ``"responses"``, ``"gemini"``, ``"bedrock"``, ``"llama_index"`` or
            ``"pydantic_ai"``. None (the
            default) recognises each list's format from its messages; a list of plain text
            messages, which read the same in several formats, is read as Chat: name the
            format to have its rules kept there (Anthropic's alternating roles, say). Every
            message must fit the format named (else ``TypeError``).

    The keywords ``namespace_key``, ``dedupe_on_prune``, ``dedupe_window``,
    ``on_prune_error``, ``max_pending_handoff`` and ``retry_backoff`` are deprecated: each
    still sets its :class:`Handoff` field, with a ``DeprecationWarning``; passing one with a
    ``handoff`` that says otherwise is a ``ValueError``. The fields from ``handoff`` on are
    keyword-only.

    Raises:
        TypeError: A field has the wrong type (a hook or counter that is not callable, an
            ``on_prune`` hook that cannot be called with ``(pruned_messages, namespace)``,
            a limit that is not an int).
        ValueError: The values contradict each other or are out of range (min above max,
            a zero or negative limit, ``target_tokens`` above ``max_tokens``).
    """

    min_messages: int = 10
    max_messages: int | None = 20
    max_tokens: int | None = None
    target_tokens: int | None = None
    token_counter: Callable[[Any], int] | str | None = None
    preserve_first: bool | Literal["system"] = True
    cascade_tool_messages: bool = True
    summarize_fn: Callable[[list[Any]], Any] | None = None
    inject_summary: bool = False
    summary_message_factory: Callable[[str, int], list[Any]] | None = None
    summary_max_tokens: int | None = None
    on_prune: Sequence[RememberFn] = field(default_factory=tuple)
    handoff: Handoff = field(default_factory=Handoff, kw_only=True)
    reply_reserve: int = field(default=0, kw_only=True)
    start_on_human: bool = field(default=False, kw_only=True)
    keep_groups: int = field(default=0, kw_only=True)
    policy: Sequence[ReductionStep] | None = field(default=None, kw_only=True)
    mode: Mode = field(default="reduce", kw_only=True)
    calibrate: bool = field(default=False, kw_only=True)
    format: str | None = field(default=None, kw_only=True)

    # Written out (not generated) to take the keywords Handoff replaced; the defaults are
    # the fields' (tests/test_config.py checks they agree).
    def __init__(
        self,
        min_messages: int = 10,
        max_messages: int | None = 20,
        max_tokens: int | None = None,
        target_tokens: int | None = None,
        token_counter: Callable[[Any], int] | str | None = None,
        preserve_first: bool | Literal["system"] = True,
        cascade_tool_messages: bool = True,
        summarize_fn: Callable[[list[Any]], Any] | None = None,
        inject_summary: bool = False,
        summary_message_factory: Callable[[str, int], list[Any]] | None = None,
        summary_max_tokens: int | None = None,
        on_prune: Sequence[RememberFn] = (),
        *,
        handoff: Handoff | None = None,
        reply_reserve: int = 0,
        start_on_human: bool = False,
        keep_groups: int = 0,
        policy: Sequence[ReductionStep] | None = None,
        mode: Mode = "reduce",
        calibrate: bool = False,
        format: str | None = None,
        namespace_key: str | _Unset = _UNSET,
        dedupe_on_prune: bool | _Unset = _UNSET,
        dedupe_window: int | _Unset = _UNSET,
        on_prune_error: OnPruneError | _Unset = _UNSET,
        max_pending_handoff: int | _Unset = _UNSET,
        retry_backoff: float | _Unset = _UNSET,
    ) -> None:
        old = {
            "namespace_key": namespace_key,
            "dedupe_on_prune": dedupe_on_prune,
            "dedupe_window": dedupe_window,
            "on_prune_error": on_prune_error,
            "max_pending_handoff": max_pending_handoff,
            "retry_backoff": retry_backoff,
        }
        values: dict[str, Any] = {
            "min_messages": min_messages,
            "max_messages": max_messages,
            "max_tokens": max_tokens,
            "target_tokens": target_tokens,
            "token_counter": token_counter,
            "preserve_first": preserve_first,
            "cascade_tool_messages": cascade_tool_messages,
            "summarize_fn": summarize_fn,
            "inject_summary": inject_summary,
            "summary_message_factory": summary_message_factory,
            "summary_max_tokens": summary_max_tokens,
            "on_prune": on_prune,
            "handoff": _handoff(handoff, {k: v for k, v in old.items() if v is not _UNSET}),
            "reply_reserve": reply_reserve,
            "start_on_human": start_on_human,
            "keep_groups": keep_groups,
            "policy": policy,
            "mode": mode,
            "calibrate": calibrate,
            "format": format,
        }
        for name, value in values.items():
            object.__setattr__(self, name, value)
        self.__post_init__()

    def __post_init__(self) -> None:
        check_int("min_messages", self.min_messages, minimum=0)
        if self.max_messages is not None:
            check_int("max_messages", self.max_messages, minimum=1)
            if self.min_messages > self.max_messages:
                raise ValueError(
                    f"min_messages={self.min_messages!r} is above "
                    f"max_messages={self.max_messages!r}: pruning could never bring the list "
                    "down to it; lower min_messages or raise max_messages"
                )
        if self.max_tokens is not None:
            check_int("max_tokens", self.max_tokens, minimum=1)
        if self.target_tokens is not None:
            check_int("target_tokens", self.target_tokens, minimum=1)
            if self.max_tokens is None:
                raise ValueError(
                    f"target_tokens={self.target_tokens!r} needs max_tokens: token mode "
                    "starts pruning above max_tokens and prunes down to target_tokens"
                )
            if self.target_tokens > self.max_tokens:
                raise ValueError(
                    f"target_tokens={self.target_tokens!r} is above "
                    f"max_tokens={self.max_tokens!r}; it must be at most max_tokens"
                )
        from .tokens import check_token_counter

        check_token_counter(self.token_counter)
        if self.preserve_first != "system" and not isinstance(self.preserve_first, bool):
            error = ValueError if isinstance(self.preserve_first, str) else TypeError
            raise error(
                f"preserve_first must be True, False or 'system', got {self.preserve_first!r}"
            )
        for name in ("cascade_tool_messages", "inject_summary", "start_on_human"):
            check_bool(name, getattr(self, name))
        check_callable("summarize_fn", self.summarize_fn)
        check_callable("summary_message_factory", self.summary_message_factory)
        if self.inject_summary and self.summarize_fn is None:
            raise ValueError(
                "inject_summary=True needs summarize_fn: there is no summary to inject"
            )
        if self.summary_message_factory is not None and not self.inject_summary:
            raise ValueError(
                "summary_message_factory builds the injected summary block, but "
                "inject_summary is False: it would never be used; set inject_summary=True"
            )
        hooks = self.on_prune
        if callable(hooks):
            hooks = (hooks,)
        if isinstance(hooks, (str, bytes)) or not isinstance(hooks, Sequence):
            raise TypeError(f"on_prune must be a callable or a list of callables, got {hooks!r}")
        for index, hook in enumerate(hooks):
            check_callable(f"on_prune[{index}]", hook, optional=False)
            # Else every prune would fail it, taken for an outage and retried forever.
            check_arguments(f"on_prune[{index}]", hook, ("pruned_messages", "namespace"))
        object.__setattr__(self, "on_prune", tuple(hooks))
        if self.summary_max_tokens is not None:
            check_int("summary_max_tokens", self.summary_max_tokens, minimum=1)
            if self.max_tokens is None:
                raise ValueError(
                    f"summary_max_tokens={self.summary_max_tokens!r} works on tokens: set "
                    "max_tokens (in count mode the summary block takes one of min_messages)"
                )
        check_int("reply_reserve", self.reply_reserve, minimum=0)
        if self.reply_reserve:
            if self.max_tokens is None:
                raise ValueError(f"reply_reserve={self.reply_reserve!r} needs max_tokens")
            target = self.effective_target_tokens
            assert target is not None
            if self.reply_reserve >= target:
                raise ValueError(
                    f"reply_reserve={self.reply_reserve!r} leaves no room for history: it must "
                    f"be below target_tokens (here {target})"
                )
        check_int("keep_groups", self.keep_groups, minimum=0)
        check_choice("mode", self.mode, ("reduce", "validate"))
        check_bool("calibrate", self.calibrate)
        if self.calibrate and self.max_tokens is None:
            raise ValueError(
                "calibrate=True calibrates token counts to the counts responses report: set "
                "max_tokens (token mode), or use ReducerConfig.for_model(model)"
            )
        from .messages import FORMATS

        check_choice("format", self.format, tuple(FORMATS), allow_none=True)
        from .steps.policy import check_policy

        check_policy(
            self.policy, token_mode=self.token_mode, can_summarize=self.summarize_fn is not None
        )
        if self.policy is not None:
            object.__setattr__(self, "policy", tuple(self.policy))

    # The settings Handoff groups, under the names they had as fields (read by code written
    # before it, ours and integrations'); no warning: reading them stays supported.

    @property
    def namespace_key(self) -> str:
        """``handoff.namespace_key``."""
        return self.handoff.namespace_key

    @property
    def dedupe_on_prune(self) -> bool:
        """``handoff.dedupe``."""
        return self.handoff.dedupe

    @property
    def dedupe_window(self) -> int:
        """``handoff.dedupe_window``."""
        return self.handoff.dedupe_window

    @property
    def on_prune_error(self) -> OnPruneError:
        """``handoff.on_error``."""
        return self.handoff.on_error

    @property
    def max_pending_handoff(self) -> int:
        """``handoff.max_pending``."""
        return self.handoff.max_pending

    @property
    def retry_backoff(self) -> float:
        """``handoff.retry_backoff``."""
        return self.handoff.retry_backoff

    @property
    def token_mode(self) -> bool:
        """Whether pruning is driven by tokens (``max_tokens`` is set)."""
        return self.max_tokens is not None

    @property
    def history_max_tokens(self) -> int | None:
        """The tokens the history may use before pruning starts (after the reply reserve)."""
        return None if self.max_tokens is None else self.max_tokens - self.reply_reserve

    @property
    def history_target_tokens(self) -> int | None:
        """The tokens pruning brings the history down to (after the reply reserve)."""
        target = self.effective_target_tokens
        return None if target is None else target - self.reply_reserve

    @property
    def effective_target_tokens(self) -> int | None:
        """The token count token mode prunes down to."""
        return self.target_tokens if self.target_tokens is not None else self.max_tokens

    @classmethod
    def for_model(
        cls,
        model: Any,
        *,
        fraction: float = 0.75,
        reply_reserve: int | None = None,
        context_window: int | None = None,
        **fields: Any,
    ) -> ReducerConfig:
        """A token-mode config for ``model``'s own window, counted as its provider counts.

        * ``max_tokens`` is ``fraction`` of the model's input window: ``context_window``
          when given (any model, LangChain or not, or a model name such as ``"gpt-4o"``),
          else the ``max_input_tokens`` of its LangChain profile (``model.profile``).
        * ``reply_reserve``, unless given: the part of the model's longest reply (the
          profile's ``max_output_tokens``) that the window left over by ``fraction`` does
          not already hold, ``max(0, max_output_tokens - (window - max_tokens))``, at most
          half of ``max_tokens``; 0 when the profile does not say. With the default
          fraction most models need none (GPT-4o: 128,000 window, 16,384 reply, 32,000
          left over).
        * ``token_counter``, unless given: the provider's own tokenizer where it runs
          offline (OpenAI models: their tiktoken encoding, from the files the
          ``[tokens]`` extra ships), else our estimate (Anthropic, Gemini, Llama and every
          other provider; see :mod:`agentstate_reducer.tokens.models`).
        * ``calibrate=True``, unless given: the count is anchored to the input tokens the
          newest response in the list reports (``usage_metadata`` and the like), so only
          newer messages are estimated.

        Any other ``ReducerConfig`` field may be passed too (``policy``, ``summarize_fn``,
        ``on_prune``, ``target_tokens``, ...).

        Args:
            model: A LangChain chat model, or anything else (a model name) with
                ``context_window``.
            fraction: The share of the input window the history (with what the provider
                counts outside the list) may use before pruning starts; ``0 < fraction
                <= 1``.
            reply_reserve: Tokens kept free for the reply (see above for the default).
            context_window: The model's input window in tokens, instead of its profile's.
            **fields: Other ``ReducerConfig`` fields.

        Raises:
            ValueError: The model has no profile with ``max_input_tokens`` and no
                ``context_window`` was given (the message names the field), ``fraction``
                is out of range, or the fields contradict each other.
            TypeError: ``fraction``, ``context_window`` or ``reply_reserve`` has the wrong
                type, or a field does.

        Example:
            >>> from agentstate_reducer import ReducerConfig
            >>> config = ReducerConfig.for_model("claude-sonnet-4-5", context_window=200_000)
            >>> config.max_tokens, config.calibrate
            (150000, True)
        """
        from .tokens.models import model_token_counter, model_window

        check_number("fraction", fraction, minimum=0)
        if not 0 < fraction <= 1:
            raise ValueError(
                f"fraction={fraction!r} must be above 0 and at most 1: the share of the "
                "model's input window the history may use"
            )
        for name in ("max_tokens", "max_messages", "min_messages"):
            if name in fields:
                raise ValueError(
                    f"for_model sets the budget from the model's window: pass fraction= or "
                    f"context_window= instead of {name}="
                )
        output: int | None = None
        if context_window is not None:
            check_int("context_window", context_window, minimum=1)
            window = context_window
            try:
                output = model_window(model)[1]
            except ValueError:
                output = None
        else:
            window, output = model_window(model)
        max_tokens = max(1, int(window * fraction))
        if reply_reserve is None:
            spare = window - max_tokens
            reply_reserve = min(max(0, (output or 0) - spare), max_tokens // 2)
        else:
            check_int("reply_reserve", reply_reserve, minimum=0)
        if "token_counter" not in fields:
            fields["token_counter"] = model_token_counter(model)
        fields.setdefault("calibrate", True)
        return cls(max_tokens=max_tokens, reply_reserve=reply_reserve, **fields)


def _handoff(handoff: Handoff | None, old: dict[str, Any]) -> Handoff:
    """``handoff`` (or the default) with the deprecated keywords in ``old`` applied, each
    with a ``DeprecationWarning``.

    Raises:
        TypeError: ``handoff`` is not a Handoff, or an old keyword's value has the wrong
            type for its field.
        ValueError: An old keyword contradicts ``handoff``, or its value is out of range.
    """
    if handoff is not None and not isinstance(handoff, Handoff):
        raise TypeError(f"handoff must be an agentstate_reducer.Handoff, got {handoff!r}")
    changes: dict[str, Any] = {}
    for keyword, value in old.items():
        name = HANDOFF_KEYWORDS[keyword]
        warnings.warn(
            f"ReducerConfig({keyword}=...) is deprecated: pass "
            f"handoff=Handoff({name}=...) instead (reading config.{keyword} still works)",
            DeprecationWarning,
            stacklevel=3,
        )
        if handoff is not None and getattr(handoff, name) != value:
            given = getattr(handoff, name)
            default = ", its default" if given == getattr(Handoff(), name) else ""
            raise ValueError(
                f"ReducerConfig({keyword}={value!r}) contradicts "
                f"handoff=Handoff({name}={given!r}{default}); {keyword}= is deprecated: "
                f"pass only handoff=Handoff({name}={value!r}, ...)"
            )
        changes[name] = value
    base = handoff if handoff is not None else Handoff()
    return dataclasses.replace(base, **changes) if changes else base
