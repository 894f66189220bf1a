// RUN: vknn-opt %s --split-input-file -p dequantize | FileCheck %s
// RUN: vknn-opt %s --split-input-file -p 'dequantize{enabled=false}' | FileCheck %s --check-prefix=OFF

// A QDQ conv: the weight DQ folds to a float constant, the activation's
// Q -> DQ pair becomes scale / round / clamp / unscale.
builtin.module attributes {onnx.opset = 13 : i64} {
  // CHECK-LABEL: func.func @qdq_conv
  // CHECK-SAME: (%[[X:.*]]: tensor<1x2x4x4xf32>
  // CHECK-NOT: onnx.QuantizeLinear
  // CHECK-NOT: onnx.DequantizeLinear
  // CHECK: %[[S:.*]] = onnx.Constant() {value = dense<5.000000e-01> : tensor<f32>
  // CHECK: %[[D:.*]] = onnx.Div(%[[X]], %[[S]])
  // CHECK: %[[R:.*]] = onnx.Round(%[[D]])
  // CHECK: %[[C:.*]] = onnx.Clip(%[[R]], %{{.*}}, %{{.*}})
  // CHECK: %[[M:.*]] = onnx.Mul(%[[C]], %[[S]])
  // CHECK: %[[W:.*]] = onnx.Constant() {value = dense<{{\[\[\[\[}}7.500000e-01]], {{\[\[}}-5.000000e-01]]]]> : tensor<1x2x1x1xf32>
  // CHECK: onnx.Conv(%[[M]], %[[W]])
  // OFF-LABEL: func.func @qdq_conv
  // OFF: onnx.QuantizeLinear
  // OFF: onnx.DequantizeLinear
  func.func @qdq_conv(%x: tensor<1x2x4x4xf32> {onnx.name = "x"}) -> tensor<*xf32> {
    %s = onnx.Constant() {value = dense<0.5> : tensor<f32>, onnx.name = "s"} : () -> tensor<f32>
    %z = onnx.Constant() {value = dense<128> : tensor<ui8>, onnx.name = "z"} : () -> tensor<ui8>
    %q = onnx.QuantizeLinear(%x, %s, %z) {onnx.name = "q"} : (tensor<1x2x4x4xf32>, tensor<f32>, tensor<ui8>) -> tensor<1x2x4x4xui8>
    %dq = onnx.DequantizeLinear(%q, %s, %z) {onnx.name = "dq"} : (tensor<1x2x4x4xui8>, tensor<f32>, tensor<ui8>) -> tensor<1x2x4x4xf32>
    %wq = onnx.Constant() {value = dense<[[[[3]], [[-2]]]]> : tensor<1x2x1x1xi8>, onnx.name = "wq"} : () -> tensor<1x2x1x1xi8>
    %ws = onnx.Constant() {value = dense<0.25> : tensor<f32>, onnx.name = "ws"} : () -> tensor<f32>
    %w = onnx.DequantizeLinear(%wq, %ws) {onnx.name = "wdq"} : (tensor<1x2x1x1xi8>, tensor<f32>) -> tensor<1x2x1x1xf32>
    %y = onnx.Conv(%dq, %w) {onnx.name = "conv"} : (tensor<1x2x4x4xf32>, tensor<1x2x1x1xf32>) -> tensor<*xf32>
    func.return %y : tensor<*xf32>
  }
}

// -----

// QOperator: QLinearConv -> DQ, float Conv, and its output Q meets the next
// DQ; a lone Q at the graph output saturates, then casts exactly.
builtin.module attributes {onnx.opset = 13 : i64} {
  // CHECK-LABEL: func.func @qlinear
  // CHECK-NOT: onnx.QLinearConv
  // CHECK: %[[IN:.*]] = onnx.Mul
  // CHECK: %[[CONV:.*]] = onnx.Conv(%[[IN]], %{{.*}}) {{.*}}onnx.name = "qconv/conv"
  // CHECK: onnx.Div(%[[CONV]]
  // CHECK: onnx.Round
  // CHECK: %[[SAT:.*]] = onnx.Clip
  // CHECK: onnx.Cast(%[[SAT]]) {to = 2 : i64, vknn.exact_cast
  func.func @qlinear(%x: tensor<1x1x2x2xf32> {onnx.name = "x"}) -> tensor<*xui8> {
    %s = onnx.Constant() {value = dense<0.1> : tensor<f32>, onnx.name = "s"} : () -> tensor<f32>
    %z = onnx.Constant() {value = dense<0> : tensor<ui8>, onnx.name = "z"} : () -> tensor<ui8>
    %q = onnx.QuantizeLinear(%x, %s, %z) {onnx.name = "q"} : (tensor<1x1x2x2xf32>, tensor<f32>, tensor<ui8>) -> tensor<1x1x2x2xui8>
    %w = onnx.Constant() {value = dense<2> : tensor<1x1x1x1xi8>, onnx.name = "w"} : () -> tensor<1x1x1x1xi8>
    %ws = onnx.Constant() {value = dense<0.5> : tensor<f32>, onnx.name = "ws"} : () -> tensor<f32>
    %wz = onnx.Constant() {value = dense<0> : tensor<i8>, onnx.name = "wz"} : () -> tensor<i8>
    %ys = onnx.Constant() {value = dense<0.2> : tensor<f32>, onnx.name = "ys"} : () -> tensor<f32>
    %y = onnx.QLinearConv(%q, %s, %z, %w, %ws, %wz, %ys, %z) {onnx.name = "qconv"} : (tensor<1x1x2x2xui8>, tensor<f32>, tensor<ui8>, tensor<1x1x1x1xi8>, tensor<f32>, tensor<i8>, tensor<f32>, tensor<ui8>) -> tensor<*xui8>
    func.return %y : tensor<*xui8>
  }
}

// -----

// Left alone: a float graph, and a Q whose scale is not a constant.
builtin.module attributes {onnx.opset = 13 : i64} {
  // CHECK-LABEL: func.func @leave
  // CHECK: onnx.Relu
  // CHECK: onnx.QuantizeLinear(%{{.*}}, %s)
  func.func @leave(%x: tensor<4xf32> {onnx.name = "x"}, %s: tensor<f32> {onnx.name = "s"}) -> (tensor<4xf32>, tensor<4xui8>) {
    %r = onnx.Relu(%x) {onnx.name = "relu"} : (tensor<4xf32>) -> tensor<4xf32>
    %q = onnx.QuantizeLinear(%x, %s) {onnx.name = "q"} : (tensor<4xf32>, tensor<f32>) -> tensor<4xui8>
    func.return %r, %q : tensor<4xf32>, tensor<4xui8>
  }
}
