"""The quickstart notebook: stored without outputs, and every cell runs without an error.

The notebook is executed with nbclient on a kernel spec written for the test, whose command
is this interpreter (``sys.executable``), so it runs in the same environment as the tests
whatever kernels the machine has installed; a cell appended to the in-memory copy checks it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "quickstart.ipynb"
KERNEL = "agentstate-quickstart-test"


def test_notebook_is_stored_without_outputs() -> None:
    """Every code cell has no outputs and no execution count, so diffs stay readable."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert code, "the notebook has no code cells"
    for index, cell in enumerate(code):
        assert cell.outputs == [], f"code cell {index} has stored outputs"
        assert cell.execution_count is None, f"code cell {index} has an execution count"


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


def test_notebook_runs_without_errors(kernel_on_this_python: str, tmp_path: Path) -> None:
    """Executes every cell in order; a cell error fails the test with the cell's traceback.

    Also checks that the kernel ran on this interpreter and that the plot cell displayed
    an image inline.
    """
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("import sys; print(sys.executable)"))
    client = NotebookClient(
        nb,
        kernel_name=kernel_on_this_python,
        timeout=300,
        resources={"metadata": {"path": str(tmp_path)}},
    )
    try:
        client.execute()
    except CellExecutionError as exc:  # pragma: no cover - the failure message is the point
        pytest.fail(f"a notebook cell failed:\n{exc}")
    errors = [
        output
        for cell in nb.cells
        if cell.cell_type == "code"
        for output in cell.outputs
        if output.output_type == "error"
    ]
    assert errors == []
    printed = "".join(o.get("text", "") for o in nb.cells[-1].outputs)
    assert printed.strip() == sys.executable
    images = [
        output
        for cell in nb.cells
        if cell.cell_type == "code"
        for output in cell.outputs
        if "image/png" in output.get("data", {})
    ]
    assert images, "the plot cell displayed no image"
