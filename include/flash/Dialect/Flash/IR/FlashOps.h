//===- FlashOps.h - flash dialect operations --------------------*- C++ -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_DIALECT_FLASH_IR_FLASHOPS_H
#define FLASH_DIALECT_FLASH_IR_FLASHOPS_H

#include "flash/Dialect/Flash/IR/FlashDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::flash {
/// The value of a score_mod region (see flash.attention) at `score` and the
/// rank-4 indices (b, h, i, j): its body cloned at `b`'s insertion point;
/// `score` itself for an empty region.
Value buildScoreMod(OpBuilder &b, Region &scoreMod, Value score,
                    ValueRange indices);

/// The rows of one strip of a fragment-major destination (an mma.sync
/// accumulator fragment's height).
constexpr int64_t kFragmentStripRows = 16;

/// (r, c) of a [R, `cols`] tile -> (row, column) of its fragment-major
/// strips (flash.atomic_add's `fragment_major = group`).
AffineMap getFragmentMajorMap(MLIRContext *ctx, int64_t cols, int64_t group);
} // namespace mlir::flash

#define GET_OP_CLASSES
#include "flash/Dialect/Flash/IR/FlashOps.h.inc"

namespace mlir::flash {

/// Rewrites a rank-2 or rank-3 attention op into the rank-4 form, expanding
/// every operand with leading unit dimensions and collapsing the results
/// back. Returns the new rank-4 op, or the op itself when it already is.
FailureOr<AttentionOp> normalizeToRank4(RewriterBase &rewriter, AttentionOp op);
FailureOr<AttentionBackwardOp> normalizeToRank4(RewriterBase &rewriter,
                                                AttentionBackwardOp op);

} // namespace mlir::flash

#endif // FLASH_DIALECT_FLASH_IR_FLASHOPS_H
