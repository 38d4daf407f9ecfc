//===- AttentionFusion.h - build flash ops from matches ----------*- C++
//-*-===//
//
// Part of the flash-mlir project.
//
// What --flash-fuse-attention and --flash-fuse-attention-backward share:
// bringing matched tensors to the flash layout and flash results back to
// the layout of the values they replace.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_LIB_TRANSFORMS_ATTENTIONFUSION_H
#define FLASH_LIB_TRANSFORMS_ATTENTIONFUSION_H

#include "AttentionMatcher.h"

#include "flash/Dialect/Flash/IR/FlashOps.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::flash::detail {

/// One input of a relayout: a tensor read through a map from the extended
/// space, and how its elements enter the result.
struct Source {
  TensorAccess access;
  double factor = 1.0; // float sources: multiplied
  bool negate = false; // i1 sources: inverted
};

/// Builds the tensor of the extended dims `dims` (unit size where no source
/// reads a dim) whose elements combine `sources` (sum for floats, and for
/// i1). Returns the first source unchanged when it already is that tensor,
/// or, with `allowSuffix`, when it broadcasts right-aligned to it with a
/// rank of at most `maxOperandRank` (the rank of `dims` when 0).
FailureOr<Value> relayout(OpBuilder &b, Location loc, ArrayRef<Source> sources,
                          ArrayRef<unsigned> dims, Type elementType,
                          std::string &reason, bool allowSuffix = false,
                          unsigned maxOperandRank = 0);

/// Whether relayout() can bring `access` to the extended dims `dims` (its
/// map reads only those dims, or constants).
bool canRelayout(const TensorAccess &access, ArrayRef<unsigned> dims);

/// The [B, Hkv, S, D] tensor that `v` repeats G times per head, and G.
std::optional<std::pair<Value, int64_t>> unrepeat(Value v);

/// A flash.attention built from a match, and the extended dims of its
/// operands (Q, O: batch..., query, head; K, V: kv batch..., key, head).
struct FusedAttention {
  AttentionOp op;
  SmallVector<unsigned> queryDims, keyDims;
  /// Batch dims (b, kv head, group): Q and O have the last two collapsed.
  bool grouped = false;
  /// The op's first two batch dims split the match's one (see
  /// `allowSplit`): O collapses them back, and `resultQueryDims` are the
  /// match's own query dims.
  bool splitBatch = false;
  SmallVector<unsigned> resultQueryDims;
};

/// Creates flash.attention for `m` at the insertion point, with the LSE
/// result when `withLse`. Fails (creating nothing that stays) with `reason`.
/// With `allowSplit`, a bias or mask read through `d floordiv c` / `d mod c`
/// of the one batch dim d (a [B, 1, M, N] mask on scores of [B*H, M, N],
/// BERT-style) makes the op rank 4 on (d floordiv c, d mod c), the operands
/// that read d expanded to match.
FailureOr<FusedAttention> buildFusedAttention(RewriterBase &rewriter,
                                              const AttentionMatch &m,
                                              bool withLse,
                                              std::string &reason,
                                              bool allowSplit = false);

/// Fills the empty score_mod region of `op` with the score modification of
/// `m`; `fromP` gives each of P's dims as an affine expression of the
/// region's (b, h, i, j).
LogicalResult buildScoreModRegion(OpBuilder &b, AttentionOp op,
                                  const AttentionMatch &m,
                                  ArrayRef<AffineExpr> fromP,
                                  std::string &reason);

/// A (b, kv head, group, ...) tensor with the kv head and group dims merged
/// into the query heads, as the fused op takes it.
Value collapseGroups(OpBuilder &b, Location loc, Value value);

/// A Q-shaped result of a grouped fused op ([B, Hq, M, D] or [B, Hq, M])
/// expanded to the (b, kv head, group) dims of the match; `value` itself
/// when the op is not grouped.
FailureOr<Value> ungroup(RewriterBase &rewriter, const FusedAttention &fused,
                         Value value, std::string &reason);

/// `value`, whose dims are the extended dims `dims`, as a tensor of
/// `resultType` whose dims read the extended space through `resultMap`:
/// transposed, converted to the result's element type and multiplied by
/// `factor` when needed.
Value toResultLayout(OpBuilder &b, Location loc, Value value,
                     ArrayRef<unsigned> dims, AffineMap resultMap,
                     RankedTensorType resultType, double factor = 1.0);

/// Erases `seeds` and, transitively, their producers once trivially dead.
void eraseDeadOps(RewriterBase &rewriter, ArrayRef<Operation *> seeds);

/// Calls `fn` with every contraction under `root` that may end an attention
/// (two inputs, one reduction loop), in program order, skipping those that
/// an earlier call erased through the rewriter.
void forEachAttentionCandidate(
    Operation *root,
    function_ref<void(PatternRewriter &, linalg::LinalgOp)> fn);

/// The layout folds on fused ops ([B*H, S, D] operands, repeated K/V) and
/// the reshape canonicalizations they enable.
LogicalResult foldIntoFusedOps(Operation *root);

} // namespace mlir::flash::detail

#endif // FLASH_LIB_TRANSFORMS_ATTENTIONFUSION_H
