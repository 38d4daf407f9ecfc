// --flash-gpu-carve-shared-memory on the tiled causal backward with
// mask-free blocks: the dK/dV nest's masked and unmasked query-block loops
// each load their own Q, dO, LSE and D tiles, all allocated before the loop
// over a GQA group's heads (buffer-loop-hoisting). That loop carries
// flash.fresh_tiles (each iteration loads the tiles it reads), so each
// tile lives from its first use inside it: the two loops' tiles share bytes
// and the launch needs what one loop's need (33,280 B, its ldmatrix tiles
// swizzled without padding), not both.
// RUN: flash-opt %s --flash-tile-attention="target=sm_80" --flash-workspace-to-arguments --canonicalize --cse --eliminate-empty-tensors --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=fully-dynamic-layout-map" --canonicalize --buffer-loop-hoisting --cse --flash-gpu-map-to-blocks="threads=128" --flash-gpu-assign-tile-storage="chip=sm_80" --flash-gpu-carve-shared-memory="chip=sm_80" | FileCheck %s

// The dQ kernel.
// CHECK: flash.shared_memory_bytes = 34816
// The dK/dV kernel: K and V, then the masked loop's Q, dO, LSE and D ...
// CHECK: gpu.launch
// CHECK: memref.view %{{.*}}[%c0{{[_0-9]*}}][] {{.*}} to memref<64x64xbf16
// CHECK: memref.view %{{.*}}[%c8192{{[_0-9]*}}][] {{.*}} to memref<64x64xbf16
// CHECK: memref.view %{{.*}}[%c16384{{[_0-9]*}}][] {{.*}} to memref<64x64xbf16
// CHECK: memref.view %{{.*}}[%c24576{{[_0-9]*}}][] {{.*}} to memref<64x64xbf16
// CHECK: memref.view %{{.*}}[%c32768{{[_0-9]*}}][] {{.*}} to memref<64xf32
// CHECK: memref.view %{{.*}}[%c33024{{[_0-9]*}}][] {{.*}} to memref<64xf32
// ... and the unmasked loop's at the same bytes.
// CHECK: memref.view %{{.*}}[%c16384{{[_0-9]*}}][] {{.*}} to memref<64x64xbf16
// CHECK: memref.view %{{.*}}[%c24576{{[_0-9]*}}][] {{.*}} to memref<64x64xbf16
// CHECK: memref.view %{{.*}}[%c32768{{[_0-9]*}}][] {{.*}} to memref<64xf32
// CHECK: memref.view %{{.*}}[%c33024{{[_0-9]*}}][] {{.*}} to memref<64xf32
// CHECK-NOT: memref.view
// CHECK: scf.for
// CHECK: scf.for
// CHECK: scf.for
// CHECK: } {flash.fresh_tiles}
// CHECK: flash.shared_memory_bytes = 33280

func.func @backward(%q: tensor<?x?x?x64xbf16>, %k: tensor<?x?x?x64xbf16>, %v: tensor<?x?x?x64xbf16>, %o: tensor<?x?x?x64xbf16>, %do: tensor<?x?x?x64xbf16>, %lse: tensor<?x?x?xf32>, %dq_out: tensor<?x?x?x64xbf16> {bufferization.writable = true}, %dk_out: tensor<?x?x?x64xbf16> {bufferization.writable = true}, %dv_out: tensor<?x?x?x64xbf16> {bufferization.writable = true}) -> (tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>) {
  %dq, %dk, %dv = flash.attention_backward %q, %k, %v, %o, %do, %lse {causal} : tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>, tensor<?x?x?xf32>
  %0 = bufferization.materialize_in_destination %dq in %dq_out : (tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>) -> tensor<?x?x?x64xbf16>
  %1 = bufferization.materialize_in_destination %dk in %dk_out : (tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>) -> tensor<?x?x?x64xbf16>
  %2 = bufferization.materialize_in_destination %dv in %dv_out : (tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>) -> tensor<?x?x?x64xbf16>
  return %0, %1, %2 : tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>
}
