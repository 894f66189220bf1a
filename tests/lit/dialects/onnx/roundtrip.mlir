// RUN: vknn-opt %s | vknn-opt | FileCheck %s
// RUN: vknn-opt %s --print-op-generic | vknn-opt | FileCheck %s

// The onnx dialect prints every operator the same way: ONNX attribute names
// in the attribute dictionary, `onnx.name` keeping the node name.

builtin.module attributes {onnx.opset = 17 : i64} {
  // CHECK-LABEL: func.func @main
  func.func @main(%x: tensor<1x3x8x8xf32> {onnx.name = "x"}) -> tensor<1x4x4x4xf32> {
    // CHECK: %[[W:.*]] = onnx.Constant() {value = dense_resource<w> : tensor<4x3x3x3xf32>, onnx.name = "w"} : () -> tensor<4x3x3x3xf32>
    %w = onnx.Constant() {value = dense_resource<w> : tensor<4x3x3x3xf32>, onnx.name = "w"} : () -> tensor<4x3x3x3xf32>
    // CHECK: %[[B:.*]] = onnx.Constant() {value = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>
    %b = onnx.Constant() {value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>, onnx.name = "b"} : () -> tensor<4xf32>
    // CHECK: %[[C:.*]] = onnx.Conv(%x, %[[W]], %[[B]]) {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>, onnx.name = "conv"}
    %c = onnx.Conv(%x, %w, %b) {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>, onnx.name = "conv"} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32>
    // CHECK: %[[N:.*]] = onnx.NoValue : none
    %none = onnx.NoValue : none
    // CHECK: %[[M:.*]] = onnx.Constant() {value = dense<6.000000e+00> : tensor<f32>
    %max = onnx.Constant() {value = dense<6.0> : tensor<f32>, onnx.name = "max"} : () -> tensor<f32>
    // CHECK: onnx.Clip(%[[C]], %[[N]], %[[M]]) {onnx.name = "clip"} : (tensor<1x4x4x4xf32>, none, tensor<f32>) -> tensor<1x4x4x4xf32>
    %y = onnx.Clip(%c, %none, %max) {onnx.name = "clip"} : (tensor<1x4x4x4xf32>, none, tensor<f32>) -> tensor<1x4x4x4xf32>
    // CHECK: onnx.custom "FancyOp"(%[[C]]) domain "com.example" {alpha = 5.000000e-01 : f32, onnx.name = "fancy"}
    %z = onnx.custom "FancyOp"(%c) domain "com.example" {alpha = 0.5 : f32, onnx.name = "fancy"} : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
    // CHECK: onnx.Softmax(%{{.*}}) {axis = -1 : i64, onnx.name = "sm"} : (tensor<1x4x4x4xf32>) -> tensor<*xf32>
    %s = onnx.Softmax(%y) {axis = -1 : i64, onnx.name = "sm"} : (tensor<1x4x4x4xf32>) -> tensor<*xf32>
    func.return %y : tensor<1x4x4x4xf32>
  }
}
