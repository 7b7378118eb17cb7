"""A small CPython extension for the fast path's two driver calls.

`load()` compiles the C source below with the system C compiler against
this Python's headers, once per machine and Python ABI (the shared library
is kept in the cache directory, ``<cache dir>/native/<hash>/``), and imports
it; it returns None, and the fast path then calls the driver through ctypes,
when there is no compiler or no Python.h.

Why: a ctypes call of cuLaunchKernel converts eleven arguments and needs
the kernel parameters in ctypes objects owned by the calling thread; this
extension takes the values as Python ints and floats in one METH_FASTCALL
call and builds the parameter block on its stack (about 0.8 us less per
launch, a quarter of the fast path's host time, on the development CPU).
It holds the GIL through cuLaunchKernel, as PyTorch does for its launches.

    current_context(get_context_address) -> int
        the current CUcontext, 0 without one or on error
    launch(launch_address, function, gx, gy, gz, bx, by, bz, shared, stream, kinds, *values) -> int
        the CUresult of cuLaunchKernel; `kinds` has one type code per value
        (see KIND), `stream` and `function` are handles as ints

The driver entry points are passed by address at each call (the addresses
of `driver.raw()`'s ctypes functions), so the module keeps no state.
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib.machinery
import importlib.util
import logging
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from pathlib import Path
from types import ModuleType

from tilemlir.config import settings

log = logging.getLogger("tilemlir.runtime")

MODULE_NAME = "_tilemlir_launch"  # as in PyInit_ below
MAX_PARAMS = 128  # as in the C source

# The type code of a kernel parameter in `launch`'s kinds, by the ctypes type the parameter has.
KIND = {ctypes.c_void_p: "p", ctypes.c_bool: "B", ctypes.c_int8: "b", ctypes.c_uint8: "B", ctypes.c_int16: "h",
        ctypes.c_uint16: "H", ctypes.c_int32: "i", ctypes.c_uint32: "I", ctypes.c_int64: "q", ctypes.c_uint64: "Q",
        ctypes.c_float: "f", ctypes.c_double: "d"}

SOURCE = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#define MAX_PARAMS 128

typedef int (*get_context_fn)(void**);
typedef int (*launch_fn)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*,
                         void**, void**);

static PyObject* current_context(PyObject* self, PyObject* address) {
  get_context_fn get_context = (get_context_fn)PyLong_AsVoidPtr(address);
  if (get_context == NULL) return NULL;
  void* context = NULL;
  if (get_context(&context)) context = NULL;
  return PyLong_FromVoidPtr(context);
}

static int store(char kind, PyObject* value, uint64_t* slot) {
  switch (kind) {
    case 'p': *(void**)slot = PyLong_AsVoidPtr(value); break;
    case 'b': *(int8_t*)slot = (int8_t)PyLong_AsLong(value); break;
    case 'B': *(uint8_t*)slot = (uint8_t)PyLong_AsLong(value); break;
    case 'h': *(int16_t*)slot = (int16_t)PyLong_AsLong(value); break;
    case 'H': *(uint16_t*)slot = (uint16_t)PyLong_AsLong(value); break;
    case 'i': *(int32_t*)slot = (int32_t)PyLong_AsLongLong(value); break;
    case 'I': *(uint32_t*)slot = (uint32_t)PyLong_AsUnsignedLongLongMask(value); break;
    case 'q': *(int64_t*)slot = PyLong_AsLongLong(value); break;
    case 'Q': *(uint64_t*)slot = PyLong_AsUnsignedLongLongMask(value); break;
    case 'f': *(float*)slot = (float)PyFloat_AsDouble(value); break;
    case 'd': *(double*)slot = PyFloat_AsDouble(value); break;
    default: PyErr_Format(PyExc_ValueError, "unknown parameter kind %c", kind); return -1;
  }
  return PyErr_Occurred() ? -1 : 0;
}

static PyObject* launch(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  Py_ssize_t count = nargs - 11;
  if (count < 0 || count > MAX_PARAMS || !PyBytes_Check(args[10]) || PyBytes_GET_SIZE(args[10]) != count) {
    PyErr_SetString(PyExc_TypeError, "launch(launch_address, function, gx, gy, gz, bx, by, bz, shared, stream, "
                                     "kinds, *values): one kind per value, at most 128 values");
    return NULL;
  }
  launch_fn launch_kernel = (launch_fn)PyLong_AsVoidPtr(args[0]);
  void* function = PyLong_AsVoidPtr(args[1]);
  unsigned dims[7];
  for (int i = 0; i < 7; ++i) dims[i] = (unsigned)PyLong_AsUnsignedLongMask(args[2 + i]);
  void* stream = PyLong_AsVoidPtr(args[9]);
  if (PyErr_Occurred()) return NULL;
  const char* kinds = PyBytes_AS_STRING(args[10]);
  uint64_t storage[MAX_PARAMS];
  void* params[MAX_PARAMS];
  for (Py_ssize_t i = 0; i < count; ++i) {
    params[i] = &storage[i];
    if (store(kinds[i], args[11 + i], &storage[i])) return NULL;
  }
  int code = launch_kernel(function, dims[0], dims[1], dims[2], dims[3], dims[4], dims[5], dims[6], stream,
                           params, NULL);
  return PyLong_FromLong(code);
}

static PyMethodDef methods[] = {
  {"current_context", current_context, METH_O, "the current CUcontext as an int (0: none)"},
  {"launch", (PyCFunction)(void (*)(void))launch, METH_FASTCALL, "cuLaunchKernel; returns the CUresult"},
  {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_tilemlir_launch", NULL, -1, methods};

PyMODINIT_FUNC PyInit__tilemlir_launch(void) { return PyModule_Create(&module); }
"""

_lock = threading.Lock()
_loaded: list[ModuleType | None] = []  # [] until load() has run once


def load() -> ModuleType | None:
    """The extension module, built on first use; None where it cannot be built."""
    with _lock:
        if not _loaded:
            _loaded.append(_build_and_import())
        return _loaded[0]


def _build_and_import() -> ModuleType | None:
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    include = sysconfig.get_paths()["include"]
    key = hashlib.sha256(f"{SOURCE}\n{sys.version}\n{suffix}\n{include}".encode()).hexdigest()[:24]
    library = settings().cache_dir / "native" / key / f"{MODULE_NAME}{suffix}"
    if not library.is_file():
        start = time.perf_counter()
        error = _compile(library, include)
        if error is not None:
            log.debug("no native launcher (%s); the fast path calls the driver through ctypes", error)
            return None
        log.debug("built the native launcher %s in %.2f s", library, time.perf_counter() - start)
    loader = importlib.machinery.ExtensionFileLoader(MODULE_NAME, str(library))
    spec = importlib.util.spec_from_file_location(MODULE_NAME, library, loader=loader)
    try:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    except ImportError as exc:
        log.debug("the native launcher %s does not import (%s); using ctypes", library, exc)
        return None
    return module


def _compile(library: Path, include: str) -> str | None:
    """Compile SOURCE into `library` (written aside, then renamed into place); why not, or None."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        return "no C compiler (cc, gcc) on PATH"
    if not Path(include, "Python.h").is_file():
        return f"no Python.h in {include}"
    try:
        library.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=library.parent) as scratch:
            source = Path(scratch, "launch.c")
            source.write_text(SOURCE)
            built = Path(scratch, library.name)
            command = [compiler, "-O2", "-shared", "-fPIC", f"-I{include}", str(source), "-o", str(built)]
            result = subprocess.run(command, capture_output=True, text=True, timeout=120)
            if result.returncode != 0:
                return f"{compiler} failed: {result.stderr.strip()[-2000:]}"
            os.replace(built, library)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"cannot build in {library.parent}: {exc}"
    return None
