// --flash-gpu-carve-shared-memory on its own: every tile buffer of a launch
// that --flash-gpu-assign-tile-storage left to shared memory becomes a view
// of the dynamic shared memory, at the lowest offset free while it is live
// (tiles whose live ranges do not overlap share bytes); register and
// accumulator tiles are left alone. The launch records the size.
// RUN: flash-opt %s --allow-unregistered-dialect --split-input-file --flash-gpu-carve-shared-memory | FileCheck %s

// With register tiles (the warp mapping reads shared tiles with ldmatrix)
// rows of an even number of 16-byte units get 16 bytes of padding: Q's
// 128-byte rows become 144-byte ones. O is dead before %late is made, so
// %late takes O's bytes; S stays in registers.
// CHECK-LABEL: func.func @padded(
// CHECK: gpu.launch {{.*}} dynamic_shared_memory_size %[[SIZE:.*]]
// CHECK: %[[BASE:.*]] = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// CHECK: %[[AT0:.*]] = arith.constant 0 : index
// CHECK: %[[QV:.*]] = memref.view %[[BASE]][%[[AT0]]][] : {{.*}} to memref<64x72xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[QS:.*]] = memref.subview %[[QV]][0, 0] [64, 64] [1, 1]
// CHECK: %[[Q:.*]] = memref.memory_space_cast %[[QS]] : memref<64x64xbf16, strided<[72, 1]>, #gpu.address_space<workgroup>> to memref<64x64xbf16, strided<[72, 1]>>
// CHECK: %[[AT1:.*]] = arith.constant 9216 : index
// CHECK: memref.view %[[BASE]][%[[AT1]]][] : {{.*}} to memref<64x72xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[AT2:.*]] = arith.constant 9216 : index
// CHECK: memref.view %[[BASE]][%[[AT2]]][] : {{.*}} to memref<16xf32, #gpu.address_space<workgroup>>
// CHECK: %[[S:.*]] = memref.alloc() {flash.tile_storage = "registers"} : memref<64x64xf32>
// CHECK: "test.use"(%[[Q]], %{{.*}}, %[[S]])
// CHECK-NOT: memref.alloc() :
// CHECK: } {flash.register_rows = 64 : i64, flash.shared_memory_bytes = 18432 : i64}
func.func @padded() {
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %q = memref.alloc() : memref<64x64xbf16>
    %o = memref.alloc() : memref<64x64xbf16>
    %s = memref.alloc() {flash.tile_storage = "registers"} : memref<64x64xf32>
    "test.use"(%q, %o, %s) : (memref<64x64xbf16>, memref<64x64xbf16>, memref<64x64xf32>) -> ()
    %late = memref.alloc() : memref<16xf32>
    "test.use"(%q, %late) : (memref<64x64xbf16>, memref<16xf32>) -> ()
    gpu.terminator
  } {flash.register_rows = 64 : i64}
  return
}

// -----

// Tiles read by warpgroup MMA are swizzled: unpadded, 1024-byte aligned,
// their cast tagged for the steps that compute swizzled offsets and
// descriptors; the kernel traps if the window's base is misaligned. The
// accumulators-only C takes no bytes.
// CHECK-LABEL: func.func @swizzled(
// CHECK: %[[BASE:.*]] = gpu.dynamic_shared_memory
// CHECK: %[[ADDR:.*]] = memref.extract_aligned_pointer_as_index %[[BASE]]
// CHECK: arith.remui %[[ADDR]], %c1024
// CHECK: scf.if
// CHECK-NEXT: llvm.intr.trap
// CHECK: memref.view %[[BASE]][%{{.*}}][] : {{.*}} to memref<64x64xbf16, #gpu.address_space<workgroup>>
// CHECK: memref.memory_space_cast {{.*}} {flash.swizzled_128b}
// CHECK: %[[AT:.*]] = arith.constant 8192 : index
// CHECK: memref.view %[[BASE]][%[[AT]]][] : {{.*}} to memref<4xf32, #gpu.address_space<workgroup>>
// CHECK: %[[AT2:.*]] = arith.constant 9216 : index
// CHECK: memref.view %[[BASE]][%[[AT2]]][] : {{.*}} to memref<64x64xbf16, #gpu.address_space<workgroup>>
// CHECK: memref.alloc() {flash.tile_storage = "accumulators"} : memref<64x64xf32>
// CHECK: } {flash.register_rows = 64 : i64, flash.shared_memory_bytes = 17408 : i64, flash.wgmma}
func.func @swizzled() {
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %q = memref.alloc() {flash.tile_storage = "swizzled"} : memref<64x64xbf16>
    %row = memref.alloc() : memref<4xf32>
    %k = memref.alloc() {flash.tile_storage = "swizzled"} : memref<64x64xbf16>
    %c = memref.alloc() {flash.tile_storage = "accumulators"} : memref<64x64xf32>
    "test.use"(%q, %row, %k, %c) : (memref<64x64xbf16>, memref<4xf32>, memref<64x64xbf16>, memref<64x64xf32>) -> ()
    gpu.terminator
  } {flash.register_rows = 64 : i64, flash.wgmma}
  return
}

// -----

// Without register tiles (the SIMT mapping) rows stay unpadded; a launch
// without tiles has no shared memory.
// CHECK-LABEL: func.func @plain(
// CHECK: memref.view {{.*}} to memref<64x64xbf16, #gpu.address_space<workgroup>>
// CHECK-NEXT: memref.memory_space_cast %{{.*}} : memref<64x64xbf16, #gpu.address_space<workgroup>> to memref<64x64xbf16>
// CHECK: } {flash.shared_memory_bytes = 8192 : i64}
// CHECK: } {flash.shared_memory_bytes = 0 : i64}
func.func @plain() {
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %q = memref.alloc() : memref<64x64xbf16>
    "test.use"(%q) : (memref<64x64xbf16>) -> ()
    gpu.terminator
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    gpu.terminator
  }
  return
}

// -----

// A view of a padded tile keeps the padded row stride, and its rank: a row
// of the split-KV merge's column tiles is a rank-1 view.
// CHECK-LABEL: func.func @padded_row(
// CHECK: %[[T:.*]] = memref.memory_space_cast %{{.*}} : memref<4x32xbf16, strided<[40, 1]>, #gpu.address_space<workgroup>> to memref<4x32xbf16, strided<[40, 1]>>
// CHECK: %[[ROW:.*]] = memref.subview %[[T]][1, 0] [1, 32] [1, 1] : memref<4x32xbf16, strided<[40, 1]>> to memref<32xbf16, strided<[1], offset: 40>>
// CHECK: "test.use"(%[[ROW]])
func.func @padded_row() {
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %t = memref.alloc() : memref<4x32xbf16>
    %row = memref.subview %t[1, 0] [1, 32] [1, 1] : memref<4x32xbf16> to memref<32xbf16, strided<[1], offset: 32>>
    "test.use"(%row) : (memref<32xbf16, strided<[1], offset: 32>>) -> ()
    gpu.terminator
  } {flash.register_rows = 64 : i64}
  return
}

// -----

// A reduction stage (the atomic backward's dQ sums with staged-reductions)
// is unpadded even with register tiles and 1024-byte aligned, carved as
// [2, rows, cols]: two copies, written in turn by the MMA lowering (in
// TMA's swizzled panels), the tile a view of the first. Here it follows a
// 1040-byte tile live with it, so it starts at 2048 (1152 at the 128-byte
// alignment of plain tiles) and the launch needs 2048 + 2 x 32 KiB.
// CHECK-LABEL: func.func @reduction_stage(
// CHECK: %[[BASE:.*]] = gpu.dynamic_shared_memory
// CHECK: %[[AT:.*]] = arith.constant 2048 : index
// CHECK: %[[V:.*]] = memref.view %[[BASE]][%[[AT]]][] : {{.*}} to memref<2x64x128xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT: %[[FIRST:.*]] = memref.subview %[[V]][0, 0, 0] [1, 64, 128] [1, 1, 1] : memref<2x64x128xf32, #gpu.address_space<workgroup>> to memref<64x128xf32, strided<[128, 1]>, #gpu.address_space<workgroup>>
// CHECK-NEXT: %[[DQ:.*]] = memref.memory_space_cast %[[FIRST]] {flash.reduction_stage} : memref<64x128xf32, strided<[128, 1]>, #gpu.address_space<workgroup>> to memref<64x128xf32, strided<[128, 1]>>
// CHECK: "test.use"(%{{.*}}, %[[DQ]])
// CHECK: } {flash.register_rows = 64 : i64, flash.shared_memory_bytes = 67584 : i64}
func.func @reduction_stage() {
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1) {
    %rows = memref.alloc() : memref<260xf32>
    %dq = memref.alloc() {flash.tile_storage = "reduction_stage"} : memref<64x128xf32>
    "test.use"(%rows, %dq) : (memref<260xf32>, memref<64x128xf32>) -> ()
    gpu.terminator
  } {flash.register_rows = 64 : i64}
  return
}
