//===- FuseAttention.cpp - raise matmul-softmax-matmul to flash -*- C++ -*-===//
//
// Part of the flash-mlir project.
//
// Replaces each attention found by AttentionMatcher with one flash.attention
// whose operands are brought to the [batch..., sequence, dim] layout by
// small copies (transposes, unit dims) when the frontend used another one.
// The N x N intermediates are erased.
//
//===----------------------------------------------------------------------===//

#include "flash/Dialect/Flash/Transforms/Passes.h"
#include "flash/Dialect/Flash/Transforms/Transforms.h"

#include "AttentionFusion.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Rewrite/FrozenRewritePatternSet.h"
#include "mlir/Rewrite/PatternApplicator.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir::flash {
#define GEN_PASS_DEF_FLASHFUSEATTENTIONPASS
#include "flash/Dialect/Flash/Transforms/Passes.h.inc"
} // namespace mlir::flash

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::detail;

namespace {
std::string describe(const AttentionMatch &m, Type et, int64_t groups) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "fused attention: scale = " << m.scale;
  if (m.runtimeScale)
    os << (m.divideByRuntimeScale ? " / " : " * ") << "a run-time value";
  os << ", softmax = "
     << (m.namedSoftmax ? "linalg.softmax" : (m.base2 ? "exp2" : "exp"))
     << (m.maxSubtracted ? " (max-subtracted)" : " (no max subtraction)")
     << ", mask = ";
  SmallVector<std::string> masks;
  if (m.causal)
    masks.push_back("causal");
  if (m.window)
    masks.push_back("window " + std::to_string(*m.window));
  if (!m.masks.empty())
    masks.push_back(std::to_string(m.masks.size()) + " i1 tensor(s)");
  os << (masks.empty() ? "none" : llvm::join(masks, " + "))
     << ", bias = " << m.biases.size()
     << " tensor(s)";
  if (m.hasScoreMod()) {
    os << ", score_mod = ";
    SmallVector<std::string> mods;
    if (m.modified)
      mods.push_back("a function of the scores");
    if (!m.modTerms.empty())
      mods.push_back(std::to_string(m.modTerms.size()) + " computed term(s)");
    os << llvm::join(mods, " + ");
  }
  os << ", batch dims = " << m.batchDims.size() << ", GQA ratio = "
     << (groups > 0 ? std::to_string(groups) : std::string("dynamic"))
     << ", Q/K/V " << et;
  return s;
}

/// Replaces the matched attention with flash.attention.
LogicalResult fuse(RewriterBase &rewriter, AttentionMatch &m, bool report,
                   std::string &reason) {
  linalg::LinalgOp pv = m.output;
  Location loc = pv.getLoc();
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(pv);
  FailureOr<FusedAttention> built = buildFusedAttention(
      rewriter, m, /*withLse=*/false, reason, /*allowSplit=*/true);
  if (failed(built))
    return failure();
  AttentionOp fused = built->op;
  Type et = fused.getQuery().getType().getElementType();
  // Back to the layout and element type of the original result.
  FailureOr<Value> out = ungroup(rewriter, *built, fused.getOutput(), reason);
  if (failed(out)) {
    rewriter.eraseOp(fused);
    return failure();
  }
  if (built->splitBatch)
    out = tensor::CollapseShapeOp::create(
              rewriter, loc, *out,
              SmallVector<ReassociationIndices>{{0, 1}, {2}, {3}})
              .getResult();
  Value replacement =
      toResultLayout(rewriter, loc, *out, built->resultQueryDims, m.outputMap,
                     cast<RankedTensorType>(pv->getResult(0).getType()));
  if (report) {
    RankedTensorType fq = fused.getQuery().getType();
    RankedTensorType fk = fused.getKey().getType();
    int64_t groups = 1;
    if (fq.getRank() >= 3) {
      int64_t hq = fq.getDimSize(fq.getRank() - 3);
      int64_t hkv = fk.getDimSize(fk.getRank() - 3);
      groups = ShapedType::isDynamic(hq) || ShapedType::isDynamic(hkv)
                   ? 0
                   : hq / hkv;
    }
    // K/V repeated to the query heads become GQA in the clean-up below.
    if (auto repeated = unrepeat(fused.getKey()); repeated && groups > 0)
      groups = ShapedType::isDynamic(repeated->second)
                   ? 0
                   : groups * repeated->second;
    fused.emitRemark(describe(m, et, groups));
  }
  // The N x N chain, and whatever only it used, is dead now.
  SmallVector<Operation *> seeds(m.chain.begin(), m.chain.end());
  for (Value operand : pv->getOperands())
    if (Operation *def = operand.getDefiningOp())
      seeds.push_back(def);
  rewriter.replaceOp(pv, replacement);
  eraseDeadOps(rewriter, seeds);
  return success();
}

/// flash.attention on [B*H, S, D] operands collapsed from [B, H, S, D]
/// (torch-mlir's 3-D batch matmuls) -> the rank-4 op on the sources.
/// The score_mod of a rank-3 op read h as the collapsed B*H index (and b as
/// 0); on the rank-4 op of `query`'s [B, H, ...] that index is b * H + h.
static void rebaseHeadIndex(RewriterBase &rewriter, AttentionOp op,
                            Value query) {
  Block &body = op.getScoreMod().front();
  BlockArgument batch = body.getArgument(1), head = body.getArgument(2);
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(&body);
  Location loc = op.getLoc();
  Value heads = tensor::DimOp::create(rewriter, loc, query, 1);
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value offset = arith::MulIOp::create(rewriter, loc, batch, heads);
  Value collapsed = arith::AddIOp::create(rewriter, loc, offset, head);
  rewriter.replaceAllUsesExcept(head, collapsed, collapsed.getDefiningOp());
  rewriter.replaceAllUsesExcept(batch, zero, offset.getDefiningOp());
}

struct FoldCollapsedBatch : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    // A rank-3 op with cu_seqlens packs one batch's sequences: no B*H.
    if (op.getQuery().getType().getRank() != 3 || op.isVarlen())
      return failure();
    SmallVector<Value> sources;
    for (Value v : {op.getQuery(), op.getKey(), op.getValue()}) {
      auto collapse = v.getDefiningOp<tensor::CollapseShapeOp>();
      if (!collapse || collapse.getSrcType().getRank() != 4 ||
          collapse.getReassociationIndices() !=
              SmallVector<ReassociationIndices>{{0, 1}, {2}, {3}})
        return failure();
      sources.push_back(collapse.getSrc());
    }
    auto q = cast<RankedTensorType>(sources[0].getType());
    auto k = cast<RankedTensorType>(sources[1].getType());
    // The split of B*H must be the same batch for Q and K/V.
    bool sameBatch =
        (!q.isDynamicDim(0) && q.getDimSize(0) == k.getDimSize(0)) ||
        sources[0] == sources[1];
    if (!sameBatch)
      return failure();
    for (Value t : {op.getBias(), op.getMask()}) {
      if (!t)
        continue;
      auto type = cast<RankedTensorType>(t.getType());
      if (type.getRank() == 3 && type.getDimSize(0) != 1)
        return failure();
    }
    SmallVector<Type> types;
    for (Value r : op->getResults()) {
      auto type = cast<RankedTensorType>(r.getType());
      SmallVector<int64_t> shape = {q.getDimSize(0), q.getDimSize(1)};
      llvm::append_range(shape, type.getShape().drop_front());
      types.push_back(RankedTensorType::get(shape, type.getElementType()));
    }
    auto fused = AttentionOp::create(
        rewriter, op.getLoc(), types, sources[0], sources[1], sources[2],
        op.getBias(), op.getMask(), op.getSinks(), /*key_lengths=*/Value(),
        /*block_table=*/Value(), /*cu_seqlens_q=*/Value(),
        /*cu_seqlens_k=*/Value(), op.getRuntimeScale(), op.getScaleAttr(),
        op.getCausalAttr(), op.getWindowAttr());
    fused.takeScoreModFrom(rewriter, op);
    if (fused.hasScoreMod())
      rebaseHeadIndex(rewriter, fused, sources[0]);
    SmallVector<Value> results;
    for (auto [old, now] : llvm::zip(op->getResults(), fused->getResults())) {
      SmallVector<ReassociationIndices> r = {{0, 1}};
      for (int64_t i = 2; i < cast<RankedTensorType>(now.getType()).getRank();
           ++i)
        r.push_back({i});
      results.push_back(tensor::CollapseShapeOp::create(rewriter, op.getLoc(),
                                                        old.getType(), now, r));
    }
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// K and V repeated to the query heads (expand_shape + broadcast +
/// collapse_shape, as frontends spell repeat_kv) -> grouped-query attention
/// on the unrepeated K and V.
struct FoldRepeatedKeyValue : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getQuery().getType().getRank() != 4)
      return failure();
    auto k = unrepeat(op.getKey()), v = unrepeat(op.getValue());
    if (!k || !v || k->second != v->second)
      return failure();
    rewriter.modifyOpInPlace(op, [&] {
      op.getKeyMutable().assign(k->first);
      op.getValueMutable().assign(v->first);
    });
    return success();
  }
};

/// Fuses the attention that ends in the matched contraction.
struct FuseAttentionPattern : OpInterfaceRewritePattern<linalg::LinalgOp> {
  FuseAttentionPattern(MLIRContext *ctx, const FuseAttentionOptions &options)
      : OpInterfaceRewritePattern(ctx), options(options) {}

  LogicalResult matchAndRewrite(linalg::LinalgOp op,
                                PatternRewriter &rewriter) const override {
    std::string reason;
    bool candidate = false;
    std::optional<AttentionMatch> m = matchAttention(op, reason, candidate);
    if (m && succeeded(fuse(rewriter, *m, options.report, reason)))
      return success();
    if (options.report && candidate)
      op->emitRemark("not fused: ") << reason;
    return rewriter.notifyMatchFailure(op, reason);
  }

private:
  FuseAttentionOptions options;
};

/// Tries the patterns once on every candidate contraction, in program order
/// (so remarks come once and in order, and no folding or dead-code removal
/// touches the rest of the IR), then folds the fused ops' layouts.
struct FlashFuseAttentionPass
    : flash::impl::FlashFuseAttentionPassBase<FlashFuseAttentionPass> {
  using Base::Base;

  LogicalResult initialize(MLIRContext *ctx) override {
    RewritePatternSet set(ctx);
    populateFuseAttentionPatterns(set, FuseAttentionOptions{report});
    patterns = std::move(set);
    return success();
  }

  void runOnOperation() override {
    PatternApplicator applicator(patterns);
    applicator.applyDefaultCostModel();
    forEachAttentionCandidate(
        getOperation(), [&](PatternRewriter &rewriter, linalg::LinalgOp op) {
          (void)applicator.matchAndRewrite(op, rewriter);
        });
    if (failed(foldIntoFusedOps(getOperation())))
      return signalPassFailure();
  }

private:
  FrozenRewritePatternSet patterns;
};
} // namespace

void mlir::flash::populateFuseAttentionPatterns(
    RewritePatternSet &patterns, const FuseAttentionOptions &options) {
  patterns.add<FuseAttentionPattern>(patterns.getContext(), options);
  populateFoldIntoAttentionPatterns(patterns);
}

void mlir::flash::populateFoldIntoAttentionPatterns(
    RewritePatternSet &patterns) {
  patterns.add<FoldCollapsedBatch, FoldRepeatedKeyValue>(patterns.getContext());
}
