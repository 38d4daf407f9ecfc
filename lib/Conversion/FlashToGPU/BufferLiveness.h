//===- BufferLiveness.h - live ranges of a launch's buffers -----*- C++ -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_LIB_CONVERSION_FLASHTOGPU_BUFFERLIVENESS_H
#define FLASH_LIB_CONVERSION_FLASHTOGPU_BUFFERLIVENESS_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "llvm/ADT/DenseMap.h"

#include <utility>

namespace mlir::flash {

/// Live ranges of the buffers of a launch, in program order (the pre-order
/// positions of its ops): from the allocation to the last use, through
/// views. A use inside a loop that does not hold the allocation repeats, so
/// the buffer is live for the whole loop; a buffer carried through a loop or
/// out of a region (an operand of scf.for, scf.yield, scf.if) may be read
/// later under another name and is live to the end. The ranges of a
/// pipelined loop's prologue and epilogue tiles then do not overlap the
/// loop's, and those of the three key-block loops' tiles not each other.
/// A buffer used only inside a loop tagged `flash.fresh_tiles` (whose
/// iterations load their own tiles) lives from its first use there, and
/// its uses repeat with the loop's iterations but are not live across them.
/// A `"reduction_stage"` tile is live for the whole launch.
class BufferLiveness {
public:
  explicit BufferLiveness(gpu::LaunchOp launch);

  /// [first, last] positions of `buffer` (a memref.alloc result).
  std::pair<int64_t, int64_t> range(Value buffer) const;

private:
  int64_t lastInside(Operation *op) const;

  llvm::DenseMap<Operation *, int64_t> position;
  int64_t count = 0;
};

} // namespace mlir::flash

#endif // FLASH_LIB_CONVERSION_FLASHTOGPU_BUFFERLIVENESS_H
