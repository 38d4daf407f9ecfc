// RUN: flash-opt %s -split-input-file -verify-diagnostics

func.func @rank_mismatch(%q: tensor<2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{expects query, key and value of equal rank 2, 3 or 4, got ranks 3, 4 and 4}}
  %o = flash.attention %q, %k, %v : tensor<2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<2x8x16xf32>
  return %o : tensor<2x8x16xf32>
}

// -----

func.func @rank5(%q: tensor<1x1x2x8x16xf32>) -> tensor<1x1x2x8x16xf32> {
  // expected-error @+1 {{expects query, key and value of equal rank 2, 3 or 4, got ranks 5, 5 and 5}}
  %o = flash.attention %q, %q, %q : tensor<1x1x2x8x16xf32>, tensor<1x1x2x8x16xf32>, tensor<1x1x2x8x16xf32> -> tensor<1x1x2x8x16xf32>
  return %o : tensor<1x1x2x8x16xf32>
}

// -----

func.func @unranked(%q: tensor<*xf32>, %k: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{operand #0 must be ranked tensor of any type values}}
  %o = "flash.attention"(%q, %k, %k) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0>}> ({}) : (tensor<*xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  return %o : tensor<8x16xf32>
}

// -----

func.func @element_type(%q: tensor<8x16xf32>, %k: tensor<8x16xf16>) -> tensor<8x16xf32> {
  // expected-error @+1 {{expects query, key and value of one element type among f16, bf16 and f32, got 'f32', 'f16' and 'f16'}}
  %o = flash.attention %q, %k, %k : tensor<8x16xf32>, tensor<8x16xf16>, tensor<8x16xf16> -> tensor<8x16xf32>
  return %o : tensor<8x16xf32>
}

// -----

func.func @integer_inputs(%q: tensor<8x16xi8>) -> tensor<8x16xi8> {
  // expected-error @+1 {{expects query, key and value of one element type among f16, bf16 and f32, got 'i8', 'i8' and 'i8'}}
  %o = flash.attention %q, %q, %q : tensor<8x16xi8>, tensor<8x16xi8>, tensor<8x16xi8> -> tensor<8x16xi8>
  return %o : tensor<8x16xi8>
}

// -----

func.func @dynamic_head_dim(%q: tensor<8x?xf32>) -> tensor<8x?xf32> {
  // expected-error @+1 {{expects a static head dimension D in query and key}}
  %o = flash.attention %q, %q, %q : tensor<8x?xf32>, tensor<8x?xf32>, tensor<8x?xf32> -> tensor<8x?xf32>
  return %o : tensor<8x?xf32>
}

// -----

func.func @dynamic_value_dim(%q: tensor<8x16xf32>, %v: tensor<8x?xf32>) -> tensor<8x?xf32> {
  // expected-error @+1 {{expects a static head dimension Dv in value}}
  %o = flash.attention %q, %q, %v : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x?xf32> -> tensor<8x?xf32>
  return %o : tensor<8x?xf32>
}

// -----

func.func @head_dim_mismatch(%q: tensor<1x2x8x64xf16>, %k: tensor<1x2x8x32xf16>) -> tensor<1x2x8x32xf16> {
  // expected-error @+1 {{expects query and key to share the head dimension D, got 64 and 32}}
  %o = flash.attention %q, %k, %k : tensor<1x2x8x64xf16>, tensor<1x2x8x32xf16>, tensor<1x2x8x32xf16> -> tensor<1x2x8x32xf16>
  return %o : tensor<1x2x8x32xf16>
}

// -----

func.func @kv_mismatch(%q: tensor<1x2x8x16xf16>, %k: tensor<1x2x8x16xf16>, %v: tensor<1x2x9x16xf16>) -> tensor<1x2x8x16xf16> {
  // expected-error @+1 {{expects key and value to agree in every dimension but the last, got 'tensor<1x2x8x16xf16>' and 'tensor<1x2x9x16xf16>'}}
  %o = flash.attention %q, %k, %v : tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>, tensor<1x2x9x16xf16> -> tensor<1x2x8x16xf16>
  return %o : tensor<1x2x8x16xf16>
}

// -----

func.func @batch_mismatch(%q: tensor<2x2x8x16xf16>, %k: tensor<3x2x8x16xf16>) -> tensor<2x2x8x16xf16> {
  // expected-error @+1 {{expects query, key and value of the same batch size, got 'tensor<2x2x8x16xf16>', 'tensor<3x2x8x16xf16>' and 'tensor<3x2x8x16xf16>'}}
  %o = flash.attention %q, %k, %k : tensor<2x2x8x16xf16>, tensor<3x2x8x16xf16>, tensor<3x2x8x16xf16> -> tensor<2x2x8x16xf16>
  return %o : tensor<2x2x8x16xf16>
}

// -----

func.func @heads_not_multiple(%q: tensor<1x6x8x16xf16>, %k: tensor<1x4x8x16xf16>) -> tensor<1x6x8x16xf16> {
  // expected-error @+1 {{expects the number of query heads (6) to be a multiple of the number of key/value heads (4)}}
  %o = flash.attention %q, %k, %k : tensor<1x6x8x16xf16>, tensor<1x4x8x16xf16>, tensor<1x4x8x16xf16> -> tensor<1x6x8x16xf16>
  return %o : tensor<1x6x8x16xf16>
}

// -----

// Query heads are grouped by Hq / Hkv even when Hq is only known at run time
// (the decomposition divided by 0: fuzzer finding F1).
func.func @no_kv_heads(%q: tensor<1x?x8x16xf16>, %k: tensor<1x0x8x16xf16>) -> tensor<1x?x8x16xf16> {
  // expected-error @+1 {{expects at least one key/value head, got 0}}
  %o = flash.attention %q, %k, %k : tensor<1x?x8x16xf16>, tensor<1x0x8x16xf16>, tensor<1x0x8x16xf16> -> tensor<1x?x8x16xf16>
  return %o : tensor<1x?x8x16xf16>
}

// -----

func.func @infinite_scale(%q: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{expects a finite scale, got INF}}
  %o = flash.attention %q, %q, %q {scale = 0x7F800000 : f32} : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  return %o : tensor<8x16xf32>
}

// -----

func.func @mask_not_i1(%q: tensor<8x16xf32>, %m: tensor<8x8xi8>) -> tensor<8x16xf32> {
  // expected-error @+1 {{expects an i1 mask, got element type 'i8'}}
  %o = flash.attention %q, %q, %q mask(%m : tensor<8x8xi8>) : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  return %o : tensor<8x16xf32>
}

// -----

func.func @bias_element_type(%q: tensor<8x16xf32>, %b: tensor<8x8xi1>) -> tensor<8x16xf32> {
  // expected-error @+1 {{expects a bias of element type f16, bf16 or f32, got 'i1'}}
  %o = flash.attention %q, %q, %q bias(%b : tensor<8x8xi1>) : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  return %o : tensor<8x16xf32>
}

// -----

func.func @bias_rank(%q: tensor<8x16xf32>, %b: tensor<1x8x8xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{expects a bias of rank 1 to 2, got 'tensor<1x8x8xf32>'}}
  %o = flash.attention %q, %q, %q bias(%b : tensor<1x8x8xf32>) : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  return %o : tensor<8x16xf32>
}

// -----

func.func @bias_scalar(%q: tensor<8x16xf32>, %b: tensor<f32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{expects a bias of rank 1 to 2, got 'tensor<f32>'}}
  %o = flash.attention %q, %q, %q bias(%b : tensor<f32>) : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  return %o : tensor<8x16xf32>
}

// -----

func.func @bias_not_broadcastable(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x256x64xf16>, %b: tensor<8x128x128xf32>) -> tensor<2x8x128x64xf16> {
  // expected-error @+1 {{expects a bias broadcastable to the scores [2, 8, 128, 256], got 'tensor<8x128x128xf32>'}}
  %o = flash.attention %q, %k, %k bias(%b : tensor<8x128x128xf32>) : tensor<2x8x128x64xf16>, tensor<2x8x256x64xf16>, tensor<2x8x256x64xf16> -> tensor<2x8x128x64xf16>
  return %o : tensor<2x8x128x64xf16>
}

// -----

func.func @mask_not_broadcastable(%q: tensor<?x?x?x64xf16>, %k: tensor<?x?x8x64xf16>, %m: tensor<3x1x1x5xi1>) -> tensor<?x?x?x64xf16> {
  // expected-error @+1 {{expects a mask broadcastable to the scores [?, ?, ?, 8], got 'tensor<3x1x1x5xi1>'}}
  %o = flash.attention %q, %k, %k mask(%m : tensor<3x1x1x5xi1>) : tensor<?x?x?x64xf16>, tensor<?x?x8x64xf16>, tensor<?x?x8x64xf16> -> tensor<?x?x?x64xf16>
  return %o : tensor<?x?x?x64xf16>
}

// -----

func.func @output_shape(%q: tensor<1x2x8x16xf16>, %k: tensor<1x2x9x16xf16>, %v: tensor<1x2x9x32xf16>) -> tensor<1x2x8x16xf16> {
  // expected-error @+1 {{expects an output of shape [1, 2, 8, 32] and element type 'f16', got 'tensor<1x2x8x16xf16>'}}
  %o = flash.attention %q, %k, %v : tensor<1x2x8x16xf16>, tensor<1x2x9x16xf16>, tensor<1x2x9x32xf16> -> tensor<1x2x8x16xf16>
  return %o : tensor<1x2x8x16xf16>
}

// -----

func.func @output_element_type(%q: tensor<1x2x8x16xf16>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{expects an output of shape [1, 2, 8, 16] and element type 'f16', got 'tensor<1x2x8x16xf32>'}}
  %o = flash.attention %q, %q, %q : tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16> -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

func.func @lse_type(%q: tensor<1x2x8x16xf16>) -> tensor<1x2x8xf16> {
  // expected-error @+1 {{expects an lse of shape [1, 2, 8] and element type 'f32', got 'tensor<1x2x8xf16>'}}
  %o, %lse = flash.attention %q, %q, %q : tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16> -> tensor<1x2x8x16xf16>, tensor<1x2x8xf16>
  return %lse : tensor<1x2x8xf16>
}

// -----

func.func @lse_shape(%q: tensor<1x2x8x16xf16>) -> tensor<1x2x9xf32> {
  // expected-error @+1 {{expects an lse of shape [1, 2, 8] and element type 'f32', got 'tensor<1x2x9xf32>'}}
  %o, %lse = flash.attention %q, %q, %q : tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16> -> tensor<1x2x8x16xf16>, tensor<1x2x9xf32>
  return %lse : tensor<1x2x9xf32>
}

// -----

func.func @backward_heads(%q: tensor<1x6x8x16xf16>, %k: tensor<1x4x8x16xf16>, %lse: tensor<1x6x8xf32>) {
  // expected-error @+1 {{expects the number of query heads (6) to be a multiple of the number of key/value heads (4)}}
  %dq, %dk, %dv = flash.attention_backward %q, %k, %k, %q, %q, %lse : tensor<1x6x8x16xf16>, tensor<1x4x8x16xf16>, tensor<1x4x8x16xf16>, tensor<1x6x8x16xf16>, tensor<1x6x8xf32>
  return
}

// -----

func.func @backward_output(%q: tensor<1x2x8x16xf16>, %o: tensor<1x2x7x16xf16>, %lse: tensor<1x2x8xf32>) {
  // expected-error @+1 {{expects an output of shape [1, 2, 8, 16] and element type 'f16', got 'tensor<1x2x7x16xf16>'}}
  %dq, %dk, %dv = flash.attention_backward %q, %q, %q, %o, %o, %lse : tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>, tensor<1x2x7x16xf16>, tensor<1x2x8xf32>
  return
}

// -----

func.func @backward_lse(%q: tensor<1x2x8x16xf16>, %lse: tensor<1x2x8xf16>) {
  // expected-error @+1 {{expects an lse of shape [1, 2, 8] and element type 'f32', got 'tensor<1x2x8xf16>'}}
  %dq, %dk, %dv = flash.attention_backward %q, %q, %q, %q, %q, %lse : tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>, tensor<1x2x8xf16>
  return
}

// -----

func.func @backward_mask(%q: tensor<1x2x8x16xf16>, %lse: tensor<1x2x8xf32>, %m: tensor<8x8xf32>) {
  // expected-error @+1 {{expects an i1 mask, got element type 'f32'}}
  %dq, %dk, %dv = flash.attention_backward %q, %q, %q, %q, %q, %lse mask(%m : tensor<8x8xf32>) : tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>, tensor<1x2x8xf32>
  return
}

// -----

func.func @backward_result_type(%q: tensor<1x2x8x16xf16>, %lse: tensor<1x2x8xf32>) {
  // expected-error @+1 {{failed to verify that all of {query, grad_query} have same type}}
  %r:3 = "flash.attention_backward"(%q, %q, %q, %q, %q, %lse) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0>}> ({}) : (tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>, tensor<1x2x8xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>)
  return
}

// -----

func.func @negative_window(%q: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{attribute 'window' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  %o = flash.attention %q, %q, %q {window = -1 : i64} : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  return %o : tensor<8x16xf32>
}

// -----

// Sizes bind across all operands: each pair below is compatible through a
// dynamic size, the whole is not (found by fuzzing).
func.func @batch_through_dynamic_key(%q: tensor<2x4x8x16xf32>, %k: tensor<?x4x8x16xf32>, %v: tensor<3x4x8x16xf32>) -> tensor<2x4x8x16xf32> {
  // expected-error @+1 {{expects query, key and value of the same batch size, got 'tensor<2x4x8x16xf32>', 'tensor<?x4x8x16xf32>' and 'tensor<3x4x8x16xf32>'}}
  %o = flash.attention %q, %k, %v : tensor<2x4x8x16xf32>, tensor<?x4x8x16xf32>, tensor<3x4x8x16xf32> -> tensor<2x4x8x16xf32>
  return %o : tensor<2x4x8x16xf32>
}

// -----

func.func @groups_through_dynamic_key(%q: tensor<1x4x8x16xf32>, %k: tensor<1x?x8x16xf32>, %v: tensor<1x3x8x16xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{expects the number of query heads (4) to be a multiple of the number of key/value heads (3)}}
  %o = flash.attention %q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x?x8x16xf32>, tensor<1x3x8x16xf32> -> tensor<1x4x8x16xf32>
  return %o : tensor<1x4x8x16xf32>
}

// -----

func.func @bias_keys_through_dynamic_key(%q: tensor<8x16xf32>, %k: tensor<?x16xf32>, %v: tensor<5x16xf32>, %b: tensor<8x7xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{expects a bias broadcastable to the scores [8, 5], got 'tensor<8x7xf32>'}}
  %o = flash.attention %q, %k, %v bias(%b : tensor<8x7xf32>) : tensor<8x16xf32>, tensor<?x16xf32>, tensor<5x16xf32> -> tensor<8x16xf32>
  return %o : tensor<8x16xf32>
}

// -----

func.func @lse_heads_through_dynamic_query(%q: tensor<1x?x8x16xf32>, %k: tensor<1x1x8x16xf32>) -> (tensor<1x3x8x16xf32>, tensor<1x5x8xf32>) {
  // expected-error @+1 {{expects an lse of shape [1, 3, 8] and element type 'f32', got 'tensor<1x5x8xf32>'}}
  %o, %lse = flash.attention %q, %k, %k : tensor<1x?x8x16xf32>, tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32> -> tensor<1x3x8x16xf32>, tensor<1x5x8xf32>
  return %o, %lse : tensor<1x3x8x16xf32>, tensor<1x5x8xf32>
}

// -----

func.func @groups_through_output(%q: tensor<1x?x8x16xf32>, %k: tensor<1x2x8x16xf32>) -> tensor<1x3x8x16xf32> {
  // expected-error @+1 {{expects the number of query heads (3) to be a multiple of the number of key/value heads (2)}}
  %o = flash.attention %q, %k, %k : tensor<1x?x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x3x8x16xf32>
  return %o : tensor<1x3x8x16xf32>
}

// -----

func.func @scale_twice(%q: tensor<1x2x8x16xf32>, %s: f32) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{takes a scale attribute or a runtime_scale operand, not both}}
  %o = flash.attention %q, %q, %q runtime_scale(%s) {scale = 0.5 : f32} : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

func.func @score_mod_arguments(%q: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{expects a score_mod region with arguments (f32, index, index, index, index) for the score and its (b, h, i, j), got 3 argument(s)}}
  %o = flash.attention %q, %q, %q : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32> score_mod {
  ^bb0(%s: f32, %i: index, %j: index):
    flash.yield %s : f32
  }
  return %o : tensor<8x16xf32>
}

// -----

func.func @score_mod_terminator(%q: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{expects the score_mod region to end in flash.yield}}
  %o = flash.attention %q, %q, %q : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %t = arith.addf %s, %s : f32
  }
  return %o : tensor<8x16xf32>
}

// -----

func.func @score_mod_side_effect(%q: tensor<8x16xf32>, %buffer: memref<8xf32>) -> tensor<8x16xf32> {
  %o = flash.attention %q, %q, %q : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    // expected-error @+1 {{has side effects, which a score_mod region of flash.attention does not allow}}
    memref.store %s, %buffer[%i] : memref<8xf32>
    flash.yield %s : f32
  }
  return %o : tensor<8x16xf32>
}

// -----

func.func @score_mod_yield_type(%q: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %o = flash.attention %q, %q, %q : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %x = arith.index_cast %i : index to i32
    // expected-error @+1 {{'flash.yield' op operand #0 must be 32-bit float, but got 'i32'}}
    "flash.yield"(%x) : (i32) -> ()
  }
  return %o : tensor<8x16xf32>
}

// -----

func.func @yield_outside(%s: f32) -> f32 {
  // expected-error @+1 {{expects parent op to be one of 'flash.attention, flash.attention_backward'}}
  flash.yield %s : f32
}

// -----

func.func @score_mod_empty_block(%q: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{expects the score_mod region to end in flash.yield}}
  %o = flash.attention %q, %q, %q : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
  }
  return %o : tensor<8x16xf32>
}

// -----

func.func @backward_score_mod_not_differentiable(%q: tensor<1x2x8x16xf32>, %lse: tensor<1x2x8xf32>) -> tensor<1x2x8x16xf32> {
  %dq, %dk, %dv = flash.attention_backward %q, %q, %q, %q, %q, %lse : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8xf32> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    // expected-error @+1 {{'math.floor' op is applied to the score in the score_mod of flash.attention_backward, which has no derivative rule for it}}
    %f = math.floor %s : f32
    flash.yield %f : f32
  }
  return %dq : tensor<1x2x8x16xf32>
}

// -----

func.func @atomic_add_element_type(%t: tensor<16x64xf16>, %d: memref<16x64xf32>) {
  // expected-error @+1 {{adds a tile of floats into a buffer of the same element type; got 'f16' into 'f32'}}
  flash.atomic_add %t, %d : tensor<16x64xf16>, memref<16x64xf32>
  return
}

// -----

func.func @atomic_add_rank(%t: tensor<64xf32>, %d: memref<16x64xf32>) {
  // expected-error @+1 {{tile and destination have different ranks (1 and 2)}}
  flash.atomic_add %t, %d : tensor<64xf32>, memref<16x64xf32>
  return
}

// -----

func.func @atomic_add_shape(%t: tensor<16x32xf32>, %d: memref<?x64xf32>) {
  // expected-error @+1 {{tile and destination differ in dimension 1 (32 and 64)}}
  flash.atomic_add %t, %d : tensor<16x32xf32>, memref<?x64xf32>
  return
}

// -----

func.func @atomic_add_fragment_group(%t: tensor<16x64xf32>, %d: memref<16x64xf32>) {
  // expected-error @+1 {{fragment_major is 1, 2 or 4, got 3}}
  flash.atomic_add %t, %d {fragment_major = 3 : i64} : tensor<16x64xf32>, memref<16x64xf32>
  return
}

// -----

func.func @atomic_add_fragment_cols(%t: tensor<16x32xf32>, %d: memref<16x32xf32>) {
  // expected-error @+1 {{fragment_major needs [rows, W] tiles with W a static multiple of 64}}
  flash.atomic_add %t, %d {fragment_major = 1 : i64} : tensor<16x32xf32>, memref<16x32xf32>
  return
}

// -----

func.func @sinks_per_kv_head(%q: tensor<1x8x16x32xf32>, %k: tensor<1x2x16x32xf32>, %s: tensor<2xf32>) -> tensor<1x8x16x32xf32> {
  // expected-error @+1 {{expects sinks of shape [8] (one per query head) and element type f16, bf16 or f32, got 'tensor<2xf32>'}}
  %o = flash.attention %q, %k, %k sinks(%s : tensor<2xf32>) : tensor<1x8x16x32xf32>, tensor<1x2x16x32xf32>, tensor<1x2x16x32xf32> -> tensor<1x8x16x32xf32>
  return %o : tensor<1x8x16x32xf32>
}

// -----

func.func @sinks_rank2(%q: tensor<1x8x16x32xf32>, %s: tensor<1x8xf32>) -> tensor<1x8x16x32xf32> {
  // expected-error @+1 {{expects sinks of shape [8] (one per query head) and element type f16, bf16 or f32, got 'tensor<1x8xf32>'}}
  %o = flash.attention %q, %q, %q sinks(%s : tensor<1x8xf32>) : tensor<1x8x16x32xf32>, tensor<1x8x16x32xf32>, tensor<1x8x16x32xf32> -> tensor<1x8x16x32xf32>
  return %o : tensor<1x8x16x32xf32>
}

// -----

func.func @sinks_integer(%q: tensor<8x16x32xf32>, %s: tensor<8xi32>) -> tensor<8x16x32xf32> {
  // expected-error @+1 {{expects sinks of shape [8] (one per query head) and element type f16, bf16 or f32, got 'tensor<8xi32>'}}
  %o = flash.attention %q, %q, %q sinks(%s : tensor<8xi32>) : tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<8x16x32xf32> -> tensor<8x16x32xf32>
  return %o : tensor<8x16x32xf32>
}

// -----

func.func @backward_sinks_without_gradient(%q: tensor<1x2x16x32xf32>, %lse: tensor<1x2x16xf32>, %s: tensor<2xf32>) {
  // expected-error @+1 {{returns grad_sinks exactly when it takes sinks}}
  %dq, %dk, %dv = flash.attention_backward %q, %q, %q, %q, %q, %lse sinks(%s : tensor<2xf32>) : tensor<1x2x16x32xf32>, tensor<1x2x16x32xf32>, tensor<1x2x16x32xf32>, tensor<1x2x16x32xf32>, tensor<1x2x16xf32>
  return
}

// -----

func.func @backward_sinks_gradient_type(%q: tensor<1x2x16x32xf32>, %lse: tensor<1x2x16xf32>, %s: tensor<2xbf16>) {
  // expected-error @+1 {{expects grad_sinks of the type of sinks, 'tensor<2xbf16>', got 'tensor<2xf32>'}}
  %dq, %dk, %dv, %ds = flash.attention_backward %q, %q, %q, %q, %q, %lse sinks(%s : tensor<2xbf16>) : tensor<1x2x16x32xf32>, tensor<1x2x16x32xf32>, tensor<1x2x16x32xf32>, tensor<1x2x16x32xf32>, tensor<1x2x16xf32> -> tensor<2xf32>
  return
}

// -----

func.func @key_lengths_per_head(%q: tensor<2x8x16x32xf32>, %l: tensor<8xi32>) -> tensor<2x8x16x32xf32> {
  // expected-error @+1 {{expects key_lengths of shape [2] (one per batch entry) and element type i32 or i64, got 'tensor<8xi32>'}}
  %o = flash.attention %q, %q, %q key_lengths(%l : tensor<8xi32>) : tensor<2x8x16x32xf32>, tensor<2x8x16x32xf32>, tensor<2x8x16x32xf32> -> tensor<2x8x16x32xf32>
  return %o : tensor<2x8x16x32xf32>
}

// -----

func.func @key_lengths_float(%q: tensor<2x8x16x32xf32>, %l: tensor<2xf32>) -> tensor<2x8x16x32xf32> {
  // expected-error @+1 {{expects key_lengths of shape [2] (one per batch entry) and element type i32 or i64, got 'tensor<2xf32>'}}
  %o = flash.attention %q, %q, %q key_lengths(%l : tensor<2xf32>) : tensor<2x8x16x32xf32>, tensor<2x8x16x32xf32>, tensor<2x8x16x32xf32> -> tensor<2x8x16x32xf32>
  return %o : tensor<2x8x16x32xf32>
}

// -----

func.func @key_lengths_rank3(%q: tensor<8x16x32xf32>, %l: tensor<1xi32>) -> tensor<8x16x32xf32> {
  // expected-error @+1 {{takes key_lengths only in the rank-4 form (one length per batch entry) or with cu_seqlens}}
  %o = flash.attention %q, %q, %q key_lengths(%l : tensor<1xi32>) : tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<8x16x32xf32> -> tensor<8x16x32xf32>
  return %o : tensor<8x16x32xf32>
}

// -----

func.func @block_table_without_lengths(%q: tensor<2x8x1x32xf32>, %k: tensor<9x2x16x32xf32>, %t: tensor<2x4xi32>) -> tensor<2x8x1x32xf32> {
  // expected-error @+1 {{takes a block_table only with key_lengths (the keys of each sequence)}}
  %o = flash.attention %q, %k, %k block_table(%t : tensor<2x4xi32>) : tensor<2x8x1x32xf32>, tensor<9x2x16x32xf32>, tensor<9x2x16x32xf32> -> tensor<2x8x1x32xf32>
  return %o : tensor<2x8x1x32xf32>
}

// -----

func.func @block_table_i64(%q: tensor<2x8x1x32xf32>, %k: tensor<9x2x16x32xf32>, %l: tensor<2xi32>, %t: tensor<2x4xi64>) -> tensor<2x8x1x32xf32> {
  // expected-error @+1 {{expects a block_table of rank 2 [B, P] and element type i32, got 'tensor<2x4xi64>'}}
  %o = flash.attention %q, %k, %k key_lengths(%l : tensor<2xi32>) block_table(%t : tensor<2x4xi64>) : tensor<2x8x1x32xf32>, tensor<9x2x16x32xf32>, tensor<9x2x16x32xf32> -> tensor<2x8x1x32xf32>
  return %o : tensor<2x8x1x32xf32>
}

// -----

func.func @block_table_rows(%q: tensor<2x8x1x32xf32>, %k: tensor<9x2x16x32xf32>, %l: tensor<2xi32>, %t: tensor<3x4xi32>) -> tensor<2x8x1x32xf32> {
  // expected-error @+1 {{expects a block_table row per batch entry, got 'tensor<3x4xi32>' for query 'tensor<2x8x1x32xf32>'}}
  %o = flash.attention %q, %k, %k key_lengths(%l : tensor<2xi32>) block_table(%t : tensor<3x4xi32>) : tensor<2x8x1x32xf32>, tensor<9x2x16x32xf32>, tensor<9x2x16x32xf32> -> tensor<2x8x1x32xf32>
  return %o : tensor<2x8x1x32xf32>
}

// -----

func.func @block_table_mask(%q: tensor<2x8x1x32xf32>, %k: tensor<9x2x16x32xf32>, %l: tensor<2xi32>, %t: tensor<2x4xi32>, %m: tensor<1x16xi1>) -> tensor<2x8x1x32xf32> {
  // expected-error @+1 {{expects a mask broadcastable to the scores [2, 8, 1, 64], got 'tensor<1x16xi1>'}}
  %o = flash.attention %q, %k, %k mask(%m : tensor<1x16xi1>) key_lengths(%l : tensor<2xi32>) block_table(%t : tensor<2x4xi32>) : tensor<2x8x1x32xf32>, tensor<9x2x16x32xf32>, tensor<9x2x16x32xf32> -> tensor<2x8x1x32xf32>
  return %o : tensor<2x8x1x32xf32>
}

// -----

func.func @varlen_one_offsets(%q: tensor<8x40x32xf32>, %c: tensor<4xi32>) -> tensor<8x40x32xf32> {
  // expected-error @+1 {{takes cu_seqlens_q and cu_seqlens_k together}}
  %o = flash.attention %q, %q, %q cu_seqlens_q(%c : tensor<4xi32>) : tensor<8x40x32xf32>, tensor<8x40x32xf32>, tensor<8x40x32xf32> -> tensor<8x40x32xf32>
  return %o : tensor<8x40x32xf32>
}

// -----

func.func @varlen_float_offsets(%q: tensor<8x40x32xf32>, %c: tensor<4xi32>, %f: tensor<4xf32>) -> tensor<8x40x32xf32> {
  // expected-error @+1 {{expects cu_seqlens_k of shape [S + 1] (cumulative offsets of S sequences) and element type i32 or i64, got 'tensor<4xf32>'}}
  %o = flash.attention %q, %q, %q cu_seqlens_q(%c : tensor<4xi32>) cu_seqlens_k(%f : tensor<4xf32>) : tensor<8x40x32xf32>, tensor<8x40x32xf32>, tensor<8x40x32xf32> -> tensor<8x40x32xf32>
  return %o : tensor<8x40x32xf32>
}

// -----

func.func @varlen_no_offsets(%q: tensor<8x40x32xf32>, %c: tensor<0xi32>) -> tensor<8x40x32xf32> {
  // expected-error @+1 {{expects cu_seqlens_q of shape [S + 1] (cumulative offsets of S sequences) and element type i32 or i64, got 'tensor<0xi32>'}}
  %o = flash.attention %q, %q, %q cu_seqlens_q(%c : tensor<0xi32>) cu_seqlens_k(%c : tensor<0xi32>) : tensor<8x40x32xf32>, tensor<8x40x32xf32>, tensor<8x40x32xf32> -> tensor<8x40x32xf32>
  return %o : tensor<8x40x32xf32>
}

// -----

func.func @varlen_sizes(%q: tensor<8x40x32xf32>, %c: tensor<4xi32>, %d: tensor<5xi64>) -> tensor<8x40x32xf32> {
  // expected-error @+1 {{expects cu_seqlens_q and cu_seqlens_k of one size (S + 1 offsets), got 'tensor<4xi32>' and 'tensor<5xi64>'}}
  %o = flash.attention %q, %q, %q cu_seqlens_q(%c : tensor<4xi32>) cu_seqlens_k(%d : tensor<5xi64>) : tensor<8x40x32xf32>, tensor<8x40x32xf32>, tensor<8x40x32xf32> -> tensor<8x40x32xf32>
  return %o : tensor<8x40x32xf32>
}

// -----

func.func @varlen_batch(%q: tensor<?x8x40x32xf32>, %c: tensor<4xi32>) -> tensor<?x8x40x32xf32> {
  // expected-error @+1 {{expects a batch of size 1 with cu_seqlens (the sequences are packed along the tokens), got [?]}}
  %o = flash.attention %q, %q, %q cu_seqlens_q(%c : tensor<4xi32>) cu_seqlens_k(%c : tensor<4xi32>) : tensor<?x8x40x32xf32>, tensor<?x8x40x32xf32>, tensor<?x8x40x32xf32> -> tensor<?x8x40x32xf32>
  return %o : tensor<?x8x40x32xf32>
}

// -----

func.func @varlen_bias(%q: tensor<8x40x32xf32>, %c: tensor<4xi32>, %b: tensor<40x40xf32>) -> tensor<8x40x32xf32> {
  // expected-error @+1 {{takes no bias or mask with cu_seqlens (a score_mod sees each sequence's own positions)}}
  %o = flash.attention %q, %q, %q bias(%b : tensor<40x40xf32>) cu_seqlens_q(%c : tensor<4xi32>) cu_seqlens_k(%c : tensor<4xi32>) : tensor<8x40x32xf32>, tensor<8x40x32xf32>, tensor<8x40x32xf32> -> tensor<8x40x32xf32>
  return %o : tensor<8x40x32xf32>
}

// -----

func.func @varlen_block_table(%q: tensor<1x8x40x32xf32>, %k: tensor<9x2x16x32xf32>, %l: tensor<1xi32>, %t: tensor<1x4xi32>, %c: tensor<2xi32>) -> tensor<1x8x40x32xf32> {
  // expected-error @+1 {{does not take a block_table with cu_seqlens yet}}
  %o = flash.attention %q, %k, %k key_lengths(%l : tensor<1xi32>) block_table(%t : tensor<1x4xi32>) cu_seqlens_q(%c : tensor<2xi32>) cu_seqlens_k(%c : tensor<2xi32>) : tensor<1x8x40x32xf32>, tensor<9x2x16x32xf32>, tensor<9x2x16x32xf32> -> tensor<1x8x40x32xf32>
  return %o : tensor<1x8x40x32xf32>
}

// -----

func.func @varlen_key_lengths(%q: tensor<8x40x32xf32>, %c: tensor<4xi32>, %l: tensor<4xi32>) -> tensor<8x40x32xf32> {
  // expected-error @+1 {{expects key_lengths of shape [3] (one per sequence) and element type i32 or i64, got 'tensor<4xi32>'}}
  %o = flash.attention %q, %q, %q key_lengths(%l : tensor<4xi32>) cu_seqlens_q(%c : tensor<4xi32>) cu_seqlens_k(%c : tensor<4xi32>) : tensor<8x40x32xf32>, tensor<8x40x32xf32>, tensor<8x40x32xf32> -> tensor<8x40x32xf32>
  return %o : tensor<8x40x32xf32>
}

// -----

func.func @varlen_backward_batch(%q: tensor<2x8x40x32xf16>, %lse: tensor<2x8x40xf32>, %c: tensor<3xi32>) -> tensor<2x8x40x32xf16> {
  // expected-error @+1 {{expects a batch of size 1 with cu_seqlens (the sequences are packed along the tokens), got [2]}}
  %dq, %dk, %dv = flash.attention_backward %q, %q, %q, %q, %q, %lse cu_seqlens_q(%c : tensor<3xi32>) cu_seqlens_k(%c : tensor<3xi32>) : tensor<2x8x40x32xf16>, tensor<2x8x40x32xf16>, tensor<2x8x40x32xf16>, tensor<2x8x40x32xf16>, tensor<2x8x40xf32>
  return %dq : tensor<2x8x40x32xf16>
}

// -----

// expected-error @+1 {{'flash.max_seqlen_q' of argument 1 must be a unit attribute}}
func.func @max_seqlen_value(%q: tensor<8x40x32xf32>, %m: index {flash.max_seqlen_q = 3 : i64}) -> tensor<8x40x32xf32> {
  return %q : tensor<8x40x32xf32>
}
