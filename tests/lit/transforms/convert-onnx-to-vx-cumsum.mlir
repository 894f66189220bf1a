// RUN: vknn-opt %s --split-input-file -p convert-onnx-to-vx | FileCheck %s

// CumSum with a constant axis becomes vx.cum_sum with the axis normalized
// (-1 -> 1) and exclusive / reverse carried as 0/1 (absent: 0).

// CHECK-LABEL: func.func @cumsum
// CHECK-SAME: (%[[X:.*]]: tensor<2x9xi64>, %[[F:.*]]: tensor<3x4x5xf32>)
// CHECK: vx.cum_sum %[[X]] {onnx.name = "pos", axis = 1 : i64, exclusive = 0 : i64, reverse = 0 : i64} : tensor<2x9xi64> -> tensor<2x9xi64>
// CHECK: vx.cum_sum %[[F]] {onnx.name = "rev", axis = 0 : i64, exclusive = 1 : i64, reverse = 1 : i64} : tensor<3x4x5xf32> -> tensor<3x4x5xf32>
// CHECK-NOT: onnx.{{[A-Z]}}
builtin.module attributes {onnx.opset = 17 : i64} {
  func.func @cumsum(%x: tensor<2x9xi64>, %f: tensor<3x4x5xf32>) -> (tensor<2x9xi64>, tensor<3x4x5xf32>) {
    %a = onnx.Constant() {value = dense<-1> : tensor<i64>, onnx.name = "axis"} : () -> tensor<i64>
    %y = onnx.CumSum(%x, %a) {onnx.name = "pos"} : (tensor<2x9xi64>, tensor<i64>) -> tensor<2x9xi64>
    %b = onnx.Constant() {value = dense<-3> : tensor<1xi32>, onnx.name = "axis0"} : () -> tensor<1xi32>
    %z = onnx.CumSum(%f, %b) {exclusive = 1 : i64, reverse = 1 : i64, onnx.name = "rev"} : (tensor<3x4x5xf32>, tensor<1xi32>) -> tensor<3x4x5xf32>
    func.return %y, %z : tensor<2x9xi64>, tensor<3x4x5xf32>
  }
}

// -----

// An axis known only at run time stays onnx.CumSum (the CPU runs it).

// CHECK-LABEL: func.func @runtime_axis
// CHECK: onnx.CumSum
// CHECK-NOT: vx.cum_sum
builtin.module attributes {onnx.opset = 17 : i64} {
  func.func @runtime_axis(%x: tensor<2x9xf32>, %a: tensor<i64>) -> tensor<2x9xf32> {
    %y = onnx.CumSum(%x, %a) {onnx.name = "cs"} : (tensor<2x9xf32>, tensor<i64>) -> tensor<2x9xf32>
    func.return %y : tensor<2x9xf32>
  }
}
