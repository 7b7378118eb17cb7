/* A fake DLPack exchange API provider (DLPack 1.2+), standing in for torch in the tests of the
 * native call plan (test_runtime_native_call.py), which compile it with native._compile.
 *
 * A tensor is any Python object with a `_dlpack_view()` method returning
 *     (data: int, shape: tuple, strides: tuple | None, (code, bits, lanes), (device_type, device_id),
 *      byte_offset: int)
 * Its shape and strides arrays live in a bytes object stored on the tensor (`_dlpack_arrays`), as a
 * framework keeps them in its tensor.
 *
 *   exchange_api(major=1, minor=2, without=None) -> capsule "dlpack_exchange_api"
 *       a fresh function table; `without` names one function to leave NULL
 *   configure(factory=None, stream=0, stream_fails=False, to_py_fails=False)
 *       factory(shape, (code, bits, lanes), (device_type, device_id)) -> tensor allocates outputs
 *       (raising or returning None: the allocation fails); `stream` is what current_work_stream
 *       answers; the two flags make those functions fail with a Python exception set
 *   stream_queries() -> [(device_type, device_id), ...]  since the last call (the list is cleared)
 *   live_managed() -> int          managed tensors made and not yet deleted
 *   allocation_errors() -> [(kind, message), ...]        SetError calls since the last call
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "dlpack_abi.h"  /* tilemlir/runtime: native._compile puts it on the include path */

static PyObject* factory;        /* NULL: every allocation fails */
static void* stream_value;
static int stream_fails, to_py_fails;
static long live;
static PyObject* queries;        /* list of (device_type, device_id) */
static PyObject* errors;         /* list of (kind, message) */

/* Fills `out` from obj._dlpack_view(); -1 with a Python error set. */
static int fill(PyObject* obj, DLTensor* out) {
  PyObject* view = PyObject_CallMethod(obj, "_dlpack_view", NULL);
  if (view == NULL) return -1;
  unsigned long long data, byte_offset;
  PyObject *shape, *strides;
  unsigned char code, bits;
  unsigned short lanes;
  int device_type, device_id;
  int status = -1;
  if (!PyArg_ParseTuple(view, "KO!O(bbH)(ii)K", &data, &PyTuple_Type, &shape, &strides, &code, &bits, &lanes,
                        &device_type, &device_id, &byte_offset))
    goto done;
  Py_ssize_t ndim = PyTuple_GET_SIZE(shape);
  if (strides != Py_None && (!PyTuple_Check(strides) || PyTuple_GET_SIZE(strides) != ndim)) {
    PyErr_SetString(PyExc_ValueError, "strides must be None or a tuple as long as shape");
    goto done;
  }
  PyObject* arrays = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)sizeof(int64_t) * (2 * ndim + 1));
  if (arrays == NULL) goto done;
  int64_t* words = (int64_t*)PyBytes_AS_STRING(arrays);
  for (Py_ssize_t d = 0; d < ndim; ++d) {
    words[d] = PyLong_AsLongLong(PyTuple_GET_ITEM(shape, d));
    if (strides != Py_None) words[ndim + d] = PyLong_AsLongLong(PyTuple_GET_ITEM(strides, d));
  }
  if (PyErr_Occurred() || PyObject_SetAttrString(obj, "_dlpack_arrays", arrays)) {
    Py_DECREF(arrays);
    goto done;
  }
  Py_DECREF(arrays);  /* the tensor holds it now */
  *out = (DLTensor){(void*)(uintptr_t)data, {device_type, device_id}, (int32_t)ndim, {code, bits, lanes}, words,
                    strides == Py_None ? NULL : words + ndim, byte_offset};
  status = 0;
done:
  Py_DECREF(view);
  return status;
}

static int dltensor_from_py(void* py_object, DLTensor* out) { return fill((PyObject*)py_object, out); }

static void delete_managed(DLManagedTensorVersioned* self) {
  Py_XDECREF((PyObject*)self->manager_ctx);
  PyMem_RawFree(self);
  --live;
}

/* A managed tensor owning a reference to `obj`; NULL with a Python error set. */
static DLManagedTensorVersioned* manage(PyObject* obj) {
  DLManagedTensorVersioned* managed = PyMem_RawCalloc(1, sizeof(DLManagedTensorVersioned));
  if (managed == NULL) { PyErr_NoMemory(); return NULL; }
  if (fill(obj, &managed->dl_tensor)) { PyMem_RawFree(managed); return NULL; }
  managed->version = (DLPackVersion){1, 2};
  Py_INCREF(obj);
  managed->manager_ctx = obj;
  managed->deleter = delete_managed;
  ++live;
  return managed;
}

static int managed_from_py(void* py_object, DLManagedTensorVersioned** out) {
  *out = manage((PyObject*)py_object);
  return *out == NULL ? -1 : 0;
}

static void report(void* error_ctx, set_error_fn set_error, const char* kind, const char* message) {
  PyObject* entry = Py_BuildValue("(ss)", kind, message);
  if (entry != NULL) {
    PyList_Append(errors, entry);
    Py_DECREF(entry);
  }
  PyErr_Clear();  /* as torch: the error goes through SetError only */
  if (set_error != NULL) set_error(error_ctx, kind, message);
}

static int allocate(DLTensor* prototype, DLManagedTensorVersioned** out, void* error_ctx, set_error_fn set_error) {
  *out = NULL;
  if (prototype->strides != NULL || prototype->byte_offset != 0 || prototype->data != NULL) {
    report(error_ctx, set_error, "ValueError", "a prototype has only dtype, ndim, shape and device");
    return -1;
  }
  PyObject* shape = PyTuple_New(prototype->ndim);
  if (shape == NULL) { report(error_ctx, set_error, "MemoryError", "no shape tuple"); return -1; }
  for (int32_t d = 0; d < prototype->ndim; ++d) PyTuple_SET_ITEM(shape, d, PyLong_FromLongLong(prototype->shape[d]));
  PyObject* tensor = factory == NULL ? NULL : PyObject_CallFunction(
      factory, "O(iiI)(ii)", shape, prototype->dtype.code, prototype->dtype.bits, (unsigned)prototype->dtype.lanes,
      prototype->device.device_type, prototype->device.device_id);
  Py_DECREF(shape);
  if (tensor == Py_None) Py_CLEAR(tensor);
  if (tensor != NULL) {
    *out = manage(tensor);
    Py_DECREF(tensor);
  }
  if (*out == NULL) {
    report(error_ctx, set_error, "MemoryError", "the fake allocator failed");
    return -1;
  }
  return 0;
}

static int to_py(DLManagedTensorVersioned* tensor, void** out_py_object) {
  PyObject* obj = (PyObject*)tensor->manager_ctx;
  Py_INCREF(obj);
  tensor->deleter(tensor);  /* the tensor's ownership is stolen, on failure too */
  if (to_py_fails) {
    Py_DECREF(obj);
    PyErr_SetString(PyExc_RuntimeError, "fake managed_tensor_to_py_object_no_sync failure");
    return -1;
  }
  *out_py_object = obj;
  return 0;
}

static int current_stream(int32_t device_type, int32_t device_id, void** out) {
  PyObject* entry = Py_BuildValue("(ii)", device_type, device_id);
  if (entry == NULL || PyList_Append(queries, entry)) { Py_XDECREF(entry); return -1; }
  Py_DECREF(entry);
  if (stream_fails) {
    PyErr_SetString(PyExc_RuntimeError, "fake current_work_stream failure");
    return -1;
  }
  *out = stream_value;
  return 0;
}

static void free_api(PyObject* capsule) {
  PyMem_Free(PyCapsule_GetPointer(capsule, "dlpack_exchange_api"));
}

static PyObject* exchange_api(PyObject* self, PyObject* args, PyObject* kwargs) {
  static char* names[] = {"major", "minor", "without", NULL};
  unsigned int major = 1, minor = 2;
  const char* without = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|IIz", names, &major, &minor, &without)) return NULL;
  DLPackExchangeAPI* api = PyMem_Malloc(sizeof(DLPackExchangeAPI));
  if (api == NULL) return PyErr_NoMemory();
  *api = (DLPackExchangeAPI){{{major, minor}, NULL}, allocate, managed_from_py, to_py, dltensor_from_py,
                             current_stream};
  if (without != NULL) {
    if (!strcmp(without, "managed_tensor_allocator")) api->managed_tensor_allocator = NULL;
    else if (!strcmp(without, "managed_tensor_from_py_object_no_sync"))
      api->managed_tensor_from_py_object_no_sync = NULL;
    else if (!strcmp(without, "managed_tensor_to_py_object_no_sync")) api->managed_tensor_to_py_object_no_sync = NULL;
    else if (!strcmp(without, "dltensor_from_py_object_no_sync")) api->dltensor_from_py_object_no_sync = NULL;
    else if (!strcmp(without, "current_work_stream")) api->current_work_stream = NULL;
    else {
      PyMem_Free(api);
      return PyErr_Format(PyExc_ValueError, "no exchange API function %s", without);
    }
  }
  PyObject* capsule = PyCapsule_New(api, "dlpack_exchange_api", free_api);
  if (capsule == NULL) PyMem_Free(api);
  return capsule;
}

static PyObject* configure(PyObject* self, PyObject* args, PyObject* kwargs) {
  static char* names[] = {"factory", "stream", "stream_fails", "to_py_fails", NULL};
  PyObject* new_factory = Py_None;
  unsigned long long stream = 0;
  int new_stream_fails = 0, new_to_py_fails = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OKpp", names, &new_factory, &stream, &new_stream_fails,
                                   &new_to_py_fails))
    return NULL;
  Py_XSETREF(factory, new_factory == Py_None ? NULL : (Py_INCREF(new_factory), new_factory));
  stream_value = (void*)(uintptr_t)stream;
  stream_fails = new_stream_fails;
  to_py_fails = new_to_py_fails;
  Py_RETURN_NONE;
}

static PyObject* take(PyObject** list) {
  PyObject* taken = *list;
  *list = PyList_New(0);
  return taken;
}

static PyObject* stream_queries(PyObject* self, PyObject* unused) { return take(&queries); }
static PyObject* allocation_errors(PyObject* self, PyObject* unused) { return take(&errors); }
static PyObject* live_managed(PyObject* self, PyObject* unused) { return PyLong_FromLong(live); }

static PyMethodDef methods[] = {
  {"exchange_api", (PyCFunction)(void (*)(void))exchange_api, METH_VARARGS | METH_KEYWORDS, "a function table"},
  {"configure", (PyCFunction)(void (*)(void))configure, METH_VARARGS | METH_KEYWORDS, "set the fake's behavior"},
  {"stream_queries", stream_queries, METH_NOARGS, "current_work_stream's queries since the last call"},
  {"allocation_errors", allocation_errors, METH_NOARGS, "SetError calls since the last call"},
  {"live_managed", live_managed, METH_NOARGS, "managed tensors not yet deleted"},
  {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "fake_dlpack", NULL, -1, methods};

PyMODINIT_FUNC PyInit_fake_dlpack(void) {
  queries = PyList_New(0);
  errors = PyList_New(0);
  if (queries == NULL || errors == NULL) return NULL;
  return PyModule_Create(&module);
}
