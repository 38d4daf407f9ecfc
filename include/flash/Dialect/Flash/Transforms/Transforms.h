//===- Transforms.h - flash rewrites for other pipelines --------*- C++ -*-===//
//
// Part of the flash-mlir project.
//
// The rewrites behind the flash passes, for compilers that run them inside
// their own passes: pattern sets for any pattern driver and the one-op
// entry points that the tiling passes call. The passes themselves are
// declared in Passes.h; each one is a thin driver over what is here.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_DIALECT_FLASH_TRANSFORMS_TRANSFORMS_H
#define FLASH_DIALECT_FLASH_TRANSFORMS_TRANSFORMS_H

#include "flash/Dialect/Flash/IR/FlashOps.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/StringRef.h"

namespace mlir::flash {

//===----------------------------------------------------------------------===//
// Fusion (graph level)
//===----------------------------------------------------------------------===//

struct FuseAttentionOptions {
  /// Emit a remark on every candidate: what was fused, or why not. Meant for
  /// drivers that try each op once (--flash-fuse-attention); a greedy driver
  /// that retries an op repeats its remark.
  bool report = false;
};

/// Patterns raising matmul -> softmax -> matmul chains in linalg into
/// flash.attention (the rewrites of --flash-fuse-attention), followed by the
/// layout folds below. The patterns need the flash dialect loaded (declare it
/// in the pass's dependent dialects). Any driver works; the pass tries every
/// contraction once, in order, and then folds greedily.
void populateFuseAttentionPatterns(RewritePatternSet &patterns,
                                   const FuseAttentionOptions &options = {});

/// Layout folds on flash.attention: [B*H, S, D] operands collapsed from
/// [B, H, S, D] become the rank-4 op, and K/V repeated to the query heads
/// become grouped-query attention on the unrepeated tensors.
void populateFoldIntoAttentionPatterns(RewritePatternSet &patterns);

//===----------------------------------------------------------------------===//
// Reference semantics
//===----------------------------------------------------------------------===//

/// Patterns rewriting flash.attention and flash.attention_backward into the
/// naive materialising linalg form (the rewrites of
/// --flash-decompose-attention).
void populateDecomposeAttentionPatterns(RewritePatternSet &patterns);

/// Rewrites one attention op into naive linalg; the op is replaced.
LogicalResult decomposeAttention(RewriterBase &rewriter, AttentionOp op);
LogicalResult decomposeAttentionBackward(RewriterBase &rewriter,
                                         AttentionBackwardOp op);

//===----------------------------------------------------------------------===//
// Tiling (algorithm level)
//===----------------------------------------------------------------------===//

/// Split-KV (FlashDecoding): the key blocks a query block sees are cut
/// into S equal runs computed in parallel, each writing its normalised O
/// (f32) and its LSE, which a second nest merges by their LSE. S comes from
/// `count` (partial results in workspaces "o_split" [S, B, Hq, M, Dv] and
/// "lse_split" [S, B, Hq, M], f32, that the tiling allocates) or is the
/// leading size of the given `partialOut` and `partialLse` of those shapes
/// (run-time S: a caller that allocates them chooses it).
struct KeySplits {
  int64_t count = 0;
  Value partialOut, partialLse;
  bool enabled() const { return count > 0 || partialOut; }
};

/// What a caller knows of packed sequences (cu_seqlens), FlashAttention's
/// `max_seqlen_q` and `max_seqlen_k`: index values at least the most query
/// (key) rows of any sequence AND the rows past the last one (T -
/// cu_seqlens[S], which FlashAttention's bound does not count: a caller
/// with padding rows passes the larger). Rows past a smaller bound are not
/// computed (their results are undefined). A null bound is computed from
/// the offsets (a scalar loop, which a kernel's host side cannot run:
/// flash-compile passes these as function arguments tagged
/// kMaxQueryRowsAttr and kMaxKeyRowsAttr, which --flash-tile-attention
/// reads for every packed op of the function).
struct PackedBounds {
  Value queries, keys;
};

/// How the backward's nests keep the per-element mask off the blocks that
/// need none: not at all (one masked loop per nest), in loops of their own,
/// or in one loop with the mask under a branch on the block index.
enum class MaskFreeBlocks { None, Loops, Branch };
constexpr llvm::StringLiteral kMaxQueryRowsAttr =
    FlashDialect::kMaxQueryRowsAttrName;
constexpr llvm::StringLiteral kMaxKeyRowsAttr =
    FlashDialect::kMaxKeyRowsAttrName;

/// Tiles one attention op into the FlashAttention-2 loop nest with Br x Bc
/// tiles; the op is replaced. With `causalRowsFromEnd` a causal op's row
/// blocks end at its last row (the partial block is the first). With
/// `splits`, the nest is split-KV's pair of nests.
LogicalResult tileAttention(RewriterBase &rewriter, AttentionOp op,
                            int64_t blockRows, int64_t blockCols,
                            bool causalRowsFromEnd = false,
                            KeySplits splits = {}, PackedBounds bounds = {});

/// Tiles one attention backward op into the FlashAttention-2 backward loop
/// nest (recompute P from the LSE per Br x Bc tile); the op is replaced.
LogicalResult tileAttentionBackward(RewriterBase &rewriter,
                                    AttentionBackwardOp op, int64_t blockRows,
                                    int64_t blockCols);

/// The attribute naming the tensor.empty of an intermediate that the split
/// backward passes between its nests ("d": rowsum(dO O), [B, Hq, M] f32;
/// "dq_accum": the atomic form's dQ sums, [B, Hq, M, D] f32).
constexpr llvm::StringLiteral kWorkspaceAttr = FlashDialect::kWorkspaceAttrName;

/// Tiles one attention backward op into two forward-shaped nests, the form
/// the GPU mapping takes: a dQ nest over (batch, head, query block) with
/// Br x Bc tiles that also writes D = rowsum(dO O), and a dK/dV nest over
/// (batch, KV head, key block) whose tiles are transposed (`kvBlockRows` key
/// rows, `kvBlockCols` query columns); the op is replaced. Not
/// `deterministic`: a pre-pass writes D and zeroes an f32 dQ accumulator
/// ("dq_accum", [B, Hq, M, D]), the dK/dV nest adds each step's dS K to it
/// with `flash.atomic_add`, and a last pass scales it into dQ; with
/// `overlapProducts` that nest builds dPᵀ right after Sᵀ (for MMAs waited
/// for at first use). A nonzero `fragmentMajor` (1, 2 or 4) keeps the
/// accumulator of a dense op fragment-major (flash.atomic_add's
/// `fragment_major`: rows rounded up to strips of 16, read back through its
/// map by the last pass). With `maskFreeBlocks` each nest's inner loop is
/// split into loops of blocks that need a mask (past the keys, across the
/// causal diagonal or the window's edge) and a loop of blocks that need none
/// (whose P has no per-element select); with `Branch` each nest keeps one
/// loop and the blocks that need a mask apply it under a branch on the block
/// index (one loop body's registers); a fully masked row's P is 0 through its
/// exponent either way.
LogicalResult tileAttentionBackwardSplit(
    RewriterBase &rewriter, AttentionBackwardOp op, int64_t blockRows,
    int64_t blockCols, int64_t kvBlockRows, int64_t kvBlockCols,
    bool deterministic = true, bool overlapProducts = false,
    int64_t fragmentMajor = 0, MaskFreeBlocks maskFree = MaskFreeBlocks::Loops,
    PackedBounds bounds = {});

//===----------------------------------------------------------------------===//
// Tiled iterations
//===----------------------------------------------------------------------===//

/// `op`'s lowering by --flash-lower-skip-tile: the ops after it in its block
/// (but the terminator) moved under `scf.if (not empty)`, and `op` erased.
/// Fails, changing nothing, where one of them defines a value used outside
/// them (tensors not yet bufferized).
LogicalResult guardRestOfBlock(RewriterBase &rewriter, SkipTileOp op);

} // namespace mlir::flash

#endif // FLASH_DIALECT_FLASH_TRANSFORMS_TRANSFORMS_H
