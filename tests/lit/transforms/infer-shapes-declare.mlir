// RUN: vknn-opt %s -p 'infer-shapes{dims="seq=7"}' | FileCheck %s --check-prefix=DIMS
// RUN: vknn-opt %s -p 'infer-shapes{shapes="ids=2x5"}' | FileCheck %s --check-prefix=SHAPES
// RUN: vknn-opt %s -p 'infer-shapes{shapes="ids=2x5x1"}' --verify-diagnostics | FileCheck %s --check-prefix=RANK
// RUN: vknn-opt %s -p 'infer-shapes{shapes="idz=2x5"}' --verify-diagnostics | FileCheck %s --check-prefix=NAME
// RUN: vknn-opt %s -p infer-shapes --verify-diagnostics | FileCheck %s --check-prefix=ERR

// A dynamic non-batch axis must be declared, by its name or by the input's shape.
builtin.module attributes {onnx.opset = 13 : i64} {
  // DIMS-LABEL: func.func @seq
  // DIMS-SAME: (%ids: tensor<1x7xi64> {{.*}}) -> tensor<1x7xi64>
  // SHAPES-LABEL: func.func @seq
  // SHAPES-SAME: (%ids: tensor<2x5xi64> {{.*}}) -> tensor<2x5xi64>
  // RANK: input 'ids': declared shape [2, 5, 1] does not match the model's ['?', '?']
  // NAME: shape declared for unknown input(s) ['idz']; inputs are: ids
  // ERR: input 'ids' axis 1 ('seq') is dynamic and not declared; declare it, e.g. infer-shapes{dims="seq=N"}
  func.func @seq(%ids: tensor<?x?xi64> {onnx.name = "ids", onnx.dim_params = ["batch", "seq"]}) -> tensor<*xi64> {
    %y = onnx.Identity(%ids) {onnx.name = "id"} : (tensor<?x?xi64>) -> tensor<*xi64>
    func.return %y : tensor<*xi64>
  }
}

