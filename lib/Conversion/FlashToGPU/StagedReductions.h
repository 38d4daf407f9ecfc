//===- StagedReductions.h - which dQ sums are staged for TMA ----*- C++ -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_LIB_CONVERSION_FLASHTOGPU_STAGEDREDUCTIONS_H
#define FLASH_LIB_CONVERSION_FLASHTOGPU_STAGEDREDUCTIONS_H

#include "WarpRegisterTiles.h"

#include "flash/Dialect/Flash/IR/FlashOps.h"

#include "mlir/IR/OpDefinition.h"

#include <optional>

namespace mlir::flash {

/// Where a staged reduction adds its sums: rows [offsets[rowDim], + the
/// tile's valid rows) of kernel argument `tensor`, all of its columns, a
/// point in every other dimension.
struct StagedReduction {
  BlockArgument tensor;
  SmallVector<OpFoldResult> offsets;
  int64_t rowDim;
};

/// Whether the sums `atomic` adds from the zero-filled C `c` of a
/// contraction (the atomic backward's dS K; `atomic` as
/// findAtomicAddOfResult finds it) can go through a shared stage
/// and TMA tensor reductions, with `warpgroups` warpgroups sharing the
/// contraction (splitWarpgroupReduce): `atomic` is the launch's only
/// `flash.atomic_add`, directly in the launch body or in an `scf.for` over
/// `index` (each iteration then stages once, so the stage's two copies
/// alternate with them); its destination a slice of an f32 kernel argument whose valid rows end with
/// the tensor (TMA writes nothing past its end, so no row is guarded).
/// Both the storage assignment (which gives such a C its stage) and the
/// MMA lowering (which fills it) ask this, so that no stage goes unused.
std::optional<StagedReduction> matchStagedReduction(AtomicAddOp atomic,
                                                    Value c,
                                                    int64_t warpgroups);

} // namespace mlir::flash

#endif // FLASH_LIB_CONVERSION_FLASHTOGPU_STAGEDREDUCTIONS_H
