// RUN: vknn-opt %s --split-input-file -p fold-nan-guard,dce | FileCheck %s

// The dynamo exporter's guard after an attention softmax folds into it.

// CHECK-LABEL: func.func @guard
// CHECK-SAME: (%[[X:.*]]: tensor<1x2x8x8xf32>)
// CHECK-NEXT: %[[P:.*]] = vx.softmax %[[X]] {onnx.name = "sm", vx.fused_names = ["isnan", "where"], axis = 3 : i64, zero_nan = true} : tensor<1x2x8x8xf32> -> tensor<1x2x8x8xf32>
// CHECK-NEXT: func.return %[[P]]
builtin.module {
  func.func @guard(%x: tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32> {
    %zero = vx.constant {onnx.name = "zero"} dense<0.0> : tensor<f32>
    %p = vx.softmax %x {onnx.name = "sm", axis = 3 : i64} : tensor<1x2x8x8xf32> -> tensor<1x2x8x8xf32>
    %n = vx.float_test "nan" %p {onnx.name = "isnan"} : tensor<1x2x8x8xf32> -> tensor<1x2x8x8xi1>
    %y = vx.select %n, %zero, %p {onnx.name = "where"} : (tensor<1x2x8x8xi1>, tensor<f32>, tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
    func.return %y : tensor<1x2x8x8xf32>
  }
}

// -----

// Left alone: a nonzero replacement, an inf test, the softmax as the true
// value, a log-softmax.

// CHECK-LABEL: func.func @not_guards
// CHECK-NOT: zero_nan
// CHECK-COUNT-4: vx.select
// CHECK-NOT: zero_nan
builtin.module {
  func.func @not_guards(%x: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>) {
    %zero = vx.constant dense<0.0> : tensor<f32>
    %one = vx.constant dense<1.0> : tensor<f32>
    %p = vx.softmax %x {axis = 1 : i64} : tensor<2x8xf32> -> tensor<2x8xf32>
    %n = vx.float_test "nan" %p : tensor<2x8xf32> -> tensor<2x8xi1>
    %a = vx.select %n, %one, %p : (tensor<2x8xi1>, tensor<f32>, tensor<2x8xf32>) -> tensor<2x8xf32>
    %i = vx.float_test "inf" %p : tensor<2x8xf32> -> tensor<2x8xi1>
    %b = vx.select %i, %zero, %p : (tensor<2x8xi1>, tensor<f32>, tensor<2x8xf32>) -> tensor<2x8xf32>
    %c = vx.select %n, %p, %zero : (tensor<2x8xi1>, tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
    %l = vx.log_softmax %x {axis = 1 : i64} : tensor<2x8xf32> -> tensor<2x8xf32>
    %ln = vx.float_test "nan" %l : tensor<2x8xf32> -> tensor<2x8xi1>
    %d = vx.select %ln, %zero, %l : (tensor<2x8xi1>, tensor<f32>, tensor<2x8xf32>) -> tensor<2x8xf32>
    func.return %a, %b, %c, %d : tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>
  }
}
