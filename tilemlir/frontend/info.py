"""`KernelInfo`: what the frontend knows about a kernel's signature, for the driver and runtime.

Plain data, no MLIR: the runtime can build a launch signature from it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ParamInfo:
    """One Python parameter of the kernel, in order.

    `kind` is "tensor" or "scalar"; `dtype` the canonical language name
    ("bfloat16", "float8_e4m3", "uint8", ...); `shape` a tensor's dims as
    ints and symbol names (() for scalars).
    """

    name: str
    kind: str
    dtype: str
    shape: tuple = ()

    @property
    def is_tensor(self) -> bool:
        return self.kind == "tensor"


@dataclass(frozen=True)
class SymbolInfo:
    """A symbolic dim and where its value comes from: dim `dim` of parameter `param` (the first tensor with it)."""

    name: str
    param: int
    dim: int


@dataclass(frozen=True)
class KernelInfo:
    """The signature-level facts of one compiled kernel function.

    `grid` holds one Python expression per grid dim over symbol and scalar
    parameter names (e.g. "(-(-M // 4))"), or None for a dim the frontend
    could not express that way (the IR always has it). `threads` is the block
    size. `assumes` are the `T.assume` conditions as Python expressions over
    the same names. `out_idx` lists the parameters the runtime allocates and
    returns (normalised to non-negative indices). `source_file` and
    `source_line` locate the `def`.
    """

    name: str
    params: tuple[ParamInfo, ...]
    symbols: tuple[SymbolInfo, ...]
    grid: tuple[str | None, ...]
    threads: int
    assumes: tuple[str, ...] = ()
    out_idx: tuple[int, ...] = ()
    source_file: str = ""
    source_line: int = 0

    def param(self, name: str) -> ParamInfo:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)
