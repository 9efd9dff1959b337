"""The accuracy report of benchmarks/accuracy.py, on a small scale of the workload."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
import accuracy  # noqa: E402
from polyeng.bench.workload import CASES  # noqa: E402
from polyeng.ops import OPS  # noqa: E402


@pytest.fixture(scope="module")
def rows():
    return accuracy.measure(scale=0.02)


def test_every_case_is_measured(rows):
    assert [r["case"] for r in rows] == [c.name for c in CASES]
    assert {c.op for c in CASES} <= set(OPS)


def test_modes_change_only_allow_ops(rows):
    for row in rows:
        modes = [row[m] for m in accuracy.MODES]
        if row["category"] == "allow":
            assert row["strict"][1] < 1e-6
            assert 1e-4 < row["tf32"][1] < 1e-3 and 1e-3 < row["bf16"][1] < 1e-2
        else:
            assert all(m == modes[0] for m in modes), row["case"]


def test_exact_ops_have_no_error_and_storage_costs_one_rounding(rows):
    for row in rows:
        if OPS[next(c.op for c in CASES if c.name == row["case"])].exact:
            assert all(row[c] == (0.0, 0.0) for c in list(accuracy.MODES) + ["bf16 storage", "f16 storage"])
        else:
            assert row["bf16 storage"][1] < 2 ** -8 and row["f16 storage"][1] < 2 ** -11


def test_markdown_table(rows):
    table = accuracy.markdown(rows)
    assert table.splitlines()[0].startswith("| case | category | strict | tf32 | bf16 | f16 |")
    assert len(table.splitlines()) == len(rows) + 2
