//===- DecomposeAttention.cpp - flash ops to naive linalg -------*- C++ -*-===//
//
// Part of the flash-mlir project.
//
// The reference semantics of flash.attention and flash.attention_backward,
// spelled out as linalg on tensors. Everything is computed in a "grouped"
// iteration space (b, hkv, g, m, n) where the query-head axis Hq is split
// into (Hkv, G = Hq / Hkv): K and V are then indexed by (b, hkv) only, so
// grouped-query attention needs no gather and dK/dV sum over g inside their
// contraction.
//
//===----------------------------------------------------------------------===//

#include "flash/Dialect/Flash/Transforms/Passes.h"
#include "flash/Dialect/Flash/Transforms/Transforms.h"

#include "LinalgBuilders.h"
#include "SizeChecks.h"
#include "TileBuilders.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Rewrite/FrozenRewritePatternSet.h"
#include "mlir/Rewrite/PatternApplicator.h"
#include "llvm/ADT/TypeSwitch.h"

#include <limits>
#include <type_traits>

namespace mlir::flash {
#define GEN_PASS_DEF_FLASHDECOMPOSEATTENTIONPASS
#include "flash/Dialect/Flash/Transforms/Passes.h.inc"
} // namespace mlir::flash

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::detail;

namespace {

/// Packed variable-length sequences (cu_seqlens), as index tensors the
/// bodies read: for each sequence s < S and one more entry S (the rows past
/// the last sequence, with no keys) where its queries and keys start and
/// how many there are, and the sequence of each query and key row (S for a
/// row in none).
struct VarlenTables {
  Value sequences;
  Value queryStart, queryCount, keyStart, keyCount;
  Value queryOwner, keyOwner;
};

/// Sizes and options of one rank-4 attention problem in the grouped space.
struct GroupedProblem {
  Location loc;
  MLIRContext *ctx;
  Type f32;
  OpFoldResult batch, queryHeads, kvHeads, group, querySeq, keySeq;
  int64_t headDim, valueDim;
  bool staticGroup;
  float scale;
  bool causal;
  std::optional<int64_t> window;
  Value bias, mask;
  /// The forward's scale when it is known only at run time (`scale` is
  /// then unused).
  Value runtimeScale = {};
  /// The score_mod region that rewrites the scaled scores (null without).
  Region *scoreMod = nullptr;
  /// The per-query-head sink logits [Hq] (null without).
  Value sinks = {};
  /// The keys of each sequence [B] (null without: all N).
  Value keyLengths = {};
  /// With cu_seqlens (B = 1 then).
  std::optional<VarlenTables> varlen = {};
};

/// Where a query row of sequence `sq` and a key row of sequence `sk` (S for
/// none) meet, inside a body: whether they are of one sequence, which, their
/// positions within it and its query and key counts.
struct SequencePair {
  Value same, sequence, i, j, queries, keys;
};

class NaiveBuilder {
public:
  NaiveBuilder(OpBuilder &b, GroupedProblem &p) : b(b), p(p) {}

  AffineMap map(unsigned numDims, ArrayRef<unsigned> dims) {
    return dimsMap(p.ctx, numDims, dims);
  }
  AffineMap identity(unsigned n) {
    return AffineMap::getMultiDimIdentityMap(n, p.ctx);
  }

  Value filled(ArrayRef<OpFoldResult> sizes, double value) {
    return buildFilled(b, p.loc, sizes, b.getF32Type(), value);
  }

  Value generic(ValueRange ins, Value init, ArrayRef<AffineMap> maps,
                ArrayRef<IteratorType> iters, BodyFn body) {
    return buildGeneric(b, p.loc, ins, init, maps, iters, body);
  }

  /// out[outMap] += f32(lhs[lhsMap]) * f32(rhs[rhsMap]) over `iters`.
  Value contract(Value lhs, AffineMap lhsMap, Value rhs, AffineMap rhsMap,
                 ArrayRef<OpFoldResult> outSizes, AffineMap outMap,
                 ArrayRef<IteratorType> iters) {
    Value init = filled(outSizes, 0.0);
    return generic({lhs, rhs}, init, {lhsMap, rhsMap, outMap}, iters,
                   [&](OpBuilder &nb, Location loc, ValueRange a) -> Value {
                     Value x = extendToF32(nb, loc, a[0]);
                     Value y = extendToF32(nb, loc, a[1]);
                     Value mul = arith::MulFOp::create(nb, loc, x, y);
                     return arith::AddFOp::create(nb, loc, a[2], mul);
                   });
  }

  /// Splits dimension `headIdx` of `value` (of size Hq) into (Hkv, G).
  Value expandHeads(Value value, int64_t headIdx) {
    if (!p.staticGroup)
      return gatherHeads(value, headIdx);
    auto type = cast<RankedTensorType>(value.getType());
    SmallVector<int64_t> srcShape(type.getShape());
    srcShape[headIdx] = *getConstantIntValue(p.queryHeads);
    if (srcShape != type.getShape()) {
      type = RankedTensorType::get(srcShape, type.getElementType());
      value = tensor::CastOp::create(b, p.loc, type, value);
    }
    SmallVector<int64_t> shape;
    SmallVector<OpFoldResult> sizes;
    SmallVector<ReassociationIndices> reassoc;
    SmallVector<OpFoldResult> srcSizes = tensor::getMixedSizes(b, p.loc, value);
    for (int64_t i = 0, e = type.getRank(); i < e; ++i) {
      int64_t next = shape.size();
      if (i == headIdx) {
        for (OpFoldResult s : {p.kvHeads, p.group}) {
          sizes.push_back(s);
          shape.push_back(*getConstantIntValue(s));
        }
        reassoc.push_back({next, next + 1});
        continue;
      }
      sizes.push_back(srcSizes[i]);
      shape.push_back(type.getDimSize(i));
      reassoc.push_back({next});
    }
    return tensor::ExpandShapeOp::create(
        b, p.loc, RankedTensorType::get(shape, type.getElementType()), value,
        reassoc, sizes);
  }

  /// expandHeads for a group size known only at run time, as a copy: an
  /// expand_shape with two dynamic sizes in one group would be exact, but
  /// --expand-strided-metadata of LLVM 22.1.8 crashes on its memref form.
  Value gatherHeads(Value value, int64_t headIdx) {
    auto type = cast<RankedTensorType>(value.getType());
    SmallVector<OpFoldResult> srcSizes = tensor::getMixedSizes(b, p.loc, value);
    SmallVector<OpFoldResult> sizes;
    for (int64_t i = 0, e = type.getRank(); i < e; ++i) {
      if (i == headIdx) {
        sizes.append({p.kvHeads, p.group});
        continue;
      }
      sizes.push_back(srcSizes[i]);
    }
    Value init =
        tensor::EmptyOp::create(b, p.loc, sizes, type.getElementType());
    unsigned rank = sizes.size();
    Value group = getValueOrCreateConstantIndexOp(b, p.loc, p.group);
    return generic(ValueRange{}, init, {identity(rank)},
                   SmallVector<IteratorType>(rank, kPar),
                   [&](OpBuilder &nb, Location loc, ValueRange) -> Value {
                     SmallVector<Value> indices;
                     for (unsigned i = 0; i < rank; ++i) {
                       if (i == static_cast<unsigned>(headIdx) + 1)
                         continue;
                       Value idx = linalg::IndexOp::create(nb, loc, i);
                       if (i == static_cast<unsigned>(headIdx)) {
                         Value g = linalg::IndexOp::create(nb, loc, i + 1);
                         Value base =
                             arith::MulIOp::create(nb, loc, idx, group);
                         idx = arith::AddIOp::create(nb, loc, base, g);
                       }
                       indices.push_back(idx);
                     }
                     return tensor::ExtractOp::create(nb, loc, value, indices);
                   });
  }

  /// Merges dimensions (1, 2) = (Hkv, G) of `value` back into Hq and gives
  /// the result `type` (casting where the static information differs).
  Value collapseHeads(Value value, RankedTensorType type) {
    auto srcType = cast<RankedTensorType>(value.getType());
    SmallVector<ReassociationIndices> reassoc = {{0}, {1, 2}};
    for (int64_t i = 3; i < srcType.getRank(); ++i)
      reassoc.push_back({i});
    Value collapsed = tensor::CollapseShapeOp::create(b, p.loc, value, reassoc);
    if (collapsed.getType() != type)
      collapsed = tensor::CastOp::create(b, p.loc, type, collapsed);
    return collapsed;
  }

  /// Converts an f32 tensor to `elementType` (no-op for f32), multiplying by
  /// `factor` on the way when it is not 1.
  Value finish(Value value, Type elementType, float factor = 1.0f) {
    if (elementType == p.f32 && factor == 1.0f)
      return value;
    auto type = cast<RankedTensorType>(value.getType());
    Value init = tensor::EmptyOp::create(
        b, p.loc, tensor::getMixedSizes(b, p.loc, value), elementType);
    unsigned rank = type.getRank();
    SmallVector<IteratorType> iters(rank, kPar);
    return generic(value, init, {identity(rank), identity(rank)}, iters,
                   [&](OpBuilder &nb, Location loc, ValueRange a) -> Value {
                     Value v = a[0];
                     if (factor != 1.0f) {
                       Value f = arith::ConstantOp::create(
                           nb, loc, nb.getF32FloatAttr(factor));
                       v = arith::MulFOp::create(nb, loc, v, f);
                     }
                     if (elementType != p.f32)
                       v = arith::TruncFOp::create(nb, loc, elementType, v);
                     return v;
                   });
  }

  /// Indexing map of a bias or mask operand (right-aligned to [B, Hq, M, N])
  /// in the grouped 5-D space; expands its head dimension when it has one.
  std::pair<Value, AffineMap> scoreOperand(Value operand) {
    auto type = cast<RankedTensorType>(operand.getType());
    int64_t rank = type.getRank();
    int64_t lead = 4 - rank;
    SmallVector<AffineExpr> exprs;
    int64_t headIdx = -1;
    for (int64_t i = 0; i < rank; ++i) {
      int64_t logical = lead + i;
      if (type.getDimSize(i) == 1) {
        exprs.push_back(getAffineConstantExpr(0, p.ctx));
        continue;
      }
      switch (logical) {
      case 0:
        exprs.push_back(getAffineDimExpr(0, p.ctx));
        break;
      case 1:
        headIdx = i;
        exprs.push_back(getAffineDimExpr(1, p.ctx));
        exprs.push_back(getAffineDimExpr(2, p.ctx));
        break;
      case 2:
        exprs.push_back(getAffineDimExpr(3, p.ctx));
        break;
      default:
        exprs.push_back(getAffineDimExpr(4, p.ctx));
        break;
      }
    }
    if (headIdx >= 0)
      operand = expandHeads(operand, headIdx);
    return {operand, AffineMap::get(5, 0, exprs, p.ctx)};
  }

  /// The sinks as f32 [Hkv, G] in the grouped space.
  Value groupedSinks() {
    Value grouped = expandHeads(p.sinks, 0);
    Value init = tensor::EmptyOp::create(
        b, p.loc, tensor::getMixedSizes(b, p.loc, grouped), p.f32);
    return generic(grouped, init, {identity(2), identity(2)}, {kPar, kPar},
                   [&](OpBuilder &nb, Location loc, ValueRange a) -> Value {
                     return extendToF32(nb, loc, a[0]);
                   });
  }

  SmallVector<OpFoldResult> scoreSizes() {
    return {p.batch, p.kvHeads, p.group, p.querySeq, p.keySeq};
  }
  SmallVector<OpFoldResult> rowSizes() {
    return {p.batch, p.kvHeads, p.group, p.querySeq};
  }

  /// The rank-4 indices (b, h = kv head * G + group, i, j) of the grouped
  /// score space (b, kv head, group, i, j), inside a generic's body.
  SmallVector<Value> scoreIndices(OpBuilder &nb, Location loc) {
    Value group = getValueOrCreateConstantIndexOp(nb, loc, p.group);
    Value head = arith::AddIOp::create(
        nb, loc,
        arith::MulIOp::create(nb, loc, linalg::IndexOp::create(nb, loc, 1),
                              group),
        linalg::IndexOp::create(nb, loc, 2));
    return {linalg::IndexOp::create(nb, loc, 0), head,
            linalg::IndexOp::create(nb, loc, 3),
            linalg::IndexOp::create(nb, loc, 4)};
  }

  SequencePair sequencePair(OpBuilder &nb, Location loc, Value sq, Value sk,
                            Value t, Value u) {
    const VarlenTables &v = *p.varlen;
    auto at = [&](Value table) -> Value {
      return tensor::ExtractOp::create(nb, loc, table, sq);
    };
    Value same = arith::AndIOp::create(
        nb, loc,
        arith::CmpIOp::create(nb, loc, arith::CmpIPredicate::eq, sq, sk),
        arith::CmpIOp::create(nb, loc, arith::CmpIPredicate::ult, sq,
                              v.sequences));
    return {same,
            sq,
            arith::SubIOp::create(nb, loc, t, at(v.queryStart)),
            arith::SubIOp::create(nb, loc, u, at(v.keyStart)),
            at(v.queryCount),
            at(v.keyCount)};
  }

  /// `value` with the elements where `keep(info)` is false set to `fill`,
  /// `info` read from `rowInfo` through `infoMap` (so that the results never
  /// read what they hold: 0 x NaN would be NaN).
  Value keepRows(Value value, Value rowInfo, AffineMap infoMap, TypedAttr fill,
                 function_ref<Value(OpBuilder &, Location, Value)> keep) {
    auto type = cast<RankedTensorType>(value.getType());
    unsigned rank = type.getRank();
    Value init = tensor::EmptyOp::create(b, p.loc,
                                         tensor::getMixedSizes(b, p.loc, value),
                                         type.getElementType());
    return generic({value, rowInfo}, init,
                   {identity(rank), infoMap, identity(rank)},
                   SmallVector<IteratorType>(rank, kPar),
                   [&](OpBuilder &nb, Location loc, ValueRange a) -> Value {
                     Value other = arith::ConstantOp::create(nb, loc, fill);
                     return arith::SelectOp::create(
                         nb, loc, keep(nb, loc, a[1]), a[0], other);
                   });
  }

  /// `value` (tokens along dimension 2) with the rows that are in no
  /// sequence (`owner` [T] is S there) set to `fill`.
  Value keepSequenceRows(Value value, Value owner, TypedAttr fill) {
    unsigned rank = cast<RankedTensorType>(value.getType()).getRank();
    return keepRows(value, owner, map(rank, {2}), fill,
                    [&](OpBuilder &nb, Location loc, Value sequence) -> Value {
                      return arith::CmpIOp::create(
                          nb, loc, arith::CmpIPredicate::ult, sequence,
                          p.varlen->sequences);
                    });
  }

  /// Q Kᵀ over the grouped score space, unscaled.
  Value rawScores(Value q5, Value k) {
    SmallVector<IteratorType> iters(5, kPar);
    iters.push_back(kRed);
    return contract(q5, map(6, {0, 1, 2, 3, 5}), k, map(6, {0, 1, 4, 5}),
                    scoreSizes(), map(6, {0, 1, 2, 3, 4}), iters);
  }

  /// The scale as a value inside a body.
  Value scaleValue(OpBuilder &nb, Location loc) {
    return p.runtimeScale ? p.runtimeScale
                          : arith::ConstantOp::create(
                                nb, loc, nb.getF32FloatAttr(p.scale))
                                .getResult();
  }

  /// S = mod(scale * Q Kᵀ) + bias, with causal and mask positions set to
  /// -inf, from the raw scores `s`.
  Value maskedScores(Value s) {

    SmallVector<Value> ins = {s};
    SmallVector<AffineMap> maps = {identity(5)};
    int biasArg = -1, maskArg = -1;
    if (p.bias) {
      auto [v, m] = scoreOperand(p.bias);
      biasArg = ins.size();
      ins.push_back(v);
      maps.push_back(m);
    }
    if (p.mask) {
      auto [v, m] = scoreOperand(p.mask);
      maskArg = ins.size();
      ins.push_back(v);
      maps.push_back(m);
    }
    int lengthArg = -1, ownerArg = -1;
    if (p.keyLengths) {
      lengthArg = ins.size();
      ins.push_back(p.keyLengths);
      maps.push_back(map(5, {0}));
    }
    if (p.varlen) {
      ownerArg = ins.size();
      ins.append({p.varlen->queryOwner, p.varlen->keyOwner});
      maps.append({map(5, {3}), map(5, {4})});
    }
    maps.push_back(identity(5));
    Value keys = getValueOrCreateConstantIndexOp(b, p.loc, p.keySeq);
    Value queries = getValueOrCreateConstantIndexOp(b, p.loc, p.querySeq);
    // The diagonal N - M and the window's first key offset, at `nb` for
    // sequences of `m` queries and `n` keys.
    auto alignment = [&](OpBuilder &nb, Location loc, Value m,
                         Value n) -> std::pair<Value, Value> {
      Value diagonal = arith::SubIOp::create(nb, loc, n, m);
      Value windowStart;
      if (p.window)
        windowStart = arith::SubIOp::create(
            nb, loc, diagonal, buildClampedWindow(nb, loc, *p.window, m, n));
      return {diagonal, windowStart};
    };
    Value diagonal, windowStart;
    if ((p.causal || p.window) && !p.keyLengths && !p.varlen)
      std::tie(diagonal, windowStart) = alignment(b, p.loc, queries, keys);
    Value init = tensor::EmptyOp::create(b, p.loc, scoreSizes(), p.f32);
    return generic(
        ins, init, maps, SmallVector<IteratorType>(5, kPar),
        [&](OpBuilder &nb, Location loc, ValueRange a) -> Value {
          Value v = arith::MulFOp::create(nb, loc, a[0], scaleValue(nb, loc));
          Value masked;
          auto orMask = [&](Value hidden) {
            masked =
                masked
                    ? arith::OrIOp::create(nb, loc, masked, hidden).getResult()
                    : hidden;
          };
          // The pair's positions (i, j): within its sequence with cu_seqlens.
          Value pairI, pairJ;
          auto position = [&](Value pair, unsigned dim) -> Value {
            return pair ? pair : linalg::IndexOp::create(nb, loc, dim);
          };
          if (ownerArg >= 0) {
            // Only the query's own sequence; positions within it, causal and
            // window aligned to its last key. The score_mod sees (sequence,
            // h, i, j) and runs only on pairs of one sequence.
            SmallVector<Value> indices = scoreIndices(nb, loc);
            SequencePair pair = sequencePair(
                nb, loc, a[ownerArg], a[ownerArg + 1], indices[2], indices[3]);
            Value one =
                arith::ConstantOp::create(nb, loc, nb.getBoolAttr(true));
            orMask(arith::XOrIOp::create(nb, loc, pair.same, one));
            indices = {pair.sequence, indices[1], pair.i, pair.j};
            pairI = pair.i;
            pairJ = pair.j;
            if (p.causal || p.window)
              std::tie(diagonal, windowStart) =
                  alignment(nb, loc, pair.queries, pair.keys);
            if (p.scoreMod)
              v = buildIfElse(
                  nb, loc, pair.same,
                  [&](OpBuilder &tb, Location tl) {
                    return buildScoreMod(tb, *p.scoreMod, v, indices);
                  },
                  v);
          } else if (p.scoreMod) {
            v = buildScoreMod(nb, *p.scoreMod, v, scoreIndices(nb, loc));
          }
          if (biasArg >= 0)
            v = arith::AddFOp::create(nb, loc, v,
                                      extendToF32(nb, loc, a[biasArg]));
          if (lengthArg >= 0) {
            // Sequence b's keys [0, N_b); causal and window aligned to N_b.
            Value length = clampedIndexValue(nb, loc, a[lengthArg], keys);
            orMask(arith::CmpIOp::create(nb, loc, arith::CmpIPredicate::sge,
                                         position(pairJ, 4), length));
            if (p.causal || p.window)
              std::tie(diagonal, windowStart) =
                  alignment(nb, loc, queries, length);
          }
          if (p.causal || p.window) {
            Value qi = position(pairI, 3);
            Value kj = position(pairJ, 4);
            if (p.causal) {
              Value last = arith::AddIOp::create(nb, loc, qi, diagonal);
              orMask(arith::CmpIOp::create(nb, loc, arith::CmpIPredicate::sgt,
                                           kj, last));
            }
            if (p.window) {
              Value first = arith::AddIOp::create(nb, loc, qi, windowStart);
              orMask(arith::CmpIOp::create(nb, loc, arith::CmpIPredicate::slt,
                                           kj, first));
            }
          }
          if (maskArg >= 0) {
            Value one =
                arith::ConstantOp::create(nb, loc, nb.getBoolAttr(true));
            orMask(arith::XOrIOp::create(nb, loc, a[maskArg], one));
          }
          if (masked) {
            v = arith::SelectOp::create(nb, loc, masked, negInfF32(nb, loc), v);
          }
          return v;
        });
  }

  /// Reduction over the key axis (dimension 4) of a grouped score tensor.
  Value rowReduce(Value scores, double init, bool isMax) {
    Value acc = filled(rowSizes(), init);
    SmallVector<IteratorType> iters(4, kPar);
    iters.push_back(kRed);
    return generic(scores, acc, {identity(5), map(5, {0, 1, 2, 3})}, iters,
                   [&](OpBuilder &nb, Location loc, ValueRange a) -> Value {
                     if (isMax)
                       return arith::MaximumFOp::create(nb, loc, a[0], a[1]);
                     return arith::AddFOp::create(nb, loc, a[0], a[1]);
                   });
  }

  /// exp(s - row) over the grouped score space, with a -inf row value
  /// (a fully masked row) treated as `subst` so that no NaN appears.
  Value expMinusRow(Value scores, Value row, double subst) {
    Value init = tensor::EmptyOp::create(b, p.loc, scoreSizes(), p.f32);
    return generic(
        {scores, row}, init, {identity(5), map(5, {0, 1, 2, 3}), identity(5)},
        SmallVector<IteratorType>(5, kPar),
        [&](OpBuilder &nb, Location loc, ValueRange a) -> Value {
          Value ninf = negInfF32(nb, loc);
          Value sub = arith::ConstantOp::create(
              nb, loc, nb.getF32FloatAttr(static_cast<float>(subst)));
          Value isNinf = arith::CmpFOp::create(
              nb, loc, arith::CmpFPredicate::OEQ, a[1], ninf);
          Value r = arith::SelectOp::create(nb, loc, isNinf, sub, a[1]);
          Value d = arith::SubFOp::create(nb, loc, a[0], r);
          return math::ExpOp::create(nb, loc, d);
        });
  }

  OpBuilder &b;
  GroupedProblem &p;
};

OpFoldResult pickDim(OpBuilder &b, Location loc,
                     ArrayRef<std::pair<Value, int64_t>> candidates) {
  for (auto [v, d] : candidates) {
    int64_t size = cast<RankedTensorType>(v.getType()).getDimSize(d);
    if (!ShapedType::isDynamic(size))
      return b.getIndexAttr(size);
  }
  auto [v, d] = candidates.front();
  return tensor::DimOp::create(b, loc, v, d).getResult();
}

/// The constant scale, or 1 when the forward's scale comes at run time.
template <typename OpTy> static float constantScale(OpTy op) {
  if constexpr (std::is_same_v<OpTy, AttentionOp>)
    if (op.getRuntimeScale())
      return 1.0f;
  return op.getEffectiveScale();
}

template <typename OpTy> GroupedProblem makeProblem(OpBuilder &b, OpTy op) {
  Location loc = op.getLoc();
  TypedValue<RankedTensorType> q = op.getQuery(), k = op.getKey(),
                               v = op.getValue();
  GroupedProblem p{loc,
                   op.getContext(),
                   b.getF32Type(),
                   {},
                   {},
                   {},
                   {},
                   {},
                   {},
                   0,
                   0,
                   false,
                   constantScale(op),
                   op.getCausal(),
                   op.getWindow(),
                   op.getBias(),
                   op.getMask()};
  if constexpr (std::is_same_v<OpTy, AttentionOp>) {
    p.runtimeScale = op.getRuntimeScale();
    // With cu_seqlens the lengths are per sequence (VarlenTables).
    if (!op.isVarlen())
      p.keyLengths = op.getKeyLengths();
  }
  if (op.hasScoreMod())
    p.scoreMod = &op.getScoreMod();
  p.sinks = op.getSinks();
  p.batch = pickDim(b, loc, {{q, 0}, {k, 0}, {v, 0}});
  p.queryHeads = pickDim(b, loc, {{q, 1}});
  p.kvHeads = pickDim(b, loc, {{k, 1}, {v, 1}});
  p.querySeq = pickDim(b, loc, {{q, 2}});
  p.keySeq = pickDim(b, loc, {{k, 2}, {v, 2}});
  p.headDim = q.getType().getDimSize(3);
  p.valueDim = v.getType().getDimSize(3);
  std::optional<int64_t> hq = getConstantIntValue(p.queryHeads);
  std::optional<int64_t> hkv = getConstantIntValue(p.kvHeads);
  p.staticGroup = hq && hkv;
  if (p.staticGroup) {
    p.group = b.getIndexAttr(*hq / *hkv);
  } else {
    Value hqV = getValueOrCreateConstantIndexOp(b, loc, p.queryHeads);
    Value hkvV = getValueOrCreateConstantIndexOp(b, loc, p.kvHeads);
    p.group = arith::DivUIOp::create(b, loc, hqV, hkvV).getResult();
  }
  return p;
}
} // namespace

/// The tables of packed sequences cut by the offsets `cuQ` and `cuK`
/// ([S + 1], each clamped to the tokens), the keys of sequence s limited to
/// `used[s]` when given.
static VarlenTables buildVarlenTables(OpBuilder &b, const GroupedProblem &p,
                                      Value cuQ, Value cuK, Value used) {
  Location loc = p.loc;
  MLIRContext *ctx = b.getContext();
  Type indexType = b.getIndexType();
  auto cst = [&](OpBuilder &nb, Location nl, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(nb, nl, v);
  };
  Value offsets = tensor::DimOp::create(b, loc, cuQ, 0);
  VarlenTables t;
  t.sequences = arith::SubIOp::create(b, loc, offsets, cst(b, loc, 1));
  Value queries = getValueOrCreateConstantIndexOp(b, loc, p.querySeq);
  Value keys = getValueOrCreateConstantIndexOp(b, loc, p.keySeq);

  // A table [S + 1] of each sequence's first row or row count
  // (buildPackedSpan) in `cu`'s tokens.
  auto table = [&](Value cu, Value tokens, bool restRows, bool first,
                   Value keysUsed = {}) {
    Value init = tensor::EmptyOp::create(
        b, loc, ArrayRef<OpFoldResult>{offsets}, indexType);
    return buildGeneric(
        b, loc, ValueRange{}, init, {AffineMap::getMultiDimIdentityMap(1, ctx)},
        {kPar}, [&](OpBuilder &nb, Location nl, ValueRange) -> Value {
          Value s = linalg::IndexOp::create(nb, nl, 0);
          PackedSpan span =
              buildPackedSpan(nb, nl, cu, tokens, s, t.sequences, restRows);
          if (first)
            return span.first;
          if (!keysUsed)
            return span.count;
          // used[s] exists for s < S only.
          Value real = arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::ult,
                                             s, t.sequences);
          return buildIfElse(
              nb, nl, real,
              [&](OpBuilder &tb, Location tl) -> Value {
                return clampedIndexValue(
                    tb, tl, tensor::ExtractOp::create(tb, tl, keysUsed, s),
                    span.count);
              },
              span.count);
        });
  };
  t.queryStart = table(cuQ, queries, /*restRows=*/true, /*first=*/true);
  t.queryCount = table(cuQ, queries, /*restRows=*/true, /*first=*/false);
  t.keyStart = table(cuK, keys, /*restRows=*/false, /*first=*/true);
  t.keyCount = table(cuK, keys, /*restRows=*/false, /*first=*/false, used);

  // The sequence of each row t of `tokens`: c = #{1 <= s <= S : offsets[s]
  // <= t}, kept if the row lies in [start[c], start[c] + count[c]).
  auto owners = [&](Value cu, OpFoldResult tokens, Value starts,
                    Value counts) -> Value {
    Value bound = getValueOrCreateConstantIndexOp(b, loc, tokens);
    Value zeros = linalg::FillOp::create(
                      b, loc, ValueRange{cst(b, loc, 0)},
                      ValueRange{tensor::EmptyOp::create(
                          b, loc, ArrayRef<OpFoldResult>{tokens}, indexType)})
                      .getResult(0);
    Value before = buildGeneric(
        b, loc, {cu}, zeros, {dimsMap(ctx, 2, {1}), dimsMap(ctx, 2, {0})},
        {kPar, kRed}, [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
          Value end = clampedIndexValue(nb, nl, a[0], bound);
          Value row = linalg::IndexOp::create(nb, nl, 0);
          Value past = arith::AndIOp::create(
              nb, nl,
              arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::sle, end,
                                    row),
              arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::ne,
                                    linalg::IndexOp::create(nb, nl, 1),
                                    cst(nb, nl, 0)));
          return arith::AddIOp::create(nb, nl, a[1],
                                       arith::SelectOp::create(nb, nl, past,
                                                               cst(nb, nl, 1),
                                                               cst(nb, nl, 0)));
        });
    Value init = tensor::EmptyOp::create(b, loc, ArrayRef<OpFoldResult>{tokens},
                                         indexType);
    AffineMap id = AffineMap::getMultiDimIdentityMap(1, ctx);
    return buildGeneric(
        b, loc, {before}, init, {id, id}, {kPar},
        [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
          Value c = a[0], row = linalg::IndexOp::create(nb, nl, 0);
          Value first = tensor::ExtractOp::create(nb, nl, starts, c);
          Value end = arith::AddIOp::create(
              nb, nl, first, tensor::ExtractOp::create(nb, nl, counts, c));
          Value inside = arith::AndIOp::create(
              nb, nl,
              arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::sge, row,
                                    first),
              arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::slt, row,
                                    end));
          inside = arith::AndIOp::create(
              nb, nl, inside,
              arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::ult, c,
                                    t.sequences));
          return arith::SelectOp::create(nb, nl, inside, c, t.sequences);
        });
  };
  t.queryOwner = owners(cuQ, p.querySeq, t.queryStart, t.queryCount);
  t.keyOwner = owners(cuK, p.keySeq, t.keyStart, t.keyCount);
  return t;
}

/// A paged K or V, pages [num_pages, Hkv, page_size, W], as the dense
/// [B, Hkv, P page_size, W] of `table` [B, P]: key j of sequence b is row
/// j % page_size of page table[b, j / page_size]. Keys past the sequence's
/// length read nothing (neither the table nor a page) and are 0.
static Value gatherPages(OpBuilder &b, Location loc, Value pages, Value table,
                         Value lengths) {
  auto type = cast<RankedTensorType>(pages.getType());
  auto tableType = cast<RankedTensorType>(table.getType());
  OpFoldResult batch = tensor::getMixedSize(b, loc, table, 0);
  OpFoldResult heads = tensor::getMixedSize(b, loc, pages, 1);
  Value pageSize = tensor::DimOp::create(b, loc, pages, 2);
  Value perSequence = tensor::DimOp::create(b, loc, table, 1);
  Value keys = arith::MulIOp::create(b, loc, perSequence, pageSize);
  int64_t staticKeys = type.isDynamicDim(2) || tableType.isDynamicDim(1)
                           ? ShapedType::kDynamic
                           : type.getDimSize(2) * tableType.getDimSize(1);
  OpFoldResult keySize = ShapedType::isDynamic(staticKeys)
                             ? OpFoldResult(keys)
                             : OpFoldResult(b.getIndexAttr(staticKeys));
  SmallVector<OpFoldResult> sizes = {batch, heads, keySize,
                                     b.getIndexAttr(type.getDimSize(3))};
  Value init = tensor::EmptyOp::create(b, loc, sizes, type.getElementType());
  MLIRContext *ctx = b.getContext();
  return buildGeneric(
      b, loc, {lengths}, init,
      {dimsMap(ctx, 4, {0}), AffineMap::getMultiDimIdentityMap(4, ctx)},
      SmallVector<IteratorType>(4, kPar),
      [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
        Value seq = linalg::IndexOp::create(nb, nl, 0);
        Value head = linalg::IndexOp::create(nb, nl, 1);
        Value key = linalg::IndexOp::create(nb, nl, 2);
        Value col = linalg::IndexOp::create(nb, nl, 3);
        Value inside =
            arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::slt, key,
                                  clampedIndexValue(nb, nl, a[0], keys));
        Value zero = arith::ConstantOp::create(
            nb, nl, nb.getZeroAttr(type.getElementType()));
        return buildIfElse(
            nb, nl, inside,
            [&](OpBuilder &tb, Location tl) -> Value {
              Value slot = arith::DivUIOp::create(tb, tl, key, pageSize);
              Value page = arith::IndexCastOp::create(
                  tb, tl, tb.getIndexType(),
                  tensor::ExtractOp::create(tb, tl, table,
                                            ValueRange{seq, slot}));
              Value row = arith::RemUIOp::create(tb, tl, key, pageSize);
              return tensor::ExtractOp::create(
                  tb, tl, pages, ValueRange{page, head, row, col});
            },
            zero);
      });
}

LogicalResult mlir::flash::decomposeAttention(RewriterBase &rewriter,
                                              AttentionOp op) {
  FailureOr<AttentionOp> normalized = normalizeToRank4(rewriter, op);
  if (failed(normalized))
    return failure();
  op = *normalized;
  rewriter.setInsertionPoint(op);
  GroupedProblem p = makeProblem(rewriter, op);
  Value key = op.getKey(), value = op.getValue();
  if (Value table = op.getBlockTable()) {
    // The pages as dense K and V of P x page_size keys per sequence.
    key = gatherPages(rewriter, p.loc, key, table, op.getKeyLengths());
    value = gatherPages(rewriter, p.loc, value, table, op.getKeyLengths());
    p.batch = tensor::getMixedSize(rewriter, p.loc, op.getQuery(), 0);
    p.keySeq = tensor::getMixedSize(rewriter, p.loc, key, 2);
  }
  if (op.isVarlen())
    p.varlen = buildVarlenTables(rewriter, p, op.getCuSeqlensQ(),
                                 op.getCuSeqlensK(), op.getKeyLengths());
  NaiveBuilder nb(rewriter, p);
  Type elementType = op.getQuery().getType().getElementType();

  Value q5 = nb.expandHeads(op.getQuery(), 1);
  Value scores = nb.maskedScores(nb.rawScores(q5, key));
  Value rowMax =
      nb.rowReduce(scores, -std::numeric_limits<double>::infinity(), true);
  Value sinks;
  if (p.sinks) {
    // The sink is one more score of each row (with a zero value row).
    sinks = nb.groupedSinks();
    rowMax = nb.generic(
        {rowMax, sinks},
        tensor::EmptyOp::create(rewriter, p.loc, nb.rowSizes(), p.f32),
        {nb.identity(4), nb.map(4, {1, 2}), nb.identity(4)},
        SmallVector<IteratorType>(4, kPar),
        [&](OpBuilder &b, Location loc, ValueRange a) -> Value {
          return arith::MaximumFOp::create(b, loc, a[0], a[1]);
        });
  }
  Value e = nb.expMinusRow(scores, rowMax, 0.0);
  Value rowSum = nb.rowReduce(e, 0.0, false);
  if (p.sinks) {
    rowSum = nb.generic(
        {rowSum, rowMax, sinks},
        tensor::EmptyOp::create(rewriter, p.loc, nb.rowSizes(), p.f32),
        {nb.identity(4), nb.identity(4), nb.map(4, {1, 2}), nb.identity(4)},
        SmallVector<IteratorType>(4, kPar),
        [&](OpBuilder &b, Location loc, ValueRange a) -> Value {
          Value ninf = negInfF32(b, loc);
          Value zero =
              arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
          Value none = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                             a[1], ninf);
          Value ref = arith::SelectOp::create(b, loc, none, zero, a[1]);
          Value sink = math::ExpOp::create(
              b, loc, arith::SubFOp::create(b, loc, a[2], ref));
          return arith::AddFOp::create(b, loc, a[0], sink);
        });
  }

  // P = e / l, and P = 0 where l = 0 (a fully masked row).
  Value pInit =
      tensor::EmptyOp::create(rewriter, p.loc, nb.scoreSizes(), p.f32);
  Value probs = nb.generic(
      {e, rowSum}, pInit,
      {nb.identity(5), nb.map(5, {0, 1, 2, 3}), nb.identity(5)},
      SmallVector<IteratorType>(5, kPar),
      [&](OpBuilder &b, Location loc, ValueRange a) -> Value {
        Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
        Value empty = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                            a[1], zero);
        Value div = arith::DivFOp::create(b, loc, a[0], a[1]);
        return arith::SelectOp::create(b, loc, empty, zero, div);
      });

  SmallVector<IteratorType> pvIters(5, kPar);
  pvIters.push_back(kRed);
  SmallVector<OpFoldResult> outSizes = nb.rowSizes();
  outSizes.push_back(rewriter.getIndexAttr(p.valueDim));
  if (p.varlen)
    value = nb.keepSequenceRows(value, p.varlen->keyOwner,
                                rewriter.getZeroAttr(elementType));
  if (p.keyLengths) {
    // Values past a sequence's keys do not reach O (P is 0 there, but
    // 0 x NaN would).
    Value keys = getValueOrCreateConstantIndexOp(rewriter, p.loc, p.keySeq);
    value = nb.keepRows(
        value, p.keyLengths, nb.map(4, {0}), rewriter.getZeroAttr(elementType),
        [&](OpBuilder &b, Location loc, Value length) -> Value {
          return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                       linalg::IndexOp::create(b, loc, 2),
                                       clampedIndexValue(b, loc, length, keys));
        });
  }
  Value out5 = nb.contract(probs, nb.map(6, {0, 1, 2, 3, 5}), value,
                           nb.map(6, {0, 1, 5, 4}), outSizes,
                           nb.map(6, {0, 1, 2, 3, 4}), pvIters);
  SmallVector<Value> results = {
      nb.collapseHeads(nb.finish(out5, elementType), op.getOutput().getType())};

  if (op.getLse()) {
    // LSE = max + log(l); a fully masked row has l = 0 and gives -inf.
    Value init = tensor::EmptyOp::create(rewriter, p.loc, nb.rowSizes(), p.f32);
    Value lse = nb.generic(
        {rowMax, rowSum}, init,
        {nb.identity(4), nb.identity(4), nb.identity(4)},
        SmallVector<IteratorType>(4, kPar),
        [&](OpBuilder &b, Location loc, ValueRange a) -> Value {
          Value ninf = negInfF32(b, loc);
          Value zero =
              arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
          Value isNinf = arith::CmpFOp::create(
              b, loc, arith::CmpFPredicate::OEQ, a[0], ninf);
          Value m = arith::SelectOp::create(b, loc, isNinf, zero, a[0]);
          Value log = math::LogOp::create(b, loc, a[1]);
          return arith::AddFOp::create(b, loc, m, log);
        });
    results.push_back(
        nb.collapseHeads(lse, cast<RankedTensorType>(op.getLse().getType())));
  }
  rewriter.replaceOp(op, results);
  return success();
}

LogicalResult mlir::flash::decomposeAttentionBackward(RewriterBase &rewriter,
                                                      AttentionBackwardOp op) {
  FailureOr<AttentionBackwardOp> normalized = normalizeToRank4(rewriter, op);
  if (failed(normalized))
    return failure();
  op = *normalized;
  rewriter.setInsertionPoint(op);
  GroupedProblem p = makeProblem(rewriter, op);
  if (op.isVarlen())
    p.varlen = buildVarlenTables(rewriter, p, op.getCuSeqlensQ(),
                                 op.getCuSeqlensK(), /*used=*/Value());
  NaiveBuilder nb(rewriter, p);
  Type elementType = op.getQuery().getType().getElementType();

  Value q = op.getQuery(), o = op.getOutput(), gradO = op.getGradOutput();
  Value lse = op.getLse(), k = op.getKey(), v = op.getValue();
  if (p.varlen) {
    // Rows in no sequence are not read: as zeros (an LSE of -inf), each
    // such query's and key's products are 0.
    TypedAttr zero = rewriter.getZeroAttr(elementType);
    Value queryOwner = p.varlen->queryOwner, keyOwner = p.varlen->keyOwner;
    q = nb.keepSequenceRows(q, queryOwner, zero);
    o = nb.keepSequenceRows(o, queryOwner, zero);
    gradO = nb.keepSequenceRows(gradO, queryOwner, zero);
    lse = nb.keepSequenceRows(
        lse, queryOwner,
        rewriter.getF32FloatAttr(-std::numeric_limits<float>::infinity()));
    k = nb.keepSequenceRows(k, keyOwner, zero);
    v = nb.keepSequenceRows(v, keyOwner, zero);
  }
  Value q5 = nb.expandHeads(q, 1);
  Value o5 = nb.expandHeads(o, 1);
  Value do5 = nb.expandHeads(gradO, 1);
  Value lse5 = nb.expandHeads(lse, 1);

  // P recomputed from the saved log-sum-exp; fully masked rows give P = 0.
  Value raw = nb.rawScores(q5, k);
  Value scores = nb.maskedScores(raw);
  Value probs =
      nb.expMinusRow(scores, lse5, std::numeric_limits<double>::infinity());

  OpFoldResult d = rewriter.getIndexAttr(p.headDim);
  OpFoldResult dv = rewriter.getIndexAttr(p.valueDim);
  SmallVector<IteratorType> par5red(5, kPar);
  par5red.push_back(kRed);
  SmallVector<IteratorType> par4red2(4, kPar);
  par4red2.append({kRed, kRed});
  SmallVector<IteratorType> par4red(4, kPar);
  par4red.push_back(kRed);

  // dV[b,hk,n,dv] = sum_{g,m} P[b,hk,g,m,n] dO[b,hk,g,m,dv]
  Value gradV = nb.contract(
      probs, nb.map(6, {0, 1, 4, 5, 2}), do5, nb.map(6, {0, 1, 4, 5, 3}),
      {p.batch, p.kvHeads, p.keySeq, dv}, nb.map(6, {0, 1, 2, 3}), par4red2);
  // dP[b,hk,g,m,n] = sum_dv dO[b,hk,g,m,dv] V[b,hk,n,dv]
  Value gradP =
      nb.contract(do5, nb.map(6, {0, 1, 2, 3, 5}), v, nb.map(6, {0, 1, 4, 5}),
                  nb.scoreSizes(), nb.map(6, {0, 1, 2, 3, 4}), par5red);
  // Di[b,hk,g,m] = sum_dv dO O
  Value rowDot = nb.contract(do5, nb.identity(5), o5, nb.identity(5),
                             nb.rowSizes(), nb.map(5, {0, 1, 2, 3}), par4red);
  // dS = P (dP - Di), times mod'(scale S) with a score_mod.
  Value dsInit =
      tensor::EmptyOp::create(rewriter, p.loc, nb.scoreSizes(), p.f32);
  SmallVector<Value> dsIns = {probs, gradP, rowDot};
  SmallVector<AffineMap> dsMaps = {nb.identity(5), nb.identity(5),
                                   nb.map(5, {0, 1, 2, 3})};
  if (op.hasScoreMod()) {
    dsIns.push_back(raw);
    dsMaps.push_back(nb.identity(5));
    if (p.varlen) {
      dsIns.append({p.varlen->queryOwner, p.varlen->keyOwner});
      dsMaps.append({nb.map(5, {3}), nb.map(5, {4})});
    }
  }
  dsMaps.push_back(nb.identity(5));
  Value gradS = nb.generic(
      dsIns, dsInit, dsMaps, SmallVector<IteratorType>(5, kPar),
      [&](OpBuilder &b, Location loc, ValueRange a) -> Value {
        Value diff = arith::SubFOp::create(b, loc, a[1], a[2]);
        Value ds = arith::MulFOp::create(b, loc, a[0], diff);
        if (!op.hasScoreMod())
          return ds;
        Value scaled = arith::MulFOp::create(b, loc, a[3], nb.scaleValue(b, loc));
        SmallVector<Value> indices = nb.scoreIndices(b, loc);
        if (!p.varlen)
          return arith::MulFOp::create(
              b, loc, ds, op.buildScoreModDerivative(b, scaled, indices));
        // Within one sequence only, at its positions (dS is 0 elsewhere).
        SequencePair pair =
            nb.sequencePair(b, loc, a[4], a[5], indices[2], indices[3]);
        return buildIfElse(
            b, loc, pair.same,
            [&](OpBuilder &tb, Location tl) -> Value {
              Value slope = op.buildScoreModDerivative(
                  tb, scaled, {pair.sequence, indices[1], pair.i, pair.j});
              return arith::MulFOp::create(tb, tl, ds, slope);
            },
            ds);
      });
  // dQ[b,hk,g,m,d] = scale sum_n dS K
  SmallVector<OpFoldResult> dqSizes = nb.rowSizes();
  dqSizes.push_back(d);
  Value gradQ5 =
      nb.contract(gradS, nb.map(6, {0, 1, 2, 3, 5}), k, nb.map(6, {0, 1, 5, 4}),
                  dqSizes, nb.map(6, {0, 1, 2, 3, 4}), par5red);
  // dK[b,hk,n,d] = scale sum_{g,m} dS Q
  Value gradK = nb.contract(
      gradS, nb.map(6, {0, 1, 4, 5, 2}), q5, nb.map(6, {0, 1, 4, 5, 3}),
      {p.batch, p.kvHeads, p.keySeq, d}, nb.map(6, {0, 1, 2, 3}), par4red2);

  auto castTo = [&](Value value, Type type) -> Value {
    if (value.getType() == type)
      return value;
    return tensor::CastOp::create(rewriter, p.loc, type, value);
  };
  Value dq = nb.collapseHeads(nb.finish(gradQ5, elementType, p.scale),
                              op.getGradQuery().getType());
  Value dk =
      castTo(nb.finish(gradK, elementType, p.scale), op.getGradKey().getType());
  Value dvOut =
      castTo(nb.finish(gradV, elementType), op.getGradValue().getType());
  SmallVector<Value> results = {dq, dk, dvOut};
  if (p.sinks) {
    // d sink[h] = -sum_{b,i} exp(sink[h] - LSE) Di (0 where LSE = -inf).
    Value sinks = nb.groupedSinks();
    SmallVector<IteratorType> iters = {kRed, kPar, kPar, kRed};
    Value gradSinks = nb.generic(
        {sinks, lse5, rowDot}, nb.filled({p.kvHeads, p.group}, 0.0),
        {nb.map(4, {1, 2}), nb.identity(4), nb.identity(4), nb.map(4, {1, 2})},
        iters, [&](OpBuilder &b, Location loc, ValueRange a) -> Value {
          Value ninf = negInfF32(b, loc);
          Value zero =
              arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
          Value none = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                             a[1], ninf);
          Value prob = math::ExpOp::create(
              b, loc, arith::SubFOp::create(b, loc, a[0], a[1]));
          Value term = arith::MulFOp::create(b, loc, prob, a[2]);
          term = arith::SelectOp::create(b, loc, none, zero, term);
          return arith::SubFOp::create(b, loc, a[3], term);
        });
    auto sinksType = cast<RankedTensorType>(op.getGradSinks().getType());
    Value flat = tensor::CollapseShapeOp::create(
        rewriter, p.loc, gradSinks, SmallVector<ReassociationIndices>{{0, 1}});
    results.push_back(
        castTo(nb.finish(flat, sinksType.getElementType()), sinksType));
  }
  rewriter.replaceOp(op, results);
  return success();
}

namespace {
struct DecomposeAttentionPattern : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    return decomposeAttention(rewriter, op);
  }
};

struct DecomposeAttentionBackwardPattern
    : OpRewritePattern<AttentionBackwardOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AttentionBackwardOp op,
                                PatternRewriter &rewriter) const override {
    return decomposeAttentionBackward(rewriter, op);
  }
};

/// Applies the decomposition patterns once to every flash op, in program
/// order; an op that no pattern rewrites is an error.
struct FlashDecomposeAttentionPass
    : flash::impl::FlashDecomposeAttentionPassBase<
          FlashDecomposeAttentionPass> {
  LogicalResult initialize(MLIRContext *ctx) override {
    RewritePatternSet set(ctx);
    populateDecomposeAttentionPatterns(set);
    patterns = std::move(set);
    return success();
  }

  void runOnOperation() override {
    PatternApplicator applicator(patterns);
    applicator.applyDefaultCostModel();
    PatternRewriter rewriter(&getContext());
    SmallVector<Operation *> ops;
    getOperation()->walk([&](Operation *op) {
      if (isa<AttentionOp, AttentionBackwardOp>(op))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      LogicalResult fits =
          TypeSwitch<Operation *, LogicalResult>(op)
              .Case<AttentionOp, AttentionBackwardOp>([](auto attention) {
                return checkAttentionSizes(attention, /*scores=*/true);
              });
      if (failed(fits))
        return signalPassFailure();
      rewriter.setInsertionPoint(op);
      if (failed(applicator.matchAndRewrite(op, rewriter))) {
        op->emitError("flash-decompose-attention: cannot decompose this op");
        return signalPassFailure();
      }
    }
  }

private:
  FrozenRewritePatternSet patterns;
};
} // namespace

void mlir::flash::populateDecomposeAttentionPatterns(
    RewritePatternSet &patterns) {
  patterns.add<DecomposeAttentionPattern, DecomposeAttentionBackwardPattern>(
      patterns.getContext());
}
