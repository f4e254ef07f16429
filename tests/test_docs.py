"""The API reference builds from the docstrings with ``mkdocs build --strict`` (any warning,
a broken cross-reference or a page left out of the navigation, fails it), each page
documents what it promises, and every public name is documented somewhere: each name in
the ``__all__`` of the packages and their public modules, plus the public names of modules
without an ``__all__`` that the README and the docstrings send users to."""

from __future__ import annotations

import importlib
import os
import pkgutil
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent

PUBLIC_MODULES = [
    "agentstate_reducer",
    "agentstate_reducer.summary",
    "agentstate_reducer.policy",
    "agentstate_reducer.tokens",
    "agentstate_reducer.messages",
    "agentstate_reducer.langgraph",
    "agentstate_reducer.pydantic_ai",
    "agentstate_reducer.google_adk",
    "agentstate_reducer.openai_agents",
    "agentstate_reducer.strands",
    "agentstate_cosmosdb",
    "agentstate_tiktoken_offline",
]
"""Modules whose ``__all__`` (when they have one) the reference must cover; the public
submodules of ``agentstate_reducer.langgraph`` are added by :func:`_modules`."""

DEPRECATED_MODULES = {"agentstate_reducer.langgraph.scripted"}
"""Alias modules kept for old imports: documented by the CHANGELOG, not the reference."""

WITHOUT_ALL = {
    # messages has no __all__; these are the names the README and docstrings point at
    "agentstate_reducer.messages": ["SUMMARY_HEADER", "is_summary", "*_of"],
    # returned by MessageReducer.handoff_status() and MessageReducer.limits
    "agentstate_reducer.hooks": ["HandoffStatus"],
    "agentstate_reducer.planner": ["PlanLimits"],
}
"""Public names of modules without ``__all__``; ``*_of`` stands for every function of the
module whose name ends in ``_of`` (``role_of``, ``content_of``, ...)."""

PAGES = {
    "reducer": [
        "agentstate_reducer.MessageReducer.reduce",
        "agentstate_reducer.MessageReducer.plan",
    ],
    "config": ["agentstate_reducer.ReducerConfig"],
    "result": ["agentstate_reducer.ReducerResult", "agentstate_reducer.validate.Problem"],
    "policy": [
        "agentstate_reducer.policy.DropOldest",
        "agentstate_reducer.policy.StepReport",
        "agentstate_reducer.policy.StepContext",
        "agentstate_reducer.compress.Compress",
        "agentstate_reducer.relevance.SelectRelevant",
        "agentstate_reducer.steps.recall.Recall",
    ],
    "tokens": [
        "agentstate_reducer.estimate_tokens",
        "agentstate_reducer.tokens.TokenCounter",
        "agentstate_reducer.tokens.usage.Calibration",
        "agentstate_reducer.tokens.models.model_window",
    ],
    "hooks": ["agentstate_reducer.Background", "agentstate_reducer.errors.PruneHookError"],
    "summaries": ["agentstate_reducer.summary"],
    "langgraph": [
        "agentstate_reducer.langgraph.ReducingCheckpointSaver",
        "agentstate_reducer.langgraph.agents.ReducerMiddleware",
        "agentstate_reducer.langgraph.store.StoreMemory",
    ],
    "cosmosdb": ["agentstate_cosmosdb.CosmosDBSaver", "agentstate_cosmosdb.AsyncCosmosDBSaver"],
}


def _modules() -> list[str]:
    import agentstate_reducer.langgraph

    found = list(PUBLIC_MODULES)
    for info in pkgutil.iter_modules(agentstate_reducer.langgraph.__path__):
        name = f"agentstate_reducer.langgraph.{info.name}"
        if not info.name.startswith("_") and name not in DEPRECATED_MODULES:
            found.append(name)
    return found


def public_names() -> list[tuple[str, str]]:
    """Every ``(module, name)`` the reference must document."""
    names: list[tuple[str, str]] = []
    for module_name in _modules():
        module = importlib.import_module(module_name)
        names += [(module_name, name) for name in getattr(module, "__all__", ())]
    for module_name, wanted in WITHOUT_ALL.items():
        module = importlib.import_module(module_name)
        for name in wanted:
            if name == "*_of":
                helpers = [n for n in vars(module) if n.endswith("_of") and not n.startswith("_")]
                assert helpers, f"{module_name} has no *_of helpers any more"
                names += [(module_name, n) for n in sorted(helpers)]
            else:
                names.append((module_name, name))
    return names


_MISSING = object()


def _resolve(path: str) -> Any:
    """The object a documented id such as ``pkg.module.Class.attr`` names, or _MISSING."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            target = getattr(target, attribute, _MISSING)
            if target is _MISSING:
                return _MISSING
        return target
    return _MISSING


def _undocumented(site: Path) -> list[str]:
    """``module.name`` for each public name no page renders: no heading id is the name
    under its own module or under another path that names the very same object."""
    ids: set[str] = set()
    for page in site.rglob("*.html"):
        ids.update(re.findall(r'id="([A-Za-z_][\w.]*)"', page.read_text(encoding="utf-8")))
    by_last: dict[str, list[str]] = {}
    for anchor in ids:
        by_last.setdefault(anchor.rsplit(".", 1)[-1], []).append(anchor)
    missing = []
    for module_name, name in public_names():
        if f"{module_name}.{name}" in ids:
            continue
        obj = getattr(importlib.import_module(module_name), name)
        if not any(_resolve(anchor) is obj for anchor in by_last.get(name, [])):
            missing.append(f"{module_name}.{name}")
    return missing


def test_the_public_names_are_collected() -> None:
    """The collection itself: the names the reference is known to need are in it."""
    names = {f"{m}.{n}" for m, n in public_names()}
    for needed in (
        "agentstate_reducer.langgraph.LLMSummarizer",
        "agentstate_reducer.langgraph.CheckpointRetention",
        "agentstate_reducer.langgraph.ChannelReducer",
        "agentstate_reducer.langgraph.MergeMode",
        "agentstate_reducer.hooks.HandoffStatus",
        "agentstate_reducer.planner.PlanLimits",
        "agentstate_reducer.messages.SUMMARY_HEADER",
        "agentstate_reducer.messages.role_of",
        "agentstate_reducer.messages.tool_call_ids_of",
        "agentstate_reducer.langgraph.testing.ScriptedChatModel",
        "agentstate_cosmosdb.migrate_from_langgraph_checkpoint_cosmosdb",
        "agentstate_cosmosdb.MigrationReport",
    ):
        assert needed in names, needed
    assert not any(n.startswith("agentstate_reducer.langgraph.scripted.") for n in names)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The reference, built once with ``mkdocs build --strict``."""
    mkdocs = Path(sys.executable).with_name("mkdocs")
    if not mkdocs.exists():
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("mkdocs is not installed; CI=true requires it (pip install --group docs)")
        pytest.skip("mkdocs is not installed: pip install --group docs")
    site = tmp_path_factory.mktemp("docs") / "site"
    proc = subprocess.run(
        [mkdocs, "build", "--strict", "--site-dir", site], capture_output=True, text=True,
        timeout=600, cwd=ROOT, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "WARNING" not in proc.stderr
    return site


def test_the_site_has_home_guides_and_reference(site: Path) -> None:
    """The navigation is Home, Guides and API reference; every guide page is rendered, with
    its snippets as highlighted code, and the home page links to each of them."""
    home = (site / "index.html").read_text(encoding="utf-8")
    for section in ("Home", "Guides", "API reference"):
        assert section in home
    guides = sorted((ROOT / "docs" / "guides").glob("*.md"))
    assert len(guides) >= 10
    for guide in guides:
        html = (site / "guides" / guide.stem / "index.html").read_text(encoding="utf-8")
        assert "<h1" in html, guide.name
        assert f'href="guides/{guide.stem}/"' in home, f"the home page does not link {guide.name}"
    langgraph = (site / "guides" / "langgraph" / "index.html").read_text(encoding="utf-8")
    assert 'class="language-python' in langgraph or "highlight" in langgraph


def test_every_public_name_is_documented(site: Path) -> None:
    missing = _undocumented(site)
    assert missing == [], f"not rendered in the API reference: {missing}"


def test_api_reference_builds_strictly_and_documents_each_page(site: Path) -> None:
    for page, anchors in PAGES.items():
        html = (site / "reference" / page / "index.html").read_text(encoding="utf-8")
        for anchor in anchors:
            assert f'id="{anchor}"' in html, f"{page}: {anchor} is not documented"
    reducer = (site / "reference" / "reducer" / "index.html").read_text(encoding="utf-8")
    # The Example section renders as highlighted doctest code, not as Markdown.
    assert '<span class="gp">&gt;&gt;&gt; </span><span class="n">reducer</span>' in reducer
