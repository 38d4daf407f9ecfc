// --flash-gpu-assign-tile-storage on its own, from a launch as
// --flash-gpu-map-to-blocks leaves it (a reduced forward: Q, K and V tiles
// loaded with a zero fill and a copy of the valid rows, S = Q Kᵀ, P, the
// accumulator O += P V tagged "output", the output tile). The tiles indexed
// by the accumulator's rows whose every op the warp rewrite knows go to
// registers; the loaded tiles and B operands stay in shared memory, with
// warpgroup MMA (sm_90a, cp.async or TMA writing them) swizzled, and so
// on mma.sync too where ldmatrix reads them (swizzle-ldmatrix, no padding).
// RUN: flash-opt %s --split-input-file --flash-gpu-assign-tile-storage | FileCheck %s --check-prefixes=CHECK,LDSM
// RUN: flash-opt %s --split-input-file --flash-gpu-assign-tile-storage="chip=sm_90a" | FileCheck %s --check-prefix=WGMMA
// Without async copies nothing could write the swizzled layout: mma.sync,
// padded rows; so too with swizzle-ldmatrix=0.
// RUN: flash-opt %s --split-input-file --flash-gpu-assign-tile-storage="chip=sm_90a async-copies=0" | FileCheck %s --check-prefixes=CHECK,PADDED
// RUN: flash-opt %s --split-input-file --flash-gpu-assign-tile-storage="swizzle-ldmatrix=0" | FileCheck %s --check-prefixes=CHECK,PADDED
// WMMA's fragment loads read row-major tiles only: padded rows there too.
// RUN: flash-opt %s --split-input-file --flash-gpu-assign-tile-storage="tensor-cores=wmma" | FileCheck %s --check-prefix=PADDED
// Without register tiles every tile is a shared one (dS K's C still lives in
// the accumulators of its mma.sync); without tensor cores even that one.
// RUN: flash-opt %s --split-input-file --flash-gpu-assign-tile-storage="register-tiles=0" | FileCheck %s --check-prefix=SHARED
// RUN: flash-opt %s --split-input-file --flash-gpu-assign-tile-storage="tensor-cores=none" | FileCheck %s --check-prefix=NONE
// With staged-reductions on sm_90a, dS K's C is a "reduction_stage" only
// where the MMA lowering can add it by TMA tensor reductions (its rows end
// with the tensor's, @grad_query_block_clipped), else still accumulators.
// RUN: flash-opt %s --split-input-file --flash-gpu-assign-tile-storage="chip=sm_90a staged-reductions=1" | FileCheck %s --check-prefix=STAGE

// PADDED-LABEL: func.func @forward(
// PADDED: %[[Q:.*]] = memref.alloc() : memref<64x64xbf16>
// PADDED: %[[ACC:.*]] = memref.alloc() {flash.tile_storage = "registers"} : memref<64x64xf32>
// PADDED: %[[K:.*]] = memref.alloc() : memref<64x64xbf16>
// PADDED: %[[V:.*]] = memref.alloc() : memref<64x64xbf16>
// PADDED: %[[S:.*]] = memref.alloc() {flash.tile_storage = "registers"} : memref<64x64xf32>
// PADDED: %[[P:.*]] = memref.alloc() {flash.tile_storage = "registers"} : memref<64x64xbf16>
// PADDED: %[[O:.*]] = memref.alloc() {flash.tile_storage = "registers"} : memref<64x64xbf16>
// PADDED: } {flash.register_rows = 64 : i64}

// Q, K and V: loaded whole rows by cp.async, read only by the MMAs' ldmatrix.
// LDSM-LABEL: func.func @forward(
// LDSM: memref.alloc() {flash.tile_storage = "swizzled"} : memref<64x64xbf16>
// LDSM: memref.alloc() {flash.tile_storage = "registers"} : memref<64x64xf32>
// LDSM-COUNT-2: memref.alloc() {flash.tile_storage = "swizzled"} : memref<64x64xbf16>
// LDSM-NOT: flash.wgmma
// LDSM: } {flash.register_rows = 64 : i64}

// WGMMA-LABEL: func.func @forward(
// WGMMA: memref.alloc() {flash.tile_storage = "swizzled"} : memref<64x64xbf16>
// WGMMA: memref.alloc() {flash.tile_storage = "registers"} : memref<64x64xf32>
// WGMMA-COUNT-2: memref.alloc() {flash.tile_storage = "swizzled"} : memref<64x64xbf16>
// WGMMA: } {flash.register_rows = 64 : i64, flash.wgmma}

// SHARED-LABEL: func.func @forward(
// SHARED-NOT: flash.tile_storage
// SHARED-NOT: flash.register_rows
// SHARED-LABEL: func.func @grad_query_block(
// NONE-NOT: flash.tile_storage

#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#bt = affine_map<(d0, d1, d2) -> (d1, d2)>
#b = affine_map<(d0, d1, d2) -> (d2, d1)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @forward(%q: memref<?x64xbf16>, %k: memref<?x64xbf16>,
                   %v: memref<?x64xbf16>, %o: memref<?x64xbf16>,
                   %m: index, %n: index, %blocks: index,
                   %steps: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %zero = arith.constant 0.0 : bf16
  %fzero = arith.constant 0.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %blocks, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %row0 = arith.muli %bx, %c64 : index
    %left = arith.subi %m, %row0 : index
    %rows = arith.minsi %left, %c64 : index
    %q_rows = memref.subview %q[%row0, 0] [%rows, 64] [1, 1] : memref<?x64xbf16> to memref<?x64xbf16, strided<[64, 1], offset: ?>>
    %q_tile = memref.alloc() : memref<64x64xbf16>
    linalg.map outs(%q_tile : memref<64x64xbf16>) (%init: bf16) { linalg.yield %zero : bf16 }
    %q_valid = memref.subview %q_tile[0, 0] [%rows, 64] [1, 1] : memref<64x64xbf16> to memref<?x64xbf16, strided<[64, 1]>>
    memref.copy %q_rows, %q_valid : memref<?x64xbf16, strided<[64, 1], offset: ?>> to memref<?x64xbf16, strided<[64, 1]>>
    %acc = memref.alloc() : memref<64x64xf32>
    linalg.fill ins(%fzero : f32) outs(%acc : memref<64x64xf32>)
    %k_tile = memref.alloc() : memref<64x64xbf16>
    %v_tile = memref.alloc() : memref<64x64xbf16>
    %s = memref.alloc() : memref<64x64xf32>
    %p = memref.alloc() : memref<64x64xbf16>
    scf.for %j = %c0 to %steps step %c1 {
      %key0 = arith.muli %j, %c64 : index
      %kleft = arith.subi %n, %key0 : index
      %keys = arith.minsi %kleft, %c64 : index
      %k_rows = memref.subview %k[%key0, 0] [%keys, 64] [1, 1] : memref<?x64xbf16> to memref<?x64xbf16, strided<[64, 1], offset: ?>>
      linalg.map outs(%k_tile : memref<64x64xbf16>) (%init: bf16) { linalg.yield %zero : bf16 }
      %k_valid = memref.subview %k_tile[0, 0] [%keys, 64] [1, 1] : memref<64x64xbf16> to memref<?x64xbf16, strided<[64, 1]>>
      memref.copy %k_rows, %k_valid : memref<?x64xbf16, strided<[64, 1], offset: ?>> to memref<?x64xbf16, strided<[64, 1]>>
      %v_rows = memref.subview %v[%key0, 0] [%keys, 64] [1, 1] : memref<?x64xbf16> to memref<?x64xbf16, strided<[64, 1], offset: ?>>
      linalg.map outs(%v_tile : memref<64x64xbf16>) (%init: bf16) { linalg.yield %zero : bf16 }
      %v_valid = memref.subview %v_tile[0, 0] [%keys, 64] [1, 1] : memref<64x64xbf16> to memref<?x64xbf16, strided<[64, 1]>>
      memref.copy %v_rows, %v_valid : memref<?x64xbf16, strided<[64, 1], offset: ?>> to memref<?x64xbf16, strided<[64, 1]>>
      linalg.fill ins(%fzero : f32) outs(%s : memref<64x64xf32>)
      linalg.generic {indexing_maps = [#a, #bt, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%q_tile, %k_tile : memref<64x64xbf16>, memref<64x64xbf16>) outs(%s : memref<64x64xf32>) attrs = {flash.contraction = "scores"} {
      ^bb0(%x: bf16, %y: bf16, %out: f32):
        %xf = arith.extf %x : bf16 to f32
        %yf = arith.extf %y : bf16 to f32
        %xy = arith.mulf %xf, %yf : f32
        %sum = arith.addf %out, %xy : f32
        linalg.yield %sum : f32
      }
      linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%s : memref<64x64xf32>) outs(%p : memref<64x64xbf16>) {
      ^bb0(%x: f32, %out: bf16):
        %e = math.exp2 %x : f32
        %t = arith.truncf %e : f32 to bf16
        linalg.yield %t : bf16
      }
      linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%p, %v_tile : memref<64x64xbf16>, memref<64x64xbf16>) outs(%acc : memref<64x64xf32>) attrs = {flash.contraction = "output"} {
      ^bb0(%x: bf16, %y: bf16, %out: f32):
        %xf = arith.extf %x : bf16 to f32
        %yf = arith.extf %y : bf16 to f32
        %xy = arith.mulf %xf, %yf : f32
        %sum = arith.addf %out, %xy : f32
        linalg.yield %sum : f32
      }
    }
    %o_tile = memref.alloc() : memref<64x64xbf16>
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%acc : memref<64x64xf32>) outs(%o_tile : memref<64x64xbf16>) {
    ^bb0(%x: f32, %out: bf16):
      %t = arith.truncf %x : f32 to bf16
      linalg.yield %t : bf16
    }
    %o_valid = memref.subview %o_tile[0, 0] [%rows, 64] [1, 1] : memref<64x64xbf16> to memref<?x64xbf16, strided<[64, 1]>>
    %o_rows = memref.subview %o[%row0, 0] [%rows, 64] [1, 1] : memref<?x64xbf16> to memref<?x64xbf16, strided<[64, 1], offset: ?>>
    memref.copy %o_valid, %o_rows : memref<?x64xbf16, strided<[64, 1]>> to memref<?x64xbf16, strided<[64, 1], offset: ?>>
    gpu.terminator
  }
  return
}

// -----

// 32 columns are no 64-column panel of the 128-byte swizzle: on mma.sync
// the loaded tiles keep their padded rows (they are still wgmma's, whose
// tiles would need the panels: this forward stays on mma.sync there).
// CHECK-LABEL: func.func @forward_d32(
// CHECK: memref.alloc() : memref<64x32xbf16>
// CHECK: memref.alloc() {flash.tile_storage = "registers"} : memref<64x32xf32>
// CHECK-COUNT-2: memref.alloc() : memref<64x32xbf16>
// CHECK: } {flash.register_rows = 64 : i64}
// WGMMA-LABEL: func.func @forward_d32(
// WGMMA-NOT: swizzled
// WGMMA: } {flash.register_rows = 64 : i64}

#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#bt = affine_map<(d0, d1, d2) -> (d1, d2)>
#b = affine_map<(d0, d1, d2) -> (d2, d1)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @forward_d32(%q: memref<?x32xbf16>, %k: memref<?x32xbf16>,
                   %v: memref<?x32xbf16>, %o: memref<?x32xbf16>,
                   %m: index, %n: index, %blocks: index,
                   %steps: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %zero = arith.constant 0.0 : bf16
  %fzero = arith.constant 0.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %blocks, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %row0 = arith.muli %bx, %c64 : index
    %left = arith.subi %m, %row0 : index
    %rows = arith.minsi %left, %c64 : index
    %q_rows = memref.subview %q[%row0, 0] [%rows, 32] [1, 1] : memref<?x32xbf16> to memref<?x32xbf16, strided<[32, 1], offset: ?>>
    %q_tile = memref.alloc() : memref<64x32xbf16>
    linalg.map outs(%q_tile : memref<64x32xbf16>) (%init: bf16) { linalg.yield %zero : bf16 }
    %q_valid = memref.subview %q_tile[0, 0] [%rows, 32] [1, 1] : memref<64x32xbf16> to memref<?x32xbf16, strided<[32, 1]>>
    memref.copy %q_rows, %q_valid : memref<?x32xbf16, strided<[32, 1], offset: ?>> to memref<?x32xbf16, strided<[32, 1]>>
    %acc = memref.alloc() : memref<64x32xf32>
    linalg.fill ins(%fzero : f32) outs(%acc : memref<64x32xf32>)
    %k_tile = memref.alloc() : memref<64x32xbf16>
    %v_tile = memref.alloc() : memref<64x32xbf16>
    %s = memref.alloc() : memref<64x64xf32>
    %p = memref.alloc() : memref<64x64xbf16>
    scf.for %j = %c0 to %steps step %c1 {
      %key0 = arith.muli %j, %c64 : index
      %kleft = arith.subi %n, %key0 : index
      %keys = arith.minsi %kleft, %c64 : index
      %k_rows = memref.subview %k[%key0, 0] [%keys, 32] [1, 1] : memref<?x32xbf16> to memref<?x32xbf16, strided<[32, 1], offset: ?>>
      linalg.map outs(%k_tile : memref<64x32xbf16>) (%init: bf16) { linalg.yield %zero : bf16 }
      %k_valid = memref.subview %k_tile[0, 0] [%keys, 32] [1, 1] : memref<64x32xbf16> to memref<?x32xbf16, strided<[32, 1]>>
      memref.copy %k_rows, %k_valid : memref<?x32xbf16, strided<[32, 1], offset: ?>> to memref<?x32xbf16, strided<[32, 1]>>
      %v_rows = memref.subview %v[%key0, 0] [%keys, 32] [1, 1] : memref<?x32xbf16> to memref<?x32xbf16, strided<[32, 1], offset: ?>>
      linalg.map outs(%v_tile : memref<64x32xbf16>) (%init: bf16) { linalg.yield %zero : bf16 }
      %v_valid = memref.subview %v_tile[0, 0] [%keys, 32] [1, 1] : memref<64x32xbf16> to memref<?x32xbf16, strided<[32, 1]>>
      memref.copy %v_rows, %v_valid : memref<?x32xbf16, strided<[32, 1], offset: ?>> to memref<?x32xbf16, strided<[32, 1]>>
      linalg.fill ins(%fzero : f32) outs(%s : memref<64x64xf32>)
      linalg.generic {indexing_maps = [#a, #bt, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%q_tile, %k_tile : memref<64x32xbf16>, memref<64x32xbf16>) outs(%s : memref<64x64xf32>) attrs = {flash.contraction = "scores"} {
      ^bb0(%x: bf16, %y: bf16, %out: f32):
        %xf = arith.extf %x : bf16 to f32
        %yf = arith.extf %y : bf16 to f32
        %xy = arith.mulf %xf, %yf : f32
        %sum = arith.addf %out, %xy : f32
        linalg.yield %sum : f32
      }
      linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%s : memref<64x64xf32>) outs(%p : memref<64x64xbf16>) {
      ^bb0(%x: f32, %out: bf16):
        %e = math.exp2 %x : f32
        %t = arith.truncf %e : f32 to bf16
        linalg.yield %t : bf16
      }
      linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%p, %v_tile : memref<64x64xbf16>, memref<64x32xbf16>) outs(%acc : memref<64x32xf32>) attrs = {flash.contraction = "output"} {
      ^bb0(%x: bf16, %y: bf16, %out: f32):
        %xf = arith.extf %x : bf16 to f32
        %yf = arith.extf %y : bf16 to f32
        %xy = arith.mulf %xf, %yf : f32
        %sum = arith.addf %out, %xy : f32
        linalg.yield %sum : f32
      }
    }
    %o_tile = memref.alloc() : memref<64x32xbf16>
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%acc : memref<64x32xf32>) outs(%o_tile : memref<64x32xbf16>) {
    ^bb0(%x: f32, %out: bf16):
      %t = arith.truncf %x : f32 to bf16
      linalg.yield %t : bf16
    }
    %o_valid = memref.subview %o_tile[0, 0] [%rows, 32] [1, 1] : memref<64x32xbf16> to memref<?x32xbf16, strided<[32, 1]>>
    %o_rows = memref.subview %o[%row0, 0] [%rows, 32] [1, 1] : memref<?x32xbf16> to memref<?x32xbf16, strided<[32, 1], offset: ?>>
    memref.copy %o_valid, %o_rows : memref<?x32xbf16, strided<[32, 1]>> to memref<?x32xbf16, strided<[32, 1], offset: ?>>
    gpu.terminator
  }
  return
}

// -----

// The atomic backward's dS K of one step (a contraction whose A is read
// transposed, from the keys x query rows dSᵀ, into a zero-filled C that
// only a flash.atomic_add reads): A gets a shared copy of its own, written
// before a barrier, and C is kept in the MMA's accumulators (never stored).
// CHECK-LABEL: func.func @grad_query_block(
// CHECK: %[[DST:.*]] = memref.alloc() : memref<64x64xbf16>
// CHECK: %[[STAGED:.*]] = memref.alloc() : memref<64x64xbf16>
// CHECK: %[[DQ:.*]] = memref.alloc() {flash.tile_storage = "accumulators"} : memref<64x64xf32>
// CHECK: memref.copy %[[DST]], %[[STAGED]]
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: linalg.generic {{.*}} ins(%[[STAGED]], %{{.*}} : {{.*}}) outs(%[[DQ]] : {{.*}}) {{.*}}flash.contraction = "grad_query_block"
// CHECK-NEXT: ^bb0
// SHARED: memref.alloc() {flash.tile_storage = "accumulators"}
// STAGE-LABEL: func.func @grad_query_block(
// STAGE: memref.alloc() {flash.tile_storage = "accumulators"} : memref<64x64xf32>
#at = affine_map<(d0, d1, d2) -> (d2, d0)>
#b2 = affine_map<(d0, d1, d2) -> (d2, d1)>
#c2 = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @grad_query_block(%ds_t: memref<64x64xbf16>, %k: memref<64x64xbf16>,
                            %dq: memref<?x64xf32>, %rows: index) {
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %fzero = arith.constant 0.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %dst = memref.alloc() : memref<64x64xbf16>
    memref.copy %ds_t, %dst : memref<64x64xbf16> to memref<64x64xbf16>
    %k_tile = memref.alloc() : memref<64x64xbf16>
    memref.copy %k, %k_tile : memref<64x64xbf16> to memref<64x64xbf16>
    %dq_step = memref.alloc() : memref<64x64xf32>
    linalg.fill ins(%fzero : f32) outs(%dq_step : memref<64x64xf32>)
    linalg.generic {indexing_maps = [#at, #b2, #c2], iterator_types = ["parallel", "parallel", "reduction"]} ins(%dst, %k_tile : memref<64x64xbf16>, memref<64x64xbf16>) outs(%dq_step : memref<64x64xf32>) attrs = {flash.contraction = "grad_query_block"} {
    ^bb0(%x: bf16, %y: bf16, %out: f32):
      %xf = arith.extf %x : bf16 to f32
      %yf = arith.extf %y : bf16 to f32
      %xy = arith.mulf %xf, %yf : f32
      %sum = arith.addf %out, %xy : f32
      linalg.yield %sum : f32
    }
    %valid = memref.subview %dq_step[0, 0] [%rows, 64] [1, 1] : memref<64x64xf32> to memref<?x64xf32, strided<[64, 1]>>
    %dq_rows = memref.subview %dq[0, 0] [%rows, 64] [1, 1] : memref<?x64xf32> to memref<?x64xf32, strided<[64, 1]>>
    flash.atomic_add %valid, %dq_rows : memref<?x64xf32, strided<[64, 1]>>, memref<?x64xf32, strided<[64, 1]>>
    gpu.terminator
  }
  return
}

// -----

// dS K's C in a warpgroup-MMA launch (tagged as the register-tile analysis
// tags a whole kernel) whose sums go to rows of an f32 argument that end
// with the tensor.
// CHECK-LABEL: func.func @grad_query_block_clipped(
// CHECK: memref.alloc() {flash.tile_storage = "accumulators"} : memref<64x64xf32>
// STAGE-LABEL: func.func @grad_query_block_clipped(
// STAGE: memref.alloc() {flash.tile_storage = "reduction_stage"} : memref<64x64xf32>
#at = affine_map<(d0, d1, d2) -> (d2, d0)>
#b2 = affine_map<(d0, d1, d2) -> (d2, d1)>
#c2 = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @grad_query_block_clipped(%ds_t: memref<64x64xbf16>, %k: memref<64x64xbf16>,
                                    %dq: memref<?x?x?x64xf32>, %row0: index) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %fzero = arith.constant 0.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %dst = memref.alloc() : memref<64x64xbf16>
    memref.copy %ds_t, %dst : memref<64x64xbf16> to memref<64x64xbf16>
    %k_tile = memref.alloc() : memref<64x64xbf16>
    memref.copy %k, %k_tile : memref<64x64xbf16> to memref<64x64xbf16>
    %dq_step = memref.alloc() : memref<64x64xf32>
    %m = memref.dim %dq, %c2 : memref<?x?x?x64xf32>
    %left = arith.subi %m, %row0 : index
    %rows = arith.minsi %left, %c64 : index
    linalg.fill ins(%fzero : f32) outs(%dq_step : memref<64x64xf32>)
    linalg.generic {indexing_maps = [#at, #b2, #c2], iterator_types = ["parallel", "parallel", "reduction"]} ins(%dst, %k_tile : memref<64x64xbf16>, memref<64x64xbf16>) outs(%dq_step : memref<64x64xf32>) attrs = {flash.contraction = "grad_query_block"} {
    ^bb0(%x: bf16, %y: bf16, %out: f32):
      %xf = arith.extf %x : bf16 to f32
      %yf = arith.extf %y : bf16 to f32
      %xy = arith.mulf %xf, %yf : f32
      %sum = arith.addf %out, %xy : f32
      linalg.yield %sum : f32
    }
    %valid = memref.subview %dq_step[0, 0] [%rows, 64] [1, 1] : memref<64x64xf32> to memref<?x64xf32, strided<[64, 1]>>
    %dq_rows = memref.subview %dq[%bz, %by, %row0, 0] [1, 1, %rows, 64] [1, 1, 1, 1] : memref<?x?x?x64xf32> to memref<?x64xf32, strided<[64, 1], offset: ?>>
    flash.atomic_add %valid, %dq_rows : memref<?x64xf32, strided<[64, 1]>>, memref<?x64xf32, strided<[64, 1], offset: ?>>
    gpu.terminator
  } {flash.wgmma}
  return
}

// -----

// The same with a row count that need not end with the tensor: TMA could
// add rows past it, so the sums stay in the accumulators.
// CHECK-LABEL: func.func @grad_query_block_unclipped(
// CHECK: memref.alloc() {flash.tile_storage = "accumulators"} : memref<64x64xf32>
// STAGE-LABEL: func.func @grad_query_block_unclipped(
// STAGE: memref.alloc() {flash.tile_storage = "accumulators"} : memref<64x64xf32>
#at = affine_map<(d0, d1, d2) -> (d2, d0)>
#b2 = affine_map<(d0, d1, d2) -> (d2, d1)>
#c2 = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @grad_query_block_unclipped(%ds_t: memref<64x64xbf16>, %k: memref<64x64xbf16>,
                                    %dq: memref<?x?x?x64xf32>, %row0: index) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %fzero = arith.constant 0.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %dst = memref.alloc() : memref<64x64xbf16>
    memref.copy %ds_t, %dst : memref<64x64xbf16> to memref<64x64xbf16>
    %k_tile = memref.alloc() : memref<64x64xbf16>
    memref.copy %k, %k_tile : memref<64x64xbf16> to memref<64x64xbf16>
    %dq_step = memref.alloc() : memref<64x64xf32>
    %m = memref.dim %dq, %c2 : memref<?x?x?x64xf32>
    %left = arith.subi %m, %row0 : index
    %rows = arith.minsi %left, %c64 : index
    linalg.fill ins(%fzero : f32) outs(%dq_step : memref<64x64xf32>)
    linalg.generic {indexing_maps = [#at, #b2, #c2], iterator_types = ["parallel", "parallel", "reduction"]} ins(%dst, %k_tile : memref<64x64xbf16>, memref<64x64xbf16>) outs(%dq_step : memref<64x64xf32>) attrs = {flash.contraction = "grad_query_block"} {
    ^bb0(%x: bf16, %y: bf16, %out: f32):
      %xf = arith.extf %x : bf16 to f32
      %yf = arith.extf %y : bf16 to f32
      %xy = arith.mulf %xf, %yf : f32
      %sum = arith.addf %out, %xy : f32
      linalg.yield %sum : f32
    }
    %valid = memref.subview %dq_step[0, 0] [%row0, 64] [1, 1] : memref<64x64xf32> to memref<?x64xf32, strided<[64, 1]>>
    %dq_rows = memref.subview %dq[%bz, %by, %row0, 0] [1, 1, %row0, 64] [1, 1, 1, 1] : memref<?x?x?x64xf32> to memref<?x64xf32, strided<[64, 1], offset: ?>>
    flash.atomic_add %valid, %dq_rows : memref<?x64xf32, strided<[64, 1]>>, memref<?x64xf32, strided<[64, 1], offset: ?>>
    gpu.terminator
  } {flash.wgmma}
  return
}
