//===- GpuMapping.h - helpers shared by the GPU mapping steps ---*- C++ -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_LIB_CONVERSION_FLASHTOGPU_GPUMAPPING_H
#define FLASH_LIB_CONVERSION_FLASHTOGPU_GPUMAPPING_H

#include "flash/Dialect/Flash/IR/FlashOps.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace mlir::flash {

/// The launches of `root` in program order.
SmallVector<gpu::LaunchOp> collectLaunches(Operation *root);

/// The threads per block of `launch` (its constant x size), or an error at
/// the launch naming `pass` when it is not a constant.
FailureOr<int64_t> launchThreads(gpu::LaunchOp launch, StringRef pass);

/// Whether the kernel adds into global memory (`flash.atomic_add`: the
/// nondeterministic backward's dK/dV kernel).
bool addsAtomically(gpu::LaunchOp launch);

/// The zero fill of `c` that contraction `op` is the first to read: found
/// back in `op`'s block past ops that name no view of `c`'s tile; null if
/// none.
linalg::FillOp findZeroFill(linalg::GenericOp op, Value c);

/// The `flash.atomic_add` that adds contraction `op`'s C, zero-filled before
/// it, into global memory right after it (past views only) and so is C's
/// only reader: the nondeterministic backward's dS K of one step. Null if
/// the IR has another shape.
AtomicAddOp findAtomicAddOfResult(linalg::GenericOp op, Value c);

/// Traps unless `dest`'s innermost stride is 1 (vector reductions need
/// adjacent elements).
void trapUnlessUnitInnerStride(OpBuilder &b, Location loc, Value dest);

/// `dest` ([rows, W]) as a 1-D view of its rows, for flash.atomic_add's
/// fragment-major strips (whose positions run through whole rows); traps
/// unless its strides are (W, 1).
Value flatRowsView(OpBuilder &b, Location loc, Value dest);

/// The memref a chain of views starts from (a kernel argument).
Value viewRoot(Value v);

/// Whether every row of `memref` (innermost dimension contiguous) starts on
/// a 16-byte boundary, as an i1: then so does every row of every view of it
/// that starts a row on a multiple of `elementsPer16Bytes` columns.
Value rowsAreAligned(OpBuilder &b, Location loc, Value memref,
                     int64_t elementsPer16Bytes);

} // namespace mlir::flash

#endif // FLASH_LIB_CONVERSION_FLASHTOGPU_GPUMAPPING_H
