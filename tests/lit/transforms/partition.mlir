// RUN: vknn-opt %s --split-input-file -p 'partition{target=lavapipe}' | FileCheck %s
// RUN: vknn-opt %s --split-input-file -p 'partition{target=lavapipe disable_vk_ops="MaxPool"}' | FileCheck %s --check-prefix=OFF
// RUN: vknn-opt %s --split-input-file -p 'partition{backends="cpu"}' | FileCheck %s --check-prefix=CPU
// RUN: vknn-opt %s --split-input-file -p 'partition{target=lavapipe disable_vk_ops="MaxPool" fold_gpu_islands=0}' | FileCheck %s --check-prefix=NOFOLD
// RUN: not vknn-opt %s --split-input-file -p 'partition{target=lavapipe disable_vk_ops="MaxPool" allow_cpu_fallback=false}' 2>&1 | FileCheck %s --check-prefix=STRICT

// Every op on Vulkan: one segment; the target is recorded on the module;
// constants are cloned into the segment that reads them.

// CHECK: builtin.module attributes {vkd.target = #vkd.target<{name = "lavapipe"
// CHECK-LABEL: func.func @cnn
// CHECK-NEXT: %[[S:.*]] = vkd.segment "vulkan"(%{{.*}}) attributes {vkd.members = ["conv", "pool", "flatten", "fc", "softmax"]} : (tensor<1x4x8x8xf32>) -> tensor<1x10xf32> {
// CHECK-NEXT: ^{{.*}}(%[[X:.*]]: tensor<1x4x8x8xf32>):
// CHECK-NEXT: %[[W:.*]] = vx.constant dense<5.000000e-01> : tensor<8x4x3x3xf32>
// CHECK: vx.conv %[[X]], %[[W]] {onnx.name = "conv", {{.*}}vkd.backend = "vulkan"
// CHECK-NOT: vkd.reason
// CHECK: vkd.yield
// CHECK-NEXT: }
// CHECK-NEXT: func.return %[[S]]

// MaxPool disabled: GPU, CPU, GPU; the CPU op says why. The gemm + softmax
// after it are heavy enough to stay on the GPU (only cheap islands fold).

// OFF-LABEL: func.func @cnn
// OFF: %[[A:.*]] = vkd.segment "vulkan"
// OFF: vx.conv
// OFF: vkd.yield
// OFF: %[[B:.*]] = vkd.segment "cpu"(%[[A]])
// OFF: vx.pool max {{.*}}vkd.backend = "cpu", vkd.reason = "MaxPool: disabled by Config.disable_vk_ops"
// OFF: %[[C:.*]] = vkd.segment "vulkan"(%[[B]])
// OFF: vx.gemm
// OFF: func.return %[[C]]

// CPU: func.func @cnn
// CPU-NEXT: vkd.segment "cpu"
// CPU-NOT: vkd.segment
// CPU: vx.conv {{.*}}vkd.backend = "cpu"
// CPU-NOT: vkd.reason

// STRICT: vknn-opt: error: 1 op(s) cannot run on the Vulkan backend and Config.allow_cpu_fallback is False: 'pool' (MaxPool: disabled by Config.disable_vk_ops)

func.func @cnn(%x: tensor<1x4x8x8xf32>) -> tensor<1x10xf32> {
  %w = vx.constant dense<0.5> : tensor<8x4x3x3xf32>
  %c = vx.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.name = "conv"} : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x8x8xf32>
  %p = vx.pool max %c {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = false, count_include_pad = false, onnx.name = "pool"} : tensor<1x8x8x8xf32> -> tensor<1x8x4x4xf32>
  %f = vx.reshape %p {onnx.name = "flatten"} : tensor<1x8x4x4xf32> -> tensor<1x128xf32>
  %fw = vx.constant dense<0.25> : tensor<10x128xf32>
  %g = vx.gemm %f, %fw {trans_a = false, trans_b = true, alpha = 1.0 : f32, beta = 1.0 : f32, onnx.name = "fc"} : (tensor<1x128xf32>, tensor<10x128xf32>) -> tensor<1x10xf32>
  %s = vx.softmax %g {axis = 1 : i64, onnx.name = "softmax"} : tensor<1x10xf32> -> tensor<1x10xf32>
  func.return %s : tensor<1x10xf32>
}

// -----

// A cheap 2-op GPU island between two CPU ops folds onto the CPU (it would
// cost a download, a submit and an upload on each side); with the hint off
// it stays a segment of its own.

// OFF-LABEL: func.func @island
// OFF: vkd.segment "cpu"
// OFF: vx.pool max {{.*}}vkd.backend = "cpu"
// OFF: vx.unary relu {{.*}}vkd.backend = "cpu", vkd.reason = "Relu: folded onto the CPU with its 2-op GPU island between CPU segments (Config.fold_gpu_islands=2)"
// OFF: vx.unary sigmoid {{.*}}vkd.backend = "cpu"
// OFF: vx.pool max {{.*}}vkd.backend = "cpu"
// OFF-NOT: vkd.segment

// NOFOLD-LABEL: func.func @island
// NOFOLD: vkd.segment "cpu"
// NOFOLD: vkd.segment "vulkan"
// NOFOLD: vx.unary relu
// NOFOLD: vx.unary sigmoid
// NOFOLD: vkd.segment "cpu"

func.func @island(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x2x2xf32> {
  %p = vx.pool max %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = false, count_include_pad = false, onnx.name = "p1"} : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>
  %r = vx.unary "relu" %p {onnx.name = "r"} : tensor<1x4x4x4xf32>
  %s = vx.unary "sigmoid" %r {onnx.name = "s"} : tensor<1x4x4x4xf32>
  %q = vx.pool max %s {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = false, count_include_pad = false, onnx.name = "p2"} : tensor<1x4x4x4xf32> -> tensor<1x4x2x2xf32>
  func.return %q : tensor<1x4x2x2xf32>
}
