"""Every TILEMLIR_* knob is typed in tilemlir/config.py and listed in the README."""

import re
from pathlib import Path

import pytest

from tilemlir import config

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_lists_exactly_the_knobs_config_defines():
    listed = set(re.findall(r"^\| `(TILEMLIR_[A-Z_]+)` \|", README.read_text(), flags=re.M))
    assert listed == {knob.name for knob in config.KNOBS}


def test_settings_read_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("TILEMLIR_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TILEMLIR_DISABLE_CACHE", "yes")
    monkeypatch.setenv("TILEMLIR_PROVER_TIMEOUT_MS", "7")
    monkeypatch.delenv("TILEMLIR_DUMP_DIR", raising=False)
    settings = config.settings()
    assert (settings.cache_dir, settings.disable_cache, settings.prover_timeout_ms, settings.dump_dir) == (
        tmp_path, True, 7, None)


def test_autotune_and_compile_worker_knobs(monkeypatch):
    monkeypatch.delenv("TILEMLIR_AUTOTUNE", raising=False)
    monkeypatch.delenv("TILEMLIR_COMPILE_WORKERS", raising=False)
    assert (config.settings().autotune, config.settings().compile_workers) == ("on", None)
    monkeypatch.setenv("TILEMLIR_AUTOTUNE", " Force")
    monkeypatch.setenv("TILEMLIR_COMPILE_WORKERS", "3")
    assert (config.settings().autotune, config.settings().compile_workers) == ("force", 3)
    monkeypatch.setenv("TILEMLIR_AUTOTUNE", "maybe")
    with pytest.raises(ValueError, match="TILEMLIR_AUTOTUNE must be one of on, off, force, got 'maybe'"):
        config.settings()
    monkeypatch.setenv("TILEMLIR_AUTOTUNE", "off")
    monkeypatch.setenv("TILEMLIR_COMPILE_WORKERS", "0")
    with pytest.raises(ValueError, match="TILEMLIR_COMPILE_WORKERS must be a positive integer, got '0'"):
        config.settings()
