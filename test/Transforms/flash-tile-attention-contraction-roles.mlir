// The tiler names each contraction it builds (flash.contraction), the
// contract the GPU mapping reads (the rows a block owns are those of the
// accumulating contraction's C) instead of guessing from shapes. The tags
// survive bufferization.
// RUN: flash-opt %s -split-input-file --flash-tile-attention="target=sm_90a" | FileCheck %s
// RUN: flash-opt %s -split-input-file --flash-tile-attention="target=sm_90a" --one-shot-bufferize="bufferize-function-boundaries" | FileCheck %s --check-prefix=BUF

// CHECK-LABEL: func @forward
// S = Q Kᵀ [Br, Bc] and O += P V [Br, Dv] (Br = Bc = 128 here).
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<128x64xf16>, tensor<128x64xf16>) outs(%{{.*}} : tensor<128x128xf32>) attrs = {flash.contraction = "scores"}
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<128x128xf16>, tensor<128x64xf16>) outs(%{{.*}} : tensor<128x64xf32>) attrs = {flash.contraction = "output"}
// The masked loop's products (its last block may reach past the last key)
// are also tagged flash.ragged_keys: their K and V tiles may hold fewer
// valid rows, the rest zero.
// CHECK: scf.yield
// CHECK: scf.for
// CHECK: linalg.generic {{.*}} attrs = {flash.contraction = "scores", flash.ragged_keys}
// CHECK: linalg.generic {{.*}} attrs = {flash.contraction = "output", flash.ragged_keys}
// BUF-LABEL: func @forward
// BUF: linalg.generic {{.*}} outs(%{{.*}} : memref<128x128xf32>) attrs = {flash.contraction = "scores"}
// BUF: linalg.generic {{.*}} outs(%{{.*}} : memref<128x64xf32>) attrs = {flash.contraction = "output"}
// BUF: linalg.generic {{.*}} outs(%{{.*}} : memref<128x128xf32>) attrs = {flash.contraction = "scores", flash.ragged_keys}
// BUF: linalg.generic {{.*}} outs(%{{.*}} : memref<128x64xf32>) attrs = {flash.contraction = "output", flash.ragged_keys}
func.func @forward(%q: tensor<?x?x?x64xf16>, %k: tensor<?x?x?x64xf16>, %v: tensor<?x?x?x64xf16>) -> tensor<?x?x?x64xf16> {
  %o = flash.attention %q, %k, %v : tensor<?x?x?x64xf16>, tensor<?x?x?x64xf16>, tensor<?x?x?x64xf16> -> tensor<?x?x?x64xf16>
  return %o : tensor<?x?x?x64xf16>
}

// -----

// The GPU backward: a dQ nest (S, dP, dQ) and a dK/dV nest (Sᵀ, dV, dPᵀ, dK).
// CHECK-LABEL: func @backward
// CHECK: flash.contraction = "scores"
// CHECK: flash.contraction = "grad_probs"
// CHECK: flash.contraction = "grad_query"
// CHECK: flash.contraction = "scores_transposed"
// CHECK: flash.contraction = "grad_value"
// CHECK: flash.contraction = "grad_probs_transposed"
// CHECK: flash.contraction = "grad_key"
func.func @backward(%q: tensor<?x?x?x64xbf16>, %k: tensor<?x?x?x64xbf16>, %v: tensor<?x?x?x64xbf16>, %o: tensor<?x?x?x64xbf16>, %do: tensor<?x?x?x64xbf16>, %lse: tensor<?x?x?xf32>) -> (tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>) {
  %dq, %dk, %dv = flash.attention_backward %q, %k, %v, %o, %do, %lse : tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>, tensor<?x?x?xf32>
  return %dq, %dk, %dv : tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>
}
