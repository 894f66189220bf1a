// RUN: vknn-opt %s -p 'partition{target=lavapipe},merge-epilogues,fold-views,assign-storage,convert-vx-to-vkd{fastmath=off},plan-memory' | FileCheck %s
// RUN: vknn-opt %s -p 'partition{target=lavapipe},merge-epilogues,fold-views,assign-storage,convert-vx-to-vkd{fastmath=off},plan-memory,plan-memory' | FileCheck %s

// A chain of four 4000-byte tensors needs two blocks: each tensor is live
// from the command that writes it to the last that reads it, so the third
// reuses the first's bytes and the fourth the second's (the interval
// planner; a dispatch's input and output never share bytes). Planning twice
// changes nothing.

// CHECK-LABEL: func.func @chain
// CHECK: %[[ARENA:.*]] = vkd.arena device size 8000 align 16
// CHECK-NEXT: vkd.alloc device %[[ARENA]][0] size 4000
// CHECK-NEXT: vkd.alloc device %[[ARENA]][4000] size 4000
// CHECK-NEXT: vkd.alloc device %[[ARENA]][0] size 4000
// CHECK-NEXT: vkd.alloc device %[[ARENA]][4000] size 4000
// CHECK-NOT: vkd.arena

func.func @chain(%x: tensor<1000xf32>) -> tensor<1000xf32> {
  %r = vx.unary "relu" %x : tensor<1000xf32>
  %s = vx.unary "sigmoid" %r : tensor<1000xf32>
  %t = vx.unary "tanh" %s : tensor<1000xf32>
  func.return %t : tensor<1000xf32>
}
