// RUN: vknn-opt %s --split-input-file --verify-diagnostics | FileCheck %s

// vx.attention: round trip with and without a mask; batch dims broadcast.

// CHECK-LABEL: func.func @attention
// CHECK: vx.attention %{{.*}}, %{{.*}}, %{{.*}} {scale = 1.250000e-01 : f32} : (tensor<2x4x16x64xf32>, tensor<2x4x32x64xf32>, tensor<2x4x32x48xf32>) -> tensor<2x4x16x48xf32>
// CHECK: vx.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {scale = 1.000000e+00 : f32} : (tensor<2x4x16x64xf16>, tensor<1x4x32x64xf16>, tensor<2x1x32x8xf16>, tensor<16x32xf16>) -> tensor<2x4x16x8xf16>
func.func @attention(%q: tensor<2x4x16x64xf32>, %k: tensor<2x4x32x64xf32>, %v: tensor<2x4x32x48xf32>,
                     %qh: tensor<2x4x16x64xf16>, %kh: tensor<1x4x32x64xf16>, %vh: tensor<2x1x32x8xf16>, %m: tensor<16x32xf16>) {
  %0 = vx.attention %q, %k, %v {scale = 0.125 : f32} : (tensor<2x4x16x64xf32>, tensor<2x4x32x64xf32>, tensor<2x4x32x48xf32>) -> tensor<2x4x16x48xf32>
  %1 = vx.attention %qh, %kh, %vh, %m {scale = 1.0 : f32} : (tensor<2x4x16x64xf16>, tensor<1x4x32x64xf16>, tensor<2x1x32x8xf16>, tensor<16x32xf16>) -> tensor<2x4x16x8xf16>
  func.return
}

// -----

func.func @head_dims(%q: tensor<4x16x64xf32>, %k: tensor<4x32x32xf32>, %v: tensor<4x32x64xf32>) {
  // CHECK: vx.attention: Q and K head dims differ: [4, 16, 64] vs [4, 32, 32]
  %0 = vx.attention %q, %k, %v {scale = 1.0 : f32} : (tensor<4x16x64xf32>, tensor<4x32x32xf32>, tensor<4x32x64xf32>) -> tensor<4x16x64xf32>
  func.return
}

// -----

func.func @keys(%q: tensor<4x16x64xf32>, %k: tensor<4x32x64xf32>, %v: tensor<4x31x64xf32>) {
  // CHECK: vx.attention: K and V key counts differ: [4, 32, 64] vs [4, 31, 64]
  %0 = vx.attention %q, %k, %v {scale = 1.0 : f32} : (tensor<4x16x64xf32>, tensor<4x32x64xf32>, tensor<4x31x64xf32>) -> tensor<4x16x64xf32>
  func.return
}

// -----

func.func @mask(%q: tensor<4x16x64xf32>, %m: tensor<2x16x32xf32>, %k: tensor<4x32x64xf32>) {
  // CHECK: vx.attention: mask [2, 16, 32] does not broadcast to the scores [4, 16, 32]
  %0 = vx.attention %q, %k, %k, %m {scale = 1.0 : f32} : (tensor<4x16x64xf32>, tensor<4x32x64xf32>, tensor<4x32x64xf32>, tensor<2x16x32xf32>) -> tensor<4x16x64xf32>
  func.return
}

// -----

func.func @result(%q: tensor<4x16x64xf32>, %k: tensor<4x32x64xf32>) {
  // CHECK: vx.attention: result shape [4, 32, 64] does not match the shape rule [4, 16, 64]
  %0 = vx.attention %q, %k, %k {scale = 1.0 : f32} : (tensor<4x16x64xf32>, tensor<4x32x64xf32>, tensor<4x32x64xf32>) -> tensor<4x32x64xf32>
  func.return
}

// -----

func.func @types(%q: tensor<4x16x64xf32>, %k: tensor<4x32x64xf16>) {
  // CHECK: vx.attention: K element type f16 differs from f32
  %0 = vx.attention %q, %k, %k {scale = 1.0 : f32} : (tensor<4x16x64xf32>, tensor<4x32x64xf16>, tensor<4x32x64xf16>) -> tensor<4x16x64xf32>
  func.return
}
