"""Every TILEMLIR_* knob is typed in tilemlir/config.py and listed in the README."""

import re
from pathlib import Path

import pytest

from tilemlir import config
from tilemlir.diagnostics import ConfigError

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_lists_exactly_the_knobs_config_defines():
    listed = set(re.findall(r"^\| `(TILEMLIR_[A-Z_]+)` \|", README.read_text(), flags=re.M))
    assert listed == {knob.name for knob in config.KNOBS}


def test_settings_read_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("TILEMLIR_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TILEMLIR_DISABLE_CACHE", "yes")
    monkeypatch.setenv("TILEMLIR_PROVER_RLIMIT", "70_000")
    monkeypatch.delenv("TILEMLIR_DUMP_DIR", raising=False)
    settings = config.settings()
    assert (settings.cache_dir, settings.disable_cache, settings.prover_rlimit, settings.dump_dir) == (
        tmp_path, True, 70_000, None)


def test_the_prover_budget_defaults_and_must_be_a_positive_integer(monkeypatch):
    monkeypatch.delenv("TILEMLIR_PROVER_RLIMIT", raising=False)
    assert config.settings().prover_rlimit == config.DEFAULT_PROVER_RLIMIT
    for bad in ("0", "-5", "fifty", "1.5", str(2**32)):
        monkeypatch.setenv("TILEMLIR_PROVER_RLIMIT", bad)
        settings = config.settings()  # the other knobs stay readable (error handlers read TILEMLIR_TRACEBACK)
        assert settings.traceback is False
        with pytest.raises(ConfigError, match=rf"TILEMLIR_PROVER_RLIMIT must be an integer from 1 to 4294967295, got '{re.escape(bad)}'"):
            settings.prover_rlimit


def test_the_retired_timeout_knob_says_what_replaced_it(monkeypatch):
    monkeypatch.setenv("TILEMLIR_PROVER_TIMEOUT_MS", "50")
    with pytest.warns(UserWarning, match="TILEMLIR_PROVER_TIMEOUT_MS is no longer read: the prover's budget is TILEMLIR_PROVER_RLIMIT"):
        config.settings()


def test_autotune_and_compile_worker_knobs(monkeypatch):
    monkeypatch.delenv("TILEMLIR_AUTOTUNE", raising=False)
    monkeypatch.delenv("TILEMLIR_COMPILE_WORKERS", raising=False)
    assert (config.settings().autotune, config.settings().compile_workers) == ("on", None)
    monkeypatch.setenv("TILEMLIR_AUTOTUNE", " Force")
    monkeypatch.setenv("TILEMLIR_COMPILE_WORKERS", "3")
    assert (config.settings().autotune, config.settings().compile_workers) == ("force", 3)
    monkeypatch.setenv("TILEMLIR_AUTOTUNE", "maybe")
    monkeypatch.setenv("TILEMLIR_COMPILE_WORKERS", "0")
    settings = config.settings()  # the other knobs stay readable (error handlers read TILEMLIR_TRACEBACK)
    assert settings.traceback is False
    with pytest.raises(ConfigError, match="TILEMLIR_AUTOTUNE must be one of on, off, force, got 'maybe'"):
        settings.autotune
    with pytest.raises(ConfigError, match="TILEMLIR_COMPILE_WORKERS must be an integer from 1 to 65536, got '0'"):
        settings.compile_workers


@pytest.mark.parametrize("text, level", [(None, None), ("", None), ("0", None), ("off", None), ("1", "tile"),
                                         (" TRUE", "tile"), ("tile", "tile"), ("Thread", "thread")])
def test_the_interpret_knob_names_the_cpu_level_or_is_off(monkeypatch, text, level):
    if text is None:
        monkeypatch.delenv("TILEMLIR_INTERPRET", raising=False)
    else:
        monkeypatch.setenv("TILEMLIR_INTERPRET", text)
    assert config.settings().interpret == level


def test_a_bad_interpret_value_is_a_config_error(monkeypatch):
    monkeypatch.setenv("TILEMLIR_INTERPRET", "cuda")
    settings = config.settings()  # the other knobs stay readable (error handlers read TILEMLIR_TRACEBACK)
    assert settings.traceback is False
    with pytest.raises(ConfigError, match="TILEMLIR_INTERPRET must be 1 \\(or tile\\), thread, or 0, got 'cuda'"):
        settings.interpret
