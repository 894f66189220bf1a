// RUN: vknn-opt %s -p prune-initializers | FileCheck %s
// RUN: vknn-opt %s -p 'prune-initializers{max-elements=-1}' --verify-diagnostics | FileCheck %s --check-prefix=ERR

// Unused constants go; identical small ones merge into the first.
// CHECK-LABEL: func.func @prune
// CHECK: %[[C:.*]] = vx.constant dense<1.000000e+00> : tensor<2xf32>
// CHECK-NOT: dense<7.000000e+00>
// CHECK: vx.binary add %{{.*}}, %[[C]]
// CHECK: vx.binary mul %{{.*}}, %[[C]]
// ERR: prune-initializers: max-elements must be >= 0, got -1
func.func @prune(%x: tensor<2xf32>) -> tensor<2xf32> {
  %a = vx.constant dense<1.0> : tensor<2xf32>
  %dead = vx.constant dense<7.0> : tensor<2xf32>
  %y = vx.binary add %x, %a : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %b = vx.constant dense<1.0> : tensor<2xf32>
  %z = vx.binary mul %y, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %z : tensor<2xf32>
}
