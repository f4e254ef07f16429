"""The demo's one exception, and the check that what the demo imports is installed."""

from __future__ import annotations

import importlib

__all__ = ["DEMO_INSTALL", "DemoError", "require"]

DEMO_INSTALL = 'pip install "agentstate-reducer[demo]"'
"""The install line the demo names when something it needs is missing."""


class DemoError(Exception):
    """A problem the user can fix (a missing extra, an unreachable database, an unwritable
    directory).

    The command prints its message on one line and exits with status 1.
    """


def require(modules: tuple[tuple[str, str], ...], install: str = DEMO_INSTALL) -> None:
    """Import each module, or raise a one-line :class:`DemoError` saying what to install.

    Args:
        modules: ``(module, distribution)`` pairs: what to import, and the package that
            provides it (named in the message).
        install: The command that installs everything the demo needs.

    Raises:
        DemoError: A module is missing (``ModuleNotFoundError``) or present but unusable
            (an ``ImportError`` from a version too old, say); the original error is the
            cause, and its innermost message is quoted so a version clash stays visible.
    """
    for module, distribution in modules:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            raise DemoError(
                f"the demo needs {distribution}, which is not installed ({exc.name} cannot be "
                f"imported): {install}"
            ) from exc
        except ImportError as exc:
            root: BaseException = exc
            while root.__cause__ is not None:
                root = root.__cause__
            reason = " ".join(str(root).split()) or type(root).__name__
            raise DemoError(
                f"the demo cannot import {module} from {distribution} ({reason}); install "
                f"the versions it needs: {install.replace('pip install', 'pip install -U', 1)}"
            ) from exc
