"""Import circles inside the polyeng package: modules that import each other, directly or through others.

Every ``import`` statement counts, at module level or inside a function, since a function-level
import is still a dependency (only its timing differs). ``from . import x`` counts as an import of
the submodule ``x`` when one exists, else of the package. A package's ``__init__`` is the module
named after the package. Circles are the strongly connected components of more than one module
(and modules importing themselves); each is printed with its modules.

    python benchmarks/import_cycles.py [--root polyeng] [--json FILE]
"""
from __future__ import annotations

import argparse
import ast
import json
import pathlib
import sys


def module_names(root: pathlib.Path) -> dict:
    """dotted module name -> source path, for every .py file under ``root`` (a package)."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _resolve(module: str, is_package: bool, level: int, target: str | None) -> str:
    if level == 0:
        return target or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[:len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def imports_of(name: str, path: pathlib.Path, known: dict) -> set:
    tree = ast.parse(path.read_text(), str(path))
    is_package = path.name == "__init__.py"
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(name, is_package, node.level, node.module)
            targets = []
            for alias in node.names:
                sub = f"{base}.{alias.name}" if base else alias.name
                targets.append(sub if sub in known else base)
        else:
            continue
        for target in targets:
            while target and target not in known:   # polyeng.x.y.attr -> the module that holds it
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def strongly_connected(graph: dict) -> list:
    """Tarjan's components, iteratively (the package is deep enough to matter for recursion)."""
    index, low, on_stack, stack, components, counter = {}, {}, set(), [], [], [0]
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            advanced = False
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


def circles(root: pathlib.Path) -> list:
    known = module_names(root)
    graph = {name: imports_of(name, path, known) for name, path in known.items()}
    return sorted((c for c in strongly_connected(graph) if len(c) > 1), key=lambda c: (-len(c), c))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=str(pathlib.Path(__file__).resolve().parents[1] / "polyeng"))
    parser.add_argument("--json", help="write the circles to this file")
    args = parser.parse_args(argv)
    found = circles(pathlib.Path(args.root))
    for component in found:
        print(f"{len(component)} modules: {', '.join(component)}")
    print(f"{len(found)} import circles, {sum(map(len, found))} modules in them")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(found, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
