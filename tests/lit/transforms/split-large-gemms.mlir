// A target whose maxStorageBufferRange (49152 bytes) one 96x1000 fp32 weight
// (384000 bytes) exceeds: the gemm becomes column blocks of 128 (a multiple
// of 64 that fits: 128 * 96 * 4 = 49152), bias sliced alongside, joined by
// one concat along N. A weight that fits is left alone.

// RUN: %python -c "from vknn.kernels.targets import PRESETS; import json; print(json.dumps(PRESETS['lavapipe'].with_(max_storage_buffer_range=49152).to_dict()))" > %t.json
// RUN: vknn-opt %s --split-input-file -p "split-large-gemms{target=\"%t.json\"}" | FileCheck %s

// CHECK-LABEL: func.func @big
// CHECK-SAME: (%[[X:.*]]: tensor<2x96xf32>)
// CHECK: %[[W0:.*]] = vx.constant dense_resource<{{.*}}> : tensor<128x96xf32>
// CHECK-NEXT: %[[C0:.*]] = vx.constant dense_resource<{{.*}}> : tensor<128xf32>
// CHECK-NEXT: %[[G0:.*]] = vx.gemm %[[X]], %[[W0]], %[[C0]] {onnx.name = "fc#0"{{.*}}trans_b = true{{.*}} : (tensor<2x96xf32>, tensor<128x96xf32>, tensor<128xf32>) -> tensor<2x128xf32>
// CHECK-COUNT-6: vx.gemm %[[X]]
// CHECK: %[[G7:.*]] = vx.gemm %[[X]], {{.*}} -> tensor<2x104xf32>
// CHECK-NEXT: %[[CAT:.*]] = vx.concat %[[G0]], {{.*}}, %[[G7]] {onnx.name = "fc", axis = 1 : i64} : ({{.*}}) -> tensor<2x1000xf32>
// CHECK-NEXT: func.return %[[CAT]]

func.func @big(%x: tensor<2x96xf32>) -> tensor<2x1000xf32> {
  %w = vx.constant dense<0.5> : tensor<1000x96xf32>
  %b = vx.constant dense<0.1> : tensor<1000xf32>
  %g = vx.gemm %x, %w, %b {trans_a = false, trans_b = true, alpha = 1.0 : f32, beta = 1.0 : f32, onnx.name = "fc"} : (tensor<2x96xf32>, tensor<1000x96xf32>, tensor<1000xf32>) -> tensor<2x1000xf32>
  func.return %g : tensor<2x1000xf32>
}

// -----

// CHECK-LABEL: func.func @small
// CHECK-NEXT: vx.constant
// CHECK-NEXT: vx.gemm
// CHECK-NOT: vx.concat
func.func @small(%x: tensor<2x96xf32>) -> tensor<2x10xf32> {
  %w = vx.constant dense<0.5> : tensor<10x96xf32>
  %g = vx.gemm %x, %w {trans_a = false, trans_b = true, alpha = 1.0 : f32, beta = 1.0 : f32} : (tensor<2x96xf32>, tensor<10x96xf32>) -> tensor<2x10xf32>
  func.return %g : tensor<2x10xf32>
}
