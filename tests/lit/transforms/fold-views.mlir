// RUN: vknn-opt %s -p 'partition{target=lavapipe},fold-views{device_layout="flat"}' | FileCheck %s
// RUN: vknn-opt %s -p 'partition{target=lavapipe},fold-views{device_layout="flat"},fold-views{device_layout="flat"}' | FileCheck %s

// An attention block's head split (slice -> reshape -> transpose of a fused
// QKV projection) becomes three strided views of the projection that the
// attention kernel reads in place; its head merge (transpose -> reshape) is
// written in place: the attention carries vkd.out_view and the merged tensor
// is a vkd.alias of its result. No view op is left; the pass is idempotent.

// CHECK-LABEL: func.func @heads
// CHECK: ^{{.*}}(%[[X:.*]]: tensor<1x16x96xf32>):
// CHECK: %[[Q:.*]] = vkd.view %[[X]] offset 0 strides [0, 16, 96, 1] : tensor<1x16x96xf32> -> tensor<1x2x16x16xf32>
// CHECK-NEXT: %[[K:.*]] = vkd.view %[[X]] offset 32 strides [0, 16, 96, 1]
// CHECK-NEXT: %[[V:.*]] = vkd.view %[[X]] offset 64 strides [0, 16, 96, 1]
// CHECK-NEXT: %[[A:.*]] = vx.attention %[[Q]], %[[K]], %[[V]] {{{.*}}vkd.out_view = [0 : i64, array<i64: 1, 2, 16, 16>, array<i64: 0, 16, 32, 1>]
// CHECK-NEXT: %[[M:.*]] = vkd.alias %[[A]] : tensor<1x2x16x16xf32> -> tensor<1x16x32xf32>
// CHECK-NEXT: vx.matmul %[[M]],
// CHECK-NOT: vx.transpose
// CHECK-NOT: vx.reshape
// CHECK-NOT: vx.slice

func.func @heads(%x: tensor<1x16x96xf32>) -> tensor<1x16x32xf32> {
  %w = vx.constant dense<0.5> : tensor<32x32xf32>
  %q = vx.slice %x {starts = array<i64: 0, 0, 0>, ends = array<i64: 1, 16, 32>, steps = array<i64: 1, 1, 1>, onnx.name = "sq"} : tensor<1x16x96xf32> -> tensor<1x16x32xf32>
  %k = vx.slice %x {starts = array<i64: 0, 0, 32>, ends = array<i64: 1, 16, 64>, steps = array<i64: 1, 1, 1>, onnx.name = "sk"} : tensor<1x16x96xf32> -> tensor<1x16x32xf32>
  %v = vx.slice %x {starts = array<i64: 0, 0, 64>, ends = array<i64: 1, 16, 96>, steps = array<i64: 1, 1, 1>, onnx.name = "sv"} : tensor<1x16x96xf32> -> tensor<1x16x32xf32>
  %qr = vx.reshape %q {onnx.name = "qr"} : tensor<1x16x32xf32> -> tensor<1x16x2x16xf32>
  %qt = vx.transpose %qr {perm = array<i64: 0, 2, 1, 3>, onnx.name = "qt"} : tensor<1x16x2x16xf32> -> tensor<1x2x16x16xf32>
  %kr = vx.reshape %k {onnx.name = "kr"} : tensor<1x16x32xf32> -> tensor<1x16x2x16xf32>
  %kt = vx.transpose %kr {perm = array<i64: 0, 2, 1, 3>, onnx.name = "kt"} : tensor<1x16x2x16xf32> -> tensor<1x2x16x16xf32>
  %vr = vx.reshape %v {onnx.name = "vr"} : tensor<1x16x32xf32> -> tensor<1x16x2x16xf32>
  %vt = vx.transpose %vr {perm = array<i64: 0, 2, 1, 3>, onnx.name = "vt"} : tensor<1x16x2x16xf32> -> tensor<1x2x16x16xf32>
  %a = vx.attention %qt, %kt, %vt {scale = 0.25 : f32, onnx.name = "attn"} : (tensor<1x2x16x16xf32>, tensor<1x2x16x16xf32>, tensor<1x2x16x16xf32>) -> tensor<1x2x16x16xf32>
  %at = vx.transpose %a {perm = array<i64: 0, 2, 1, 3>, onnx.name = "merge_t"} : tensor<1x2x16x16xf32> -> tensor<1x16x2x16xf32>
  %m = vx.reshape %at {onnx.name = "merge_r"} : tensor<1x16x2x16xf32> -> tensor<1x16x32xf32>
  %o = vx.matmul %m, %w {onnx.name = "proj"} : (tensor<1x16x32xf32>, tensor<32x32xf32>) -> tensor<1x16x32xf32>
  func.return %o : tensor<1x16x32xf32>
}
