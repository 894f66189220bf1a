// RUN: vknn-opt %s --split-input-file -p assign-layouts --verify-diagnostics | FileCheck %s
// RUN: vknn-opt %s --split-input-file -p assign-layouts,assign-layouts --verify-diagnostics | FileCheck %s

// A CNN: NC4HW4 throughout, one convert where the flat tail (flatten, Gemm,
// Softmax) begins. The epilogue and the pointwise op inherit their
// producer's layout; constants and the graph's inputs/outputs get neither a
// layout nor converts.

// CHECK-LABEL: func.func @cnn
// CHECK-SAME: (%[[X:.*]]: tensor<1x3x8x8xf32>
// CHECK: %[[W:.*]] = vx.constant dense
// CHECK-NOT: vx.layout
// CHECK-SAME: tensor<4x3x3x3xf32>
// CHECK: %[[C:.*]] = vx.conv %[[X]], %[[W]] {{{.*}}vx.layout = #vx<layout nc4hw4>
// CHECK: %[[R:.*]] = vx.fused_pointwise %[[C]] {vx.epilogue, vx.layout = #vx<layout nc4hw4>}
// CHECK: %[[P:.*]] = vx.pool max %[[R]] {vx.layout = #vx<layout nc4hw4>
// CHECK-NEXT: %[[T:.*]] = vx.convert_layout %[[P]] from nc4hw4 to flat : tensor<1x4x4x4xf32>
// CHECK-NEXT: %[[F:.*]] = vx.reshape %[[T]] {vx.layout = #vx<layout flat>}
// CHECK: %[[G:.*]] = vx.gemm %[[F]], %{{.*}} {vx.layout = #vx<layout flat>
// CHECK: %[[S:.*]] = vx.softmax %[[G]] {vx.layout = #vx<layout flat>
// CHECK-NOT: vx.convert_layout
// CHECK: func.return %[[S]]
func.func @cnn(%x: tensor<1x3x8x8xf32>, %fw: tensor<10x64xf32>) -> tensor<1x10xf32> {
  %w = vx.constant dense<0.5> : tensor<4x3x3x3xf32>
  %c = vx.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  %r = vx.fused_pointwise %c {vx.epilogue} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  ^bb0(%a: f32):
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %a, %z : f32
    vx.yield %m : f32
  }
  %p = vx.pool max %r {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = false, count_include_pad = false} : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>
  %f = vx.reshape %p : tensor<1x4x4x4xf32> -> tensor<1x64xf32>
  %g = vx.gemm %f, %fw {trans_a = false, trans_b = true, alpha = 1.0 : f32, beta = 1.0 : f32} : (tensor<1x64xf32>, tensor<10x64xf32>) -> tensor<1x10xf32>
  %s = vx.softmax %g {axis = 1 : i64} : tensor<1x10xf32> -> tensor<1x10xf32>
  func.return %s : tensor<1x10xf32>
}

// -----

// A transformer block is flat from end to end: no converts at all, even for
// rank-4 attention tensors.

// CHECK-LABEL: func.func @transformer
// CHECK-NOT: vx.convert_layout
// CHECK: vx.matmul {{.*}}vx.layout = #vx<layout flat>
// CHECK: vx.binary add {{.*}}vx.layout = #vx<layout flat>
// CHECK: vx.unary gelu {{.*}}vx.layout = #vx<layout flat>
// CHECK: vx.reshape {{.*}}vx.layout = #vx<layout flat>
// CHECK: vx.transpose {{.*}}vx.layout = #vx<layout flat>
// CHECK: vx.unary exp {{.*}}vx.layout = #vx<layout flat>
// CHECK: vx.softmax {{.*}}vx.layout = #vx<layout flat>
// CHECK-NOT: vx.convert_layout
// CHECK: func.return
func.func @transformer(%x: tensor<1x16x32xf32>, %w: tensor<32x32xf32>, %b: tensor<32xf32>) -> tensor<1x2x16x16xf32> {
  %m = vx.matmul %x, %w : (tensor<1x16x32xf32>, tensor<32x32xf32>) -> tensor<1x16x32xf32>
  %a = vx.binary add %m, %b : (tensor<1x16x32xf32>, tensor<32xf32>) -> tensor<1x16x32xf32>
  %g = vx.unary gelu %a : tensor<1x16x32xf32>
  %r = vx.reshape %g : tensor<1x16x32xf32> -> tensor<1x16x2x16xf32>
  %t = vx.transpose %r {perm = array<i64: 0, 2, 1, 3>} : tensor<1x16x2x16xf32> -> tensor<1x2x16x16xf32>
  %e = vx.unary exp %t : tensor<1x2x16x16xf32>
  %s = vx.softmax %e {axis = 3 : i64} : tensor<1x2x16x16xf32> -> tensor<1x2x16x16xf32>
  func.return %s : tensor<1x2x16x16xf32>
}

// -----

// "any" ops fed only by graph inputs take their consumer's layout (the add
// before a conv is NC4HW4 although the add feeding a reshape is not), else
// NC4HW4 for rank 4 and flat otherwise. One convert serves both flat users
// of the conv's result.

// CHECK-LABEL: func.func @inherit
// CHECK: %[[A:.*]] = vx.binary add {{.*}}vx.layout = #vx<layout nc4hw4>
// CHECK: %[[C:.*]] = vx.conv %[[A]]
// CHECK-NEXT: %[[T:.*]] = vx.convert_layout %[[C]] from nc4hw4 to flat
// CHECK: vx.reshape %[[T]]
// CHECK: vx.transpose %[[T]]
// CHECK: vx.unary relu {{.*}}vx.layout = #vx<layout nc4hw4>{{.*}} : tensor<1x4x8x8xf32>
// CHECK: vx.unary relu {{.*}}vx.layout = #vx<layout flat>{{.*}} : tensor<4x8xf32>
// CHECK-NOT: vx.convert_layout
func.func @inherit(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x1x1xf32>, %v: tensor<4x8xf32>) -> (tensor<1x256xf32>, tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<4x8xf32>) {
  %a = vx.binary add %x, %x : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %c = vx.conv %a, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %f = vx.reshape %c : tensor<1x4x8x8xf32> -> tensor<1x256xf32>
  %t = vx.transpose %c {perm = array<i64: 0, 1, 3, 2>} : tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
  %r = vx.unary relu %x : tensor<1x4x8x8xf32>
  %q = vx.unary relu %v : tensor<4x8xf32>
  func.return %f, %t, %r, %q : tensor<1x256xf32>, tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<4x8xf32>
}

// -----

// A pinned "any" op keeps its layout (converts around it follow); pinning an
// NC4HW4-only op to flat is an error.

// CHECK-LABEL: func.func @pinned
// CHECK: %[[C:.*]] = vx.conv
// CHECK-NEXT: %[[T:.*]] = vx.convert_layout %[[C]] from nc4hw4 to flat
// CHECK: vx.unary relu %[[T]] {vx.layout = #vx<layout flat>}
func.func @pinned(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32> {
  %c = vx.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %r = vx.unary relu %c {vx.layout = #vx<layout flat>} : tensor<1x4x8x8xf32>
  func.return %r : tensor<1x4x8x8xf32>
}

// -----

func.func @pinned_conv(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32> {
  // CHECK: assign-layouts: node 'c1' (vx.conv) is pinned to layout flat, but vx.conv runs only in nc4hw4; remove the vx.layout attribute
  %c = vx.conv %x, %w {onnx.name = "c1", vx.layout = #vx<layout flat>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32>
  func.return %c : tensor<1x4x8x8xf32>
}
