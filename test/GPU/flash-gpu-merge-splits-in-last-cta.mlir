// --flash-gpu-merge-splits-in-last-cta on its own: in a function with a
// "split_counters" argument the split-KV nest (flash.key_split_rows = Br)
// takes over the merge nest after it (flash.merge_rows rows an iteration):
// each iteration arrives at its query block's counter (x / S, S the leading
// size of o_split) and the last run to arrive runs the merge's iterations of
// the block's rows (Br / merge rows of them, clamped to the merge's bound).
// Pure ops between the nests move before the first; the merge's tiles are
// allocated once before the arrival's branch. Without the argument, or
// where the split nest does not say its rows, nothing changes.
// RUN: flash-opt %s --split-input-file --flash-gpu-merge-splits-in-last-cta -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @pair(
// CHECK-SAME: %[[OS:[a-z0-9]+]]: memref<?x?x?x?x4xf32> {flash.workspace = "o_split"}
// CHECK-SAME: %[[CNT:[a-z0-9]+]]: memref<?x?x?xi32> {flash.workspace = "split_counters"}
// CHECK: %[[RB:.*]] = arith.ceildivsi %{{.*}}, %c2
// CHECK-NEXT: scf.forall (%[[B:.*]], %[[H:.*]], %[[X:.*]]) in
// CHECK: memref.store %{{.*}}, %[[OS]]
// CHECK: %[[S:.*]] = memref.dim %[[OS]], %{{.*}} : memref<?x?x?x?x4xf32>
// CHECK: %[[QB:.*]] = arith.divui %[[X]], %[[S]]
// CHECK: %[[LAST:.*]] = flashgpu.last_arrival %[[CNT]][%[[B]], %[[H]], %[[QB]]] of %[[S]]
// CHECK: %[[TILE:.*]] = memref.alloc() : memref<2x4xf32>
// CHECK: scf.if %[[LAST]] {
// CHECK: %[[PER:.*]] = arith.constant 32 : index
// CHECK: %[[FIRST:.*]] = arith.muli %[[QB]], %[[PER]]
// CHECK: %[[NEXT:.*]] = arith.addi %[[FIRST]], %[[PER]]
// CHECK: %[[END:.*]] = arith.minui %[[NEXT]], %[[RB]]
// CHECK: scf.for %[[R:.*]] = %[[FIRST]] to %[[END]] step
// CHECK: linalg.fill ins(%{{.*}}) outs(%[[TILE]]
// CHECK: memref.load %[[OS]][%{{.*}}, %[[B]], %[[H]], %[[R]], %{{.*}}]
// CHECK: } {flash.key_split_rows = 64 : i64}
// CHECK-NOT: scf.forall
// CHECK: return
func.func @pair(%o: memref<?x?x?x4xf32>, %os: memref<?x?x?x?x4xf32> {flash.workspace = "o_split"}, %cnt: memref<?x?x?xi32> {flash.workspace = "split_counters"}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %x = arith.constant 1.0 : f32
  %b = memref.dim %o, %c0 : memref<?x?x?x4xf32>
  %h = memref.dim %o, %c1 : memref<?x?x?x4xf32>
  %m = memref.dim %o, %c2 : memref<?x?x?x4xf32>
  %s = memref.dim %os, %c0 : memref<?x?x?x?x4xf32>
  %qb = arith.ceildivsi %m, %s : index
  scf.forall (%i, %j, %k) in (%b, %h, %qb) {
    %run = arith.remui %k, %s : index
    memref.store %x, %os[%run, %i, %j, %c0, %c0] : memref<?x?x?x?x4xf32>
  } {flash.key_split_rows = 64 : i64}
  %rb = arith.ceildivsi %m, %c2 : index
  scf.forall (%i, %j, %r) in (%b, %h, %rb) {
    %tile = memref.alloc() : memref<2x4xf32>
    linalg.fill ins(%x : f32) outs(%tile : memref<2x4xf32>)
    %v = memref.load %os[%c0, %i, %j, %r, %c3] : memref<?x?x?x?x4xf32>
    memref.store %v, %tile[%c0, %c0] : memref<2x4xf32>
    %w = memref.load %tile[%c0, %c0] : memref<2x4xf32>
    memref.store %w, %o[%i, %j, %r, %c0] : memref<?x?x?x4xf32>
  } {flash.block_threads = 256 : i64, flash.dependent_launch, flash.merge_rows = 2 : i64}
  return
}

// -----

// Without counters the pair stays two nests.
// CHECK-LABEL: func.func @no_counters(
// CHECK-NOT: flashgpu.last_arrival
// CHECK: } {flash.key_split_rows = 64 : i64}
// CHECK: } {flash.block_threads = 256 : i64, flash.dependent_launch, flash.merge_rows = 2 : i64}
func.func @no_counters(%o: memref<?x?x?x4xf32>, %os: memref<?x?x?x?x4xf32> {flash.workspace = "o_split"}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %x = arith.constant 1.0 : f32
  %b = memref.dim %o, %c0 : memref<?x?x?x4xf32>
  scf.forall (%i, %j, %k) in (%b, %b, %b) {
    memref.store %x, %os[%k, %i, %j, %c0, %c0] : memref<?x?x?x?x4xf32>
  } {flash.key_split_rows = 64 : i64}
  scf.forall (%i, %j, %r) in (%b, %b, %b) {
    memref.store %x, %o[%i, %j, %r, %c0] : memref<?x?x?x4xf32>
  } {flash.block_threads = 256 : i64, flash.dependent_launch, flash.merge_rows = 2 : i64}
  return
}

// -----

// A split nest that does not say its rows (packed sequences) keeps its merge.
// CHECK-LABEL: func.func @unmarked(
// CHECK-NOT: flashgpu.last_arrival
// CHECK: scf.forall
// CHECK: } {flash.merge_rows = 2 : i64}
func.func @unmarked(%o: memref<?x?x?x4xf32>, %os: memref<?x?x?x?x4xf32> {flash.workspace = "o_split"}, %cnt: memref<?x?x?xi32> {flash.workspace = "split_counters"}) {
  %c0 = arith.constant 0 : index
  %x = arith.constant 1.0 : f32
  %b = memref.dim %o, %c0 : memref<?x?x?x4xf32>
  scf.forall (%i, %j, %k) in (%b, %b, %b) {
    memref.store %x, %os[%k, %i, %j, %c0, %c0] : memref<?x?x?x?x4xf32>
  }
  scf.forall (%i, %j, %r) in (%b, %b, %b) {
    memref.store %x, %o[%i, %j, %r, %c0] : memref<?x?x?x4xf32>
  } {flash.merge_rows = 2 : i64}
  return
}

// -----

func.func @not_adjacent(%o: memref<?x?x?x4xf32>, %os: memref<?x?x?x?x4xf32> {flash.workspace = "o_split"}, %cnt: memref<?x?x?xi32> {flash.workspace = "split_counters"}) {
  %c0 = arith.constant 0 : index
  %x = arith.constant 1.0 : f32
  %b = memref.dim %o, %c0 : memref<?x?x?x4xf32>
  scf.forall (%i, %j, %k) in (%b, %b, %b) {
    memref.store %x, %os[%k, %i, %j, %c0, %c0] : memref<?x?x?x?x4xf32>
  } {flash.key_split_rows = 64 : i64}
  memref.store %x, %o[%c0, %c0, %c0, %c0] : memref<?x?x?x4xf32>
  // expected-error @+1 {{flash-gpu-merge-splits-in-last-cta: the merge nest must follow its split nest with only pure ops between them, not memref.store}}
  scf.forall (%i, %j, %r) in (%b, %b, %b) {
    memref.store %x, %o[%i, %j, %r, %c0] : memref<?x?x?x4xf32>
  } {flash.merge_rows = 2 : i64}
  return
}

// -----

func.func @rows(%o: memref<?x?x?x4xf32>, %os: memref<?x?x?x?x4xf32> {flash.workspace = "o_split"}, %cnt: memref<?x?x?xi32> {flash.workspace = "split_counters"}) {
  %c0 = arith.constant 0 : index
  %x = arith.constant 1.0 : f32
  %b = memref.dim %o, %c0 : memref<?x?x?x4xf32>
  scf.forall (%i, %j, %k) in (%b, %b, %b) {
    memref.store %x, %os[%k, %i, %j, %c0, %c0] : memref<?x?x?x?x4xf32>
  } {flash.key_split_rows = 64 : i64}
  // expected-error @+1 {{flash-gpu-merge-splits-in-last-cta: the merge's rows per iteration (3) must divide the split nest's query block (64)}}
  scf.forall (%i, %j, %r) in (%b, %b, %b) {
    memref.store %x, %o[%i, %j, %r, %c0] : memref<?x?x?x4xf32>
  } {flash.merge_rows = 3 : i64}
  return
}

// -----

func.func @heads(%o: memref<?x?x?x4xf32>, %os: memref<?x?x?x?x4xf32> {flash.workspace = "o_split"}, %cnt: memref<?x?x?xi32> {flash.workspace = "split_counters"}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %x = arith.constant 1.0 : f32
  %b = memref.dim %o, %c0 : memref<?x?x?x4xf32>
  %h = memref.dim %o, %c1 : memref<?x?x?x4xf32>
  scf.forall (%i, %j, %k) in (%b, %b, %b) {
    memref.store %x, %os[%k, %i, %j, %c0, %c0] : memref<?x?x?x?x4xf32>
  } {flash.key_split_rows = 64 : i64}
  // expected-error @+1 {{flash-gpu-merge-splits-in-last-cta: the merge nest's (batch, head) dims must be the split nest's}}
  scf.forall (%i, %j, %r) in (%b, %h, %b) {
    memref.store %x, %o[%i, %j, %r, %c0] : memref<?x?x?x4xf32>
  } {flash.merge_rows = 2 : i64}
  return
}

// -----

// expected-error @+1 {{flash-gpu-merge-splits-in-last-cta: the "split_counters" argument must be an i32 memref of rank 3 (batch, head, query block) beside an "o_split" memref}}
func.func @counter_type(%cnt: memref<?x?xi32> {flash.workspace = "split_counters"}) {
  return
}
