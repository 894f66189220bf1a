// RUN: vknn-opt %s | vknn-opt | FileCheck %s
// RUN: vknn-opt %s --print-op-generic | vknn-opt | FileCheck %s

// Every vx op parses, verifies and prints back in its custom form, also
// after a trip through the generic form.

// CHECK-LABEL: func.func @constants
func.func @constants() -> (tensor<2xf32>, tensor<4x4xi64>) {
  // CHECK: %{{.*}} = vx.constant {onnx.name = "c"} dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
  %0 = vx.constant {onnx.name = "c"} dense<[1.0, 2.0]> : tensor<2xf32>
  // CHECK: %{{.*}} = vx.constant dense<7> : tensor<4x4xi64>
  %1 = vx.constant dense<7> : tensor<4x4xi64>
  func.return %0, %1 : tensor<2xf32>, tensor<4x4xi64>
}

// CHECK-LABEL: func.func @convs
// CHECK-SAME: (%[[X:.*]]: tensor<1x3x8x8xf32>, %[[W:.*]]: tensor<4x3x3x3xf32>, %[[B:.*]]: tensor<4xf32>, %[[T:.*]]: tensor<3x2x2x2xf32>)
func.func @convs(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>, %t: tensor<3x2x2x2xf32>) {
  // CHECK: vx.conv %[[X]], %[[W]], %[[B]] {onnx.name = "conv1", strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32>
  %0 = vx.conv %x, %w, %b {onnx.name = "conv1", strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32>
  // CHECK: vx.conv %[[X]], %[[W]] {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 2, 2>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32>
  %1 = vx.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 2, 2>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32>
  // CHECK: vx.conv_transpose %[[X]], %[[T]] {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<3x2x2x2xf32>) -> tensor<1x2x17x17xf32>
  %2 = vx.conv_transpose %x, %t {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<3x2x2x2xf32>) -> tensor<1x2x17x17xf32>
  func.return
}

// CHECK-LABEL: func.func @conv1d_3d
func.func @conv1d_3d(%x: tensor<1x4x10xf16>, %w: tensor<8x2x3xf16>, %v: tensor<1x2x4x4x4xf32>, %k: tensor<2x2x3x3x3xf32>) {
  // CHECK: vx.conv %{{.*}}, %{{.*}} {{{.*}}group = 2 : i64} : (tensor<1x4x10xf16>, tensor<8x2x3xf16>) -> tensor<1x8x8xf16>
  %0 = vx.conv %x, %w {strides = array<i64: 1>, pads = array<i64: 0, 0>, dilations = array<i64: 1>, group = 2 : i64} : (tensor<1x4x10xf16>, tensor<8x2x3xf16>) -> tensor<1x8x8xf16>
  // CHECK: vx.conv {{.*}} -> tensor<1x2x4x4x4xf32>
  %1 = vx.conv %v, %k {strides = array<i64: 1, 1, 1>, pads = array<i64: 1, 1, 1, 1, 1, 1>, dilations = array<i64: 1, 1, 1>, group = 1 : i64} : (tensor<1x2x4x4x4xf32>, tensor<2x2x3x3x3xf32>) -> tensor<1x2x4x4x4xf32>
  func.return
}

// CHECK-LABEL: func.func @products
func.func @products(%a: tensor<2x1x4x8xf32>, %b: tensor<3x8x5xf32>, %m: tensor<8x4xf32>, %n: tensor<6x8xf32>, %c: tensor<6xf32>) {
  // CHECK: vx.matmul %{{.*}}, %{{.*}} : (tensor<2x1x4x8xf32>, tensor<3x8x5xf32>) -> tensor<2x3x4x5xf32>
  %0 = vx.matmul %a, %b : (tensor<2x1x4x8xf32>, tensor<3x8x5xf32>) -> tensor<2x3x4x5xf32>
  // CHECK: vx.gemm %{{.*}}, %{{.*}}, %{{.*}} {trans_a = true, trans_b = true, alpha = 1.000000e+00 : f32, beta = 5.000000e-01 : f32} : (tensor<8x4xf32>, tensor<6x8xf32>, tensor<6xf32>) -> tensor<4x6xf32>
  %1 = vx.gemm %m, %n, %c {trans_a = true, trans_b = true, alpha = 1.0 : f32, beta = 0.5 : f32} : (tensor<8x4xf32>, tensor<6x8xf32>, tensor<6xf32>) -> tensor<4x6xf32>
  // CHECK: vx.gemm %{{.*}}, %{{.*}} {trans_a = false, trans_b = false, alpha = 2.000000e+00 : f32, beta = 0.000000e+00 : f32} : (tensor<6x8xf32>, tensor<8x4xf32>) -> tensor<6x4xf32>
  %2 = vx.gemm %n, %m {trans_a = false, trans_b = false, alpha = 2.0 : f32, beta = 0.0 : f32} : (tensor<6x8xf32>, tensor<8x4xf32>) -> tensor<6x4xf32>
  func.return
}

// CHECK-LABEL: func.func @pointwise
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>, %[[Y:.*]]: tensor<3xf32>, %[[C:.*]]: tensor<2x1xi1>, %[[I:.*]]: tensor<2x3xi32>)
func.func @pointwise(%x: tensor<2x3xf32>, %y: tensor<3xf32>, %c: tensor<2x1xi1>, %i: tensor<2x3xi32>) {
  // CHECK: vx.unary relu %[[X]] {onnx.name = "r"} : tensor<2x3xf32>
  %0 = vx.unary relu %x {onnx.name = "r"} : tensor<2x3xf32>
  // CHECK: vx.unary gelu_tanh %[[X]] : tensor<2x3xf32>
  %1 = vx.unary gelu_tanh %x : tensor<2x3xf32>
  // CHECK: vx.unary clip %[[X]] {params = array<f32: 0.000000e+00, 6.000000e+00>} : tensor<2x3xf32>
  %2 = vx.unary clip %x {params = array<f32: 0.0, 6.0>} : tensor<2x3xf32>
  // CHECK: vx.unary selu %[[X]] {params = array<f32: 1.000000e+00, 2.000000e+00>} : tensor<2x3xf32>
  %3 = vx.unary selu %x {params = array<f32: 1.0, 2.0>} : tensor<2x3xf32>
  // CHECK: vx.binary add %[[X]], %[[Y]] : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %4 = vx.binary add %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK: vx.binary less_equal %[[X]], %[[Y]] : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %5 = vx.binary less_equal %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  // CHECK: vx.binary prelu %[[X]], %[[Y]] : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %6 = vx.binary prelu %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK: vx.select %[[C]], %[[X]], %[[Y]] : (tensor<2x1xi1>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %7 = vx.select %c, %x, %y : (tensor<2x1xi1>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK: vx.cast %[[I]] : tensor<2x3xi32> -> tensor<2x3xf16>
  %8 = vx.cast %i : tensor<2x3xi32> -> tensor<2x3xf16>
  // CHECK: vx.unary not %[[C]] : tensor<2x1xi1>
  %9 = vx.unary not %c : tensor<2x1xi1>
  func.return
}

// CHECK-LABEL: func.func @pools_and_norms
func.func @pools_and_norms(%x: tensor<1x4x7x7xf32>, %s: tensor<4xf32>) {
  // CHECK: vx.pool max %{{.*}} {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = true, count_include_pad = false} : tensor<1x4x7x7xf32> -> tensor<1x4x3x3xf32>
  %0 = vx.pool max %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = true, count_include_pad = false} : tensor<1x4x7x7xf32> -> tensor<1x4x3x3xf32>
  // CHECK: vx.pool avg %{{.*}} {kernel = array<i64: 7, 7>, {{.*}}} : tensor<1x4x7x7xf32> -> tensor<1x4x1x1xf32>
  %1 = vx.pool avg %x {kernel = array<i64: 7, 7>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = false, count_include_pad = false} : tensor<1x4x7x7xf32> -> tensor<1x4x1x1xf32>
  // CHECK: vx.pool lp %{{.*}} {{{.*}}p = 2 : i64} : tensor<1x4x7x7xf32> -> tensor<1x4x7x7xf32>
  %2 = vx.pool lp %x {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, ceil_mode = false, count_include_pad = true, p = 2 : i64} : tensor<1x4x7x7xf32> -> tensor<1x4x7x7xf32>
  // CHECK: vx.reduce mean %{{.*}} {axes = array<i64: 2, 3>, keepdims = true} : tensor<1x4x7x7xf32> -> tensor<1x4x1x1xf32>
  %3 = vx.reduce mean %x {axes = array<i64: 2, 3>, keepdims = true} : tensor<1x4x7x7xf32> -> tensor<1x4x1x1xf32>
  // CHECK: vx.reduce argmax %{{.*}} {axes = array<i64: 1>, keepdims = false, select_last_index = false} : tensor<1x4x7x7xf32> -> tensor<1x7x7xi64>
  %4 = vx.reduce argmax %x {axes = array<i64: 1>, keepdims = false, select_last_index = false} : tensor<1x4x7x7xf32> -> tensor<1x7x7xi64>
  // CHECK: vx.softmax %{{.*}} {axis = 1 : i64} : tensor<1x4x7x7xf32> -> tensor<1x4x7x7xf32>
  %5 = vx.softmax %x {axis = 1 : i64} : tensor<1x4x7x7xf32> -> tensor<1x4x7x7xf32>
  // CHECK: vx.log_softmax %{{.*}} {axis = 3 : i64} : tensor<1x4x7x7xf32> -> tensor<1x4x7x7xf32>
  %6 = vx.log_softmax %x {axis = 3 : i64} : tensor<1x4x7x7xf32> -> tensor<1x4x7x7xf32>
  // CHECK: vx.batchnorm %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 1.000000e-05 : f32} : (tensor<1x4x7x7xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x7x7xf32>
  %7 = vx.batchnorm %x, %s, %s, %s, %s {epsilon = 1.0e-5 : f32} : (tensor<1x4x7x7xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x7x7xf32>
  // CHECK: vx.lrn %{{.*}} {size = 5 : i64, alpha = 1.000000e-04 : f32, beta = 7.500000e-01 : f32, bias = 1.000000e+00 : f32} : tensor<1x4x7x7xf32> -> tensor<1x4x7x7xf32>
  %8 = vx.lrn %x {size = 5 : i64, alpha = 1.0e-4 : f32, beta = 0.75 : f32, bias = 1.0 : f32} : tensor<1x4x7x7xf32> -> tensor<1x4x7x7xf32>
  func.return
}

// CHECK-LABEL: func.func @layernorm
func.func @layernorm(%x: tensor<2x8x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>) {
  // CHECK: vx.layernorm %{{.*}}, %{{.*}}, %{{.*}} {axis = 2 : i64, epsilon = 1.000000e-05 : f32} : (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  %0 = vx.layernorm %x, %g, %b {axis = 2 : i64, epsilon = 1.0e-5 : f32} : (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  // CHECK: vx.layernorm %{{.*}}, %{{.*}} {axis = 2 : i64, {{.*}}} : (tensor<2x8x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  %1 = vx.layernorm %x, %g {axis = 2 : i64, epsilon = 1.0e-5 : f32} : (tensor<2x8x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  func.return
}

// CHECK-LABEL: func.func @data_movement
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>, %[[I:.*]]: tensor<5xi64>)
func.func @data_movement(%x: tensor<2x3x4xf32>, %i: tensor<5xi64>) {
  // CHECK: vx.reshape %[[X]] : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %0 = vx.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  // CHECK: vx.transpose %[[X]] {perm = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  %1 = vx.transpose %x {perm = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  // CHECK: vx.concat %[[X]], %[[X]], %[[X]] {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x9x4xf32>
  %2 = vx.concat %x, %x, %x {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x9x4xf32>
  // CHECK: vx.slice %[[X]] {starts = array<i64: 0, 2, 1>, ends = array<i64: 2, -1, 4>, steps = array<i64: 1, -1, 2>} : tensor<2x3x4xf32> -> tensor<2x3x2xf32>
  %3 = vx.slice %x {starts = array<i64: 0, 2, 1>, ends = array<i64: 2, -1, 4>, steps = array<i64: 1, -1, 2>} : tensor<2x3x4xf32> -> tensor<2x3x2xf32>
  // CHECK: vx.gather %[[X]], %[[I]] {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<5xi64>) -> tensor<2x5x4xf32>
  %4 = vx.gather %x, %i {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<5xi64>) -> tensor<2x5x4xf32>
  // CHECK: vx.expand %[[X]] : tensor<2x3x4xf32> -> tensor<5x2x3x4xf32>
  %5 = vx.expand %x : tensor<2x3x4xf32> -> tensor<5x2x3x4xf32>
  // CHECK: vx.pad constant %[[X]] {pads = array<i64: 0, 1, 2, 0, 1, -1>, value = 0.000000e+00 : f64} : tensor<2x3x4xf32> -> tensor<2x5x5xf32>
  %6 = vx.pad constant %x {pads = array<i64: 0, 1, 2, 0, 1, -1>, value = 0.0 : f64} : tensor<2x3x4xf32> -> tensor<2x5x5xf32>
  // CHECK: vx.pad reflect %[[X]] {pads = array<i64: 0, 0, 1, 0, 0, 1>} : tensor<2x3x4xf32> -> tensor<2x3x6xf32>
  %7 = vx.pad reflect %x {pads = array<i64: 0, 0, 1, 0, 0, 1>} : tensor<2x3x4xf32> -> tensor<2x3x6xf32>
  func.return
}

// CHECK-LABEL: func.func @resize
func.func @resize(%x: tensor<1x2x3x3xf32>) {
  // CHECK: vx.resize nearest %{{.*}} {scales = array<f32: 1.000000e+00, 1.000000e+00, 2.000000e+00, 2.000000e+00>, coordinate_mode = #vx<coordinate_mode asymmetric>, nearest_mode = #vx<nearest_mode floor>, cubic_coeff_a = -7.500000e-01 : f32, exclude_outside = false} : tensor<1x2x3x3xf32> -> tensor<1x2x6x6xf32>
  %0 = vx.resize nearest %x {scales = array<f32: 1.0, 1.0, 2.0, 2.0>, coordinate_mode = #vx<coordinate_mode asymmetric>, nearest_mode = #vx<nearest_mode floor>, cubic_coeff_a = -0.75 : f32, exclude_outside = false} : tensor<1x2x3x3xf32> -> tensor<1x2x6x6xf32>
  // A scale derived from sizes (7/3 in f32) still gives 7.
  // CHECK: vx.resize linear {{.*}} -> tensor<1x2x7x7xf32>
  %1 = vx.resize linear %x {scales = array<f32: 1.0, 1.0, 2.33333325, 2.33333325>, coordinate_mode = #vx<coordinate_mode half_pixel>, nearest_mode = #vx<nearest_mode round_prefer_floor>, cubic_coeff_a = -0.75 : f32, exclude_outside = false} : tensor<1x2x3x3xf32> -> tensor<1x2x7x7xf32>
  func.return
}

// CHECK-LABEL: func.func @quant
func.func @quant(%x: tensor<1x4x2x2xf32>, %s: tensor<4xf32>, %z: tensor<4xi8>, %t: tensor<f32>, %q: tensor<1x4x2x2xui8>) {
  // CHECK: vx.quantize %{{.*}}, %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<1x4x2x2xf32>, tensor<4xf32>, tensor<4xi8>) -> tensor<1x4x2x2xi8>
  %0 = vx.quantize %x, %s, %z {axis = 1 : i64} : (tensor<1x4x2x2xf32>, tensor<4xf32>, tensor<4xi8>) -> tensor<1x4x2x2xi8>
  // CHECK: vx.dequantize %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<1x4x2x2xui8>, tensor<f32>) -> tensor<1x4x2x2xf32>
  %1 = vx.dequantize %q, %t {axis = 0 : i64} : (tensor<1x4x2x2xui8>, tensor<f32>) -> tensor<1x4x2x2xf32>
  func.return
}

// CHECK-LABEL: func.func @fused
// CHECK-SAME: (%[[X:.*]]: tensor<1x8x4x4xf32>, %[[B:.*]]: tensor<8x1x1xf32>)
func.func @fused(%x: tensor<1x8x4x4xf32>, %b: tensor<8x1x1xf32>) -> tensor<1x8x4x4xf32> {
  // CHECK: %[[F:.*]], %{{.*}} = vx.fused_pointwise %[[X]], %[[B]] {onnx.name = "bias_relu"} : (tensor<1x8x4x4xf32>, tensor<8x1x1xf32>) -> (tensor<1x8x4x4xf32>, tensor<1x8x4x4xi1>) {
  // CHECK-NEXT: ^{{.*}}(%[[A0:.*]]: f32, %[[A1:.*]]: f32):
  // CHECK-NEXT:   %[[S:.*]] = arith.addf %[[A0]], %[[A1]] : f32
  // CHECK:        %[[R:.*]] = arith.maximumf %[[S]], %{{.*}} : f32
  // CHECK:        vx.yield %[[R]], %{{.*}} : f32, i1
  // CHECK-NEXT: }
  %0:2 = vx.fused_pointwise %x, %b {onnx.name = "bias_relu"} : (tensor<1x8x4x4xf32>, tensor<8x1x1xf32>) -> (tensor<1x8x4x4xf32>, tensor<1x8x4x4xi1>) {
  ^bb0(%a0: f32, %a1: f32):
    %s = arith.addf %a0, %a1 : f32
    %zero = arith.constant 0.0 : f32
    %r = arith.maximumf %s, %zero : f32
    %e = math.exp %r : f32
    %p = arith.cmpf ogt, %e, %zero : f32
    vx.yield %r, %p : f32, i1
  }
  // CHECK: %[[L:.*]] = vx.convert_layout %[[F]] from nc4hw4 to flat : tensor<1x8x4x4xf32>
  %1 = vx.convert_layout %0#0 from nc4hw4 to flat : tensor<1x8x4x4xf32>
  // CHECK: func.return %[[L]]
  func.return %1 : tensor<1x8x4x4xf32>
}

// CHECK-LABEL: func.func @dynamic
func.func @dynamic(%x: tensor<?x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // A dim the rule cannot decide may stay dynamic.
  // CHECK: vx.conv {{.*}} -> tensor<?x4x6x6xf32>
  %0 = vx.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<?x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<?x4x6x6xf32>
  func.return
}
