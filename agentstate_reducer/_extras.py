"""Install hints for the optional extras, read from the package's own metadata.

When an import of an extra fails, :func:`missing_extra` turns the ``ImportError`` into one
that names the package (and the version) that is missing or too old, and the ``pip install``
line that fixes it. The requirement floors come from the installed distribution's metadata
(``pyproject.toml``), so the hint and the packaging never disagree.
"""

from __future__ import annotations

import re
from importlib import metadata

DISTRIBUTION = "agentstate-reducer"

_REQUIREMENT = re.compile(
    r"^\s*(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*(?P<spec>[^;]*?)\s*"
    r"(?:;\s*(?P<marker>.*))?$"
)
_EXTRA_MARKER = re.compile(r"""extra\s*==\s*['"](?P<extra>[^'"]+)['"]""")
_CLAUSE = re.compile(r"^\s*(?P<op>>=|<=|==|!=|~=|>|<)\s*(?P<version>[^\s,]+)\s*$")


def _version_key(text: str) -> tuple[int, ...]:
    """The numeric release part of a version (``"4.1.1.dev0"`` -> ``(4, 1, 1)``)."""
    parts: list[int] = []
    for piece in text.split("."):
        digits = re.match(r"\d+", piece)
        if digits is None:
            break
        parts.append(int(digits.group()))
        if digits.end() < len(piece):
            break
    return tuple(parts)


def _satisfies(installed: str, spec: str) -> bool:
    """Whether ``installed`` meets every clause of a simple specifier such as ``>=1.0,<2``."""
    have = _version_key(installed)
    for clause in filter(None, (c.strip() for c in spec.split(","))):
        found = _CLAUSE.match(clause)
        if found is None:
            continue  # a form this small checker does not read: do not guess
        want, op = _version_key(found["version"]), found["op"]
        width = max(len(have), len(want))
        a, b = have + (0,) * (width - len(have)), want + (0,) * (width - len(want))
        ok = {
            ">=": a >= b,
            "<=": a <= b,
            ">": a > b,
            "<": a < b,
            "==": a == b,
            "!=": a != b,
            "~=": a >= b,  # the floor of a compatible release; its cap is not checked
        }[op]
        if not ok:
            return False
    return True


def requirements_of(extra: str) -> list[tuple[str, str]]:
    """``(package, specifier)`` pairs the installed distribution declares for ``extra``.

    Empty when the distribution's metadata is not installed (running from a source tree).
    """
    try:
        declared = metadata.requires(DISTRIBUTION) or []
    except metadata.PackageNotFoundError:
        return []
    wanted: list[tuple[str, str]] = []
    for line in declared:
        found = _REQUIREMENT.match(line)
        if found is None or not found["marker"]:
            continue
        marker = _EXTRA_MARKER.search(found["marker"])
        if marker is not None and marker["extra"] == extra:
            wanted.append((found["name"], found["spec"].strip()))
    return wanted


def missing_extra(what: str, extra: str, error: ImportError) -> ImportError:
    """An ``ImportError`` saying which package of ``extra`` to install, for ``raise ... from``.

    Args:
        what: The module or feature that needs the extra, for the message.
        extra: The extra's name.
        error: The import error; keep it as the cause (``raise hint from error``).

    Returns:
        An error naming the first requirement of the extra that is not installed or is too
        old (with the version found), or, when they all look fine, the module the import
        could not load.
    """
    # A missing package or module: the install line of the README; a package too old, or
    # a name missing from a module that is there: the same with -U (a plain install would
    # keep the old version).
    install = f'pip install "{DISTRIBUTION}[{extra}]"'
    upgrade = install.replace("pip install", "pip install -U", 1)
    for package, spec in requirements_of(extra):
        try:
            installed = metadata.version(package)
        except metadata.PackageNotFoundError:
            return ImportError(f"{what} needs {package}{spec}, which is not installed: {install}")
        if spec and not _satisfies(installed, spec):
            return ImportError(
                f"{what} needs {package}{spec}, but {installed} is installed: {upgrade}"
            )
    line = install if isinstance(error, ModuleNotFoundError) else upgrade
    return ImportError(f"{what} could not import what it needs ({error}): {line}")
