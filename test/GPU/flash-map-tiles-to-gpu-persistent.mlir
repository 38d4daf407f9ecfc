// --flash-map-tiles-to-gpu{persistent}: the launch body is one loop over
// the tiles, tile t = the CTA's linear index + k * the grid's CTAs, so that
// any grid is correct and the launch is tagged flash.persistent; the tiles'
// buffers are allocated once before it. The tiles are taken in folded
// pairs: each two rounds give a CTA a head's row block from the end and one
// from the start (together nr + 1 key blocks under the causal mask). With
// warp-specialize the producer walks the tiles too, loads each tile's Q
// once the consumers released the previous one (Q's empty barrier, phase
// k - 1 for the CTA's k-th tile) and its key loops' ring positions run on
// across the tiles; the consumers wait for phase k of Q's full barrier and
// release Q after their last S = Q Kᵀ.
// RUN: flash-opt %s --flash-tile-attention="block-rows=128 block-cols=128" --canonicalize --cse --eliminate-empty-tensors --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=fully-dynamic-layout-map" --canonicalize --buffer-loop-hoisting --cse --flash-map-tiles-to-gpu="threads=256 tensor-cores=wgmma load-stages=2 tma-loads=1 warp-specialize=1 persistent=1" --flash-gpu-split-warp-roles="ping-pong=1" | FileCheck %s --check-prefix=PERSISTENT
// The tile order alone.
// RUN: flash-opt %s --flash-tile-attention="block-rows=128 block-cols=128" --canonicalize --cse --eliminate-empty-tensors --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=fully-dynamic-layout-map" --canonicalize --buffer-loop-hoisting --cse --flash-gpu-map-to-blocks="threads=256 persistent=1" | FileCheck %s --check-prefix=ORDER

// ORDER-LABEL: func.func @causal(
// ORDER: scf.for %[[T:[^ ]*]] = %{{[^ ]*}} to %[[TILES:[^ ]*]] step %[[G:[^ ]*]] {
// ORDER-NEXT: gpu.barrier
// In 32-bit arithmetic.
// ORDER-DAG: %[[T32:.*]] = arith.index_castui %[[T]] : index to i32
// ORDER-DAG: %[[G32:.*]] = arith.index_castui %[[G]] : index to i32
// ORDER-DAG: %[[TILES32:.*]] = arith.index_castui %[[TILES]] : index to i32
// ORDER-DAG: %[[TWOG:.*]] = arith.muli %[[G32]], %c2_i32
// ORDER-DAG: %[[PR:.*]] = arith.divui %[[TILES32]], %[[TWOG]]
// ORDER-DAG: %[[PAIRED:.*]] = arith.muli %[[PR]], %[[TWOG]]
// ORDER-DAG: %[[ROUND:.*]] = arith.divui %[[T32]], %[[G32]]
// ORDER-DAG: %[[POS:.*]] = arith.remui %[[T32]], %[[G32]]
// ORDER-DAG: %[[RP:.*]] = arith.divui %[[ROUND]], %c2_i32
// ORDER-DAG: %[[RG:.*]] = arith.muli %[[RP]], %[[G32]]
// ORDER-DAG: %[[UNIT:.*]] = arith.addi %[[RG]], %[[POS]]
// ORDER-DAG: %[[HALF:.*]] = arith.remui %[[ROUND]], %c2_i32
// ORDER-DAG: %[[U2:.*]] = arith.muli %[[UNIT]], %c2_i32
// ORDER-DAG: %[[FOLDED:.*]] = arith.addi %[[U2]], %[[HALF]]
// ORDER-DAG: %[[INPAIRS:.*]] = arith.cmpi ult, %[[T32]], %[[PAIRED]]
// ORDER: %[[F:.*]] = arith.select %[[INPAIRS]], %[[FOLDED]], %{{.*}}
// ORDER: %[[HEAD:.*]] = arith.divui %[[F]], %[[NR:[^ ]*]] :
// ORDER: %[[R:.*]] = arith.remui %[[F]], %[[NR]] :
// With an odd number of row blocks every second head starts with its middle
// one (position nr - 1 of the fold), so that the middles pair up.
// ORDER-DAG: %[[NRODD:.*]] = arith.remui %[[NR]], %c2_i32
// ORDER-DAG: %[[HEADODD:.*]] = arith.remui %[[HEAD]], %c2_i32
// ORDER: %[[SHIFTED:.*]] = arith.andi
// ORDER: %[[FIRST:.*]] = arith.cmpi eq, %[[R]], %c0_i32
// ORDER-DAG: %[[LASTB:.*]] = arith.subi %[[NR]], %c1_i32
// ORDER-DAG: %[[BEFORE:.*]] = arith.subi %[[R]], %c1_i32
// ORDER: %[[ROT:.*]] = arith.select %[[FIRST]], %[[LASTB]], %[[BEFORE]]
// ORDER: %[[R2:.*]] = arith.select %[[SHIFTED]], %[[ROT]], %[[R]]
// ORDER-DAG: %[[H:.*]] = arith.divui %[[R2]], %c2_i32
// ORDER-DAG: %[[FROMEND:.*]] = arith.subi %[[LASTB]], %[[H]]
// ORDER-DAG: %[[ODD:.*]] = arith.remui %[[R2]], %c2_i32
// ORDER-DAG: %[[EVEN:.*]] = arith.cmpi eq, %[[ODD]], %c0_i32
// ORDER: %[[ROW:.*]] = arith.select %[[EVEN]], %[[FROMEND]], %[[H]]
// ORDER: arith.index_castui %[[ROW]] : i32 to index
// ORDER: } {flash.tile_loop}
// ORDER: } {flash.persistent

// PERSISTENT-LABEL: func.func @causal(
// PERSISTENT: gpu.launch
// PERSISTENT: %[[QFULL:.*]] = builtin.unrealized_conversion_cast %{{.*}} : memref<1xi64, #gpu.address_space<workgroup>> to !nvgpu.mbarrier.group
// PERSISTENT: nvgpu.mbarrier.init %[[QFULL]][%{{.*}}], %c1
// PERSISTENT: %[[QEMPTY:.*]] = builtin.unrealized_conversion_cast %{{.*}} : memref<1xi64, #gpu.address_space<workgroup>> to !nvgpu.mbarrier.group
// PERSISTENT: nvgpu.mbarrier.init %[[QEMPTY]][%{{.*}}], %c256
// PERSISTENT: nvvm.setmaxregister decrease 56
// The producer's walk over this CTA's tiles, counting ring positions.
// PERSISTENT: scf.for %[[PT:[^ ]*]] = %[[PLB:[^ ]*]] to %{{[^ ]*}} step %[[PSTEP:[^ ]*]] iter_args(%{{[^ ]*}} = %c0{{[_0-9]*}}) -> (index) {
// PERSISTENT: %[[PREL:.*]] = arith.subi %[[PT]], %[[PLB]]
// PERSISTENT-DAG: %[[PSTEP32:.*]] = arith.index_castui %[[PSTEP]] : index to i32
// PERSISTENT-DAG: %[[PREL32:.*]] = arith.index_castui %[[PREL]] : index to i32
// PERSISTENT: %[[PK32:.*]] = arith.divui %[[PREL32]], %[[PSTEP32]] : i32
// PERSISTENT: %[[PK:.*]] = arith.index_castui %[[PK32]] : i32 to index
// PERSISTENT: %[[PK1:.*]] = arith.addi %[[PK]], %c1
// PERSISTENT: %[[PPH:.*]] = arith.remui %[[PK1]], %c2
// PERSISTENT: %[[PPAR:.*]] = arith.cmpi ne, %[[PPH]], %c0
// PERSISTENT: nvgpu.mbarrier.try_wait.parity %[[QEMPTY]][%{{.*}}], %[[PPAR]]
// PERSISTENT: nvgpu.mbarrier.arrive.expect_tx %[[QFULL]]
// PERSISTENT-COUNT-2: nvgpu.tma.async.load %{{.*}}, %[[QFULL]]
// PERSISTENT: scf.for
// PERSISTENT: nvgpu.tma.async.load
// PERSISTENT: } {flash.warp_role = "producer"}
// PERSISTENT: scf.for %[[T:[^ ]*]] = %[[LB:[^ ]*]] to %{{[^ ]*}} step %[[STEP:[^ ]*]] iter_args(%{{[^ ]*}} = %c0{{[_0-9]*}}) -> (index) {
// Every consumer is done with the previous tile's buffers.
// PERSISTENT-NOT: flashgpu.warpgroup_mma
// PERSISTENT: nvvm.barrier id = %c1_i32{{.*}} number_of_threads = %c256_i32
// PERSISTENT-NOT: nvgpu.device_async_copy
// PERSISTENT: %[[REL:.*]] = arith.subi %[[T]], %[[LB]]
// PERSISTENT-DAG: %[[STEP32:.*]] = arith.index_castui %[[STEP]] : index to i32
// PERSISTENT-DAG: %[[REL32:.*]] = arith.index_castui %[[REL]] : index to i32
// PERSISTENT: %[[K32:.*]] = arith.divui %[[REL32]], %[[STEP32]] : i32
// PERSISTENT: %[[K:.*]] = arith.index_castui %[[K32]] : i32 to index
// PERSISTENT: %[[PH:.*]] = arith.remui %[[K]], %c2
// PERSISTENT: %[[PAR:.*]] = arith.cmpi ne, %[[PH]], %c0
// PERSISTENT: nvgpu.mbarrier.try_wait.parity %[[QFULL]][%{{.*}}], %[[PAR]]
// PERSISTENT: scf.for
// PERSISTENT: flashgpu.warpgroup_mma
// Q is released in the last key loop's last iteration, once its S = Q Kᵀ is
// issued (the MMA's wait comes before the arrival), or after that loop when
// it runs no iteration.
// PERSISTENT: scf.for %[[J:[^ ]*]] = %[[JLB:[^ ]*]] to %[[JUB:[^ ]*]] step %[[JSTEP:[^ ]*]]
// PERSISTENT: flashgpu.warpgroup_mma {{.*}}flash.contraction = "scores"
// PERSISTENT-NEXT: arith.constant 256
// PERSISTENT-NEXT: nvvm.barrier.arrive
// PERSISTENT-NEXT: %[[NEXT:.*]] = arith.addi %[[J]], %[[JSTEP]]
// PERSISTENT-NEXT: %[[LAST:.*]] = arith.cmpi sge, %[[NEXT]], %[[JUB]]
// PERSISTENT-NEXT: scf.if %[[LAST]] {
// PERSISTENT: nvgpu.mbarrier.arrive %[[QEMPTY]]
// PERSISTENT-NEXT: }
// That loop is the masked one: its P V is split at key 64 (a ragged block,
// flash.ragged_keys).
// PERSISTENT: flashgpu.warpgroup_mma {{.*}}flash.contraction = "output"{{.*}}k_steps = 4
// PERSISTENT: scf.if
// PERSISTENT: flashgpu.warpgroup_mma {{.*}}flash.contraction = "output"{{.*}}k_steps = 4
// PERSISTENT: } else {
// PERSISTENT: scf.yield
// PERSISTENT-NEXT: }
// PERSISTENT: scf.yield
// PERSISTENT-NEXT: }
// PERSISTENT-NEXT: %[[NONE:.*]] = arith.cmpi sge, %[[JLB]], %[[JUB]]
// PERSISTENT-NEXT: scf.if %[[NONE]] {
// PERSISTENT: nvgpu.mbarrier.arrive %[[QEMPTY]]
// PERSISTENT-NEXT: }
// PERSISTENT-NOT: flashgpu.warpgroup_mma
// PERSISTENT: } {flash.tile_loop}
// PERSISTENT: } {flash.warp_role = "consumer"}
// PERSISTENT: } {flash.persistent,

func.func @causal(%q: tensor<?x?x?x128xf16>, %k: tensor<?x?x?x128xf16>, %v: tensor<?x?x?x128xf16>, %o: tensor<?x?x?x128xf16> {bufferization.writable = true}) -> tensor<?x?x?x128xf16> {
  %r = flash.attention %q, %k, %v {causal} : tensor<?x?x?x128xf16>, tensor<?x?x?x128xf16>, tensor<?x?x?x128xf16> -> tensor<?x?x?x128xf16>
  %w = bufferization.materialize_in_destination %r in %o : (tensor<?x?x?x128xf16>, tensor<?x?x?x128xf16>) -> tensor<?x?x?x128xf16>
  return %w : tensor<?x?x?x128xf16>
}
