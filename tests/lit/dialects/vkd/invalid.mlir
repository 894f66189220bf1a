// RUN: vknn-opt %s --split-input-file --verify-diagnostics | FileCheck %s

// Each case breaks one rule of the vkd verifiers.

// CHECK: vkd.tensor layout nc4hw4 needs rank 1..4, got rank 5 (use flat for other ranks)
builtin.module {
  vkd.plan @b0 inputs {} {
    %dev = vkd.arena device size 4096 align 16
    %a = vkd.alloc %dev[0] size 4096 : !vkd.tensor<1x2x3x4x5xf32, nc4hw4>
  }
}

// -----

// CHECK: vkd.tensor shape [1, ?] must be static
builtin.module {
  vkd.plan @b0 inputs {} {
    %x = vkd.input "x" : !vkd.tensor<1x?xf32, nchw>
  }
}

// -----

// CHECK: vkd.tensor host layout nchw stores the logical type f32, not f16
builtin.module {
  vkd.plan @b0 inputs {x = array<i64: 4>} {
    %x = vkd.input "x" : !vkd.tensor<4xf32, nchw, f16>
  }
}

// -----

// CHECK: vkd.alloc at offset 8: offset must be a multiple of 16 bytes
builtin.module {
  vkd.plan @b0 inputs {} {
    %dev = vkd.arena device size 64 align 16
    %a = vkd.alloc %dev[8] size 16 : !vkd.tensor<4xf32, flat>
  }
}

// -----

// CHECK: vkd.alloc at offset 16: offset is not a multiple of the arena alignment 64
builtin.module {
  vkd.plan @b0 inputs {} {
    %dev = vkd.arena device size 256 align 64
    %a = vkd.alloc %dev[16] size 16 : !vkd.tensor<4xf32, flat>
  }
}

// -----

// CHECK: vkd.alloc at offset 48: [48, 80) overruns the arena of 64 bytes
builtin.module {
  vkd.plan @b0 inputs {} {
    %dev = vkd.arena device size 64 align 16
    %a = vkd.alloc %dev[48] size 32 : !vkd.tensor<8xf32, flat>
  }
}

// -----

// CHECK: vkd.alloc at offset 0: size 16 is smaller than !vkd.tensor<1x5xf32, nc4hw4> (32 bytes)
builtin.module {
  vkd.plan @b0 inputs {} {
    %dev = vkd.arena device size 64 align 16
    %a = vkd.alloc %dev[0] size 16 : !vkd.tensor<1x5xf32, nc4hw4>
  }
}

// -----

// CHECK: vkd.alloc at offset 0: a nchw tensor cannot live in a device arena
builtin.module {
  vkd.plan @b0 inputs {} {
    %dev = vkd.arena device size 64 align 16
    %a = vkd.alloc %dev[0] size 16 : !vkd.tensor<4xf32, nchw>
  }
}

// -----

// CHECK: vkd.arena: alignment 8 must be a power of two >= 16
builtin.module {
  vkd.plan @b0 inputs {} {
    %dev = vkd.arena device size 64 align 8
  }
}

// -----

// CHECK: vkd.weight w: the blob holds f32 but the tensor stores f16
builtin.module {
  vkd.plan @b0 inputs {} {
    %w = vkd.weight dense_resource<w> : tensor<8xf32> : !vkd.tensor<1x5xf32, nc4hw4, f16>
  }
}

// -----

// CHECK: vkd.weight w_size: the blob has 8 bytes but !vkd.tensor<1x5xf32, nc4hw4, f16> needs 16
builtin.module {
  vkd.plan @b0 inputs {} {
    %w = vkd.weight dense_resource<w_size> : tensor<4xf16> : !vkd.tensor<1x5xf32, nc4hw4, f16>
  }
}

// -----

// CHECK: vkd.plan @b0: input 'x' shape [-1, 3] is not static; a plan bucket serves exactly one shape per input
builtin.module {
  vkd.plan @b0 inputs {x = array<i64: -1, 3>} {
    %x = vkd.input "x" : !vkd.tensor<1x3xf32, nchw>
  }
}

// -----

// CHECK: vkd.plan @b0: inputs {x: [2, 3]} do not match its vkd.input tensors {x: [1, 3]}
builtin.module {
  vkd.plan @b0 inputs {x = array<i64: 2, 3>} {
    %x = vkd.input "x" : !vkd.tensor<1x3xf32, nchw>
  }
}

// -----

// CHECK: vkd.plan @b0: serves the same input shapes as @b1
builtin.module {
  vkd.plan @b0 inputs {x = array<i64: 1, 3>} {
    %x = vkd.input "x" : !vkd.tensor<1x3xf32, nchw>
  }
  vkd.plan @b1 inputs {x = array<i64: 1, 3>} {
    %x = vkd.input "x" : !vkd.tensor<1x3xf32, nchw>
  }
}

// -----

// CHECK: vkd.plan @b0: 'arith.constant' cannot appear in a plan
builtin.module {
  vkd.plan @b0 inputs {} {
    %c = arith.constant 0 : i32
  }
}

// -----

// CHECK: vkd.kernel @k: push constant size 6 must be a non-negative multiple of 4 bytes
builtin.module {
  vkd.kernel @k shader "unary" fp32 local_size [64, 1, 1] bindings [read, write] push 6 spec []
}

// -----

// CHECK: vkd.kernel @k: local_size must be 3 positive values, got [64, 0, 1]
builtin.module {
  vkd.kernel @k shader "unary" fp32 local_size [64, 0, 1] bindings [read, write] push 0 spec []
}

// -----

// CHECK: vkd.kernel @k: spec ids must be distinct and >= 0, got [1, 1]
builtin.module {
  vkd.kernel @k shader "unary" fp32 local_size [64, 1, 1] bindings [read, write] push 0 spec [1, 1]
}

// -----

// CHECK: vkd.dispatch @missing: no vkd.kernel named @missing
builtin.module {
  vkd.plan @b0 inputs {} {
    %dev = vkd.arena device size 64 align 16
    %a = vkd.alloc %dev[0] size 16 : !vkd.tensor<4xf32, flat>
    vkd.vulkan_segment {
      vkd.dispatch @missing(%a) push [] spec [] groups [1, 1, 1] : !vkd.tensor<4xf32, flat>
    }
  }
}

// -----

// CHECK: vkd.dispatch @k: passes 1 buffers but the kernel has 2 bindings
builtin.module {
  vkd.kernel @k shader "unary" fp32 local_size [64, 1, 1] bindings [read, write] push 4 spec []
  vkd.plan @b0 inputs {} {
    %dev = vkd.arena device size 64 align 16
    %a = vkd.alloc %dev[0] size 16 : !vkd.tensor<4xf32, flat>
    vkd.vulkan_segment {
      vkd.dispatch @k(%a) push [4] spec [] groups [1, 1, 1] : !vkd.tensor<4xf32, flat>
    }
  }
}

// -----

// CHECK: vkd.dispatch @k: pushes 8 bytes but the kernel's push constants are 4 bytes
builtin.module {
  vkd.kernel @k shader "unary" fp32 local_size [64, 1, 1] bindings [read, write] push 4 spec []
  vkd.plan @b0 inputs {} {
    %dev = vkd.arena device size 64 align 16
    %a = vkd.alloc %dev[0] size 16 : !vkd.tensor<4xf32, flat>
    %b = vkd.alloc %dev[16] size 16 : !vkd.tensor<4xf32, flat>
    vkd.vulkan_segment {
      vkd.dispatch @k(%a, %b) push [4, 0.5] spec [] groups [1, 1, 1] : !vkd.tensor<4xf32, flat>, !vkd.tensor<4xf32, flat>
    }
  }
}

// -----

// CHECK: vkd.dispatch @k: gives 0 specialization constants but the kernel declares 1
builtin.module {
  vkd.kernel @k shader "unary" fp32 local_size [64, 1, 1] bindings [read, write] push 0 spec [0]
  vkd.plan @b0 inputs {} {
    %dev = vkd.arena device size 64 align 16
    %a = vkd.alloc %dev[0] size 16 : !vkd.tensor<4xf32, flat>
    %b = vkd.alloc %dev[16] size 16 : !vkd.tensor<4xf32, flat>
    vkd.vulkan_segment {
      vkd.dispatch @k(%a, %b) push [] spec [] groups [1, 1, 1] : !vkd.tensor<4xf32, flat>, !vkd.tensor<4xf32, flat>
    }
  }
}

// -----

// CHECK: vkd.dispatch @k: groups must be 3 positive counts, got [1, 0, 1]
builtin.module {
  vkd.kernel @k shader "unary" fp32 local_size [64, 1, 1] bindings [read, write] push 0 spec []
  vkd.plan @b0 inputs {} {
    %dev = vkd.arena device size 64 align 16
    %a = vkd.alloc %dev[0] size 16 : !vkd.tensor<4xf32, flat>
    %b = vkd.alloc %dev[16] size 16 : !vkd.tensor<4xf32, flat>
    vkd.vulkan_segment {
      vkd.dispatch @k(%a, %b) push [] spec [] groups [1, 0, 1] : !vkd.tensor<4xf32, flat>, !vkd.tensor<4xf32, flat>
    }
  }
}

// -----

// CHECK: vkd.dispatch: buffer !vkd.tensor<4xf32, nchw> is a host tensor; GPU work uses device tensors
builtin.module {
  vkd.kernel @k shader "unary" fp32 local_size [64, 1, 1] bindings [read, write] push 0 spec []
  vkd.plan @b0 inputs {x = array<i64: 4>} {
    %x = vkd.input "x" : !vkd.tensor<4xf32, nchw>
    %dev = vkd.arena device size 64 align 16
    %b = vkd.alloc %dev[16] size 16 : !vkd.tensor<4xf32, flat>
    vkd.vulkan_segment {
      vkd.dispatch @k(%x, %b) push [] spec [] groups [1, 1, 1] : !vkd.tensor<4xf32, nchw>, !vkd.tensor<4xf32, flat>
    }
  }
}

// -----

// CHECK: vkd.dispatch @k: binding 1 is written but holds a constant vkd.weight
builtin.module {
  vkd.kernel @k shader "unary" fp32 local_size [64, 1, 1] bindings [read, write] push 0 spec []
  vkd.plan @b0 inputs {} {
    %dev = vkd.arena device size 64 align 16
    %a = vkd.alloc %dev[0] size 16 : !vkd.tensor<4xf32, flat>
    %w = vkd.weight dense_resource<w> : tensor<4xf32> : !vkd.tensor<4xf32, flat>
    vkd.vulkan_segment {
      vkd.dispatch @k(%a, %w) push [] spec [] groups [1, 1, 1] : !vkd.tensor<4xf32, flat>, !vkd.tensor<4xf32, flat>
    }
  }
}

// -----

// CHECK: vkd.vulkan_segment: dispatch query slots 2, 3 are outside the pool of 2 queries
builtin.module {
  vkd.kernel @k shader "unary" fp32 local_size [64, 1, 1] bindings [read, write] push 0 spec []
  vkd.plan @b0 inputs {} {
    %dev = vkd.arena device size 64 align 16
    %a = vkd.alloc %dev[0] size 16 : !vkd.tensor<4xf32, flat>
    %b = vkd.alloc %dev[16] size 16 : !vkd.tensor<4xf32, flat>
    vkd.vulkan_segment queries 2 {
      vkd.dispatch @k(%a, %b) push [] spec [] groups [1, 1, 1] query 0 : !vkd.tensor<4xf32, flat>, !vkd.tensor<4xf32, flat>
      vkd.dispatch @k(%b, %a) push [] spec [] groups [1, 1, 1] query 2 : !vkd.tensor<4xf32, flat>, !vkd.tensor<4xf32, flat>
    }
  }
}

// -----

// CHECK: vkd.vulkan_segment: query slot 1 used by two dispatches
builtin.module {
  vkd.kernel @k shader "unary" fp32 local_size [64, 1, 1] bindings [read, write] push 0 spec []
  vkd.plan @b0 inputs {} {
    %dev = vkd.arena device size 64 align 16
    %a = vkd.alloc %dev[0] size 16 : !vkd.tensor<4xf32, flat>
    %b = vkd.alloc %dev[16] size 16 : !vkd.tensor<4xf32, flat>
    vkd.vulkan_segment queries 4 {
      vkd.dispatch @k(%a, %b) push [] spec [] groups [1, 1, 1] query 0 : !vkd.tensor<4xf32, flat>, !vkd.tensor<4xf32, flat>
      vkd.dispatch @k(%b, %a) push [] spec [] groups [1, 1, 1] query 1 : !vkd.tensor<4xf32, flat>, !vkd.tensor<4xf32, flat>
    }
  }
}

// -----

// CHECK: vkd.vulkan_segment: 'arith.constant' cannot run in a Vulkan segment
builtin.module {
  vkd.plan @b0 inputs {} {
    vkd.vulkan_segment {
      %c = arith.constant 0 : i32
    }
  }
}

// -----

// CHECK: vkd.vulkan_segment: vkd.upload after the first dispatch or copy
builtin.module {
  vkd.plan @b0 inputs {x = array<i64: 4>} {
    %x = vkd.input "x" : !vkd.tensor<4xf32, nchw>
    %dev = vkd.arena device size 64 align 16
    %a = vkd.alloc %dev[0] size 16 : !vkd.tensor<4xf32, flat>
    %b = vkd.alloc %dev[16] size 16 : !vkd.tensor<4xf32, flat>
    vkd.vulkan_segment {
      vkd.copy %a to %b size 16 : !vkd.tensor<4xf32, flat> to !vkd.tensor<4xf32, flat>
      vkd.upload %x to %a : !vkd.tensor<4xf32, nchw> to !vkd.tensor<4xf32, flat>
    }
  }
}

// -----

// CHECK: vkd.upload: !vkd.tensor<4xf32, nchw> and !vkd.tensor<2x2xf32, flat> are not the same logical tensor
builtin.module {
  vkd.plan @b0 inputs {x = array<i64: 4>} {
    %x = vkd.input "x" : !vkd.tensor<4xf32, nchw>
    %dev = vkd.arena device size 64 align 16
    %a = vkd.alloc %dev[0] size 16 : !vkd.tensor<2x2xf32, flat>
    vkd.vulkan_segment {
      vkd.upload %x to %a : !vkd.tensor<4xf32, nchw> to !vkd.tensor<2x2xf32, flat>
    }
  }
}

// -----

// CHECK: vkd.copy: dest bytes [8, 24) are outside its 16 bytes
builtin.module {
  vkd.plan @b0 inputs {} {
    %dev = vkd.arena device size 64 align 16
    %a = vkd.alloc %dev[0] size 16 : !vkd.tensor<4xf32, flat>
    %b = vkd.alloc %dev[16] size 16 : !vkd.tensor<4xf32, flat>
    vkd.vulkan_segment {
      vkd.copy %a to %b[8] size 16 : !vkd.tensor<4xf32, flat> to !vkd.tensor<4xf32, flat>
    }
  }
}

// -----

// CHECK: vkd.cpu_segment: in tensor !vkd.tensor<4xf32, flat> is not a host (nchw) tensor; download it first
builtin.module {
  vkd.plan @b0 inputs {} {
    %dev = vkd.arena device size 64 align 16
    %a = vkd.alloc %dev[0] size 16 : !vkd.tensor<4xf32, flat>
    vkd.cpu_segment ins(%a : !vkd.tensor<4xf32, flat>) outs() {
    ^bb0(%t: tensor<4xf32>):
      vkd.yield
    }
  }
}

// -----

// CHECK: vkd.cpu_segment: 'onnx.Relu' has no 'vkd.reason' string saying why it runs on the CPU
builtin.module {
  vkd.plan @b0 inputs {x = array<i64: 4>} {
    %x = vkd.input "x" : !vkd.tensor<4xf32, nchw>
    %y = vkd.output "y" : !vkd.tensor<4xf32, nchw>
    vkd.cpu_segment ins(%x : !vkd.tensor<4xf32, nchw>) outs(%y : !vkd.tensor<4xf32, nchw>) {
    ^bb0(%t: tensor<4xf32>):
      %r = onnx.Relu(%t) : (tensor<4xf32>) -> tensor<4xf32>
      vkd.yield %r : tensor<4xf32>
    }
  }
}

// -----

// CHECK: vkd.cpu_segment: yielded type tensor<2x2xf32> does not match out tensor !vkd.tensor<4xf32, nchw>
builtin.module {
  vkd.plan @b0 inputs {x = array<i64: 2, 2>} {
    %x = vkd.input "x" : !vkd.tensor<2x2xf32, nchw>
    %y = vkd.output "y" : !vkd.tensor<4xf32, nchw>
    vkd.cpu_segment ins(%x : !vkd.tensor<2x2xf32, nchw>) outs(%y : !vkd.tensor<4xf32, nchw>) {
    ^bb0(%t: tensor<2x2xf32>):
      vkd.yield %t : tensor<2x2xf32>
    }
  }
}

// -----

// CHECK: 'vkd.barrier' expects parent op 'vkd.vulkan_segment'
builtin.module {
  vkd.plan @b0 inputs {} {
    vkd.cpu_segment ins() outs() {
      vkd.barrier compute to compute
      vkd.yield
    }
  }
}
