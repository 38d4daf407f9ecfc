// flashgpu.warpgroup_mma, flashgpu.reduce_add, flashgpu.last_arrival and
// flashgpu.per_iteration parse, verify and print back.
// RUN: flash-opt %s | flash-opt | FileCheck %s

// CHECK-LABEL: func @scores
// CHECK: flashgpu.warpgroup_mma a_desc(%{{.*}}) b_desc(%{{.*}}) {a_rows = 128 : i64, b_k_major, b_rows = 64 : i64, element_type = bf16, k_steps = 8 : i64, n = 64 : i64, slices = 2 : i64} : vector<64xf32>
func.func @scores(%a: i32, %b: i32) -> vector<64xf32> {
  %s = flashgpu.warpgroup_mma a_desc(%a) b_desc(%b) {n = 64 : i64, k_steps = 8 : i64, slices = 2 : i64, element_type = bf16, a_rows = 128 : i64, b_rows = 64 : i64, b_k_major} : vector<64xf32>
  return %s : vector<64xf32>
}

// CHECK-LABEL: func @pv
// CHECK: flashgpu.warpgroup_mma acc(%{{.*}}) a_regs(%{{.*}} : vector<32xi32>) b_desc(%{{.*}}) {b_rows = 64 : i64, element_type = f16, k_steps = 4 : i64, n = 128 : i64, slices = 2 : i64} : vector<128xf32>
func.func @pv(%acc: vector<128xf32>, %p: vector<32xi32>, %b: i32) -> vector<128xf32> {
  %o = flashgpu.warpgroup_mma acc(%acc) a_regs(%p : vector<32xi32>) b_desc(%b) {n = 128 : i64, k_steps = 4 : i64, slices = 2 : i64, element_type = f16, b_rows = 64 : i64} : vector<128xf32>
  return %o : vector<128xf32>
}

// An async P V and the wait that returns its accumulators and keeps its A
// fragments (P) alive.
// CHECK-LABEL: func.func @pv_async
// CHECK: %[[O:.*]] = flashgpu.warpgroup_mma acc(%{{.*}}) a_regs(%{{.*}} : vector<32xi32>) b_desc(%{{.*}}) {async, b_rows = 64 : i64
// CHECK: %{{.*}}:2 = flashgpu.warpgroup_mma_wait %[[O]], %{{.*}} {pending = 1 : i64} : vector<128xf32>, vector<32xi32>
func.func @pv_async(%acc: vector<128xf32>, %p: vector<32xi32>, %b: i32) -> vector<128xf32> {
  %o = flashgpu.warpgroup_mma acc(%acc) a_regs(%p : vector<32xi32>) b_desc(%b) {n = 128 : i64, k_steps = 4 : i64, slices = 2 : i64, element_type = f16, b_rows = 64 : i64, async} : vector<128xf32>
  %w:2 = flashgpu.warpgroup_mma_wait %o, %p {pending = 1 : i64} : vector<128xf32>, vector<32xi32>
  return %w#0 : vector<128xf32>
}

// CHECK-LABEL: func @reduce_add
// CHECK: flashgpu.reduce_add %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] : f32, memref<?x128xf32, strided<[?, ?], offset: ?>>
// CHECK: flashgpu.reduce_add %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] : vector<4xf32>, memref<?x128xf32, strided<[?, ?], offset: ?>>
func.func @reduce_add(%x: f32, %v: vector<4xf32>, %d: memref<?x128xf32, strided<[?, ?], offset: ?>>, %i: index, %j: index) {
  flashgpu.reduce_add %x, %d[%i, %j] : f32, memref<?x128xf32, strided<[?, ?], offset: ?>>
  flashgpu.reduce_add %v, %d[%i, %j] : vector<4xf32>, memref<?x128xf32, strided<[?, ?], offset: ?>>
  return
}

// CHECK-LABEL: func @arrival
// CHECK: flashgpu.last_arrival %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] of %{{.*}} : memref<?x?x?xi32>
// CHECK: flashgpu.last_arrival %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] of %{{.*}} {barrier_id = 1 : i32, barrier_threads = 128 : i32} : memref<?x?x?xi32>
func.func @arrival(%c: memref<?x?x?xi32>, %i: index, %n: index) -> (i1, i1) {
  %a = flashgpu.last_arrival %c[%i, %i, %i] of %n : memref<?x?x?xi32>
  %b = flashgpu.last_arrival %c[%i, %i, %i] of %n {barrier_id = 1 : i32, barrier_threads = 128 : i32} : memref<?x?x?xi32>
  return %a, %b : i1, i1
}

// CHECK-LABEL: func @per_iteration
// CHECK: %[[C:.*]] = flashgpu.per_iteration %arg0
// CHECK: return %[[C]] : index
func.func @per_iteration(%lane: index) -> index {
  %c = flashgpu.per_iteration %lane
  return %c : index
}
