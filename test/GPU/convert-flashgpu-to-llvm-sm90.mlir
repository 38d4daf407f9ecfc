// --convert-flashgpu-to-llvm with what sm_90 adds: a vector reduce_add as
// one vector `red` (vector-reductions, which the GPU pipeline sets for
// sm_90a; without, one `red` per element off one address), and a warpgroup MMA whose A is read m-major (the atomic
// backward's dS from the staged dSᵀ): transpose-a set, its descriptor
// advanced 16 rows (2,048 bytes) per k step.
// RUN: flash-opt %s --convert-flashgpu-to-llvm=vector-reductions --cse | FileCheck %s
// RUN: flash-opt %s --convert-flashgpu-to-llvm --cse | FileCheck %s --check-prefix=SCALAR

// CHECK-LABEL: func @reduce_pair
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att
// CHECK-SAME: "{ .reg .u64 %g; cvta.to.global.u64 %g, $0; red.relaxed.gpu.global.add.v2.f32 [%g], {$1, $2}; }"
// CHECK-SAME: "l,f,f,~{memory}"
// SCALAR-LABEL: func @reduce_pair
// SCALAR: red.relaxed.gpu.global.add.f32 [%g+0], $1; red.relaxed.gpu.global.add.f32 [%g+4], $2;
func.func @reduce_pair(%v: vector<2xf32>, %d: memref<?x128xf32, strided<[?, 1], offset: ?>>, %i: index, %j: index) {
  flashgpu.reduce_add %v, %d[%i, %j] : vector<2xf32>, memref<?x128xf32, strided<[?, 1], offset: ?>>
  return
}

// The constant terms of a vector reduction's innermost index (unit stride)
// become the immediate offset, so the reductions of one row share one
// address; the innermost stride is not multiplied in. The same for the
// scalar reductions of a vector (sm_80): one address, immediates per element.
// CHECK-LABEL: func @reduce_row
// CHECK: %strides:2 = memref.extract_strided_metadata
// CHECK-NOT: %strides#1
// CHECK: llvm.inline_asm
// CHECK-SAME: red.relaxed.gpu.global.add.v2.f32 [%g+32], {$1, $2};
// CHECK-SAME: "l,f,f,~{memory}" %[[ADDRESS:[0-9]+]],
// CHECK: llvm.inline_asm
// CHECK-SAME: red.relaxed.gpu.global.add.v2.f32 [%g+64], {$1, $2};
// CHECK-SAME: "l,f,f,~{memory}" %[[ADDRESS]],
// CHECK: llvm.inline_asm
// CHECK-SAME: red.relaxed.gpu.global.add.v2.f32 [%g], {$1, $2};
// CHECK-SAME: "l,f,f,~{memory}" %[[ADDRESS]],
// SCALAR-LABEL: func @reduce_row
// SCALAR: %strides:2 = memref.extract_strided_metadata
// SCALAR-NOT: %strides#1
// SCALAR: red.relaxed.gpu.global.add.f32 [%g+32], $1; red.relaxed.gpu.global.add.f32 [%g+36], $2;
// SCALAR-SAME: %[[A:[0-9]+]],
// SCALAR: red.relaxed.gpu.global.add.f32 [%g+64], $1; red.relaxed.gpu.global.add.f32 [%g+68], $2;
// SCALAR-SAME: %[[A]],
// SCALAR: red.relaxed.gpu.global.add.f32 [%g+0], $1; red.relaxed.gpu.global.add.f32 [%g+4], $2;
// SCALAR-SAME: %[[A]],
func.func @reduce_row(%v: vector<2xf32>, %d: memref<?x128xf32, strided<[?, ?], offset: ?>>, %i: index, %j: index) {
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %a = arith.addi %j, %c8 : index
  %b = arith.addi %c16, %j : index
  flashgpu.reduce_add %v, %d[%i, %a] : vector<2xf32>, memref<?x128xf32, strided<[?, ?], offset: ?>>
  flashgpu.reduce_add %v, %d[%i, %b] : vector<2xf32>, memref<?x128xf32, strided<[?, ?], offset: ?>>
  flashgpu.reduce_add %v, %d[%i, %j] : vector<2xf32>, memref<?x128xf32, strided<[?, ?], offset: ?>>
  return
}

// CHECK-LABEL: func @m_major_a
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att
// CHECK-SAME: add.u32 t, $32, 0;\0Amov.b64 da
// CHECK-SAME: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16
// CHECK-SAME: da, db, z, 1, 1, 1, 1;
// CHECK-SAME: add.u32 t, $32, 128;\0Amov.b64 da
// CHECK-SAME: da, db, p, 1, 1, 1, 1;
func.func @m_major_a(%a: i32, %b: i32) -> vector<32xf32> {
  %s = flashgpu.warpgroup_mma a_desc(%a) b_desc(%b) {n = 64 : i64, k_steps = 2 : i64, slices = 1 : i64, element_type = bf16, a_rows = 128 : i64, b_rows = 128 : i64, a_m_major} : vector<32xf32>
  return %s : vector<32xf32>
}
