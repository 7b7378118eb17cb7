"""The tensor maps a kernel function declares (`tile.tensor_maps`), named as the TMA passes add boxes.

A map is keyed by the tensor argument it describes, its box and its swizzle; the first of a tensor's maps is
`<tensor>_map`, the next `<tensor>_map_1`, and so on, skipping names the function already declares. The TMA
loads (tma-copies) and stores (tma-stores) of one tensor with one box share a map.
"""

from __future__ import annotations

from tilemlir.dialects import bulk_copy
from tilemlir.dialects.bulk_copy import TENSOR_MAPS_ATTR
from tilemlir.ir_util import fresh_name
from tilemlir.mlir import ir


class TensorMaps:
    def __init__(self, function: ir.Operation):
        self.function = function
        self.added: dict[tuple[int, tuple[int, ...], int], str] = {}

    def name(self, tensor: ir.BlockArgument, box: tuple[int, ...], swizzle: int) -> str:
        """The map of `tensor` read or written in boxes of `box` swizzled `swizzle` bytes."""
        declared = self._declared()
        for name, attr in declared.items():
            entry = ir.DictAttr(attr)
            if (ir.IntegerAttr(entry["tensor"]).value, tuple(ir.IntegerAttr(v).value for v in ir.ArrayAttr(entry["box"])),
                    ir.IntegerAttr(entry["swizzle"]).value) == (tensor.arg_number, tuple(box), swizzle):
                return name
        key = (tensor.arg_number, tuple(box), swizzle)
        if key not in self.added:
            self.added[key] = fresh_name(f"{self._arg_name(tensor.arg_number)}_map",
                                         set(self.added.values()) | set(declared))
        return self.added[key]

    def declare(self) -> None:
        """Add the maps named since the last call to the function's `tile.tensor_maps`."""
        entries = self._declared()
        for (tensor, box, swizzle), name in self.added.items():
            entries[name] = bulk_copy.tensor_map_attr(tensor, box, swizzle)
        self.function.attributes[TENSOR_MAPS_ATTR] = ir.DictAttr.get(entries)
        self.added = {}

    def _declared(self) -> dict[str, ir.Attribute]:
        if TENSOR_MAPS_ATTR not in self.function.attributes:
            return {}
        maps = ir.DictAttr(self.function.attributes[TENSOR_MAPS_ATTR])
        return {maps[i].name: maps[i].attr for i in range(len(maps))}

    def _arg_name(self, index: int) -> str:
        if "tile.arg_names" in self.function.attributes:
            names = ir.ArrayAttr(self.function.attributes["tile.arg_names"])
            if index < len(names):
                return ir.StringAttr(names[index]).value
        return f"arg{index}"
