//===- AttentionFusion.cpp - build flash ops from matches --------*- C++
//-*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#include "AttentionFusion.h"
#include "LinalgBuilders.h"

#include "flash/Dialect/Flash/Transforms/Passes.h"
#include "flash/Dialect/Flash/Transforms/Transforms.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::detail;

FailureOr<Value> mlir::flash::detail::relayout(OpBuilder &b, Location loc,
                                               ArrayRef<Source> sources,
                                               ArrayRef<unsigned> dims,
                                               Type elementType,
                                               std::string &reason,
                                               bool allowSuffix,
                                               unsigned maxOperandRank) {
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
  // the trailing result dims in order, or index 0 of a static unit dim
  // (a broadcast the fused op does itself), is used as it is; so are
  // leading unit dims beyond the result's rank.
  if (plain && allowSuffix) {
    unsigned n = maps.front().getNumResults();
    // The fused op takes bias and mask operands of at most its own rank.
    bool suffix = n <= (maxOperandRank ? maxOperandRank : rank);
    for (unsigned i = 0; suffix && i < n; ++i) {
      AffineExpr r = maps.front().getResult(i);
      auto c = dyn_cast<AffineConstantExpr>(r);
      bool unit = c && c.getValue() == 0 && firstType.getDimSize(i) == 1;
      suffix = unit || (i + rank >= n &&
                        r == getAffineDimExpr(rank - n + i, ctx));
    }
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

bool mlir::flash::detail::canRelayout(const TensorAccess &access,
                                      ArrayRef<unsigned> dims) {
  return llvm::all_of(access.map.getResults(), [&](AffineExpr r) {
    if (isa<AffineConstantExpr>(r))
      return true;
    auto dim = dyn_cast<AffineDimExpr>(r);
    return dim && llvm::is_contained(dims, dim.getPosition());
  });
}

std::optional<std::pair<Value, int64_t>>
mlir::flash::detail::unrepeat(Value v) {
  auto collapse = v.getDefiningOp<tensor::CollapseShapeOp>();
  if (!collapse || collapse.getSrcType().getRank() != 5 ||
      collapse.getReassociationIndices() !=
          SmallVector<ReassociationIndices>{{0}, {1, 2}, {3}, {4}})
    return std::nullopt;
  int64_t groups = collapse.getSrcType().getDimSize(2);
  auto bcast = collapse.getSrc().getDefiningOp<linalg::LinalgOp>();
  // A dynamic group count folds too: query head h reads repeated head
  // h / (Hq / (Hkv G)), which is kv head h / (Hq / Hkv) whatever G is.
  if (!bcast || bcast.getNumDpsInputs() != 1 ||
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

static FailureOr<FusedAttention> buildFused(RewriterBase &rewriter,
                                            const AttentionMatch &m,
                                            bool withLse, std::string &reason);

/// The batch dim and factor (d, c) of the first bias or mask result of the
/// form `d floordiv c` or `d mod c`.
static std::optional<std::pair<unsigned, int64_t>>
findSplitBatch(const AttentionMatch &m) {
  auto scan = [&](const TensorAccess &a)
      -> std::optional<std::pair<unsigned, int64_t>> {
    for (AffineExpr r : a.map.getResults()) {
      if (r.getKind() != AffineExprKind::FloorDiv &&
          r.getKind() != AffineExprKind::Mod)
        continue;
      auto bin = cast<AffineBinaryOpExpr>(r);
      auto dim = dyn_cast<AffineDimExpr>(bin.getLHS());
      auto c = dyn_cast<AffineConstantExpr>(bin.getRHS());
      if (dim && c && c.getValue() > 1 &&
          llvm::is_contained(m.batchDims, dim.getPosition()))
        return std::make_pair(dim.getPosition(), c.getValue());
    }
    return std::nullopt;
  };
  for (const TensorAccess &a :
       llvm::concat<const TensorAccess>(llvm::make_first_range(m.biases),
                                        llvm::make_first_range(m.masks)))
    if (auto found = scan(a))
      return found;
  return std::nullopt;
}

/// Rewrites `m` from batch dim d to (d, e) with d_old = c * d + e (e a new
/// dim): `d floordiv c` reads d, `d mod c` reads e, and a tensor dim read as
/// d plainly is expanded into (size / c, c). The expansions are recorded in
/// `created`.
static LogicalResult splitBatch(RewriterBase &rewriter, Location loc,
                                AttentionMatch &m, unsigned d, int64_t c,
                                SmallVectorImpl<Operation *> &created,
                                std::string &reason) {
  MLIRContext *ctx = rewriter.getContext();
  unsigned e = m.rank + 1; // past P's dims and the head dim
  AffineExpr dExpr = getAffineDimExpr(d, ctx), eExpr = getAffineDimExpr(e, ctx);
  auto rewrite = [&](TensorAccess &a) -> LogicalResult {
    auto type = cast<RankedTensorType>(a.tensor.getType());
    SmallVector<AffineExpr> results;
    SmallVector<ReassociationIndices> groups;
    SmallVector<int64_t> shape;
    bool expand = false;
    for (auto [i, r] : llvm::enumerate(a.map.getResults())) {
      int64_t size = type.getDimSize(i);
      groups.push_back({static_cast<int64_t>(results.size())});
      if (r == dExpr) {
        if (ShapedType::isDynamic(size) || size % c) {
          reason = "a tensor read by the split batch dimension has a size "
                   "that is dynamic or not a multiple of the split";
          return failure();
        }
        groups.back().push_back(results.size() + 1);
        results.append({dExpr, eExpr});
        shape.append({size / c, c});
        expand = true;
        continue;
      }
      AffineExpr out = r;
      if (r == dExpr.floorDiv(c))
        out = dExpr;
      else if (r == dExpr % c)
        out = eExpr;
      else if (r.isFunctionOfDim(d)) {
        reason = "an operand is indexed through a reshape that the fused op "
                 "cannot express";
        return failure();
      }
      results.push_back(out);
      shape.push_back(size);
    }
    if (expand) {
      auto op = tensor::ExpandShapeOp::create(
          rewriter, loc, RankedTensorType::get(shape, type.getElementType()),
          a.tensor, groups);
      created.push_back(op);
      a.tensor = op.getResult();
    }
    a.map = AffineMap::get(std::max(a.map.getNumDims(), e + 1), 0, results,
                           ctx);
    return success();
  };
  for (TensorAccess *a : {&m.query, &m.key, &m.value})
    if (failed(rewrite(*a)))
      return failure();
  for (auto &bias : m.biases)
    if (failed(rewrite(bias.first)))
      return failure();
  for (auto &mask : m.masks)
    if (failed(rewrite(mask.first)))
      return failure();
  auto it = llvm::find(m.batchDims, d);
  m.batchDims.insert(std::next(it), e);
  m.splitOf = std::make_pair(d, c);
  return success();
}

FailureOr<FusedAttention>
mlir::flash::detail::buildFusedAttention(RewriterBase &rewriter,
                                         const AttentionMatch &match,
                                         bool withLse, std::string &reason,
                                         bool allowSplit) {
  std::optional<std::pair<unsigned, int64_t>> split;
  if (allowSplit && match.batchDims.size() == 1)
    split = findSplitBatch(match);
  AttentionMatch splitMatch;
  SmallVector<Operation *> created;
  auto dropCreated = [&] {
    for (Operation *op : llvm::reverse(created))
      if (op->use_empty())
        rewriter.eraseOp(op);
  };
  if (split) {
    splitMatch = match;
    if (failed(splitBatch(rewriter, match.output->getLoc(), splitMatch,
                          split->first, split->second, created, reason))) {
      dropCreated();
      return failure();
    }
  }
  const AttentionMatch &m = split ? splitMatch : match;
  FailureOr<FusedAttention> built = buildFused(rewriter, m, withLse, reason);
  if (failed(built)) {
    dropCreated();
    return failure();
  }
  built->resultQueryDims = built->queryDims;
  if (split) {
    built->splitBatch = true;
    built->resultQueryDims = {match.batchDims.front(), match.queryDim,
                              match.rank};
  }
  return built;
}

/// The score_mod region of `fused` from `m`: P's dims as the region's
/// (b, h, i, j) of the rank-4 form.
static LogicalResult buildScoreMod(OpBuilder &b, AttentionOp fused,
                                   const AttentionMatch &m,
                                   std::string &reason) {
  MLIRContext *ctx = fused.getContext();
  AffineExpr batch = getAffineDimExpr(0, ctx), head = getAffineDimExpr(1, ctx);
  SmallVector<AffineExpr> fromP(m.rank + 1, getAffineConstantExpr(0, ctx));
  fromP[m.queryDim] = getAffineDimExpr(2, ctx);
  fromP[m.keyDim] = getAffineDimExpr(3, ctx);
  ArrayRef<unsigned> dims = m.batchDims;
  if (m.splitOf) {
    // The one batch dim d of the trees is now (d / c, d mod c).
    fromP[m.splitOf->first] = batch * m.splitOf->second + head;
  } else if (dims.size() == 1) {
    fromP[dims[0]] = head;
  } else if (dims.size() == 2) {
    fromP[dims[0]] = batch;
    fromP[dims[1]] = head;
  } else if (dims.size() == 3) {
    // (b, kv head, group) with h = kv head * G + group.
    int64_t hq = fused.getQuery().getType().getDimSize(1);
    int64_t hkv = fused.getKey().getType().getDimSize(1);
    if (ShapedType::isDynamic(hq) || ShapedType::isDynamic(hkv)) {
      reason = "a score modification on grouped heads of dynamic count";
      return failure();
    }
    fromP[dims[0]] = batch;
    fromP[dims[1]] = head.floorDiv(hq / hkv);
    fromP[dims[2]] = head % (hq / hkv);
  }
  return buildScoreModRegion(b, fused, m, fromP, reason);
}

static FailureOr<FusedAttention> buildFused(RewriterBase &rewriter,
                                            const AttentionMatch &m,
                                            bool withLse,
                                            std::string &reason) {
  linalg::LinalgOp pv = m.output;
  Location loc = pv.getLoc();
  MLIRContext *ctx = pv.getContext();
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
  auto collapseGroups = [&](Value t) {
    return flash::detail::collapseGroups(rewriter, loc, t);
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
  // A bias or mask over the score dims; with groups, one that reads only
  // (M, N) broadcasts alike before and after (kv head, group) merge into
  // Hq, so it is used as it is (no copy).
  auto scoreOperand = [&](ArrayRef<Source> sources,
                          Type type) -> FailureOr<Value> {
    SmallVector<unsigned> seqDims = {m.queryDim, m.keyDim};
    if (grouped && llvm::all_of(sources, [&](const Source &s) {
          return canRelayout(s.access, seqDims);
        }))
      return relayout(rewriter, loc, sources, seqDims, type, reason,
                      /*allowSuffix=*/true, /*maxOperandRank=*/4);
    FailureOr<Value> r = relayout(rewriter, loc, sources, scoreDims, type,
                                  reason, /*allowSuffix=*/!grouped);
    if (failed(r))
      return failure();
    return grouped ? collapseGroups(*r) : *r;
  };
  Value bias, mask;
  if (!m.biases.empty()) {
    SmallVector<Source> sources;
    for (auto [access, factor] : m.biases)
      sources.push_back({access, factor, false});
    Type biasType = getElementTypeOrSelf(m.biases.front().first.tensor);
    if (!(biasType.isF16() || biasType.isBF16()) || m.biases.size() > 1)
      biasType = rewriter.getF32Type();
    FailureOr<Value> r = scoreOperand(sources, biasType);
    if (failed(r))
      return failure();
    bias = *r;
  }
  if (!m.masks.empty()) {
    SmallVector<Source> sources;
    for (auto [access, keep] : m.masks)
      sources.push_back({access, 1.0, !keep});
    FailureOr<Value> r = scoreOperand(sources, rewriter.getI1Type());
    if (failed(r))
      return failure();
    mask = *r;
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
  Value runtimeScale;
  if (m.runtimeScale) {
    // scale * r or scale / r, computed once before the op (r dominates the
    // score computation, which comes before the fused op's position).
    Value constant = arith::ConstantOp::create(rewriter, loc, scaleAttr);
    runtimeScale =
        m.divideByRuntimeScale
            ? arith::DivFOp::create(rewriter, loc, constant, m.runtimeScale)
                  .getResult()
            : arith::MulFOp::create(rewriter, loc, constant, m.runtimeScale)
                  .getResult();
    scaleAttr = FloatAttr();
  }
  UnitAttr causal = m.causal ? rewriter.getUnitAttr() : UnitAttr();
  IntegerAttr window =
      m.window ? rewriter.getI64IntegerAttr(*m.window) : IntegerAttr();
  SmallVector<Type> resultTypes = {outType};
  if (withLse)
    resultTypes.push_back(RankedTensorType::get(qType.getShape().drop_back(),
                                                rewriter.getF32Type()));
  auto fused = AttentionOp::create(
      rewriter, loc, resultTypes, *q, *k, *v, bias, mask, /*sinks=*/Value(),
      /*key_lengths=*/Value(), /*block_table=*/Value(),
      /*cu_seqlens_q=*/Value(), /*cu_seqlens_k=*/Value(), runtimeScale,
      scaleAttr, causal, window);
  // A rejected op goes with the scale product built for it (constant, then
  // mul/div).
  auto discard = [&] {
    rewriter.eraseOp(fused);
    if (Operation *product =
            runtimeScale ? runtimeScale.getDefiningOp() : nullptr) {
      Operation *constant = product->getOperand(0).getDefiningOp();
      rewriter.eraseOp(product);
      rewriter.eraseOp(constant);
    }
    return failure();
  };
  {
    // Quietly: a rejected candidate is reported as a remark, not an error.
    ScopedDiagnosticHandler quiet(ctx, [](Diagnostic &) { return success(); });
    if (failed(fused.verifyInvariants())) {
      reason = "the fused op would not verify";
      return discard();
    }
  }
  if (m.hasScoreMod() && failed(buildScoreMod(rewriter, fused, m, reason)))
    return discard();
  return FusedAttention{fused, qDims, kvDims, grouped};
}

Value mlir::flash::detail::collapseGroups(OpBuilder &b, Location loc,
                                          Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<ReassociationIndices> r = {{0}, {1, 2}};
  for (int64_t i = 3; i < type.getRank(); ++i)
    r.push_back({i});
  return tensor::CollapseShapeOp::create(b, loc, value, r);
}

FailureOr<Value> mlir::flash::detail::ungroup(RewriterBase &rewriter,
                                              const FusedAttention &fused,
                                              Value value,
                                              std::string &reason) {
  if (!fused.grouped)
    return value;
  Location loc = value.getLoc();
  AttentionOp op = fused.op;
  Value q = op.getQuery(), k = op.getKey();
  auto kType = cast<RankedTensorType>(k.getType());
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(rewriter, loc, q);
  std::optional<int64_t> hq = getConstantIntValue(sizes[1]);
  if (!hq || kType.isDynamicDim(1)) {
    reason = "grouped attention with dynamic head counts";
    return failure();
  }
  int64_t hkv = kType.getDimSize(1);
  SmallVector<OpFoldResult> expanded = {sizes[0], rewriter.getIndexAttr(hkv),
                                        rewriter.getIndexAttr(*hq / hkv),
                                        sizes[2]};
  SmallVector<ReassociationIndices> groups = {{0}, {1, 2}, {3}};
  if (type.getRank() == 4) {
    expanded.push_back(rewriter.getIndexAttr(type.getDimSize(3)));
    groups.push_back({4});
  }
  SmallVector<int64_t> shape;
  for (OpFoldResult s : expanded)
    shape.push_back(getConstantIntValue(s).value_or(ShapedType::kDynamic));
  return tensor::ExpandShapeOp::create(
             rewriter, loc, RankedTensorType::get(shape, type.getElementType()),
             value, groups, expanded)
      .getResult();
}

Value mlir::flash::detail::toResultLayout(OpBuilder &b, Location loc,
                                          Value value, ArrayRef<unsigned> dims,
                                          AffineMap resultMap,
                                          RankedTensorType resultType,
                                          double factor) {
  MLIRContext *ctx = b.getContext();
  SmallVector<AffineExpr> exprs;
  for (unsigned d : dims)
    exprs.push_back(getAffineDimExpr(
        *resultMap.getResultPosition(getAffineDimExpr(d, ctx)), ctx));
  AffineMap read = AffineMap::get(resultType.getRank(), 0, exprs, ctx);
  if (read.isIdentity() && resultType == value.getType() && factor == 1.0)
    return value;
  // Sizes from `value`: the replaced result is defined after here.
  SmallVector<OpFoldResult> sizes(resultType.getRank());
  for (unsigned j = 0; j < read.getNumResults(); ++j)
    sizes[cast<AffineDimExpr>(read.getResult(j)).getPosition()] =
        tensor::getMixedSize(b, loc, value, j);
  Type want = resultType.getElementType();
  Value init = tensor::EmptyOp::create(b, loc, sizes, want);
  Value result = buildGeneric(
      b, loc, value, init,
      {read, AffineMap::getMultiDimIdentityMap(resultType.getRank(), ctx)},
      SmallVector<utils::IteratorType>(resultType.getRank(),
                                       utils::IteratorType::parallel),
      [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
        Value v = a[0];
        if (factor != 1.0) {
          v = extendToF32(nb, nl, v);
          Value f = arith::ConstantOp::create(
              nb, nl, nb.getF32FloatAttr(static_cast<float>(factor)));
          v = arith::MulFOp::create(nb, nl, v, f);
        }
        if (v.getType() == want)
          return v;
        return v.getType().getIntOrFloatBitWidth() <
                       want.getIntOrFloatBitWidth()
                   ? arith::ExtFOp::create(nb, nl, want, v).getResult()
                   : arith::TruncFOp::create(nb, nl, want, v).getResult();
      });
  if (result.getType() != resultType)
    result = tensor::CastOp::create(b, loc, resultType, result);
  return result;
}

void mlir::flash::detail::eraseDeadOps(RewriterBase &rewriter,
                                       ArrayRef<Operation *> seeds) {
  SmallVector<Operation *> worklist(seeds);
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
}

void mlir::flash::detail::forEachAttentionCandidate(
    Operation *root,
    function_ref<void(PatternRewriter &, linalg::LinalgOp)> fn) {
  SmallVector<linalg::LinalgOp> candidates;
  root->walk([&](linalg::LinalgOp op) {
    if (op.getNumReductionLoops() == 1 && op.getNumDpsInputs() == 2)
      candidates.push_back(op);
  });
  // Fusing erases ops; remember them so that later candidates are valid.
  DenseSet<Operation *> erased;
  PatternRewriter rewriter(root->getContext());
  struct Listener : RewriterBase::Listener {
    DenseSet<Operation *> &erased;
    explicit Listener(DenseSet<Operation *> &e) : erased(e) {}
    void notifyOperationErased(Operation *op) override { erased.insert(op); }
  } listener(erased);
  rewriter.setListener(&listener);
  for (linalg::LinalgOp op : candidates)
    if (!erased.contains(op))
      fn(rewriter, op);
}

LogicalResult mlir::flash::detail::foldIntoFusedOps(Operation *root) {
  MLIRContext *ctx = root->getContext();
  RewritePatternSet patterns(ctx);
  populateFoldIntoAttentionPatterns(patterns);
  AttentionBackwardOp::getCanonicalizationPatterns(patterns, ctx);
  tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns, ctx);
  tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, ctx);
  return applyPatternsGreedily(root, std::move(patterns));
}
