// RUN: vknn-opt %s --split-input-file --verify-diagnostics | FileCheck %s

// Each onnx op is verified against the ONNX schema of the module's opset.

builtin.module attributes {onnx.opset = 13 : i64} {
  func.func @f(%x: tensor<2x3xf32>) {
    // CHECK: onnx.Relu (node 'r', opset 13): expects 1..1 inputs, got 2
    %0 = onnx.Relu(%x, %x) {onnx.name = "r"} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    func.return
  }
}

// -----

builtin.module attributes {onnx.opset = 13 : i64} {
  func.func @f(%x: tensor<2x3xf32>) {
    // CHECK: onnx.Transpose (node 't', opset 13): attribute 'perm' must be INTS, got 1 : i64
    %0 = onnx.Transpose(%x) {perm = 1 : i64, onnx.name = "t"} : (tensor<2x3xf32>) -> tensor<3x2xf32>
    func.return
  }
}

// -----

builtin.module attributes {onnx.opset = 13 : i64} {
  func.func @f(%x: tensor<2x3xf32>) {
    // CHECK: onnx.Relu (node 'r', opset 13): unknown attribute 'alpha'
    %0 = onnx.Relu(%x) {alpha = 1.0 : f32, onnx.name = "r"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    func.return
  }
}

// -----

builtin.module attributes {onnx.opset = 13 : i64} {
  func.func @f(%x: tensor<2x3xi1>) {
    // CHECK: onnx.Relu (node 'r', opset 13): input 'X' has type tensor(bool), allowed:
    %0 = onnx.Relu(%x) {onnx.name = "r"} : (tensor<2x3xi1>) -> tensor<2x3xi1>
    func.return
  }
}

// -----

builtin.module attributes {onnx.opset = 13 : i64} {
  func.func @f(%x: tensor<2x3xf32>, %y: tensor<2x3xf16>) {
    // CHECK: onnx.Add (node 'a', opset 13): input 'B' has type tensor(float16) but type variable T is already tensor(float)
    %0 = onnx.Add(%x, %y) {onnx.name = "a"} : (tensor<2x3xf32>, tensor<2x3xf16>) -> tensor<2x3xf32>
    func.return
  }
}

// -----

builtin.module attributes {onnx.opset = 13 : i64} {
  func.func @f(%x: tensor<2x3xf32>) {
    // CHECK: onnx.Gelu: operator Gelu does not exist in opset 13
    %0 = onnx.Gelu(%x) {onnx.name = "g"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    func.return
  }
}

// -----

builtin.module attributes {onnx.opset = 13 : i64} {
  func.func @f(%x: tensor<2x3xf32>) {
    %n = onnx.NoValue : none
    // CHECK: onnx.Sum (node 's', opset 13): input 'data_0' is not optional but is none
    %0 = onnx.Sum(%x, %n) {onnx.name = "s"} : (tensor<2x3xf32>, none) -> tensor<2x3xf32>
    func.return
  }
}

// -----

builtin.module attributes {onnx.opset = 13 : i64} {
  func.func @f(%x: tensor<2x3xf32>) {
    // CHECK: onnx.LRN (node 'l', opset 13): missing required attribute 'size'
    %0 = onnx.LRN(%x) {onnx.name = "l"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    func.return
  }
}
