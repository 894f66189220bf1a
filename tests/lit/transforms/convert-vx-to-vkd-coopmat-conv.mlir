// RUN: vknn-opt %s -p 'partition{target=nvidia},merge-epilogues,fold-views,assign-storage{precision=low},convert-vx-to-vkd' | FileCheck %s

// A 3x3 conv stored NC4HW4, its tensor-core config pinned (as the autotuner
// writes it): the implicit GEMM reads 4 channels of a pixel per 64-bit load
// (Cg % 4 == 0: VEC_B), weights OHWI. Its grid (16 channels x 64 pixels: two
// 32 x 32 tiles) is small and K = 144 long, so K is split in two: fp32
// partials, then splitk_reduce sums them into the packed output. Unpinned,
// the same conv records the scalar GEMM (convert-vx-to-vkd-coopmat.mlir).

// CHECK: vkd.kernel @conv_coopmat_fp16_0 shader "conv_coopmat" fp16 local_size [128, 1, 1] bindings [read, read, read, write] push 88 spec [1, 2, 3, 4, 5, 6, 7, 8] = [32, 32, 0, 0, 1, 1, 1, 32] fastmath defines {VKNN_SPLITK = "1"}
// CHECK-LABEL: func.func @conv
// CHECK: vkd.dispatch @conv_coopmat_fp16_0({{.*}}) {{.*}} push [16, 8, 8, 16, 8, 8, 16, 16, 144, 3, 3, 1, 1, 1, 1, 1, 1, 1, 80, 2, 0, 0] groups [2, 1, 2] step {{[0-9]+}} label "conv (Conv coopmat 32x32, split-K x2)"
// CHECK-NEXT: vkd.dispatch @splitk_reduce_fp16_0({{.*}}) {{.*}} label "conv (Conv split-K sum)"

func.func @conv(%x: tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32> {
  %w = vx.constant dense<0.5> : tensor<16x16x3x3xf32>
  %c = vx.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, vkd.config = {algo = "coopmat", bm = 32 : i64, bn = 32 : i64, splits = 2 : i64}, onnx.name = "conv", vx.layout = #vx<layout nc4hw4>} : (tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x8x8xf32>
  func.return %c : tensor<1x16x8x8xf32>
}
