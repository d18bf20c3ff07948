"""python/slocore/_core.pyi lists exactly what the extension has (regenerate with
scripts/gen_stubs.sh after changing bindings)."""

import ast
import inspect
from pathlib import Path

import slocore
from slocore import _core

STUB = Path(slocore.__file__).with_name("_core.pyi")


def stub_names():
    tree = ast.parse(STUB.read_text())
    top, members = set(), {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            top.add(node.name)
        if isinstance(node, ast.ClassDef):
            names = set()
            for sub in node.body:
                if isinstance(sub, ast.FunctionDef):
                    names.add(sub.name)
                elif isinstance(sub, ast.AnnAssign) and isinstance(sub.target, ast.Name):
                    names.add(sub.target.id)
            members[node.name] = names
    return top, members


def public(names):
    return {n for n in names if not n.startswith("_")}


def test_stub_lists_every_public_name_of_the_module():
    top, members = stub_names()
    module = public(n for n in dir(_core))
    assert module == public(top), f"stub drift: run scripts/gen_stubs.sh ({module ^ public(top)})"
    for name in module:
        obj = getattr(_core, name)
        if inspect.isclass(obj):
            have = public(n for n in vars(obj))
            assert have <= members[name] | {"name", "value"}, f"{name}: {have - members[name]} missing in stub"


def test_package_ships_stub_and_marker():
    assert STUB.is_file() and STUB.with_name("py.typed").is_file()
