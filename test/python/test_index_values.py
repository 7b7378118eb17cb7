"""analysis/index_values.py: index expressions evaluated at every point of a loop, against numpy."""

import numpy as np

from tilemlir.analysis.index_values import point_values
from tilemlir.ir_util import ops_named
from tilemlir.mlir import ir

SOURCE = """
func.func @f(%i: index, %j: index, %n: index) -> (index, index, index, index, index, index) {
  %c2 = arith.constant 2 : index
  %c63 = arith.constant 63 : index
  %cm3 = arith.constant -3 : index
  %a = arith.subi %c63, %i : index
  %b = arith.floordivsi %a, %c2 : index
  %c = arith.muli %b, %j : index
  %d = arith.remsi %cm3, %c2 : index
  %e = arith.divsi %cm3, %c2 : index
  %lt = arith.cmpi slt, %i, %j : index
  %s = arith.select %lt, %i, %j : index
  %m = arith.maxsi %s, %d : index
  %u = arith.addi %n, %i : index
  return %c, %d, %e, %s, %m, %u : index, index, index, index, index, index
}
"""


def test_point_values_of_arith():
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(SOURCE)
        func = ops_named(module.operation, "func.func")[0]
        i, j, _ = func.regions[0].blocks[0].arguments
        ret = ops_named(module.operation, "func.return")[0]
        rng = np.random.default_rng()
        iv, jv = rng.integers(0, 64, 50), rng.integers(0, 64, 50)
        c, d, e, s, m, u = (point_values(v, {i: iv, j: jv}) for v in ret.operands)
        assert np.array_equal(c, ((63 - iv) // 2) * jv)
        assert np.array_equal(d, np.full(50, -1)) and np.array_equal(e, np.full(50, -1))  # C truncation
        assert np.array_equal(s, np.minimum(iv, jv))
        assert np.array_equal(m, np.maximum(np.minimum(iv, jv), -1))
        assert u is None  # %n is neither known nor a constant
