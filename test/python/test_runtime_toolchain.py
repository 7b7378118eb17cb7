"""NVRTC facts memoized on disk: used when the libraries are unchanged, refreshed when they change."""

import json

import pytest

from tilemlir.runtime import nvrtc, toolchain


@pytest.fixture(autouse=True)
def fresh(tmp_path, monkeypatch):
    monkeypatch.setenv("TILEMLIR_CACHE_DIR", str(tmp_path / "cache"))
    toolchain.nvrtc_facts.cache_clear()
    yield tmp_path / "cache" / toolchain.MEMO_FILE
    toolchain.nvrtc_facts.cache_clear()


def test_first_query_asks_nvrtc_and_memoizes(fresh):
    version, archs = toolchain.nvrtc_facts()
    assert version == toolchain.query_version() and archs == toolchain.query_archs() and 90 in archs
    assert json.loads(fresh.read_text()) == {toolchain.fingerprint(): {"version": version, "archs": list(archs)}}


def test_memo_answers_without_loading_nvrtc(fresh, monkeypatch):
    fresh.parent.mkdir(parents=True)
    fresh.write_text(json.dumps({toolchain.fingerprint(): {"version": "42.1", "archs": [90]}}))

    def refuse():
        raise AssertionError("NVRTC was asked although the memo matches")

    monkeypatch.setattr(toolchain, "query_version", refuse)
    assert toolchain.nvrtc_facts() == ("42.1", (90,))
    assert nvrtc.nvrtc_version() == "42.1" and nvrtc.supported_archs() == (90,)


def test_a_new_nvrtc_library_changes_the_fingerprint(tmp_path, monkeypatch, fresh):
    before = toolchain.fingerprint()
    libdir = tmp_path / "lib"
    libdir.mkdir()
    (libdir / "libnvrtc.so.99").write_bytes(b"not really a library")
    monkeypatch.setenv("LD_LIBRARY_PATH", str(libdir))
    assert str(libdir / "libnvrtc.so.99") in toolchain.library_candidates()
    after = toolchain.fingerprint()
    assert after != before
    (libdir / "libnvrtc.so.99").write_bytes(b"an upgraded library, longer")
    assert toolchain.fingerprint() != after


def test_a_corrupt_memo_is_replaced(fresh):
    fresh.parent.mkdir(parents=True)
    fresh.write_text("{ not json")
    version, _ = toolchain.nvrtc_facts()
    assert json.loads(fresh.read_text())[toolchain.fingerprint()]["version"] == version
    assert [p.name for p in fresh.parent.iterdir()] == [toolchain.MEMO_FILE]


@pytest.mark.parametrize("entry", ["a string", {"version": 12, "archs": [90]}, {"version": "12.8"},
                                   {"version": "12.8", "archs": "90"}, {"version": "12.8", "archs": [90.0]}])
def test_a_memo_entry_of_the_wrong_shape_is_asked_again(fresh, entry):
    fresh.parent.mkdir(parents=True)
    fresh.write_text(json.dumps({toolchain.fingerprint(): entry}))
    assert toolchain.nvrtc_facts() == (toolchain.query_version(), toolchain.query_archs())
    assert json.loads(fresh.read_text())[toolchain.fingerprint()]["version"] == toolchain.query_version()


def test_a_memo_in_a_cache_others_may_write_is_not_used(fresh, monkeypatch):
    fresh.parent.mkdir(parents=True)
    fresh.write_text(json.dumps({toolchain.fingerprint(): {"version": "42.1", "archs": [90]}}))
    fresh.parent.chmod(0o777)
    assert toolchain.nvrtc_facts()[0] == toolchain.query_version() != "42.1"
