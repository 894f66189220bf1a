// RUN: not vknn-opt %s -p 'convert-onnx-to-vx{strict=true}' 2>&1 | FileCheck %s
// RUN: vknn-opt %s -p 'convert-onnx-to-vx{strict=false}' | FileCheck %s --check-prefix=PARTIAL

// Strict mode names every op it could not convert, with its node and why.

// CHECK: vknn-opt: error: convert-onnx-to-vx: 3 op(s) have no vx lowering:
// CHECK-SAME: Reshape 'dyn_reshape' (input 1 is not a constant)
// CHECK-SAME: NonZero 'nz' (no lowering)
// CHECK-SAME: Foo 'foo' (custom op of domain 'com.example')

// PARTIAL: onnx.Reshape
// PARTIAL: onnx.NonZero
// PARTIAL: onnx.custom "Foo"
// PARTIAL: vx.unary relu
builtin.module attributes {onnx.opset = 13 : i64} {
  func.func @main(%x: tensor<2x3xf32>, %s: tensor<2xi64>) -> (tensor<3x2xf32>, tensor<2x?xi64>, tensor<2x3xf32>) {
    %0 = onnx.Reshape(%x, %s) {onnx.name = "dyn_reshape"} : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<3x2xf32>
    %1 = onnx.NonZero(%x) {onnx.name = "nz"} : (tensor<2x3xf32>) -> tensor<2x?xi64>
    %2 = onnx.custom "Foo"(%x) domain "com.example" {onnx.name = "foo"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %3 = onnx.Relu(%2) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    func.return %0, %1, %3 : tensor<3x2xf32>, tensor<2x?xi64>, tensor<2x3xf32>
  }
}
