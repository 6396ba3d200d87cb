"""The house rules, checked on the source tree (the AST of every module, no imports run).

- No module over 600 lines (the C kernel is not a module of Python).
- No import cycles: the graph holds every import a module can run, function-level
  ("lazy") ones included, so a cycle dodged by importing late still fails here. Imports
  under ``if TYPE_CHECKING:`` never run and are left out.
- The layers: core < audio, models < device < provisioning. ``audio`` and ``models``
  know nothing of each other or of anything above them; nothing imports upward; the
  command line (``edgevoice.device.cli``) is the one front door that may import any layer.
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MAX_LINES = 600
# Modules still over the limit, each at most its length when this test was written: it
# may only shrink, and it leaves this list once it is under the limit. The AEC engine is
# one class whose hot path reads its own attributes; splitting it is a change to measure
# against bench/aec (CPU per second of audio), not a move.
# Over the limit, capped where they stand so they cannot grow: the engine's hot path reads
# its own attributes (split it with bench/aec's figures, not as a move); the conversation
# took hooks from four branches at once (controls, timers, arbitration, the remote
# pipeline) and wants its hearing handlers out next.
STILL_TOO_LONG: dict[str, int] = {}
LAYERS = {"core": 0, "audio": 1, "models": 1, "device": 2, "provisioning": 3}
FRONT_DOOR = "edgevoice.device.cli"


def package_dirs() -> dict[str, Path]:
    with (REPO / "pyproject.toml").open("rb") as handle:
        mapping: dict[str, str] = tomllib.load(handle)["tool"]["setuptools"]["package-dir"]
    return {package: REPO / folder for package, folder in mapping.items()}


def modules() -> dict[str, Path]:
    """Dotted name → file of every module of the installed package."""
    found: dict[str, Path] = {}
    for package, folder in package_dirs().items():
        for path in sorted(folder.rglob("*.py")):
            relative = path.relative_to(folder).with_suffix("")
            parts = [p for p in relative.parts if p != "__init__"]
            if package == "edgevoice" and parts and (folder / parts[0]).is_dir() and parts[0] in LAYERS:
                continue
            found[".".join([package, *parts])] = path
    return found


def _is_module(name: str, known: dict[str, Path]) -> bool:
    if name in known:
        return True
    parent, _, leaf = name.rpartition(".")
    folder = known.get(parent)
    # a compiled extension (the AEC kernel: _kernel.c, built to _kernel*.so)
    return folder is not None and folder.name == "__init__.py" and (
        (folder.parent / f"{leaf}.c").exists() or any(folder.parent.glob(f"{leaf}*.so")))


def _runtime_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node except those under ``if TYPE_CHECKING:``."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                stack.extend(child.orelse)
                continue
            stack.append(child)


def imports_of(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                full = f"{base}.{alias.name}"
                targets.add(full if _is_module(full, known) else base)
    return {t for t in targets if t == "edgevoice" or t.startswith("edgevoice.")}


def import_graph() -> dict[str, set[str]]:
    known = modules()
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        edges = set()
        for imported in imports_of(name, path, known):
            if imported not in known and _is_module(imported, known):
                continue  # a compiled extension: no Python imports of its own
            target = imported
            while target not in known and "." in target:
                target = target.rpartition(".")[0]
            if target in known and target != name:
                edges.add(target)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def layer(name: str) -> str:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else "core"


def test_no_module_is_over_600_lines() -> None:
    lengths = {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in modules().items()}
    long = {name: n for name, n in lengths.items() if n > STILL_TOO_LONG.get(name, MAX_LINES)}
    assert long == {}
    fixed = {name for name, n in STILL_TOO_LONG.items() if lengths.get(name, 0) <= MAX_LINES}
    assert fixed == set(), "under the limit now: remove them from STILL_TOO_LONG"


def test_there_are_no_import_cycles_not_even_lazy_ones() -> None:
    assert cycles(import_graph()) == []


def test_nothing_imports_upward() -> None:
    allowed = {"core": {"core"}, "audio": {"core", "audio"}, "models": {"core", "models"},
               "device": {"core", "audio", "models", "device"},
               "provisioning": {"core", "audio", "models", "device", "provisioning"}}
    upward = sorted(f"{source} -> {target}" for source, targets in import_graph().items()
                    for target in targets
                    if not source.startswith(FRONT_DOOR) and layer(target) not in allowed[layer(source)])
    assert upward == []


def test_the_checks_see_what_they_claim() -> None:
    graph = import_graph()
    assert "edgevoice.audio.io.duplex" in graph["edgevoice.device.runtime.daemon"]
    # a function-level import is an edge too
    assert "edgevoice.audio.hearing.vad_silero" in graph["edgevoice.device.assembly.hearing"]
    assert "edgevoice.audio.aec._kernel" not in graph  # the C kernel is not a Python module
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("name", ["edgevoice", "edgevoice.errors", "edgevoice.audio.frames",
                                  "edgevoice.device.cli", "edgevoice.provisioning.provision"])
def test_every_layer_is_found(name: str) -> None:
    assert name in modules()


def test_the_readme_layout_table_matches_the_tree() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    table = readme[readme.index("| folder | import | owns |"):readme.index("Layers, bottom up")]
    rows = [row for row in table.splitlines()[2:] if row.startswith("|")]
    listed = {cell.strip("`,") for row in rows for cell in row.split("|")[1].split()
              if cell.strip("`,").endswith("/")}
    packages = set()
    for package, folder in package_dirs().items():
        packages.add(f"{folder.name}/")
        if package != "edgevoice":
            packages.update(f"{folder.name}/{sub.name}/" for sub in folder.iterdir()
                            if (sub / "__init__.py").exists())
    assert packages - listed == set(), "packages the README's layout table does not list"
    assert {p for p in listed if not (REPO / p).is_dir()} == set(), "folders listed that do not exist"
