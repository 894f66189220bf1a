// RUN: vknn-opt %s --split-input-file -p dce | FileCheck %s

// Dead onnx and vx ops and their constants go; used ones and custom ops stay.
// CHECK-LABEL: func.func @dead
// CHECK-NOT: onnx.Relu
// CHECK-NOT: dense<3.000000e+00>
// CHECK: onnx.custom "Foo"
// CHECK: %[[Y:.*]] = vx.unary sigmoid
// CHECK: func.return %[[Y]]
builtin.module attributes {onnx.opset = 13 : i64} {
  func.func @dead(%x: tensor<2xf32>) -> tensor<2xf32> {
    %c = onnx.Constant() {value = dense<3.0> : tensor<2xf32>} : () -> tensor<2xf32>
    %a = onnx.Add(%x, %c) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %r = onnx.Relu(%a) : (tensor<2xf32>) -> tensor<2xf32>
    %f = onnx.custom "Foo"(%x) domain "my.domain" : (tensor<2xf32>) -> tensor<2xf32>
    %y = vx.unary sigmoid %x : tensor<2xf32>
    %z = vx.unary relu %x : tensor<2xf32>
    func.return %y : tensor<2xf32>
  }
}
