"""The native launcher in the cache: loaded only when this installation built it (its SHA-256 recorded
outside the cache) and the cache is private; otherwise rebuilt, or built privately for the process.

Each case runs a new process: a process cannot import a replaced extension module a second time."""

import hashlib
import json
import os
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

from tilemlir.runtime import native

PLANTED = r'''
#include <Python.h>
static struct PyModuleDef planted = {PyModuleDef_HEAD_INIT, "_tilemlir_launch", NULL, -1, NULL};
PyMODINIT_FUNC PyInit__tilemlir_launch(void) {
  FILE* marker = fopen(getenv("PLANTED_MARKER"), "w");  /* what an attacker's code could do */
  if (marker) fclose(marker);
  PyObject* module = PyModule_Create(&planted);
  PyModule_AddIntConstant(module, "PLANTED", 1);
  return module;
}
'''
PROBE = textwrap.dedent('''
    from tilemlir.runtime import native
    module = native.load()
    print(getattr(module, "PLANTED", 0), hasattr(module, "CallPlan"))
''')


@pytest.fixture
def env(tmp_path):
    if native.shutil.which("cc") is None and native.shutil.which("gcc") is None:
        pytest.skip("no C compiler here")
    return {**os.environ, "TILEMLIR_CACHE_DIR": str(tmp_path / "cache"), "XDG_STATE_HOME": str(tmp_path / "state"),
            "PLANTED_MARKER": str(tmp_path / "planted-ran")}


def _load(env) -> tuple[list[str], str]:
    result = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout.split(), result.stderr


def _plant(tmp_path) -> Path:
    (library,) = (tmp_path / "cache" / "native").rglob("*.so")
    assert native._compile(library, sysconfig.get_paths()["include"], PLANTED) is None
    return library


def test_the_launcher_built_here_loads_again_without_a_rebuild(tmp_path, env):
    assert _load(env) == (["0", "True"], "")
    (library,) = (tmp_path / "cache" / "native").rglob("*.so")
    (record,) = (tmp_path / "state" / "tilemlir" / "native").glob("*.json")
    assert json.loads(record.read_text())["library"] == str(library)
    stamp = library.stat().st_mtime_ns
    assert _load(env) == (["0", "True"], "")
    assert library.stat().st_mtime_ns == stamp


def test_a_library_planted_in_the_cache_is_not_loaded(tmp_path, env):
    _load(env)
    library = _plant(tmp_path)
    loaded, log = _load(env)
    assert loaded == ["0", "True"] and not (tmp_path / "planted-ran").exists()
    assert f"the native launcher {library} is not the one built here" in log
    assert _load(env) == (["0", "True"], "")  # rebuilt and recorded again


def test_a_launcher_without_a_record_here_is_rebuilt(tmp_path, env):
    _load(env)
    _plant(tmp_path)
    loaded, _ = _load({**env, "XDG_STATE_HOME": str(tmp_path / "fresh-state")})  # a cache restored from elsewhere
    assert loaded == ["0", "True"] and not (tmp_path / "planted-ran").exists()


def test_a_cache_others_may_write_is_not_used_and_the_launcher_built_privately(tmp_path, env):
    _load(env)
    library = _plant(tmp_path)
    (tmp_path / "cache").chmod(0o777)
    loaded, log = _load(env)
    assert loaded == ["0", "True"] and not (tmp_path / "planted-ran").exists()
    assert f"every user may write {tmp_path / 'cache'} (mode 777)" in log
    assert "building the native launcher in a private temporary directory" in log
    assert b"PLANTED" in library.read_bytes()  # the cache was left alone


def test_builds_of_one_source_are_byte_identical_so_concurrent_builds_agree(tmp_path, env):
    include = sysconfig.get_paths()["include"]
    libraries = [tmp_path / name / "launch.so" for name in ("one", "two/deeper")]
    for library in libraries:
        assert native._compile(library, include) is None
    assert libraries[0].read_bytes() == libraries[1].read_bytes()
    racers = [subprocess.Popen([sys.executable, "-c", PROBE], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True) for _ in range(3)]
    assert [racer.communicate(timeout=300) for racer in racers] == [("0 True\n", "")] * 3
    assert _load(env) == (["0", "True"], "")


def test_a_state_dir_others_may_write_is_not_trusted(tmp_path, env):
    _load(env)
    library = _plant(tmp_path)
    (record,) = (tmp_path / "state" / "tilemlir" / "native").glob("*.json")
    record.write_text(json.dumps({"library": str(library), "sha256": hashlib.sha256(library.read_bytes()).hexdigest()}))
    (tmp_path / "state").chmod(0o777)  # whoever planted the library could forge its record too
    loaded, log = _load(env)
    assert loaded == ["0", "True"] and not (tmp_path / "planted-ran").exists()
    assert "the native launcher cannot be checked against a record" in log
