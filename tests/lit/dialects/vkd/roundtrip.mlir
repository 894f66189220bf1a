// RUN: vknn-opt %s | vknn-opt | FileCheck %s
// RUN: vknn-opt %s --print-op-generic | vknn-opt | FileCheck %s

// Both levels of the dialect parse, verify and print back, also through the
// generic form. Graph level: a Vulkan segment holding a view, an epilogue
// group, an alias and a storage conversion; a CPU segment. Buffer level: a
// Vulkan segment with its arenas, allocations, a weight, a subview, an
// upload, a dispatch, a barrier, a copy and a download.

// CHECK: vkd.kernel @conv_fp16_0 shader "conv" fp16 local_size [256, 1, 1] bindings [read, read, write] push 8 spec [1, 2] = [16, 1.500000e+00] fastmath defines {PW_EPI = "1"} sources {pw_body.glsl = "x = 1;\0A"}
// CHECK-LABEL: func.func @graph
// CHECK: %[[S:.*]] = vkd.segment "vulkan"(%{{.*}}) attributes {vkd.arg_storage = ["f32:flat"]} : (tensor<1x16x96xf32>) -> tensor<1x16x32xf32> {
// CHECK: vkd.view %{{.*}} offset 32 strides [0, 16, 96, 1] : tensor<1x16x96xf32> -> tensor<1x2x16x16xf32>
// CHECK: vkd.with_epilogue(
// CHECK: vkd.alias %{{.*}} : tensor<1x2x16x16xf32> -> tensor<1x16x32xf32>
// CHECK: vkd.convert %{{.*}} from "f32:flat" to "f16:flat" : tensor<1x16x32xf32> -> tensor<1x16x32xf32>
// CHECK: vkd.segment "cpu"(%[[S]])
// CHECK-LABEL: func.func @buffers
// CHECK: vkd.vulkan_segment(%{{.*}}) : (tensor<1x8xf32>) -> tensor<1x8xf32> {
// CHECK-NEXT: ^{{.*}}(%[[HX:.*]]: tensor<1x8xf32>):
// CHECK-NEXT: %[[A:.*]] = vkd.arena device size 64 align 16
// CHECK-NEXT: %[[C:.*]] = vkd.arena const size 64 align 16
// CHECK-NEXT: %[[T0:.*]] = vkd.alloc device %[[A]][0] size 32 : !vkd.tensor<1x8xf32, flat>
// CHECK-NEXT: %[[T1:.*]] = vkd.alloc device %[[A]][32] size 32 : !vkd.tensor<1x8xf32, flat>
// CHECK-NEXT: %[[W:.*]] = vkd.weight dense_resource<w0> : tensor<8xf32> in %[[C]][0] : !vkd.tensor<8xf32, flat, f16>
// CHECK-NEXT: %{{.*}} = vkd.subview %[[T1]][16] : !vkd.tensor<1x8xf32, flat> -> !vkd.tensor<4xf32, flat>
// CHECK-NEXT: vkd.upload %[[HX]] to %[[T0]] : tensor<1x8xf32> to !vkd.tensor<1x8xf32, flat>
// CHECK-NEXT: vkd.dispatch @conv_fp16_0(%[[T0]], %[[W]], %[[T1]]) ranges [0, 32, 0, 16, 0, 32] push [8, -1] groups [1, 1, 1] step 0 label "n (Relu)" {onnx.name = "n"}
// CHECK-NEXT: vkd.barrier [compute] to [transfer, compute](%[[T1]] : !vkd.tensor<1x8xf32, flat>) ranges [0, 32]
// CHECK-NEXT: vkd.copy %[[T1]][0] to %[[T0]][0] size 32
// CHECK-NEXT: vkd.barrier [transfer] to [host]() ranges []
// CHECK-NEXT: %[[H:.*]] = vkd.download %[[T0]] : !vkd.tensor<1x8xf32, flat> -> tensor<1x8xf32>
// CHECK-NEXT: vkd.yield %[[H]] : tensor<1x8xf32>


vkd.kernel @conv_fp16_0 shader "conv" fp16 local_size [256, 1, 1] bindings [read, read, write] push 8 spec [1, 2] = [16, 1.5] fastmath defines {PW_EPI = "1"} sources {"pw_body.glsl" = "x = 1;\n"}

func.func @graph(%x: tensor<1x16x96xf32>) -> tensor<1x16x32xf32> {
  %s = vkd.segment "vulkan"(%x) attributes {vkd.arg_storage = ["f32:flat"]} : (tensor<1x16x96xf32>) -> tensor<1x16x32xf32> {
  ^bb0(%a: tensor<1x16x96xf32>):
    %q = vkd.view %a offset 0 strides [0, 16, 96, 1] : tensor<1x16x96xf32> -> tensor<1x2x16x16xf32>
    %k = vkd.view %a offset 32 strides [0, 16, 96, 1] : tensor<1x16x96xf32> -> tensor<1x2x16x16xf32>
    %v = vkd.view %a offset 64 strides [0, 16, 96, 1] : tensor<1x16x96xf32> -> tensor<1x2x16x16xf32>
    %att = vx.attention %q, %k, %v {scale = 0.25 : f32} : (tensor<1x2x16x16xf32>, tensor<1x2x16x16xf32>, tensor<1x2x16x16xf32>) -> tensor<1x2x16x16xf32>
    %e = vkd.with_epilogue(%att) : (tensor<1x2x16x16xf32>) -> tensor<1x2x16x16xf32> {
    ^bb1(%i: tensor<1x2x16x16xf32>):
      %p = vx.pool max %i {kernel = array<i64: 1, 1>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = false, count_include_pad = false} : tensor<1x2x16x16xf32> -> tensor<1x2x16x16xf32>
      %r = vx.fused_pointwise %p {vx.epilogue} : (tensor<1x2x16x16xf32>) -> tensor<1x2x16x16xf32> {
      ^bb2(%z: f32):
        %c = arith.constant 0.0 : f32
        %m = arith.maximumf %z, %c : f32
        vx.yield %m : f32
      }
      vkd.yield %r : tensor<1x2x16x16xf32>
    }
    %m = vkd.alias %e : tensor<1x2x16x16xf32> -> tensor<1x16x32xf32>
    %h = vkd.convert %m from "f32:flat" to "f16:flat" : tensor<1x16x32xf32> -> tensor<1x16x32xf32>
    vkd.yield %h : tensor<1x16x32xf32>
  }
  %t = vkd.segment "cpu"(%s) : (tensor<1x16x32xf32>) -> tensor<1x16x32xf32> {
  ^bb0(%b: tensor<1x16x32xf32>):
    %r = vx.unary "relu" %b {vkd.reason = "Relu: disabled by Config.disable_vk_ops"} : tensor<1x16x32xf32>
    vkd.yield %r : tensor<1x16x32xf32>
  }
  func.return %t : tensor<1x16x32xf32>
}

func.func @buffers(%x: tensor<1x8xf32>) -> tensor<1x8xf32> {
  %r = vkd.vulkan_segment(%x) : (tensor<1x8xf32>) -> tensor<1x8xf32> {
  ^bb0(%hx: tensor<1x8xf32>):
    %a = vkd.arena device size 64 align 16
    %c = vkd.arena const size 64 align 16
    %t0 = vkd.alloc device %a[0] size 32 : !vkd.tensor<1x8xf32, flat>
    %t1 = vkd.alloc device %a[32] size 32 : !vkd.tensor<1x8xf32, flat>
    %w = vkd.weight dense_resource<w0> : tensor<8xf32> in %c[0] : !vkd.tensor<8xf32, flat, f16>
    %s = vkd.subview %t1[16] : !vkd.tensor<1x8xf32, flat> -> !vkd.tensor<4xf32, flat>
    vkd.upload %hx to %t0 : tensor<1x8xf32> to !vkd.tensor<1x8xf32, flat>
    vkd.dispatch @conv_fp16_0(%t0, %w, %t1) ranges [0, 32, 0, 16, 0, 32] push [8, 4294967295] groups [1, 1, 1] step 0 label "n (Relu)" {onnx.name = "n"} : !vkd.tensor<1x8xf32, flat>, !vkd.tensor<8xf32, flat, f16>, !vkd.tensor<1x8xf32, flat>
    vkd.barrier [compute] to [transfer, compute](%t1 : !vkd.tensor<1x8xf32, flat>) ranges [0, 32]
    vkd.copy %t1[0] to %t0[0] size 32 : !vkd.tensor<1x8xf32, flat> to !vkd.tensor<1x8xf32, flat>
    vkd.barrier [transfer] to [host]() ranges []
    %h = vkd.download %t0 : !vkd.tensor<1x8xf32, flat> -> tensor<1x8xf32>
    vkd.yield %h : tensor<1x8xf32>
  }
  func.return %r : tensor<1x8xf32>
}
