//===- MmaSyncFragments.h - mma.sync m16n8k16 operand registers -*- C++ -*-===//
//
// Part of the flash-mlir project.
//
// The fragment primitives both mma.sync lowerings build on: the register
// tiles' (--flash-gpu-warp-register-tiles: P from registers, Q/K/V by
// ldmatrix) and the shared-memory contractions' (--flash-gpu-lower-tile-mma).
// Fragment layout (PTX ISA, lane = 4 g + t): A holds rows g and g + 8,
// columns 2t, 2t + 1 and 2t + 8, 2t + 9 of its 16 x 16 tile; B rows 2t,
// 2t + 1, 2t + 8, 2t + 9 of column g; C rows g and g + 8, columns 2t, 2t + 1.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_LIB_CONVERSION_FLASHTOGPU_MMASYNCFRAGMENTS_H
#define FLASH_LIB_CONVERSION_FLASHTOGPU_MMASYNCFRAGMENTS_H

#include "mlir/IR/Builders.h"

namespace mlir::flash::mma_sync {

/// Two adjacent 16-bit elements (a vector<2>) as one operand register:
/// vector<2xf16> as it is, bf16 pairs as i32 (what nvvm.mma.sync takes).
Value operandRegister(OpBuilder &b, Location loc, Value pair);

/// A lane's row or column in a tile, (`lane` + `step`) + `then`: the
/// constant `step` and the lane's part `lane` + `then` (either may be null:
/// 0). For a column, `laneBound` says that the lane's part is a multiple of
/// 8 below it (0: not known).
struct LaneCoordinate {
  Value lane;
  int64_t step = 0;
  int64_t laneBound = 0;
  Value then = {};
};

/// `count` 8 x 8 matrices of the shared tile `tile` (a contraction's operand,
/// the generic-space view of a carved tile) by one ldmatrix: lane l gives the
/// address (`row`, `col`) of row l % 8 of matrix l / 8; `transpose` for
/// .trans. Returned as `count` operand registers. In a swizzled tile
/// (flash.swizzled_128b) the address is the lane's swizzled offset with the
/// steps applied after the swizzle (an xor of the column's chunk, immediates
/// for whole panels and 8-row steps) where the lane's column bound allows,
/// and the ldmatrix carries flash.swizzled_128b (the driver reads it).
SmallVector<Value> ldmatrix(OpBuilder &b, Location loc, Value tile,
                            LaneCoordinate row, LaneCoordinate col,
                            int64_t count, bool transpose);

/// `laneCoordinate` as the enclosing loop's own copy
/// (flashgpu.per_iteration) where the builder is inside an scf.for, so that
/// the addresses built from it (ldmatrix fragments, copies) stay in the loop
/// as one base plus immediates instead of one hoisted 64-bit address each;
/// else as it is.
Value perIterationCoordinate(OpBuilder &b, Location loc, Value laneCoordinate);

/// D = A B + C of one m16n8k16 tile (row-major A, column-major B, f32
/// accumulators): the op's result, a struct of four f32.
Value mma(OpBuilder &b, Location loc, ArrayRef<Value> a, ArrayRef<Value> bRegs,
          ArrayRef<Value> c, bool bf16);

} // namespace mlir::flash::mma_sync

#endif // FLASH_LIB_CONVERSION_FLASHTOGPU_MMASYNCFRAGMENTS_H
