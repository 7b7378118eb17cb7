func.func @f() attributes {test.remark = "unexpected one"} {
  // expected-remark @+1 {{never produced}}
  %0 = arith.constant 1 : i32
  // expected-error @+1 {{kind differs}}
  %1 = arith.constant {test.remark = "kind differs"} 2 : i32
  return
}
// -----
func.func @g() {
  %0 = arith.constant {test.error = "surprise"} 1 : i32
  // expected-error @-1 {{not the surprise}}
  return
}
