"""The quickstart notebook: committed with its outputs (so it reads on GitHub), written
against public APIs only, and every cell runs without an error and without a warning from
our own packages.

The notebook is executed with nbclient on a kernel spec written for the test, whose command
is this interpreter (``sys.executable``), so it runs in the same environment as the tests
whatever kernels the machine has installed; a cell appended to the in-memory copy checks it.
A cell put in front records every ``warnings.warn`` call made from ``agentstate_reducer``
or ``agentstate_cosmosdb`` code, whatever the filters do with it afterwards (our warnings
name the user's line with ``stacklevel``, so a filter on the module would miss them).
To refresh the stored outputs after editing it, run it top to bottom in Jupyter and save.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "quickstart.ipynb"
KERNEL = "agentstate-quickstart-test"


def _code_cells(nb: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [cell for cell in nb.cells if cell.cell_type == "code"]


def _images(cells: list[nbformat.NotebookNode]) -> list[str]:
    return [
        output["data"]["image/png"]
        for cell in cells
        for output in cell.outputs
        if "image/png" in output.get("data", {})
    ]


def test_notebook_is_stored_with_its_outputs() -> None:
    """Every code cell was run in order and kept what it showed (text, and the plot as a
    PNG), and none stored an error."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    code = _code_cells(nb)
    assert len(code) >= 5
    assert [cell.execution_count for cell in code] == list(range(1, len(code) + 1))
    for index, cell in enumerate(code):
        assert cell.outputs, f"code cell {index} has no stored output"
        assert all(o.output_type != "error" for o in cell.outputs), f"cell {index}: error"
        streams = [o for o in cell.outputs if o.output_type == "stream"]
        assert all(o.name == "stdout" for o in streams), f"cell {index} printed to stderr"
    images = _images(code)
    assert len(images) == 1 and len(images[0]) > 10_000, "the plot is not stored as a PNG"


def test_notebook_shows_the_code_a_user_writes_with_public_apis() -> None:
    """A graph, a saver, the middleware on create_agent, an on_prune hook and a summary,
    each written out in the notebook, and no import of the demo's or other private code."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    source = "\n".join(cell.source for cell in _code_cells(nb))
    for needed in (
        "StateGraph(",
        "ReducingCheckpointSaver(",
        "ReducerMiddleware(",
        "create_agent(",
        "on_prune=",
        "summarize_fn=",
        "as_langgraph_reducer()",
    ):
        assert needed in source, f"the notebook does not show {needed}"
    assert "agentstate_reducer.demo" not in source
    imports = re.findall(r"^\s*(?:from|import) (agentstate_reducer[\w.]*)", source, re.M)
    assert imports and all("._" not in name for name in imports), imports


@pytest.fixture
def kernel_on_this_python(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    spec_dir = tmp_path / "jupyter" / "kernels" / KERNEL
    spec_dir.mkdir(parents=True)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "agentstate-reducer tests",
        "language": "python",
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    return KERNEL


OWN_PACKAGES = ("agentstate_reducer", "agentstate_cosmosdb")

_RECORD_OUR_WARNINGS = f"""
import sys as _sys, warnings as _warnings

_our_warnings = []
_warn = _warnings.warn


def _recording_warn(message, category=None, stacklevel=1, *args, **kwargs):
    caller = _sys._getframe(1).f_globals.get("__name__", "")
    if caller.split(".")[0] in {OWN_PACKAGES!r}:
        kind = getattr(category, "__name__", None) or type(message).__name__
        _our_warnings.append(f"{{caller}}: {{kind}}: {{message}}")
    return _warn(message, category, stacklevel + 1, *args, **kwargs)


_warnings.warn = _recording_warn
"""

_REPORT = "import json, sys; print(json.dumps([sys.executable, _our_warnings]))"


def test_notebook_runs_without_errors_or_our_warnings(
    kernel_on_this_python: str, tmp_path: Path
) -> None:
    """Executes every cell in order; a cell error fails the test with the cell's traceback,
    and so does any warning our packages issued while the cells ran.

    Also checks that the kernel ran on this interpreter, that nothing was printed to stderr
    (a warning from any library shows there), that the plot cell displayed an image inline,
    and that the first cell's stored output is what it prints now (the stored outputs
    belong to this version of the code).
    """
    stored = nbformat.read(NOTEBOOK, as_version=4)
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nb.cells.insert(0, nbformat.v4.new_code_cell(_RECORD_OUR_WARNINGS))
    nb.cells.append(nbformat.v4.new_code_cell(_REPORT))
    client = NotebookClient(
        nb,
        kernel_name=kernel_on_this_python,
        timeout=600,
        resources={"metadata": {"path": str(tmp_path)}},
    )
    try:
        client.execute()
    except CellExecutionError as exc:  # pragma: no cover - the failure message is the point
        pytest.fail(f"a notebook cell failed:\n{exc}")
    code = _code_cells(nb)[1:-1]  # the notebook's own cells
    errors = [o for cell in code for o in cell.outputs if o.output_type == "error"]
    assert errors == []
    printed = "".join(o.get("text", "") for o in nb.cells[-1].outputs)
    executable, ours = json.loads(printed)
    assert executable == sys.executable
    assert ours == [], f"our packages warned while the notebook ran: {ours}"
    stderr = [o.text for cell in code for o in cell.outputs
              if o.output_type == "stream" and o.name == "stderr"]  # fmt: skip
    assert stderr == [], stderr
    assert _images(code), "the plot cell displayed no image"
    first_now = "".join(o.get("text", "") for o in code[0].outputs)
    first_stored = "".join(o.get("text", "") for o in _code_cells(stored)[0].outputs)
    assert first_now == first_stored
