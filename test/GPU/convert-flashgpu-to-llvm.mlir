// --convert-flashgpu-to-llvm prints flashgpu.warpgroup_mma as one asm block:
// a fence, one wgmma.mma_async per slice and k step with the descriptors
// advanced in the asm, a commit and a wait; flashgpu.reduce_add as relaxed
// reductions into global memory; flashgpu.exit as the exit intrinsic.
// RUN: flash-opt %s --convert-flashgpu-to-llvm | FileCheck %s

// S = Q Kᵀ: A and B from shared memory (K-major), a fresh accumulator (the
// first k step does not read it: predicate z). Two slices, two k steps.
// CHECK-LABEL: func @scores
// CHECK-NOT: flashgpu.
// CHECK: %[[ASM:.*]] = llvm.inline_asm has_side_effects asm_dialect = att
// CHECK-SAME: wgmma.fence.sync.aligned;
// CHECK-SAME: add.u32 t, $[[DB:[0-9]+]], 0;\0Amov.b64 db, {t, 1073741888};
// CHECK-SAME: add.u32 t, $[[DA:[0-9]+]], 0;\0Amov.b64 da, {t, 1073741888};
// CHECK-SAME: wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 {$0, $1, $2, $3, $4, $5, $6, $7}, da, db, z, 1, 1, 0, 0;
// CHECK-SAME: add.u32 t, $[[DA]], 512;
// CHECK-SAME: {$8, $9, $10, $11, $12, $13, $14, $15}, da, db, z, 1, 1, 0, 0;
// CHECK-SAME: add.u32 t, $[[DB]], 2;
// CHECK-SAME: add.u32 t, $[[DA]], 2;
// CHECK-SAME: da, db, p, 1, 1, 0, 0;
// CHECK-SAME: wgmma.commit_group.sync.aligned;\0Awgmma.wait_group.sync.aligned 0;
// CHECK-SAME: "=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,r,r,r,~{memory}"
// CHECK: llvm.extractvalue %[[ASM]][15]
// CHECK: vector.from_elements {{.*}} : vector<16xf32>
func.func @scores(%a: i32, %b: i32) -> vector<16xf32> {
  %s = flashgpu.warpgroup_mma a_desc(%a) b_desc(%b) {n = 16 : i64, k_steps = 2 : i64, slices = 2 : i64, element_type = bf16, a_rows = 128 : i64, b_rows = 16 : i64, b_k_major} : vector<16xf32>
  return %s : vector<16xf32>
}

// O += P V: A (P) from registers, B = V ([k, n] rows, transpose-b 1), the
// accumulator tied to the outputs. One slice, one k step.
// CHECK-LABEL: func @pv
// CHECK: %[[ACC0:.*]] = vector.extract %arg0[0] : f32 from vector<4xf32>
// CHECK: %[[P0:.*]] = vector.extract %arg1[0] : i32 from vector<4xi32>
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att
// CHECK-SAME: wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {$0, $1, $2, $3}, {$8, $9, $10, $11}, db, p, 1, 1, 1;
// CHECK-SAME: "=f,=f,=f,=f,0,1,2,3,r,r,r,r,r,r,~{memory}"
// CHECK-SAME: %[[ACC0]], %{{.*}}, %{{.*}}, %{{.*}}, %[[P0]], %{{.*}}, %{{.*}}, %{{.*}}, %arg2, %{{.*}} : (f32, f32, f32, f32, i32, i32, i32, i32, i32, i32)
func.func @pv(%acc: vector<4xf32>, %p: vector<4xi32>, %b: i32) -> vector<4xf32> {
  %o = flashgpu.warpgroup_mma acc(%acc) a_regs(%p : vector<4xi32>) b_desc(%b) {n = 8 : i64, k_steps = 1 : i64, slices = 1 : i64, element_type = f16, b_rows = 16 : i64} : vector<4xf32>
  return %o : vector<4xf32>
}

// flashgpu.reduce_add: the element's address from the memref's metadata,
// made global, then one relaxed reduction per element at immediate offsets.
// CHECK-LABEL: func @reduce_add
// CHECK: memref.extract_strided_metadata %arg1
// CHECK: memref.extract_aligned_pointer_as_index %arg1
// CHECK: %[[A:.*]] = arith.index_cast %{{.*}} : index to i64
// CHECK: %[[X0:.*]] = vector.extract %arg0[0]
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att
// CHECK-SAME: "{ .reg .u64 %g; cvta.to.global.u64 %g, $0; red.relaxed.gpu.global.add.f32 [%g+0], $1; red.relaxed.gpu.global.add.f32 [%g+4], $2; red.relaxed.gpu.global.add.f32 [%g+8], $3; red.relaxed.gpu.global.add.f32 [%g+12], $4; }"
// CHECK-SAME: "l,f,f,f,f,~{memory}" %[[A]], %[[X0]]
// CHECK-NOT: flashgpu.reduce_add
func.func @reduce_add(%v: vector<4xf32>, %d: memref<?x128xf32, strided<[?, ?], offset: ?>>, %i: index, %j: index) {
  flashgpu.reduce_add %v, %d[%i, %j] : vector<4xf32>, memref<?x128xf32, strided<[?, ?], offset: ?>>
  return
}

// A scalar into a destination whose type gives a unit innermost stride (the
// fragment-major dQ sums' 1-D view): the index's constant terms become the
// immediate; with a dynamic stride they stay in the address.
// CHECK-LABEL: func @reduce_add_scalar
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "{ .reg .u64 %g; cvta.to.global.u64 %g, $0; red.relaxed.gpu.global.add.f32 [%g+384], $1; }"
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "{ .reg .u64 %g; cvta.to.global.u64 %g, $0; red.relaxed.gpu.global.add.f32 [%g+0], $1; }"
func.func @reduce_add_scalar(%x: f32, %flat: memref<?xf32, strided<[1], offset: ?>>, %d: memref<?xf32, strided<[?], offset: ?>>, %i: index) {
  %c96 = arith.constant 96 : index
  %at = arith.addi %i, %c96 : index
  flashgpu.reduce_add %x, %flat[%at] : f32, memref<?xf32, strided<[1], offset: ?>>
  flashgpu.reduce_add %x, %d[%at] : f32, memref<?xf32, strided<[?], offset: ?>>
  return
}

// The split-KV kernel's arrival: one asm block that synchronises the CTA (or
// the op's named barrier), lets thread 0 count with acquire-release semantics
// at GPU scope (resetting the counter the count-th time) and ORs its verdict
// over the barrier; the counter's generic address from its metadata.
// CHECK-LABEL: func @arrival
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: %[[T:.*]] = arith.index_cast %[[TID]] : index to i32
// CHECK: %[[N:.*]] = arith.index_cast %{{.*}} : index to i32
// CHECK: %[[ASM:.*]] = llvm.inline_asm has_side_effects asm_dialect = att "{ .reg .pred %leader, %won, %any; .reg .u32 %old, %before; bar.sync 0; setp.eq.u32 %leader, $1, 0; mov.u32 %old, 0; sub.u32 %before, $3, 1; @%leader atom.acq_rel.gpu.add.u32 %old, [$2], 1; setp.eq.and.u32 %won, %old, %before, %leader; @%won st.relaxed.gpu.u32 [$2], 0; bar.red.or.pred %any, 0, %won; selp.u32 $0, 1, 0, %any; }", "=r,r,l,r,~{memory}" %[[T]], %{{.*}}, %[[N]]
// CHECK: %[[ANY:.*]] = llvm.extractvalue %[[ASM]][0]
// CHECK: arith.cmpi ne, %[[ANY]], %{{.*}} : i32
// CHECK: bar.sync 1, 128;
// CHECK-SAME: bar.red.or.pred %any, 1, 128, %won;
func.func @arrival(%c: memref<?x?xi32>, %i: index, %j: index, %n: index) -> (i1, i1) {
  %a = flashgpu.last_arrival %c[%i, %j] of %n : memref<?x?xi32>
  %b = flashgpu.last_arrival %c[%i, %j] of %n {barrier_id = 1 : i32, barrier_threads = 128 : i32} : memref<?x?xi32>
  return %a, %b : i1, i1
}

// flashgpu.per_iteration: the value through a side-effecting `mov`, which
// LLVM can neither look through nor hoist.
// CHECK-LABEL: func @per_iteration
// CHECK: %[[W:.*]] = arith.index_castui %arg0 : index to i64
// CHECK: %[[ASM:.*]] = llvm.inline_asm has_side_effects asm_dialect = att "mov.b64 $0, $1;", "=l,l" %[[W]] : (i64) -> !llvm.struct<(i64)>
// CHECK: %[[C:.*]] = llvm.extractvalue %[[ASM]][0] : !llvm.struct<(i64)>
// CHECK: %[[R:.*]] = arith.index_castui %[[C]] : i64 to index
// CHECK: return %[[R]]
func.func @per_iteration(%lane: index) -> index {
  %c = flashgpu.per_iteration %lane
  return %c : index
}

// flashgpu.exit: LLVM's NVVM exit intrinsic (PTX `exit`).
// CHECK-LABEL: func @exit_if
// CHECK: scf.if %arg0 {
// CHECK-NEXT: llvm.call_intrinsic "llvm.nvvm.exit"() : () -> ()
func.func @exit_if(%empty: i1) {
  scf.if %empty {
    flashgpu.exit
  }
  return
}
