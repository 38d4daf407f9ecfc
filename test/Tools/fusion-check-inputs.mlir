// fusion_check takes any valid MLIR file: type aliases in signatures,
// several public functions in one chunk (each an entry) with private callees,
// argument and function attributes, result lists in parentheses, and a
// function it cannot feed (a memref) skipped with a reason.
// RUN: %python -m flash_mlir.fusion_check %s --expect fused | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check %s --block-rows 8 --block-cols 4 --dynamic-size 13 | FileCheck %s --check-prefix=CPU

// CHECK: PASS @aliased (fused): r0:
// CHECK: PASS @two_results (fused): r0: {{.*}}; r1:
// CHECK: SKIP @on_memrefs: unsupported type memref<4xf32>
// CHECK: PASS @second_chunk (fused): r0:
// CHECK: PASS @flash_causal (fused): r0: {{.*}}; r1:
// CHECK: fusion_check: 0 failure(s)

// cpu_check on a file: every entry tiled (--flash-cpu-pipeline) against the
// naive decomposition (tile=false).
// CPU: PASS @aliased:
// CPU: PASS @two_results:
// CPU: SKIP @on_memrefs
// CPU: PASS @second_chunk:
// CPU: PASS @flash_causal: r0: {{.*}}; r1:
// CPU: cpu_check: 0 failure(s)

!q = tensor<16x8xf32>
!kv = tensor<20x8xf32>
!s = tensor<16x20xf32>
#qmap = affine_map<(d0, d1, d2) -> (d0, d2)>
#kmap = affine_map<(d0, d1, d2) -> (d1, d2)>
#smap = affine_map<(d0, d1, d2) -> (d0, d1)>

func.func private @attend(%q: !q, %k: !kv, %v: !kv) -> !q {
  %zero = arith.constant 0.0 : f32
  %s0 = tensor.empty() : !s
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : !s) -> !s
  %s = linalg.matmul indexing_maps = [#qmap, #kmap, #smap]
      ins(%q, %k : !q, !kv) outs(%sz : !s) -> !s
  %p = linalg.softmax dimension(1) ins(%s : !s) outs(%s0 : !s) -> !s
  %o0 = tensor.empty() : !q
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : !q) -> !q
  %o = linalg.matmul ins(%p, %v : !s, !kv) outs(%oz : !q) -> !q
  return %o : !q
}

func.func @aliased(%q: !q {my.role = "query"}, %k: !kv, %v: !kv) -> !q
    attributes {my.tag = "entry (not a callee)"} {
  %o = call @attend(%q, %k, %v) : (!q, !kv, !kv) -> !q
  return %o : !q
}

func.func @two_results(%q: !q, %k: !kv, %v: !kv) -> (!q {my.out}, tensor<16x8xf32>) {
  %o = call @attend(%q, %k, %v) : (!q, !kv, !kv) -> !q
  %e = tensor.empty() : !q
  %twice = linalg.add ins(%o, %o : !q, !q) outs(%e : !q) -> !q
  return %o, %twice : !q, tensor<16x8xf32>
}

func.func @on_memrefs(%m: memref<4xf32>) {
  return
}

// -----

!t = tensor<16x8xf32>
func.func @second_chunk(%q: !t, %k: tensor<20x8xf32>, %v: tensor<20x8xf32>) -> !t {
  %zero = arith.constant 0.0 : f32
  %s0 = tensor.empty() : tensor<16x20xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<16x20xf32>) -> tensor<16x20xf32>
  %s = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>]
      ins(%q, %k : !t, tensor<20x8xf32>) outs(%sz : tensor<16x20xf32>) -> tensor<16x20xf32>
  %p = linalg.softmax dimension(1) ins(%s : tensor<16x20xf32>) outs(%s0 : tensor<16x20xf32>) -> tensor<16x20xf32>
  %o0 = tensor.empty() : !t
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : !t) -> !t
  %o = linalg.matmul ins(%p, %v : tensor<16x20xf32>, tensor<20x8xf32>) outs(%oz : !t) -> !t
  return %o : !t
}

// -----

// Already fused, dynamic sequence lengths: cpu_check's tiled run differs
// from the naive one here.
!qd = tensor<1x2x?x16xf32>
!kvd = tensor<1x2x?x16xf32>
func.func @flash_causal(%q: !qd, %k: !kvd, %v: !kvd) -> (!qd, tensor<1x2x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v {causal, scale = 0.25 : f32} : !qd, !kvd, !kvd -> !qd, tensor<1x2x?xf32>
  return %o, %lse : !qd, tensor<1x2x?xf32>
}
