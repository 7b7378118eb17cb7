"""Thread-level IR -> one readable CUDA C++ translation unit and its kernel signature.

    emitted = tilemlir.emit_cuda.emit(module)             # an ir.Module after partition-threads
    emitted.source                                        # the .cu text
    emitted.signature                                     # tilemlir.runtime.KernelSignature
    tilemlir.runtime.build(emitted.source, emitted.signature, fmad=emitted.fmad)

Input: the thread-level IR of docs/ir.md — one `func.func` marked
`tile.entry` (with `tile.arg_names`, `tile.arg_dims`, `tile.symbols`),
index math before one `gpu.launch`, and inside it `scf`, `arith`, `math`,
`affine.apply`, `memref.load/store/alloca`, `vector` loads, stores and
elementwise ops, `gpu.thread_id/block_id/barrier/shuffle`, and scalar
`tile.atomic_add`. Anything else is a CompileError naming the op and its
Python line.

Output: `extern "C" __global__ void __launch_bounds__(threads) NAME(...)`
taking the tensors (`const T* __restrict__` when only read), the scalars
by value, then the symbolic dims (`int` when `index_bits` is 32, else
`long long`; NVRTC has no <stdint.h>). Tensor arguments must not overlap
(`__restrict__`). Index math is 32-bit where `index_width` proves every
index value fits in an int for the tensors the runtime then accepts (fewer
than 2**31 elements each; it rejects larger ones at launch), else 64-bit;
`index_bits` forces either (32 only where that proof holds).

Structure: `emitter.KernelEmitter` walks the launch body, holds each
value's C expression and routes each op to its statement. A statement
module (`vectors`) is a class built from one `StatementContext` (C types,
prelude, identifiers, memory, scalar ops, the line writer, the emitter's
value functions) and sees nothing else. Tensor-core statements (ldmatrix,
mma, cp.async as calls of `tl_` prelude helpers on register-array slices)
are one more such module, their ops routed to it in `emitter._HANDLERS`.

Numerics, chosen to match the IR exactly and the CPU backend bit for bit
where the math allows:
- Correctly rounded operations by default: `+ - * /` (NVRTC's default
  `-prec-div=true`), `sqrtf`, `expf`, `logf`, ...; `math.rsqrt` is
  `1.0f / sqrtf(x)`. `fast_math=True` switches to `__expf`, `__logf`,
  `__fdividef`, `rsqrtf`, `__sinf`, ... The runtime never needs
  `-use_fast_math`.
- FMA contraction: `EmittedKernel.fmad` is the `--fmad` NVRTC setting the
  kernel was written for: False by default (each `a * b + c` rounds twice,
  as in the IR, the CPU backend and DESIGN.md's "no silent contraction"),
  True under fast_math. PyTorch's and Triton's kernels are built with
  contraction on (nvcc's `--fmad=true`, Triton's `enable_fp_fusion`); for
  memory-bound kernels it costs nothing measurable. `math.fma` is always a
  fused `fmaf`.
- `arith.maximumf/minimumf` propagate NaN (PTX `max.NaN`), unlike `fmaxf`;
  `maxnumf/minnumf` are `fmaxf/fminf`.
- Truncation to fp8 rounds to nearest even without saturating (e4m3:
  overflow and inf become NaN; e5m2: inf), matching `arith.truncf` and
  PyTorch's `.to(torch.float8_e4m3fn)` bit for bit; see `prelude.py`.
  bf16/f16 use `__float2bfloat16_rn` / `__float2half_rn`.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilemlir.runtime.signature import KernelSignature


@dataclass(frozen=True)
class EmittedKernel:
    source: str
    signature: KernelSignature
    fmad: bool = False  # the NVRTC --fmad setting the source was written for
    entry_registers: int | None = None  # registers per thread the source's setmaxnreg counts assume at entry


def emit(module, *, fast_math: bool = False, index_bits: int | None = None, arch: str | None = None) -> EmittedKernel:
    """CUDA source and signature of the one kernel in a thread-level `module` (ir.Module or its op).

    `index_bits` forces 32- or 64-bit index math (32 is a CompileError where it could overflow); None
    chooses (see the module doc and `tilemlir.emit_cuda.index_width`). With `arch`
    ("sm_90a"), a block's shared memory beyond what that arch allows (`tilemlir.hardware`) is an error
    at the buffer that crosses the limit; the source does not depend on `arch`.
    Raises CompileError, located at the Python line, for anything it cannot emit."""
    from tilemlir.emit_cuda.translation_unit import emit_translation_unit

    return emit_translation_unit(module, fast_math=fast_math, index_bits=index_bits, arch=arch)


__all__ = ["EmittedKernel", "emit"]
