"""Figures of the code's structure: `python3 scripts/structure.py [--json]`.

Prints what issue 50 measures the house by: modules at the top of `harness/`, import cycles (every
module a node, a package's `__init__` its own; imports inside functions counted, those under
`TYPE_CHECKING` not), `from harness...` imports inside functions (and how many of those carry a
comment, on their line or the line above, saying why they are deferred), and the longest files of `harness/`, `fixtures/` and `tests/`.
Reads the source as text (ast); runs nothing of the project.
"""

from __future__ import annotations

import argparse
import ast
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted((ROOT / "harness").rglob("*.py")) + sorted((ROOT / "fixtures").rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[0] == "fixtures":
            parts[0] = "ksh_fixtures"
        found[".".join(parts)] = path
    return found


def _target(name: str, mods: dict[str, Path]) -> str | None:
    """The module `name` (dotted) is: itself, its package's __init__, or the module holding it."""
    while name:
        if name in mods:
            return name
        if name + ".__init__" in mods:
            return name + ".__init__"
        name = name.rpartition(".")[0]
    return None


def imports(mods: dict[str, Path]) -> tuple[dict[str, set[str]], list[tuple[str, int, bool]]]:
    """(module -> modules it imports; every `from harness` import inside a function: module, line, commented)."""
    edges: dict[str, set[str]] = {}
    deferred = []
    for module, path in mods.items():
        lines = path.read_text().splitlines()
        tree = ast.parse("\n".join(lines))
        todo = [(node, False) for node in tree.body]
        while todo:
            node, inside = todo.pop()
            if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
                continue
            nested = inside or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            todo.extend((child, nested) for child in ast.iter_child_nodes(node))
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            ours = [n for n in names if n.split(".")[0] in ("harness", "ksh_fixtures")]
            if ours and inside:  # (its comment: on its line, or on the line above)
                text = lines[node.lineno - 1] + (lines[node.lineno - 2] if node.lineno > 1 else "")
                deferred.append((module, node.lineno, "#" in text))
            for name in ours:
                target = _target(name, mods)
                if target and target != module:
                    edges.setdefault(module, set()).add(target)
    return edges, deferred


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    component = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        component.append(w)
                        if w == v:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def figures() -> dict:
    mods = modules()
    edges, deferred = imports(mods)
    found = cycles(edges)
    longest = sorted(((len(p.read_text().splitlines()), str(p.relative_to(ROOT)))
                      for p in [*(ROOT / "harness").rglob("*.py"), *(ROOT / "fixtures").rglob("*.py"),
                                *(ROOT / "tests").rglob("*.py")]), reverse=True)[:10]
    return {
        "top_level_modules": sorted(p.name for p in (ROOT / "harness").glob("*.py") if p.name != "__init__.py"),
        "cycles": found,
        "modules_in_cycles": sum(len(c) for c in found),
        "imports_inside_functions": len(deferred),
        "imports_inside_functions_commented": sum(1 for *_, commented in deferred if commented),
        "longest_files": [{"lines": n, "path": path} for n, path in longest],
        "test_files_at_top_of_tests": len(list((ROOT / "tests").glob("test_*.py"))),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    f = figures()
    if args.json:
        print(json.dumps(f, indent=1))
        return 0
    print(f"modules at the top of harness/: {len(f['top_level_modules'])} ({', '.join(f['top_level_modules'])})")
    print(f"import cycles: {len(f['cycles'])}, {f['modules_in_cycles']} modules in them")
    for c in f["cycles"]:
        print(f"  {len(c)}: {', '.join(c)}")
    print(f"`from harness` imports inside functions: {f['imports_inside_functions']} "
          f"({f['imports_inside_functions_commented']} with a comment on the line)")
    print(f"test files at the top of tests/: {f['test_files_at_top_of_tests']}")
    print("longest files:")
    for row in f["longest_files"]:
        print(f"  {row['lines']:5}  {row['path']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
