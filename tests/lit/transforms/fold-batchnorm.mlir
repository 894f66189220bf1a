// RUN: vknn-opt %s --split-input-file -p fold-batchnorm | FileCheck %s

// A BN after a constant-weight conv folds into its weights and bias.
// CHECK-LABEL: func.func @fold
// CHECK-NOT: vx.batchnorm
// CHECK: %[[W:.*]] = vx.constant {{.*}}dense<2.000000e+00> : tensor<2x1x1x1xf32>
// CHECK: %[[B:.*]] = vx.constant {{.*}}dense<1.000000e+00> : tensor<2xf32>
// CHECK: vx.conv %{{.*}}, %[[W]], %[[B]]
func.func @fold(%x: tensor<1x1x2x2xf32>) -> tensor<1x2x2x2xf32> {
  %w = vx.constant dense<1.0> : tensor<2x1x1x1xf32>
  %c = vx.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x2x2xf32>
  %s = vx.constant dense<2.0> : tensor<2xf32>
  %b = vx.constant dense<1.0> : tensor<2xf32>
  %m = vx.constant dense<0.0> : tensor<2xf32>
  %v = vx.constant dense<1.0> : tensor<2xf32>
  %y = vx.batchnorm %c, %s, %b, %m, %v {epsilon = 0.0 : f32} : (tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  func.return %y : tensor<1x2x2x2xf32>
}

// -----

// Left alone: the conv's result has another user.
// CHECK-LABEL: func.func @shared
// CHECK: vx.batchnorm
func.func @shared(%x: tensor<1x1x2x2xf32>) -> (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) {
  %w = vx.constant dense<1.0> : tensor<2x1x1x1xf32>
  %c = vx.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x2x2xf32>
  %p = vx.constant dense<1.0> : tensor<2xf32>
  %y = vx.batchnorm %c, %p, %p, %p, %p {epsilon = 0.0 : f32} : (tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  func.return %y, %c : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
}
