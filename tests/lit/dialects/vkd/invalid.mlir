// RUN: vknn-opt %s --split-input-file --verify-diagnostics | FileCheck %s

// Each case breaks one rule of the vkd verifiers.

// CHECK: vkd.tensor layout nc4hw4 needs rank 1..4, got rank 5 (use flat for other ranks)
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %r = vkd.vulkan_segment(%x) : (tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%h: tensor<2xf32>):
    %a = vkd.alloc device size 4096 : !vkd.tensor<1x2x3x4x5xf32, nc4hw4>
    vkd.yield %h : tensor<2xf32>
  }
  func.return %r : tensor<2xf32>
}

// -----

// CHECK: vkd.tensor shape [1, ?] must be static
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %r = vkd.vulkan_segment(%x) : (tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%h: tensor<2xf32>):
    %a = vkd.alloc device size 64 : !vkd.tensor<1x?xf32, flat>
    vkd.yield %h : tensor<2xf32>
  }
  func.return %r : tensor<2xf32>
}

// -----

// CHECK: vkd.alloc: size 4 is smaller than the tensor's 8 bytes
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %r = vkd.vulkan_segment(%x) : (tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%h: tensor<2xf32>):
    %a = vkd.alloc device size 4 : !vkd.tensor<2xf32, flat>
    vkd.yield %h : tensor<2xf32>
  }
  func.return %r : tensor<2xf32>
}

// -----

// CHECK: vkd.alloc: bytes [64, 96) are past the arena's 64
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %r = vkd.vulkan_segment(%x) : (tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%h: tensor<2xf32>):
    %d = vkd.arena device size 64 align 16
    %a = vkd.alloc device %d[64] size 32 : !vkd.tensor<2xf32, flat>
    vkd.yield %h : tensor<2xf32>
  }
  func.return %r : tensor<2xf32>
}

// -----

// CHECK: vkd.alloc: offset 8 is not a multiple of the arena's 16
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %r = vkd.vulkan_segment(%x) : (tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%h: tensor<2xf32>):
    %d = vkd.arena device size 64 align 16
    %a = vkd.alloc device %d[8] size 32 : !vkd.tensor<2xf32, flat>
    vkd.yield %h : tensor<2xf32>
  }
  func.return %r : tensor<2xf32>
}

// -----

// CHECK: vkd.arena: alignment 24 must be a power of two >= 16
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %r = vkd.vulkan_segment(%x) : (tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%h: tensor<2xf32>):
    %d = vkd.arena device size 64 align 24
    vkd.yield %h : tensor<2xf32>
  }
  func.return %r : tensor<2xf32>
}

// -----

// CHECK: vkd.dispatch @k: binding bytes [0, 64) are outside its 8
vkd.kernel @k shader "unary" fp32 local_size [64, 1, 1] bindings [read, write] push 0 spec [] = [] defines {} sources {}
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %r = vkd.vulkan_segment(%x) : (tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%h: tensor<2xf32>):
    %a = vkd.alloc device size 8 : !vkd.tensor<2xf32, flat>
    vkd.dispatch @k(%a, %a) ranges [0, 64, 0, 8] push [] groups [1, 1, 1] step 0 label "" : !vkd.tensor<2xf32, flat>, !vkd.tensor<2xf32, flat>
    vkd.yield %h : tensor<2xf32>
  }
  func.return %r : tensor<2xf32>
}

// -----

// CHECK: vkd.dispatch @k: 2 range values for 2 buffers (2 each: offset, size)
vkd.kernel @k shader "unary" fp32 local_size [64, 1, 1] bindings [read, write] push 0 spec [] = [] defines {} sources {}
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %r = vkd.vulkan_segment(%x) : (tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%h: tensor<2xf32>):
    %a = vkd.alloc device size 8 : !vkd.tensor<2xf32, flat>
    vkd.dispatch @k(%a, %a) ranges [0, 8] push [] groups [1, 1, 1] step 0 label "" : !vkd.tensor<2xf32, flat>, !vkd.tensor<2xf32, flat>
    vkd.yield %h : tensor<2xf32>
  }
  func.return %r : tensor<2xf32>
}

// -----

// CHECK: vkd.dispatch @k: groups must be 3 positive counts, got [0, 1, 1]
vkd.kernel @k shader "unary" fp32 local_size [64, 1, 1] bindings [read, write] push 0 spec [] = [] defines {} sources {}
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %r = vkd.vulkan_segment(%x) : (tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%h: tensor<2xf32>):
    %a = vkd.alloc device size 8 : !vkd.tensor<2xf32, flat>
    vkd.dispatch @k(%a, %a) ranges [0, 8, 0, 8] push [] groups [0, 1, 1] step 0 label "" : !vkd.tensor<2xf32, flat>, !vkd.tensor<2xf32, flat>
    vkd.yield %h : tensor<2xf32>
  }
  func.return %r : tensor<2xf32>
}

// -----

// CHECK: vkd.kernel @k: spec ids must be distinct and > 0 (0 is the local size), got [0]
vkd.kernel @k shader "unary" fp32 local_size [64, 1, 1] bindings [read, write] push 0 spec [0] = [1] defines {} sources {}

// -----

// CHECK: vkd.kernel @k: push constant size 6 must be a non-negative multiple of 4 bytes
vkd.kernel @k shader "unary" fp32 local_size [64, 1, 1] bindings [read, write] push 6 spec [] = [] defines {} sources {}

// -----

// CHECK: vkd.vulkan_segment: vkd.upload after the first command
vkd.kernel @k shader "unary" fp32 local_size [64, 1, 1] bindings [read, write] push 0 spec [] = [] defines {} sources {}
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %r = vkd.vulkan_segment(%x) : (tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%h: tensor<2xf32>):
    %a = vkd.alloc device size 8 : !vkd.tensor<2xf32, flat>
    vkd.dispatch @k(%a, %a) ranges [0, 8, 0, 8] push [] groups [1, 1, 1] step 0 label "" : !vkd.tensor<2xf32, flat>, !vkd.tensor<2xf32, flat>
    vkd.upload %h to %a : tensor<2xf32> to !vkd.tensor<2xf32, flat>
    vkd.yield %h : tensor<2xf32>
  }
  func.return %r : tensor<2xf32>
}

// -----

// CHECK: vkd.upload: the host writes flat tensors only
func.func @f(%x: tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32> {
  %r = vkd.vulkan_segment(%x) : (tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32> {
  ^bb0(%h: tensor<1x4x2x2xf32>):
    %a = vkd.alloc device size 64 : !vkd.tensor<1x4x2x2xf32, nc4hw4>
    vkd.upload %h to %a : tensor<1x4x2x2xf32> to !vkd.tensor<1x4x2x2xf32, nc4hw4>
    vkd.yield %h : tensor<1x4x2x2xf32>
  }
  func.return %r : tensor<1x4x2x2xf32>
}

// -----

// CHECK: vkd.view: offset 90 and strides [1] reach outside the 96 elements of the source
func.func @f(%x: tensor<96xf32>) -> tensor<8xf32> {
  %v = vkd.view %x offset 90 strides [1] : tensor<96xf32> -> tensor<8xf32>
  func.return %v : tensor<8xf32>
}

// -----

// CHECK: vkd.alias: tensor<96xf32> and tensor<8xf32> differ in element count
func.func @f(%x: tensor<96xf32>) -> tensor<8xf32> {
  %v = vkd.alias %x : tensor<96xf32> -> tensor<8xf32>
  func.return %v : tensor<8xf32>
}

// -----

// CHECK: storage form 'f8:flat': expected <f16|f32>:<flat|nc4hw4>, e.g. "f16:nc4hw4"
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  %v = vkd.convert %x from "f32:flat" to "f8:flat" : tensor<8xf32> -> tensor<8xf32>
  func.return %v : tensor<8xf32>
}

// -----

// CHECK: vkd.segment: backend 'gpu' is not one of ('vulkan', 'cpu')
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  %r = vkd.segment "gpu"(%x) : (tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%h: tensor<8xf32>):
    vkd.yield %h : tensor<8xf32>
  }
  func.return %r : tensor<8xf32>
}

// -----

// CHECK: vkd.with_epilogue: the body is a host op, a vx.fused_pointwise and vkd.yield
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  %r = vkd.with_epilogue(%x) : (tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%h: tensor<8xf32>):
    vkd.yield %h : tensor<8xf32>
  }
  func.return %r : tensor<8xf32>
}
