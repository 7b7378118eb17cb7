from tilemlir.context import make_context
from tilemlir.ir_util import constant_int, defining_op, enclosing, inside, operation, ops_named, root_of, walk_ops
from tilemlir.mlir import ir

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
  %yes = arith.constant true
  %seven = arith.constant 7 : i32
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
                     "arith.muli", "scf.yield", "arith.constant", "arith.constant", "func.return"]


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


def _named(function, name):
    return [op for op in walk_ops(function) if op.name == name]


def test_defining_op_is_the_producer_or_none_for_a_block_argument():
    _module, function = _function()
    add = _named(function, "arith.addi")[0]
    inner_loop = _named(function, "scf.for")[1]
    assert defining_op(add.results[0]) == add
    assert type(defining_op(add.results[0])) is ir.Operation
    assert defining_op(add.operands[1]) is None  # %j, the inner loop's induction variable
    assert defining_op(inner_loop.operands[0]).name == "arith.constant"


def test_constant_int_reads_integer_and_index_constants_only():
    _module, function = _function()
    c0, c1, yes, seven = _named(function, "arith.constant")
    assert [constant_int(op.results[0]) for op in (c0, c1, seven)] == [0, 1, 7]
    assert constant_int(yes.results[0]) is None  # i1 `true` is a bool attribute
    assert constant_int(_named(function, "arith.addi")[0].results[0]) is None
    assert constant_int(function.regions[0].blocks[0].arguments[0]) is None


def test_enclosing_finds_the_nearest_op_of_a_name_and_ends_at_stop():
    _module, function = _function()
    add = _named(function, "arith.addi")[0]
    outer, inner = _named(function, "scf.for")
    assert enclosing(add, "scf.for") == inner
    assert enclosing(inner, "scf.for") == outer
    assert enclosing(add, "func.func") == function
    assert enclosing(add, "builtin.module").name == "builtin.module"
    assert enclosing(add, "builtin.module", stop="func.func") is None
    assert enclosing(add, "func.func", stop="scf.for") is None
    assert enclosing(add, "scf.for", stop="func.func") == inner
    assert enclosing(outer, "gpu.launch") is None


def test_inside_and_root_of():
    module, function = _function()
    add = _named(function, "arith.addi")[0]
    outer, inner = _named(function, "scf.for")
    assert inside(add, inner) and inside(add, outer) and inside(add, add)
    assert not inside(outer, inner)
    assert root_of(add) == module.operation
    assert root_of(module.operation) == module.operation
