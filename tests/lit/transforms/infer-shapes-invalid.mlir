// RUN: vknn-opt %s -p infer-shapes --verify-diagnostics | FileCheck %s

// Inconsistent shapes are reported with ONNX's own message, naming the node.
builtin.module attributes {onnx.opset = 13 : i64} {
  func.func @bad(%a: tensor<2x3xf32> {onnx.name = "a"}, %b: tensor<4x5xf32> {onnx.name = "b"}) -> tensor<*xf32> {
    // CHECK: shape inference failed: {{.*}}(op_type:MatMul, node name: mm): {{.*}}Incompatible dimensions
    %c = onnx.MatMul(%a, %b) {onnx.name = "mm"} : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<*xf32>
    func.return %c : tensor<*xf32>
  }
}
