// RUN: vknn-opt %s --split-input-file -p fuse-attention --verify-diagnostics | FileCheck %s

// BERT-style: (Q K^T) / sqrt(d) + mask -> softmax -> @ V. The transpose of K
// is stripped, the divisor becomes scale = 1/2, every member is listed.

// CHECK-LABEL: func.func @div_mask
// CHECK-SAME: (%[[Q:.*]]: tensor<1x2x8x4xf32>, %[[K:.*]]: tensor<1x2x8x4xf32>, %[[V:.*]]: tensor<1x2x8x4xf32>, %[[M:.*]]: tensor<1x1x1x8xf32>)
// CHECK-NOT: vx.transpose
// CHECK-NOT: vx.binary
// CHECK: %[[A:.*]] = vx.attention %[[Q]], %[[K]], %[[V]], %[[M]] {onnx.name = "pv", vx.fused_names = ["kt", "qk", "div", "mask", "sm", "pv"], scale = 5.000000e-01 : f32} : (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x1x1x8xf32>) -> tensor<1x2x8x4xf32>
// CHECK-NEXT: func.return %[[A]]
func.func @div_mask(%q: tensor<1x2x8x4xf32>, %k: tensor<1x2x8x4xf32>, %v: tensor<1x2x8x4xf32>, %m: tensor<1x1x1x8xf32>) -> tensor<1x2x8x4xf32> {
  %kt = vx.transpose %k {onnx.name = "kt", perm = array<i64: 0, 1, 3, 2>} : tensor<1x2x8x4xf32> -> tensor<1x2x4x8xf32>
  %s = vx.matmul %q, %kt {onnx.name = "qk"} : (tensor<1x2x8x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x8x8xf32>
  %two = vx.constant dense<2.0> : tensor<f32>
  %d = vx.binary div %s, %two {onnx.name = "div"} : (tensor<1x2x8x8xf32>, tensor<f32>) -> tensor<1x2x8x8xf32>
  %a = vx.binary add %m, %d {onnx.name = "mask"} : (tensor<1x1x1x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %p = vx.softmax %a {onnx.name = "sm", axis = 3 : i64} : tensor<1x2x8x8xf32> -> tensor<1x2x8x8xf32>
  %y = vx.matmul %p, %v {onnx.name = "pv"} : (tensor<1x2x8x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32>
  func.return %y : tensor<1x2x8x4xf32>
}

// -----

// torch's nn.MultiheadAttention: q * c and (k^T) * c, no mask; Dv != D and
// Sq != Sk. scale = c * c.

// CHECK-LABEL: func.func @torch_scaled
// CHECK-SAME: (%[[Q:.*]]: tensor<3x5x4xf32>, %[[K:.*]]: tensor<3x7x4xf32>, %[[V:.*]]: tensor<3x7x6xf32>)
// CHECK: %[[A:.*]] = vx.attention %[[Q]], %[[K]], %[[V]] {onnx.name = "pv", vx.fused_names = ["qs", "kt", "ks", "qk", "sm", "pv"], scale = 2.500000e-01 : f32} : (tensor<3x5x4xf32>, tensor<3x7x4xf32>, tensor<3x7x6xf32>) -> tensor<3x5x6xf32>
// CHECK-NOT: vx.matmul
// CHECK-NOT: vx.softmax
// CHECK: func.return %[[A]]
func.func @torch_scaled(%q: tensor<3x5x4xf32>, %k: tensor<3x7x4xf32>, %v: tensor<3x7x6xf32>) -> tensor<3x5x6xf32> {
  %c = vx.constant dense<0.5> : tensor<1xf32>
  %qs = vx.binary mul %q, %c {onnx.name = "qs"} : (tensor<3x5x4xf32>, tensor<1xf32>) -> tensor<3x5x4xf32>
  %kt = vx.transpose %k {onnx.name = "kt", perm = array<i64: 0, 2, 1>} : tensor<3x7x4xf32> -> tensor<3x4x7xf32>
  %ks = vx.binary mul %c, %kt {onnx.name = "ks"} : (tensor<1xf32>, tensor<3x4x7xf32>) -> tensor<3x4x7xf32>
  %s = vx.matmul %qs, %ks {onnx.name = "qk"} : (tensor<3x5x4xf32>, tensor<3x4x7xf32>) -> tensor<3x5x7xf32>
  %p = vx.softmax %s {onnx.name = "sm", axis = 2 : i64} : tensor<3x5x7xf32> -> tensor<3x5x7xf32>
  %y = vx.matmul %p, %v {onnx.name = "pv"} : (tensor<3x5x7xf32>, tensor<3x7x6xf32>) -> tensor<3x5x6xf32>
  func.return %y : tensor<3x5x6xf32>
}

// -----

// K arrives as K^T (no transpose to strip): the fused op gets a transpose of
// it. No scaling at all: scale 1.

// CHECK-LABEL: func.func @kt_operand
// CHECK-SAME: (%[[Q:.*]]: tensor<2x5x4xf32>, %[[KT:.*]]: tensor<2x4x5xf32>, %[[V:.*]]: tensor<2x5x4xf32>)
// CHECK-NEXT: %[[K:.*]] = vx.transpose %[[KT]] {onnx.name = "pv_k", perm = array<i64: 0, 2, 1>} : tensor<2x4x5xf32> -> tensor<2x5x4xf32>
// CHECK-NEXT: %[[A:.*]] = vx.attention %[[Q]], %[[K]], %[[V]] {{{.*}}scale = 1.000000e+00 : f32}
// CHECK-NEXT: func.return %[[A]]
func.func @kt_operand(%q: tensor<2x5x4xf32>, %kt: tensor<2x4x5xf32>, %v: tensor<2x5x4xf32>) -> tensor<2x5x4xf32> {
  %s = vx.matmul %q, %kt {onnx.name = "qk"} : (tensor<2x5x4xf32>, tensor<2x4x5xf32>) -> tensor<2x5x5xf32>
  %p = vx.softmax %s {onnx.name = "sm", axis = 2 : i64} : tensor<2x5x5xf32> -> tensor<2x5x5xf32>
  %y = vx.matmul %p, %v {onnx.name = "pv"} : (tensor<2x5x5xf32>, tensor<2x5x4xf32>) -> tensor<2x5x4xf32>
  func.return %y : tensor<2x5x4xf32>
}

// -----

// Left alone: the probabilities are returned too (the softmax must stay).

// CHECK-LABEL: func.func @probs_used
// CHECK-NOT: vx.attention
// CHECK: vx.softmax
func.func @probs_used(%q: tensor<2x5x4xf32>, %kt: tensor<2x4x5xf32>, %v: tensor<2x5x4xf32>) -> (tensor<2x5x4xf32>, tensor<2x5x5xf32>) {
  %s = vx.matmul %q, %kt : (tensor<2x5x4xf32>, tensor<2x4x5xf32>) -> tensor<2x5x5xf32>
  %p = vx.softmax %s {axis = 2 : i64} : tensor<2x5x5xf32> -> tensor<2x5x5xf32>
  %y = vx.matmul %p, %v : (tensor<2x5x5xf32>, tensor<2x5x4xf32>) -> tensor<2x5x4xf32>
  func.return %y, %p : tensor<2x5x4xf32>, tensor<2x5x5xf32>
}

// -----

// Left alone: softmax over the query axis, not the keys.

// CHECK-LABEL: func.func @other_axis
// CHECK-NOT: vx.attention
func.func @other_axis(%q: tensor<2x5x4xf32>, %kt: tensor<2x4x5xf32>, %v: tensor<2x5x4xf32>) -> tensor<2x5x4xf32> {
  %s = vx.matmul %q, %kt : (tensor<2x5x4xf32>, tensor<2x4x5xf32>) -> tensor<2x5x5xf32>
  %p = vx.softmax %s {axis = 1 : i64} : tensor<2x5x5xf32> -> tensor<2x5x5xf32>
  %y = vx.matmul %p, %v : (tensor<2x5x5xf32>, tensor<2x5x4xf32>) -> tensor<2x5x4xf32>
  func.return %y : tensor<2x5x4xf32>
}

// -----

// Left alone: scaled by a computed tensor (no constant), and a mask that
// would broadcast the scores to a larger shape.

// CHECK-LABEL: func.func @not_constant
// CHECK-NOT: vx.attention
// CHECK-LABEL: func.func @mask_grows
// CHECK-NOT: vx.attention
func.func @not_constant(%q: tensor<2x5x4xf32>, %kt: tensor<2x4x5xf32>, %v: tensor<2x5x4xf32>, %c: tensor<1xf32>) -> tensor<2x5x4xf32> {
  %s = vx.matmul %q, %kt : (tensor<2x5x4xf32>, tensor<2x4x5xf32>) -> tensor<2x5x5xf32>
  %d = vx.binary mul %s, %c : (tensor<2x5x5xf32>, tensor<1xf32>) -> tensor<2x5x5xf32>
  %p = vx.softmax %d {axis = 2 : i64} : tensor<2x5x5xf32> -> tensor<2x5x5xf32>
  %y = vx.matmul %p, %v : (tensor<2x5x5xf32>, tensor<2x5x4xf32>) -> tensor<2x5x4xf32>
  func.return %y : tensor<2x5x4xf32>
}
func.func @mask_grows(%q: tensor<1x5x4xf32>, %kt: tensor<1x4x5xf32>, %v: tensor<1x5x4xf32>, %m: tensor<3x5x5xf32>) -> tensor<3x5x4xf32> {
  %s = vx.matmul %q, %kt : (tensor<1x5x4xf32>, tensor<1x4x5xf32>) -> tensor<1x5x5xf32>
  %a = vx.binary add %s, %m : (tensor<1x5x5xf32>, tensor<3x5x5xf32>) -> tensor<3x5x5xf32>
  %p = vx.softmax %a {axis = 2 : i64} : tensor<3x5x5xf32> -> tensor<3x5x5xf32>
  %y = vx.matmul %p, %v : (tensor<3x5x5xf32>, tensor<1x5x4xf32>) -> tensor<3x5x4xf32>
  func.return %y : tensor<3x5x4xf32>
}

// -----

// Shapes must be resolved first: a dynamic dim on a matched op is an error.

func.func @dynamic(%q: tensor<?x5x4xf32>, %kt: tensor<?x4x5xf32>, %v: tensor<?x5x4xf32>) -> tensor<?x5x4xf32> {
  // CHECK: fuse-attention: node 'qk' (vx.matmul) has a dynamic operand 0 of type tensor<?x5x4xf32>; resolve shapes first (run infer-shapes, declaring the shapes of dynamic inputs)
  %s = vx.matmul %q, %kt {onnx.name = "qk"} : (tensor<?x5x4xf32>, tensor<?x4x5xf32>) -> tensor<?x5x5xf32>
  %p = vx.softmax %s {onnx.name = "sm", axis = 2 : i64} : tensor<?x5x5xf32> -> tensor<?x5x5xf32>
  %y = vx.matmul %p, %v {onnx.name = "pv"} : (tensor<?x5x5xf32>, tensor<?x5x4xf32>) -> tensor<?x5x4xf32>
  func.return %y : tensor<?x5x4xf32>
}
