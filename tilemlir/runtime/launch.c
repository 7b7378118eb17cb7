/* The native launcher of tilemlir's runtime: built by native.py with the system C compiler
 * against this Python's headers, once per machine and Python ABI.
 *
 *   current_context(get_context_address) -> int   the current CUcontext (0: none or error)
 *   launch(launch_address, function, gx, gy, gz, bx, by, bz, shared, stream, kinds, *values) -> int
 *       cuLaunchKernel with one value per kernel parameter, typed by `kinds`; returns the CUresult
 *       (kind 'm', a tensor map: the value is the address of its 128 bytes, passed as they are)
 *   CallPlan(...)                                  a kernel's whole checked call (below)
 *   evaluate_program(words, env) -> int | None     one of its expression programs, for tests
 *
 * Driver entry points come in as addresses (driver.raw()'s ctypes functions), so nothing
 * here links against CUDA.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

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
    if (kinds[i] == 'm') {
      params[i] = PyLong_AsVoidPtr(args[11 + i]);
      if (params[i] == NULL) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "a tensor map's address is not 0");
        return NULL;
      }
      continue;
    }
    params[i] = &storage[i];
    if (store(kinds[i], args[11 + i], &storage[i])) return NULL;
  }
  int code = launch_kernel(function, dims[0], dims[1], dims[2], dims[3], dims[4], dims[5], dims[6], stream,
                           params, NULL);
  return PyLong_FromLong(code);
}


/* ---------------------------------------------------------------------------------------
 * CallPlan: a kernel's whole fast call in C (see native_call.py for the spec it is built
 * from). Tensors are read through the DLPack exchange API the framework publishes on its
 * tensor type (`__dlpack_c_exchange_api__`, DLPack 1.2+): no Python attribute reads, and
 * outputs are allocated by the framework's own allocator. Any call that is not the plain
 * case returns the `slow` object, and the caller takes the general path, which raises the
 * argument error with its message.
 * ------------------------------------------------------------------------------------ */

#include "dlpack_abi.h"

#define SPEC_VERSION 2
#define MAX_TENSORS 32
#define MAX_RANK 8
#define MAX_MAPS 16
#define MAX_MAP_RANK 5
#define MAP_CACHE 8     /* encoded maps kept per tensor map */
#define MAP_BYTES 128   /* sizeof(CUtensorMap) */
#define MAP_ALIGN 128  /* as tensor_map.MAP_ALIGN */
#define MAX_ENV 64
#define MAX_CONTEXTS 16
#define MAX_STACK 32
#define INT32_LIMIT 2147483648LL

/* Expression programs (postfix over int64; see native_call.py) */
enum { OP_CONST, OP_LOAD, OP_ADD, OP_SUB, OP_MUL, OP_FLOORDIV, OP_MOD, OP_NEG, OP_MIN, OP_MAX,
       OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE, OP_NOT, OP_AND, OP_OR, OP_WRAP, OP_WRAPU };
enum { INPUT_TENSOR, INPUT_SCALAR };
enum { PARAM_TENSOR, PARAM_SCALAR, PARAM_SYMBOL, PARAM_MAP };

/* cuTensorMapEncodeTiled(map, data type, rank, address, dims, strides, box, element strides, interleave,
   swizzle, L2 promotion, OOB fill) */
typedef int (*encode_fn)(void*, int, uint32_t, void*, const uint64_t*, const uint64_t*, const uint32_t*,
                         const uint32_t*, int, int, int, int);

typedef struct {
  uint64_t address;
  int64_t dims[MAX_MAP_RANK];
  int valid;
  unsigned char* map;  /* MAP_BYTES, MAP_ALIGN-aligned, in the plan's map storage */
} MapEntry;

/* One tensor map parameter (tensor_map.py): the driver's enums, its box innermost first, and its cache. */
typedef struct {
  int tensor, data_type, rank, itemsize, interleave, swizzle, l2_promotion, oob_fill;
  uint32_t box[MAX_MAP_RANK];
  int next;  /* the entry the next miss replaces */
  MapEntry entries[MAP_CACHE];
} MapSpec;

typedef struct {
  uint8_t code, bits;
  int ndim, output;
  int64_t align, itemsize;
  int64_t dims[MAX_RANK]; /* >= 0: static extent; < 0: symbol -(dim + 1) */
} TensorSpec;

typedef struct { int64_t context, function, max_shared; int device; } ContextEntry;

typedef struct {
  PyObject_HEAD
  PyObject* capsule;       /* keeps the exchange API alive */
  PyObject* tensor_type;
  PyObject* slow;
  PyObject* stream_handle; /* stream object -> int handle (raises for a bad one) */
  PyObject* launch_failed; /* (code, grid, shared) -> raises */
  const DLPackExchangeAPI* api;
  get_context_fn get_context;
  launch_fn launch_kernel;
  encode_fn encode;         /* NULL when the spec has no tensor maps */
  int device_type;
  int n_inputs, n_tensors, n_scalars, n_symbols, symbol_bits, limit32, n_outputs, n_params, n_alias;
  int n_programs;
  unsigned block[3];
  int input_kind[MAX_PARAMS], input_index[MAX_PARAMS];
  TensorSpec tensors[MAX_TENSORS];
  char scalar_kind[MAX_PARAMS];
  int scalar_slot[MAX_PARAMS];  /* env slot of an integer scalar, -1 if none */
  int outputs[MAX_TENSORS];
  int param_kind[MAX_PARAMS], param_index[MAX_PARAMS];
  int (*alias)[2];
  int64_t* code;            /* all programs, each as (length, ops...) */
  int64_t* program[4 + MAX_ENV]; /* grid x, y, z, shared bytes, assumes...: start of each */
  int n_contexts;
  ContextEntry contexts[MAX_CONTEXTS];
  int n_maps;
  MapSpec maps[MAX_MAPS];
  void* map_storage;        /* PyMem block holding every MapEntry's bytes */
} CallPlan;

/* Python's floor division and modulo; 0 on overflow or division by zero. */
static int floor_divmod(int64_t a, int64_t b, int64_t* q, int64_t* r) {
  if (b == 0 || (a == INT64_MIN && b == -1)) return 0;
  int64_t quot = a / b, rem = a % b;
  if (rem != 0 && ((rem < 0) != (b < 0))) { quot -= 1; rem += b; }
  *q = quot; *r = rem;
  return 1;
}

/* Python's wrap(a, bits) and wrapu(a, bits) (runtime/expr.py): a's low `bits` bits, read as signed
   or unsigned; 0 when the result is not an int64 (an unsigned 64-bit value of 2**63 or more). */
static int wrap_bits(int64_t a, int64_t bits, int is_unsigned, int64_t* out) {
  if (bits == 64) {
    if (is_unsigned && a < 0) return 0;
    *out = a;
    return 1;
  }
  uint64_t low = (uint64_t)a & ((UINT64_C(1) << bits) - 1), sign = UINT64_C(1) << (bits - 1);
  *out = is_unsigned ? (int64_t)low : (int64_t)(low ^ sign) - (int64_t)sign;
  return 1;
}

/* Evaluates one program over env; 1 and *out on success, 0 when Python would raise or overflow
   (the general path then evaluates it and reports). */
static int evaluate(const int64_t* program, const int64_t* env, int64_t* out) {
  int64_t length = program[0];
  const int64_t* op = program + 1;
  int64_t stack[MAX_STACK];
  int top = 0;
  for (int64_t pc = 0; pc < length; ++pc) {
    int64_t a, b, q, r;
    switch (op[pc]) {
      case OP_CONST: if (top >= MAX_STACK) return 0; stack[top++] = op[++pc]; break;
      case OP_LOAD: if (top >= MAX_STACK) return 0; stack[top++] = env[op[++pc]]; break;
      case OP_NEG: if (stack[top - 1] == INT64_MIN) return 0; stack[top - 1] = -stack[top - 1]; break;
      case OP_NOT: stack[top - 1] = !stack[top - 1]; break;
      case OP_WRAP: case OP_WRAPU:
        if (!wrap_bits(stack[top - 1], op[pc + 1], op[pc] == OP_WRAPU, &stack[top - 1])) return 0;
        ++pc;
        break;
      case OP_MIN: case OP_MAX: case OP_AND: case OP_OR: {
        int64_t count = op[++pc], kind = op[pc - 1];
        int64_t acc = stack[top - count];
        for (int64_t k = top - count + 1; k < top; ++k) {
          int64_t v = stack[k];
          if (kind == OP_MIN) acc = v < acc ? v : acc;
          else if (kind == OP_MAX) acc = v > acc ? v : acc;
          else if (kind == OP_AND) acc = acc && v;
          else acc = acc || v;
        }
        if (kind == OP_AND || kind == OP_OR) acc = acc != 0;
        top -= (int)count;
        stack[top++] = acc;
        break;
      }
      default:
        b = stack[--top];
        a = stack[top - 1];
        switch (op[pc]) {
          case OP_ADD: if (__builtin_add_overflow(a, b, &a)) return 0; break;
          case OP_SUB: if (__builtin_sub_overflow(a, b, &a)) return 0; break;
          case OP_MUL: if (__builtin_mul_overflow(a, b, &a)) return 0; break;
          case OP_FLOORDIV: if (!floor_divmod(a, b, &q, &r)) return 0; a = q; break;
          case OP_MOD:  /* x % -1 is 0, INT64_MIN's too, though its quotient overflows */
            if (b != -1 && !floor_divmod(a, b, &q, &r)) return 0;
            a = b == -1 ? 0 : r;
            break;
          case OP_EQ: a = a == b; break;
          case OP_NE: a = a != b; break;
          case OP_LT: a = a < b; break;
          case OP_LE: a = a <= b; break;
          case OP_GT: a = a > b; break;
          case OP_GE: a = a >= b; break;
          default: return 0;
        }
        stack[top - 1] = a;
    }
  }
  if (top != 1) return 0;
  *out = stack[0];
  return 1;
}


/* Checks a program once (stack discipline, loads below env_size), so that `evaluate` needs no checks of its own. */
static int validate_program(const int64_t* program, int64_t env_size) {
  int64_t length = program[0], depth = 0;
  const int64_t* op = program + 1;
  for (int64_t pc = 0; pc < length; ++pc) {
    int64_t kind = op[pc], pops, count;
    if (kind == OP_CONST || kind == OP_LOAD) {
      if (pc + 1 >= length || (kind == OP_LOAD && (op[pc + 1] < 0 || op[pc + 1] >= env_size))) return 0;
      ++pc;
      pops = 0;
    } else if (kind == OP_NEG || kind == OP_NOT) {
      pops = 1;
    } else if (kind == OP_WRAP || kind == OP_WRAPU) {
      if (pc + 1 >= length || op[pc + 1] < 1 || op[pc + 1] > 64) return 0;
      ++pc;
      pops = 1;
    } else if (kind == OP_MIN || kind == OP_MAX || kind == OP_AND || kind == OP_OR) {
      if (pc + 1 >= length) return 0;
      count = op[++pc];
      if (count < 1) return 0;
      pops = count;
    } else if (kind >= OP_ADD && kind <= OP_GE) {
      pops = 2;
    } else {
      return 0;
    }
    if (depth < pops) return 0;
    depth += 1 - pops;
    if (depth > MAX_STACK) return 0;
  }
  return depth == 1;
}

/* The plan takes part in garbage collection: a kernel holds its plan, and the plan holds the
   kernel's bound launch_failed, a cycle that reference counting alone never frees. */
static int plan_traverse(CallPlan* self, visitproc visit, void* arg) {
  Py_VISIT(self->capsule);
  Py_VISIT(self->tensor_type);
  Py_VISIT(self->slow);
  Py_VISIT(self->stream_handle);
  Py_VISIT(self->launch_failed);
  return 0;
}

static int plan_clear(CallPlan* self) {
  self->api = NULL;  /* the capsule that kept it alive goes: calls are refused from now on */
  Py_CLEAR(self->capsule);
  Py_CLEAR(self->tensor_type);
  Py_CLEAR(self->slow);
  Py_CLEAR(self->stream_handle);
  Py_CLEAR(self->launch_failed);
  return 0;
}

static void plan_dealloc(CallPlan* self) {
  PyObject_GC_UnTrack(self);
  plan_clear(self);
  PyMem_Free(self->alias);
  PyMem_Free(self->code);
  PyMem_Free(self->map_storage);
  Py_TYPE(self)->tp_free((PyObject*)self);
}

/* Reads the packed spec (native_call.plan_spec); 0 with a Python error when it is malformed. */
typedef struct { const int64_t* at; const int64_t* end; } Cursor;

static int next(Cursor* c, int64_t low, int64_t high, int64_t* out) {
  if (c->at >= c->end) { PyErr_SetString(PyExc_ValueError, "call plan spec is truncated"); return 0; }
  int64_t v = *c->at++;
  if (v < low || v > high) {
    PyErr_Format(PyExc_ValueError, "call plan spec value %lld is outside [%lld, %lld]", (long long)v,
                 (long long)low, (long long)high);
    return 0;
  }
  *out = v;
  return 1;
}

#define NEXT(var, low, high) do { int64_t v_; if (!next(&c, (low), (high), &v_)) return -1; (var) = v_; } while (0)

static int read_spec(CallPlan* self, const int64_t* words, Py_ssize_t count) {
  Cursor c = {words, words + count};
  int64_t word;
  NEXT(word, SPEC_VERSION, SPEC_VERSION);
  NEXT(self->device_type, 1, 1 << 16);
  NEXT(self->n_inputs, 0, MAX_PARAMS);
  NEXT(self->n_tensors, 0, MAX_TENSORS);
  NEXT(self->n_scalars, 0, MAX_PARAMS);
  NEXT(self->n_symbols, 0, MAX_ENV);
  NEXT(self->symbol_bits, 32, 64);
  NEXT(self->limit32, 0, 1);
  NEXT(self->n_outputs, 0, MAX_TENSORS);
  NEXT(self->n_params, 0, MAX_PARAMS);
  NEXT(self->n_alias, 0, MAX_TENSORS * MAX_TENSORS);
  NEXT(self->n_programs, 4, 4 + MAX_ENV - 4);
  for (int i = 0; i < 3; ++i) NEXT(self->block[i], 1, 1024);
  for (int i = 0; i < self->n_inputs; ++i) {
    NEXT(self->input_kind[i], INPUT_TENSOR, INPUT_SCALAR);
    NEXT(self->input_index[i], 0, self->input_kind[i] == INPUT_TENSOR ? self->n_tensors - 1 : self->n_scalars - 1);
  }
  for (int i = 0; i < self->n_tensors; ++i) {
    TensorSpec* t = &self->tensors[i];
    NEXT(t->code, 0, 255);
    NEXT(t->bits, 1, 255);
    NEXT(t->ndim, 0, MAX_RANK);
    NEXT(t->align, 0, 1 << 20);
    NEXT(t->itemsize, 1, 64);
    NEXT(t->output, 0, 1);
    for (int d = 0; d < t->ndim; ++d) NEXT(t->dims[d], -(int64_t)self->n_symbols, INT64_MAX);
  }
  for (int i = 0; i < self->n_scalars; ++i) {
    NEXT(word, 0, 127);
    self->scalar_kind[i] = (char)word;
    NEXT(self->scalar_slot[i], -1, MAX_ENV - 1);
  }
  for (int i = 0; i < self->n_outputs; ++i) NEXT(self->outputs[i], 0, self->n_tensors - 1);
  for (int i = 0; i < self->n_params; ++i) {  /* a map's index is checked against the maps' count below */
    NEXT(self->param_kind[i], PARAM_TENSOR, PARAM_MAP);
    NEXT(self->param_index[i], 0, self->param_kind[i] == PARAM_TENSOR ? self->n_tensors - 1
                                : self->param_kind[i] == PARAM_SCALAR ? self->n_scalars - 1
                                : self->param_kind[i] == PARAM_SYMBOL ? self->n_symbols - 1 : MAX_MAPS - 1);
  }
  self->alias = PyMem_Malloc(sizeof(int[2]) * (self->n_alias ? self->n_alias : 1));
  if (self->alias == NULL) { PyErr_NoMemory(); return -1; }
  for (int i = 0; i < self->n_alias; ++i) {
    NEXT(self->alias[i][0], 0, self->n_tensors - 1);
    NEXT(self->alias[i][1], 0, self->n_tensors - 1);
  }
  NEXT(self->n_maps, 0, MAX_MAPS);
  for (int k = 0; k < self->n_maps; ++k) {
    MapSpec* m = &self->maps[k];
    NEXT(m->tensor, 0, self->n_tensors - 1);
    NEXT(m->data_type, 0, 15);
    NEXT(m->rank, 1, MAX_MAP_RANK);
    NEXT(m->itemsize, 1, 8);
    if (m->rank != self->tensors[m->tensor].ndim || m->itemsize != self->tensors[m->tensor].itemsize) {
      PyErr_Format(PyExc_ValueError, "call plan tensor map %d (rank %d, %d-byte elements) does not fit its tensor",
                   k, m->rank, m->itemsize);
      return -1;
    }
    NEXT(m->interleave, 0, 2);
    NEXT(m->swizzle, 0, 6);
    NEXT(m->l2_promotion, 0, 3);
    NEXT(m->oob_fill, 0, 1);
    for (int d = 0; d < m->rank; ++d) NEXT(m->box[d], 1, 256);
  }
  for (int i = 0; i < self->n_params; ++i)
    if (self->param_kind[i] == PARAM_MAP && self->param_index[i] >= self->n_maps) {
      PyErr_Format(PyExc_ValueError, "call plan parameter %d names tensor map %d of %d", i, self->param_index[i],
                   self->n_maps);
      return -1;
    }
  if (self->n_maps) {
    self->map_storage = PyMem_Malloc((size_t)self->n_maps * MAP_CACHE * MAP_BYTES + MAP_ALIGN - 1);
    if (self->map_storage == NULL) { PyErr_NoMemory(); return -1; }
    unsigned char* base = (unsigned char*)self->map_storage;
    base += (MAP_ALIGN - (uintptr_t)base % MAP_ALIGN) % MAP_ALIGN;
    for (int k = 0; k < self->n_maps; ++k)
      for (int e = 0; e < MAP_CACHE; ++e) self->maps[k].entries[e].map = base + ((size_t)k * MAP_CACHE + e) * MAP_BYTES;
  }
  Py_ssize_t rest = c.end - c.at;
  self->code = PyMem_Malloc(sizeof(int64_t) * (rest ? rest : 1));
  if (self->code == NULL) { PyErr_NoMemory(); return -1; }
  memcpy(self->code, c.at, sizeof(int64_t) * rest);
  Cursor p = {self->code, self->code + rest};
  for (int i = 0; i < self->n_programs; ++i) {
    self->program[i] = (int64_t*)p.at;
    int64_t length;
    if (!next(&p, 1, p.end - p.at - 1, &length)) return -1;
    if (!validate_program(self->program[i], self->n_symbols + self->n_scalars)) {
      PyErr_Format(PyExc_ValueError, "call plan program %d is malformed", i);
      return -1;
    }
    p.at += length;
  }
  if (p.at != p.end) { PyErr_SetString(PyExc_ValueError, "call plan spec has trailing words"); return -1; }
  return 0;
}

/* CallPlan(spec: bytes, capsule, tensor_type, slow, stream_handle, launch_failed, get_context, launch
            [, encode_tiled]): the last, cuTensorMapEncodeTiled's address, only for a spec with tensor maps */
static int plan_init(CallPlan* self, PyObject* args, PyObject* kwargs) {
  Py_buffer spec;
  PyObject *capsule, *tensor_type, *slow, *stream_handle, *launch_failed, *get_context, *launch_address;
  PyObject* encode_address = NULL;
  if (!PyArg_ParseTuple(args, "y*OOOOOOO|O", &spec, &capsule, &tensor_type, &slow, &stream_handle, &launch_failed,
                        &get_context, &launch_address, &encode_address))
    return -1;
  int status = -1;
  if (self->api != NULL || self->alias != NULL) {  /* a second __init__ would leave the plan half rewritten */
    PyErr_SetString(PyExc_TypeError, "a CallPlan is initialized once");
    goto done;
  }
  if (!PyType_Check(tensor_type)) {
    PyErr_SetString(PyExc_TypeError, "CallPlan's tensor_type must be a type");
    goto done;
  }
  if (spec.len % sizeof(int64_t)) {
    PyErr_SetString(PyExc_ValueError, "call plan spec is not a whole number of int64 words");
    goto done;
  }
  const DLPackExchangeAPI* api = PyCapsule_GetPointer(capsule, "dlpack_exchange_api");
  if (api == NULL) goto done;
  if (api->header.version.major != 1 || api->header.version.minor < 2 || api->managed_tensor_allocator == NULL ||
      api->managed_tensor_to_py_object_no_sync == NULL || api->dltensor_from_py_object_no_sync == NULL ||
      api->current_work_stream == NULL) {
    PyErr_Format(PyExc_ValueError, "DLPack exchange API %u.%u lacks what the call plan needs",
                 api->header.version.major, api->header.version.minor);
    goto done;
  }
  self->get_context = (get_context_fn)PyLong_AsVoidPtr(get_context);
  self->launch_kernel = (launch_fn)PyLong_AsVoidPtr(launch_address);
  if (encode_address != NULL && encode_address != Py_None) self->encode = (encode_fn)PyLong_AsVoidPtr(encode_address);
  if (PyErr_Occurred()) goto done;
  if (self->get_context == NULL || self->launch_kernel == NULL) {
    PyErr_SetString(PyExc_ValueError, "CallPlan needs the driver entry point addresses (not 0)");
    goto done;
  }
  if (read_spec(self, (const int64_t*)spec.buf, spec.len / (Py_ssize_t)sizeof(int64_t))) goto done;
  if (self->n_maps && self->encode == NULL) {
    PyErr_SetString(PyExc_ValueError, "a call plan with tensor maps needs cuTensorMapEncodeTiled's address (not 0)");
    goto done;
  }
  self->api = api;  /* last: a plan without it was never initialized and refuses calls */
  Py_INCREF(capsule); Py_XSETREF(self->capsule, capsule);
  Py_INCREF(tensor_type); Py_XSETREF(self->tensor_type, tensor_type);
  Py_INCREF(slow); Py_XSETREF(self->slow, slow);
  Py_INCREF(stream_handle); Py_XSETREF(self->stream_handle, stream_handle);
  Py_INCREF(launch_failed); Py_XSETREF(self->launch_failed, launch_failed);
  status = 0;
done:
  PyBuffer_Release(&spec);
  return status;
}

static PyObject* plan_register(CallPlan* self, PyObject* args) {
  long long context, function, max_shared;
  int device;
  if (!PyArg_ParseTuple(args, "LLiL", &context, &function, &device, &max_shared)) return NULL;
  for (int i = 0; i < self->n_contexts; ++i)
    if (self->contexts[i].context == context) {
      self->contexts[i] = (ContextEntry){context, function, max_shared, device};
      Py_RETURN_NONE;
    }
  if (self->n_contexts == MAX_CONTEXTS) {
    PyErr_SetString(PyExc_RuntimeError, "a call plan serves at most 16 CUDA contexts");
    return NULL;
  }
  self->contexts[self->n_contexts++] = (ContextEntry){context, function, max_shared, device};
  Py_RETURN_NONE;
}

static PyObject* plan_registered(CallPlan* self, PyObject* context) {
  long long value = PyLong_AsLongLong(context);
  if (value == -1 && PyErr_Occurred()) return NULL;
  for (int i = 0; i < self->n_contexts; ++i)
    if (self->contexts[i].context == value) Py_RETURN_TRUE;
  Py_RETURN_FALSE;
}

/* The driver's dims and byte strides (innermost first) of tensor map `m` for its tensor at `address` of
   C-contiguous `shape` (outermost first); 0 when a requirement of cuTensorMapEncodeTiled does not hold
   (tensor_map.requirement_problem: the general path raises that error). */
static int map_arguments(const MapSpec* m, uint64_t address, const int64_t* shape, uint64_t* dims, uint64_t* strides) {
  int64_t stride = m->itemsize;
  if (address % 16) return 0;
  for (int d = 0; d < m->rank; ++d) {
    int64_t extent = shape[m->rank - 1 - d];
    if (extent < 1 || extent > (INT64_C(1) << 31)) return 0;
    dims[d] = (uint64_t)extent;
    if (d > 0) {  /* the byte stride of the driver's dim d */
      if (stride % 16 || stride >= (INT64_C(1) << 40)) return 0;
      strides[d - 1] = (uint64_t)stride;
    }
    if (__builtin_mul_overflow(stride, extent, &stride)) return 0;
  }
  return 1;
}

/* The encoded map of `m` for that tensor: a cached one, or one encoded now into the entry the cache
   replaces next; NULL where `map_arguments` fails or the driver refuses. */
static unsigned char* tensor_map(encode_fn encode, MapSpec* m, uint64_t address, const int64_t* shape) {
  for (int e = 0; e < MAP_CACHE; ++e) {
    MapEntry* entry = &m->entries[e];
    if (entry->valid && entry->address == address && !memcmp(entry->dims, shape, sizeof(int64_t) * m->rank))
      return entry->map;
  }
  uint64_t dims[MAX_MAP_RANK], strides[MAX_MAP_RANK];
  static const uint32_t element_strides[MAX_MAP_RANK] = {1, 1, 1, 1, 1};
  if (!map_arguments(m, address, shape, dims, strides)) return NULL;
  MapEntry* entry = &m->entries[m->next];
  m->next = (m->next + 1) % MAP_CACHE;
  entry->valid = 0;
  if (encode(entry->map, m->data_type, (uint32_t)m->rank, (void*)(uintptr_t)address, dims, strides, m->box,
             element_strides, m->interleave, m->swizzle, m->l2_promotion, m->oob_fill))
    return NULL;
  entry->address = address;
  memcpy(entry->dims, shape, sizeof(int64_t) * m->rank);
  entry->valid = 1;
  return entry->map;
}

/* The shape of tensor spec `t` in a call whose symbols are bound in `env`. */
static void shape_of(const TensorSpec* t, const int64_t* env, int64_t* shape) {
  for (int d = 0; d < t->ndim; ++d) shape[d] = t->dims[d] >= 0 ? t->dims[d] : env[-t->dims[d] - 1];
}

/* torch's rule: size-1 dims do not count, and an empty tensor is contiguous. */
static int contiguous(const DLTensor* t) {
  if (t->strides == NULL) return 1;
  int64_t expected = 1;
  for (int d = t->ndim - 1; d >= 0; --d) {
    if (t->shape[d] == 0) return 1;
  }
  for (int d = t->ndim - 1; d >= 0; --d) {
    if (t->shape[d] != 1) {
      if (t->strides[d] != expected) return 0;
      expected *= t->shape[d];
    }
  }
  return 1;
}

/* Stores a scalar argument into its parameter slot; 0 when it is not the plain case. */
static int scalar_value(char kind, PyObject* value, uint64_t* slot, int64_t* integer) {
  if (kind == 'f' || kind == 'd') {
    double v;
    if (PyFloat_CheckExact(value)) v = PyFloat_AS_DOUBLE(value);
    else if (PyLong_CheckExact(value)) {
      v = PyLong_AsDouble(value);
      if (v == -1.0 && PyErr_Occurred()) { PyErr_Clear(); return 0; }
    } else return 0;
    if (kind == 'd') { *(double*)slot = v; return 1; }
    float f = (float)v;
    if (isinf(f) && isfinite(v)) return 0;
    *(float*)slot = f;
    return 1;
  }
  if (kind == '?') {
    if (!PyBool_Check(value)) return 0;
    *(uint8_t*)slot = value == Py_True;
    *integer = value == Py_True;
    return 1;
  }
  if (!PyLong_Check(value)) return 0;
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
  if (overflow || (v == -1 && PyErr_Occurred())) {
    PyErr_Clear();
    if (kind != 'Q' || overflow < 0) return 0;
    unsigned long long u = PyLong_AsUnsignedLongLong(value);
    if (PyErr_Occurred()) { PyErr_Clear(); return 0; }
    *(uint64_t*)slot = u;
    *integer = (int64_t)u;
    return u <= INT64_MAX;  /* beyond int64 it could not take part in expressions */
  }
  switch (kind) {
    case 'b': if (v < INT8_MIN || v > INT8_MAX) return 0; *(int8_t*)slot = (int8_t)v; break;
    case 'B': if (v < 0 || v > UINT8_MAX) return 0; *(uint8_t*)slot = (uint8_t)v; break;
    case 'h': if (v < INT16_MIN || v > INT16_MAX) return 0; *(int16_t*)slot = (int16_t)v; break;
    case 'H': if (v < 0 || v > UINT16_MAX) return 0; *(uint16_t*)slot = (uint16_t)v; break;
    case 'i': if (v < INT32_MIN || v > INT32_MAX) return 0; *(int32_t*)slot = (int32_t)v; break;
    case 'I': if (v < 0 || v > UINT32_MAX) return 0; *(uint32_t*)slot = (uint32_t)v; break;
    case 'q': *(int64_t*)slot = v; break;
    case 'Q': if (v < 0) return 0; *(uint64_t*)slot = (uint64_t)v; break;
    default: return 0;
  }
  *integer = v;
  return 1;
}

static void allocation_error(void* error_ctx, const char* kind, const char* message) {
  (void)error_ctx; (void)kind; (void)message;  /* the general path allocates again and reports */
}

static PyObject* slow(CallPlan* self) {
  if (PyErr_Occurred()) PyErr_Clear();
  Py_INCREF(self->slow);
  return self->slow;
}

/* plan.call(args: tuple, stream) -> the outputs (None, one, or a tuple) or `slow` */
static PyObject* plan_call(CallPlan* self, PyObject* const* argv, Py_ssize_t nargs) {
  if (nargs != 2 || !PyTuple_CheckExact(argv[0])) {
    PyErr_SetString(PyExc_TypeError, "a call plan takes (args: tuple, stream)");
    return NULL;
  }
  if (self->api == NULL) {
    PyErr_SetString(PyExc_TypeError, "this CallPlan is not initialized");
    return NULL;
  }
  PyObject* args = argv[0];
  PyObject* stream_arg = argv[1];
  if (PyTuple_GET_SIZE(args) != self->n_inputs) return slow(self);

  void* context = NULL;
  if (self->get_context(&context)) return slow(self);
  const ContextEntry* entry = NULL;
  for (int i = 0; i < self->n_contexts; ++i)
    if (self->contexts[i].context == (int64_t)(intptr_t)context) { entry = &self->contexts[i]; break; }
  if (entry == NULL) return slow(self);

  int64_t env[MAX_ENV];
  int bound[MAX_ENV] = {0};
  uint64_t data[MAX_TENSORS];
  int64_t bytes[MAX_TENSORS];
  uint64_t slots[MAX_PARAMS], scalars[MAX_PARAMS];
  void* params[MAX_PARAMS];
  for (int pos = 0; pos < self->n_inputs; ++pos) {
    PyObject* value = PyTuple_GET_ITEM(args, pos);
    int index = self->input_index[pos];
    if (self->input_kind[pos] == INPUT_SCALAR) {
      int64_t integer = 0;
      if (!scalar_value(self->scalar_kind[index], value, &scalars[index], &integer))
        return slow(self);
      if (self->scalar_slot[index] >= 0) env[self->scalar_slot[index]] = integer;
      continue;
    }
    const TensorSpec* spec = &self->tensors[index];
    if (!PyObject_TypeCheck(value, (PyTypeObject*)self->tensor_type)) return slow(self);
    DLTensor t;
    if (self->api->dltensor_from_py_object_no_sync(value, &t)) return slow(self);
    if (t.device.device_type != self->device_type || t.device.device_id != entry->device ||
        t.dtype.code != spec->code || t.dtype.bits != spec->bits || t.dtype.lanes != 1 || t.ndim != spec->ndim ||
        !contiguous(&t))
      return slow(self);
    int64_t numel = 1;
    for (int d = 0; d < spec->ndim; ++d) {
      int64_t want = spec->dims[d], extent = t.shape[d];
      if (want >= 0) {
        if (extent != want) return slow(self);
      } else if (!bound[-want - 1]) {
        bound[-want - 1] = 1;
        env[-want - 1] = extent;
      } else if (env[-want - 1] != extent) {
        return slow(self);
      }
      if (__builtin_mul_overflow(numel, extent, &numel)) return slow(self);
    }
    uint64_t address = (uint64_t)(uintptr_t)t.data + t.byte_offset;
    /* A null address: no storage (a tensor subclass, or an empty tensor); the general path decides. */
    if (!address || (spec->align > 1 && address % (uint64_t)spec->align) || (self->limit32 && numel >= INT32_LIMIT))
      return slow(self);
    data[index] = address;
    bytes[index] = numel * spec->itemsize;
  }
  for (int i = 0; i < self->n_symbols; ++i)  /* a symbol is a kernel parameter: 32 bits with limit32 */
    if (!bound[i] || (self->limit32 && env[i] >= INT32_LIMIT)) return slow(self);
  for (int i = 0; i < self->n_alias; ++i) {
    int a = self->alias[i][0], b = self->alias[i][1];
    if (bytes[a] && bytes[b] && data[a] < data[b] + (uint64_t)bytes[b] && data[b] < data[a] + (uint64_t)bytes[a])
      return slow(self);
  }
  for (int i = 4; i < self->n_programs; ++i) {
    int64_t holds;
    if (!evaluate(self->program[i], env, &holds) || !holds) return slow(self);
  }
  int64_t grid[3], shared;
  static const int64_t max_grid[3] = {2147483647LL, 65535, 65535};
  for (int axis = 0; axis < 3; ++axis)
    if (!evaluate(self->program[axis], env, &grid[axis]) || grid[axis] <= 0 || grid[axis] > max_grid[axis])
      return slow(self);
  if (!evaluate(self->program[3], env, &shared) || shared < 0 || shared > entry->max_shared) return slow(self);

  int64_t shapes[MAX_TENSORS][MAX_RANK];
  for (int k = 0; k < self->n_outputs; ++k) {
    const TensorSpec* spec = &self->tensors[self->outputs[k]];
    int64_t numel = 1;
    for (int d = 0; d < spec->ndim; ++d) {
      shapes[k][d] = spec->dims[d] >= 0 ? spec->dims[d] : env[-spec->dims[d] - 1];
      /* symbols bound by empty inputs can be huge: a wrapped count would slip under the limit */
      if (__builtin_mul_overflow(numel, shapes[k][d], &numel)) return slow(self);
    }
    if (self->limit32 && numel >= INT32_LIMIT) return slow(self);
  }
  void* stream = NULL;
  if (stream_arg == Py_None) {
    if (self->api->current_work_stream(self->device_type, entry->device, &stream)) return slow(self);
  } else {
    PyObject* handle = PyLong_Check(stream_arg) ? (Py_INCREF(stream_arg), stream_arg)
                                                : PyObject_CallOneArg(self->stream_handle, stream_arg);
    if (handle == NULL) return NULL;
    stream = PyLong_AsVoidPtr(handle);
    Py_DECREF(handle);
    if (stream == NULL && PyErr_Occurred()) return NULL;
  }

  for (int k = 0; k < self->n_maps; ++k) {  /* inputs' maps can fail before anything is allocated */
    const MapSpec* m = &self->maps[k];
    int64_t shape[MAX_MAP_RANK];
    uint64_t dims[MAX_MAP_RANK], strides[MAX_MAP_RANK];
    shape_of(&self->tensors[m->tensor], env, shape);
    if (!self->tensors[m->tensor].output && !map_arguments(m, data[m->tensor], shape, dims, strides))
      return slow(self);
  }

  PyObject* results[MAX_TENSORS];
  for (int k = 0; k < self->n_outputs; ++k) {
    int index = self->outputs[k];
    const TensorSpec* spec = &self->tensors[index];
    DLTensor prototype = {NULL, {self->device_type, entry->device}, spec->ndim, {spec->code, spec->bits, 1},
                          shapes[k], NULL, 0};
    DLManagedTensorVersioned* managed = NULL;
    void* object = NULL;
    if (self->api->managed_tensor_allocator(&prototype, &managed, NULL, allocation_error) || managed == NULL) {
      for (int j = 0; j < k; ++j) Py_DECREF(results[j]);
      return slow(self);
    }
    data[index] = (uint64_t)(uintptr_t)managed->dl_tensor.data + managed->dl_tensor.byte_offset;
    if (self->api->managed_tensor_to_py_object_no_sync(managed, &object)) {
      for (int j = 0; j < k; ++j) Py_DECREF(results[j]);
      return NULL;
    }
    results[k] = (PyObject*)object;
  }

  /* Encoded after the outputs (a map may describe one) and right before the launch, so no Python code
     runs in between that could use this plan and replace a cache entry in use. */
  unsigned char* maps[MAX_MAPS];
  for (int k = 0; k < self->n_maps; ++k) {
    int64_t shape[MAX_MAP_RANK];
    shape_of(&self->tensors[self->maps[k].tensor], env, shape);
    maps[k] = tensor_map(self->encode, &self->maps[k], data[self->maps[k].tensor], shape);
    if (maps[k] == NULL) {
      for (int j = 0; j < self->n_outputs; ++j) Py_DECREF(results[j]);
      return slow(self);
    }
  }
  for (int i = 0; i < self->n_params; ++i) {
    int index = self->param_index[i];
    uint64_t* slot = &slots[i];
    switch (self->param_kind[i]) {
      case PARAM_TENSOR: *(uint64_t*)slot = data[index]; break;
      case PARAM_SCALAR: *slot = scalars[index]; break;
      case PARAM_MAP: params[i] = maps[index]; continue;
      default:
        if (self->symbol_bits == 32) *(int32_t*)slot = (int32_t)env[index];
        else *(int64_t*)slot = env[index];
    }
    params[i] = slot;
  }
  int code = self->launch_kernel((void*)(intptr_t)entry->function, (unsigned)grid[0], (unsigned)grid[1],
                                 (unsigned)grid[2], self->block[0], self->block[1], self->block[2],
                                 (unsigned)shared, stream, params, NULL);
  if (code) {
    PyObject* failed = PyObject_CallFunction(self->launch_failed, "i(LLL)L", code, (long long)grid[0],
                                             (long long)grid[1], (long long)grid[2], (long long)shared);
    Py_XDECREF(failed);
    for (int k = 0; k < self->n_outputs; ++k) Py_DECREF(results[k]);
    if (failed != NULL) PyErr_SetString(PyExc_RuntimeError, "launch_failed returned instead of raising");
    return NULL;
  }
  if (self->n_outputs == 0) Py_RETURN_NONE;
  if (self->n_outputs == 1) return results[0];
  PyObject* tuple = PyTuple_New(self->n_outputs);
  if (tuple == NULL) {
    for (int k = 0; k < self->n_outputs; ++k) Py_DECREF(results[k]);
    return NULL;
  }
  for (int k = 0; k < self->n_outputs; ++k) PyTuple_SET_ITEM(tuple, k, results[k]);
  return tuple;
}

/* evaluate_program(words: bytes, env: tuple[int, ...]) -> int | None: one program as the plan
   runs it (None where the plan would answer `slow`); for tests and debugging. */
static PyObject* evaluate_program(PyObject* self, PyObject* args) {
  Py_buffer words;
  PyObject* env_tuple;
  if (!PyArg_ParseTuple(args, "y*O!", &words, &PyTuple_Type, &env_tuple)) return NULL;
  PyObject* result = NULL;
  int64_t env[MAX_ENV];
  Py_ssize_t count = words.len / (Py_ssize_t)sizeof(int64_t);
  if (words.len % sizeof(int64_t) || count < 1 || ((const int64_t*)words.buf)[0] != count - 1 ||
      !validate_program((const int64_t*)words.buf, MAX_ENV) || PyTuple_GET_SIZE(env_tuple) > MAX_ENV) {
    PyErr_SetString(PyExc_ValueError, "not a valid program (length, ops...) or too many env values");
    goto done;
  }
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(env_tuple); ++i) {
    env[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(env_tuple, i));
    if (env[i] == -1 && PyErr_Occurred()) goto done;
  }
  const int64_t* program = (const int64_t*)words.buf;
  if (!validate_program(program, PyTuple_GET_SIZE(env_tuple))) {
    PyErr_SetString(PyExc_ValueError, "the program loads past the env");
    goto done;
  }
  int64_t value;
  if (evaluate(program, env, &value)) result = PyLong_FromLongLong(value);
  else { Py_INCREF(Py_None); result = Py_None; }
done:
  PyBuffer_Release(&words);
  return result;
}

static PyMethodDef plan_methods[] = {
  {"call", (PyCFunction)(void (*)(void))plan_call, METH_FASTCALL,
   "call(args, stream) -> the outputs, or the `slow` object when the general path must take the call"},
  {"register", (PyCFunction)plan_register, METH_VARARGS,
   "register(context, function, device, max_dynamic_shared): allow launches in a CUDA context"},
  {"registered", (PyCFunction)plan_registered, METH_O, "registered(context) -> bool"},
  {NULL, NULL, 0, NULL},
};

static PyTypeObject CallPlanType = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "_tilemlir_launch.CallPlan",
  .tp_basicsize = sizeof(CallPlan),
  .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
  .tp_doc = "A kernel's checked call and launch, compiled from its signature (see native_call.py)",
  .tp_new = PyType_GenericNew,
  .tp_init = (initproc)plan_init,
  .tp_dealloc = (destructor)plan_dealloc,
  .tp_traverse = (traverseproc)plan_traverse,
  .tp_clear = (inquiry)plan_clear,
  .tp_free = PyObject_GC_Del,
  .tp_methods = plan_methods,
};

static PyMethodDef methods[] = {
  {"current_context", current_context, METH_O, "the current CUcontext as an int (0: none)"},
  {"launch", (PyCFunction)(void (*)(void))launch, METH_FASTCALL, "cuLaunchKernel; returns the CUresult"},
  {"evaluate_program", evaluate_program, METH_VARARGS, "evaluate_program(words, env) -> int or None"},
  {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_tilemlir_launch", NULL, -1, methods};

PyMODINIT_FUNC PyInit__tilemlir_launch(void) {
  if (PyType_Ready(&CallPlanType) < 0) return NULL;
  PyObject* m = PyModule_Create(&module);
  if (m == NULL) return NULL;
  Py_INCREF(&CallPlanType);
  if (PyModule_AddObject(m, "CallPlan", (PyObject*)&CallPlanType) < 0) {
    Py_DECREF(&CallPlanType);
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
