// RUN: vknn-opt %s -p dequantize --verify-diagnostics | FileCheck %s

// A zero scale is no quantization at all: reported with the node's name.
builtin.module attributes {onnx.opset = 13 : i64} {
  func.func @zero_scale(%x: tensor<4xf32> {onnx.name = "x"}) -> tensor<4xf32> {
    // CHECK: dequantize: node 'q' has a zero or non-finite scale [0.0]
    %s = onnx.Constant() {value = dense<0.0> : tensor<f32>, onnx.name = "s"} : () -> tensor<f32>
    %q = onnx.QuantizeLinear(%x, %s) {onnx.name = "q"} : (tensor<4xf32>, tensor<f32>) -> tensor<4xui8>
    %d = onnx.DequantizeLinear(%q, %s) {onnx.name = "d"} : (tensor<4xui8>, tensor<f32>) -> tensor<4xf32>
    func.return %d : tensor<4xf32>
  }
}
