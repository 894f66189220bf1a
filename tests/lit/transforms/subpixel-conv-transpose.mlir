// RUN: vknn-opt %s --split-input-file -p subpixel-conv-transpose --verify-diagnostics | FileCheck %s

// Stride 2, kernel 4, pads 1: a 2x2 conv with 3 * 2 * 2 phase channels, a
// depth-to-space (reshape, transpose, reshape) and a crop of the pads. The
// bias is repeated per phase.

// CHECK-LABEL: func.func @upsample
// CHECK-SAME: (%[[X:.*]]: tensor<1x2x3x3xf32>)
// CHECK-NOT: vx.conv_transpose
// CHECK: %[[W:.*]] = vx.constant {onnx.name = "up/subpixel_w"} dense_resource<{{.*}}> : tensor<12x2x2x2xf32>
// CHECK: %[[B:.*]] = vx.constant {onnx.name = "up/subpixel_b"} dense<[1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00, 2.000000e+00, {{.*}}]> : tensor<12xf32>
// CHECK: %[[C:.*]] = vx.conv %[[X]], %[[W]], %[[B]] {onnx.name = "up", strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x3x3xf32>, tensor<12x2x2x2xf32>, tensor<12xf32>) -> tensor<1x12x4x4xf32>
// CHECK: %[[S:.*]] = vx.reshape %[[C]] {onnx.name = "up/d2s_split"} : tensor<1x12x4x4xf32> -> tensor<1x3x2x2x4x4xf32>
// CHECK: %[[T:.*]] = vx.transpose %[[S]] {onnx.name = "up/d2s", perm = array<i64: 0, 1, 4, 2, 5, 3>} : tensor<1x3x2x2x4x4xf32> -> tensor<1x3x4x2x4x2xf32>
// CHECK: %[[M:.*]] = vx.reshape %[[T]] {onnx.name = "up/d2s_merge"} : tensor<1x3x4x2x4x2xf32> -> tensor<1x3x8x8xf32>
// CHECK: %[[Y:.*]] = vx.slice %[[M]] {onnx.name = "up/crop", starts = array<i64: 0, 0, 1, 1>, ends = array<i64: 1, 3, 7, 7>, steps = array<i64: 1, 1, 1, 1>} : tensor<1x3x8x8xf32> -> tensor<1x3x6x6xf32>
// CHECK: func.return %[[Y]]
func.func @upsample(%x: tensor<1x2x3x3xf32>) -> tensor<1x3x6x6xf32> {
  %w = vx.constant dense<0.5> : tensor<2x3x4x4xf32>
  %b = vx.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %y = vx.conv_transpose %x, %w, %b {onnx.name = "up", strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, group = 1 : i64} : (tensor<1x2x3x3xf32>, tensor<2x3x4x4xf32>, tensor<3xf32>) -> tensor<1x3x6x6xf32>
  func.return %y : tensor<1x3x6x6xf32>
}

// -----

// Kernel == stride, no pads: a 1x1 conv and a pure depth-to-space, no crop.

// CHECK-LABEL: func.func @pixel_shuffle
// CHECK: vx.conv {{.*}} -> tensor<1x16x5x5xf32>
// CHECK: vx.reshape {{.*}} -> tensor<1x4x2x2x5x5xf32>
// CHECK: vx.transpose
// CHECK: %[[M:.*]] = vx.reshape {{.*}} -> tensor<1x4x10x10xf32>
// CHECK-NOT: vx.slice
// CHECK: func.return %[[M]]
func.func @pixel_shuffle(%x: tensor<1x8x5x5xf32>) -> tensor<1x4x10x10xf32> {
  %w = vx.constant dense<0.25> : tensor<8x4x2x2xf32>
  %y = vx.conv_transpose %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, group = 1 : i64} : (tensor<1x8x5x5xf32>, tensor<8x4x2x2xf32>) -> tensor<1x4x10x10xf32>
  func.return %y : tensor<1x4x10x10xf32>
}

// -----

// Left alone: the stride does not divide the kernel (3 vs 2), a dilated
// kernel, a grouped one, stride 1, and a weight that is not a constant.

// CHECK-LABEL: func.func @leave_alone
// CHECK-COUNT-5: vx.conv_transpose
// CHECK-NOT: vx.conv
// CHECK: func.return
func.func @leave_alone(%x: tensor<1x2x3x3xf32>, %wv: tensor<2x2x4x4xf32>) -> (tensor<1x2x7x7xf32>, tensor<1x2x9x9xf32>, tensor<1x4x8x8xf32>, tensor<1x2x6x6xf32>, tensor<1x2x8x8xf32>) {
  %w3 = vx.constant dense<0.5> : tensor<2x2x3x3xf32>
  %w4 = vx.constant dense<0.5> : tensor<2x2x4x4xf32>
  %a = vx.conv_transpose %x, %w3 {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, group = 1 : i64} : (tensor<1x2x3x3xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x7x7xf32>
  %b = vx.conv_transpose %x, %w4 {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 2, 2>, output_padding = array<i64: 0, 0>, group = 1 : i64} : (tensor<1x2x3x3xf32>, tensor<2x2x4x4xf32>) -> tensor<1x2x9x9xf32>
  %c = vx.conv_transpose %x, %w4 {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, group = 2 : i64} : (tensor<1x2x3x3xf32>, tensor<2x2x4x4xf32>) -> tensor<1x4x8x8xf32>
  %d = vx.conv_transpose %x, %w4 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, group = 1 : i64} : (tensor<1x2x3x3xf32>, tensor<2x2x4x4xf32>) -> tensor<1x2x6x6xf32>
  %e = vx.conv_transpose %x, %wv {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, group = 1 : i64} : (tensor<1x2x3x3xf32>, tensor<2x2x4x4xf32>) -> tensor<1x2x8x8xf32>
  func.return %a, %b, %c, %d, %e : tensor<1x2x7x7xf32>, tensor<1x2x9x9xf32>, tensor<1x4x8x8xf32>, tensor<1x2x6x6xf32>, tensor<1x2x8x8xf32>
}

// -----

// The rewrite builds static reshapes: a dynamic shape is an error.

func.func @dynamic(%x: tensor<?x2x3x3xf32>) -> tensor<?x2x8x8xf32> {
  %w = vx.constant dense<0.5> : tensor<2x2x4x4xf32>
  // CHECK: subpixel-conv-transpose: node 'up' (vx.conv_transpose) has a dynamic operand 0 of type tensor<?x2x3x3xf32>; resolve shapes first
  %y = vx.conv_transpose %x, %w {onnx.name = "up", strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, group = 1 : i64} : (tensor<?x2x3x3xf32>, tensor<2x2x4x4xf32>) -> tensor<?x2x8x8xf32>
  func.return %y : tensor<?x2x8x8xf32>
}
