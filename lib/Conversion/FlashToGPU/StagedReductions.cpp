//===- StagedReductions.cpp - which dQ sums are staged for TMA --*- C++ -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#include "StagedReductions.h"

#include "TensorMaps.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

using namespace mlir;

std::optional<flash::StagedReduction>
flash::matchStagedReduction(AtomicAddOp atomic, Value c, int64_t warpgroups) {
  // The stage's bulk reductions write rows.
  if (atomic.getFragmentMajor())
    return std::nullopt;
  auto cType = dyn_cast<MemRefType>(c.getType());
  if (!cType || cType.getRank() != 2 || !cType.hasStaticShape())
    return std::nullopt;
  int64_t m = cType.getDimSize(0), n = cType.getDimSize(1);
  std::optional<WarpgroupReduceSplit> split =
      splitWarpgroupReduce(m, n, warpgroups);
  if (!split || split->cols % 32 != 0 || 64 * split->slices > 256)
    return std::nullopt;
  auto launch = atomic->getParentOfType<gpu::LaunchOp>();
  if (!launch)
    return std::nullopt;
  int64_t atomics = 0;
  launch.getBody().walk([&](AtomicAddOp) { ++atomics; });
  Operation *around = atomic->getParentOp();
  auto loop = dyn_cast<scf::ForOp>(around);
  if (atomics != 1 || (around != launch.getOperation() &&
                       !(loop && loop.getInductionVar().getType().isIndex())))
    return std::nullopt;
  // The tile: rows [0, valid) of C (findAtomicAddOfResult's view).
  auto tile = atomic.getTile().getDefiningOp<memref::SubViewOp>();
  if (!tile)
    return std::nullopt;
  std::optional<TensorSlice> slice =
      matchTensorSlice(atomic.getDest().getDefiningOp<memref::SubViewOp>(), n);
  if (!slice ||
      !cast<MemRefType>(slice->tensor.getType()).getElementType().isF32() ||
      tile.getMixedSizes().front() != OpFoldResult(slice->rows))
    return std::nullopt;
  auto rowOffset = dyn_cast<Value>(slice->offsets[slice->rowDim]);
  if (!rowOffset || !clipsAtTensorEnd(slice->rows, slice->tensor,
                                      slice->rowDim, rowOffset, m))
    return std::nullopt;
  return StagedReduction{slice->tensor, slice->offsets, slice->rowDim};
}
