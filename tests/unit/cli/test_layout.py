"""The house rules of the code base, checked: no import cycles between our modules (imports inside
functions included), no module importing another's private names, the pytest plugin installed
under its own import name, and a run's settings carried by the spec alone."""

from __future__ import annotations

import ast
from pathlib import Path

from harness.settings import reproduce_command

ROOT = Path(__file__).resolve().parents[3]


def _modules() -> dict[str, Path]:
    mods = {}
    for path in sorted((ROOT / "harness").rglob("*.py")) + sorted((ROOT / "fixtures").rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[0] == "fixtures":
            parts[0] = "ksh_fixtures"
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = path
    return mods


def _owner(name: str, mods: dict[str, Path]) -> str | None:
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def _imports(mods: dict[str, Path]) -> tuple[dict[str, set[str]], list[tuple[str, str, str]]]:
    """(module -> our modules it imports, anywhere but under TYPE_CHECKING; private names imported)."""
    edges: dict[str, set[str]] = {}
    private = []
    for module, path in mods.items():
        todo = list(ast.parse(path.read_text()).body)
        while todo:
            node = todo.pop()
            if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
                continue
            todo.extend(ast.iter_child_nodes(node))
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    if full in mods:
                        names.append(full)
                    elif alias.name.startswith("_") and not alias.name.startswith("__") \
                            and _owner(node.module, mods):
                        private.append((module, node.module, alias.name))
            for name in names:
                target = _owner(name, mods)
                # a package and its own submodules are one unit, not a cycle
                if target and target != module and not target.startswith(module + ".") \
                        and not module.startswith(target + "."):
                    edges.setdefault(module, set()).add(target)
    return edges, private


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles_between_our_modules():
    edges, _ = _imports(_modules())
    assert _cycles(edges) == []


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_module_imports_another_modules_private_names():
    _, private = _imports(_modules())
    assert private == []


def test_the_pytest_plugin_is_installed_as_ksh_fixtures_not_fixtures():
    from importlib.metadata import entry_points
    plugins = {ep.name: ep.value for ep in entry_points(group="pytest11")}
    assert plugins.get("share_harness") == "ksh_fixtures.plugin"
    setup = (ROOT / "setup.py").read_text()
    assert '"ksh_fixtures": "fixtures"' in setup and '"fixtures*"' not in (ROOT / "pyproject.toml").read_text()


def test_no_environment_channel_between_our_own_modules():
    """Settings travel in the RunSpec: no module sets an environment variable another one reads
    (users' own variables, KSH_* and SPARK_MASTER, are read; none is written for another module)."""
    for module, path in _modules().items():
        text = path.read_text()
        for channel in ("KSH_CHECK_ENGINE", "KSH_SPARK_THRESHOLD", "KSH_RULES", "KSH_CONFORMANCE_OUT"):
            assert channel not in text, f"{module} still uses {channel}"


def test_the_spec_validates_client_engine_threshold_and_rules():
    import pytest

    from harness.errors import HarnessError
    from harness.spec import RunSpec
    for bad in ({"client": "nope"}, {"check_engine": "quantum"}, {"spark_threshold": -1},
                {"rules": ("ack-accept", "bogus-rule")}):
        with pytest.raises(HarnessError):
            RunSpec(**bad).validate()
    from harness.check import engine_for
    spec = RunSpec(client="franz", check_engine="auto", spark_threshold=10, rules=("ack-accept",)).validate()
    assert engine_for(spec.check_engine, 10, spec.spark_threshold) == "inprocess"
    assert engine_for(spec.check_engine, 11, spec.spark_threshold) == "spark"
    assert engine_for("spark", 1) == "spark"
    assert "--client franz" in reproduce_command(spec)


def test_one_topic_naming_for_every_run():
    from harness.run.context import topic_name
    from harness.spec import RunSpec
    name = topic_name(RunSpec(name="a test[with] odd/chars " + "x" * 300, seed=7))
    assert name.startswith("ksh-a-test-with-odd-chars-") and "-s7-" in name and len(name) <= 249
    assert topic_name(RunSpec(seed=7)) != topic_name(RunSpec(seed=7))  # fresh per run


def _structure():
    import importlib.util
    spec = importlib.util.spec_from_file_location("structure", ROOT / "scripts" / "structure.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_import_left_inside_a_function_says_why_and_no_module_is_in_a_cycle():
    """The house rule of issue 50: imports at the top of files; one deferred says why (start-up of the CLI or the
    plugin, or a heavy library), on its line or the one above. And no cycle, a package's __init__ its own node."""
    structure = _structure()
    mods = structure.modules()
    edges, deferred = structure.imports(mods)
    silent = [f"{module}:{line}" for module, line, commented in deferred if not commented]
    assert silent == [], f"imports inside functions without a reason: {silent[:10]}"
    assert structure.cycles(edges) == []


def test_the_plugin_and_the_settings_load_no_heavy_library():
    """Every pytest session of a Python with the harness installed loads the plugin, and it reads the table of
    settings: neither may load confluent_kafka, pyspark or plotly (they load where a fixture or a command needs
    them; a deferred import says so)."""
    import subprocess
    import sys
    code = ("import sys, ksh_fixtures.plugin, harness.settings, harness.spec\n"
            "print(sorted(m for m in ('confluent_kafka', 'pyspark', 'plotly') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]", done.stdout
