// RUN: vknn-opt %s --split-input-file --verify-diagnostics | FileCheck %s

// One case per verifier check of the vx ops.

func.func @conv_result(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // CHECK: vx.conv: result shape [1, 4, 9, 8] does not match the shape rule [1, 4, 8, 8]
  %0 = vx.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x9x8xf32>
  func.return
}

// -----

func.func @conv_channels(%x: tensor<1x4x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // CHECK: vx.conv: input has 4 channels but weight expects 3 x group 1
  %0 = vx.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  func.return
}

// -----

func.func @conv_window(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // CHECK: vx.conv: expects 2 strides and dilations and 4 pads for 2 spatial dims, got 1, 2 and 4
  %0 = vx.conv %x, %w {strides = array<i64: 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  func.return
}

// -----

func.func @conv_bias(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<3xf32>) {
  // CHECK: vx.conv: bias must be [4], got [3]
  %0 = vx.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<3xf32>) -> tensor<1x4x8x8xf32>
  func.return
}

// -----

func.func @conv_int(%x: tensor<1x3x8x8xi8>, %w: tensor<4x3x3x3xi8>) {
  // CHECK: vx.conv: input must have a float element type, got i8
  %0 = vx.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xi8>, tensor<4x3x3x3xi8>) -> tensor<1x4x8x8xi8>
  func.return
}

// -----

func.func @conv_transpose_output_padding(%x: tensor<1x3x8x8xf32>, %w: tensor<3x2x2x2xf32>) {
  // CHECK: vx.conv_transpose: output_padding must be smaller than the stride or the dilation
  %0 = vx.conv_transpose %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<3x2x2x2xf32>) -> tensor<1x2x10x10xf32>
  func.return
}

// -----

func.func @matmul_k(%a: tensor<4x8xf32>, %b: tensor<7x5xf32>) {
  // CHECK: vx.matmul: contracting dims differ: [4, 8] x [7, 5]
  %0 = vx.matmul %a, %b : (tensor<4x8xf32>, tensor<7x5xf32>) -> tensor<4x5xf32>
  func.return
}

// -----

func.func @matmul_rank(%a: tensor<8xf32>, %b: tensor<8x5xf32>) {
  // CHECK: vx.matmul: operands must have rank >= 2
  %0 = vx.matmul %a, %b : (tensor<8xf32>, tensor<8x5xf32>) -> tensor<5xf32>
  func.return
}

// -----

func.func @gemm_c(%a: tensor<4x8xf32>, %b: tensor<8x5xf32>, %c: tensor<4xf32>) {
  // CHECK: vx.gemm: C [4] does not broadcast to [4, 5]
  %0 = vx.gemm %a, %b, %c {trans_a = false, trans_b = false, alpha = 1.0 : f32, beta = 1.0 : f32} : (tensor<4x8xf32>, tensor<8x5xf32>, tensor<4xf32>) -> tensor<4x5xf32>
  func.return
}

// -----

func.func @unary_params(%x: tensor<2x3xf32>) {
  // CHECK: vx.unary: kind 'leaky_relu' takes 1 params (alpha), got 0
  %0 = vx.unary leaky_relu %x : tensor<2x3xf32>
  func.return
}

// -----

func.func @unary_extra_params(%x: tensor<2x3xf32>) {
  // CHECK: vx.unary: kind 'relu' takes 0 params (none), got 1
  %0 = vx.unary relu %x {params = array<f32: 1.0>} : tensor<2x3xf32>
  func.return
}

// -----

func.func @unary_float_kind(%x: tensor<2x3xi32>) {
  // CHECK: vx.unary: kind 'sigmoid' needs a float element type, got i32
  %0 = vx.unary sigmoid %x : tensor<2x3xi32>
  func.return
}

// -----

func.func @binary_types(%x: tensor<2x3xf32>, %y: tensor<2x3xf16>) {
  // CHECK: vx.binary: operand element types differ: f32 and f16
  %0 = vx.binary add %x, %y : (tensor<2x3xf32>, tensor<2x3xf16>) -> tensor<2x3xf32>
  func.return
}

// -----

func.func @binary_broadcast(%x: tensor<2x3xf32>, %y: tensor<2xf32>) {
  // CHECK: vx.binary: shapes [2, 3], [2] do not broadcast
  %0 = vx.binary mul %x, %y : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

func.func @binary_compare(%x: tensor<2x3xf32>, %y: tensor<3xf32>) {
  // CHECK: vx.binary: result element type f32 does not match the expected i1
  %0 = vx.binary less %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

func.func @binary_prelu(%x: tensor<3xf32>, %y: tensor<2x3xf32>) {
  // CHECK: vx.binary: slope [2, 3] does not broadcast to [3]
  %0 = vx.binary prelu %x, %y : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

func.func @select_cond(%c: tensor<2x3xf32>, %x: tensor<2x3xf32>) {
  // CHECK: vx.select: condition must be i1, got f32
  %0 = vx.select %c, %x, %x : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

func.func @pool_p(%x: tensor<1x4x7x7xf32>) {
  // CHECK: vx.pool: `p` is required for lp pooling and only for it
  %0 = vx.pool lp %x {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = false, count_include_pad = false} : tensor<1x4x7x7xf32> -> tensor<1x4x5x5xf32>
  func.return
}

// -----

func.func @pool_pads(%x: tensor<1x4x7x7xf32>) {
  // CHECK: vx.pool: pads must be smaller than the (dilated) kernel
  %0 = vx.pool max %x {kernel = array<i64: 2, 2>, strides = array<i64: 1, 1>, pads = array<i64: 2, 2, 2, 2>, dilations = array<i64: 1, 1>, ceil_mode = false, count_include_pad = false} : tensor<1x4x7x7xf32> -> tensor<1x4x10x10xf32>
  func.return
}

// -----

// Ceil mode never adds a window that starts in the end padding.
func.func @pool_ceil(%x: tensor<1x1x2xf32>) {
  // CHECK: vx.pool: result shape [1, 1, 2] does not match the shape rule [1, 1, 1]
  %0 = vx.pool max %x {kernel = array<i64: 2>, strides = array<i64: 2>, pads = array<i64: 0, 1>, dilations = array<i64: 1>, ceil_mode = true, count_include_pad = false} : tensor<1x1x2xf32> -> tensor<1x1x2xf32>
  func.return
}

// -----

func.func @reduce_axes(%x: tensor<2x3x4xf32>) {
  // CHECK: vx.reduce: axes [2, 1] must be non-empty, sorted, distinct and in [0, 3)
  %0 = vx.reduce sum %x {axes = array<i64: 2, 1>, keepdims = false} : tensor<2x3x4xf32> -> tensor<2xf32>
  func.return
}

// -----

func.func @reduce_arg(%x: tensor<2x3x4xf32>) {
  // CHECK: vx.reduce: 'argmax' reduces exactly one axis
  %0 = vx.reduce argmax %x {axes = array<i64: 1, 2>, keepdims = false, select_last_index = false} : tensor<2x3x4xf32> -> tensor<2xi64>
  func.return
}

// -----

func.func @reduce_arg_type(%x: tensor<2x3x4xf32>) {
  // CHECK: vx.reduce: result element type f32 does not match the expected i64
  %0 = vx.reduce argmin %x {axes = array<i64: 1>, keepdims = false, select_last_index = false} : tensor<2x3x4xf32> -> tensor<2x4xf32>
  func.return
}

// -----

func.func @softmax_axis(%x: tensor<2x3xf32>) {
  // CHECK: vx.softmax: axis 2 is out of range for rank 2
  %0 = vx.softmax %x {axis = 2 : i64} : tensor<2x3xf32> -> tensor<2x3xf32>
  func.return
}

// -----

func.func @layernorm_scale(%x: tensor<2x8x16xf32>, %g: tensor<8xf32>) {
  // CHECK: vx.layernorm: scale [8] does not broadcast to [16]
  %0 = vx.layernorm %x, %g {axis = 2 : i64, epsilon = 1.0e-5 : f32} : (tensor<2x8x16xf32>, tensor<8xf32>) -> tensor<2x8x16xf32>
  func.return
}

// -----

func.func @batchnorm_param(%x: tensor<1x4x2x2xf32>, %s: tensor<4xf32>, %m: tensor<3xf32>) {
  // CHECK: vx.batchnorm: mean must be [4], got [3]
  %0 = vx.batchnorm %x, %s, %s, %m, %s {epsilon = 1.0e-5 : f32} : (tensor<1x4x2x2xf32>, tensor<4xf32>, tensor<4xf32>, tensor<3xf32>, tensor<4xf32>) -> tensor<1x4x2x2xf32>
  func.return
}

// -----

func.func @reshape_count(%x: tensor<2x3xf32>) {
  // CHECK: vx.reshape: cannot reshape 6 elements [2, 3] into 8 [2, 4]
  %0 = vx.reshape %x : tensor<2x3xf32> -> tensor<2x4xf32>
  func.return
}

// -----

func.func @transpose_perm(%x: tensor<2x3xf32>) {
  // CHECK: vx.transpose: perm [0, 0] is not a permutation of the input dims
  %0 = vx.transpose %x {perm = array<i64: 0, 0>} : tensor<2x3xf32> -> tensor<2x2xf32>
  func.return
}

// -----

func.func @concat_dims(%x: tensor<2x3xf32>, %y: tensor<4x3xf32>) {
  // CHECK: vx.concat: inputs [2, 3] and [4, 3] differ outside axis 1
  %0 = vx.concat %x, %y {axis = 1 : i64} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x6xf32>
  func.return
}

// -----

func.func @slice_normalized(%x: tensor<4xf32>) {
  // CHECK: vx.slice: dim 0: start -1, end 4, step 1 are not normalized for extent 4
  %0 = vx.slice %x {starts = array<i64: -1>, ends = array<i64: 4>, steps = array<i64: 1>} : tensor<4xf32> -> tensor<5xf32>
  func.return
}

// -----

func.func @gather_indices(%x: tensor<4x2xf32>, %i: tensor<3xf32>) {
  // CHECK: vx.gather: indices must be integers, got f32
  %0 = vx.gather %x, %i {axis = 0 : i64} : (tensor<4x2xf32>, tensor<3xf32>) -> tensor<3x2xf32>
  func.return
}

// -----

func.func @expand_shape(%x: tensor<3x2xf32>) {
  // CHECK: vx.expand: [3, 2] does not broadcast to [3, 4]
  %0 = vx.expand %x : tensor<3x2xf32> -> tensor<3x4xf32>
  func.return
}

// -----

func.func @pad_value(%x: tensor<3x2xf32>) {
  // CHECK: vx.pad: `value` is required for constant mode and only for it
  %0 = vx.pad constant %x {pads = array<i64: 1, 1, 1, 1>} : tensor<3x2xf32> -> tensor<5x4xf32>
  func.return
}

// -----

func.func @resize_scales(%x: tensor<1x2x3x3xf32>) {
  // CHECK: vx.resize: needs one scale per dim (4)
  %0 = vx.resize nearest %x {scales = array<f32: 2.0, 2.0>, coordinate_mode = #vx<coordinate_mode asymmetric>, nearest_mode = #vx<nearest_mode floor>, cubic_coeff_a = -0.75 : f32, exclude_outside = false} : tensor<1x2x3x3xf32> -> tensor<1x2x6x6xf32>
  func.return
}

// -----

func.func @quantize_result(%x: tensor<4xf32>, %s: tensor<f32>) {
  // CHECK: vx.quantize: result must be an integer tensor
  %0 = vx.quantize %x, %s {axis = 0 : i64} : (tensor<4xf32>, tensor<f32>) -> tensor<4xf16>
  func.return
}

// -----

func.func @dequantize_zero_point(%x: tensor<4xui8>, %s: tensor<f32>, %z: tensor<i8>) {
  // CHECK: vx.dequantize: zero point element type i8 differs from ui8
  %0 = vx.dequantize %x, %s, %z {axis = 0 : i64} : (tensor<4xui8>, tensor<f32>, tensor<i8>) -> tensor<4xf32>
  func.return
}

// -----

func.func @fused_args(%x: tensor<4xf32>) {
  // CHECK: vx.fused_pointwise: body argument 0 is f16, input 0 has elements f32
  %0 = vx.fused_pointwise %x : (tensor<4xf32>) -> tensor<4xf16> {
  ^bb0(%a: f16):
    vx.yield %a : f16
  }
  func.return
}

// -----

func.func @fused_body(%x: tensor<4xf32>) {
  // CHECK: vx.fused_pointwise: body may only hold scalar arith/math ops, found vx.constant
  %0 = vx.fused_pointwise %x : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: f32):
    %c = vx.constant dense<1.0> : tensor<4xf32>
    vx.yield %a : f32
  }
  func.return
}

// -----

func.func @fused_yield(%x: tensor<4xf32>) {
  // CHECK: vx.fused_pointwise: vx.yield gives 2 values for 1 results
  %0 = vx.fused_pointwise %x : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: f32):
    vx.yield %a, %a : f32, f32
  }
  func.return
}

// -----

func.func @fused_shape(%x: tensor<4xf32>, %y: tensor<2x1xf32>) {
  // CHECK: vx.fused_pointwise: result shape [4] does not match the shape rule [2, 4]
  %0 = vx.fused_pointwise %x, %y : (tensor<4xf32>, tensor<2x1xf32>) -> tensor<4xf32> {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    vx.yield %s : f32
  }
  func.return
}

// -----

func.func @yield_parent(%a: f32) {
  // CHECK: 'vx.yield' expects parent op 'vx.fused_pointwise'
  vx.yield %a : f32
}

// -----

func.func @convert_layout_same(%x: tensor<1x4x2x2xf32>) {
  // CHECK: vx.convert_layout: converts flat to itself
  %0 = vx.convert_layout %x from flat to flat : tensor<1x4x2x2xf32>
  func.return
}

// -----

func.func @constant_type() {
  // CHECK: vx.constant: result shape [3] does not match the shape rule [2]
  %0 = "vx.constant"() <{value = dense<1.0> : tensor<2xf32>}> : () -> tensor<3xf32>
  func.return
}

// -----

func.func @unranked(%x: tensor<*xf32>) {
  // CHECK: tensor<*xf32> should be of base attribute tensor
  %0 = vx.cast %x : tensor<*xf32> -> tensor<*xf16>
  func.return
}
