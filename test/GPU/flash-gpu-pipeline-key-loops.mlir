// The GPU pipeline with pipeline-key-loops: the pipelined key-block loops
// (--flash-pipeline-key-loops) keep the warp register tiles and wgmma (the
// guarded prologue / loop / epilogue is an scf.if the mapping carries the
// tiles through; their buffers fit the same shared memory as the plain
// loop's, 96 KiB with two load stages), and each loop iteration issues
// S = Q Kᵀ and P V back to back, waits for S with P V still in flight, runs
// the softmax, and waits for P V at the end (--flash-gpu-async-mma). Opt-in:
// measured slower on the H200 so far (docs/GPU-NOTES.md, 42).
// RUN: flash-opt %s --flash-gpu-pipeline="chip=sm_90a format=isa block-rows=128 block-cols=64 threads=128 load-stages=2 pipeline-key-loops" --mlir-print-ir-after=flash-gpu-async-mma -o %t 2>&1 | FileCheck %s
// RUN: FileCheck %s --check-prefix=PTX < %t

// CHECK-LABEL: func.func @attention(
// CHECK: scf.if %{{.*}} -> (vector<
// CHECK: scf.for
// CHECK: %[[S:.*]] = flashgpu.warpgroup_mma a_desc({{.*}}async
// CHECK-NOT: flashgpu.warpgroup_mma_wait
// CHECK: %[[O:.*]] = flashgpu.warpgroup_mma acc({{.*}}async
// CHECK-NEXT: flashgpu.warpgroup_mma_wait %[[S]] {pending = 1 : i64}
// CHECK: math.exp2
// CHECK: flashgpu.warpgroup_mma_wait %[[O]], %{{.*}} {pending = 0 : i64}
// CHECK: scf.yield
// CHECK: flash.shared_memory_bytes = 98304 : i64, flash.warp_register_tiles, flash.wgmma

// The PTX of the loop: two commits, a wait leaving one group in flight, the
// softmax's exp2, then the wait for the rest.
// PTX: wgmma.commit_group.sync.aligned;\0A}
// PTX-SAME: wgmma.commit_group.sync.aligned;\0A}
// PTX-SAME: wgmma.wait_group.sync.aligned 1;
// PTX-SAME: ex2.approx.ftz.f32
// PTX-SAME: wgmma.wait_group.sync.aligned 0;

func.func @attention(%q: tensor<?x?x?x128xbf16>, %k: tensor<?x?x?x128xbf16>, %v: tensor<?x?x?x128xbf16>, %o: tensor<?x?x?x128xbf16> {bufferization.writable = true}) -> tensor<?x?x?x128xbf16> {
  %r = flash.attention %q, %k, %v : tensor<?x?x?x128xbf16>, tensor<?x?x?x128xbf16>, tensor<?x?x?x128xbf16> -> tensor<?x?x?x128xbf16>
  %w = bufferization.materialize_in_destination %r in %o : (tensor<?x?x?x128xbf16>, tensor<?x?x?x128xbf16>) -> tensor<?x?x?x128xbf16>
  return %w : tensor<?x?x?x128xbf16>
}
