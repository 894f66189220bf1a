// RUN: vknn-opt %s --split-input-file -p sink-reshapes | FileCheck %s
// RUN: vknn-opt %s --split-input-file -p sink-reshapes,fuse-pointwise | FileCheck %s --check-prefix=FUSE

// torch's attention output: Gemm [S, E] -> Reshape [S, 1, E] -> Transpose
// (1, 0, 2) (only a unit dim moves: a reshape) -> residual Add. The add
// moves onto the Gemm's shape, so fuse-pointwise makes it the epilogue.

// CHECK-LABEL: func.func @residual
// CHECK-SAME: (%[[X:.*]]: tensor<1x4x8xf32>, %[[A:.*]]: tensor<4x8xf32>, %[[W:.*]]: tensor<8x8xf32>)
// CHECK: %[[G:.*]] = vx.gemm %[[A]], %[[W]]
// CHECK-NEXT: %[[XR:.*]] = vx.reshape %[[X]] {onnx.name = "res"} : tensor<1x4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT: %[[S:.*]] = vx.binary add %[[XR]], %[[G]] {onnx.name = "res"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %[[B:.*]] = vx.reshape %[[S]] {onnx.name = "res"} : tensor<4x8xf32> -> tensor<1x4x8xf32>
// CHECK-NOT: vx.transpose
// CHECK: func.return %[[B]]
// FUSE-LABEL: func.func @residual
// FUSE: %[[G:.*]] = vx.gemm
// FUSE: vx.fused_pointwise %[[G]], %{{.*}} {onnx.name = "res", vx.fused_names = ["res"], vx.epilogue}
func.func @residual(%x: tensor<1x4x8xf32>, %a: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<1x4x8xf32> {
  %g = vx.gemm %a, %w {onnx.name = "proj", trans_a = false, trans_b = true, alpha = 1.0 : f32, beta = 1.0 : f32} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %r = vx.reshape %g {onnx.name = "r"} : tensor<4x8xf32> -> tensor<4x1x8xf32>
  %t = vx.transpose %r {onnx.name = "t", perm = array<i64: 1, 0, 2>} : tensor<4x1x8xf32> -> tensor<1x4x8xf32>
  %y = vx.binary add %x, %t {onnx.name = "res"} : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  func.return %y : tensor<1x4x8xf32>
}

// -----

// A one-element operand stays as it is (it broadcasts the same in either shape).

// CHECK-LABEL: func.func @scalar
// CHECK: %[[M:.*]] = vx.matmul
// CHECK: %[[S:.*]] = vx.binary mul %[[M]], %{{.*}} : (tensor<6x4xf32>, tensor<1xf32>) -> tensor<6x4xf32>
// CHECK-NEXT: vx.reshape %[[S]] : tensor<6x4xf32> -> tensor<2x3x4xf32>
func.func @scalar(%a: tensor<6x5xf32>, %b: tensor<5x4xf32>) -> tensor<2x3x4xf32> {
  %m = vx.matmul %a, %b : (tensor<6x5xf32>, tensor<5x4xf32>) -> tensor<6x4xf32>
  %r = vx.reshape %m : tensor<6x4xf32> -> tensor<2x3x4xf32>
  %c = vx.constant dense<2.0> : tensor<1xf32>
  %y = vx.binary mul %r, %c : (tensor<2x3x4xf32>, tensor<1xf32>) -> tensor<2x3x4xf32>
  func.return %y : tensor<2x3x4xf32>
}

// -----

// Left alone: a transpose that reorders data; a broadcast operand of more
// than one element; a reshape with another user; a producer that hosts no
// epilogue.

// CHECK-LABEL: func.func @reorders
// CHECK: vx.transpose
// CHECK-LABEL: func.func @bias
// CHECK: %[[R:.*]] = vx.reshape
// CHECK-NEXT: vx.binary add %[[R]]
// CHECK-LABEL: func.func @shared
// CHECK: %[[R:.*]] = vx.reshape
// CHECK-NEXT: vx.unary relu %[[R]]
// CHECK-LABEL: func.func @no_host
// CHECK: %[[R:.*]] = vx.reshape
// CHECK-NEXT: vx.unary relu %[[R]]
func.func @reorders(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %t = vx.transpose %x {perm = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
  func.return %t : tensor<3x2xf32>
}
func.func @bias(%a: tensor<6x5xf32>, %b: tensor<5x4xf32>, %c: tensor<3x4xf32>) -> tensor<2x3x4xf32> {
  %m = vx.matmul %a, %b : (tensor<6x5xf32>, tensor<5x4xf32>) -> tensor<6x4xf32>
  %r = vx.reshape %m : tensor<6x4xf32> -> tensor<2x3x4xf32>
  %y = vx.binary add %r, %c : (tensor<2x3x4xf32>, tensor<3x4xf32>) -> tensor<2x3x4xf32>
  func.return %y : tensor<2x3x4xf32>
}
func.func @shared(%a: tensor<6x5xf32>, %b: tensor<5x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>) {
  %m = vx.matmul %a, %b : (tensor<6x5xf32>, tensor<5x4xf32>) -> tensor<6x4xf32>
  %r = vx.reshape %m : tensor<6x4xf32> -> tensor<2x3x4xf32>
  %y = vx.unary relu %r : tensor<2x3x4xf32>
  func.return %y, %r : tensor<2x3x4xf32>, tensor<2x3x4xf32>
}
func.func @no_host(%a: tensor<6x4xf32>) -> tensor<2x3x4xf32> {
  %r = vx.reshape %a : tensor<6x4xf32> -> tensor<2x3x4xf32>
  %y = vx.unary relu %r : tensor<2x3x4xf32>
  func.return %y : tensor<2x3x4xf32>
}
