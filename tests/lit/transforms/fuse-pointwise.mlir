// RUN: vknn-opt %s --split-input-file -p fuse-pointwise --verify-diagnostics | FileCheck %s
// RUN: vknn-opt %s --split-input-file -p "fuse-pointwise{max-ops=2}" --verify-diagnostics | FileCheck %s --check-prefix=MAX2
// RUN: vknn-opt %s --split-input-file -p "fuse-pointwise{epilogues=false}" --verify-diagnostics | FileCheck %s --check-prefix=NOEPI

// Conv -> per-channel bias -> relu: one region, the conv's store epilogue.
// The bias is a broadcast operand after the primary input; 0 is a scalar.

// CHECK-LABEL: func.func @conv_bias_relu
// CHECK: %[[B:.*]] = vx.constant
// CHECK: %[[C:.*]] = vx.conv
// CHECK-NEXT: %[[R:.*]] = vx.fused_pointwise %[[C]], %[[B]] {onnx.name = "relu", vx.fused_names = ["bias", "relu"], vx.epilogue} : (tensor<1x4x8x8xf32>, tensor<4x1x1xf32>) -> tensor<1x4x8x8xf32> {
// CHECK-NEXT: ^{{.*}}(%[[X:.*]]: f32, %[[Y:.*]]: f32):
// CHECK-NEXT:   %[[S:.*]] = arith.addf %[[X]], %[[Y]] : f32
// CHECK-NEXT:   %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:   %[[M:.*]] = arith.maximumf %[[S]], %[[Z]] : f32
// CHECK-NEXT:   vx.yield %[[M]] : f32
// CHECK-NEXT: }
// CHECK-NOT: vx.unary
// CHECK-NOT: vx.binary
// CHECK: func.return %[[R]]
// NOEPI-LABEL: func.func @conv_bias_relu
// NOEPI: vx.fused_pointwise
// NOEPI-NOT: vx.epilogue
// NOEPI-SAME: {
func.func @conv_bias_relu(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32> {
  %b = vx.constant dense<[[[0.1]], [[0.2]], [[0.3]], [[0.4]]]> : tensor<4x1x1xf32>
  %c = vx.conv %x, %w {onnx.name = "conv", strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  %a = vx.binary add %c, %b {onnx.name = "bias"} : (tensor<1x4x8x8xf32>, tensor<4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %r = vx.unary relu %a {onnx.name = "relu"} : tensor<1x4x8x8xf32>
  func.return %r : tensor<1x4x8x8xf32>
}

// -----

// A standalone region (its input is a graph input): a splat constant becomes
// an arith.constant, never an operand; sigmoid is 1 / (1 + exp(-x)).

// CHECK-LABEL: func.func @standalone
// CHECK-SAME: (%[[X:.*]]: tensor<2x16xf32>)
// CHECK: %[[F:.*]] = vx.fused_pointwise %[[X]] {onnx.name = "sig", vx.fused_names = ["scale", "sig"]} : (tensor<2x16xf32>) -> tensor<2x16xf32> {
// CHECK-NEXT: ^{{.*}}(%[[A:.*]]: f32):
// CHECK-NEXT:   %[[TWO:.*]] = arith.constant 2.000000e+00 : f32
// CHECK-NEXT:   %[[M:.*]] = arith.mulf %[[A]], %[[TWO]] : f32
// CHECK-NEXT:   %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:   %[[N:.*]] = arith.negf %[[M]] : f32
// CHECK-NEXT:   %[[E:.*]] = math.exp %[[N]] : f32
// CHECK-NEXT:   %[[D:.*]] = arith.addf %[[ONE]], %[[E]] : f32
// CHECK-NEXT:   %[[S:.*]] = arith.divf %[[ONE]], %[[D]] : f32
// CHECK-NEXT:   vx.yield %[[S]] : f32
// CHECK: func.return %[[F]]
func.func @standalone(%x: tensor<2x16xf32>) -> tensor<2x16xf32> {
  %two = vx.constant dense<2.0> : tensor<1xf32>
  %m = vx.binary mul %x, %two {onnx.name = "scale"} : (tensor<2x16xf32>, tensor<1xf32>) -> tensor<2x16xf32>
  %s = vx.unary sigmoid %m {onnx.name = "sig"} : tensor<2x16xf32>
  func.return %s : tensor<2x16xf32>
}

// -----

// A member used outside the region is a second result, not recomputed; a
// region with two results is never an epilogue.

// CHECK-LABEL: func.func @multi_result
// CHECK: %[[A:.*]], %[[R:.*]] = vx.fused_pointwise %{{.*}}, %{{.*}} {onnx.name = "clip", vx.fused_names = ["add", "clip"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>)
// CHECK:   %[[S:.*]] = arith.addf
// CHECK:   %[[LO:.*]] = arith.maximumf %[[S]]
// CHECK:   %[[HI:.*]] = arith.minimumf %[[LO]]
// CHECK:   vx.yield %[[S]], %[[HI]] : f32, f32
// CHECK: func.return %[[A]], %[[R]]
func.func @multi_result(%x: tensor<4x4xf32>, %y: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  %a = vx.binary add %x, %y {onnx.name = "add"} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %r = vx.unary clip %a {onnx.name = "clip", params = array<f32: 0.0, 6.0>} : tensor<4x4xf32>
  func.return %a, %r : tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// relu and the residual add cannot share a region: the path relu -> conv ->
// add leaves it and comes back. The add is the conv's epilogue instead (the
// conv output is its primary input, the relu output an extra one), and the
// lone relu stays as it is (min-ops=2).

// CHECK-LABEL: func.func @not_convex
// CHECK: %[[A:.*]] = vx.unary relu
// CHECK: %[[C:.*]] = vx.conv %[[A]]
// CHECK: vx.fused_pointwise %[[C]], %[[A]] {onnx.name = "residual", vx.fused_names = ["residual"], vx.epilogue}
// CHECK:   arith.addf
func.func @not_convex(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32> {
  %a = vx.unary relu %x {onnx.name = "relu"} : tensor<1x4x8x8xf32>
  %c = vx.conv %a, %w {onnx.name = "conv", strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %d = vx.binary add %a, %c {onnx.name = "residual"} : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  func.return %d : tensor<1x4x8x8xf32>
}

// -----

// Left alone: a lone op with no epilogue host; a lone op on a conv output
// that has a second user (an epilogue would have to store twice); a
// broadcast that grows the shape (tanh [4, 1] and add [4, 8] are different
// regions, each of one op); a kind with no scalar form (fmod) ends a region.

// CHECK-LABEL: func.func @leave_alone
// CHECK-NOT: vx.fused_pointwise
// CHECK: vx.unary relu
// CHECK: %[[C:.*]] = vx.conv
// CHECK: vx.unary sigmoid %[[C]]
// CHECK: vx.unary tanh
// CHECK: vx.binary add {{.*}} : (tensor<4x1xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
// CHECK: vx.unary exp
// CHECK: vx.binary fmod
// CHECK: vx.unary neg
// CHECK-NOT: vx.fused_pointwise
// CHECK: func.return
func.func @leave_alone(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x1x1xf32>, %p: tensor<4x1xf32>, %q: tensor<1x8xf32>) -> (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<4x8xf32>, tensor<4x1xf32>) {
  %r = vx.unary relu %x : tensor<1x4x8x8xf32>
  %c = vx.conv %r, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %s = vx.unary sigmoid %c : tensor<1x4x8x8xf32>
  %t = vx.unary tanh %p : tensor<4x1xf32>
  %g = vx.binary add %t, %q : (tensor<4x1xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
  %e = vx.unary exp %p : tensor<4x1xf32>
  %m = vx.binary fmod %e, %p : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<4x1xf32>
  %n = vx.unary neg %m : tensor<4x1xf32>
  func.return %s, %c, %g, %n : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<4x8xf32>, tensor<4x1xf32>
}

// -----

// max-ops bounds a region: four ops in regions of at most two.

// CHECK-LABEL: func.func @chain
// CHECK-COUNT-1: vx.fused_pointwise
// CHECK-NOT: vx.fused_pointwise
// MAX2-LABEL: func.func @chain
// MAX2: %[[F1:.*]] = vx.fused_pointwise %{{.*}} {{{.*}}vx.fused_names = ["n1", "n2"]}
// MAX2: vx.fused_pointwise %[[F1]] {{{.*}}vx.fused_names = ["n3", "n4"]}
func.func @chain(%x: tensor<8xf32>) -> tensor<8xf32> {
  %1 = vx.unary exp %x {onnx.name = "n1"} : tensor<8xf32>
  %2 = vx.unary tanh %1 {onnx.name = "n2"} : tensor<8xf32>
  %3 = vx.unary neg %2 {onnx.name = "n3"} : tensor<8xf32>
  %4 = vx.unary abs %3 {onnx.name = "n4"} : tensor<8xf32>
  func.return %4 : tensor<8xf32>
}

// -----

// Shapes must be resolved first: a dynamic dim is an error, not a guess.

func.func @dynamic(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // CHECK: fuse-pointwise: node 'act' (vx.unary) has a dynamic operand 0 of type tensor<?x4xf32>; resolve shapes first (run infer-shapes, declaring the shapes of dynamic inputs)
  %0 = vx.unary relu %x {onnx.name = "act"} : tensor<?x4xf32>
  %1 = vx.unary exp %0 : tensor<?x4xf32>
  func.return %1 : tensor<?x4xf32>
}
