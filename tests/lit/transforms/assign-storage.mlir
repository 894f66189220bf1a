// RUN: vknn-opt %s --split-input-file -p 'partition{target=lavapipe},merge-epilogues,fold-views,assign-storage{precision=high}' | FileCheck %s --check-prefix=HIGH
// RUN: vknn-opt %s --split-input-file -p 'partition{target=lavapipe},merge-epilogues,fold-views,assign-storage{precision=low}' | FileCheck %s --check-prefix=LOW
// RUN: vknn-opt %s --split-input-file -p 'partition{target=lavapipe},merge-epilogues,fold-views,assign-storage{precision=normal}' | FileCheck %s --check-prefix=NORMAL
// RUN: vknn-opt %s --split-input-file -p 'partition{target=lavapipe},merge-epilogues,fold-views,assign-storage{precision=low device_layout="flat"}' | FileCheck %s --check-prefix=FLAT
// RUN: vknn-opt %s --split-input-file -p 'partition{target=generic},merge-epilogues,fold-views,assign-storage{precision=low}' | FileCheck %s --check-prefix=GENERIC

// A small CNN. The conv (with its relu) and the pool run NC4HW4 (their
// results are stored so); the segment input is flat and converted once; the
// conv reads an OHWI copy of its weight; the convert_layout and the flatten
// are flat. `high` stores fp32, `low` fp16, `normal` keeps the softmax's
// input and output in fp32 (its producer, the gemm, runs fp32, reading a
// converted copy of its fp16 input).

// HIGH: vkd.segment "vulkan"(%{{.*}}) attributes {vkd.members = [{{.*}}], vkd.arg_storage = ["f32:flat"]}
// HIGH: %[[C:.*]] = vkd.convert %{{.*}} from "f32:flat" to "f32:nc4hw4"
// HIGH-NEXT: vkd.with_epilogue(%[[C]], %{{.*}}) attributes {{{.*}}vkd.variant = "fp32", vkd.packed = [array<i64: 0>, array<i64: 0>], vkd.const_forms = {"1" = "ohwi"}, vkd.storage = ["f32:nc4hw4"]}
// HIGH: vx.pool {{.*}}vkd.storage = ["f32:nc4hw4"]
// HIGH: vx.convert_layout {{.*}}vkd.storage = ["f32:flat"]
// HIGH: vx.gemm {{.*}}vkd.variant = "fp32", vkd.storage = ["f32:flat"]
// HIGH-NOT: vkd.convert

// LOW: vkd.segment "vulkan"(%{{.*}}) attributes {vkd.members = [{{.*}}], vkd.arg_storage = ["f16:flat"]}
// LOW: vkd.convert %{{.*}} from "f16:flat" to "f16:nc4hw4"
// LOW: vkd.storage = ["f16:nc4hw4"]
// LOW: vx.softmax {{.*}}vkd.variant = "fp16", vkd.storage = ["f16:flat"]

// NORMAL: %[[F:.*]] = vx.reshape {{.*}}vkd.storage = ["f16:flat"]
// NORMAL-NEXT: %[[F32:.*]] = vkd.convert %[[F]] from "f16:flat" to "f32:flat"
// NORMAL-NEXT: vx.gemm %[[F32]], {{.*}}vkd.variant = "fp32", vkd.storage = ["f32:flat"], vkd.fp32_rules = ["softmax_io"]
// NORMAL-NEXT: vx.softmax {{.*}}vkd.variant = "fp32", vkd.storage = ["f32:flat"], vkd.fp32_rules = ["softmax_io"]

// FLAT-LABEL: func.func @cnn
// FLAT-NOT: ":nc4hw4"
// FLAT-NOT: vkd.convert
// FLAT-LABEL: func.func @big_input

// No 16-bit storage on the generic target: `low` runs fp32.
// GENERIC-NOT: f16

func.func @cnn(%x: tensor<1x4x8x8xf32>) -> tensor<1x10xf32> {
  %w = vx.constant dense<0.5> : tensor<8x4x3x3xf32>
  %c = vx.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.name = "conv", vx.layout = #vx<layout nc4hw4>} : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x8x8xf32>
  %r = vx.fused_pointwise %c {vx.epilogue, onnx.name = "relu", vx.fused_names = ["relu"], vx.layout = #vx<layout nc4hw4>} : (tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32> {
  ^bb0(%a: f32):
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %a, %z : f32
    vx.yield %m : f32
  }
  %p = vx.pool max %r {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = false, count_include_pad = false, onnx.name = "pool", vx.layout = #vx<layout nc4hw4>} : tensor<1x8x8x8xf32> -> tensor<1x8x4x4xf32>
  %t = vx.convert_layout %p from nc4hw4 to flat : tensor<1x8x4x4xf32>
  %f = vx.reshape %t {onnx.name = "flatten", vx.layout = #vx<layout flat>} : tensor<1x8x4x4xf32> -> tensor<1x128xf32>
  %fw = vx.constant dense<0.25> : tensor<10x128xf32>
  %g = vx.gemm %f, %fw {trans_a = false, trans_b = true, alpha = 1.0 : f32, beta = 1.0 : f32, onnx.name = "fc", vx.layout = #vx<layout flat>} : (tensor<1x128xf32>, tensor<10x128xf32>) -> tensor<1x10xf32>
  %s = vx.softmax %g {axis = 1 : i64, onnx.name = "softmax", vx.layout = #vx<layout flat>} : tensor<1x10xf32> -> tensor<1x10xf32>
  func.return %s : tensor<1x10xf32>
}

// -----

// A large segment input (>= 4096 elements) stays fp32 on the device under
// fp16 storage and is converted there (numpy's conversion costs more).

// LOW-LABEL: func.func @big_input
// LOW: vkd.segment "vulkan"(%{{.*}}) attributes {vkd.members = [{{.*}}], vkd.arg_storage = ["f32:flat"]}
// LOW: vkd.convert %{{.*}} from "f32:flat" to "f16:flat"
func.func @big_input(%x: tensor<8192xf32>) -> tensor<8192xf32> {
  %r = vx.unary "relu" %x : tensor<8192xf32>
  %s = vx.unary "sigmoid" %r : tensor<8192xf32>
  func.return %s : tensor<8192xf32>
}
