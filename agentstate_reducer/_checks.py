"""Argument checks shared by every entry point, so one misuse raises one error everywhere.

The policy: a value of the wrong type is a ``TypeError``, a value of the right type that
is out of range or unknown is a ``ValueError``; both messages name the argument (with its
owner, such as ``ClearToolOutputs.keep_last``) and show the value with ``repr``.
"""

from __future__ import annotations

from typing import Any


def check_int(name: str, value: Any, *, minimum: int) -> int:
    """Return ``value`` if it is an int (not a bool) of at least ``minimum``.

    Raises:
        TypeError: ``value`` is not an int.
        ValueError: ``value`` is below ``minimum``.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value!r}")
    return value


def check_optional_int(name: str, value: Any, *, minimum: int) -> int | None:
    """:func:`check_int`, letting None through."""
    return None if value is None else check_int(name, value, minimum=minimum)


def check_number(name: str, value: Any, *, minimum: float) -> float:
    """Return ``value`` if it is an int or float (not a bool) of at least ``minimum``.

    Raises:
        TypeError: ``value`` is not a number.
        ValueError: ``value`` is below ``minimum`` (or not a number, NaN).
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {value!r}")
    if not value >= minimum:  # also refuses NaN
        raise ValueError(f"{name} must be at least {minimum}, got {value!r}")
    return float(value)


def check_bool(name: str, value: Any) -> bool:
    """Return ``value`` if it is True or False.

    Raises:
        TypeError: ``value`` is not a bool.
    """
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return value


def check_callable(name: str, value: Any, *, optional: bool = True) -> Any:
    """Return ``value`` if it is callable (or None, when ``optional``).

    Raises:
        TypeError: ``value`` is not callable.
    """
    if value is None and optional:
        return None
    if not callable(value):
        allowed = "callable or None" if optional else "callable"
        raise TypeError(f"{name} must be {allowed}, got {value!r}")
    return value


def check_arguments(name: str, value: Any, arguments: tuple[str, ...]) -> None:
    """Refuse a callable that cannot take ``arguments`` (named for the message) by
    position; a callable whose signature Python cannot tell (some builtins) passes.

    Raises:
        TypeError: ``value``'s signature does not accept them.
    """
    import inspect

    try:
        # The callable's own signature: a functools.wraps adapter is what gets called,
        # not the function it wraps (whose signature it copies).
        signature = inspect.signature(value, follow_wrapped=False)
    except (TypeError, ValueError):
        return
    try:
        signature.bind(*arguments)
    except TypeError as exc:
        wanted = ", ".join(arguments)
        raise TypeError(
            f"{name} is called with ({wanted}), but {value!r} does not take them ({exc}); "
            f"give it the signature ({wanted})"
        ) from None


def check_name(name: str, value: Any) -> str:
    """Return ``value`` if it is a non-empty string (a channel or key name).

    Raises:
        TypeError: ``value`` is not a string.
        ValueError: ``value`` is empty.
    """
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, got {value!r}")
    if not value:
        raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    return value


def check_choice(
    name: str, value: Any, choices: tuple[str, ...], *, allow_none: bool = False
) -> str | None:
    """Return ``value`` if it is one of ``choices`` (or None, when ``allow_none``).

    Raises:
        TypeError: ``value`` is not a string (nor None, when allowed).
        ValueError: ``value`` is not one of them (the message lists them).
    """
    if value is None and allow_none:
        return None
    options = [repr(choice) for choice in choices]
    if allow_none:
        options.insert(0, "None")
    listed = " or ".join(options) if len(options) <= 2 else "one of " + ", ".join(options)
    if not isinstance(value, str):
        raise TypeError(f"{name} must be {listed}, got {value!r}")
    if value not in choices:
        raise ValueError(f"{name} must be {listed}, got {value!r}")
    return value
