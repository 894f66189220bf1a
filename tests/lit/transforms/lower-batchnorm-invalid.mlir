// RUN: vknn-opt %s -p lower-batchnorm --verify-diagnostics | FileCheck %s

// CHECK: batchnorm 'bn': variance + epsilon must be > 0, channel 1 has -1
func.func @negative(%x: tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %p = vx.constant dense<1.0> : tensor<2xf32>
  %v = vx.constant dense<[1.0, -1.0]> : tensor<2xf32>
  %y = vx.batchnorm %x, %p, %p, %p, %v {epsilon = 0.0 : f32, onnx.name = "bn"} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  func.return %y : tensor<1x2x3x3xf32>
}
