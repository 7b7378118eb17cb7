"""TileLang's `pass_configs={PassConfigKey.X: value}` for `@tilemlir.jit`, as tilemlir compile options.

A TileLang kernel passes its compiler switches as `pass_configs`. Every key
TileLang 0.1.x defines is accepted here (`PassConfigKey` carries TileLang's
names and string values, so both `PassConfigKey.TL_ENABLE_FAST_MATH` and
"tl.enable_fast_math" work). A key with a meaning in tilemlir becomes a
compile option (`options_from_pass_configs`); a key for a TileLang
transformation tilemlir does not have is accepted and ignored, with one
debug line on the `tilemlir.pass_configs` logger saying why; any other key is
an error naming it. docs/tilelang.md lists the keys.
"""

from __future__ import annotations

import logging
from enum import Enum
from typing import Any

from tilemlir.diagnostics import CompileError, SourceLocation

log = logging.getLogger("tilemlir.pass_configs")


class PassConfigKey(str, Enum):
    """TileLang's pass-config keys (names and values as TileLang spells them)."""

    TL_SIMPLIFY = "tl.Simplify"
    TL_DISABLE_BUFFER_INIT_CHECK = "tl.disable_buffer_init_check"
    TL_DISABLE_DATA_RACE_CHECK = "tl.disable_data_race_check"
    TL_DISABLE_PRELOWER_SEMANTIC_CHECK = "tl.disable_prelower_semantic_check"
    TL_DISABLE_WARP_SPECIALIZED = "tl.disable_warp_specialized"
    TL_ENABLE_AUTO_WARP_SPECIALIZATION = "tl.enable_auto_warp_specialization"
    TL_ENABLE_FAST_MATH = "tl.enable_fast_math"
    TL_DISABLE_FAST_MATH = "tl.disable_fast_math"
    TL_PTXAS_REGISTER_USAGE_LEVEL = "tl.ptxas_register_usage_level"
    TL_ENABLE_PTXAS_VERBOSE_OUTPUT = "tl.enable_ptxas_verbose_output"
    TL_DEVICE_COMPILE_FLAGS = "tl.device_compile_flags"
    TL_EMIT_LINE_DIRECTIVES = "tl.emit_line_directives"
    TL_CONFIG_INDEX_BITWIDTH = "tl.config_index_bitwidth"
    TL_DISABLE_TMA_LOWER = "tl.disable_tma_lower"
    TL_DISABLE_SAFE_MEMORY_ACCESS = "tl.disable_safe_memory_legalize"
    TL_DISABLE_VECTORIZE_256 = "tl.disable_vectorize_256"
    TL_DISABLE_DYNAMIC_TAIL_SPLIT = "tl.disable_dynamic_tail_split"
    TL_DYNAMIC_ALIGNMENT = "tl.dynamic_alignment"
    TL_ENABLE_ASYNC_COPY = "tl.enable_async_copy"
    TL_ENABLE_LOWER_LDGSTG = "tl.enable_lower_ldgstg"
    TL_ENABLE_LOWER_LDGSTG_PREDICATED = "tl.enable_lower_ldgstg_predicated"
    TL_ENABLE_VECTORIZE_PLANNER_VERBOSE = "tl.enable_vectorize_planner_verbose"
    TL_DISABLE_WGMMA = "tl.disable_wgmma"
    TL_DEBUG_MERGE_SHARED_MEMORY_ALLOCATIONS = "tl.debug_merge_shared_memory_allocations"
    TL_ENABLE_AGGRESSIVE_SHARED_MEMORY_MERGE = "tl.enable_aggressive_shared_memory_merge"
    TL_DISABLE_SHARED_MEMORY_REUSE = "tl.disable_shared_memory_reuse"
    TL_DISABLE_SHUFFLE_ELECT = "tl.disable_shuffle_elect"
    TL_DISABLE_LOOP_UNSWITCHING = "tl.disable_loop_unswitching"
    TL_LOOP_UNSWITCHING_ALLOW_NON_TRIVIAL_ELSE = "tl.loop_unswitching_allow_non_trivial_else"
    TL_DISABLE_THREAD_STORAGE_SYNC = "tl.disable_thread_storage_sync"
    TL_FORCE_LET_INLINE = "tl.force_let_inline"
    TL_AST_PRINT_ENABLE = "tl.ast_print_enable"
    TL_LAYOUT_VISUALIZATION_ENABLE = "tl.layout_visualization_enable"
    TL_LAYOUT_VISUALIZATION_FORMATS = "tl.layout_visualization_formats"
    TL_STORAGE_REWRITE_DETECT_INPLACE = "tl.storage_rewrite_detect_inplace"
    TL_DISABLE_OUT_OF_BOUND_WARNING = "tl.disable_out_of_bound_warning"
    TL_ENABLE_DUMP_IR = "tl.enable_dump_ir"
    TL_DUMP_IR_DIR = "tl.dump_ir_path"
    TIR_ENABLE_EQUIV_TERMS_IN_CSE = "tir.enable_equiv_terms_in_cse_tir"
    TIR_DISABLE_CSE = "tir.disable_cse_tir"
    TIR_SIMPLIFY = "tir.Simplify"
    TIR_DISABLE_STORAGE_REWRITE = "tir.disable_storage_rewrite"
    TIR_DISABLE_VECTORIZE = "tir.disable_vectorize"
    TIR_USE_ASYNC_COPY = "tir.use_async_copy"
    TIR_ENABLE_DEBUG = "tir.enable_debug"
    TIR_MERGE_STATIC_SMEM = "tir.merge_static_smem"
    TIR_ADD_LOWER_PASS = "tir.add_lower_pass"
    TIR_NOALIAS = "tir.noalias"
    CUDA_KERNELS_OUTPUT_DIR = "cuda.kernels_output_dir"


# Why a key changes nothing here, by key (keys not listed have a meaning: _HONOURED).
_NO_WARP_SPECIALIZATION = "tilemlir does not warp-specialize kernels"
_NO_ASYNC = "tilemlir picks cp.async copies itself (T.Pipelined)"
_OWN_VECTORIZER = "tilemlir's emitter chooses vector widths itself"
_OWN_SIMPLIFIER = "tilemlir has its own simplification, not TVM's"
_OWN_SHARED_PLAN = "tilemlir plans shared memory itself"
_OWN_CHECKS = "tilemlir's checks are its own (the CPU backend checks every access)"
_DEBUG_OUTPUT = "use TILEMLIR_DUMP_DIR to see the IR and CUDA tilemlir produces"
_NVRTC_FLAGS = "tilemlir passes its own NVRTC flags"
_SYNC = "tilemlir always inserts the barriers shared memory needs"

_IGNORED: dict[str, str] = {
    "tl.Simplify": _OWN_SIMPLIFIER,
    "tl.disable_buffer_init_check": _OWN_CHECKS,
    "tl.disable_data_race_check": _OWN_CHECKS,
    "tl.disable_prelower_semantic_check": _OWN_CHECKS,
    "tl.disable_warp_specialized": _NO_WARP_SPECIALIZATION,
    "tl.enable_auto_warp_specialization": _NO_WARP_SPECIALIZATION,
    "tl.ptxas_register_usage_level": _NVRTC_FLAGS,
    "tl.enable_ptxas_verbose_output": _NVRTC_FLAGS,
    "tl.device_compile_flags": _NVRTC_FLAGS,
    "tl.emit_line_directives": "tilemlir's CUDA carries no #line directives",
    "tl.disable_safe_memory_legalize": "tilemlir always guards out-of-bounds tile accesses",
    "tl.disable_vectorize_256": _OWN_VECTORIZER,
    "tl.disable_dynamic_tail_split": _OWN_VECTORIZER,
    "tl.dynamic_alignment": _OWN_VECTORIZER,
    "tl.enable_async_copy": _NO_ASYNC,
    "tl.enable_lower_ldgstg": _OWN_VECTORIZER,
    "tl.enable_lower_ldgstg_predicated": _OWN_VECTORIZER,
    "tl.enable_vectorize_planner_verbose": _DEBUG_OUTPUT,
    "tl.debug_merge_shared_memory_allocations": _OWN_SHARED_PLAN,
    "tl.enable_aggressive_shared_memory_merge": _OWN_SHARED_PLAN,
    "tl.disable_shared_memory_reuse": _OWN_SHARED_PLAN,
    "tl.disable_shuffle_elect": "tilemlir does not elect a thread by warp shuffle",
    "tl.disable_loop_unswitching": _OWN_SIMPLIFIER,
    "tl.loop_unswitching_allow_non_trivial_else": _OWN_SIMPLIFIER,
    "tl.disable_thread_storage_sync": _SYNC,
    "tl.force_let_inline": _OWN_SIMPLIFIER,
    "tl.ast_print_enable": _DEBUG_OUTPUT,
    "tl.layout_visualization_enable": _DEBUG_OUTPUT,
    "tl.layout_visualization_formats": _DEBUG_OUTPUT,
    "tl.storage_rewrite_detect_inplace": _OWN_SHARED_PLAN,
    "tl.disable_out_of_bound_warning": _OWN_CHECKS,
    "tl.enable_dump_ir": _DEBUG_OUTPUT,
    "tl.dump_ir_path": _DEBUG_OUTPUT,
    "tir.enable_equiv_terms_in_cse_tir": _OWN_SIMPLIFIER,
    "tir.disable_cse_tir": _OWN_SIMPLIFIER,
    "tir.Simplify": _OWN_SIMPLIFIER,
    "tir.disable_storage_rewrite": _OWN_SHARED_PLAN,
    "tir.disable_vectorize": _OWN_VECTORIZER,
    "tir.use_async_copy": _NO_ASYNC,
    "tir.enable_debug": _DEBUG_OUTPUT,
    "tir.merge_static_smem": _OWN_SHARED_PLAN,
    "tir.add_lower_pass": "tilemlir's pipelines are its own (tilemlir.pipeline)",
    "tir.noalias": "tilemlir's CUDA marks tensor parameters __restrict__ itself",
    "cuda.kernels_output_dir": _DEBUG_OUTPUT,
}
# Later TileLang versions spell the TIR keys `tirx.`; both spellings are TileLang's.
_IGNORED.update({"tirx." + key[len("tir."):]: why for key, why in list(_IGNORED.items()) if key.startswith("tir.")})


def _flag(key: str, value: Any) -> bool:
    if type(value) is not bool:
        raise ValueError(f"pass config '{key}' takes True or False, got {value!r}")
    return value


def _enable_fast_math(key: str, value: Any) -> dict:
    return {"fast_math": _flag(key, value)}


def _disable_fast_math(key: str, value: Any) -> dict:
    # True asks for exact math, tilemlir's default; False (TileLang's old default) turns fast math on.
    return {"fast_math": not _flag(key, value)}


def _index_bitwidth(key: str, value: Any) -> dict:
    if type(value) is not int or value not in (32, 64):
        raise ValueError(f"pass config '{key}' takes 32 or 64, got {value!r}")
    # 32: TileLang computes indices in int32; tilemlir does so wherever 32 bits are proven exact and
    # widens the rest, the same results without the overflow. 64: 64-bit index math everywhere.
    return {} if value == 32 else {"index_bits": 64}


def _disable_tma_lower(key: str, value: Any) -> dict:
    # True: no TMA (tma=False). False leaves the default: TMA is opt-in (tma=True) until a GPU run validates it,
    # and a TileLang kernel saying False may be built for a GPU without TMA.
    return {"tma": False} if _flag(key, value) else {}


def _disable_wgmma(key: str, value: Any) -> dict:
    # TileLang falls back to mma.sync; False leaves the choice to tilemlir's default (the option tensor_cores).
    return {"tensor_cores": "mma_sync"} if _flag(key, value) else {}


_HONOURED = {
    "tl.enable_fast_math": _enable_fast_math,
    "tl.disable_tma_lower": _disable_tma_lower,
    "tl.disable_wgmma": _disable_wgmma,
    "tl.disable_fast_math": _disable_fast_math,
    "tl.config_index_bitwidth": _index_bitwidth,
}
KNOWN_KEYS = frozenset(_HONOURED) | frozenset(_IGNORED)


def _key_name(key: Any) -> str:
    return key.value if isinstance(key, PassConfigKey) else key


def options_from_pass_configs(pass_configs: Any, where: SourceLocation | None = None) -> dict[str, Any]:
    """The compile options that `pass_configs` (a dict of TileLang keys to values) asks for.

    Raises CompileError, located at `where`, for a key TileLang does not define or a value a
    honoured key does not take."""
    if pass_configs is None:
        return {}
    if not isinstance(pass_configs, dict):
        raise CompileError(f"pass_configs must be a dict of TileLang PassConfigKey names to values, "
                           f"got {type(pass_configs).__name__}", where)
    options: dict[str, Any] = {}
    for key, value in pass_configs.items():
        name = _key_name(key)
        if not isinstance(name, str) or name not in KNOWN_KEYS:
            raise CompileError(f"unknown pass config key {name!r}: TileLang's PassConfigKey defines no such key "
                               "(see docs/tilelang.md for the keys tilemlir accepts)", where)
        if name in _IGNORED:
            log.debug("pass config %s=%r ignored: %s", name, value, _IGNORED[name])
            continue
        try:
            options.update(_HONOURED[name](name, value))
        except ValueError as exc:
            raise CompileError(str(exc), where) from None
    return options


__all__ = ["PassConfigKey", "KNOWN_KEYS", "options_from_pass_configs"]
