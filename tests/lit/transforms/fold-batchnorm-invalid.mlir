// RUN: vknn-opt %s -p fold-batchnorm --verify-diagnostics | FileCheck %s

// Folding needs 1/sqrt(variance + epsilon): a model whose variance makes that
// non-positive is reported by node instead of producing NaN weights.
// CHECK: batchnorm 'bn': variance + epsilon must be > 0, channel 1 has -1
func.func @negative(%x: tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %w = vx.constant dense<1.0> : tensor<2x2x1x1xf32>
  %c = vx.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.name = "conv"} : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %p = vx.constant dense<1.0> : tensor<2xf32>
  %v = vx.constant dense<[1.0, -1.0]> : tensor<2xf32>
  %y = vx.batchnorm %c, %p, %p, %p, %v {epsilon = 0.0 : f32, onnx.name = "bn"} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  func.return %y : tensor<1x2x3x3xf32>
}
