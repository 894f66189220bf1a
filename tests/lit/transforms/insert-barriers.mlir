// RUN: vknn-opt %s --split-input-file -p 'partition{target=lavapipe},merge-epilogues,fold-views,assign-storage,convert-vx-to-vkd{fastmath=off},plan-memory,insert-barriers' | FileCheck %s
// RUN: vknn-opt %s -p 'partition{target=lavapipe},merge-epilogues,fold-views,assign-storage,convert-vx-to-vkd{fastmath=off},plan-memory,insert-barriers,insert-barriers' --split-input-file | FileCheck %s

// Each dispatch reads what the one before wrote: a barrier between them
// makes those bytes visible (read-after-write). The third dispatch also
// overwrites the bytes the first read (the arena reuses them): that is
// ordered by the same barriers. One last barrier makes every write visible
// to the host before the download. Running the pass twice adds nothing.

// CHECK-LABEL: func.func @chain
// CHECK: %[[A:.*]] = vkd.alloc device %{{.*}}[0] size 4000
// CHECK-NEXT: %[[B:.*]] = vkd.alloc device %{{.*}}[4000] size 4000
// CHECK-NEXT: %[[C:.*]] = vkd.alloc device %{{.*}}[0] size 4000
// CHECK-NEXT: %[[D:.*]] = vkd.alloc device %{{.*}}[4000] size 4000
// CHECK-NEXT: vkd.upload
// CHECK-NEXT: vkd.dispatch @{{.*}}(%[[A]], %[[B]])
// CHECK-NEXT: vkd.barrier [compute] to [compute, transfer](%[[B]] : {{.*}}) ranges [0, 4000]
// CHECK-NEXT: vkd.dispatch @{{.*}}(%[[B]], %[[C]])
// CHECK-NEXT: vkd.barrier [compute] to [compute, transfer](%[[C]] : {{.*}}) ranges [0, 4000]
// CHECK-NEXT: vkd.dispatch @{{.*}}(%[[C]], %[[D]])
// CHECK-NEXT: vkd.barrier [compute] to [host]() ranges []
// CHECK-NEXT: vkd.download %[[D]]
// CHECK-NOT: vkd.barrier

func.func @chain(%x: tensor<1000xf32>) -> tensor<1000xf32> {
  %r = vx.unary "relu" %x : tensor<1000xf32>
  %s = vx.unary "sigmoid" %r : tensor<1000xf32>
  %t = vx.unary "tanh" %s : tensor<1000xf32>
  func.return %t : tensor<1000xf32>
}

// -----

// Two independent dispatches (both read the input, write separate tensors)
// need no barrier between them.

// CHECK-LABEL: func.func @independent
// CHECK: vkd.dispatch
// CHECK-NEXT: vkd.dispatch
// CHECK-NEXT: vkd.barrier

func.func @independent(%x: tensor<1000xf32>) -> (tensor<1000xf32>, tensor<1000xf32>) {
  %r = vx.unary "relu" %x : tensor<1000xf32>
  %s = vx.unary "sigmoid" %x : tensor<1000xf32>
  func.return %r, %s : tensor<1000xf32>, tensor<1000xf32>
}
