"""docs/api.md's generated part is what `tilemlir.tools.api_reference` renders from the code now, and the
generator refuses a public name it has not placed (so a new or removed name fails here, naming it)."""

import re

import pytest

import tilemlir.language as T
from tilemlir.tools import api_reference


def test_docs_api_md_is_up_to_date():
    text = api_reference.API_MD.read_text()
    _, body, _ = api_reference.split(text)
    assert body == api_reference.render(), (
        "docs/api.md is stale: run `python -m tilemlir.tools.api_reference --write` and review the diff")


@pytest.mark.parametrize("module_name", list(api_reference.GROUPS))
def test_every_public_name_has_one_entry(module_name):
    _, body, _ = api_reference.split(api_reference.API_MD.read_text())
    section = body.split(f"## `{module_name}`\n", 1)[1].split("\n## ", 1)[0]
    prefix = re.escape(api_reference.PREFIX[module_name])
    shown = re.findall(rf"^- `{prefix}(\w+)", section, flags=re.MULTILINE)
    public = api_reference.public_names(api_reference.MODULES[module_name])
    assert sorted(shown) == sorted(public)


def test_a_public_name_without_a_group_is_named(monkeypatch):
    monkeypatch.setattr(T, "__all__", [*T.__all__, "newly_public"])
    with pytest.raises(api_reference.ApiReferenceError, match="in no group of .*GROUPS: newly_public"):
        api_reference.render()


def test_a_group_naming_a_removed_name_is_named(monkeypatch):
    monkeypatch.setattr(T, "__all__", [n for n in T.__all__ if n != "gemm"])
    with pytest.raises(api_reference.ApiReferenceError, match="does not make public: gemm"):
        api_reference.render()


def test_check_mode_reports_a_stale_file(tmp_path, capsys):
    stale = tmp_path / "api.md"
    stale.write_text(api_reference.API_MD.read_text().replace("- `T.gemm(", "- `T.gemm_old("))
    assert api_reference.main(["--check", "--file", str(stale)]) == 1
    assert "is stale" in capsys.readouterr().err
    assert api_reference.main(["--write", "--file", str(stale)]) == 0
    assert stale.read_text() == api_reference.API_MD.read_text()
