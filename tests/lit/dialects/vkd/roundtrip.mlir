// RUN: vknn-opt %s | vknn-opt | FileCheck %s
// RUN: vknn-opt %s --print-op-generic | vknn-opt | FileCheck %s

// A whole plan: upload, conv + relu epilogue on the GPU, a CPU fallback op
// in the middle, then back to the GPU and down to the host output.

// CHECK:      vkd.kernel @conv3x3_f16 shader "conv2d" fp16 epilogue "relu" local_size [64, 1, 1] bindings [read, read, read, write] push 16 spec [0, 1]
// CHECK-NEXT: vkd.kernel @add_f16 shader "binary" fp16 local_size [256, 1, 1] bindings [read, read, write] push 8 spec []
// CHECK-LABEL: vkd.plan @b0 inputs {x = array<i64: 1, 3, 8, 8>} {
// CHECK-NEXT:   %[[X:.*]] = vkd.input "x" : !vkd.tensor<1x3x8x8xf32, nchw>
// CHECK-NEXT:   %[[Y:.*]] = vkd.output "y" : !vkd.tensor<1x8x8x8xf32, nchw>
// CHECK-NEXT:   %[[DEV:.*]] = vkd.arena device size 4096 align 16
// CHECK-NEXT:   %[[HOST:.*]] = vkd.arena host size 4096 align 64
// CHECK-NEXT:   %[[W:.*]] = vkd.weight dense_resource<conv_w> : tensor<8x4x3x3xf16> packing "oihw4i4o" : !vkd.tensor<8x4x3x3xf16, flat>
// CHECK-NEXT:   %[[B:.*]] = vkd.weight dense_resource<conv_b> : tensor<8xf32> : !vkd.tensor<8xf32, flat>
// CHECK-NEXT:   %[[A0:.*]] = vkd.alloc %[[DEV]][0] size 512 : !vkd.tensor<1x3x8x8xf32, nc4hw4, f16>
// CHECK-NEXT:   %[[A1:.*]] = vkd.alloc %[[DEV]][512] size 1024 : !vkd.tensor<1x8x8x8xf32, nc4hw4, f16>
// CHECK-NEXT:   %[[A2:.*]] = vkd.alloc %[[DEV]][1536] size 1024 : !vkd.tensor<1x8x8x8xf32, nc4hw4, f16>
// CHECK-NEXT:   %[[H0:.*]] = vkd.alloc %[[HOST]][0] size 2048 : !vkd.tensor<1x8x8x8xf32, nchw>
// CHECK-NEXT:   %[[H1:.*]] = vkd.alloc %[[HOST]][2048] size 2048 : !vkd.tensor<1x8x8x8xf32, nchw>
// CHECK-NEXT:   vkd.vulkan_segment queries 4 {
// CHECK-NEXT:     vkd.upload %[[X]] to %[[A0]] : !vkd.tensor<1x3x8x8xf32, nchw> to !vkd.tensor<1x3x8x8xf32, nc4hw4, f16>
// CHECK-NEXT:     vkd.barrier transfer to compute %[[A0]] : !vkd.tensor<1x3x8x8xf32, nc4hw4, f16>
// CHECK-NEXT:     vkd.dispatch @conv3x3_f16(%[[A0]], %[[W]], %[[B]], %[[A1]]) push [8, 8, 1, 1.000000e-01] spec [3, 8] groups [1, 2, 1] query 0 {onnx.name = "conv1"} : !vkd.tensor<1x3x8x8xf32, nc4hw4, f16>, !vkd.tensor<8x4x3x3xf16, flat>, !vkd.tensor<8xf32, flat>, !vkd.tensor<1x8x8x8xf32, nc4hw4, f16>
// CHECK-NEXT:     vkd.barrier compute to transfer{{$}}
// CHECK-NEXT:     vkd.download %[[A1]] to %[[H0]] : !vkd.tensor<1x8x8x8xf32, nc4hw4, f16> to !vkd.tensor<1x8x8x8xf32, nchw>
// CHECK-NEXT:   }
// CHECK-NEXT:   vkd.cpu_segment ins(%[[H0]] : !vkd.tensor<1x8x8x8xf32, nchw>) outs(%[[H1]] : !vkd.tensor<1x8x8x8xf32, nchw>) {
// CHECK-NEXT:   ^{{.*}}(%[[T:.*]]: tensor<1x8x8x8xf32>):
// CHECK-NEXT:     %[[R:.*]] = onnx.Relu(%[[T]]) {onnx.name = "relu1", vkd.reason = "disabled by Config.disable_vk_ops"} : (tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
// CHECK-NEXT:     vkd.yield %[[R]] : tensor<1x8x8x8xf32>
// CHECK-NEXT:   }
// CHECK-NEXT:   vkd.vulkan_segment {
// CHECK-NEXT:     vkd.upload %[[H1]] to %[[A2]]
// CHECK-NEXT:     vkd.barrier host to compute{{$}}
// CHECK-NEXT:     vkd.dispatch @add_f16(%[[A2]], %[[A1]], %[[A2]]) push [128, 0x7fc00000 : f32] spec [] groups [1, 1, 1] base [0, 0, 0] {onnx.name = "add1"}
// CHECK-NEXT:     vkd.copy %[[A2]][256] to %[[A1]] size 256 :
// CHECK-NEXT:     vkd.barrier compute to host %[[A1]] :
// CHECK-NEXT:     vkd.download %[[A1]] to %[[Y]] :
// CHECK-NEXT:   }
// CHECK-NEXT: }

builtin.module {
  vkd.kernel @conv3x3_f16 shader "conv2d" fp16 epilogue "relu" local_size [64, 1, 1] bindings [read, read, read, write] push 16 spec [0, 1]
  vkd.kernel @add_f16 shader "binary" fp16 local_size [256, 1, 1] bindings [read, read, write] push 8 spec []

  vkd.plan @b0 inputs {x = array<i64: 1, 3, 8, 8>} {
    %x = vkd.input "x" : !vkd.tensor<1x3x8x8xf32, nchw>
    %y = vkd.output "y" : !vkd.tensor<1x8x8x8xf32, nchw>
    %dev = vkd.arena device size 4096 align 16
    %host = vkd.arena host size 4096 align 64
    %w = vkd.weight dense_resource<conv_w> : tensor<8x4x3x3xf16> packing "oihw4i4o" : !vkd.tensor<8x4x3x3xf16, flat>
    %b = vkd.weight dense_resource<conv_b> : tensor<8xf32> : !vkd.tensor<8xf32, flat>
    %a0 = vkd.alloc %dev[0] size 512 : !vkd.tensor<1x3x8x8xf32, nc4hw4, f16>
    %a1 = vkd.alloc %dev[512] size 1024 : !vkd.tensor<1x8x8x8xf32, nc4hw4, f16>
    %a2 = vkd.alloc %dev[1536] size 1024 : !vkd.tensor<1x8x8x8xf32, nc4hw4, f16>
    %h0 = vkd.alloc %host[0] size 2048 : !vkd.tensor<1x8x8x8xf32, nchw>
    %h1 = vkd.alloc %host[2048] size 2048 : !vkd.tensor<1x8x8x8xf32, nchw>
    vkd.vulkan_segment queries 4 {
      vkd.upload %x to %a0 : !vkd.tensor<1x3x8x8xf32, nchw> to !vkd.tensor<1x3x8x8xf32, nc4hw4, f16>
      vkd.barrier transfer to compute %a0 : !vkd.tensor<1x3x8x8xf32, nc4hw4, f16>
      vkd.dispatch @conv3x3_f16(%a0, %w, %b, %a1) push [8, 8, 1, 1.000000e-01] spec [3, 8] groups [1, 2, 1] query 0 {onnx.name = "conv1"} : !vkd.tensor<1x3x8x8xf32, nc4hw4, f16>, !vkd.tensor<8x4x3x3xf16, flat>, !vkd.tensor<8xf32, flat>, !vkd.tensor<1x8x8x8xf32, nc4hw4, f16>
      vkd.barrier compute to transfer
      vkd.download %a1 to %h0 : !vkd.tensor<1x8x8x8xf32, nc4hw4, f16> to !vkd.tensor<1x8x8x8xf32, nchw>
    }
    vkd.cpu_segment ins(%h0 : !vkd.tensor<1x8x8x8xf32, nchw>) outs(%h1 : !vkd.tensor<1x8x8x8xf32, nchw>) {
    ^bb0(%t: tensor<1x8x8x8xf32>):
      %r = "onnx.Relu"(%t) {onnx.name = "relu1", vkd.reason = "disabled by Config.disable_vk_ops"} : (tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
      vkd.yield %r : tensor<1x8x8x8xf32>
    }
    vkd.vulkan_segment {
      vkd.upload %h1 to %a2 : !vkd.tensor<1x8x8x8xf32, nchw> to !vkd.tensor<1x8x8x8xf32, nc4hw4, f16>
      vkd.barrier host to compute
      vkd.dispatch @add_f16(%a2, %a1, %a2) push [128, 0x7fc00000 : f32] spec [] groups [1, 1, 1] base [0, 0, 0] {onnx.name = "add1"} : !vkd.tensor<1x8x8x8xf32, nc4hw4, f16>, !vkd.tensor<1x8x8x8xf32, nc4hw4, f16>, !vkd.tensor<1x8x8x8xf32, nc4hw4, f16>
      vkd.copy %a2[256] to %a1 size 256 : !vkd.tensor<1x8x8x8xf32, nc4hw4, f16> to !vkd.tensor<1x8x8x8xf32, nc4hw4, f16>
      vkd.barrier compute to host %a1 : !vkd.tensor<1x8x8x8xf32, nc4hw4, f16>
      vkd.download %a1 to %y : !vkd.tensor<1x8x8x8xf32, nc4hw4, f16> to !vkd.tensor<1x8x8x8xf32, nchw>
    }
  }
}
