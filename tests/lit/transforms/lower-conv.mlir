// RUN: vknn-opt %s --split-input-file -p "lower-conv{enabled=true}" --verify-diagnostics | FileCheck %s
// RUN: vknn-opt %s --split-input-file -p lower-conv --verify-diagnostics | FileCheck %s --check-prefix=OFF

// A 3x3 conv with 16 * 9 = 144 multiply-adds per output runs as an implicit
// GEMM: M = 32 output channels, N = 1 * 8 * 8 pixels, K = 144. Opt-in: by
// default the pass changes nothing.

// CHECK-LABEL: func.func @kxk
// CHECK: vx.conv {{.*}}{onnx.name = "c3", vx.conv_algorithm = "implicit_gemm", vx.gemm_shape = array<i64: 32, 64, 144>, strides
// CHECK-SAME: -> tensor<1x32x8x8xf32>
// OFF-LABEL: func.func @kxk
// OFF-NOT: vx.conv_algorithm
// OFF: func.return
func.func @kxk(%x: tensor<1x16x8x8xf32>, %w: tensor<32x16x3x3xf32>) -> tensor<1x32x8x8xf32> {
  %c = vx.conv %x, %w {onnx.name = "c3", strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x16x8x8xf32>, tensor<32x16x3x3xf32>) -> tensor<1x32x8x8xf32>
  func.return %c : tensor<1x32x8x8xf32>
}

// -----

// Left alone: a 1x1 conv (already a GEMM), a depthwise conv, and the RGB
// stem whose reduction (3 * 3 * 3 = 27) is below min-reduction.

// CHECK-LABEL: func.func @leave_alone
// CHECK-NOT: vx.conv_algorithm
// CHECK: func.return
func.func @leave_alone(%x: tensor<1x16x8x8xf32>, %w1: tensor<32x16x1x1xf32>, %dw: tensor<16x1x3x3xf32>, %rgb: tensor<1x3x8x8xf32>, %ws: tensor<16x3x3x3xf32>) -> (tensor<1x32x8x8xf32>, tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>) {
  %a = vx.conv %x, %w1 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x16x8x8xf32>, tensor<32x16x1x1xf32>) -> tensor<1x32x8x8xf32>
  %b = vx.conv %x, %dw {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 16 : i64} : (tensor<1x16x8x8xf32>, tensor<16x1x3x3xf32>) -> tensor<1x16x8x8xf32>
  %c = vx.conv %rgb, %ws {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x8x8xf32>
  func.return %a, %b, %c : tensor<1x32x8x8xf32>, tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>
}

// -----

// The GEMM geometry needs static shapes: a dynamic batch is an error.

func.func @dynamic(%x: tensor<?x16x8x8xf32>, %w: tensor<32x16x3x3xf32>) -> tensor<?x32x8x8xf32> {
  // CHECK: lower-conv: node 'c3' (vx.conv) has a dynamic operand 0 of type tensor<?x16x8x8xf32>; resolve shapes first
  %c = vx.conv %x, %w {onnx.name = "c3", strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<?x16x8x8xf32>, tensor<32x16x3x3xf32>) -> tensor<?x32x8x8xf32>
  func.return %c : tensor<?x32x8x8xf32>
}
