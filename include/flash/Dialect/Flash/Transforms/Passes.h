//===- Passes.h - flash transformation passes -------------------*- C++ -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_DIALECT_FLASH_TRANSFORMS_PASSES_H
#define FLASH_DIALECT_FLASH_TRANSFORMS_PASSES_H

#include "flash/Dialect/Flash/IR/FlashOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

namespace mlir::flash {

#define GEN_PASS_DECL
#include "flash/Dialect/Flash/Transforms/Passes.h.inc"

/// Patterns rewriting flash.attention and flash.attention_backward into the
/// naive materialising linalg form (the reference semantics).
void populateDecomposeAttentionPatterns(RewritePatternSet &patterns);

/// Rewrites one attention op into naive linalg; the op is replaced.
LogicalResult decomposeAttention(RewriterBase &rewriter, AttentionOp op);
LogicalResult decomposeAttentionBackward(RewriterBase &rewriter,
                                         AttentionBackwardOp op);

/// Patterns raising matmul -> softmax -> matmul chains in linalg into
/// flash.attention (the rewrites of --flash-fuse-attention), for use in
/// other compilers' pipelines.
void populateFuseAttentionPatterns(RewritePatternSet &patterns);

/// Layout folds on flash.attention: [B*H, S, D] operands collapsed from
/// [B, H, S, D] become the rank-4 op, and K/V repeated to the query heads
/// become grouped-query attention on the unrepeated tensors.
void populateFoldIntoAttentionPatterns(RewritePatternSet &patterns);

/// Tiles one attention op into the FlashAttention-2 loop nest with Br x Bc
/// tiles; the op is replaced.
LogicalResult tileAttention(RewriterBase &rewriter, AttentionOp op,
                            int64_t blockRows, int64_t blockCols);

/// Tiles one attention backward op into the FlashAttention-2 backward loop
/// nest (recompute P from the LSE per Br x Bc tile); the op is replaced.
LogicalResult tileAttentionBackward(RewriterBase &rewriter,
                                    AttentionBackwardOp op, int64_t blockRows,
                                    int64_t blockCols);

/// Tiles one attention backward op into two forward-shaped nests, the form
/// the GPU mapping takes: a dQ nest over (batch, head, query block) with
/// Br x Bc tiles that also writes D = rowsum(dO O), and a dK/dV nest over
/// (batch, KV head, key block) whose tiles are transposed (`kvBlockRows` key
/// rows, `kvBlockCols` query columns); the op is replaced.
/// The attribute naming the tensor.empty of an intermediate that the split
/// backward passes between its nests ("d": rowsum(dO O), [B, Hq, M] f32).
constexpr llvm::StringLiteral kWorkspaceAttr = "flash.workspace";

LogicalResult tileAttentionBackwardSplit(RewriterBase &rewriter,
                                         AttentionBackwardOp op,
                                         int64_t blockRows, int64_t blockCols,
                                         int64_t kvBlockRows,
                                         int64_t kvBlockCols);

#define GEN_PASS_REGISTRATION
#include "flash/Dialect/Flash/Transforms/Passes.h.inc"

} // namespace mlir::flash

#endif // FLASH_DIALECT_FLASH_TRANSFORMS_PASSES_H
