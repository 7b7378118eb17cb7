"""Disk cache: keys, store/lookup, atomic entries, and `build` going through it."""

import logging
import os

import pytest

from tilemlir.runtime import cache
from tilemlir.runtime import builder as builder_module
from tilemlir.runtime.artifact import load
from tilemlir.runtime.builder import build
from tilemlir.runtime.nvrtc import CompileOptions
from tilemlir.runtime.signature import KernelSignature, ScalarParam, TensorParam

SOURCE = r'''extern "C" __global__ void __launch_bounds__(128) axpy(const float* __restrict__ x, float* __restrict__ y,
                                                     float a, long long N) {
  long long i = (long long)blockIdx.x * 128 + threadIdx.x;
  if (i < N) y[i] = a * x[i] + y[i];
}
'''
SIGNATURE = KernelSignature(
    name="axpy",
    params=(TensorParam("x", "float32", ("N",)), TensorParam("y", "float32", ("N",)), ScalarParam("a", "float32")),
    symbols=("N",), grid=("(N + 127) // 128", "1", "1"), block=(128, 1, 1), cuda_params=("x", "y", "a", "N"))


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TILEMLIR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TILEMLIR_DISABLE_CACHE", raising=False)
    monkeypatch.delenv("TILEMLIR_CUDA_OVERRIDE", raising=False)
    monkeypatch.delenv("TILEMLIR_DUMP_DIR", raising=False)
    return tmp_path / "cache"


def test_key_changes_with_every_input(monkeypatch):
    options = CompileOptions(arch="sm_90a")
    base = cache.make_key(SOURCE, options, extra="sig")
    assert base == cache.make_key(SOURCE, CompileOptions(arch="sm_90a"), extra="sig")
    variants = {
        cache.make_key(SOURCE + " ", options, extra="sig"),
        cache.make_key(SOURCE, options, extra="sig2"),
        cache.make_key(SOURCE, CompileOptions(arch="sm_80"), extra="sig"),
        cache.make_key(SOURCE, CompileOptions(arch="sm_90a", fmad=False), extra="sig"),
        cache.make_key(SOURCE, CompileOptions(arch="sm_90a", fast_math=True), extra="sig"),
        cache.make_key(SOURCE, CompileOptions(arch="sm_90a", lineinfo=False), extra="sig"),
    }
    with monkeypatch.context() as patch:
        patch.setattr(cache, "nvrtc_version", lambda: "99.9")
        variants.add(cache.make_key(SOURCE, options, extra="sig"))
    with monkeypatch.context() as patch:
        patch.setattr(cache, "tilemlir_version", lambda: "9.9.9")
        variants.add(cache.make_key(SOURCE, options, extra="sig"))
    assert base not in variants and len(variants) == 8


def test_store_then_lookup_round_trips_the_artifact(private_cache):
    key = cache.make_key(SOURCE, CompileOptions(), "x")
    assert cache.lookup(key) is None
    cubin = b"\x7fELF-not-really"
    entry = cache.store(key, SOURCE, cubin, SIGNATURE, CompileOptions(arch="sm_90a", fmad=False))
    assert entry == private_cache / "v1" / key[:2] / key
    assert cache.lookup(key) == entry
    assert sorted(p.name for p in entry.iterdir()) == ["axpy.cu", "axpy.cubin", "axpy_host.cu", "build.json",
                                                        "signature.json"]
    kernel = load(entry)
    assert kernel.signature == SIGNATURE and kernel.cubin == cubin and kernel.cuda_source() == SOURCE
    assert kernel.options == CompileOptions(arch="sm_90a", fmad=False)


def test_entries_appear_whole_or_not_at_all(monkeypatch, private_cache):
    key = cache.make_key(SOURCE, CompileOptions(), "atomic")

    def fail_midway(directory, signature, source, cubin, options):
        (directory / "axpy.cu").write_text(source)
        raise OSError("disk full")

    monkeypatch.setattr(cache, "write_artifact", fail_midway)
    with pytest.raises(OSError, match="disk full"):
        cache.store(key, SOURCE, b"cubin", SIGNATURE, CompileOptions())
    assert cache.lookup(key) is None
    assert os.listdir(private_cache / "v1" / key[:2]) == []  # no staging directory left behind


def test_a_concurrent_writer_wins_and_nothing_is_left_over(private_cache):
    key = cache.make_key(SOURCE, CompileOptions(), "race")
    first = cache.store(key, SOURCE, b"first", SIGNATURE, CompileOptions())
    second = cache.store(key, SOURCE, b"second", SIGNATURE, CompileOptions())
    assert first == second
    assert load(first).cubin == b"first"
    assert os.listdir(first.parent) == [key]


def test_a_directory_without_signature_is_not_a_hit():
    key = cache.make_key(SOURCE, CompileOptions(), "partial")
    partial = cache.entry_dir(key)
    partial.mkdir(parents=True)
    (partial / "axpy.cu").write_text(SOURCE)
    assert cache.lookup(key) is None


def test_build_compiles_once_then_hits_the_cache(monkeypatch, caplog):
    caplog.set_level(logging.DEBUG, logger="tilemlir.runtime")
    cold = build(SOURCE, SIGNATURE, arch="sm_90a")
    assert cold.cubin[:4] == b"\x7fELF" and cold.arch == "sm_90a"
    assert any("cold compile of axpy" in r.message for r in caplog.records)

    def no_compile(*args, **kwargs):
        raise AssertionError("compiled although the cache holds the kernel")

    monkeypatch.setattr(builder_module, "compile_cuda", no_compile)
    warm = build(SOURCE, SIGNATURE, arch="sm_90a")
    assert warm.cubin == cold.cubin and warm.signature == SIGNATURE
    assert any("cache hit for axpy" in r.message for r in caplog.records)
    with pytest.raises(AssertionError, match="compiled although"):
        build(SOURCE, SIGNATURE, arch="sm_90a", use_cache=False)
    monkeypatch.setenv("TILEMLIR_DISABLE_CACHE", "1")
    with pytest.raises(AssertionError, match="compiled although"):
        build(SOURCE, SIGNATURE, arch="sm_90a")
    monkeypatch.delenv("TILEMLIR_DISABLE_CACHE")
    with pytest.raises(AssertionError, match="compiled although"):
        build(SOURCE, SIGNATURE, arch="sm_90a", fmad=False)


def test_cuda_override_directory_replaces_the_generated_source(tmp_path, monkeypatch, caplog):
    edited = SOURCE.replace("a * x[i] + y[i]", "y[i] + a * x[i]")
    override = tmp_path / "override"
    override.mkdir()
    (override / "axpy.cu").write_text(edited)
    monkeypatch.setenv("TILEMLIR_CUDA_OVERRIDE", str(override))
    with caplog.at_level(logging.WARNING, logger="tilemlir.runtime"):
        kernel = build(SOURCE, SIGNATURE, arch="sm_90a")
    assert kernel.cuda_source() == edited
    assert any("TILEMLIR_CUDA_OVERRIDE" in r.message and "axpy.cu" in r.message for r in caplog.records)
    other = SIGNATURE.__class__.from_dict(dict(SIGNATURE.to_dict(), name="axpy2"))
    assert build(SOURCE.replace("axpy(", "axpy2("), other, arch="sm_90a").cuda_source().count("axpy2(") == 1


def test_dump_dir_receives_the_compiled_source(tmp_path, monkeypatch):
    monkeypatch.setenv("TILEMLIR_DUMP_DIR", str(tmp_path / "dump"))
    build(SOURCE, SIGNATURE, arch="sm_90a")
    assert (tmp_path / "dump" / "axpy.cu").read_text() == SOURCE


def test_with_cuda_source_keeps_signature_and_options():
    kernel = build(SOURCE, SIGNATURE, arch="sm_90a", fmad=False)
    edited = SOURCE.replace("if (i < N)", "if (i < N && a != 0.0f)")
    tuned = kernel.with_cuda_source(edited)
    assert tuned.cuda_source() == edited and tuned.signature == SIGNATURE
    assert tuned.options == kernel.options and tuned.cubin != kernel.cubin
