"""Disk cache: keys, store/lookup, atomic entries, and `build` going through it."""

import hashlib
import json
import logging
import os
import re
import shutil

import pytest

from tilemlir.diagnostics import CompileError
from tilemlir.runtime import cache
from tilemlir.runtime import builder as builder_module
from tilemlir.runtime.artifact import Artifact
from tilemlir.runtime.builder import build, cached, load
from tilemlir.runtime.kernel import override_file_name
from tilemlir.runtime.nvrtc import CompileOptions, compile_cuda
from tilemlir.runtime.signature import KernelSignature
from support import AXPY_SIGNATURE, AXPY_SOURCE

@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TILEMLIR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TILEMLIR_DISABLE_CACHE", raising=False)
    monkeypatch.delenv("TILEMLIR_CUDA_OVERRIDE", raising=False)
    monkeypatch.delenv("TILEMLIR_DUMP_DIR", raising=False)
    return tmp_path / "cache"


def test_key_changes_with_every_input(monkeypatch):
    options = CompileOptions(arch="sm_90a")
    base = cache.make_key(AXPY_SOURCE, options, extra="sig")
    assert base == cache.make_key(AXPY_SOURCE, CompileOptions(arch="sm_90a"), extra="sig")
    variants = {
        cache.make_key(AXPY_SOURCE + " ", options, extra="sig"),
        cache.make_key(AXPY_SOURCE, options, extra="sig2"),
        cache.make_key(AXPY_SOURCE, CompileOptions(arch="sm_80"), extra="sig"),
        cache.make_key(AXPY_SOURCE, CompileOptions(arch="sm_90a", fmad=False), extra="sig"),
        cache.make_key(AXPY_SOURCE, CompileOptions(arch="sm_90a", fast_math=True), extra="sig"),
        cache.make_key(AXPY_SOURCE, CompileOptions(arch="sm_90a", lineinfo=False), extra="sig"),
    }
    with monkeypatch.context() as patch:
        patch.setattr(cache, "nvrtc_version", lambda: "99.9")
        variants.add(cache.make_key(AXPY_SOURCE, options, extra="sig"))
    with monkeypatch.context() as patch:
        patch.setattr(cache, "tilemlir_version", lambda: "9.9.9")
        variants.add(cache.make_key(AXPY_SOURCE, options, extra="sig"))
    assert base not in variants and len(variants) == 8


@pytest.fixture(scope="module")
def cubin():
    return compile_cuda(AXPY_SOURCE, "axpy", CompileOptions())


def test_store_then_lookup_round_trips_the_artifact(private_cache, cubin):
    key = cache.make_key(AXPY_SOURCE, CompileOptions(), "x")
    assert cache.lookup(key) is None
    entry = cache.store(key, AXPY_SOURCE, cubin, AXPY_SIGNATURE, CompileOptions(arch="sm_90a", fmad=False))
    assert entry == private_cache / "v2" / key[:2] / key
    assert sorted(p.name for p in entry.iterdir()) == ["axpy.cu", "axpy.cubin", "axpy_host.cu", "build.json",
                                                        "manifest.json", "signature.json"]
    manifest = json.loads((entry / "manifest.json").read_text())
    assert manifest["key"] == key and manifest["files"]["axpy.cubin"] == hashlib.sha256(cubin).hexdigest()
    assert cache.lookup(key) == Artifact(AXPY_SIGNATURE, AXPY_SOURCE, cubin, CompileOptions(arch="sm_90a", fmad=False))
    for kernel in (cached(key), load(entry)):
        assert kernel.signature == AXPY_SIGNATURE and kernel.cubin == cubin and kernel.cuda_source() == AXPY_SOURCE
        assert kernel.options == CompileOptions(arch="sm_90a", fmad=False)


def test_entries_appear_whole_or_not_at_all(monkeypatch, private_cache, cubin, caplog):
    key = cache.make_key(AXPY_SOURCE, CompileOptions(), "atomic")

    def fail_midway(directory, key, files):
        (directory / "axpy.cu").write_text(AXPY_SOURCE)
        raise OSError("disk full")

    monkeypatch.setattr(cache, "_write_entry", fail_midway)
    with caplog.at_level(logging.WARNING, logger="tilemlir.runtime"):
        assert cache.store(key, AXPY_SOURCE, cubin, AXPY_SIGNATURE, CompileOptions()) is None
    assert any("could not store the cache entry" in r.message and "disk full" in r.message for r in caplog.records)
    assert cache.lookup(key) is None
    assert os.listdir(private_cache / "v2" / key[:2]) == []  # no staging directory left behind


def test_a_concurrent_writer_wins_and_nothing_is_left_over(private_cache, cubin):
    key = cache.make_key(AXPY_SOURCE, CompileOptions(), "race")
    first = cache.store(key, AXPY_SOURCE, cubin, AXPY_SIGNATURE, CompileOptions())
    second = cache.store(key, AXPY_SOURCE, cubin + b"\0" * 8, AXPY_SIGNATURE, CompileOptions())
    assert first == second
    assert cache.lookup(key).cubin == cubin
    assert os.listdir(first.parent) == [key]


def test_a_damaged_entry_is_replaced_by_the_next_store(private_cache, cubin):
    key = cache.make_key(AXPY_SOURCE, CompileOptions(), "replace")
    entry = cache.store(key, AXPY_SOURCE, cubin, AXPY_SIGNATURE, CompileOptions())
    (entry / "axpy.cubin").write_bytes(cubin[:100])
    assert cache.store(key, AXPY_SOURCE, cubin, AXPY_SIGNATURE, CompileOptions()) == entry
    assert cache.lookup(key).cubin == cubin
    assert os.listdir(entry.parent) == [key]


@pytest.mark.parametrize("manifest", [None, b"", b"\xff", b"[1, 2]", b'{"version": 1, "key": "another", "files": {}}',
                                      b'{"version": 1, "key": "KEY", "files": {"../../x": "0"}}'])
def test_an_entry_without_a_manifest_of_its_key_is_discarded(private_cache, cubin, manifest, caplog):
    key = cache.make_key(AXPY_SOURCE, CompileOptions(), "partial")
    entry = cache.store(key, AXPY_SOURCE, cubin, AXPY_SIGNATURE, CompileOptions())
    if manifest is None:
        (entry / "manifest.json").unlink()
    else:
        (entry / "manifest.json").write_bytes(manifest.replace(b"KEY", key.encode()))
    with caplog.at_level(logging.WARNING, logger="tilemlir.runtime"):
        assert cache.lookup(key) is None
    assert any("discarding the damaged cache entry" in r.message and "manifest.json" in r.message
               for r in caplog.records)
    assert not entry.exists() and os.listdir(entry.parent) == []


def test_build_compiles_once_then_hits_the_cache(monkeypatch, caplog):
    caplog.set_level(logging.DEBUG, logger="tilemlir.runtime")
    cold = build(AXPY_SOURCE, AXPY_SIGNATURE, arch="sm_90a")
    assert cold.cubin[:4] == b"\x7fELF" and cold.arch == "sm_90a"
    assert any("cold compile of axpy" in r.message for r in caplog.records)

    def no_compile(*args, **kwargs):
        raise AssertionError("compiled although the cache holds the kernel")

    monkeypatch.setattr(builder_module, "compile_cuda", no_compile)
    warm = build(AXPY_SOURCE, AXPY_SIGNATURE, arch="sm_90a")
    assert warm.cubin == cold.cubin and warm.signature == AXPY_SIGNATURE
    assert any("cache hit for axpy" in r.message for r in caplog.records)
    with pytest.raises(AssertionError, match="compiled although"):
        build(AXPY_SOURCE, AXPY_SIGNATURE, arch="sm_90a", use_cache=False)
    monkeypatch.setenv("TILEMLIR_DISABLE_CACHE", "1")
    with pytest.raises(AssertionError, match="compiled although"):
        build(AXPY_SOURCE, AXPY_SIGNATURE, arch="sm_90a")
    monkeypatch.delenv("TILEMLIR_DISABLE_CACHE")
    with pytest.raises(AssertionError, match="compiled although"):
        build(AXPY_SOURCE, AXPY_SIGNATURE, arch="sm_90a", fmad=False)


OVERRIDE_NAME = re.compile(r"^axpy-[0-9a-f]{12}\.cu$")


@pytest.fixture
def override(tmp_path, monkeypatch):
    directory = tmp_path / "override"
    directory.mkdir()
    monkeypatch.setenv("TILEMLIR_CUDA_OVERRIDE", str(directory))
    return directory


def test_cuda_override_directory_replaces_the_generated_source(override, caplog):
    name = override_file_name(AXPY_SOURCE, AXPY_SIGNATURE)
    assert OVERRIDE_NAME.match(name) and build(AXPY_SOURCE, AXPY_SIGNATURE, arch="sm_90a").override_file == name
    edited = AXPY_SOURCE.replace("a * x[i] + y[i]", "y[i] + a * x[i]")
    (override / name).write_text(edited)
    with caplog.at_level(logging.WARNING, logger="tilemlir.runtime"):
        kernel = build(AXPY_SOURCE, AXPY_SIGNATURE, arch="sm_90a")
    assert kernel.cuda_source() == edited and kernel.override_file == name
    assert any(f"compiling {override / name} instead of the generated source of axpy" in r.message
               for r in caplog.records)
    other = AXPY_SIGNATURE.__class__.from_dict(dict(AXPY_SIGNATURE.to_dict(), name="axpy2"))
    assert build(AXPY_SOURCE.replace("axpy(", "axpy2("), other, arch="sm_90a").cuda_source().count("axpy2(") == 1


def test_an_override_of_one_kernel_is_not_compiled_into_another_of_the_same_name(override, caplog):
    (override / override_file_name(AXPY_SOURCE, AXPY_SIGNATURE)).write_text(AXPY_SOURCE.replace("a * x[i] + y[i]", "0.0f"))
    subtract = AXPY_SOURCE.replace("a * x[i] + y[i]", "a * x[i] - y[i]")
    with caplog.at_level(logging.WARNING, logger="tilemlir.runtime"):
        other = build(subtract, AXPY_SIGNATURE, arch="sm_90a")
    assert other.cuda_source() == subtract and other.override_file != override_file_name(AXPY_SOURCE, AXPY_SIGNATURE)
    assert any(f"{override} has {override_file_name(AXPY_SOURCE, AXPY_SIGNATURE)} but not {other.override_file}" in r.message
               for r in caplog.records)


def test_an_override_file_by_the_bare_kernel_name_is_not_used_and_the_warning_names_the_file(override, caplog):
    (override / "axpy.cu").write_text(AXPY_SOURCE.replace("a * x[i] + y[i]", "0.0f"))
    with caplog.at_level(logging.WARNING, logger="tilemlir.runtime"):
        kernel = build(AXPY_SOURCE, AXPY_SIGNATURE, arch="sm_90a")
    assert kernel.cuda_source() == AXPY_SOURCE
    assert any(f"has axpy.cu but not {kernel.override_file}" in r.message for r in caplog.records)


def test_an_override_whose_parameters_differ_is_an_error_naming_the_file(override):
    path = override / override_file_name(AXPY_SOURCE, AXPY_SIGNATURE)
    path.write_text(AXPY_SOURCE.replace("float a, long long N", "double a, long long N"))
    with pytest.raises(CompileError, match=f"the TILEMLIR_CUDA_OVERRIDE file {re.escape(str(path))}: the parameters "
                                           r"of extern \"C\" __global__ axpy do not match .*parameter 3 is the float32 "
                                           r"scalar a \(`float a`\), declared `double a`"):
        build(AXPY_SOURCE, AXPY_SIGNATURE, arch="sm_90a")
    path.write_bytes(b"\xff\xfe")
    with pytest.raises(CompileError, match=f"the TILEMLIR_CUDA_OVERRIDE file {re.escape(str(path))} is not UTF-8"):
        build(AXPY_SOURCE, AXPY_SIGNATURE, arch="sm_90a")


def test_dump_dir_receives_the_compiled_source_under_the_override_name(tmp_path, monkeypatch):
    monkeypatch.setenv("TILEMLIR_DUMP_DIR", str(tmp_path / "dump"))
    kernel = build(AXPY_SOURCE, AXPY_SIGNATURE, arch="sm_90a")
    assert OVERRIDE_NAME.match(kernel.override_file)
    assert (tmp_path / "dump" / kernel.override_file).read_text() == AXPY_SOURCE


def test_with_cuda_source_keeps_signature_and_options():
    kernel = build(AXPY_SOURCE, AXPY_SIGNATURE, arch="sm_90a", fmad=False)
    edited = AXPY_SOURCE.replace("if (i < N)", "if (i < N && a != 0.0f)")
    tuned = kernel.with_cuda_source(edited)
    assert tuned.cuda_source() == edited and tuned.signature == AXPY_SIGNATURE
    assert tuned.options == kernel.options and tuned.cubin != kernel.cubin
    assert tuned.override_file == kernel.override_file == override_file_name(AXPY_SOURCE, AXPY_SIGNATURE)


def _entry_of(source, signature, options):
    return cache.entry_dir(cache.make_key(source, options, extra=signature.to_json()))


def _truncate(path):
    path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])


def _another_shape(path):
    path.write_text(KernelSignature.from_dict(dict(AXPY_SIGNATURE.to_dict(), params=[
        dict(p, shape=["N", 2]) if p["kind"] == "tensor" else p for p in AXPY_SIGNATURE.to_dict()["params"]])).to_json())


CORRUPTIONS = {
    "truncated cubin": ("axpy.cubin", _truncate),
    "garbage cubin": ("axpy.cubin", lambda p: p.write_bytes(os.urandom(len(p.read_bytes())))),
    "missing cubin": ("axpy.cubin", lambda p: p.unlink()),
    "non-UTF-8 signature": ("signature.json", lambda p: p.write_bytes(b'{"name": "\xff\xfe"}')),
    "signature of another shape": ("signature.json", _another_shape),
    "truncated signature": ("signature.json", _truncate),
    "garbage build.json": ("build.json", lambda p: p.write_bytes(b"\x00\x01[")),
    "edited source": ("axpy.cu", lambda p: p.write_text(p.read_text().replace("a * x[i]", "x[i]"))),
}


@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
def test_a_damaged_entry_is_discarded_and_the_kernel_compiled_again(corruption, monkeypatch, caplog):
    cold = build(AXPY_SOURCE, AXPY_SIGNATURE, arch="sm_90a")
    name, damage = CORRUPTIONS[corruption]
    damage(_entry_of(AXPY_SOURCE, AXPY_SIGNATURE, cold.options) / name)
    compiles = []
    real_compile = builder_module.compile_cuda
    monkeypatch.setattr(builder_module, "compile_cuda", lambda *a: compiles.append(a) or real_compile(*a))
    with caplog.at_level(logging.WARNING, logger="tilemlir.runtime"):
        again = build(AXPY_SOURCE, AXPY_SIGNATURE, arch="sm_90a")
    assert len(compiles) == 1
    assert again.cubin == cold.cubin and again.signature == AXPY_SIGNATURE and again.cuda_source() == AXPY_SOURCE
    assert any("damaged cache entry" in r.message for r in caplog.records)
    warm = build(AXPY_SOURCE, AXPY_SIGNATURE, arch="sm_90a")  # the entry stored again is whole
    assert len(compiles) == 1 and warm.cubin == cold.cubin


def test_a_whole_entry_of_another_kernel_under_the_key_is_discarded(monkeypatch, caplog):
    cold = build(AXPY_SOURCE, AXPY_SIGNATURE, arch="sm_90a")
    key = cache.make_key(AXPY_SOURCE, cold.options, extra=AXPY_SIGNATURE.to_json())
    other = KernelSignature.from_dict(dict(AXPY_SIGNATURE.to_dict(), block=[64, 1, 1]))
    shutil.rmtree(cache.entry_dir(key))
    cache.store(key, AXPY_SOURCE, cold.cubin, other, cold.options)  # a manifest that matches, of the wrong kernel
    with caplog.at_level(logging.WARNING, logger="tilemlir.runtime"):
        again = build(AXPY_SOURCE, AXPY_SIGNATURE, arch="sm_90a")
    assert again.signature == AXPY_SIGNATURE and again.signature.block == (128, 1, 1)
    assert any("another signature than the kernel's" in r.message for r in caplog.records)
    assert cache.lookup(key).signature == AXPY_SIGNATURE


def test_with_cuda_source_refuses_a_source_whose_parameters_differ():
    kernel = build(AXPY_SOURCE, AXPY_SIGNATURE, arch="sm_90a")
    edited = AXPY_SOURCE.replace("float a, long long N", "long long N")
    with pytest.raises(CompileError, match=r"the source given to with_cuda_source: the parameters of extern \"C\" "
                                           r"__global__ axpy do not match .* it declares 3 parameters, the "
                                           r"signature has 4"):
        kernel.with_cuda_source(edited.replace("a * x[i]", "2.0f * x[i]"))
    with pytest.raises(CompileError, match="the source given to with_cuda_source declares no extern"):
        kernel.with_cuda_source(AXPY_SOURCE.replace("axpy(", "axpy_tuned("))


def _race(barrier, keys, cubin, failures):
    """One of several processes storing, then reading, the same entries at the same moment."""
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logging.getLogger("tilemlir.runtime").addHandler(handler)
    for key in keys:
        barrier.wait()
        stored = cache.store(key, AXPY_SOURCE, cubin, AXPY_SIGNATURE, CompileOptions())
        kernel = cache.lookup(key)
        if stored != cache.entry_dir(key) or kernel is None or kernel.cubin != cubin:
            failures.put(f"{key[:8]}: stored {stored}, read {kernel}")
    for record in records:
        if record.levelno >= logging.WARNING:
            failures.put(record.getMessage())


def test_processes_storing_one_entry_at_once_leave_it_whole(private_cache, cubin):
    import multiprocessing

    context = multiprocessing.get_context("fork")
    keys = [cache.make_key(AXPY_SOURCE, CompileOptions(), f"race {n}") for n in range(20)]
    barrier, failures = context.Barrier(4), context.Queue()
    racers = [context.Process(target=_race, args=(barrier, keys, cubin, failures)) for _ in range(4)]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join(timeout=120)
    assert [racer.exitcode for racer in racers] == [0] * 4
    messages = []
    while not failures.empty():
        messages.append(failures.get())
    assert messages == []
    for key in keys:
        assert cache.lookup(key).cubin == cubin
    assert sorted(p.name for p in cache.root().glob("*/*")) == sorted(keys)  # no staging directory left behind
