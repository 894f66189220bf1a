// RUN: vknn-opt %s --split-input-file -p 'partition{target=nvidia},merge-epilogues,fold-views,assign-storage{precision=low},convert-vx-to-vkd' | FileCheck %s --check-prefix=LOW
// RUN: vknn-opt %s --split-input-file -p 'partition{target=nvidia},merge-epilogues,fold-views,assign-storage{precision=high},convert-vx-to-vkd' | FileCheck %s --check-prefix=HIGH
// RUN: vknn-opt %s --split-input-file -p 'partition{target=lavapipe},merge-epilogues,fold-views,assign-storage{precision=low},convert-vx-to-vkd' | FileCheck %s --check-prefix=LVP

// Tensor cores: on a target listing the 16x16x16 f16 x f16 -> f32 subgroup
// cooperative matrix (`nvidia`), fp16-storage products and attention record
// the coopmat kernel families by default, convolutions when the autotuner (or
// a pinned `vkd.config`) picks them (ADR 0009) (4 subgroups of 32 lanes:
// local size 128; spec constants BM, BN, ... and the subgroup size 32 last),
// so the printed module shows which dispatches use tensor cores. At `high`
// (fp32 storage) and on targets without cooperative matrices the scalar
// kernels are recorded as before.

// LOW: vkd.kernel @matmul_coopmat_fp16_0 shader "matmul_coopmat" fp16 local_size [128, 1, 1] bindings [read, read, write, read] push 96 spec [1, 2, 3, 4, 5, 6, 7, 8] = [32, 32, 1, 0, 0, 1, 1, 32]
// LOW-LABEL: func.func @linear
// LOW: vkd.dispatch @matmul_coopmat_fp16_0({{.*}}) {{.*}} groups [2, 2, 1] step {{[0-9]+}} label "fc (Gemm, coopmat 32x32)"
// HIGH-NOT: coopmat
// HIGH: vkd.kernel @matmul_fp32_0 shader "matmul" fp32
// LVP-NOT: coopmat
// LVP: vkd.kernel @matmul_fp16_0 shader "matmul" fp16

func.func @linear(%x: tensor<64x96xf32>) -> tensor<64x48xf32> {
  %w = vx.constant dense<0.25> : tensor<48x96xf32>
  %g = vx.gemm %x, %w {trans_a = false, trans_b = true, alpha = 1.0 : f32, beta = 1.0 : f32, onnx.name = "fc", vx.layout = #vx<layout flat>} : (tensor<64x96xf32>, tensor<48x96xf32>) -> tensor<64x48xf32>
  func.return %g : tensor<64x48xf32>
}

// -----

// A 3x3 conv at fp16 storage on `nvidia`: the scalar implicit GEMM by default
// (tensor-core convs are autotune candidates: convert-vx-to-vkd-coopmat-conv.mlir).

// LOW: vkd.kernel @conv_fp16_0 shader "conv" fp16
// LOW-LABEL: func.func @conv_plain
// LOW: vkd.dispatch @conv_fp16_0({{.*}}) {{.*}} label "conv (Conv gemm, split-K x2)"
// HIGH-NOT: coopmat
// HIGH: vkd.kernel @conv_fp32_0 shader "conv" fp32
// LVP-NOT: coopmat

func.func @conv_plain(%x: tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32> {
  %w = vx.constant dense<0.5> : tensor<16x16x3x3xf32>
  %c = vx.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.name = "conv", vx.layout = #vx<layout nc4hw4>} : (tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x8x8xf32>
  func.return %c : tensor<1x16x8x8xf32>
}

// -----

// Attention: QK^T and PV on tensor cores, 64 query rows per workgroup, the
// head dim (16) padded to the 32-wide variant.

// LOW: vkd.kernel @attention_coopmat_fp16_0 shader "attention_coopmat" fp16 local_size [128, 1, 1] bindings [read, read, read, read, write] push 124 spec [1, 2, 3, 4] = [32, 0, 1, 32]
// LOW-LABEL: func.func @attn
// LOW: vkd.dispatch @attention_coopmat_fp16_0({{.*}}) {{.*}} groups [1, 2, 1] step {{[0-9]+}} label "attn (Attention, coopmat)"
// HIGH-NOT: coopmat
// HIGH: vkd.kernel @attention_fp32_0 shader "attention" fp32
// LVP-NOT: coopmat

func.func @attn(%q: tensor<1x2x16x16xf32>, %k: tensor<1x2x16x16xf32>, %v: tensor<1x2x16x16xf32>) -> tensor<1x2x16x16xf32> {
  %a = vx.attention %q, %k, %v {scale = 0.25 : f32, onnx.name = "attn"} : (tensor<1x2x16x16xf32>, tensor<1x2x16x16xf32>, tensor<1x2x16x16xf32>) -> tensor<1x2x16x16xf32>
  func.return %a : tensor<1x2x16x16xf32>
}
