"""Every ```python block in docs/ and README.md runs, in order, one namespace per file."""
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
FILES = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


@pytest.mark.parametrize("path", [f for f in FILES if f.exists()], ids=lambda p: p.name)
def test_doc_examples_run(path, capsys):
    blocks = BLOCK.findall(path.read_text())
    if path.parent.name == "docs":
        assert blocks, f"{path.name} has no runnable example"
    namespace = {"__name__": f"doc_{path.stem}"}
    for i, block in enumerate(blocks):
        try:
            exec(compile(block, f"{path.name}[block {i}]", "exec"), namespace)
        except Exception as exc:
            pytest.fail(f"{path.name} block {i} raised {type(exc).__name__}: {exc}\n{block}")


@pytest.mark.parametrize("path", [ROOT / "docs" / "ops.md", ROOT / "README.md"], ids=lambda p: p.name)
def test_op_tables_name_every_op_of_the_catalogue(path):
    """The op tables are written by hand; the catalogue is the truth they must keep up with."""
    from polyeng.ops import catalogue
    table = "\n".join(line for line in path.read_text().splitlines() if line.startswith("|"))
    missing = [op for op in catalogue.specs() if not re.search(rf"`{op}[`(]", table)]
    assert not missing, f"{path.name}'s op table does not list {', '.join(missing)}"
