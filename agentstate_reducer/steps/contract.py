"""The step contract: what a policy step receives (:class:`StepContext`), what it is
(:class:`ReductionStep`) and what it reports (:class:`StepReport`).

This is the public protocol users write their own steps against; the built-in steps (the
other modules of :mod:`agentstate_reducer.steps`) use nothing else. The reducer implements
``StepContext`` (:class:`agentstate_reducer.context.ReduceContext`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass
class StepReport:
    """What one step did.

    Attributes:
        step: The step's id.
        touched: The messages the step pruned, or the new versions of those it rewrote.
        tokens_before: The list's token count before the step (0 in count mode).
        tokens_after: The list's token count after the step (0 in count mode).
        messages_before: The list's length before the step.
        messages_after: The list's length after the step.
        error: With ``on_prune_error="keep"``, the failure of user code the step called
            (a compressor, an embeddings model) that made it stop; the policy went on
            with the next step. None otherwise.
    """

    step: str
    touched: list[Any] = field(default_factory=list)
    tokens_before: int = 0
    tokens_after: int = 0
    messages_before: int = 0
    messages_after: int = 0
    error: Exception | None = None


class StepContext(Protocol):
    """What a step receives: one reduce in progress, and what a step may do to it.

    Read the list through ``messages``, ``tokens`` and the questions below; change it only
    through ``drop``, ``drop_oldest``, ``replace`` and ``insert``. Whatever a step asks,
    the context keeps the guarantees of every reduce:

    * a tool call and its results leave together (``drop`` takes the whole group);
    * the newest human message, the kept first message (``preserve_first``), summary
      blocks, system messages, the newest ``keep_groups`` turns and an ai message whose
      tool calls still wait for their results are never dropped (``drop`` raises
      ``ValueError`` naming the position and why);
    * everything that leaves the list, pruned or rewritten, reaches the ``on_prune`` hooks
      once, as it was given;
    * a replacement keeps its message's role and tool links.

    A step that calls user code (a model, a store) is written as a generator and yields
    ``context.call(fn, *args)``; it receives what ``fn`` returned (or the exception it
    raised, thrown in). ``reduce`` calls ``fn`` directly (a coroutine function on a private
    event loop); ``areduce`` awaits a coroutine function and runs a blocking one in a
    worker thread, so one step serves both.

    Attributes:
        messages: The list as it stands, oldest first (read-only).
        tokens: One token count per message (zeros in count mode).
        total: The list's token count (0 in count mode).
        token_mode: Whether the budget is in tokens (``max_tokens`` set).
        budget: The history's token limit, above which pruning starts (``max_tokens``
            minus ``reply_reserve``); None in count mode.
        target: The token count pruning aims for; None in count mode.
        max_messages: The count limit (count mode; None in token mode or when unset).
        min_messages: The messages count mode keeps once it prunes.
        namespace: The reduce's namespace (the hooks' and memories' key).
        view: True when the reduce only bounds what a model sees
            (``MessageReducer.view``): nothing is summarised or handed over, and the
            stored list does not change.
    """

    @property
    def messages(self) -> Sequence[Any]: ...

    @property
    def tokens(self) -> Sequence[int]: ...

    @property
    def total(self) -> int: ...

    @property
    def token_mode(self) -> bool: ...

    @property
    def budget(self) -> int | None: ...

    @property
    def target(self) -> int | None: ...

    @property
    def max_messages(self) -> int | None: ...

    @property
    def min_messages(self) -> int: ...

    @property
    def namespace(self) -> Any: ...

    @property
    def view(self) -> bool: ...

    def fits(self) -> bool:
        """Whether the list is within what pruning aims for (the step may stop)."""
        ...

    def summary_room(self) -> int:
        """The room a summarising drop keeps for the summary block it will insert (tokens
        in token mode, messages in count mode; 0 when no block is injected): a step that
        chooses what to keep leaves it free."""
        ...

    def count(self, message: Any) -> int:
        """Tokens of one message by the reducer's counter (0 in count mode)."""
        ...

    def role(self, position: int) -> str:
        """The normalised role at ``position``: ``human``, ``ai``, ``system``, ``tool``,
        ``function``, or an unknown role lowercased (``developer``)."""
        ...

    def is_summary(self, position: int) -> bool:
        """Whether the message at ``position`` is a summary block."""
        ...

    def can_drop(self, position: int) -> bool:
        """Whether ``drop`` accepts ``position`` (see the guarantees above)."""
        ...

    def group(self, position: int) -> list[int]:
        """The positions that leave together with ``position``: an ai message and its
        tool results; just ``position`` for any other message."""
        ...

    def newest_human(self) -> int | None:
        """The position of the newest human message (the question), or None."""
        ...

    def turns(self) -> list[range]:
        """The user turns, oldest first: each from a human message up to the next one
        (summary blocks and what precedes the first human message belong to none)."""
        ...

    def drop(self, positions: Iterable[int], *, summarize: bool = False) -> list[Any]:
        """Prune ``positions`` (each with its tool group) and return what left, as given.

        With ``summarize`` (which needs ``Summarize`` semantics: ``summarize_fn`` set and
        ``summarizes = True`` on the step), what left is summarised together with the
        summary blocks in the list, and the new block is injected after the kept first
        message.

        Raises:
            ValueError: A position is out of range or may not be dropped (the message
                says which and why).
        """
        ...

    def drop_oldest(self, *, summarize: bool = False) -> list[Any]:
        """Prune the oldest prunable messages as far as the target needs (whole turns
        with ``start_on_human``), as ``DropOldest`` does; return what left."""
        ...

    def replace(self, position: int, message: Any) -> None:
        """Put a rewritten ``message`` at ``position``; the original reaches the hooks.

        A ``message`` without an id takes the id of the message it replaces (in its own
        shape: a dict gets an ``"id"`` key, a LangChain message a copy with ``id``), so the
        rewrite is recognised on the next reduce and LangGraph replaces by id.

        Raises:
            ValueError: ``message`` has another role or other tool links than the message
                it replaces.
            TypeError: ``message`` is not a message.
        """
        ...

    def insert(self, position: int, messages: Sequence[Any]) -> None:
        """Insert new ``messages`` before ``position`` (a note, a digest of what a step
        removed). They are new: pruned later, they reach the hooks like any message.

        Raises:
            ValueError: ``position`` is before the kept first message, past the end,
                between a tool call and one of its results, or after the newest human
                message; or the block holds a tool call without its results or a result
                without its call (it must pair up by itself).
            TypeError: An entry is not a message.
        """
        ...

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """An effect to ``yield`` from a generator step: ``value = yield
        context.call(fn, *args)``."""
        ...


class ReductionStep:
    """Base class of the steps a policy is made of.

    Subclasses implement :meth:`apply`. ``ReducerConfig`` checks each step when it is
    created: an ``id`` that is a non-empty string unique in the policy, ``apply``
    implemented, a token step (``needs_tokens``) only in token mode, a summarising step
    (``summarizes``) only with ``summarize_fn``.

    Attributes:
        id: The step's name in a policy (unique there); used by ``reducer.apply_step``.
        needs_tokens: The step works on tokens, so it needs token mode.
        summarizes: The step's drops are summarised (it needs ``summarize_fn``).
        prunes: The step removes messages (False for steps that only rewrite them).
        view_only: The step only adds to what a model sees (``Recall``): it runs in
            ``MessageReducer.view`` on every call, whether the list is over its budget or
            not, and a persistent ``reduce`` skips it. It must come before the steps
            that prune, so they make room for what it adds.
    """

    id: str = ""
    needs_tokens: bool = False
    summarizes: bool = False
    prunes: bool = True
    view_only: bool = False

    def apply(self, context: StepContext) -> Any:  # pragma: no cover - overridden
        """Change the list through ``context`` and return the messages touched (or, for
        a generator step, yield ``context.call`` effects and return them)."""
        raise NotImplementedError

    def rewrote(self, message: Any) -> bool:
        """Whether ``message`` is this step's own rewrite (its original already reached
        the hooks, so it is not handed over again when it is pruned later); False for
        steps that rewrite nothing."""
        return False
