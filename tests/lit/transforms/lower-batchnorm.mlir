// RUN: vknn-opt %s --split-input-file -p lower-batchnorm | FileCheck %s

// CHECK-LABEL: func.func @lower
// CHECK-SAME: (%[[X:.*]]: tensor<1x2x3x3xf32>)
// CHECK: %[[A:.*]] = vx.constant {{.*}}dense<2.000000e+00> : tensor<2x1x1xf32>
// CHECK: %[[B:.*]] = vx.constant {{.*}}dense<-1.000000e+00> : tensor<2x1x1xf32>
// CHECK: %[[M:.*]] = vx.binary mul %[[X]], %[[A]]
// CHECK: vx.binary add %[[M]], %[[B]]
// CHECK-NOT: vx.batchnorm
func.func @lower(%x: tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %s = vx.constant dense<2.0> : tensor<2xf32>
  %b = vx.constant dense<1.0> : tensor<2xf32>
  %m = vx.constant dense<1.0> : tensor<2xf32>
  %v = vx.constant dense<1.0> : tensor<2xf32>
  %y = vx.batchnorm %x, %s, %b, %m, %v {epsilon = 0.0 : f32} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  func.return %y : tensor<1x2x3x3xf32>
}

// -----

// Left alone: parameters that are not constants.
// CHECK-LABEL: func.func @dynamic
// CHECK: vx.batchnorm
func.func @dynamic(%x: tensor<1x2x3x3xf32>, %s: tensor<2xf32>) -> tensor<1x2x3x3xf32> {
  %y = vx.batchnorm %x, %s, %s, %s, %s {epsilon = 1.0e-05 : f32} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  func.return %y : tensor<1x2x3x3xf32>
}
