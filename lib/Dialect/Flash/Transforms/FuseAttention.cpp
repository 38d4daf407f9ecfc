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

#include "AttentionMatcher.h"
#include "LinalgBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
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
/// One input of a relayout: a tensor read through a map from the extended
/// space, and how its elements enter the result.
struct Source {
  TensorAccess access;
  double factor = 1.0; // float sources: multiplied
  bool negate = false; // i1 sources: inverted
};

/// Builds the tensor of the extended dims `dims` (unit size where no source
/// reads a dim) whose elements combine `sources` (sum for floats, and for
/// i1). Returns the first source unchanged when it already is that tensor.
FailureOr<Value> relayout(OpBuilder &b, Location loc, ArrayRef<Source> sources,
                          ArrayRef<unsigned> dims, Type elementType,
                          std::string &reason, bool allowSuffix = false) {
  MLIRContext *ctx = b.getContext();
  unsigned rank = dims.size();
  // Sizes of the result dims, taken from the sources that read them.
  SmallVector<OpFoldResult> sizes(rank, b.getIndexAttr(1));
  SmallVector<bool> known(rank, false);
  SmallVector<AffineMap> maps;
  for (const Source &s : sources) {
    SmallVector<AffineExpr> exprs;
    for (auto [i, r] : llvm::enumerate(s.access.map.getResults())) {
      if (auto c = dyn_cast<AffineConstantExpr>(r)) {
        exprs.push_back(c);
        continue;
      }
      auto dim = dyn_cast<AffineDimExpr>(r);
      if (!dim) {
        reason = "an operand is indexed through a reshape that the fused op "
                 "cannot express";
        return failure();
      }
      unsigned ext = dim.getPosition();
      auto it = llvm::find(dims, ext);
      if (it == dims.end()) {
        reason = "an operand varies along a dimension the fused op does not "
                 "have";
        return failure();
      }
      unsigned pos = it - dims.begin();
      exprs.push_back(getAffineDimExpr(pos, ctx));
      if (!known[pos]) {
        sizes[pos] = tensor::getMixedSize(b, loc, s.access.tensor, i);
        known[pos] = true;
      }
    }
    maps.push_back(AffineMap::get(rank, 0, exprs, ctx));
  }
  const Source &first = sources.front();
  auto firstType = cast<RankedTensorType>(first.access.tensor.getType());
  bool plain = sources.size() == 1 && !first.negate && first.factor == 1.0 &&
               firstType.getElementType() == elementType;
  if (plain && maps.front().isIdentity())
    return first.access.tensor;
  // Bias and mask operands broadcast right-aligned: a tensor that reads
  // the trailing result dims in order is used as it is.
  if (plain && allowSuffix) {
    unsigned n = maps.front().getNumResults();
    bool suffix = n <= rank;
    for (unsigned i = 0; suffix && i < n; ++i)
      suffix = maps.front().getResult(i) == getAffineDimExpr(rank - n + i, ctx);
    if (suffix)
      return first.access.tensor;
  }
  Value init = tensor::EmptyOp::create(b, loc, sizes, elementType);
  maps.push_back(AffineMap::getMultiDimIdentityMap(rank, ctx));
  SmallVector<Value> ins;
  for (const Source &s : sources)
    ins.push_back(s.access.tensor);
  return buildGeneric(
      b, loc, ins, init, maps,
      SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
      [&](OpBuilder &nb, Location nl, ValueRange args) -> Value {
        Value acc;
        for (auto [s, arg] : llvm::zip(sources, args.drop_back())) {
          Value v = arg;
          if (elementType.isInteger(1)) {
            if (s.negate) {
              Value one =
                  arith::ConstantOp::create(nb, nl, nb.getBoolAttr(true));
              v = arith::XOrIOp::create(nb, nl, v, one);
            }
            acc = acc ? arith::AndIOp::create(nb, nl, acc, v).getResult() : v;
            continue;
          }
          auto ft = cast<FloatType>(elementType);
          if (v.getType() != ft)
            v = ft.getWidth() > v.getType().getIntOrFloatBitWidth()
                    ? arith::ExtFOp::create(nb, nl, ft, v).getResult()
                    : arith::TruncFOp::create(nb, nl, ft, v).getResult();
          if (s.factor != 1.0) {
            Value f = arith::ConstantOp::create(nb, nl,
                                                nb.getFloatAttr(ft, s.factor));
            v = arith::MulFOp::create(nb, nl, v, f);
          }
          acc = acc ? arith::AddFOp::create(nb, nl, acc, v).getResult() : v;
        }
        return acc;
      });
}

std::string describe(const AttentionMatch &m, Type et, int64_t groups) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "fused attention: scale = " << m.scale << ", softmax = "
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
     << " tensor(s), batch dims = " << m.batchDims.size() << ", GQA ratio = "
     << (groups > 0 ? std::to_string(groups) : std::string("dynamic"))
     << ", Q/K/V " << et;
  return s;
}

/// The [B, Hkv, S, D] tensor that `v` repeats G times per head, and G.
std::optional<std::pair<Value, int64_t>> unrepeat(Value v) {
  auto collapse = v.getDefiningOp<tensor::CollapseShapeOp>();
  if (!collapse || collapse.getSrcType().getRank() != 5 ||
      collapse.getReassociationIndices() !=
          SmallVector<ReassociationIndices>{{0}, {1, 2}, {3}, {4}})
    return std::nullopt;
  int64_t groups = collapse.getSrcType().getDimSize(2);
  auto bcast = collapse.getSrc().getDefiningOp<linalg::LinalgOp>();
  if (!bcast || ShapedType::isDynamic(groups) || bcast.getNumDpsInputs() != 1 ||
      !bcast.isAllParallelLoops() || !bcast.hasPureTensorSemantics())
    return std::nullopt;
  auto yield = cast<linalg::YieldOp>(bcast.getBlock()->getTerminator());
  if (yield.getOperand(0) != bcast.getRegionInputArgs()[0] ||
      !bcast.getIndexingMapMatchingResult(bcast->getResult(0)).isIdentity())
    return std::nullopt;
  MLIRContext *ctx = v.getContext();
  AffineMap in = bcast.getMatchingIndexingMap(bcast.getDpsInputOperand(0));
  Value src = bcast.getDpsInputOperand(0)->get();
  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  auto zero = getAffineConstantExpr(0, ctx);
  if (in == AffineMap::get(5, 0, {d(0), d(1), d(3), d(4)}, ctx))
    return std::make_pair(src, groups);
  if (in != AffineMap::get(5, 0, {d(0), d(1), zero, d(3), d(4)}, ctx))
    return std::nullopt;
  auto expand = src.getDefiningOp<tensor::ExpandShapeOp>();
  if (!expand || expand.getReassociationIndices() !=
                     SmallVector<ReassociationIndices>{{0}, {1, 2}, {3}, {4}})
    return std::nullopt;
  return std::make_pair(expand.getSrc(), groups);
}

/// Replaces the matched attention with flash.attention.
LogicalResult fuse(RewriterBase &rewriter, AttentionMatch &m, bool report,
                   std::string &reason) {
  linalg::LinalgOp pv = m.output;
  Location loc = pv.getLoc();
  MLIRContext *ctx = pv.getContext();
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(pv);
  unsigned rank = m.rank, head = rank;
  unsigned nb = m.batchDims.size();
  if (nb > 3) {
    reason = "more than three batch dimensions";
    return failure();
  }

  Type et = getElementTypeOrSelf(m.query.tensor.getType());
  if (getElementTypeOrSelf(m.key.tensor.getType()) != et ||
      getElementTypeOrSelf(m.value.tensor.getType()) != et ||
      !(et.isF16() || et.isBF16() || et.isF32())) {
    reason = "Q, K and V do not share one of the element types f16, bf16, f32";
    return failure();
  }

  // Which batch dims K and V read; the rest are broadcast (MQA/GQA).
  auto reads = [&](const TensorAccess &a, unsigned d) {
    return a.map.isFunctionOfDim(d);
  };
  SmallVector<unsigned> kvBatch;
  for (unsigned d : m.batchDims) {
    if (reads(m.key, d) != reads(m.value, d)) {
      reason = "K and V are broadcast over different batch dimensions";
      return failure();
    }
    if (reads(m.key, d))
      kvBatch.push_back(d);
  }
  bool grouped = nb == 3;
  if (grouped && (kvBatch.size() != 2 || kvBatch[0] != m.batchDims[0] ||
                  kvBatch[1] != m.batchDims[1])) {
    reason = "three batch dimensions are fused only as (batch, kv head, "
             "group) with K and V not reading the group";
    return failure();
  }
  if (!grouped && kvBatch.size() + 1 < nb) {
    reason = "K and V are broadcast over more than the head dimension";
    return failure();
  }
  if (!grouped && kvBatch.size() < nb && nb == 2 &&
      kvBatch.front() != m.batchDims.front()) {
    reason = "K and V are broadcast over the batch, not the heads";
    return failure();
  }
  if (!grouped && nb == 1 && kvBatch.empty()) {
    reason = "K and V are shared by every batch row (no head dimension to "
             "broadcast over)";
    return failure();
  }

  auto withTail = [&](ArrayRef<unsigned> batch, unsigned seq) {
    SmallVector<unsigned> dims(batch);
    dims.append({seq, head});
    return dims;
  };
  SmallVector<unsigned> qDims = withTail(m.batchDims, m.queryDim);
  SmallVector<unsigned> kvDims =
      withTail(grouped ? kvBatch : ArrayRef<unsigned>(m.batchDims), m.keyDim);
  FailureOr<Value> q = relayout(rewriter, loc, {{m.query}}, qDims, et, reason);
  FailureOr<Value> k = relayout(rewriter, loc, {{m.key}}, kvDims, et, reason);
  FailureOr<Value> v = relayout(rewriter, loc, {{m.value}}, kvDims, et, reason);
  if (failed(q) || failed(k) || failed(v))
    return failure();
  auto collapseGroups = [&](Value t) -> Value {
    auto type = cast<RankedTensorType>(t.getType());
    SmallVector<ReassociationIndices> r = {{0}, {1, 2}};
    for (int64_t i = 3; i < type.getRank(); ++i)
      r.push_back({i});
    return tensor::CollapseShapeOp::create(rewriter, loc, t, r);
  };
  if (grouped)
    *q = collapseGroups(*q);

  SmallVector<unsigned> scoreDims(m.batchDims);
  scoreDims.append({m.queryDim, m.keyDim});
  if (grouped) {
    // A bias or mask over (kv head, group) merges into Hq only if it reads
    // both or neither.
    for (const TensorAccess &a :
         llvm::concat<const TensorAccess>(llvm::make_first_range(m.biases),
                                          llvm::make_first_range(m.masks))) {
      if (reads(a, m.batchDims[1]) != reads(a, m.batchDims[2])) {
        reason = "a bias or mask varies over only one of (kv head, group)";
        return failure();
      }
    }
  }
  Value bias, mask;
  if (!m.biases.empty()) {
    SmallVector<Source> sources;
    for (auto [access, factor] : m.biases)
      sources.push_back({access, factor, false});
    Type biasType = getElementTypeOrSelf(m.biases.front().first.tensor);
    if (!(biasType.isF16() || biasType.isBF16()) || m.biases.size() > 1)
      biasType = rewriter.getF32Type();
    FailureOr<Value> r = relayout(rewriter, loc, sources, scoreDims, biasType,
                                  reason, /*allowSuffix=*/!grouped);
    if (failed(r))
      return failure();
    bias = grouped ? collapseGroups(*r) : *r;
  }
  if (!m.masks.empty()) {
    SmallVector<Source> sources;
    for (auto [access, keep] : m.masks)
      sources.push_back({access, 1.0, !keep});
    FailureOr<Value> r =
        relayout(rewriter, loc, sources, scoreDims, rewriter.getI1Type(),
                 reason, /*allowSuffix=*/!grouped);
    if (failed(r))
      return failure();
    mask = grouped ? collapseGroups(*r) : *r;
  }

  // The fused result [batch..., M, Dv] in Q's element type.
  auto qType = cast<RankedTensorType>(q->getType());
  auto vType = cast<RankedTensorType>(v->getType());
  if (qType.isDynamicDim(qType.getRank() - 1) ||
      vType.isDynamicDim(vType.getRank() - 1)) {
    reason = "the head dimension is dynamic";
    return failure();
  }
  SmallVector<int64_t> outShape(qType.getShape().drop_back());
  outShape.push_back(vType.getShape().back());
  auto outType = RankedTensorType::get(outShape, et);
  FloatAttr scaleAttr = rewriter.getF32FloatAttr(static_cast<float>(m.scale));
  UnitAttr causal = m.causal ? rewriter.getUnitAttr() : UnitAttr();
  IntegerAttr window =
      m.window ? rewriter.getI64IntegerAttr(*m.window) : IntegerAttr();
  auto fused = AttentionOp::create(rewriter, loc, TypeRange{outType}, *q, *k,
                                   *v, bias, mask, scaleAttr, causal, window);
  {
    // Quietly: a rejected candidate is reported as a remark, not an error.
    ScopedDiagnosticHandler quiet(ctx, [](Diagnostic &) { return success(); });
    if (failed(fused.verifyInvariants())) {
      rewriter.eraseOp(fused);
      reason = "the fused op would not verify";
      return failure();
    }
  }

  // Back to the layout and element type of the original result.
  Value out = fused.getOutput();
  SmallVector<unsigned> outDims(m.batchDims);
  outDims.append({m.queryDim, head});
  if (grouped) {
    auto kType = cast<RankedTensorType>(k->getType());
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(rewriter, loc, *q);
    auto groupsOf = [&]() -> OpFoldResult {
      std::optional<int64_t> hq = getConstantIntValue(sizes[1]);
      if (hq && !kType.isDynamicDim(1))
        return rewriter.getIndexAttr(*hq / kType.getDimSize(1));
      Value hqV = getValueOrCreateConstantIndexOp(rewriter, loc, sizes[1]);
      Value hkv = tensor::DimOp::create(rewriter, loc, *k, 1);
      return arith::DivUIOp::create(rewriter, loc, hqV, hkv).getResult();
    };
    SmallVector<OpFoldResult> expanded = {
        sizes[0], tensor::getMixedSize(rewriter, loc, *k, 1), groupsOf(),
        sizes[2], rewriter.getIndexAttr(outShape.back())};
    SmallVector<int64_t> shape;
    for (OpFoldResult s : expanded)
      shape.push_back(getConstantIntValue(s).value_or(ShapedType::kDynamic));
    if (ShapedType::isDynamic(shape[1]) != ShapedType::isDynamic(shape[2]) ||
        ShapedType::isDynamic(shape[1])) {
      reason = "grouped attention with dynamic head counts";
      rewriter.eraseOp(fused);
      return failure();
    }
    out = tensor::ExpandShapeOp::create(
        rewriter, loc, RankedTensorType::get(shape, et), out,
        SmallVector<ReassociationIndices>{{0}, {1, 2}, {3}, {4}}, expanded);
  }
  // out has dims outDims; the original result reads them through outputMap.
  Value result = pv->getResult(0);
  auto resultType = cast<RankedTensorType>(result.getType());
  SmallVector<AffineExpr> exprs;
  for (unsigned d : outDims)
    exprs.push_back(getAffineDimExpr(
        *m.outputMap.getResultPosition(getAffineDimExpr(d, ctx)), ctx));
  AffineMap read = AffineMap::get(resultType.getRank(), 0, exprs, ctx);
  Value replacement = out;
  if (!read.isIdentity() || resultType != out.getType()) {
    // Sizes from the fused value: the old result is defined after here.
    SmallVector<OpFoldResult> sizes(resultType.getRank());
    for (unsigned j = 0; j < read.getNumResults(); ++j)
      sizes[cast<AffineDimExpr>(read.getResult(j)).getPosition()] =
          tensor::getMixedSize(rewriter, loc, out, j);
    Value init = tensor::EmptyOp::create(rewriter, loc, sizes,
                                         resultType.getElementType());
    replacement = buildGeneric(
        rewriter, loc, out, init,
        {read, AffineMap::getMultiDimIdentityMap(resultType.getRank(), ctx)},
        SmallVector<utils::IteratorType>(resultType.getRank(),
                                         utils::IteratorType::parallel),
        [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
          Type want = resultType.getElementType();
          if (a[0].getType() == want)
            return a[0];
          return arith::ExtFOp::create(nb, nl, want, a[0]);
        });
  }
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
      groups *= repeated->second;
    fused.emitRemark(describe(m, et, groups));
  }
  // The N x N chain, and whatever only it used, is dead now.
  SmallVector<Operation *> worklist(m.chain.begin(), m.chain.end());
  for (Value operand : pv->getOperands())
    if (Operation *def = operand.getDefiningOp())
      worklist.push_back(def);
  rewriter.replaceOp(pv, replacement);
  DenseSet<Operation *> gone;
  while (!worklist.empty()) {
    Operation *op = worklist.pop_back_val();
    if (gone.contains(op) || !isOpTriviallyDead(op))
      continue;
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp())
        worklist.push_back(def);
    gone.insert(op);
    rewriter.eraseOp(op);
  }
  return success();
}

/// flash.attention on [B*H, S, D] operands collapsed from [B, H, S, D]
/// (torch-mlir's 3-D batch matmuls) -> the rank-4 op on the sources.
struct FoldCollapsedBatch : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getQuery().getType().getRank() != 3)
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
    auto fused = AttentionOp::create(rewriter, op.getLoc(), types, sources[0],
                                     sources[1], sources[2], op.getBias(),
                                     op.getMask(), op.getScaleAttr(),
                                     op.getCausalAttr(), op.getWindowAttr());
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

struct FuseAttentionPattern : OpInterfaceRewritePattern<linalg::LinalgOp> {
  using OpInterfaceRewritePattern::OpInterfaceRewritePattern;
  LogicalResult matchAndRewrite(linalg::LinalgOp op,
                                PatternRewriter &rewriter) const override {
    std::string reason;
    bool candidate = false;
    std::optional<AttentionMatch> m = matchAttention(op, reason, candidate);
    if (!m)
      return rewriter.notifyMatchFailure(op, reason);
    if (failed(fuse(rewriter, *m, /*report=*/false, reason)))
      return rewriter.notifyMatchFailure(op, reason);
    return success();
  }
};

struct FlashFuseAttentionPass
    : flash::impl::FlashFuseAttentionPassBase<FlashFuseAttentionPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> candidates;
    getOperation()->walk([&](linalg::LinalgOp op) {
      if (op.getNumReductionLoops() == 1 && op.getNumDpsInputs() == 2)
        candidates.push_back(op);
    });
    // Fusing erases ops; remember them so that later candidates are valid.
    DenseSet<Operation *> erased;
    IRRewriter rewriter(&getContext());
    struct Listener : RewriterBase::Listener {
      DenseSet<Operation *> &erased;
      explicit Listener(DenseSet<Operation *> &e) : erased(e) {}
      void notifyOperationErased(Operation *op) override { erased.insert(op); }
    } listener(erased);
    rewriter.setListener(&listener);
    for (linalg::LinalgOp op : candidates) {
      if (erased.contains(op))
        continue;
      std::string reason;
      bool candidate = false;
      std::optional<AttentionMatch> m = matchAttention(op, reason, candidate);
      if (m && succeeded(fuse(rewriter, *m, report, reason)))
        continue;
      if (report && candidate)
        op->emitRemark("not fused: ") << reason;
    }
    // Layout clean-up on the fused ops: reshapes and repeated K/V.
    RewritePatternSet patterns(&getContext());
    populateFoldIntoAttentionPatterns(patterns);
    tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns,
                                                         &getContext());
    tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, &getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace

void mlir::flash::populateFuseAttentionPatterns(RewritePatternSet &patterns) {
  patterns.add<FuseAttentionPattern>(patterns.getContext());
  populateFoldIntoAttentionPatterns(patterns);
}

void mlir::flash::populateFoldIntoAttentionPatterns(
    RewritePatternSet &patterns) {
  patterns.add<FoldCollapsedBatch, FoldRepeatedKeyValue>(patterns.getContext());
}
