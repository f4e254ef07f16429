"""The package is layered: a module imports only from its own layer or the layers below.

:data:`LAYERS` declares the order, lowest first. :func:`check` reads every module of the
package with ``ast`` (nothing is imported) and reports each import of a module in a higher
layer, at module level or inside a function (an import inside a function runs too, only
later); imports under ``if TYPE_CHECKING:`` are left out (annotations only), and so are
dynamic imports (``importlib.import_module``), which no statement names. Importing
``a.b.c`` also runs ``a.b``'s ``__init__``, so that counts as an import of ``a.b`` as well
(the package root aside: Python always loads it first). It also reports a module no layer
names (a new module must be placed) and an import cycle at module level (which a layer,
holding several modules, would let through).

The tests below run it on the package, show it failing on a copy of the package with an
upward import planted, and import every core module first thing in a fresh interpreter.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "agentstate_reducer"

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # Modules are named relative to the package; "x.*" is every module of package x.
    ("base", ("_calls", "_checks", "_deprecated", "_extras", "_memory", "_progress", "errors")),
    ("messages", ("messages", "messages.*", "recalled")),
    ("tokens", ("tokens", "tokens.*")),
    ("plan", ("planner", "reader", "session", "validate", "calibration")),
    ("step contract", ("steps", "steps.contract", "result")),
    (
        "built-in steps",
        (
            "steps.clear",
            "steps.compress",
            "steps.drop",
            "steps.policy",
            "steps.recall",
            "steps.relevance",
            "steps.summarize",
            "steps.truncate",
            "policy",
            "compress",
            "relevance",
        ),
    ),
    ("summary and hooks", ("hooks", "rewrites", "summary")),
    ("config", ("config",)),
    ("step context", ("context",)),
    ("reducer", ("reducer", "adapters", "models")),
    ("public API", ("",)),  # agentstate_reducer/__init__.py
    (
        "integrations",
        ("langgraph", "langgraph.*", "pydantic_ai", "google_adk", "openai_agents", "strands"),
    ),
    ("demo", ("demo", "demo.*")),
    ("command line", ("__main__",)),
)
"""The layers, lowest first: messages -> tokens -> planner -> step contract -> built-in
steps -> summary/hooks -> reducer -> langgraph (as DESIGN.md draws them), with the few
modules in between placed where their imports put them."""

ALLOWED: dict[tuple[str, str], str] = {
    ("reducer", "langgraph.merge"): (
        "the seed's MessageReducer.as_langgraph_reducer() builds the LangGraph channel; "
        "imported when it is called, so the core never needs the [langgraph] extra"
    ),
    ("reducer", "langgraph"): "the package of langgraph.merge, loaded with it (see above)",
}
"""Upward imports that are meant, ``(importer, imported)``, each with its reason."""


@dataclass(frozen=True)
class Violation:
    """One thing the layering forbids, as the failure message says it."""

    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


def _modules(package: Path) -> dict[str, Path]:
    """Every module of ``package`` by its name relative to it (``""`` for ``__init__``)."""
    found: dict[str, Path] = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _layer_of(name: str, layers: tuple[tuple[str, tuple[str, ...]], ...]) -> int | None:
    """The index of the layer naming ``name`` (exactly, or by a ``pkg.*`` entry)."""
    for index, (_, entries) in enumerate(layers):
        for entry in entries:
            if entry == name or (entry.endswith(".*") and name.startswith(entry[:-1])):
                return index
    return None


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """The import statements that run (at module level or in functions), leaving out the
    bodies of ``if TYPE_CHECKING:`` (their ``else`` runs, so it is kept)."""
    found: list[ast.Import | ast.ImportFrom] = []

    def walk(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for other in child.orelse:
                    walk_one(other)
                continue
            walk_one(child)

    def walk_one(node: ast.AST) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        walk(node)

    walk(tree)
    return found


def _at_module_level(tree: ast.Module) -> set[int]:
    """Line numbers of the imports outside any function (run when the module loads)."""
    lines: set[int] = set()

    def walk(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for other in child.orelse:
                    walk(ast.Module(body=[other], type_ignores=[]))
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                lines.add(child.lineno)
            walk(child)

    walk(tree)
    return lines


def _targets(
    importer: str, is_package: bool, node: ast.Import | ast.ImportFrom, root: str, known: set[str]
) -> tuple[set[str], set[str]]:
    """The package's modules an import statement names, and the packages it loads on the way
    (their ``__init__`` runs first; the root aside), by relative name."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    elif node.level:
        base = importer.split(".") if importer else []
        if not is_package:
            base = base[:-1]
        base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
        stem = ".".join([root, *base, *([node.module] if node.module else [])])
        names = [stem] + [f"{stem}.{alias.name}" for alias in node.names]
    else:
        stem = node.module or ""
        names = [stem] + [f"{stem}.{alias.name}" for alias in node.names]
    named: set[str] = set()
    parents: set[str] = set()
    for name in names:
        if name != root and not name.startswith(root + "."):
            continue
        relative = name[len(root) + 1 :] if name != root else ""
        while relative and relative not in known:
            relative = relative.rpartition(".")[0]
        if relative not in known:
            continue
        named.add(relative)
        parent = relative.rpartition(".")[0]
        while parent:  # importing a.b.c runs a.b's __init__ first
            parents.add(parent)
            parent = parent.rpartition(".")[0]
    named.discard(importer)
    # A module's own package is loading already when the module runs: no new import.
    parents -= {importer, *(importer.split(".")[:1] if importer else [])}
    own = importer if is_package else importer.rpartition(".")[0]
    parents = {p for p in parents if not (own == p or own.startswith(p + "."))}
    return named, parents - named


def check(
    package: Path,
    layers: tuple[tuple[str, tuple[str, ...]], ...] = LAYERS,
    allowed: dict[tuple[str, str], str] | None = None,
) -> list[Violation]:
    """Every upward import, unplaced module and module-level import cycle in ``package``."""
    allowed = ALLOWED if allowed is None else allowed
    modules = _modules(package)
    root = package.name
    known = set(modules)
    violations: list[Violation] = []
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        shown = f"{root}/{path.relative_to(package).as_posix()}"
        mine = _layer_of(name, layers)
        if mine is None:
            violations.append(Violation(shown, 1, f"{name or root!r} is in no layer of LAYERS"))
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        module_level = _at_module_level(tree)
        for node in _imports(tree):
            named, parents = _targets(name, path.name == "__init__.py", node, root, known)
            if node.lineno in module_level:
                # Cycles among what is named: a package's __init__ is always loaded before
                # its submodules, so reaching it again through them is no cycle.
                edges[name].update(named)
            for target in sorted(named | parents):
                theirs = _layer_of(target, layers)
                if theirs is None or theirs <= mine or (name, target) in allowed:
                    continue
                where = "inside a function" if node.lineno not in module_level else "at import"
                violations.append(
                    Violation(
                        shown,
                        node.lineno,
                        f"{root}.{name or '__init__'} (layer {layers[mine][0]!r}) imports "
                        f"{root}.{target} (layer {layers[theirs][0]!r}, above it) {where}",
                    )
                )
    for cycle in _cycles(edges):
        first = cycle[0]
        path = modules[first]
        violations.append(
            Violation(
                f"{root}/{path.relative_to(package).as_posix()}",
                1,
                "import cycle at module level: " + " -> ".join(f"{root}.{m}" for m in cycle),
            )
        )
    return violations


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(edges.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


# -- the package ----------------------------------------------------------------------------


def test_the_package_imports_only_downward() -> None:
    """No module of ``agentstate_reducer`` imports from a layer above its own, every module
    is placed in a layer, and no modules import each other at module level."""
    violations = check(PACKAGE)
    assert not violations, "\n".join(map(str, violations))


def test_every_layer_entry_names_a_module() -> None:
    """The declaration itself: each entry (or ``pkg.*`` pattern) matches a module, no module
    matches two layers, and every allowed upward import still exists and goes up."""
    modules = set(_modules(PACKAGE))
    for _, entries in LAYERS:
        for entry in entries:
            if entry.endswith(".*"):
                # A pattern may wait for its package (messages becomes one): its head must
                # be a module.
                assert entry[:-2] in modules, f"LAYERS names {entry!r}, of no module"
            else:
                assert entry in modules, f"LAYERS names {entry!r}, which is no module"
    for module in modules:
        matches = [
            name
            for name, entries in LAYERS
            if any(e == module or (e.endswith(".*") and module.startswith(e[:-1])) for e in entries)
        ]
        assert len(matches) <= 1, f"{module!r} is in layers {matches}"
    for importer, imported in ALLOWED:
        below, above = _layer_of(importer, LAYERS), _layer_of(imported, LAYERS)
        assert below is not None and above is not None and above > below
    assert check(PACKAGE, allowed={}) != [], "an ALLOWED import is no longer made: drop it"


# -- the checker fails when it should ------------------------------------------------------


@pytest.fixture
def package_copy(tmp_path: Path) -> Path:
    """A copy of the package's sources, to plant imports in."""
    copy = tmp_path / "agentstate_reducer"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "*.z"))
    assert check(copy) == []
    return copy


def _plant(path: Path, code: str) -> int:
    """Append ``code`` to ``path``; return the line it starts on."""
    text = path.read_text(encoding="utf-8")
    line = text.count("\n") + 2
    path.write_text(text + "\n" + code, encoding="utf-8")
    return line


def test_an_upward_import_in_a_function_fails_naming_file_line_and_layers(
    package_copy: Path,
) -> None:
    """A function of the estimate importing the reducer (tokens -> reducer) is reported with
    the file, the line and both layers."""
    line = _plant(
        package_copy / "tokens" / "estimate.py",
        "def _planted():\n    from ..reducer import MessageReducer\n    return MessageReducer\n",
    )
    violations = check(package_copy)
    assert [str(v) for v in violations] == [
        f"agentstate_reducer/tokens/estimate.py:{line + 1}: agentstate_reducer.tokens.estimate "
        "(layer 'tokens') imports agentstate_reducer.reducer (layer 'reducer', above it) "
        "inside a function"
    ]


def test_an_upward_import_at_module_level_fails(package_copy: Path) -> None:
    """``_checks`` importing the config at module level (base -> config) is reported; so is
    the contract importing a built-in step, and a step importing the hand-off."""
    _plant(package_copy / "_checks.py", "from .config import ReducerConfig  # noqa\n")
    _plant(package_copy / "steps" / "contract.py", "from .drop import DropOldest  # noqa\n")
    _plant(package_copy / "steps" / "relevance.py", "from ..hooks import namespace_key\n")
    messages = [v.message for v in check(package_copy) if "cycle" not in v.message]
    assert len(messages) == 3, messages
    assert (
        "agentstate_reducer._checks (layer 'base') imports agentstate_reducer.config"
        in (messages[0])
    )
    assert any(
        "(layer 'step contract') imports agentstate_reducer.steps.drop" in m for m in messages
    )
    assert any("(layer 'summary and hooks', above it) at import" in m for m in messages)


def test_type_checking_imports_are_allowed_and_their_else_is_not(package_copy: Path) -> None:
    """An upward import under ``if TYPE_CHECKING:`` is fine (annotations only); one in its
    ``else:`` branch runs, and is reported."""
    path = package_copy / "planner.py"
    _plant(path, "if TYPE_CHECKING:\n    from .reducer import MessageReducer  # noqa\n")
    assert check(package_copy) == []
    line = _plant(
        path,
        "if TYPE_CHECKING:\n    pass\nelse:\n    from .context import ReduceContext  # noqa\n",
    )
    violations = [v for v in check(package_copy) if "cycle" not in v.message]
    assert [(v.path, v.line) for v in violations] == [("agentstate_reducer/planner.py", line + 3)]


def test_importing_a_submodule_counts_as_importing_its_package(package_copy: Path) -> None:
    """``from .steps.contract import ...`` runs ``steps/__init__.py``: an upward import
    planted there is charged to it, and the contract layer stays clean."""
    _plant(package_copy / "steps" / "__init__.py", "from ..summary import summary_id  # noqa\n")
    violations = check(package_copy)
    assert len(violations) == 1
    assert violations[0].path == "agentstate_reducer/steps/__init__.py"
    assert "agentstate_reducer.steps (layer 'step contract') imports" in violations[0].message


def test_a_new_module_must_be_placed(package_copy: Path) -> None:
    """A module no layer names fails the check, so the layering is decided when it is
    added."""
    (package_copy / "stray.py").write_text('"""A module nobody placed."""\n', encoding="utf-8")
    assert [str(v) for v in check(package_copy)] == [
        "agentstate_reducer/stray.py:1: 'stray' is in no layer of LAYERS"
    ]


def test_a_cycle_inside_a_layer_fails(package_copy: Path) -> None:
    """Two modules of one layer importing each other at module level are reported, though
    neither import goes up."""
    _plant(package_copy / "reader.py", "from .session import PlanCache  # noqa\n")
    _plant(package_copy / "session.py", "from .reader import Reader  # noqa\n")
    messages = [v.message for v in check(package_copy)]
    assert messages == [
        "import cycle at module level: agentstate_reducer.reader -> agentstate_reducer.session"
    ]


# -- importing any module first works --------------------------------------------------------


def _core_modules() -> list[str]:
    return sorted(
        f"agentstate_reducer.{name}" if name else "agentstate_reducer"
        for name in _modules(PACKAGE)
        if not name.startswith(("langgraph", "demo", "__main__"))
    )


def test_every_core_module_imports_first_in_a_fresh_interpreter() -> None:
    """Each core module (``compress`` and ``relevance`` included) imports as the first
    thing a fresh interpreter does: no 'partially initialized module' from a cycle."""
    script = (
        "import importlib, subprocess, sys\n"
        "failed = []\n"
        "for name in sys.argv[1:]:\n"
        "    proc = subprocess.run([sys.executable, '-c', f'import {name}'],\n"
        "                          capture_output=True, text=True)\n"
        "    if proc.returncode:\n"
        "        failed.append(f'{name}: {proc.stderr.strip().splitlines()[-1]}')\n"
        "print('\\n'.join(failed))\n"
    )
    modules = _core_modules()
    assert "agentstate_reducer.compress" in modules and "agentstate_reducer.relevance" in modules
    proc = subprocess.run(
        [sys.executable, "-c", script, *modules],
        capture_output=True, text=True, timeout=600, cwd=ROOT, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "", proc.stdout


# -- the old module paths keep their names ----------------------------------------------------

OLD_PATHS: dict[str, dict[str, str]] = {
    "agentstate_reducer.policy": {
        **dict.fromkeys(["ReductionStep", "StepContext", "StepReport"], "steps.contract"),
        **dict.fromkeys(["ClearToolOutputs", "DEFAULT_PLACEHOLDER"], "steps.clear"),
        **dict.fromkeys(["TruncateLargest", "DEFAULT_MARKER"], "steps.truncate"),
        **dict.fromkeys(["check_policy", "default_policy"], "steps.policy"),
        **dict.fromkeys(["LexicalScorer", "SelectRelevant"], "steps.relevance"),
        "DropOldest": "steps.drop",
        "Summarize": "steps.summarize",
        "Compress": "steps.compress",
        "Recall": "steps.recall",
    },
    "agentstate_reducer.compress": dict.fromkeys(["Compress", "Compressor"], "steps.compress"),
    "agentstate_reducer.relevance": dict.fromkeys(
        ["LexicalScorer", "Scorer", "SelectRelevant", "message_text", "terms"], "steps.relevance"
    ),
    "agentstate_reducer.tokens": {
        **dict.fromkeys(
            [
                "IMAGE_TOKENS",
                "MESSAGE_OVERHEAD",
                "TOOL_CALL_OVERHEAD",
                "estimate_text_tokens",
                "estimate_tokens",
            ],
            "tokens.estimate",
        ),
        **dict.fromkeys(
            ["TIKTOKEN_FILES", "TIKTOKEN_NAMES", "tiktoken_cache_files", "tiktoken_encoding"],
            "tokens.encodings",
        ),
        **dict.fromkeys(["check_token_counter", "resolve_token_counter"], "tokens.counters"),
        "TokenCounter": "tokens.cache",
    },
}
"""Every public name the modules users import had before the split (the README, the
notebook and the docs import them), and the module that now defines it."""


@pytest.mark.parametrize("module", sorted(OLD_PATHS))
def test_the_old_module_paths_export_every_name_they_had(module: str) -> None:
    """``agentstate_reducer.policy``, ``.compress``, ``.relevance`` and ``.tokens`` give the
    very objects their new modules define, each name they exported before the split."""
    import importlib

    old = importlib.import_module(module)
    for name, home in OLD_PATHS[module].items():
        new = importlib.import_module(f"agentstate_reducer.{home}")
        assert getattr(old, name) is getattr(new, name), f"{module}.{name}"
    declared = getattr(old, "__all__", None)
    if declared is not None:
        assert sorted(declared) == sorted(OLD_PATHS[module]), module
