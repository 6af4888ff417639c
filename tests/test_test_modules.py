"""The test suite's own layout: what several test modules share lives in tests/*_harness.py, never in a test
module another imports (importing one runs its module-level set-up again and ties the two files together)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).parent


def test_no_test_module_imports_another() -> None:
    importing = []
    for path in sorted(TESTS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            if any(n.split(".")[-1].startswith("test_") and n.startswith("tests.") for n in names):
                importing.append(f"{path.relative_to(TESTS)}:{node.lineno}")
    assert not importing, importing
