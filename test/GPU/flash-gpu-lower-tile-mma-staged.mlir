// --flash-gpu-lower-tile-mma on the atomic backward's dS K in a wgmma
// launch whose C --flash-gpu-carve-shared-memory placed in shared memory
// (a "reduction_stage" tile of two copies, FlashAttention-3's dQ), the sums
// going to rows of a 4-D f32 argument that end with the tensor: each
// warpgroup (two of them, 64 columns each of a 64 x 128 dQ) runs its MMA
// with A the staged dSᵀ read m-major; waits until the reductions of the
// step before the last have read the stage (`wait_group 1`, only the
// issuing thread has groups); meets its own threads on named barrier 8 + g;
// stores its accumulators in pairs into the copy of the step's parity, in
// swizzled panels of 32 columns; fences them towards the async proxy;
// meets again; and its first thread adds each of its two panels with one
// TMA tensor reduction through a tensor map of dQ appended to the
// function's maps (boxes of 64 rows by 32 f32, 128-byte swizzle), then
// commits. The stage is drained after the loop around the contraction.
// RUN: flash-opt %s --split-input-file --flash-gpu-lower-tile-mma="chip=sm_90a" | FileCheck %s

// CHECK-LABEL: func.func @staged_grad_query_block(
// CHECK-SAME: %[[DQ:[^:]*]]: memref<?x?x?x128xf32>
// CHECK-SAME: %[[MAPS:[^:]*]]: memref<?xi8> {flash.tensor_maps = [{box_cols = 32 : i64, box_rows = 64 : i64, row_dim = 2 : i64, swizzle_bytes = 128 : i64, tensor = 0 : i64}]}
// CHECK: gpu.launch
// CHECK: %[[BASE:.*]] = memref.extract_aligned_pointer_as_index %[[MAPS]]
// CHECK: %[[MAP:.*]] = llvm.inttoptr
// CHECK: %[[STAGE:.*]] = memref.view %{{.*}}[%{{.*}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<2x64x128xf32, #gpu.address_space<workgroup>>
// CHECK: scf.for %[[I:[^ ]*]] = %[[LB:[^ ]*]] to
// CHECK: flashgpu.warpgroup_mma a_desc({{.*}}) b_desc({{.*}}) {{{.*}}a_m_major{{.*}}n = 64 : i64{{.*}}} : vector<32xf32>
// CHECK: %[[META:.*]], %{{.*}}, %{{.*}}:3, %{{.*}}:3 = memref.extract_strided_metadata %[[STAGE]]
// CHECK: %[[FLAT:.*]] = memref.reinterpret_cast %[[META]] to offset: [%{{.*}}], sizes: [16384], strides: [1] : memref<f32, #gpu.address_space<workgroup>> to memref<16384xf32, strided<[1], offset: ?>, #gpu.address_space<workgroup>>
// CHECK: %[[REL:.*]] = arith.subi %[[I]], %[[LB]]
// CHECK: %[[ORD:.*]] = arith.divui %[[REL]]
// CHECK: %[[COPY:.*]] = arith.remui %[[ORD]], %c2{{.*}}
// CHECK: %[[COPYBASE:.*]] = arith.muli %[[COPY]], %c8192{{.*}}
// CHECK: %[[ID:.*]] = arith.addi %c8_i32, %{{.*}} : i32
// CHECK: %[[N:.*]] = arith.constant 128 : i32
// CHECK-NEXT: nvvm.cp.async.bulk.wait_group 1 {read}
// CHECK-NEXT: nvvm.barrier id = %[[ID]] number_of_threads = %[[N]]{{$}}
// CHECK: arith.xori
// CHECK-COUNT-16: vector.store %{{.*}}, %[[FLAT]][%{{.*}}] {alignment = 8 : i64} : memref<16384xf32, strided<[1], offset: ?>, #gpu.address_space<workgroup>>, vector<2xf32>
// CHECK-NOT: vector.store
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: nvvm.barrier id = %[[ID]] number_of_threads = %[[N]]{{$}}
// CHECK: scf.if
// CHECK: %[[SRC0:.*]] = llvm.inttoptr %{{.*}} : i64 to !llvm.ptr<3>
// CHECK: nvvm.cp.async.bulk.tensor.reduce %[[MAP]], %[[SRC0]], box[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] {redKind = #nvvm.tma_redux_kind<add>}
// CHECK: nvvm.cp.async.bulk.tensor.reduce %[[MAP]], %{{.*}}, box[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] {redKind = #nvvm.tma_redux_kind<add>}
// CHECK-NEXT: nvvm.cp.async.bulk.commit.group
// CHECK-NOT: flashgpu.reduce_add
// CHECK: }
// CHECK-NEXT: }
// CHECK-NEXT: nvvm.cp.async.bulk.wait_group 0 {read}
// CHECK-NEXT: gpu.barrier
// CHECK-NOT: flash.atomic_add

#at = affine_map<(d0, d1, d2) -> (d2, d0)>
#b = affine_map<(d0, d1, d2) -> (d2, d1)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @staged_grad_query_block(%dq: memref<?x?x?x128xf32>, %first: index, %steps: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c64 = arith.constant 64 : index
  %c256 = arith.constant 256 : index
  %cst = arith.constant 0.000000e+00 : f32
  %bytes = arith.constant 98304 : i32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%nx = %c256, %ny = %c1, %nz = %c1) dynamic_shared_memory_size %bytes {
    %smem = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
    %o0 = arith.constant 0 : index
    %v0 = memref.view %smem[%o0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x64xbf16, #gpu.address_space<workgroup>>
    %ds_t = memref.memory_space_cast %v0 {flash.swizzled_128b} : memref<64x64xbf16, #gpu.address_space<workgroup>> to memref<64x64xbf16>
    %o1 = arith.constant 8192 : index
    %v1 = memref.view %smem[%o1][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x128xbf16, #gpu.address_space<workgroup>>
    %k = memref.memory_space_cast %v1 {flash.swizzled_128b} : memref<64x128xbf16, #gpu.address_space<workgroup>> to memref<64x128xbf16>
    %o2 = arith.constant 32768 : index
    %v2 = memref.view %smem[%o2][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<2x64x128xf32, #gpu.address_space<workgroup>>
    %copy0 = memref.subview %v2[0, 0, 0] [1, 64, 128] [1, 1, 1] : memref<2x64x128xf32, #gpu.address_space<workgroup>> to memref<64x128xf32, strided<[128, 1]>, #gpu.address_space<workgroup>>
    %stage = memref.memory_space_cast %copy0 {flash.reduction_stage} : memref<64x128xf32, strided<[128, 1]>, #gpu.address_space<workgroup>> to memref<64x128xf32, strided<[128, 1]>>
    scf.for %i = %first to %steps step %c1 {
      %row0 = arith.muli %i, %c64 : index
      %m = memref.dim %dq, %c2 : memref<?x?x?x128xf32>
      %left = arith.subi %m, %row0 : index
      %valid = arith.minsi %left, %c64 : index
      linalg.fill ins(%cst : f32) outs(%stage : memref<64x128xf32, strided<[128, 1]>>)
      gpu.barrier
      linalg.generic {indexing_maps = [#at, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%ds_t, %k : memref<64x64xbf16>, memref<64x128xbf16>) outs(%stage : memref<64x128xf32, strided<[128, 1]>>) attrs = {flash.contraction = "grad_query_block"} {
      ^bb0(%a: bf16, %bb: bf16, %acc: f32):
        %x = arith.extf %a : bf16 to f32
        %y = arith.extf %bb : bf16 to f32
        %p = arith.mulf %x, %y : f32
        %s = arith.addf %acc, %p : f32
        linalg.yield %s : f32
      }
      %tile = memref.subview %stage[0, 0] [%valid, 128] [1, 1] : memref<64x128xf32, strided<[128, 1]>> to memref<?x128xf32, strided<[128, 1]>>
      %dest = memref.subview %dq[%bz, %by, %row0, 0] [1, 1, %valid, 128] [1, 1, 1, 1] : memref<?x?x?x128xf32> to memref<?x128xf32, strided<[128, 1], offset: ?>>
      flash.atomic_add %tile, %dest : memref<?x128xf32, strided<[128, 1]>>, memref<?x128xf32, strided<[128, 1], offset: ?>>
    }
    gpu.terminator
  } {flash.shared_memory_bytes = 98304 : i64, flash.wgmma}
  return
}

// -----

// Where the sums' rows do not end with the tensor (here: any count of
// them), TMA could add rows past them: the vector reductions from
// registers are kept (in a kernel flash-compile builds, assign-tile-storage
// asks the same question and gives such sums no stage).
// CHECK-LABEL: func.func @staged_rows_not_clipped(
// CHECK-NOT: flash.tensor_maps
// CHECK: flashgpu.reduce_add
// CHECK-NOT: nvvm.cp.async.bulk.tensor.reduce

#at = affine_map<(d0, d1, d2) -> (d2, d0)>
#b = affine_map<(d0, d1, d2) -> (d2, d1)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @staged_rows_not_clipped(%dq: memref<?x?x?x128xf32>, %valid: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %cst = arith.constant 0.000000e+00 : f32
  %bytes = arith.constant 98304 : i32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%nx = %c256, %ny = %c1, %nz = %c1) dynamic_shared_memory_size %bytes {
    %smem = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
    %o0 = arith.constant 0 : index
    %v0 = memref.view %smem[%o0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x64xbf16, #gpu.address_space<workgroup>>
    %ds_t = memref.memory_space_cast %v0 {flash.swizzled_128b} : memref<64x64xbf16, #gpu.address_space<workgroup>> to memref<64x64xbf16>
    %o1 = arith.constant 8192 : index
    %v1 = memref.view %smem[%o1][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x128xbf16, #gpu.address_space<workgroup>>
    %k = memref.memory_space_cast %v1 {flash.swizzled_128b} : memref<64x128xbf16, #gpu.address_space<workgroup>> to memref<64x128xbf16>
    %o2 = arith.constant 32768 : index
    %v2 = memref.view %smem[%o2][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<2x64x128xf32, #gpu.address_space<workgroup>>
    %copy0 = memref.subview %v2[0, 0, 0] [1, 64, 128] [1, 1, 1] : memref<2x64x128xf32, #gpu.address_space<workgroup>> to memref<64x128xf32, strided<[128, 1]>, #gpu.address_space<workgroup>>
    %stage = memref.memory_space_cast %copy0 {flash.reduction_stage} : memref<64x128xf32, strided<[128, 1]>, #gpu.address_space<workgroup>> to memref<64x128xf32, strided<[128, 1]>>
    linalg.fill ins(%cst : f32) outs(%stage : memref<64x128xf32, strided<[128, 1]>>)
    gpu.barrier
    linalg.generic {indexing_maps = [#at, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%ds_t, %k : memref<64x64xbf16>, memref<64x128xbf16>) outs(%stage : memref<64x128xf32, strided<[128, 1]>>) attrs = {flash.contraction = "grad_query_block"} {
    ^bb0(%a: bf16, %bb: bf16, %acc: f32):
      %x = arith.extf %a : bf16 to f32
      %y = arith.extf %bb : bf16 to f32
      %p = arith.mulf %x, %y : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
    }
    %tile = memref.subview %stage[0, 0] [%valid, 128] [1, 1] : memref<64x128xf32, strided<[128, 1]>> to memref<?x128xf32, strided<[128, 1]>>
    %dest = memref.subview %dq[%bz, %by, 0, 0] [1, 1, %valid, 128] [1, 1, 1, 1] : memref<?x?x?x128xf32> to memref<?x128xf32, strided<[128, 1], offset: ?>>
    flash.atomic_add %tile, %dest : memref<?x128xf32, strided<[128, 1]>>, memref<?x128xf32, strided<[128, 1], offset: ?>>
    gpu.terminator
  } {flash.shared_memory_bytes = 98304 : i64, flash.wgmma}
  return
}

// -----

// Where a guard inside the loop may skip a step's sums, the copies would
// not alternate with the sums: vector reductions again.
// CHECK-LABEL: func.func @staged_under_guard(
// CHECK-NOT: flash.tensor_maps
// CHECK: flashgpu.reduce_add
// CHECK-NOT: nvvm.cp.async.bulk.tensor.reduce

#at = affine_map<(d0, d1, d2) -> (d2, d0)>
#b = affine_map<(d0, d1, d2) -> (d2, d1)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @staged_under_guard(%dq: memref<?x?x?x128xf32>, %first: index, %steps: index, %cond: i1) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c64 = arith.constant 64 : index
  %c256 = arith.constant 256 : index
  %cst = arith.constant 0.000000e+00 : f32
  %bytes = arith.constant 98304 : i32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%nx = %c256, %ny = %c1, %nz = %c1) dynamic_shared_memory_size %bytes {
    %smem = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
    %o0 = arith.constant 0 : index
    %v0 = memref.view %smem[%o0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x64xbf16, #gpu.address_space<workgroup>>
    %ds_t = memref.memory_space_cast %v0 {flash.swizzled_128b} : memref<64x64xbf16, #gpu.address_space<workgroup>> to memref<64x64xbf16>
    %o1 = arith.constant 8192 : index
    %v1 = memref.view %smem[%o1][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x128xbf16, #gpu.address_space<workgroup>>
    %k = memref.memory_space_cast %v1 {flash.swizzled_128b} : memref<64x128xbf16, #gpu.address_space<workgroup>> to memref<64x128xbf16>
    %o2 = arith.constant 32768 : index
    %v2 = memref.view %smem[%o2][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<2x64x128xf32, #gpu.address_space<workgroup>>
    %copy0 = memref.subview %v2[0, 0, 0] [1, 64, 128] [1, 1, 1] : memref<2x64x128xf32, #gpu.address_space<workgroup>> to memref<64x128xf32, strided<[128, 1]>, #gpu.address_space<workgroup>>
    %stage = memref.memory_space_cast %copy0 {flash.reduction_stage} : memref<64x128xf32, strided<[128, 1]>, #gpu.address_space<workgroup>> to memref<64x128xf32, strided<[128, 1]>>
    scf.for %i = %first to %steps step %c1 {
      %row0 = arith.muli %i, %c64 : index
      %m = memref.dim %dq, %c2 : memref<?x?x?x128xf32>
      %left = arith.subi %m, %row0 : index
      %valid = arith.minsi %left, %c64 : index
      scf.if %cond {
      linalg.fill ins(%cst : f32) outs(%stage : memref<64x128xf32, strided<[128, 1]>>)
      gpu.barrier
      linalg.generic {indexing_maps = [#at, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%ds_t, %k : memref<64x64xbf16>, memref<64x128xbf16>) outs(%stage : memref<64x128xf32, strided<[128, 1]>>) attrs = {flash.contraction = "grad_query_block"} {
      ^bb0(%a: bf16, %bb: bf16, %acc: f32):
        %x = arith.extf %a : bf16 to f32
        %y = arith.extf %bb : bf16 to f32
        %p = arith.mulf %x, %y : f32
        %s = arith.addf %acc, %p : f32
        linalg.yield %s : f32
      }
      %tile = memref.subview %stage[0, 0] [%valid, 128] [1, 1] : memref<64x128xf32, strided<[128, 1]>> to memref<?x128xf32, strided<[128, 1]>>
      %dest = memref.subview %dq[%bz, %by, %row0, 0] [1, 1, %valid, 128] [1, 1, 1, 1] : memref<?x?x?x128xf32> to memref<?x128xf32, strided<[128, 1], offset: ?>>
      flash.atomic_add %tile, %dest : memref<?x128xf32, strided<[128, 1]>>, memref<?x128xf32, strided<[128, 1], offset: ?>>
      }
    }
    gpu.terminator
  } {flash.shared_memory_bytes = 98304 : i64, flash.wgmma}
  return
}

// -----

// D = 64's step: 128 query rows, each warpgroup one 64-row slice of all 64
// columns (warpgroup g's rows start at 64 g), the sums directly in the
// launch body (no loop: always the first copy). The stage is [2, 128, 64]:
// copies 8192 f32 apart, panels of 32 columns 128 x 128 bytes apart; a
// warpgroup's box starts at its first row, 128 bytes a row. Coordinates go
// innermost first: column, row (+ the warpgroup's first), head, batch.
// CHECK-LABEL: func.func @staged_row_slices(
// CHECK-SAME: %[[DQ:[^:]*]]: memref<?x?x?x64xf32>, %[[ROW0:[^:]*]]: index
// CHECK-SAME: {flash.tensor_maps = [{box_cols = 32 : i64, box_rows = 64 : i64, row_dim = 2 : i64, swizzle_bytes = 128 : i64, tensor = 0 : i64}]}
// CHECK: gpu.launch blocks(%{{[^,]*}}, %[[BY:[^,]*]], %[[BZ:[^)]*]])
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: %[[G:.*]] = arith.divui %[[TID]], %c128
// CHECK: %[[SG:.*]] = arith.remui %[[G]], %c2
// CHECK: %[[FIRSTROW:.*]] = arith.muli %[[SG]], %c64
// CHECK: memref.reinterpret_cast %{{.*}} to offset: [%{{.*}}], sizes: [16384], strides: [1]
// CHECK: %[[COPYBASE:.*]] = arith.muli %c0{{.*}}, %c8192{{.*}} : index
// CHECK-NOT: scf.for
// CHECK: nvvm.cp.async.bulk.wait_group 1 {read}
// CHECK-COUNT-16: vector.store
// CHECK-NOT: vector.store
// CHECK: scf.if
// CHECK: %[[PANEL0:.*]] = arith.divui %{{.*}}, %c32
// CHECK: %[[PANEL:.*]] = arith.addi %[[PANEL0]], %c0
// CHECK: %[[COPYBYTES:.*]] = arith.muli %[[COPYBASE]], %c4
// CHECK: %[[PANELBYTES:.*]] = arith.muli %[[PANEL]], %c16384
// CHECK: %[[ROWBYTES:.*]] = arith.muli %[[FIRSTROW]], %c128
// CHECK: %[[INSIDE:.*]] = arith.addi %[[PANELBYTES]], %[[ROWBYTES]]
// CHECK: %[[BYTES:.*]] = arith.addi %[[COPYBYTES]], %[[INSIDE]]
// CHECK: %[[COL:.*]] = arith.index_cast %{{.*}} : index to i32
// CHECK: %[[ROWC:.*]] = arith.addi %[[ROW0]], %[[FIRSTROW]]
// CHECK: %[[ROW:.*]] = arith.index_cast %[[ROWC]] : index to i32
// CHECK: %[[H:.*]] = arith.index_cast %[[BY]] : index to i32
// CHECK: %[[B:.*]] = arith.index_cast %[[BZ]] : index to i32
// CHECK: nvvm.cp.async.bulk.tensor.reduce %{{.*}}, %{{.*}}, box[%[[COL]], %[[ROW]], %[[H]], %[[B]]] {redKind = #nvvm.tma_redux_kind<add>}
// CHECK: nvvm.cp.async.bulk.tensor.reduce
// CHECK-NEXT: nvvm.cp.async.bulk.commit.group
// CHECK: }
// CHECK-NEXT: nvvm.cp.async.bulk.wait_group 0 {read}
// CHECK-NEXT: gpu.barrier

#at = affine_map<(d0, d1, d2) -> (d2, d0)>
#b = affine_map<(d0, d1, d2) -> (d2, d1)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @staged_row_slices(%dq: memref<?x?x?x64xf32>, %row0: index) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
  %cst = arith.constant 0.000000e+00 : f32
  %bytes = arith.constant 98304 : i32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%nx = %c256, %ny = %c1, %nz = %c1) dynamic_shared_memory_size %bytes {
    %smem = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
    %o0 = arith.constant 0 : index
    %v0 = memref.view %smem[%o0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x128xbf16, #gpu.address_space<workgroup>>
    %ds_t = memref.memory_space_cast %v0 {flash.swizzled_128b} : memref<64x128xbf16, #gpu.address_space<workgroup>> to memref<64x128xbf16>
    %o1 = arith.constant 16384 : index
    %v1 = memref.view %smem[%o1][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x64xbf16, #gpu.address_space<workgroup>>
    %k = memref.memory_space_cast %v1 {flash.swizzled_128b} : memref<64x64xbf16, #gpu.address_space<workgroup>> to memref<64x64xbf16>
    %o2 = arith.constant 32768 : index
    %v2 = memref.view %smem[%o2][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<2x128x64xf32, #gpu.address_space<workgroup>>
    %copy0 = memref.subview %v2[0, 0, 0] [1, 128, 64] [1, 1, 1] : memref<2x128x64xf32, #gpu.address_space<workgroup>> to memref<128x64xf32, strided<[64, 1]>, #gpu.address_space<workgroup>>
    %stage = memref.memory_space_cast %copy0 {flash.reduction_stage} : memref<128x64xf32, strided<[64, 1]>, #gpu.address_space<workgroup>> to memref<128x64xf32, strided<[64, 1]>>
    %m = memref.dim %dq, %c2 : memref<?x?x?x64xf32>
    %left = arith.subi %m, %row0 : index
    %valid = arith.minsi %left, %c128 : index
    linalg.fill ins(%cst : f32) outs(%stage : memref<128x64xf32, strided<[64, 1]>>)
    gpu.barrier
    linalg.generic {indexing_maps = [#at, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%ds_t, %k : memref<64x128xbf16>, memref<64x64xbf16>) outs(%stage : memref<128x64xf32, strided<[64, 1]>>) attrs = {flash.contraction = "grad_query_block"} {
    ^bb0(%a: bf16, %bb: bf16, %acc: f32):
      %x = arith.extf %a : bf16 to f32
      %y = arith.extf %bb : bf16 to f32
      %p = arith.mulf %x, %y : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
    }
    %tile = memref.subview %stage[0, 0] [%valid, 64] [1, 1] : memref<128x64xf32, strided<[64, 1]>> to memref<?x64xf32, strided<[64, 1]>>
    %dest = memref.subview %dq[%bz, %by, %row0, 0] [1, 1, %valid, 64] [1, 1, 1, 1] : memref<?x?x?x64xf32> to memref<?x64xf32, strided<[64, 1], offset: ?>>
    flash.atomic_add %tile, %dest : memref<?x64xf32, strided<[64, 1]>>, memref<?x64xf32, strided<[64, 1], offset: ?>>
    gpu.terminator
  } {flash.shared_memory_bytes = 98304 : i64, flash.wgmma}
  return
}
