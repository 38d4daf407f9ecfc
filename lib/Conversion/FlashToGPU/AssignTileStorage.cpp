//===- AssignTileStorage.cpp - where each tile of a launch lives -*- C++ -*-//
//
// Part of the flash-mlir project.
//
// --flash-gpu-assign-tile-storage: decides, from the ops on each tile buffer
// of a launch, whether it lives in warp registers, in swizzled or plain
// shared memory, or only in a contraction's accumulators, and records the
// decision (flash.tile_storage, flash.register_rows, flash.wgmma) for the
// steps that carve shared memory and rewrite the ops.
//
//===----------------------------------------------------------------------===//

#include "flash/Conversion/Passes.h"

#include "GpuMapping.h"
#include "StagedReductions.h"
#include "TileContraction.h"
#include "WarpRegisterTiles.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir::flash {
#define GEN_PASS_DEF_FLASHGPUASSIGNTILESTORAGEPASS
#include "flash/Conversion/Passes.h.inc"
} // namespace mlir::flash

using namespace mlir;
using flash::Chip;
using flash::stringifyChip;
using flash::TensorCores;

/// The Cs of the contractions whose zero-filled result goes only to a
/// `flash.atomic_add` (the atomic backward's dS K): the mapping keeps them
/// in registers (emitWarpMmaReduce, emitWarpgroupMmaReduce), so they get no
/// shared memory (32 KiB at D = 128), unless `staged` (wgmma launches with
/// staged-reductions, `warpgroups` sharing the contraction) and the sums
/// can go by TMA tensor reductions: then they get a `"reduction_stage"`.
static void assignReducedCs(gpu::LaunchOp launch, bool staged,
                            int64_t warpgroups) {
  launch.getBody().walk([&](linalg::GenericOp op) {
    auto m = flash::matchTileContraction(op);
    if (!m)
      return;
    auto alloc = m->c.getDefiningOp<memref::AllocOp>();
    flash::AtomicAddOp atomic =
        alloc && flash::findZeroFill(op, m->c)
            ? flash::findAtomicAddOfResult(op, m->c)
            : flash::AtomicAddOp();
    if (!atomic || flash::getTileStorage(alloc))
      return;
    flash::setTileStorage(
        alloc, staged && flash::matchStagedReduction(atomic, m->c, warpgroups)
                   ? flash::TileStorage::ReductionStage
                   : flash::TileStorage::Accumulators);
  });
}

/// A contraction reads a transposed A (the nondeterministic backward's
/// dS = (dSᵀ)ᵀ) from shared memory only, with ldmatrix.trans: its A is
/// first copied into a shared tile of its own, then every thread waits (in
/// a register-tile kernel the lanes that own the rows write them).
static void stageTransposedOperands(gpu::LaunchOp launch) {
  SmallVector<linalg::GenericOp> ops;
  launch.getBody().walk([&](linalg::GenericOp op) {
    if (auto m = flash::matchTileContraction(op); m && m->transposeA)
      ops.push_back(op);
  });
  for (linalg::GenericOp op : ops) {
    OpOperand *a = op.getDpsInputOperand(0);
    auto type = cast<MemRefType>(a->get().getType());
    // Allocated where A is (the loops were hoisted out of its buffer).
    OpBuilder b(op);
    if (Operation *def = a->get().getDefiningOp<memref::AllocOp>())
      b.setInsertionPointAfter(def);
    Value staged = memref::AllocOp::create(
        b, op.getLoc(),
        MemRefType::get(type.getShape(), type.getElementType()));
    b.setInsertionPoint(op);
    memref::CopyOp::create(b, op.getLoc(), a->get(), staged);
    gpu::BarrierOp::create(b, op.getLoc());
    a->set(staged);
  }
}

namespace {
struct FlashGpuAssignTileStoragePass
    : flash::impl::FlashGpuAssignTileStoragePassBase<
          FlashGpuAssignTileStoragePass> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<gpu::LaunchOp> launches =
        flash::collectLaunches(getOperation());
    // Hopper's warpgroup MMA exists on sm_90a only.
    TensorCores cores = flash::resolveTensorCores(tensorCores, chip);
    if (cores == TensorCores::Wgmma && chip != Chip::Any &&
        chip != Chip::Sm90a && !launches.empty()) {
      launches.front().emitError(
          "flash-gpu-assign-tile-storage: tensor-cores=wgmma needs "
          "chip=sm_90a (Hopper's warpgroup MMA), not ")
          << stringifyChip(chip);
      return signalPassFailure();
    }
    // Only where the mma.sync or wgmma lowerings will take them (WMMA's
    // fragment loads read neither reduced Cs nor swizzled tiles).
    bool mmaSync = cores == TensorCores::MmaSync ||
                   cores == TensorCores::Auto || cores == TensorCores::Wgmma;
    for (gpu::LaunchOp launch : launches) {
      FailureOr<int64_t> threads =
          flash::launchThreads(launch, "flash-gpu-assign-tile-storage");
      if (failed(threads))
        return signalPassFailure();
      stageTransposedOperands(launch);
      flash::WarpRegisterTiles inRegisters(launch, *threads / 32);
      if (registerTiles && *threads % 32 == 0 && cores != TensorCores::None)
        inRegisters.analyze(cores == TensorCores::Wgmma && asyncCopies,
                            swizzleLdmatrix && asyncCopies && mmaSync);
      inRegisters.record();
      // TMA reductions read shared memory; the wgmma lowering stages.
      if (mmaSync)
        assignReducedCs(launch,
                        stagedReductions && launch->hasAttr(flash::kWgmmaAttr),
                        *threads / 128);
    }
  }
};
} // namespace
