// RUN: vknn-opt %s --split-input-file -p 'partition{target=lavapipe},merge-epilogues' | FileCheck %s

// The relu marked as the conv's epilogue joins it: one vkd.with_epilogue
// (the conv, then the fused body, then vkd.yield) standing where the
// epilogue stood. A pointwise region not marked as an epilogue stays.

// CHECK-LABEL: func.func @conv_relu
// CHECK: %[[M:.*]] = vkd.with_epilogue(%[[X:.*]], %[[W:.*]]) attributes {vkd.backend = "vulkan", onnx.name = "conv", vkd.nodes = "conv,relu"} : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x8x8xf32> {
// CHECK-NEXT: ^{{.*}}(%[[A:.*]]: tensor<1x4x8x8xf32>, %[[B:.*]]: tensor<8x4x3x3xf32>):
// CHECK-NEXT: %[[C:.*]] = vx.conv %[[A]], %[[B]]
// CHECK-NEXT: %[[R:.*]] = vx.fused_pointwise %[[C]] {vx.epilogue
// CHECK: vkd.yield %[[R]]
// CHECK-NEXT: }
// CHECK-NEXT: vx.fused_pointwise %[[M]] {onnx.name = "tanh"
// CHECK-NOT: vx.epilogue

func.func @conv_relu(%x: tensor<1x4x8x8xf32>) -> tensor<1x8x8x8xf32> {
  %w = vx.constant dense<0.5> : tensor<8x4x3x3xf32>
  %c = vx.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.name = "conv"} : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x8x8xf32>
  %r = vx.fused_pointwise %c {vx.epilogue, onnx.name = "relu", vx.fused_names = ["relu"]} : (tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32> {
  ^bb0(%a: f32):
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %a, %z : f32
    vx.yield %m : f32
  }
  %t = vx.fused_pointwise %r {onnx.name = "tanh"} : (tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32> {
  ^bb0(%a: f32):
    %m = math.tanh %a : f32
    vx.yield %m : f32
  }
  func.return %t : tensor<1x8x8x8xf32>
}

// -----

// A residual add computed after the producer: its operand joins the group's
// inputs; the group stands after it. A producer read twice stays apart.

// CHECK-LABEL: func.func @residual
// CHECK: %[[Q:.*]] = vx.concat
// CHECK-NEXT: vkd.with_epilogue(%{{.*}}, %{{.*}}, %[[Q]])
// CHECK-LABEL: func.func @shared
// CHECK-NOT: vkd.with_epilogue

func.func @residual(%x: tensor<1x4x8x8xf32>, %y: tensor<1x4x16x16xf32>) -> tensor<1x8x8x8xf32> {
  %w = vx.constant dense<0.5> : tensor<8x4x3x3xf32>
  %c = vx.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x8x8xf32>
  %p = vx.pool max %y {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = false, count_include_pad = false} : tensor<1x4x16x16xf32> -> tensor<1x4x8x8xf32>
  %q = vx.concat %p, %p {axis = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x8x8x8xf32>
  %r = vx.fused_pointwise %c, %q {vx.epilogue} : (tensor<1x8x8x8xf32>, tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32> {
  ^bb0(%a: f32, %b: f32):
    %m = arith.addf %a, %b : f32
    vx.yield %m : f32
  }
  func.return %r : tensor<1x8x8x8xf32>
}

func.func @shared(%x: tensor<1x4x8x8xf32>) -> (tensor<1x8x8x8xf32>, tensor<1x8x8x8xf32>) {
  %w = vx.constant dense<0.5> : tensor<8x4x3x3xf32>
  %c = vx.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x8x8xf32>
  %r = vx.fused_pointwise %c {vx.epilogue} : (tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32> {
  ^bb0(%a: f32):
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %a, %z : f32
    vx.yield %m : f32
  }
  func.return %r, %c : tensor<1x8x8x8xf32>, tensor<1x8x8x8xf32>
}
