//===- MergeSplitsInLastCta.cpp - split-KV's merge in its last CTA -*- C++ -*-//
//
// Part of the flash-mlir project.
//
// --flash-gpu-merge-splits-in-last-cta: the split-KV nest takes over the
// merge nest after it; the last run of each query block to finish merges the
// block's partial results, so that the pair is one launch.
//
//===----------------------------------------------------------------------===//

#include "flash/Conversion/Passes.h"
#include "flash/Dialect/Flash/IR/FlashDialect.h"
#include "flash/Dialect/Flash/IR/TileRoles.h"
#include "flash/Dialect/FlashGPU/IR/FlashGPUOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::flash {
#define GEN_PASS_DEF_FLASHGPUMERGESPLITSINLASTCTAPASS
#include "flash/Conversion/Passes.h.inc"
} // namespace mlir::flash

using namespace mlir;

static constexpr StringLiteral kPassName = "flash-gpu-merge-splits-in-last-cta";

/// The argument of `func` tagged `flash.workspace = tag`, or null.
static Value taggedArgument(func::FuncOp func, StringRef tag) {
  for (BlockArgument arg : func.getArguments())
    if (auto t = func.getArgAttrOfType<StringAttr>(
            arg.getArgNumber(), flash::FlashDialect::kWorkspaceAttrName);
        t && t.getValue() == tag)
      return arg;
  return {};
}

/// Whether `forall` is a bufferized nest that iterates from zero in unit
/// steps over three dims.
static bool isPlainNest(scf::ForallOp forall) {
  return forall.getRank() == 3 && forall.getOutputs().empty() &&
         llvm::all_of(forall.getMixedLowerBound(),
                      [](OpFoldResult lb) { return isZeroInteger(lb); }) &&
         llvm::all_of(forall.getMixedStep(),
                      [](OpFoldResult st) { return isOneInteger(st); });
}

/// Merges `merge` into the split nest before it; leaves the pair alone
/// where the split nest does not say its query blocks' rows.
static LogicalResult mergeInLastCta(scf::ForallOp merge, Value counters,
                                    Value partialOut) {
  auto fail = [&](Operation *at, const Twine &why) {
    return at->emitError(kPassName) << ": " << why;
  };
  // The split nest: the forall before the merge, past pure ops that the
  // tiler put between them (the merge's bounds), which move before it.
  SmallVector<Operation *> between;
  Operation *prev = merge->getPrevNode();
  for (; prev && !isa<scf::ForallOp>(prev); prev = prev->getPrevNode()) {
    if (!isMemoryEffectFree(prev) || prev->getNumRegions())
      return fail(merge, "the merge nest must follow its split nest with "
                         "only pure ops between them, not ")
             << prev->getName();
    between.push_back(prev);
  }
  auto split = dyn_cast_or_null<scf::ForallOp>(prev);
  if (!split)
    return fail(merge, "the merge nest follows no split nest");
  auto rowsAttr =
      split->getAttrOfType<IntegerAttr>(flash::kKeySplitRowsAttrName);
  if (!rowsAttr)
    return success();
  int64_t mergeRows =
      merge->getAttrOfType<IntegerAttr>(flash::kMergeRowsAttrName).getInt();
  int64_t blockRows = rowsAttr.getInt();
  if (mergeRows <= 0 || blockRows <= 0 || blockRows % mergeRows != 0)
    return fail(merge, "the merge's rows per iteration (")
           << mergeRows << ") must divide the split nest's query block ("
           << blockRows << ")";
  if (!isPlainNest(split) || !isPlainNest(merge))
    return fail(merge, "expected bufferized nests over three dims from zero "
                       "in unit steps");
  SmallVector<OpFoldResult> splitBounds = split.getMixedUpperBound();
  SmallVector<OpFoldResult> mergeBounds = merge.getMixedUpperBound();
  for (int d = 0; d < 2; ++d)
    if (!isEqualConstantIntOrValue(splitBounds[d], mergeBounds[d]))
      return fail(merge, "the merge nest's (batch, head) dims must be the "
                         "split nest's");
  for (Operation *op : llvm::reverse(between))
    op->moveBefore(split);

  Location loc = merge.getLoc();
  OpBuilder b(split.getTerminator());
  SmallVector<Value> ivs = split.getInductionVars();
  auto idx = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  Value runs = memref::DimOp::create(b, loc, partialOut, idx(0));
  Value queryBlock = arith::DivUIOp::create(b, loc, ivs[2], runs);
  Value last = flashgpu::LastArrivalOp::create(
      b, loc, counters, ValueRange{ivs[0], ivs[1], queryBlock}, runs,
      /*barrier_id=*/nullptr, /*barrier_threads=*/nullptr);
  auto ifLast = scf::IfOp::create(b, loc, last, /*withElseRegion=*/false);
  b.setInsertionPointToStart(ifLast.thenBlock());
  Value perBlock = idx(blockRows / mergeRows);
  Value first = arith::MulIOp::create(b, loc, queryBlock, perBlock);
  Value end = arith::MinUIOp::create(
      b, loc, arith::AddIOp::create(b, loc, first, perBlock),
      getValueOrCreateConstantIndexOp(b, loc, mergeBounds[2]));
  auto rows = scf::ForOp::create(b, loc, first, end, idx(1));
  b.setInsertionPoint(rows.getBody()->getTerminator());
  IRMapping mapping;
  SmallVector<Value> mergeIvs = merge.getInductionVars();
  mapping.map(mergeIvs[0], ivs[0]);
  mapping.map(mergeIvs[1], ivs[1]);
  mapping.map(mergeIvs[2], rows.getInductionVar());
  for (Operation &op : merge.getBody()->without_terminator())
    b.clone(op, mapping);
  // The merge's tiles (static) once for all its row blocks, beside the
  // split nest's, which the mapping's storage passes see at the top level;
  // their deallocations after the last.
  for (Operation &op : llvm::make_early_inc_range(*rows.getBody()))
    if (auto alloc = dyn_cast<memref::AllocOp>(&op);
        alloc && alloc->getNumOperands() == 0) {
      alloc->moveBefore(ifLast);
      for (Operation *user : llvm::make_early_inc_range(alloc->getUsers()))
        if (isa<memref::DeallocOp>(user))
          user->moveAfter(ifLast);
    }
  merge.erase();
  return success();
}

namespace {
struct FlashGpuMergeSplitsInLastCtaPass
    : flash::impl::FlashGpuMergeSplitsInLastCtaPassBase<
          FlashGpuMergeSplitsInLastCtaPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    Value counters = taggedArgument(func, flash::kSplitCountersWorkspace);
    if (!counters)
      return;
    auto countersType = dyn_cast<MemRefType>(counters.getType());
    Value partialOut = taggedArgument(func, "o_split");
    if (!countersType || countersType.getRank() != 3 ||
        !countersType.getElementType().isInteger(32) || !partialOut ||
        !isa<MemRefType>(partialOut.getType())) {
      func.emitError(kPassName)
          << ": the \"" << flash::kSplitCountersWorkspace
          << "\" argument must be an i32 memref of rank 3 (batch, head, "
             "query block) beside an \"o_split\" memref";
      return signalPassFailure();
    }
    SmallVector<scf::ForallOp> merges;
    for (Operation &op : func.getBody().front())
      if (auto forall = dyn_cast<scf::ForallOp>(&op);
          forall && forall->hasAttr(flash::kMergeRowsAttrName))
        merges.push_back(forall);
    for (scf::ForallOp merge : merges)
      if (failed(mergeInLastCta(merge, counters, partialOut)))
        return signalPassFailure();
  }
};
} // namespace
