// Upstream mlir-opt (Debian's mlir-opt-22) runs the flash passes through the
// plugin and prints what flash-opt prints.
// RUN: mlir-opt %s --load-pass-plugin=%flash_plugin \
// RUN:   --pass-pipeline="builtin.module(flash-fuse-attention)" > %t.upstream
// RUN: flash-opt %s --flash-fuse-attention > %t.flash
// RUN: diff %t.upstream %t.flash
// RUN: FileCheck %s < %t.upstream

// Fusion, then tiling, in one upstream pipeline.
// RUN: mlir-opt %s --load-pass-plugin=%flash_plugin \
// RUN:   --pass-pipeline="builtin.module(flash-fuse-attention, flash-tile-attention{block-rows=16 block-cols=16})" \
// RUN:   > %t.tiled.upstream
// RUN: flash-opt %s --flash-fuse-attention \
// RUN:   --flash-tile-attention="block-rows=16 block-cols=16" > %t.tiled.flash
// RUN: diff %t.tiled.upstream %t.tiled.flash
// RUN: FileCheck %s --check-prefix=TILED < %t.tiled.upstream

// IREE input style: rank-2 single head, linalg.matmul with a transposing
// indexing map for K, linalg.softmax.
// CHECK-LABEL: func @iree_rank2
// CHECK-NOT: linalg.
// CHECK: flash.attention
// CHECK-NOT: linalg.
// CHECK: return

// TILED-LABEL: func @iree_rank2
// TILED-NOT: flash.attention
// TILED: scf.forall
// TILED: scf.for
// TILED: math.exp2

func.func @iree_rank2(%q: tensor<16x8xf32>, %k: tensor<20x8xf32>, %v: tensor<20x12xf32>) -> tensor<16x12xf32> {
  %zero = arith.constant 0.0 : f32
  %s0 = tensor.empty() : tensor<16x20xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<16x20xf32>) -> tensor<16x20xf32>
  %s = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>]
      ins(%q, %k : tensor<16x8xf32>, tensor<20x8xf32>) outs(%sz : tensor<16x20xf32>) -> tensor<16x20xf32>
  %sc = arith.constant dense<0.125> : tensor<16x20xf32>
  %x = linalg.map { arith.mulf } ins(%s, %sc : tensor<16x20xf32>, tensor<16x20xf32>) outs(%s0 : tensor<16x20xf32>)
  %p = linalg.softmax dimension(1) ins(%x : tensor<16x20xf32>) outs(%s0 : tensor<16x20xf32>) -> tensor<16x20xf32>
  %o0 = tensor.empty() : tensor<16x12xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<16x12xf32>) -> tensor<16x12xf32>
  %o = linalg.matmul ins(%p, %v : tensor<16x20xf32>, tensor<20x12xf32>) outs(%oz : tensor<16x12xf32>) -> tensor<16x12xf32>
  return %o : tensor<16x12xf32>
}

