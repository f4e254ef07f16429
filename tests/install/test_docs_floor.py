"""The ``docs`` dependency group's floors are real: installed at its lowest direct versions
(``uv --resolution lowest-direct``, as ``test_lowest.py`` does for the extras), the API
reference builds with ``mkdocs build --strict`` and renders every public name and the
highlighted examples, as with the newest versions."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.install.conftest import ROOT, MakeVenv, clean_env, run

tomllib = pytest.importorskip("tomllib")  # Python 3.11+


def _docs_group() -> list[str]:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    group = pyproject["dependency-groups"]["docs"]
    assert all(isinstance(item, str) for item in group), group
    return list(group)


def test_docs_group_floors_build_the_reference(make_venv: MakeVenv, tmp_path: Path) -> None:
    from tests.test_docs import PAGES, _undocumented

    requirements = _docs_group()
    venv = make_venv("docs-lowest", requirements, resolution="lowest-direct")
    installed = venv.distributions()
    for requirement in requirements:
        name, floor = requirement.split(">=")
        name = name.split("[")[0].lower()
        assert installed[name] == floor or installed[name].startswith(floor + "."), (
            name, installed[name], floor
        )  # fmt: skip
    site = tmp_path / "site"
    proc = run([venv.bin("mkdocs"), "build", "--strict", "--site-dir", site], cwd=ROOT,
               env=clean_env())  # fmt: skip
    assert "WARNING" not in proc.stderr, proc.stderr[-3000:]
    assert _undocumented(site) == []
    for page, anchors in PAGES.items():
        html = (site / "reference" / page / "index.html").read_text(encoding="utf-8")
        assert all(f'id="{anchor}"' in html for anchor in anchors), page
    reducer = (site / "reference" / "reducer" / "index.html").read_text(encoding="utf-8")
    assert '<span class="gp">&gt;&gt;&gt; </span><span class="n">reducer</span>' in reducer
    print(f"[docs floors] {sys.version_info[:2]}: {requirements}")
