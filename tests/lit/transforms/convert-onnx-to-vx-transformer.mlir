// RUN: vknn-opt %s --split-input-file -p convert-onnx-to-vx | FileCheck %s

// Issue 15's transformer ops: IsNaN / IsInf become vx.float_test (i1
// results); GatherElements / ScatterElements / GatherND keep their indices
// (negative ones are wrapped by the kernels) with the axis normalized.

// CHECK-LABEL: func.func @indexing
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x7xf32>, %[[I:.*]]: tensor<2x3x4xi64>, %[[U:.*]]: tensor<2x3x4xf32>, %[[N:.*]]: tensor<4x2xi64>)
// CHECK-NEXT: vx.float_test "nan" %[[X]] {onnx.name = "isnan"} : tensor<2x3x7xf32> -> tensor<2x3x7xi1>
// CHECK-NEXT: vx.float_test "neg_inf" %[[X]] {onnx.name = "isinf"} : tensor<2x3x7xf32> -> tensor<2x3x7xi1>
// CHECK-NEXT: vx.gather_elements %[[X]], %[[I]] {onnx.name = "ge", axis = 2 : i64} : (tensor<2x3x7xf32>, tensor<2x3x4xi64>) -> tensor<2x3x4xf32>
// CHECK-NEXT: vx.scatter_elements %[[X]], %[[I]], %[[U]] {onnx.name = "se", axis = 2 : i64, reduction = "none"}
// CHECK-NEXT: vx.gather_nd %[[X]], %[[N]] {onnx.name = "gnd", batch_dims = 0 : i64} : (tensor<2x3x7xf32>, tensor<4x2xi64>) -> tensor<4x7xf32>
// CHECK-NOT: onnx.{{[A-Z]}}
builtin.module attributes {onnx.opset = 18 : i64} {
  func.func @indexing(%x: tensor<2x3x7xf32>, %i: tensor<2x3x4xi64>, %u: tensor<2x3x4xf32>, %n: tensor<4x2xi64>) -> (tensor<2x3x7xi1>, tensor<2x3x7xi1>, tensor<2x3x4xf32>, tensor<2x3x7xf32>, tensor<4x7xf32>) {
    %nan = onnx.IsNaN(%x) {onnx.name = "isnan"} : (tensor<2x3x7xf32>) -> tensor<2x3x7xi1>
    %inf = onnx.IsInf(%x) {detect_positive = 0 : i64, onnx.name = "isinf"} : (tensor<2x3x7xf32>) -> tensor<2x3x7xi1>
    %ge = onnx.GatherElements(%x, %i) {axis = -1 : i64, onnx.name = "ge"} : (tensor<2x3x7xf32>, tensor<2x3x4xi64>) -> tensor<2x3x4xf32>
    %se = onnx.ScatterElements(%x, %i, %u) {axis = -1 : i64, onnx.name = "se"} : (tensor<2x3x7xf32>, tensor<2x3x4xi64>, tensor<2x3x4xf32>) -> tensor<2x3x7xf32>
    %gn = onnx.GatherND(%x, %n) {onnx.name = "gnd"} : (tensor<2x3x7xf32>, tensor<4x2xi64>) -> tensor<4x7xf32>
    func.return %nan, %inf, %ge, %se, %gn : tensor<2x3x7xi1>, tensor<2x3x7xi1>, tensor<2x3x4xf32>, tensor<2x3x7xf32>, tensor<4x7xf32>
  }
}


// -----

// InstanceNormalization is a layernorm over each channel's [N, C, H*W] row
// and a per-channel affine; GroupNormalization the same over [N, G, C/G*H*W]
// (opset 18's per-group scale and bias repeated over each group's channels).

// CHECK-LABEL: func.func @norms
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x3x3xf32>, %[[S:.*]]: tensor<4xf32>, %[[B:.*]]: tensor<4xf32>)
// CHECK: %[[R:.*]] = vx.reshape %[[X]] {onnx.name = "inorm"} : tensor<2x4x3x3xf32> -> tensor<2x4x9xf32>
// CHECK: %[[ONE:.*]] = vx.constant {onnx.name = "inorm"} dense<1.000000e+00> : tensor<1xf32>
// CHECK: %[[L:.*]] = vx.layernorm %[[R]], %[[ONE]] {onnx.name = "inorm", axis = 2 : i64, epsilon = 1.000000e-03 : f32}
// CHECK: %[[Y:.*]] = vx.reshape %[[L]] {onnx.name = "inorm"} : tensor<2x4x9xf32> -> tensor<2x4x3x3xf32>
// CHECK: %[[SC:.*]] = vx.reshape %[[S]] {onnx.name = "inorm"} : tensor<4xf32> -> tensor<4x1x1xf32>
// CHECK: %[[M:.*]] = vx.binary mul %[[Y]], %[[SC]]
// CHECK: %[[BC:.*]] = vx.reshape %[[B]] {onnx.name = "inorm"} : tensor<4xf32> -> tensor<4x1x1xf32>
// CHECK: %[[IN:.*]] = vx.binary add %[[M]], %[[BC]]
// CHECK: %[[G:.*]] = vx.reshape %[[X]] {onnx.name = "gnorm"} : tensor<2x4x3x3xf32> -> tensor<2x2x18xf32>
// CHECK: vx.layernorm %[[G]], %{{.*}} {onnx.name = "gnorm", axis = 2 : i64, epsilon = 1.000000e-05 : f32}
// CHECK: vx.constant {onnx.name = "gnorm"} dense<{{\[\[\[}}2.000000e+00]], {{\[\[}}2.000000e+00]], {{\[\[}}3.000000e+00]], {{\[\[}}3.000000e+00]]]> : tensor<4x1x1xf32>
// CHECK: vx.binary mul
// CHECK: %[[GN:.*]] = vx.binary add
// CHECK: func.return %[[IN]], %[[GN]]
// CHECK-NOT: onnx.{{[A-Z]}}

builtin.module attributes {onnx.opset = 18 : i64} {
  func.func @norms(%x: tensor<2x4x3x3xf32>, %s: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<2x4x3x3xf32>, tensor<2x4x3x3xf32>) {
    %in = onnx.InstanceNormalization(%x, %s, %b) {epsilon = 1.0e-03 : f32, onnx.name = "inorm"} : (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x3x3xf32>
    %gs = onnx.Constant() {value = dense<[2.0, 3.0]> : tensor<2xf32>} : () -> tensor<2xf32>
    %gb = onnx.Constant() {value = dense<[0.5, -0.5]> : tensor<2xf32>} : () -> tensor<2xf32>
    %gn = onnx.GroupNormalization(%x, %gs, %gb) {num_groups = 2 : i64, onnx.name = "gnorm"} : (tensor<2x4x3x3xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2x4x3x3xf32>
    func.return %in, %gn : tensor<2x4x3x3xf32>, tensor<2x4x3x3xf32>
  }
}

// -----

// MeanVarianceNormalization over trailing axes (N = 1 with the default axes
// [0, 2, 3]) is a layernorm of [C, H*W] with epsilon 1e-9; over a leading
// axis it stays onnx. A constant Gather index out of range stays onnx too
// (the CPU raises, as onnxruntime does).

// CHECK-LABEL: func.func @mvn
// CHECK: %[[R:.*]] = vx.reshape %{{.*}} {onnx.name = "mvn"} : tensor<1x4x2x3xf32> -> tensor<4x6xf32>
// CHECK: vx.layernorm %[[R]], %{{.*}} {onnx.name = "mvn", axis = 1 : i64, epsilon = 1.000000e-09 : f32}
// CHECK: onnx.MeanVarianceNormalization
// CHECK: onnx.Gather
builtin.module attributes {onnx.opset = 18 : i64} {
  func.func @mvn(%x: tensor<1x4x2x3xf32>, %z: tensor<2x4x3xf32>) -> (tensor<1x4x2x3xf32>, tensor<2x4x3xf32>, tensor<1x2x2x3xf32>) {
    %y = onnx.MeanVarianceNormalization(%x) {onnx.name = "mvn"} : (tensor<1x4x2x3xf32>) -> tensor<1x4x2x3xf32>
    %w = onnx.MeanVarianceNormalization(%z) {axes = array<i64: 0>, onnx.name = "lead"} : (tensor<2x4x3xf32>) -> tensor<2x4x3xf32>
    %i = onnx.Constant() {value = dense<[0, 4]> : tensor<2xi64>} : () -> tensor<2xi64>
    %g = onnx.Gather(%x, %i) {axis = 1 : i64, onnx.name = "oob"} : (tensor<1x4x2x3xf32>, tensor<2xi64>) -> tensor<1x2x2x3xf32>
    func.return %y, %w, %g : tensor<1x4x2x3xf32>, tensor<2x4x3xf32>, tensor<1x2x2x3xf32>
  }
}
