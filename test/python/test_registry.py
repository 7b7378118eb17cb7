import subprocess
import sys

import pytest

from tilemlir.pass_infra import registry
from tilemlir.pass_infra.registry import PASS_MODULES, is_pass, load_passes, lookup, register_pass


def test_every_mapped_module_registers_its_pass_and_nothing_else():
    passes = load_passes()
    assert set(passes) == set(PASS_MODULES)
    for name, info in passes.items():
        assert info.name == name
        assert info.run.__module__ == PASS_MODULES[name]


def test_lookup_imports_only_that_pass_module():
    code = (
        "import sys\n"
        "from tilemlir.pass_infra.registry import lookup\n"
        "info = lookup('insert-guards')\n"
        "print(info.name, info.run.__module__)\n"
        "print(sorted(m for m in sys.modules if m.startswith('tilemlir.passes.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["insert-guards tilemlir.passes.insert_guards", "['tilemlir.passes.insert_guards']"]


def test_upstream_and_unknown_names_are_not_ours_and_import_nothing():
    assert lookup("canonicalize") is None
    assert lookup("no-such-pass") is None
    assert not is_pass("cse")
    assert is_pass("vectorize")


def test_a_pass_registered_outside_its_mapped_module_is_refused(monkeypatch):
    def run(module, options):
        pass

    run.__module__ = "tilemlir.passes.elsewhere"
    with pytest.raises(RuntimeError, match="pass 'vectorize' is defined in tilemlir.passes.elsewhere, but "
                                           "PASS_MODULES maps it to tilemlir.passes.vectorize"):
        register_pass("vectorize", "a second vectorize")(run)
    with pytest.raises(RuntimeError, match="pass 'unmapped' is defined in tilemlir.passes.elsewhere, but "
                                           "PASS_MODULES maps it to nothing"):
        register_pass("unmapped", "not in the map")(run)
    assert "unmapped" not in registry.REGISTRY


def test_a_mapped_module_that_registers_nothing_is_an_internal_error(monkeypatch):
    monkeypatch.setitem(PASS_MODULES, "phantom", "tilemlir.passes.testing")
    with pytest.raises(RuntimeError, match="tilemlir.passes.testing does not register pass 'phantom'"):
        lookup("phantom")
