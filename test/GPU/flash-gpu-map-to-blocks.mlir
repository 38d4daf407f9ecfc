// --flash-gpu-map-to-blocks on its own: a bufferized tiled nest (an
// scf.forall over batch, head and query block, as --flash-tile-attention
// and one-shot bufferization leave it; here a reduced one: Q, K and V
// tiles, S = Q Kᵀ, P, O += P V) becomes a gpu.launch of `threads` threads,
// one block per query block, row blocks last to first, every value the
// body needs from outside (the sequence lengths) recomputed inside it.
// RUN: flash-opt %s --flash-gpu-map-to-blocks="threads=256" | FileCheck %s
// With persistent the body is a loop over the tiles, buffers before it.
// RUN: flash-opt %s --flash-gpu-map-to-blocks="persistent=1" | FileCheck %s --check-prefix=PERSISTENT
// Blocks are whole warps, at most 1024 threads.
// RUN: not flash-opt %s --flash-gpu-map-to-blocks="threads=48" 2>&1 | FileCheck %s --check-prefix=THREADS
// THREADS: error: flash-gpu-map-to-blocks: threads must be a multiple of 32 (whole warps) between 32 and 1024 (CUDA's limit per block), not 48

// CHECK-LABEL: func.func @nest(
// CHECK-SAME: %[[Q:[a-z0-9]+]]: memref<{{[^>]*}}>>, %[[K:[a-z0-9]+]]: memref
// CHECK: %[[QB:.*]] = arith.ceildivsi
// CHECK: gpu.launch blocks(%[[BX:.*]], %[[BY:.*]], %[[BZ:.*]]) in (%[[GX:.*]] = %[[QB]], %{{.*}} = %[[H:[^,]*]], %{{.*}} = %[[B:[^)]*]]) threads(%{{.*}}) in (%{{.*}} = %c256, %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}})
// CHECK-NOT: gpu.launch
// CHECK-DAG: memref.dim %[[Q]], %{{.*}}
// CHECK-DAG: memref.dim %[[K]], %{{.*}}
// CHECK: %[[LAST:.*]] = arith.subi %[[GX]], %{{.*}}
// CHECK: %[[ROWBLOCK:.*]] = arith.subi %[[LAST]], %[[BX]]
// CHECK: %[[ROW0:.*]] = arith.muli %[[ROWBLOCK]], %{{.*}}
// CHECK: memref.subview %[[Q]][%[[BZ]], %[[BY]], %[[ROW0]], 0]
// CHECK: memref.alloc() : memref<64x64xbf16>
// CHECK: scf.for
// CHECK: flash.contraction = "scores"
// CHECK: flash.contraction = "output"
// CHECK: gpu.terminator
// CHECK-NOT: scf.forall

// PERSISTENT-LABEL: func.func @nest(
// PERSISTENT: gpu.launch
// PERSISTENT-COUNT-7: memref.alloc() {flash.tile_buffer}
// PERSISTENT: scf.for %[[T:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// PERSISTENT-NEXT: gpu.barrier
// The tile walk in 32 bits.
// PERSISTENT: %[[T32:.*]] = arith.index_castui %[[T]] : index to i32
// PERSISTENT: arith.remui %[[T32]], %{{.*}} : i32
// PERSISTENT: } {flash.tile_loop}
// PERSISTENT: gpu.terminator
// PERSISTENT-NEXT: } {flash.persistent}

#qk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kt = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
#v = affine_map<(d0, d1, d2) -> (d2, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @nest(%q: memref<?x?x?x64xbf16, strided<[?, ?, ?, ?], offset: ?>>,
                %k: memref<?x?x?x64xbf16, strided<[?, ?, ?, ?], offset: ?>>,
                %v: memref<?x?x?x64xbf16, strided<[?, ?, ?, ?], offset: ?>>,
                %o: memref<?x?x?x64xbf16, strided<[?, ?, ?, ?], offset: ?>>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : bf16
  %fzero = arith.constant 0.0 : f32
  %b = memref.dim %q, %c0 : memref<?x?x?x64xbf16, strided<[?, ?, ?, ?], offset: ?>>
  %h = memref.dim %q, %c1 : memref<?x?x?x64xbf16, strided<[?, ?, ?, ?], offset: ?>>
  %m = memref.dim %q, %c2 : memref<?x?x?x64xbf16, strided<[?, ?, ?, ?], offset: ?>>
  %n = memref.dim %k, %c2 : memref<?x?x?x64xbf16, strided<[?, ?, ?, ?], offset: ?>>
  %blocks = arith.ceildivsi %m, %c64 : index
  %steps = arith.ceildivsi %n, %c64 : index
  scf.forall (%ib, %ih, %iq) in (%b, %h, %blocks) {
    %row0 = arith.muli %iq, %c64 : index
    %left = arith.subi %m, %row0 : index
    %rows = arith.minsi %left, %c64 : index
    %qsrc = memref.subview %q[%ib, %ih, %row0, 0] [1, 1, %rows, 64] [1, 1, 1, 1] : memref<?x?x?x64xbf16, strided<[?, ?, ?, ?], offset: ?>> to memref<?x64xbf16, strided<[?, ?], offset: ?>>
    %qt = memref.alloc() : memref<64x64xbf16>
    linalg.map outs(%qt : memref<64x64xbf16>) (%init: bf16) { linalg.yield %zero : bf16 }
    %qdst = memref.subview %qt[0, 0] [%rows, 64] [1, 1] : memref<64x64xbf16> to memref<?x64xbf16, strided<[64, 1]>>
    memref.copy %qsrc, %qdst : memref<?x64xbf16, strided<[?, ?], offset: ?>> to memref<?x64xbf16, strided<[64, 1]>>
    %acc = memref.alloc() : memref<64x64xf32>
    linalg.fill ins(%fzero : f32) outs(%acc : memref<64x64xf32>)
    %kt = memref.alloc() : memref<64x64xbf16>
    %vt = memref.alloc() : memref<64x64xbf16>
    %s = memref.alloc() : memref<64x64xf32>
    %p = memref.alloc() : memref<64x64xbf16>
    scf.for %j = %c0 to %steps step %c1 {
      %key0 = arith.muli %j, %c64 : index
      %kleft = arith.subi %n, %key0 : index
      %keys = arith.minsi %kleft, %c64 : index
      %ksrc = memref.subview %k[%ib, %ih, %key0, 0] [1, 1, %keys, 64] [1, 1, 1, 1] : memref<?x?x?x64xbf16, strided<[?, ?, ?, ?], offset: ?>> to memref<?x64xbf16, strided<[?, ?], offset: ?>>
      linalg.map outs(%kt : memref<64x64xbf16>) (%init: bf16) { linalg.yield %zero : bf16 }
      %kdst = memref.subview %kt[0, 0] [%keys, 64] [1, 1] : memref<64x64xbf16> to memref<?x64xbf16, strided<[64, 1]>>
      memref.copy %ksrc, %kdst : memref<?x64xbf16, strided<[?, ?], offset: ?>> to memref<?x64xbf16, strided<[64, 1]>>
      %vsrc = memref.subview %v[%ib, %ih, %key0, 0] [1, 1, %keys, 64] [1, 1, 1, 1] : memref<?x?x?x64xbf16, strided<[?, ?, ?, ?], offset: ?>> to memref<?x64xbf16, strided<[?, ?], offset: ?>>
      linalg.map outs(%vt : memref<64x64xbf16>) (%init: bf16) { linalg.yield %zero : bf16 }
      %vdst = memref.subview %vt[0, 0] [%keys, 64] [1, 1] : memref<64x64xbf16> to memref<?x64xbf16, strided<[64, 1]>>
      memref.copy %vsrc, %vdst : memref<?x64xbf16, strided<[?, ?], offset: ?>> to memref<?x64xbf16, strided<[64, 1]>>
      linalg.fill ins(%fzero : f32) outs(%s : memref<64x64xf32>)
      linalg.generic {indexing_maps = [#qk, #kt, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%qt, %kt : memref<64x64xbf16>, memref<64x64xbf16>) outs(%s : memref<64x64xf32>) attrs = {flash.contraction = "scores"} {
      ^bb0(%a: bf16, %bb: bf16, %acc_in: f32):
        %x = arith.extf %a : bf16 to f32
        %y = arith.extf %bb : bf16 to f32
        %xy = arith.mulf %x, %y : f32
        %sum = arith.addf %acc_in, %xy : f32
        linalg.yield %sum : f32
      }
      linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%s : memref<64x64xf32>) outs(%p : memref<64x64xbf16>) {
      ^bb0(%x: f32, %out: bf16):
        %e = math.exp2 %x : f32
        %t = arith.truncf %e : f32 to bf16
        linalg.yield %t : bf16
      }
      linalg.generic {indexing_maps = [#qk, #v, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%p, %vt : memref<64x64xbf16>, memref<64x64xbf16>) outs(%acc : memref<64x64xf32>) attrs = {flash.contraction = "output"} {
      ^bb0(%a: bf16, %bb: bf16, %acc_in: f32):
        %x = arith.extf %a : bf16 to f32
        %y = arith.extf %bb : bf16 to f32
        %xy = arith.mulf %x, %y : f32
        %sum = arith.addf %acc_in, %xy : f32
        linalg.yield %sum : f32
      }
    }
    %ot = memref.alloc() : memref<64x64xbf16>
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%acc : memref<64x64xf32>) outs(%ot : memref<64x64xbf16>) {
    ^bb0(%x: f32, %out: bf16):
      %t = arith.truncf %x : f32 to bf16
      linalg.yield %t : bf16
    }
    %osrc = memref.subview %ot[0, 0] [%rows, 64] [1, 1] : memref<64x64xbf16> to memref<?x64xbf16, strided<[64, 1]>>
    %odst = memref.subview %o[%ib, %ih, %row0, 0] [1, 1, %rows, 64] [1, 1, 1, 1] : memref<?x?x?x64xbf16, strided<[?, ?, ?, ?], offset: ?>> to memref<?x64xbf16, strided<[?, ?], offset: ?>>
    memref.copy %osrc, %odst : memref<?x64xbf16, strided<[64, 1]>> to memref<?x64xbf16, strided<[?, ?], offset: ?>>
  }
  return
}


// A nest that says how many threads it takes (flash.block_threads, the
// split-KV merge's: one per element) gets them, whatever `threads` says.
// CHECK-LABEL: func.func @own_threads(
// CHECK: gpu.launch {{.*}} threads(%{{.*}}) in (%{{.*}} = %c64{{.*}}, %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}})
func.func @own_threads(%n: index, %buf: memref<?x64xf32>) {
  %c0 = arith.constant 0.0 : f32
  %c1 = arith.constant 1 : index
  scf.forall (%a) in (%n) {
    linalg.fill ins(%c0 : f32) outs(%buf : memref<?x64xf32>)
  } {flash.block_threads = 64 : i64}
  return
}

// A nest whose first blocks are the heaviest (flash.heaviest_first, the
// dK/dV nest's key blocks) is launched in order: block x is iteration x.
// CHECK-LABEL: func.func @heaviest_first(
// CHECK: gpu.launch blocks(%[[HX:[^,]*]], %{{[^,]*}}, %{{[^)]*}}) in
// CHECK-NOT: arith.subi
// CHECK: arith.muli %[[HX]], %c64{{.*}} : index
// CHECK: gpu.terminator
func.func @heaviest_first(%n: index, %buf: memref<?x64xf32>) {
  %c0 = arith.constant 0.0 : f32
  %c64 = arith.constant 64 : index
  scf.forall (%a) in (%n) {
    %row = arith.muli %a, %c64 : index
    %tile = memref.subview %buf[%row, 0] [64, 64] [1, 1] : memref<?x64xf32> to memref<64x64xf32, strided<[64, 1], offset: ?>>
    linalg.fill ins(%c0 : f32) outs(%tile : memref<64x64xf32, strided<[64, 1], offset: ?>>)
  } {flash.heaviest_first}
  return
}
