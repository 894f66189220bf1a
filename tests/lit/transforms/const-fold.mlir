// RUN: vknn-opt %s --split-input-file -p infer-shapes,const-fold | FileCheck %s

// Shape -> Gather -> Unsqueeze -> Concat -> Reshape: the head chain exporters
// emit for a flatten that keeps the batch dim folds away completely.
builtin.module attributes {onnx.opset = 13 : i64} {
  // CHECK-LABEL: func.func @head
  func.func @head(%x: tensor<?x4x2x2xf32> {onnx.name = "x"}) -> tensor<*xf32> {
    // CHECK-NOT: onnx.Shape
    // CHECK-NOT: onnx.Gather
    // CHECK-NOT: onnx.Concat
    // CHECK: %[[S:.*]] = onnx.Constant() {value = dense<[1, -1]> : tensor<2xi64>
    // CHECK: onnx.Reshape(%x, %[[S]]) {{.*}} -> tensor<1x16xf32>
    %s = onnx.Shape(%x) {onnx.name = "shape"} : (tensor<?x4x2x2xf32>) -> tensor<4xi64>
    %i = onnx.Constant() {value = dense<0> : tensor<i64>, onnx.name = "i"} : () -> tensor<i64>
    %b = onnx.Gather(%s, %i) {axis = 0 : i64, onnx.name = "gather"} : (tensor<4xi64>, tensor<i64>) -> tensor<*xi64>
    %ax = onnx.Constant() {value = dense<0> : tensor<1xi64>, onnx.name = "ax"} : () -> tensor<1xi64>
    %u = onnx.Unsqueeze(%b, %ax) {onnx.name = "unsq"} : (tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
    %m = onnx.Constant() {value = dense<-1> : tensor<1xi64>, onnx.name = "m"} : () -> tensor<1xi64>
    %shape = onnx.Concat(%u, %m) {axis = 0 : i64, onnx.name = "cat"} : (tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
    %y = onnx.Reshape(%x, %shape) {onnx.name = "reshape"} : (tensor<?x4x2x2xf32>, tensor<*xi64>) -> tensor<*xf32>
    func.return %y : tensor<*xf32>
  }
}

// -----

// ConstantOfShape becomes a splat constant; a large one lives in the weight
// store and prints as a resource handle, never as bytes.
builtin.module attributes {onnx.opset = 13 : i64} {
  // CHECK-LABEL: func.func @splat
  func.func @splat() -> (tensor<*xf32>, tensor<*xf32>) {
    %s = onnx.Constant() {value = dense<[64, 3, 7, 7]> : tensor<4xi64>, onnx.name = "s"} : () -> tensor<4xi64>
    // CHECK: onnx.Constant() {value = dense_resource<big> : tensor<64x3x7x7xf32>, onnx.name = "big"}
    %big = onnx.ConstantOfShape(%s) {value = dense<0.02> : tensor<1xf32>, onnx.name = "big"} : (tensor<4xi64>) -> tensor<*xf32>
    %t = onnx.Constant() {value = dense<[2, 2]> : tensor<2xi64>, onnx.name = "t"} : () -> tensor<2xi64>
    // CHECK: onnx.Constant() {value = dense<2.000000e-02> : tensor<2x2xf32>, onnx.name = "small"}
    %small = onnx.ConstantOfShape(%t) {value = dense<0.02> : tensor<1xf32>, onnx.name = "small"} : (tensor<2xi64>) -> tensor<*xf32>
    func.return %big, %small : tensor<*xf32>, tensor<*xf32>
  }
}

// -----

// Ops on constants fold through ONNX's reference implementation; ops reading
// an input, and random ops, stay.
builtin.module attributes {onnx.opset = 13 : i64} {
  // CHECK-LABEL: func.func @mixed
  func.func @mixed(%x: tensor<2xf32> {onnx.name = "x"}) -> (tensor<*xf32>, tensor<*xf32>) {
    %a = onnx.Constant() {value = dense<[1.0, 4.0]> : tensor<2xf32>, onnx.name = "a"} : () -> tensor<2xf32>
    // CHECK: %[[C:.*]] = onnx.Constant() {value = dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>, onnx.name = "sqrt"}
    %s = onnx.Sqrt(%a) {onnx.name = "sqrt"} : (tensor<2xf32>) -> tensor<*xf32>
    // CHECK: onnx.Add(%x, %[[C]])
    %y = onnx.Add(%x, %s) {onnx.name = "add"} : (tensor<2xf32>, tensor<*xf32>) -> tensor<*xf32>
    // CHECK: onnx.RandomUniform()
    %r = onnx.RandomUniform() {shape = array<i64: 2>, onnx.name = "rand"} : () -> tensor<*xf32>
    func.return %y, %r : tensor<*xf32>, tensor<*xf32>
  }
}

// -----

// vx ops on constants fold through their CPU kernels (the numeric oracle);
// a vx op reading an input stays.
// CHECK-LABEL: func.func @vx_ops
func.func @vx_ops(%x: tensor<3x2xf32>) -> (tensor<3x2xf32>, tensor<3x2xf32>) {
  // CHECK-NOT: vx.transpose
  // CHECK: %[[T:.*]] = vx.constant {{.*}}dense<{{\[}}[1.000000e+00, 4.000000e+00], [2.000000e+00, 5.000000e+00], [3.000000e+00, 6.000000e+00]]> : tensor<3x2xf32>
  %c = vx.constant {onnx.name = "c"} dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %t = vx.transpose %c {perm = array<i64: 1, 0>, onnx.name = "t"} : tensor<2x3xf32> -> tensor<3x2xf32>
  // CHECK: vx.binary add %x, %[[T]]
  %y = vx.binary add %x, %t {onnx.name = "add"} : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  func.return %t, %y : tensor<3x2xf32>, tensor<3x2xf32>
}
