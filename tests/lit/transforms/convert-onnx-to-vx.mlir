// RUN: vknn-opt %s --split-input-file -p convert-onnx-to-vx | FileCheck %s

// The light-model CNN head (opset 9): constants keep their names, the shape
// constant of Reshape dies, Dropout is its input, every op keeps onnx.name.

// CHECK-LABEL: func.func @cnn
// CHECK-SAME: (%[[X:.*]]: tensor<1x3x8x8xf32>)
// CHECK: %[[W:.*]] = vx.constant {onnx.name = "w"} dense<5.000000e-01> : tensor<4x3x3x3xf32>
// CHECK: %[[B:.*]] = vx.constant {onnx.name = "b"}
// CHECK: %[[C:.*]] = vx.conv %[[X]], %[[W]], %[[B]] {onnx.name = "conv1", strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
// CHECK: %[[R:.*]] = vx.unary relu %[[C]] {onnx.name = "relu1"} : tensor<1x4x8x8xf32>
// CHECK: %[[P:.*]] = vx.pool max %[[R]] {onnx.name = "pool1", kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = false, count_include_pad = false} : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>
// CHECK: %[[F:.*]] = vx.reshape %[[P]] {onnx.name = "flat"} : tensor<1x4x4x4xf32> -> tensor<1x64xf32>
// CHECK: %[[G:.*]] = vx.gemm %[[F]], %{{.*}}, %{{.*}} {onnx.name = "fc", trans_a = false, trans_b = true, alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32}
// CHECK: %[[S:.*]] = vx.softmax %[[G]] {onnx.name = "prob", axis = 1 : i64} : tensor<1x10xf32> -> tensor<1x10xf32>
// CHECK: func.return %[[S]]
builtin.module attributes {onnx.opset = 9 : i64} {
  func.func @cnn(%x: tensor<1x3x8x8xf32>) -> tensor<1x10xf32> {
    %w = onnx.Constant() {value = dense<0.5> : tensor<4x3x3x3xf32>, onnx.name = "w"} : () -> tensor<4x3x3x3xf32>
    %b = onnx.Constant() {value = dense<0.1> : tensor<4xf32>, onnx.name = "b"} : () -> tensor<4xf32>
    %0 = onnx.Conv(%x, %w, %b) {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, onnx.name = "conv1"} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
    %1 = onnx.Relu(%0) {onnx.name = "relu1"} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    %2 = onnx.MaxPool(%1) {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, onnx.name = "pool1"} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
    %s = onnx.Constant() {value = dense<[1, -1]> : tensor<2xi64>, onnx.name = "shape"} : () -> tensor<2xi64>
    %3 = onnx.Reshape(%2, %s) {onnx.name = "flat"} : (tensor<1x4x4x4xf32>, tensor<2xi64>) -> tensor<1x64xf32>
    %fw = onnx.Constant() {value = dense<0.5> : tensor<10x64xf32>, onnx.name = "fw"} : () -> tensor<10x64xf32>
    %fb = onnx.Constant() {value = dense<0.5> : tensor<10xf32>, onnx.name = "fb"} : () -> tensor<10xf32>
    %4 = onnx.Gemm(%3, %fw, %fb) {transB = 1 : i64, onnx.name = "fc"} : (tensor<1x64xf32>, tensor<10x64xf32>, tensor<10xf32>) -> tensor<1x10xf32>
    %5, %m = onnx.Dropout(%4) {onnx.name = "drop"} : (tensor<1x10xf32>) -> (tensor<1x10xf32>, tensor<1x10xf32>)
    %6 = onnx.Softmax(%5) {onnx.name = "prob"} : (tensor<1x10xf32>) -> tensor<1x10xf32>
    func.return %6 : tensor<1x10xf32>
  }
}

// -----

// DenseNet / Inception-v2 / ResNet / ShuffleNet blocks (opset 9).

// CHECK-LABEL: func.func @blocks
// CHECK-SAME: (%[[X:.*]]: tensor<1x4x8x8xf32>, %[[S:.*]]: tensor<4xf32>)
// CHECK: %[[BN:.*]] = vx.batchnorm %[[X]], %[[S]], %[[S]], %[[S]], %[[S]] {onnx.name = "bn", epsilon = 1.000000e-03 : f32}
// CHECK: %[[U:.*]] = vx.reshape %[[S]] {onnx.name = "unsq"} : tensor<4xf32> -> tensor<4x1x1xf32>
// CHECK: %[[M:.*]] = vx.binary mul %[[BN]], %[[U]] {onnx.name = "mul"} : (tensor<1x4x8x8xf32>, tensor<4x1x1xf32>) -> tensor<1x4x8x8xf32>
// CHECK: %[[A:.*]] = vx.binary add %[[M]], %[[U]] {onnx.name = "add"}
// CHECK: %[[S1:.*]] = vx.binary add %[[A]], %[[X]] {onnx.name = "sum"}
// CHECK: %[[S2:.*]] = vx.binary add %[[S1]], %[[M]] {onnx.name = "sum"}
// CHECK: %[[AP:.*]] = vx.pool avg %[[S2]] {onnx.name = "avg", kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, ceil_mode = false, count_include_pad = true} : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>
// CHECK: %[[L:.*]] = vx.lrn %[[X]] {onnx.name = "lrn", size = 3 : i64, alpha = 1.000000e-04 : f32, beta = 7.500000e-01 : f32, bias = 2.000000e+00 : f32}
// CHECK: %[[CC:.*]] = vx.concat %[[L]], %[[X]] {onnx.name = "cat", axis = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x8x8x8xf32>
// CHECK: %[[R:.*]] = vx.reshape %[[CC]] {onnx.name = "r1"} : tensor<1x8x8x8xf32> -> tensor<1x2x4x8x8xf32>
// CHECK: %[[T:.*]] = vx.transpose %[[R]] {onnx.name = "shuffle", perm = array<i64: 0, 2, 1, 3, 4>} : tensor<1x2x4x8x8xf32> -> tensor<1x4x2x8x8xf32>
// CHECK: %[[GP:.*]] = vx.pool avg %[[AP]] {onnx.name = "gap", kernel = array<i64: 4, 4>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = false, count_include_pad = false} : tensor<1x4x4x4xf32> -> tensor<1x4x1x1xf32>
builtin.module attributes {onnx.opset = 9 : i64} {
  func.func @blocks(%x: tensor<1x4x8x8xf32>, %s: tensor<4xf32>) -> (tensor<1x4x1x1xf32>, tensor<1x4x2x8x8xf32>) {
    %bn = onnx.BatchNormalization(%x, %s, %s, %s, %s) {epsilon = 1.0e-3 : f32, onnx.name = "bn"} : (tensor<1x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
    %u = onnx.Unsqueeze(%s) {axes = array<i64: 1, 2>, onnx.name = "unsq"} : (tensor<4xf32>) -> tensor<4x1x1xf32>
    %m = onnx.Mul(%bn, %u) {onnx.name = "mul"} : (tensor<1x4x8x8xf32>, tensor<4x1x1xf32>) -> tensor<1x4x8x8xf32>
    %a = onnx.Add(%m, %u) {onnx.name = "add"} : (tensor<1x4x8x8xf32>, tensor<4x1x1xf32>) -> tensor<1x4x8x8xf32>
    %sum = onnx.Sum(%a, %x, %m) {onnx.name = "sum"} : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    %ap = onnx.AveragePool(%sum) {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, count_include_pad = 1 : i64, onnx.name = "avg"} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
    %l = onnx.LRN(%x) {size = 3 : i64, bias = 2.0 : f32, onnx.name = "lrn"} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    %c = onnx.Concat(%l, %x) {axis = 1 : i64, onnx.name = "cat"} : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x8x8x8xf32>
    %shape = onnx.Constant() {value = dense<[1, 2, 4, 8, 8]> : tensor<5xi64>} : () -> tensor<5xi64>
    %r = onnx.Reshape(%c, %shape) {onnx.name = "r1"} : (tensor<1x8x8x8xf32>, tensor<5xi64>) -> tensor<1x2x4x8x8xf32>
    %t = onnx.Transpose(%r) {perm = array<i64: 0, 2, 1, 3, 4>, onnx.name = "shuffle"} : (tensor<1x2x4x8x8xf32>) -> tensor<1x4x2x8x8xf32>
    %g = onnx.GlobalAveragePool(%ap) {onnx.name = "gap"} : (tensor<1x4x4x4xf32>) -> tensor<1x4x1x1xf32>
    func.return %g, %t : tensor<1x4x1x1xf32>, tensor<1x4x2x8x8xf32>
  }
}

// -----

// auto_pad becomes explicit pads (SAME_UPPER puts the odd pixel at the end),
// and a constant made by ConstantOfShape becomes a splat.

// CHECK-LABEL: func.func @auto_pad
// CHECK: vx.conv {{.*}}pads = array<i64: 0, 0, 1, 1>{{.*}} -> tensor<1x4x4x4xf32>
// CHECK: vx.pool max {{.*}}pads = array<i64: 1, 1, 0, 0>{{.*}} -> tensor<1x4x2x2xf32>
// CHECK: %[[Z:.*]] = vx.constant {onnx.name = "zeros"} dense<0.000000e+00> : tensor<2x2xf32>
// CHECK: func.return {{.*}}, %[[Z]]
builtin.module attributes {onnx.opset = 9 : i64} {
  func.func @auto_pad(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> (tensor<1x4x2x2xf32>, tensor<2x2xf32>) {
    %0 = onnx.Conv(%x, %w) {auto_pad = "SAME_UPPER", kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32>
    %1 = onnx.MaxPool(%0) {auto_pad = "SAME_LOWER", kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>} : (tensor<1x4x4x4xf32>) -> tensor<1x4x2x2xf32>
    %s = onnx.Constant() {value = dense<2> : tensor<2xi64>} : () -> tensor<2xi64>
    %z = onnx.ConstantOfShape(%s) {onnx.name = "zeros"} : (tensor<2xi64>) -> tensor<2x2xf32>
    func.return %1, %z : tensor<1x4x2x2xf32>, tensor<2x2xf32>
  }
}

// -----

// Softmax before opset 13 normalizes the input flattened at `axis`.

// CHECK-LABEL: func.func @softmax_v9
// CHECK: %[[F:.*]] = vx.reshape %{{.*}} {onnx.name = "sm"} : tensor<2x3x4xf32> -> tensor<2x12xf32>
// CHECK: %[[S:.*]] = vx.softmax %[[F]] {onnx.name = "sm", axis = 1 : i64} : tensor<2x12xf32> -> tensor<2x12xf32>
// CHECK: %[[R:.*]] = vx.reshape %[[S]] {onnx.name = "sm"} : tensor<2x12xf32> -> tensor<2x3x4xf32>
// CHECK: vx.log_softmax %{{.*}} {axis = 2 : i64} : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
builtin.module attributes {onnx.opset = 9 : i64} {
  func.func @softmax_v9(%x: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>) {
    %0 = onnx.Softmax(%x) {onnx.name = "sm"} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    %1 = onnx.LogSoftmax(%x) {axis = -1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    func.return %0, %1 : tensor<2x3x4xf32>, tensor<2x3x4xf32>
  }
}

// -----

// From opset 13 softmax is along one axis (default -1, normalized).

// CHECK-LABEL: func.func @softmax_v13
// CHECK-NOT: vx.reshape
// CHECK: vx.softmax %{{.*}} {axis = 2 : i64} : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
builtin.module attributes {onnx.opset = 13 : i64} {
  func.func @softmax_v13(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
    %0 = onnx.Softmax(%x) : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    func.return %0 : tensor<2x3x4xf32>
  }
}

// -----

// Transformer pieces (opset 17/20): MatMul (a 1-D operand gains and loses a
// unit dim), LayerNormalization, Gelu, Erf, Pow/Sqrt/Div/Sub.

// CHECK-LABEL: func.func @transformer
// CHECK-SAME: (%[[X:.*]]: tensor<2x8x16xf32>, %[[W:.*]]: tensor<16x32xf32>, %[[V:.*]]: tensor<16xf32>)
// CHECK: %[[MM:.*]] = vx.matmul %[[X]], %[[W]] {onnx.name = "mm"} : (tensor<2x8x16xf32>, tensor<16x32xf32>) -> tensor<2x8x32xf32>
// CHECK: %[[VR:.*]] = vx.reshape %[[V]] {onnx.name = "mv"} : tensor<16xf32> -> tensor<16x1xf32>
// CHECK: %[[MV:.*]] = vx.matmul %[[X]], %[[VR]] {onnx.name = "mv"} : (tensor<2x8x16xf32>, tensor<16x1xf32>) -> tensor<2x8x1xf32>
// CHECK: vx.reshape %[[MV]] {onnx.name = "mv"} : tensor<2x8x1xf32> -> tensor<2x8xf32>
// CHECK: vx.layernorm %[[X]], %[[V]], %[[V]] {onnx.name = "ln", axis = 2 : i64, epsilon = 1.000000e-05 : f32}
// CHECK: vx.unary gelu_tanh %[[MM]] {onnx.name = "gelu"} : tensor<2x8x32xf32>
// CHECK: vx.unary erf
// CHECK: vx.binary pow
// CHECK: vx.unary sqrt
// CHECK: vx.binary div
// CHECK: vx.binary sub
builtin.module attributes {onnx.opset = 20 : i64} {
  func.func @transformer(%x: tensor<2x8x16xf32>, %w: tensor<16x32xf32>, %v: tensor<16xf32>) -> (tensor<2x8x32xf32>, tensor<2x8xf32>, tensor<2x8x16xf32>) {
    %mm = onnx.MatMul(%x, %w) {onnx.name = "mm"} : (tensor<2x8x16xf32>, tensor<16x32xf32>) -> tensor<2x8x32xf32>
    %mv = onnx.MatMul(%x, %v) {onnx.name = "mv"} : (tensor<2x8x16xf32>, tensor<16xf32>) -> tensor<2x8xf32>
    %ln = onnx.LayerNormalization(%x, %v, %v) {axis = -1 : i64, onnx.name = "ln"} : (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
    %g = onnx.Gelu(%mm) {approximate = "tanh", onnx.name = "gelu"} : (tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
    %e = onnx.Erf(%g) : (tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
    %two = onnx.Constant() {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
    %p = onnx.Pow(%ln, %two) : (tensor<2x8x16xf32>, tensor<f32>) -> tensor<2x8x16xf32>
    %q = onnx.Sqrt(%p) : (tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
    %d = onnx.Div(%q, %v) : (tensor<2x8x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
    %s = onnx.Sub(%d, %x) : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
    func.return %e, %mv, %s : tensor<2x8x32xf32>, tensor<2x8xf32>, tensor<2x8x16xf32>
  }
}

// -----

// Shape-path ops: Shape becomes a constant; Reshape resolves 0 and -1;
// Gather normalizes constant negative indices; Squeeze/Unsqueeze/Flatten
// are reshapes; Identity is its input.

// CHECK-LABEL: func.func @shapes
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK: %[[SH:.*]] = vx.constant {onnx.name = "shape"} dense<[3, 4]> : tensor<2xi64>
// CHECK: %[[R:.*]] = vx.reshape %[[X]] {onnx.name = "reshape"} : tensor<2x3x4xf32> -> tensor<2x12xf32>
// CHECK: %[[I:.*]] = vx.constant {onnx.name = "gather"} dense<[2, 0]> : tensor<2xi64>
// CHECK: vx.gather %[[X]], %[[I]] {onnx.name = "gather", axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<2x2x4xf32>
// CHECK: vx.reshape %[[X]] {onnx.name = "unsq"} : tensor<2x3x4xf32> -> tensor<2x3x1x4xf32>
// CHECK: vx.reshape %{{.*}} {onnx.name = "sq"} : tensor<2x3x1x4xf32> -> tensor<2x3x4xf32>
// CHECK: vx.reshape %{{.*}} {onnx.name = "flatten"} : tensor<2x3x4xf32> -> tensor<6x4xf32>
// CHECK: func.return %[[SH]], %[[R]], {{.*}}, %[[X]] :
builtin.module attributes {onnx.opset = 15 : i64} {
  func.func @shapes(%x: tensor<2x3x4xf32>) -> (tensor<2xi64>, tensor<2x12xf32>, tensor<2x2x4xf32>, tensor<2x3x4xf32>, tensor<6x4xf32>, tensor<2x3x4xf32>) {
    %sh = onnx.Shape(%x) {start = 1 : i64, onnx.name = "shape"} : (tensor<2x3x4xf32>) -> tensor<2xi64>
    %t = onnx.Constant() {value = dense<[0, -1]> : tensor<2xi64>} : () -> tensor<2xi64>
    %r = onnx.Reshape(%x, %t) {onnx.name = "reshape"} : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<2x12xf32>
    %idx = onnx.Constant() {value = dense<[-1, 0]> : tensor<2xi64>} : () -> tensor<2xi64>
    %g = onnx.Gather(%x, %idx) {axis = -2 : i64, onnx.name = "gather"} : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<2x2x4xf32>
    %ax = onnx.Constant() {value = dense<-2> : tensor<1xi64>} : () -> tensor<1xi64>
    %u = onnx.Unsqueeze(%x, %ax) {onnx.name = "unsq"} : (tensor<2x3x4xf32>, tensor<1xi64>) -> tensor<2x3x1x4xf32>
    %q = onnx.Squeeze(%u, %ax) {onnx.name = "sq"} : (tensor<2x3x1x4xf32>, tensor<1xi64>) -> tensor<2x3x4xf32>
    %f = onnx.Flatten(%q) {axis = 2 : i64, onnx.name = "flatten"} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
    %i = onnx.Identity(%x) : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    func.return %sh, %r, %g, %q, %f, %i : tensor<2xi64>, tensor<2x12xf32>, tensor<2x2x4xf32>, tensor<2x3x4xf32>, tensor<6x4xf32>, tensor<2x3x4xf32>
  }
}

// -----

// Slice: opset-1 attributes and opset-10+ constant inputs (negative steps,
// out-of-range ends) both become one clamped start/end/step per dim.

// CHECK-LABEL: func.func @slice_v9
// CHECK: vx.slice %{{.*}} {starts = array<i64: 0, 1, 0>, ends = array<i64: 2, 3, 4>, steps = array<i64: 1, 1, 1>} : tensor<2x3x4xf32> -> tensor<2x2x4xf32>
builtin.module attributes {onnx.opset = 9 : i64} {
  func.func @slice_v9(%x: tensor<2x3x4xf32>) -> tensor<2x2x4xf32> {
    %0 = onnx.Slice(%x) {starts = array<i64: 1>, ends = array<i64: 1000>, axes = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x2x4xf32>
    func.return %0 : tensor<2x2x4xf32>
  }
}

// -----

// CHECK-LABEL: func.func @slice_v13
// CHECK: vx.slice %{{.*}} {starts = array<i64: 0, 0, 3>, ends = array<i64: 2, 3, -1>, steps = array<i64: 1, 1, -2>} : tensor<2x3x4xf32> -> tensor<2x3x2xf32>
builtin.module attributes {onnx.opset = 13 : i64} {
  func.func @slice_v13(%x: tensor<2x3x4xf32>) -> tensor<2x3x2xf32> {
    %s = onnx.Constant() {value = dense<-1> : tensor<1xi64>} : () -> tensor<1xi64>
    %e = onnx.Constant() {value = dense<-9223372036854775807> : tensor<1xi64>} : () -> tensor<1xi64>
    %a = onnx.Constant() {value = dense<-1> : tensor<1xi64>} : () -> tensor<1xi64>
    %st = onnx.Constant() {value = dense<-2> : tensor<1xi64>} : () -> tensor<1xi64>
    %0 = onnx.Slice(%x, %s, %e, %a, %st) : (tensor<2x3x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x3x2xf32>
    func.return %0 : tensor<2x3x2xf32>
  }
}

// -----

// Reductions: attribute axes (ReduceMean before opset 18), input axes
// (ReduceSum from 13), and all axes when none are given.

// CHECK-LABEL: func.func @reduce_v13
// CHECK: vx.reduce mean %{{.*}} {axes = array<i64: 1, 2>, keepdims = true} : tensor<2x3x4xf32> -> tensor<2x1x1xf32>
// CHECK: vx.reduce sum %{{.*}} {axes = array<i64: 0>, keepdims = false} : tensor<2x3x4xf32> -> tensor<3x4xf32>
// CHECK: vx.reduce max %{{.*}} {axes = array<i64: 0, 1, 2>, keepdims = false} : tensor<2x3x4xf32> -> tensor<f32>
// CHECK: vx.reduce argmax %{{.*}} {axes = array<i64: 2>, keepdims = true, select_last_index = false} : tensor<2x3x4xf32> -> tensor<2x3x1xi64>
builtin.module attributes {onnx.opset = 13 : i64} {
  func.func @reduce_v13(%x: tensor<2x3x4xf32>) -> (tensor<2x1x1xf32>, tensor<3x4xf32>, tensor<f32>, tensor<2x3x1xi64>) {
    %0 = onnx.ReduceMean(%x) {axes = array<i64: -1, 1>} : (tensor<2x3x4xf32>) -> tensor<2x1x1xf32>
    %ax = onnx.Constant() {value = dense<0> : tensor<1xi64>} : () -> tensor<1xi64>
    %1 = onnx.ReduceSum(%x, %ax) {keepdims = 0 : i64} : (tensor<2x3x4xf32>, tensor<1xi64>) -> tensor<3x4xf32>
    %2 = onnx.ReduceMax(%x) {keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<f32>
    %3 = onnx.ArgMax(%x) {axis = -1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x1xi64>
    func.return %0, %1, %2, %3 : tensor<2x1x1xf32>, tensor<3x4xf32>, tensor<f32>, tensor<2x3x1xi64>
  }
}

// -----

// CHECK-LABEL: func.func @reduce_v18
// CHECK: vx.reduce mean %{{.*}} {axes = array<i64: 2>, keepdims = true} : tensor<2x3x4xf32> -> tensor<2x3x1xf32>
builtin.module attributes {onnx.opset = 18 : i64} {
  func.func @reduce_v18(%x: tensor<2x3x4xf32>) -> tensor<2x3x1xf32> {
    %ax = onnx.Constant() {value = dense<-1> : tensor<1xi64>} : () -> tensor<1xi64>
    %0 = onnx.ReduceMean(%x, %ax) : (tensor<2x3x4xf32>, tensor<1xi64>) -> tensor<2x3x1xf32>
    func.return %0 : tensor<2x3x1xf32>
  }
}

// -----

// Clip: attributes before opset 11, constant inputs after (a missing bound
// is the largest finite f32).

// CHECK-LABEL: func.func @clip_v6
// CHECK: vx.unary clip %{{.*}} {params = array<f32: 0.000000e+00, 6.000000e+00>} : tensor<4xf32>
builtin.module attributes {onnx.opset = 6 : i64} {
  func.func @clip_v6(%x: tensor<4xf32>) -> tensor<4xf32> {
    %0 = onnx.Clip(%x) {min = 0.0 : f32, max = 6.0 : f32} : (tensor<4xf32>) -> tensor<4xf32>
    func.return %0 : tensor<4xf32>
  }
}

// -----

// CHECK-LABEL: func.func @clip_v13
// CHECK: vx.unary clip %{{.*}} {params = array<f32: -1.000000e+00, 3.40282347e+38>} : tensor<4xf32>
builtin.module attributes {onnx.opset = 13 : i64} {
  func.func @clip_v13(%x: tensor<4xf32>) -> tensor<4xf32> {
    %lo = onnx.Constant() {value = dense<-1.0> : tensor<f32>} : () -> tensor<f32>
    %none = onnx.NoValue : none
    %0 = onnx.Clip(%x, %lo, %none) : (tensor<4xf32>, tensor<f32>, none) -> tensor<4xf32>
    func.return %0 : tensor<4xf32>
  }
}

// -----

// Activations with parameters, n-ary Max, Where, Cast, Expand.

// CHECK-LABEL: func.func @misc
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>, %[[Y:.*]]: tensor<3xf32>, %[[C:.*]]: tensor<2x3xi1>)
// CHECK: vx.unary leaky_relu %[[X]] {params = array<f32: 1.000000e-01>}
// CHECK: vx.unary hard_sigmoid %[[X]] {params = array<f32: 2.000000e-01, 5.000000e-01>}
// CHECK: vx.unary elu %[[X]] {params = array<f32: 1.000000e+00>}
// CHECK: %[[M1:.*]] = vx.binary max %[[X]], %[[Y]]
// CHECK: vx.binary max %[[M1]], %[[X]]
// CHECK: vx.select %[[C]], %[[X]], %[[Y]] : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK: vx.cast %[[X]] : tensor<2x3xf32> -> tensor<2x3xi32>
// CHECK: vx.expand %[[Y]] : tensor<3xf32> -> tensor<4x3xf32>
builtin.module attributes {onnx.opset = 13 : i64} {
  func.func @misc(%x: tensor<2x3xf32>, %y: tensor<3xf32>, %c: tensor<2x3xi1>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xi32>, tensor<4x3xf32>) {
    %0 = onnx.LeakyRelu(%x) {alpha = 0.1 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %1 = onnx.HardSigmoid(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %2 = onnx.Elu(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %3 = onnx.Max(%x, %y, %x) : (tensor<2x3xf32>, tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %4 = onnx.Where(%c, %x, %y) : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %5 = onnx.Cast(%x) {to = 6 : i64} : (tensor<2x3xf32>) -> tensor<2x3xi32>
    %s = onnx.Constant() {value = dense<[4, 1]> : tensor<2xi64>} : () -> tensor<2xi64>
    %6 = onnx.Expand(%y, %s) : (tensor<3xf32>, tensor<2xi64>) -> tensor<4x3xf32>
    func.return %0, %1, %2, %3, %4, %5, %6 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xi32>, tensor<4x3xf32>
  }
}

// -----

// Pad (opset 13 inputs), Resize with scales and with sizes, Upsample (opset 9).

// CHECK-LABEL: func.func @resample
// CHECK: vx.pad reflect %{{.*}} {pads = array<i64: 0, 0, 1, 2, 0, 0, 1, 2>} : tensor<1x2x3x3xf32> -> tensor<1x2x5x7xf32>
// CHECK: vx.pad constant %{{.*}} {pads = array<i64: 0, 0, 1, 1, 0, 0, 1, 1>, value = 5.000000e-01 : f64}
// CHECK: vx.resize linear %{{.*}} {scales = array<f32: 1.000000e+00, 1.000000e+00, 2.000000e+00, 2.000000e+00>, coordinate_mode = #vx<coordinate_mode half_pixel>, nearest_mode = #vx<nearest_mode round_prefer_floor>, cubic_coeff_a = -7.500000e-01 : f32, exclude_outside = false} : tensor<1x2x3x3xf32> -> tensor<1x2x6x6xf32>
// CHECK: vx.resize nearest %{{.*}} {scales = array<f32: 1.000000e+00, 1.000000e+00, 2.33333325, 2.33333325>, coordinate_mode = #vx<coordinate_mode asymmetric>, nearest_mode = #vx<nearest_mode floor>, {{.*}}} : tensor<1x2x3x3xf32> -> tensor<1x2x7x7xf32>
builtin.module attributes {onnx.opset = 13 : i64} {
  func.func @resample(%x: tensor<1x2x3x3xf32>) -> (tensor<1x2x5x7xf32>, tensor<1x2x5x5xf32>, tensor<1x2x6x6xf32>, tensor<1x2x7x7xf32>) {
    %p = onnx.Constant() {value = dense<[0, 0, 1, 2, 0, 0, 1, 2]> : tensor<8xi64>} : () -> tensor<8xi64>
    %0 = onnx.Pad(%x, %p) {mode = "reflect"} : (tensor<1x2x3x3xf32>, tensor<8xi64>) -> tensor<1x2x5x7xf32>
    %p1 = onnx.Constant() {value = dense<[0, 0, 1, 1, 0, 0, 1, 1]> : tensor<8xi64>} : () -> tensor<8xi64>
    %v = onnx.Constant() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
    %1 = onnx.Pad(%x, %p1, %v) : (tensor<1x2x3x3xf32>, tensor<8xi64>, tensor<f32>) -> tensor<1x2x5x5xf32>
    %none = onnx.NoValue : none
    %sc = onnx.Constant() {value = dense<[1.0, 1.0, 2.0, 2.0]> : tensor<4xf32>} : () -> tensor<4xf32>
    %2 = onnx.Resize(%x, %none, %sc) {mode = "linear"} : (tensor<1x2x3x3xf32>, none, tensor<4xf32>) -> tensor<1x2x6x6xf32>
    %sz = onnx.Constant() {value = dense<[1, 2, 7, 7]> : tensor<4xi64>} : () -> tensor<4xi64>
    %3 = onnx.Resize(%x, %none, %none, %sz) {coordinate_transformation_mode = "asymmetric", nearest_mode = "floor"} : (tensor<1x2x3x3xf32>, none, none, tensor<4xi64>) -> tensor<1x2x7x7xf32>
    func.return %0, %1, %2, %3 : tensor<1x2x5x7xf32>, tensor<1x2x5x5xf32>, tensor<1x2x6x6xf32>, tensor<1x2x7x7xf32>
  }
}

// -----

// CHECK-LABEL: func.func @upsample_v9
// CHECK: vx.resize nearest %{{.*}} {scales = array<f32: 1.000000e+00, 1.000000e+00, 2.000000e+00, 2.000000e+00>, coordinate_mode = #vx<coordinate_mode asymmetric>, nearest_mode = #vx<nearest_mode floor>, {{.*}}} : tensor<1x2x3x3xf32> -> tensor<1x2x6x6xf32>
builtin.module attributes {onnx.opset = 9 : i64} {
  func.func @upsample_v9(%x: tensor<1x2x3x3xf32>) -> tensor<1x2x6x6xf32> {
    %sc = onnx.Constant() {value = dense<[1.0, 1.0, 2.0, 2.0]> : tensor<4xf32>} : () -> tensor<4xf32>
    %0 = onnx.Upsample(%x, %sc) : (tensor<1x2x3x3xf32>, tensor<4xf32>) -> tensor<1x2x6x6xf32>
    func.return %0 : tensor<1x2x6x6xf32>
  }
}

// -----

// QDQ pairs: per-tensor (axis 0) and per-axis scales.

// CHECK-LABEL: func.func @qdq
// CHECK: %[[Q:.*]] = vx.quantize %{{.*}}, %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<1x4x2x2xf32>, tensor<f32>, tensor<ui8>) -> tensor<1x4x2x2xui8>
// CHECK: vx.dequantize %[[Q]], %{{.*}} {axis = 1 : i64} : (tensor<1x4x2x2xui8>, tensor<4xf32>) -> tensor<1x4x2x2xf32>
builtin.module attributes {onnx.opset = 13 : i64} {
  func.func @qdq(%x: tensor<1x4x2x2xf32>, %s: tensor<f32>, %z: tensor<ui8>, %sa: tensor<4xf32>) -> tensor<1x4x2x2xf32> {
    %q = onnx.QuantizeLinear(%x, %s, %z) : (tensor<1x4x2x2xf32>, tensor<f32>, tensor<ui8>) -> tensor<1x4x2x2xui8>
    %d = onnx.DequantizeLinear(%q, %sa) : (tensor<1x4x2x2xui8>, tensor<4xf32>) -> tensor<1x4x2x2xf32>
    func.return %d : tensor<1x4x2x2xf32>
  }
}

// -----

// Left alone: a Reshape whose shape is not a constant, an op with no
// lowering, a custom-domain op, and an op with a dynamic shape.

// CHECK-LABEL: func.func @left_alone
// CHECK: onnx.Reshape(%{{.*}}, %{{.*}}) {onnx.name = "dyn_reshape"}
// CHECK: onnx.NonZero
// CHECK: onnx.custom "Foo"
// CHECK: onnx.Relu(%{{.*}}) {onnx.name = "dyn_relu"}
// CHECK: vx.unary relu
builtin.module attributes {onnx.opset = 13 : i64} {
  func.func @left_alone(%x: tensor<2x3xf32>, %s: tensor<2xi64>, %d: tensor<?x3xf32>) -> (tensor<3x2xf32>, tensor<2x?xi64>, tensor<2x3xf32>, tensor<?x3xf32>, tensor<2x3xf32>) {
    %0 = onnx.Reshape(%x, %s) {onnx.name = "dyn_reshape"} : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<3x2xf32>
    %1 = onnx.NonZero(%x) : (tensor<2x3xf32>) -> tensor<2x?xi64>
    %2 = onnx.custom "Foo"(%x) domain "com.example" : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %3 = onnx.Relu(%d) {onnx.name = "dyn_relu"} : (tensor<?x3xf32>) -> tensor<?x3xf32>
    %4 = onnx.Relu(%2) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    func.return %0, %1, %2, %3, %4 : tensor<3x2xf32>, tensor<2x?xi64>, tensor<2x3xf32>, tensor<?x3xf32>, tensor<2x3xf32>
  }
}
