// --flash-gpu-lower-tile-mma on the atomic backward's dS K in a wgmma
// launch whose C --flash-gpu-carve-shared-memory placed in shared memory
// (a "reduction_stage" tile, FlashAttention-3's dQ): each warpgroup
// (two of them, 64 columns each of a 64 x 128 dQ) runs its MMA with A the
// staged dSᵀ read m-major, waits until its threads' earlier bulk
// reductions have read the stage, meets its own threads on named barrier
// 8 + g, stores its accumulators in pairs into the stage, fences them
// towards the async proxy, meets again, and one thread per row (rows past
// the valid ones skipped) adds the row's 64 f32 to dQ with one bulk
// reduction, then commits; the stage is drained after the loop around the
// contraction. The kernel traps at entry unless dQ's rows are 16-byte
// aligned.
// RUN: flash-opt %s --flash-gpu-lower-tile-mma="chip=sm_90a" | FileCheck %s
// The same through --convert-flashgpu-to-llvm: one cp.reduce.async.bulk of
// 256 bytes per row.
// RUN: flash-opt %s --flash-gpu-lower-tile-mma="chip=sm_90a" --convert-flashgpu-to-llvm | FileCheck %s --check-prefix=ASM

// CHECK-LABEL: func.func @staged_grad_query_block(
// CHECK: gpu.launch
// CHECK: memref.extract_aligned_pointer_as_index %arg0
// CHECK: scf.if
// CHECK-NEXT: llvm.intr.trap
// CHECK: %[[STAGE:.*]] = memref.subview %{{.*}}[0, 0] [64, 128] [1, 1] : memref<64x132xf32, #gpu.address_space<workgroup>> to memref<64x128xf32, strided<[132, 1]>, #gpu.address_space<workgroup>>
// CHECK: scf.for
// CHECK: flashgpu.warpgroup_mma a_desc({{.*}}) b_desc({{.*}}) {{{.*}}a_m_major{{.*}}n = 64 : i64{{.*}}} : vector<32xf32>
// CHECK-NOT: llvm.intr.trap
// CHECK: %[[ID:.*]] = arith.addi %c8_i32, %{{.*}} : i32
// CHECK: %[[N:.*]] = arith.constant 128 : i32
// CHECK-NEXT: nvvm.cp.async.bulk.wait_group 0 {read}
// CHECK-NEXT: nvvm.barrier id = %[[ID]] number_of_threads = %[[N]]{{$}}
// CHECK-COUNT-16: vector.store %{{.*}}, %[[STAGE]][%{{.*}}, %{{.*}}] : memref<64x128xf32, strided<[132, 1]>, #gpu.address_space<workgroup>>, vector<2xf32>
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: nvvm.barrier id = %[[ID]] number_of_threads = %[[N]]{{$}}
// CHECK: scf.if
// CHECK-NEXT: flashgpu.bulk_reduce_add %[[STAGE]][%{{.*}}, %{{.*}}], %{{.*}}[%{{.*}}, %{{.*}}] {count = 64 : i64} : memref<64x128xf32, strided<[132, 1]>, #gpu.address_space<workgroup>>, memref<?x128xf32, strided<[128, 1], offset: ?>>
// CHECK: nvvm.cp.async.bulk.commit.group
// CHECK-NOT: flashgpu.reduce_add
// CHECK: }
// CHECK-NEXT: nvvm.cp.async.bulk.wait_group 0 {read}
// CHECK-NEXT: gpu.barrier
// CHECK-NOT: flash.atomic_add

// ASM-LABEL: func.func @staged_grad_query_block(
// ASM: cvta.to.global.u64 %g, $0; cvt.u32.u64 %s, $1; cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%g], [%s], 256;
// ASM-NOT: flashgpu.

#at = affine_map<(d0, d1, d2) -> (d2, d0)>
#b = affine_map<(d0, d1, d2) -> (d2, d1)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @staged_grad_query_block(%dq: memref<?x128xf32>, %valid: index, %steps: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %cst = arith.constant 0.000000e+00 : f32
  %bytes = arith.constant 59392 : i32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%nx = %c256, %ny = %c1, %nz = %c1) dynamic_shared_memory_size %bytes {
    %smem = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
    %o0 = arith.constant 0 : index
    %v0 = memref.view %smem[%o0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x64xbf16, #gpu.address_space<workgroup>>
    %ds_t = memref.memory_space_cast %v0 {flash.swizzled_128b} : memref<64x64xbf16, #gpu.address_space<workgroup>> to memref<64x64xbf16>
    %o1 = arith.constant 8192 : index
    %v1 = memref.view %smem[%o1][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x128xbf16, #gpu.address_space<workgroup>>
    %k = memref.memory_space_cast %v1 {flash.swizzled_128b} : memref<64x128xbf16, #gpu.address_space<workgroup>> to memref<64x128xbf16>
    %o2 = arith.constant 25600 : index
    %v2 = memref.view %smem[%o2][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x132xf32, #gpu.address_space<workgroup>>
    %sub = memref.subview %v2[0, 0] [64, 128] [1, 1] : memref<64x132xf32, #gpu.address_space<workgroup>> to memref<64x128xf32, strided<[132, 1]>, #gpu.address_space<workgroup>>
    %stage = memref.memory_space_cast %sub {flash.reduction_stage} : memref<64x128xf32, strided<[132, 1]>, #gpu.address_space<workgroup>> to memref<64x128xf32, strided<[132, 1]>>
    scf.for %i = %c0 to %steps step %c1 {
      %row0 = arith.muli %i, %c256 : index
      linalg.fill ins(%cst : f32) outs(%stage : memref<64x128xf32, strided<[132, 1]>>)
      gpu.barrier
      linalg.generic {indexing_maps = [#at, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%ds_t, %k : memref<64x64xbf16>, memref<64x128xbf16>) outs(%stage : memref<64x128xf32, strided<[132, 1]>>) attrs = {flash.contraction = "grad_query_block"} {
      ^bb0(%a: bf16, %bb: bf16, %acc: f32):
        %x = arith.extf %a : bf16 to f32
        %y = arith.extf %bb : bf16 to f32
        %p = arith.mulf %x, %y : f32
        %s = arith.addf %acc, %p : f32
        linalg.yield %s : f32
      }
      %tile = memref.subview %stage[0, 0] [%valid, 128] [1, 1] : memref<64x128xf32, strided<[132, 1]>> to memref<?x128xf32, strided<[132, 1]>>
      %dest = memref.subview %dq[%row0, 0] [%valid, 128] [1, 1] : memref<?x128xf32> to memref<?x128xf32, strided<[128, 1], offset: ?>>
      flash.atomic_add %tile, %dest : memref<?x128xf32, strided<[132, 1]>>, memref<?x128xf32, strided<[128, 1], offset: ?>>
    }
    gpu.terminator
  } {flash.shared_memory_bytes = 59392 : i64, flash.wgmma}
  return
}
