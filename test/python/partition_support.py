"""Test support: take tile IR through infer-layouts, lower-tile-ops and partition-threads, then run it in simt."""

from __future__ import annotations

import numpy as np

import simt
from tilemlir.context import make_context
from tilemlir.mlir import ir
from tilemlir.pass_infra.registry import load_passes

THREAD_PIPELINE = ("infer-layouts", "lower-tile-ops", "partition-threads")


def run_passes(module: ir.Module, names=THREAD_PIPELINE) -> ir.Module:
    """Run our passes by name, checking that the IR after each one verifies and re-parses."""
    registry = load_passes()
    for name in names:
        info = registry[name]
        info.run(module.operation, info.options())
        assert module.operation.verify(), f"IR after {name} does not verify"
        module = ir.Module.parse(module.operation.get_asm(enable_debug_info=True), module.context)
    return module


def thread_level(text: str, names=THREAD_PIPELINE) -> ir.Module:
    context = make_context()
    return run_passes(ir.Module.parse(text, context), names)


def entry(module: ir.Module):
    return next(op for op in module.body.operations if "tile.entry" in op.attributes)


def _attr_list(attr) -> list:
    return [_attr_value(a) for a in attr]


def _attr_value(attr):
    if isinstance(attr, ir.ArrayAttr):
        return _attr_list(attr)
    if isinstance(attr, ir.StringAttr):
        return attr.value
    if isinstance(attr, ir.IntegerAttr):
        return attr.value
    return str(attr)


def call(module: ir.Module, inputs: list, out_idx: list[int]) -> list[np.ndarray]:
    """Run the entry function with `inputs` (the non-output parameters); outputs start poisoned."""
    func = entry(module)
    with module.context:
        names = _attr_list(func.attributes["tile.arg_names"])
        dims = _attr_list(func.attributes["tile.arg_dims"])
        types = [a.type for a in func.regions[0].blocks[0].arguments]
    outputs = {i % len(names) for i in out_idx}
    given = iter(inputs)
    args, symbols = [], {}
    for k in range(len(names)):
        if k in outputs:
            args.append(None)
            continue
        value = next(given)
        args.append(value)
        if isinstance(value, np.ndarray):
            for dim, extent in zip(dims[k], value.shape):
                if isinstance(dim, str):
                    symbols[dim] = extent
    for k in sorted(outputs):
        shape = [symbols[d] if isinstance(d, str) else d for d in dims[k]]
        dtype = simt.dtype_of(types[k].element_type)
        poison = np.nan if np.issubdtype(np.dtype(dtype), np.floating) or dtype in simt.FLOAT_LIKE else -7
        args[k] = np.full(shape, poison).astype(dtype)
    simt.run(module, ir.StringAttr(func.attributes["sym_name"]).value, args)
    return [args[k] for k in sorted(outputs)]
