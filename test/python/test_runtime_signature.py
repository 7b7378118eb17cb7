"""KernelSignature: JSON round trip, derived views, and rejection of inconsistent signatures."""

import dataclasses
import json

import pytest

from tilemlir.runtime.signature import KernelSignature, ScalarParam, SignatureError, TensorParam


def rmsnorm(**changes):
    fields = dict(
        name="rmsnorm",
        params=(TensorParam("X", "bfloat16", ("M", 4096), 16, written=False),
                TensorParam("W", "bfloat16", (4096,), 16, written=False),
                TensorParam("Y", "bfloat16", ("M", 4096), 16), ScalarParam("eps", "float32")),
        symbols=("M",),
        grid=("(M + 3) // 4", "1", "1"),
        block=(128, 1, 1),
        cuda_params=("X", "W", "Y", "eps", "M"),
        shared_bytes="4 * 128",
        assumes=("M % 4 == 0", "eps > 0"),
        out_idx=(2,),
        index_bits=32,
    )
    fields.update(changes)
    return KernelSignature(**fields)


def test_json_round_trip_preserves_every_field():
    sig = rmsnorm()
    text = sig.to_json()
    data = json.loads(text)
    assert data["version"] == 1
    assert data["params"][0] == {"kind": "tensor", "name": "X", "dtype": "bfloat16", "shape": ["M", 4096], "align": 16,
                                 "written": False}
    assert data["params"][3] == {"kind": "scalar", "name": "eps", "dtype": "float32"}
    assert data["grid"] == ["(M + 3) // 4", "1", "1"] and data["block"] == [128, 1, 1]
    assert data["shared_bytes"] == "4 * 128" and data["index_bits"] == 32 and data["out_idx"] == [2]
    back = KernelSignature.from_json(text)
    assert back == sig
    assert [dataclasses.astuple(p) for p in back.params] == [dataclasses.astuple(p) for p in sig.params]
    assert back.exprs.grid_fns[0]([10, 1.0]) == 3


def test_written_round_trips_and_old_json_without_it_counts_as_written():
    sig = rmsnorm()
    assert [p.written for p in KernelSignature.from_json(sig.to_json()).params[:3]] == [False, False, True]
    data = sig.to_dict()
    for param in data["params"]:
        param.pop("written", None)
    old = KernelSignature.from_dict(data)
    assert [p.written for p in old.params[:3]] == [True, True, True]
    assert old.params[0] == dataclasses.replace(sig.params[0], written=True)
    data["params"][0]["written"] = "no"
    with pytest.raises(SignatureError, match="param 'X' written must be true or false, got 'no'"):
        KernelSignature.from_dict(data)


def test_views_and_defaults():
    sig = rmsnorm()
    assert sig.input_indices == (0, 1, 3)
    assert sig.env_names == ("M", "eps")
    assert TensorParam("A", "float32", (3,)).align == 4
    assert TensorParam("A", "float8_e4m3", (3,)).align == 1
    assert rmsnorm(grid=(5, 1, 1)).grid == ("5", "1", "1")
    assert rmsnorm().exprs.constant_shared == 512
    assert rmsnorm().exprs.constant_grid is None
    assert rmsnorm(grid=("2", "3", "1")).exprs.constant_grid == (2, 3, 1)


@pytest.mark.parametrize("changes, message", [
    ({"name": "not a name"}, "kernel name 'not a name' is not an identifier"),
    ({"symbols": ("M", "X")}, "names used twice among params and symbols: X"),
    ({"params": (TensorParam("X", "bfloat17", ("M",)),)}, "unknown dtype 'bfloat17'"),
    ({"params": (TensorParam("X", "float32", ("Q",)),)}, "dim 'Q' is not a declared symbol"),
    ({"params": (TensorParam("X", "float32", ("M",), 6),)}, "align 6 must be a power of two >= 4"),
    ({"params": (TensorParam("X", "float32", ("M",), 2),)}, "align 2 must be a power of two >= 4"),
    ({"params": (TensorParam("X", "float32", ("M",)), ScalarParam("s", "float8_e4m3"))},
     "scalar param 's' cannot have dtype float8_e4m3"),
    ({"out_idx": (0, 2)}, "symbols M appear in no input tensor's shape"),
    ({"out_idx": (3,)}, "out_idx entry 3 is not the index of a tensor param"),
    ({"out_idx": (2, 2)}, "repeats an index"),
    ({"cuda_params": ("X", "W", "Y", "eps", "M", "M")}, "must name distinct params or symbols"),
    ({"cuda_params": ("X", "W", "Y", "M")}, "params eps are not passed to the CUDA kernel"),
    ({"cuda_params": ("X", "W", "Y", "eps", "Z")}, "must name distinct params or symbols"),
    ({"grid": ("M // 4", "1")}, "grid and block need 3 entries each"),
    ({"block": (2048, 1, 1)}, "at most 1024 threads"),
    ({"grid": ("M / 4", "1", "1")}, "operator Div is not allowed"),
    ({"grid": ("N // 4", "1", "1")}, "unknown name(s) N"),
    ({"assumes": ("open('x')",)}, "call open(...) is not allowed"),
    ({"shared_bytes": "M ** 2"}, "operator Pow is not allowed"),
    ({"index_bits": 16}, "index_bits must be 32 or 64"),
])
def test_rejects_inconsistent_signatures(changes, message):
    with pytest.raises(SignatureError) as info:
        rmsnorm(**changes)
    assert message in str(info.value)


def test_from_json_reports_schema_problems():
    data = rmsnorm().to_dict()
    with pytest.raises(SignatureError, match="schema version 2 is not supported"):
        KernelSignature.from_dict(dict(data, version=2))
    with pytest.raises(SignatureError, match="lacks the required key 'grid'"):
        KernelSignature.from_dict({k: v for k, v in data.items() if k != "grid"})
    with pytest.raises(SignatureError, match="kind must be 'tensor' or 'scalar'"):
        KernelSignature.from_dict(dict(data, params=[{"kind": "matrix", "name": "X"}]))
    with pytest.raises(SignatureError, match="not valid JSON"):
        KernelSignature.from_json("{")
