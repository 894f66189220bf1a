// RUN: vknn-opt --list-passes | FileCheck %s --check-prefix=LIST
// RUN: vknn-opt %s -p infer-shapes,const-fold --print-ir-after-all 2>&1 >/dev/null | FileCheck %s --check-prefix=AFTER
// RUN: vknn-opt %s -p infer-shapes --stats 2>&1 >/dev/null | FileCheck %s --check-prefix=STATS
// RUN: not vknn-opt %s -p no-such-pass 2>&1 | FileCheck %s --check-prefix=BADPASS
// RUN: not vknn-opt %s --pipeline nope 2>&1 | FileCheck %s --check-prefix=BADPIPE
// RUN: vknn-opt %s --pipeline standard | FileCheck %s --check-prefix=STD

// LIST: const-fold
// LIST: convert-onnx-to-vx
// LIST: infer-shapes

// AFTER: // -----// IR Dump After infer-shapes //----- //
// AFTER: onnx.Relu
// AFTER: // -----// IR Dump After const-fold //----- //

// STATS: // stats: 2 ops before, 2 ops after
// STATS: onnx.Relu

// BADPASS: vknn-opt: error: {{.*}}no-such-pass
// BADPIPE: vknn-opt: error: unknown pipeline 'nope'

// STD: vx.unary relu

builtin.module attributes {onnx.opset = 13 : i64} {
  func.func @main(%x: tensor<?x4xf32> {onnx.name = "x"}) -> tensor<*xf32> {
    %n = onnx.NoValue : none
    %y = onnx.Relu(%x) {onnx.name = "relu"} : (tensor<?x4xf32>) -> tensor<*xf32>
    func.return %y : tensor<*xf32>
  }
}
