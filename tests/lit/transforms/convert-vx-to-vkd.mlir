// RUN: vknn-opt %s --split-input-file -p 'partition{target=lavapipe},merge-epilogues,fold-views,assign-storage,convert-vx-to-vkd{fastmath=off}' | FileCheck %s
// RUN: vknn-opt %s --split-input-file -p 'partition{target=nvidia},merge-epilogues,fold-views,assign-storage,convert-vx-to-vkd' | FileCheck %s --check-prefix=NV

// Each op becomes the dispatches its kernel family records: one kernel per
// distinct pipeline (shader, variant, local size, bindings, push size, spec
// constants), every push word, group count and binding range explicit.
// Results get unplaced allocations (plan-memory places them); the segment
// input is uploaded first and the result downloaded last.

// CHECK: vkd.kernel @[[K0:unary_fp32_0]] shader "unary" fp32 local_size [256, 1, 1] bindings [read, write] push 16 spec [1] = [1] defines {} sources {}
// CHECK-NEXT: vkd.kernel @[[K1:unary_fp32_1]] shader "unary" fp32 local_size [256, 1, 1] bindings [read, write] push 16 spec [1] = [2] defines {} sources {}
// CHECK-LABEL: func.func @chain
// CHECK: %[[T:.*]] = vkd.vulkan_segment(%{{.*}}) : (tensor<1000xf32>) -> tensor<1000xf32> {
// CHECK-NEXT: ^{{.*}}(%[[X:.*]]: tensor<1000xf32>):
// CHECK-NEXT: %[[A:.*]] = vkd.alloc device size 4000 : !vkd.tensor<1000xf32, flat>
// CHECK-NEXT: %[[B:.*]] = vkd.alloc device size 4000 : !vkd.tensor<1000xf32, flat>
// CHECK-NEXT: %[[C:.*]] = vkd.alloc device size 4000 : !vkd.tensor<1000xf32, flat>
// CHECK-NEXT: vkd.upload %[[X]] to %[[A]]
// CHECK-NEXT: vkd.dispatch @[[K0]](%[[A]], %[[B]]) ranges [0, 4000, 0, 4000] push [1000, 0, 0, 0] groups [4, 1, 1] step 0 label "r (Relu)" {onnx.name = "r", vkd.kind = "Relu"}
// CHECK-NEXT: vkd.dispatch @[[K1]](%[[B]], %[[C]]) ranges [0, 4000, 0, 4000] push [1000, 0, 0, 0] groups [4, 1, 1] step 1 label "s (Sigmoid)"
// CHECK-NEXT: %[[R:.*]] = vkd.download %[[C]] : !vkd.tensor<1000xf32, flat> -> tensor<1000xf32>
// CHECK-NEXT: vkd.yield %[[R]]

// On a discrete GPU (target memory "rebar") the result is copied to
// host-cached readback memory first; kernels get fast math there.
// NV: vkd.kernel @unary_fp32_0 {{.*}} fastmath
// NV: %[[RB:.*]] = vkd.alloc readback size 4000
// NV: vkd.copy %{{.*}}[0] to %[[RB]][0] size 4000
// NV-NEXT: vkd.download %[[RB]]

func.func @chain(%x: tensor<1000xf32>) -> tensor<1000xf32> {
  %r = vx.unary "relu" %x {onnx.name = "r"} : tensor<1000xf32>
  %s = vx.unary "sigmoid" %r {onnx.name = "s"} : tensor<1000xf32>
  func.return %s : tensor<1000xf32>
}

// -----

// A batch-1 channel concat: its inputs' producers write straight into their
// slices of its result (their buffer is the concat's alloc at an offset), so
// the concat itself records nothing. A reshape of a flat tensor is the same
// bytes: the downloaded result is a subview of the concat's alloc.

// CHECK-LABEL: func.func @concat
// CHECK: %[[CAT:.*]] = vkd.alloc device size 512 : !vkd.tensor<1x8x4x4xf32, flat>
// CHECK: vkd.dispatch @{{.*}}(%{{.*}}, %[[CAT]]) ranges [0, 256, 0, 256] {{.*}} label "a (Relu)"
// CHECK-NEXT: vkd.dispatch @{{.*}}(%{{.*}}, %[[CAT]]) ranges [0, 256, 256, 256] {{.*}} label "b (Sigmoid)"
// CHECK-NOT: vkd.dispatch
// CHECK: vkd.download %{{.*}} : !vkd.tensor<128xf32, flat> -> tensor<128xf32>

func.func @concat(%x: tensor<1x4x4x4xf32>) -> tensor<128xf32> {
  %a = vx.unary "relu" %x {onnx.name = "a", vx.layout = #vx<layout flat>} : tensor<1x4x4x4xf32>
  %b = vx.unary "sigmoid" %x {onnx.name = "b", vx.layout = #vx<layout flat>} : tensor<1x4x4x4xf32>
  %c = vx.concat %a, %b {axis = 1 : i64, onnx.name = "cat", vx.layout = #vx<layout flat>} : (tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>) -> tensor<1x8x4x4xf32>
  %f = vx.reshape %c {onnx.name = "flat"} : tensor<1x8x4x4xf32> -> tensor<128xf32>
  func.return %f : tensor<128xf32>
}
