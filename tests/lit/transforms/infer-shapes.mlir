// RUN: vknn-opt %s --split-input-file -p infer-shapes | FileCheck %s

// A dynamic batch axis defaults to 1, and every op result becomes static.
builtin.module attributes {onnx.opset = 13 : i64} {
  // CHECK-LABEL: func.func @main
  // CHECK-SAME: (%x: tensor<1x3x8x8xf32> {{.*}}) -> tensor<1x4x4x4xf32>
  func.func @main(%x: tensor<?x3x8x8xf32> {onnx.name = "x", onnx.dim_params = ["N", "", "", ""]}) -> tensor<*xf32> {
    %w = onnx.Constant() {value = dense<0.5> : tensor<4x3x3x3xf32>, onnx.name = "w"} : () -> tensor<4x3x3x3xf32>
    // CHECK: onnx.Conv({{.*}} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32>
    %c = onnx.Conv(%x, %w) {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>, onnx.name = "conv"} : (tensor<?x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<*xf32>
    // CHECK: onnx.Relu({{.*}} : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
    %r = onnx.Relu(%c) {onnx.name = "relu"} : (tensor<*xf32>) -> tensor<*xf32>
    func.return %r : tensor<*xf32>
  }
}

// -----

// Data-dependent shapes resolve through constants (Reshape's shape operand).
builtin.module attributes {onnx.opset = 13 : i64} {
  // CHECK-LABEL: func.func @reshape
  func.func @reshape(%x: tensor<1x4x4x4xf32> {onnx.name = "x"}) -> tensor<*xf32> {
    %s = onnx.Constant() {value = dense<[1, -1]> : tensor<2xi64>, onnx.name = "s"} : () -> tensor<2xi64>
    // CHECK: onnx.Reshape({{.*}} : (tensor<1x4x4x4xf32>, tensor<2xi64>) -> tensor<1x64xf32>
    %y = onnx.Reshape(%x, %s) {onnx.name = "flat"} : (tensor<1x4x4x4xf32>, tensor<2xi64>) -> tensor<*xf32>
    func.return %y : tensor<*xf32>
  }
}

