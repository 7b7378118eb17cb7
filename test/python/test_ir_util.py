from tilemlir.ir_util import operation, ops_named, walk_ops
from tilemlir.mlir import ir, make_context

NESTED = """
func.func @f(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    scf.for %j = %c0 to %i step %c1 {
      %s = arith.addi %i, %j : index
    }
    %t = arith.muli %i, %i : index
  }
  return
}
"""


def _function():
    module = ir.Module.parse(NESTED, make_context())
    return module, operation(module.body.operations[0])


def test_walk_ops_is_every_nested_op_in_program_order_without_the_root():
    _module, function = _function()
    names = [op.name for op in walk_ops(function)]
    assert names == ["arith.constant", "arith.constant", "scf.for", "scf.for", "arith.addi", "scf.yield",
                     "arith.muli", "scf.yield", "func.return"]


def test_walk_ops_gives_plain_operations():
    _module, function = _function()
    assert all(type(op) is ir.Operation for op in walk_ops(function))
    assert operation(function) is function


def test_ops_named_puts_inner_ops_first_and_includes_the_root():
    _module, function = _function()
    loops = ops_named(function, "scf.for")
    assert [loop.operands[1] == function.regions[0].blocks[0].arguments[0] for loop in loops] == [False, True]
    assert [op.name for op in ops_named(function, "arith.addi", "arith.muli")] == ["arith.addi", "arith.muli"]
    assert [op.name for op in ops_named(function, "func.func")] == ["func.func"]
    assert ops_named(function, "gpu.launch") == []
