// RUN: flash-opt %s | flash-opt | FileCheck %s
// RUN: flash-opt %s --mlir-print-op-generic | flash-opt | FileCheck %s

// CHECK-LABEL: func @plain
// CHECK: %[[O:.*]] = flash.attention %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x8x128x64xf16>, tensor<2x8x256x64xf16>, tensor<2x8x256x64xf16> -> tensor<2x8x128x64xf16>
func.func @plain(%q: tensor<2x8x128x64xf16>, %k: tensor<2x8x256x64xf16>, %v: tensor<2x8x256x64xf16>) -> tensor<2x8x128x64xf16> {
  %o = flash.attention %q, %k, %v : tensor<2x8x128x64xf16>, tensor<2x8x256x64xf16>, tensor<2x8x256x64xf16> -> tensor<2x8x128x64xf16>
  return %o : tensor<2x8x128x64xf16>
}

// CHECK-LABEL: func @lse_causal_scale_gqa
// CHECK: %{{.*}}, %{{.*}} = flash.attention %{{.*}}, %{{.*}}, %{{.*}} {causal, scale = 1.250000e-01 : f32} : tensor<2x8x128x64xbf16>, tensor<2x2x256x64xbf16>, tensor<2x2x256x32xbf16> -> tensor<2x8x128x32xbf16>, tensor<2x8x128xf32>
func.func @lse_causal_scale_gqa(%q: tensor<2x8x128x64xbf16>, %k: tensor<2x2x256x64xbf16>, %v: tensor<2x2x256x32xbf16>) -> (tensor<2x8x128x32xbf16>, tensor<2x8x128xf32>) {
  %o, %lse = flash.attention %q, %k, %v {causal, scale = 0.125 : f32} : tensor<2x8x128x64xbf16>, tensor<2x2x256x64xbf16>, tensor<2x2x256x32xbf16> -> tensor<2x8x128x32xbf16>, tensor<2x8x128xf32>
  return %o, %lse : tensor<2x8x128x32xbf16>, tensor<2x8x128xf32>
}

// CHECK-LABEL: func @bias_and_mask
// CHECK: flash.attention %{{.*}}, %{{.*}}, %{{.*}} bias(%{{.*}} : tensor<1x8x128x256xf16>) mask(%{{.*}} : tensor<256xi1>) : tensor<2x8x128x64xf32>
func.func @bias_and_mask(%q: tensor<2x8x128x64xf32>, %k: tensor<2x8x256x64xf32>, %v: tensor<2x8x256x64xf32>, %b: tensor<1x8x128x256xf16>, %m: tensor<256xi1>) -> tensor<2x8x128x64xf32> {
  %o = flash.attention %q, %k, %v bias(%b : tensor<1x8x128x256xf16>) mask(%m : tensor<256xi1>) : tensor<2x8x128x64xf32>, tensor<2x8x256x64xf32>, tensor<2x8x256x64xf32> -> tensor<2x8x128x64xf32>
  return %o : tensor<2x8x128x64xf32>
}

// CHECK-LABEL: func @dynamic
// CHECK: flash.attention {{.*}} : tensor<?x?x?x64xf16>, tensor<?x?x?x64xf16>, tensor<?x?x?x64xf16> -> tensor<?x?x?x64xf16>, tensor<?x?x?xf32>
func.func @dynamic(%q: tensor<?x?x?x64xf16>, %k: tensor<?x?x?x64xf16>, %v: tensor<?x?x?x64xf16>, %b: tensor<?x?xf32>) -> (tensor<?x?x?x64xf16>, tensor<?x?x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v bias(%b : tensor<?x?xf32>) {causal} : tensor<?x?x?x64xf16>, tensor<?x?x?x64xf16>, tensor<?x?x?x64xf16> -> tensor<?x?x?x64xf16>, tensor<?x?x?xf32>
  return %o, %lse : tensor<?x?x?x64xf16>, tensor<?x?x?xf32>
}

// CHECK-LABEL: func @rank3
// CHECK: flash.attention {{.*}} : tensor<8x128x64xf32>, tensor<2x100x64xf32>, tensor<2x100x64xf32> -> tensor<8x128x64xf32>, tensor<8x128xf32>
func.func @rank3(%q: tensor<8x128x64xf32>, %k: tensor<2x100x64xf32>, %v: tensor<2x100x64xf32>) -> (tensor<8x128x64xf32>, tensor<8x128xf32>) {
  %o, %lse = flash.attention %q, %k, %v : tensor<8x128x64xf32>, tensor<2x100x64xf32>, tensor<2x100x64xf32> -> tensor<8x128x64xf32>, tensor<8x128xf32>
  return %o, %lse : tensor<8x128x64xf32>, tensor<8x128xf32>
}

// CHECK-LABEL: func @rank2
// CHECK: flash.attention {{.*}} mask(%{{.*}} : tensor<7x9xi1>) {causal} : tensor<7x16xf32>, tensor<9x16xf32>, tensor<9x16xf32> -> tensor<7x16xf32>
func.func @rank2(%q: tensor<7x16xf32>, %k: tensor<9x16xf32>, %v: tensor<9x16xf32>, %m: tensor<7x9xi1>) -> tensor<7x16xf32> {
  %o = flash.attention %q, %k, %v mask(%m : tensor<7x9xi1>) {causal} : tensor<7x16xf32>, tensor<9x16xf32>, tensor<9x16xf32> -> tensor<7x16xf32>
  return %o : tensor<7x16xf32>
}

// CHECK-LABEL: func @backward
// CHECK: %{{.*}}, %{{.*}}, %{{.*}} = flash.attention_backward %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {causal} : tensor<2x8x128x64xf16>, tensor<2x2x256x64xf16>, tensor<2x2x256x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128xf32>
func.func @backward(%q: tensor<2x8x128x64xf16>, %k: tensor<2x2x256x64xf16>, %v: tensor<2x2x256x64xf16>, %o: tensor<2x8x128x64xf16>, %do: tensor<2x8x128x64xf16>, %lse: tensor<2x8x128xf32>) -> (tensor<2x8x128x64xf16>, tensor<2x2x256x64xf16>, tensor<2x2x256x64xf16>) {
  %dq, %dk, %dv = flash.attention_backward %q, %k, %v, %o, %do, %lse {causal} : tensor<2x8x128x64xf16>, tensor<2x2x256x64xf16>, tensor<2x2x256x64xf16>, tensor<2x8x128x64xf16>, tensor<2x8x128xf32>
  return %dq, %dk, %dv : tensor<2x8x128x64xf16>, tensor<2x2x256x64xf16>, tensor<2x2x256x64xf16>
}

// CHECK-LABEL: func @backward_bias_mask_dynamic
// CHECK: flash.attention_backward {{.*}} bias(%{{.*}} : tensor<?x?xf32>) mask(%{{.*}} : tensor<1x?x?xi1>) {scale = 5.000000e-01 : f32} : tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?xf32>
func.func @backward_bias_mask_dynamic(%q: tensor<?x?x64xf32>, %k: tensor<?x?x64xf32>, %v: tensor<?x?x64xf32>, %o: tensor<?x?x64xf32>, %do: tensor<?x?x64xf32>, %lse: tensor<?x?xf32>, %b: tensor<?x?xf32>, %m: tensor<1x?x?xi1>) -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>) {
  %dq, %dk, %dv = flash.attention_backward %q, %k, %v, %o, %do, %lse bias(%b : tensor<?x?xf32>) mask(%m : tensor<1x?x?xi1>) {scale = 0.5 : f32} : tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?xf32>
  return %dq, %dk, %dv : tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>
}

// CHECK-LABEL: func @sliding_window
// CHECK: flash.attention {{.*}} {causal, window = 128 : i64} : tensor<1x2x512x64xbf16>
func.func @sliding_window(%q: tensor<1x2x512x64xbf16>) -> tensor<1x2x512x64xbf16> {
  %o = flash.attention %q, %q, %q {causal, window = 128 : i64} : tensor<1x2x512x64xbf16>, tensor<1x2x512x64xbf16>, tensor<1x2x512x64xbf16> -> tensor<1x2x512x64xbf16>
  return %o : tensor<1x2x512x64xbf16>
}

// CHECK-LABEL: func @runtime_scale
// CHECK: flash.attention %{{.*}}, %{{.*}}, %{{.*}} runtime_scale(%{{.*}}) {causal} : tensor<1x2x8x16xf16>
func.func @runtime_scale(%q: tensor<1x2x8x16xf16>, %s: f32) -> tensor<1x2x8x16xf16> {
  %o = flash.attention %q, %q, %q runtime_scale(%s) {causal} : tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16> -> tensor<1x2x8x16xf16>
  return %o : tensor<1x2x8x16xf16>
}

// flash.sizes on a declaration and on a memref argument.
// CHECK-LABEL: func private @declared
// CHECK-SAME: {flash.sizes = ["s0", 8]}
func.func private @declared(%q: tensor<?x8xf32> {flash.sizes = ["s0", 8]})
// CHECK-LABEL: func @on_memref
func.func @on_memref(%q: memref<?x8xf32> {flash.sizes = ["s0", 8]}) {
  return
}

// A score modification (ALiBi with a slope per head) round-trips with its
// block arguments named after what they are.
// CHECK-LABEL: func @score_mod
// CHECK: %[[O:.*]] = flash.attention %arg0, %arg0, %arg0 {causal} : tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16> -> tensor<1x2x8x16xf16> score_mod {
// CHECK-NEXT: ^bb0(%[[S:.*]]: f32, %[[B:.*]]: index, %[[H:.*]]: index, %[[I:.*]]: index, %[[J:.*]]: index):
// CHECK-NEXT: %[[SLOPE:.*]] = tensor.extract %arg1[%[[H]]] : tensor<2xf32>
// CHECK: flash.yield %{{.*}} : f32
// CHECK-NEXT: }
// CHECK-NEXT: return %[[O]]
func.func @score_mod(%q: tensor<1x2x8x16xf16>, %slopes: tensor<2xf32>) -> tensor<1x2x8x16xf16> {
  %o = flash.attention %q, %q, %q {causal} : tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16> -> tensor<1x2x8x16xf16> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %slope = tensor.extract %slopes[%h] : tensor<2xf32>
    %d = arith.subi %j, %i : index
    %di = arith.index_cast %d : index to i64
    %df = arith.sitofp %di : i64 to f32
    %t = arith.mulf %slope, %df : f32
    %r = arith.addf %s, %t : f32
    flash.yield %r : f32
  }
  return %o : tensor<1x2x8x16xf16>
}

// The backward takes the forward's region.
// CHECK-LABEL: func @backward_score_mod
// CHECK: %grad_query, %grad_key, %grad_value = flash.attention_backward {{.*}} : tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>, tensor<1x2x8xf32> score_mod {
// CHECK-NEXT: ^bb0(%[[S:.*]]: f32, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index):
// CHECK: math.tanh
// CHECK: flash.yield
func.func @backward_score_mod(%q: tensor<1x2x8x16xf16>, %lse: tensor<1x2x8xf32>) -> tensor<1x2x8x16xf16> {
  %dq, %dk, %dv = flash.attention_backward %q, %q, %q, %q, %q, %lse : tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>, tensor<1x2x8xf32> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %c = arith.constant 0.2 : f32
    %x = arith.mulf %s, %c : f32
    %t = math.tanh %x : f32
    %cap = arith.constant 5.0 : f32
    %r = arith.mulf %t, %cap : f32
    flash.yield %r : f32
  }
  return %dq : tensor<1x2x8x16xf16>
}

// flash.atomic_add: a tensor tile (before bufferization) or a buffer into a
// buffer of the same shape; with fragment_major, into strips of 16 rows in
// mma.sync fragment order.
// CHECK-LABEL: func @atomic_add
// CHECK: flash.atomic_add %{{.*}}, %{{.*}} : tensor<?x64xf32>, memref<?x64xf32, strided<[?, ?], offset: ?>>
// CHECK: flash.atomic_add %{{.*}}, %{{.*}} : memref<16x64xf32>, memref<16x64xf32>
// CHECK: flash.atomic_add %{{.*}}, %{{.*}} {fragment_major = 1 : i64} : memref<?x128xf32>, memref<?x128xf32>
// CHECK: flash.atomic_add %{{.*}}, %{{.*}} {fragment_major = 2 : i64} : tensor<?x64xf32>, memref<?x64xf32, strided<[?, ?], offset: ?>>
func.func @atomic_add(%t: tensor<?x64xf32>, %d: memref<?x64xf32, strided<[?, ?], offset: ?>>, %m: memref<16x64xf32>, %n: memref<16x64xf32>, %r: memref<?x128xf32>, %s: memref<?x128xf32>) {
  flash.atomic_add %t, %d : tensor<?x64xf32>, memref<?x64xf32, strided<[?, ?], offset: ?>>
  flash.atomic_add %m, %n : memref<16x64xf32>, memref<16x64xf32>
  flash.atomic_add %r, %s {fragment_major = 1 : i64} : memref<?x128xf32>, memref<?x128xf32>
  flash.atomic_add %t, %d {fragment_major = 2 : i64} : tensor<?x64xf32>, memref<?x64xf32, strided<[?, ?], offset: ?>>
  return
}

// Attention sinks: one logit per query head; the backward returns their
// gradient (of the type of the sinks) after dQ, dK and dV.
// CHECK-LABEL: func @sinks
// CHECK: flash.attention %{{.*}}, %{{.*}}, %{{.*}} mask(%{{.*}} : tensor<128x256xi1>) sinks(%{{.*}} : tensor<8xbf16>) {causal} : tensor<2x8x128x64xbf16>, tensor<2x2x256x64xbf16>, tensor<2x2x256x64xbf16> -> tensor<2x8x128x64xbf16>, tensor<2x8x128xf32>
// CHECK: %{{.*}}, %{{.*}}, %{{.*}}, %[[DS:.*]] = flash.attention_backward {{.*}} sinks(%{{.*}} : tensor<8xbf16>) {causal} : tensor<2x8x128x64xbf16>, tensor<2x2x256x64xbf16>, tensor<2x2x256x64xbf16>, tensor<2x8x128x64xbf16>, tensor<2x8x128xf32> -> tensor<8xbf16>
func.func @sinks(%q: tensor<2x8x128x64xbf16>, %k: tensor<2x2x256x64xbf16>, %m: tensor<128x256xi1>, %s: tensor<8xbf16>, %do: tensor<2x8x128x64xbf16>) -> (tensor<2x2x256x64xbf16>, tensor<8xbf16>) {
  %o, %lse = flash.attention %q, %k, %k mask(%m : tensor<128x256xi1>) sinks(%s : tensor<8xbf16>) {causal} : tensor<2x8x128x64xbf16>, tensor<2x2x256x64xbf16>, tensor<2x2x256x64xbf16> -> tensor<2x8x128x64xbf16>, tensor<2x8x128xf32>
  %dq, %dk, %dv, %ds = flash.attention_backward %q, %k, %k, %o, %do, %lse mask(%m : tensor<128x256xi1>) sinks(%s : tensor<8xbf16>) {causal} : tensor<2x8x128x64xbf16>, tensor<2x2x256x64xbf16>, tensor<2x2x256x64xbf16>, tensor<2x8x128x64xbf16>, tensor<2x8x128xf32> -> tensor<8xbf16>
  // CHECK: return %{{.*}}, %[[DS]]
  return %dk, %ds : tensor<2x2x256x64xbf16>, tensor<8xbf16>
}

// A ragged KV cache: each sequence's own key count (i32 or i64), with sinks
// and a run-time scale beside it.
// CHECK-LABEL: func @key_lengths
// CHECK: flash.attention %{{.*}}, %{{.*}}, %{{.*}} key_lengths(%{{.*}} : tensor<?xi32>) {causal, window = 64 : i64} : tensor<?x8x1x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16> -> tensor<?x8x1x64xbf16>, tensor<?x8x1xf32>
// CHECK: flash.attention %{{.*}}, %{{.*}}, %{{.*}} sinks(%{{.*}} : tensor<8xf32>) key_lengths(%{{.*}} : tensor<4xi64>) runtime_scale(%{{.*}}) : tensor<4x8x1x64xbf16>
func.func @key_lengths(%q: tensor<?x8x1x64xbf16>, %k: tensor<?x2x?x64xbf16>, %l: tensor<?xi32>, %q4: tensor<4x8x1x64xbf16>, %k4: tensor<4x2x?x64xbf16>, %s: tensor<8xf32>, %l4: tensor<4xi64>, %c: f32) -> (tensor<?x8x1x64xbf16>, tensor<4x8x1x64xbf16>) {
  %o, %lse = flash.attention %q, %k, %k key_lengths(%l : tensor<?xi32>) {causal, window = 64 : i64} : tensor<?x8x1x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16> -> tensor<?x8x1x64xbf16>, tensor<?x8x1xf32>
  %o4 = flash.attention %q4, %k4, %k4 sinks(%s : tensor<8xf32>) key_lengths(%l4 : tensor<4xi64>) runtime_scale(%c) : tensor<4x8x1x64xbf16>, tensor<4x2x?x64xbf16>, tensor<4x2x?x64xbf16> -> tensor<4x8x1x64xbf16>
  return %o, %o4 : tensor<?x8x1x64xbf16>, tensor<4x8x1x64xbf16>
}

// A paged KV cache: K and V are pages [num_pages, Hkv, page_size, D]; a
// block table row per sequence names its pages (N = P x page_size).
// CHECK-LABEL: func @paged
// CHECK: flash.attention %{{.*}}, %{{.*}}, %{{.*}} key_lengths(%{{.*}} : tensor<?xi32>) block_table(%{{.*}} : tensor<?x8xi32>) {causal} : tensor<?x8x1x64xbf16>, tensor<?x2x16x64xbf16>, tensor<?x2x16x64xbf16> -> tensor<?x8x1x64xbf16>
func.func @paged(%q: tensor<?x8x1x64xbf16>, %pages: tensor<?x2x16x64xbf16>, %l: tensor<?xi32>, %t: tensor<?x8xi32>, %m: tensor<1x128xi1>) -> (tensor<?x8x1x64xbf16>, tensor<?x8x1x64xbf16>) {
  %o = flash.attention %q, %pages, %pages key_lengths(%l : tensor<?xi32>) block_table(%t : tensor<?x8xi32>) {causal} : tensor<?x8x1x64xbf16>, tensor<?x2x16x64xbf16>, tensor<?x2x16x64xbf16> -> tensor<?x8x1x64xbf16>
  // The mask broadcasts to N = 8 x 16 keys.
  %o2 = flash.attention %q, %pages, %pages mask(%m : tensor<1x128xi1>) key_lengths(%l : tensor<?xi32>) block_table(%t : tensor<?x8xi32>) : tensor<?x8x1x64xbf16>, tensor<?x2x16x64xbf16>, tensor<?x2x16x64xbf16> -> tensor<?x8x1x64xbf16>
  return %o, %o2 : tensor<?x8x1x64xbf16>, tensor<?x8x1x64xbf16>
}

// CHECK-LABEL: func @varlen
// CHECK: flash.attention %{{.*}}, %{{.*}}, %{{.*}} cu_seqlens_q(%{{.*}} : tensor<?xi32>) cu_seqlens_k(%{{.*}} : tensor<?xi32>) {causal} : tensor<8x?x64xbf16>, tensor<2x?x64xbf16>, tensor<2x?x64xbf16> -> tensor<8x?x64xbf16>, tensor<8x?xf32>
// CHECK: flash.attention %{{.*}}, %{{.*}}, %{{.*}} sinks(%{{.*}} : tensor<8xf32>) key_lengths(%{{.*}} : tensor<3xi64>) cu_seqlens_q(%{{.*}} : tensor<4xi64>) cu_seqlens_k(%{{.*}} : tensor<4xi32>) : tensor<1x8x?x64xbf16>
// CHECK: flash.attention_backward %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} cu_seqlens_q(%{{.*}} : tensor<?xi32>) cu_seqlens_k(%{{.*}} : tensor<?xi32>) {causal} : tensor<8x?x64xbf16>
func.func @varlen(%q: tensor<8x?x64xbf16>, %k: tensor<2x?x64xbf16>, %cq: tensor<?xi32>, %ck: tensor<?xi32>, %q4: tensor<1x8x?x64xbf16>, %k4: tensor<1x2x?x64xbf16>, %s: tensor<8xf32>, %used: tensor<3xi64>, %cq4: tensor<4xi64>, %ck4: tensor<4xi32>) -> (tensor<8x?x64xbf16>, tensor<1x8x?x64xbf16>) {
  %o, %lse = flash.attention %q, %k, %k cu_seqlens_q(%cq : tensor<?xi32>) cu_seqlens_k(%ck : tensor<?xi32>) {causal} : tensor<8x?x64xbf16>, tensor<2x?x64xbf16>, tensor<2x?x64xbf16> -> tensor<8x?x64xbf16>, tensor<8x?xf32>
  %o4 = flash.attention %q4, %k4, %k4 sinks(%s : tensor<8xf32>) key_lengths(%used : tensor<3xi64>) cu_seqlens_q(%cq4 : tensor<4xi64>) cu_seqlens_k(%ck4 : tensor<4xi32>) : tensor<1x8x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16> -> tensor<1x8x?x64xbf16>
  %dq, %dk, %dv = flash.attention_backward %q, %k, %k, %o, %o, %lse cu_seqlens_q(%cq : tensor<?xi32>) cu_seqlens_k(%ck : tensor<?xi32>) {causal} : tensor<8x?x64xbf16>, tensor<2x?x64xbf16>, tensor<2x?x64xbf16>, tensor<8x?x64xbf16>, tensor<8x?xf32>
  return %o, %o4 : tensor<8x?x64xbf16>, tensor<1x8x?x64xbf16>
}
