// --flash-pipeline-key-loops: the forward's key-block loops in two stages,
// one block apart (FlashAttention-3's intra-warpgroup pipelining). The numbers
// against float64: test/Integration/attention-pipeline-key-loops.mlir.
// RUN: flash-opt %s --flash-tile-attention="block-rows=64 block-cols=32" --flash-pipeline-key-loops --cse -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @plain(
// CHECK: scf.forall
// Only when the loop runs at all: the prologue is stage 0 of its first block.
// CHECK: %[[ANY:.*]] = arith.cmpi slt, %[[LB:[^,]*]], %[[UB:[^ ]*]] : index
// CHECK: %[[R:.*]]:3 = scf.if %[[ANY]] -> (tensor<64xf32>, tensor<64xf32>, tensor<64x128xf32>) {
// CHECK: tensor.extract_slice %arg1
// CHECK: linalg.generic {{.*}} attrs = {flash.contraction = "scores"}
// CHECK-NOT: flash.contraction = "output"
// The loop from the second block carries m, l, O, alpha and P (in bf16).
// CHECK: %[[FIRST:.*]] = arith.addi %[[LB]], %c1
// CHECK: %[[L:.*]]:5 = scf.for %[[J:.*]] = %[[FIRST]] to %[[UB]] step %c1 iter_args(%{{[^ ]*}} = %{{[^ ]*}}, %{{[^ ]*}} = %{{[^ ]*}}, %[[ACC:[^ ]*]] = %{{[^ ]*}}, %[[ALPHA:[^ ]*]] = %{{[^ ]*}}, %[[P:[^ ]*]] = %{{[^ ]*}}) -> (tensor<64xf32>, tensor<64xf32>, tensor<64x128xf32>, tensor<64xf32>, tensor<64x32xbf16>) {
// S = Q Kᵀ of block j first ...
// CHECK: arith.muli %[[J]], %c32
// CHECK: tensor.extract_slice %arg1
// CHECK: linalg.generic {{.*}} attrs = {flash.contraction = "scores"}
// ... then stage 1 of block j - 1: V at (j - 1) * 32, O = alpha O + P V ...
// CHECK: %[[PREV:.*]] = arith.subi %[[J]], %c1
// CHECK: arith.muli %[[PREV]], %c32
// CHECK: tensor.extract_slice %arg2
// CHECK: ins(%[[ALPHA]] : tensor<64xf32>) outs(%[[ACC]] : tensor<64x128xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[P]], %{{.*}} : tensor<64x32xbf16>, tensor<32x128xbf16>) {{.*}} attrs = {flash.contraction = "output"}
// ... then the softmax of block j, writing alpha and P into the carried
// values (one buffer each once bufferized).
// CHECK: outs(%[[ALPHA]] : tensor<64xf32>)
// CHECK: outs(%[[P]] : tensor<64x32xbf16>)
// CHECK: scf.yield
// Epilogue: stage 1 of the last block.
// CHECK: %[[LAST:.*]] = arith.subi %[[UB]], %c1
// CHECK: arith.muli %[[LAST]], %c32
// CHECK: tensor.extract_slice %arg2
// CHECK: ins(%[[L]]#3 : tensor<64xf32>) outs(%[[L]]#2 : tensor<64x128xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[L]]#4, %{{.*}} : tensor<64x32xbf16>, tensor<32x128xbf16>) {{.*}} attrs = {flash.contraction = "output"}
// CHECK: scf.yield %[[L]]#0, %[[L]]#1,
// A loop that does not run leaves the state as it was.
// CHECK: } else {
// CHECK-NEXT: scf.yield
// The loop over the ragged last block (masked) takes the state next, the
// same way.
// CHECK: scf.if %{{.*}} -> (tensor<64xf32>, tensor<64xf32>, tensor<64x128xf32>)
// CHECK: scf.for {{.*}} iter_args(%{{[^ ]*}} = %{{[^ ]*}}, %{{[^ ]*}} = %{{[^ ]*}}, %{{[^ ]*}} = %[[R]]#2,
func.func @plain(%q: tensor<?x?x?x128xbf16>, %k: tensor<?x?x?x128xbf16>, %v: tensor<?x?x?x128xbf16>) -> tensor<?x?x?x128xbf16> {
  %r = flash.attention %q, %k, %v : tensor<?x?x?x128xbf16>, tensor<?x?x?x128xbf16>, tensor<?x?x?x128xbf16> -> tensor<?x?x?x128xbf16>
  return %r : tensor<?x?x?x128xbf16>
}

// -----

// Causal: the unmasked and the diagonal loops are both pipelined, the second
// starting from the first's state.
// CHECK-LABEL: func.func @causal(
// CHECK: %[[A:.*]]:3 = scf.if
// CHECK: scf.for
// CHECK: %{{.*}}:3 = scf.if
// CHECK: flash.contraction = "scores"
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %[[A]]#2,
// CHECK: } else {
// CHECK-NEXT: scf.yield %[[A]]#0, %[[A]]#1, %[[A]]#2
func.func @causal(%q: tensor<2x4x100x64xf16>, %k: tensor<2x4x130x64xf16>, %v: tensor<2x4x130x64xf16>) -> tensor<2x4x100x64xf16> {
  %r = flash.attention %q, %k, %v {causal} : tensor<2x4x100x64xf16>, tensor<2x4x130x64xf16>, tensor<2x4x130x64xf16> -> tensor<2x4x100x64xf16>
  return %r : tensor<2x4x100x64xf16>
}

// -----

// The backward's nests have other contractions: left as they are.
// CHECK-LABEL: func.func @backward(
// CHECK-NOT: scf.if
// CHECK: return
func.func @backward(%q: tensor<1x2x64x32xf16>, %k: tensor<1x2x64x32xf16>, %v: tensor<1x2x64x32xf16>, %o: tensor<1x2x64x32xf16>, %do: tensor<1x2x64x32xf16>, %lse: tensor<1x2x64xf32>) -> (tensor<1x2x64x32xf16>, tensor<1x2x64x32xf16>, tensor<1x2x64x32xf16>) {
  %dq, %dk, %dv = flash.attention_backward %q, %k, %v, %o, %do, %lse : tensor<1x2x64x32xf16>, tensor<1x2x64x32xf16>, tensor<1x2x64x32xf16>, tensor<1x2x64x32xf16>, tensor<1x2x64xf32>
  return %dq, %dk, %dv : tensor<1x2x64x32xf16>, tensor<1x2x64x32xf16>, tensor<1x2x64x32xf16>
}
