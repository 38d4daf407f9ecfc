// --flash-map-tiles-to-gpu{persistent}: the launch body is one loop over
// the tiles (row block fastest, reversed), tile t = the CTA's linear index +
// k * the grid's CTAs, so that any grid is correct and the launch is tagged
// flash.persistent; the tiles' buffers are allocated once before it. With
// warp-specialize the producer walks the tiles too and its key loops' ring
// positions run on across them.
// RUN: flash-opt %s --flash-tile-attention="block-rows=128 block-cols=128" --canonicalize --cse --eliminate-empty-tensors --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=fully-dynamic-layout-map" --canonicalize --buffer-loop-hoisting --cse --flash-map-tiles-to-gpu="threads=256 tensor-cores=wgmma load-stages=2 tma-loads=1 warp-specialize=1 persistent=1" --flash-gpu-split-warp-roles="ping-pong=1" | FileCheck %s --check-prefix=PERSISTENT

// PERSISTENT-LABEL: func.func @causal(
// PERSISTENT: gpu.launch
// The producer's walk over this CTA's tiles, counting ring positions.
// PERSISTENT: scf.for %{{[^ ]*}} = %{{[^ ]*}} to %{{[^ ]*}} step %{{[^ ]*}} iter_args(%{{[^ ]*}} = %c0{{[_0-9]*}}) -> (index) {
// PERSISTENT: scf.for
// PERSISTENT: nvgpu.tma.async.load
// PERSISTENT: } {flash.warp_role = "producer"}
// PERSISTENT: scf.for %[[T:[^ ]*]] = %{{[^ ]*}} to %{{[^ ]*}} step %{{[^ ]*}} iter_args(%{{[^ ]*}} = %c0{{[_0-9]*}}) -> (index) {
// Every consumer is done with the previous tile's Q before it is loaded again.
// PERSISTENT-NOT: flashgpu.warpgroup_mma
// PERSISTENT: nvvm.barrier id = %c1_i32{{.*}} number_of_threads = %c256_i32
// PERSISTENT: arith.remui %[[T]]
// PERSISTENT: nvgpu.device_async_copy
// PERSISTENT: } {flash.tile_loop}
// PERSISTENT: } {flash.warp_role = "consumer"}
// PERSISTENT: } {flash.persistent,

func.func @causal(%q: tensor<?x?x?x128xf16>, %k: tensor<?x?x?x128xf16>, %v: tensor<?x?x?x128xf16>, %o: tensor<?x?x?x128xf16> {bufferization.writable = true}) -> tensor<?x?x?x128xf16> {
  %r = flash.attention %q, %k, %v {causal} : tensor<?x?x?x128xf16>, tensor<?x?x?x128xf16>, tensor<?x?x?x128xf16> -> tensor<?x?x?x128xf16>
  %w = bufferization.materialize_in_destination %r in %o : (tensor<?x?x?x128xf16>, tensor<?x?x?x128xf16>) -> tensor<?x?x?x128xf16>
  return %w : tensor<?x?x?x128xf16>
}
