"""Every TILEMLIR_* knob is typed in tilemlir/config.py and listed in the README."""

import re
from pathlib import Path

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
