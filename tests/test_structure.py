"""The shape of the source tree: no circle of modules, no import running back up inside any
package, no crowded folder, one port with no forwarding methods, short module docstrings, and no
ticket numbers.

Each check reads the files (tests/structure.py), so each is also run on a copy of the tree with
one breach added, to show it catches it.
"""

from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path
from typing import Final

import pytest

from tests.structure import circles, folders_over, import_graph, package_circles

ROOT: Final = Path(__file__).resolve().parents[1]
SOURCE: Final = ROOT / "src" / "switchboard"
MAX_MODULES: Final = 15


def _copy(tmp_path: Path) -> Path:
    target = tmp_path / "switchboard"
    shutil.copytree(SOURCE, target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def _add_type_checking_import(module: Path, line: str) -> None:
    source = module.read_text(encoding="utf-8")
    head = "from __future__ import annotations\n"
    assert head in source
    block = f"{head}\nfrom typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    {line}\n"
    module.write_text(source.replace(head, block, 1), encoding="utf-8")


def test_no_modules_import_each_other_in_a_circle_type_checking_imports_included() -> None:
    assert circles(import_graph(SOURCE, "switchboard")) == []


def test_no_import_runs_back_up_from_a_lower_part_to_a_higher_one_inside_any_package() -> None:
    assert package_circles(import_graph(SOURCE, "switchboard")) == []


def test_no_source_folder_holds_more_than_fifteen_modules() -> None:
    assert folders_over(SOURCE, MAX_MODULES) == {}


def test_a_circle_closed_only_under_type_checking_is_caught(tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    _add_type_checking_import(copy / "channels" / "ref.py", "import switchboard.channels.registry")
    found = circles(import_graph(copy, "switchboard"))
    assert any(
        {"switchboard.channels.ref", "switchboard.channels.registry"} <= set(c) for c in found
    )


def test_an_import_back_up_between_packages_is_caught(tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    rules = copy / "lifecycle" / "rules" / "book.py"
    _add_type_checking_import(rules, "import switchboard.lifecycle.host")
    found = package_circles(import_graph(copy, "switchboard"))
    back_up = [c for p, c in found if p == "switchboard.lifecycle"]
    assert any(
        {"switchboard.lifecycle.host", "switchboard.lifecycle.rules"} <= set(c) for c in back_up
    )


def test_a_sixteenth_module_in_one_folder_is_caught(tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    folder = copy / "transport"
    for n in range(MAX_MODULES + 1 - len(list(folder.glob("[!_]*.py")))):
        (folder / f"extra{n}.py").write_text('"""An extra module."""\n', encoding="utf-8")
    assert folders_over(copy, MAX_MODULES) == {"switchboard/transport": MAX_MODULES + 1}


# -- one port -------------------------------------------------------------------------------

PORT_IMPLEMENTATION: Final = SOURCE / "agents" / "port" / "service.py"


def _only_forwards(method: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether ``method`` only returns what one call on a collaborator returns
    (``return self._x.y(...)``, awaited or not)."""
    body = method.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    if len(body) != 1 or not isinstance(body[0], ast.Return):
        return False
    value = body[0].value
    if isinstance(value, ast.Await):
        value = value.value
    if not isinstance(value, ast.Call) or not isinstance(value.func, ast.Attribute):
        return False
    owner = value.func.value
    return (
        isinstance(owner, ast.Attribute)
        and isinstance(owner.value, ast.Name)
        and (owner.value.id == "self")
    ) or (
        isinstance(owner, ast.Attribute)
        and isinstance(owner.value, ast.Attribute)
        and isinstance(owner.value.value, ast.Name)
        and owner.value.value.id == "self"
    )


def _methods(path: Path, cls: str) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    [found] = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls]
    return [n for n in found.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]


def _port_members() -> set[str]:
    tree = ast.parse((SOURCE / "agents" / "port" / "protocol.py").read_text(encoding="utf-8"))
    [port] = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "AgentPort"]
    return {n.name for n in port.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}


def test_no_method_of_the_port_only_forwards_to_a_collaborator() -> None:
    members = _port_members()
    forwards = [
        m.name
        for m in _methods(PORT_IMPLEMENTATION, "AgentService")
        if m.name in members and _only_forwards(m)
    ]
    assert forwards == []


def test_the_forwarding_check_catches_a_forward() -> None:
    method = ast.parse("async def f(self, x):\n    return await self._side.mail.deposit(x)\n")
    [node] = method.body
    assert isinstance(node, ast.AsyncFunctionDef)
    assert _only_forwards(node)


def test_the_port_is_implemented_once_by_the_agent_service() -> None:
    members = _port_members()
    implementing = []
    for path in SOURCE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and node.name != "AgentPort":
                names = {
                    n.name
                    for n in node.body
                    if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
                }
                if members <= names:
                    implementing.append(f"{path.relative_to(SOURCE)}:{node.name}")
    assert implementing == ["agents/port/service.py:AgentService"]


# -- history stays out of the code, and module docstrings stay short ------------------------------

SOURCES: Final = sorted(SOURCE.rglob("*.py"))
NAMES: Final = [str(p.relative_to(SOURCE)) for p in SOURCES]
MAX_DOCSTRING_LINES: Final = 15


@pytest.mark.parametrize("path", SOURCES, ids=NAMES)
def test_no_source_file_names_a_ticket(path: Path) -> None:
    assert re.findall(r"issue #[0-9]+", path.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("path", SOURCES, ids=NAMES)
def test_a_module_says_what_it_is_for_and_why_in_fifteen_lines_at_most(path: Path) -> None:
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")), clean=False)
    assert doc, "no module docstring"
    assert len(doc.strip().splitlines()) <= MAX_DOCSTRING_LINES


# -- the map names the whole house ------------------------------------------------------------

ARCHITECTURE: Final = ROOT / "docs" / "architecture.md"
PACKAGES: Final = sorted(
    ".".join(p.parent.relative_to(SOURCE.parent).parts)
    for p in SOURCE.rglob("__init__.py")
    if p.parent != SOURCE
)


@pytest.mark.parametrize("package", PACKAGES)
def test_every_package_is_named_in_the_architecture_doc(package: str) -> None:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    folder = package.removeprefix("switchboard.").replace(".", "/") + "/"
    assert package in text or folder in text, f"{package} ({folder}) is not in the map"
