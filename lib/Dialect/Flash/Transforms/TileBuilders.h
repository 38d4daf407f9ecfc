//===- TileBuilders.h - tiles of attention operands --------------*- C++
//-*-===//
//
// Part of the flash-mlir project.
//
// Shared by the forward and backward tilings of --flash-tile-attention.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_LIB_TRANSFORMS_TILEBUILDERS_H
#define FLASH_LIB_TRANSFORMS_TILEBUILDERS_H

#include "flash/Dialect/Flash/IR/FlashOps.h"
#include "flash/Dialect/Flash/IR/TileRoles.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Utils/Utils.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"

#include "LinalgBuilders.h"

namespace mlir::flash::detail {

/// The largest |scale * log2(e)| that the tiled forward applies in the
/// exponent, and above which it keeps the scores, the running max and the
/// LSE in natural units (TileAttention.cpp); the backward recomputes P
/// accordingly (TileAttentionBackwardSplit.cpp).
constexpr double kMaxExponentScale = 1024.0;

/// The (i, j) that a tiled form passes its score_mod region: clamped to the
/// last row and column (M - 1, N - 1) when the region reads tensors, so that
/// the padded rows and columns of a tile (whose scores are dropped) read in
/// bounds; as they are otherwise.
class ScoreModIndexClamp {
public:
  /// Builds the bounds at `b`'s insertion point (nothing when not needed).
  void init(OpBuilder &b, Location loc, Region &scoreMod, Value querySeq,
            Value keySeq) {
    bool readsTensors =
        scoreMod
            .walk([](Operation *inner) {
              return llvm::any_of(inner->getOperandTypes(),
                                  llvm::IsaPred<TensorType>)
                         ? WalkResult::interrupt()
                         : WalkResult::advance();
            })
            .wasInterrupted();
    if (!readsTensors)
      return;
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    lastQuery = arith::SubIOp::create(b, loc, querySeq, one);
    lastKey = arith::SubIOp::create(b, loc, keySeq, one);
  }
  /// (b, h, i, j) for the region, inside a generic's body.
  SmallVector<Value> indices(OpBuilder &b, Location loc, Value batch,
                             Value head, Value i, Value j) const {
    if (lastQuery) {
      i = arith::MinSIOp::create(b, loc, i, lastQuery);
      j = arith::MinSIOp::create(b, loc, j, lastKey);
    }
    return {batch, head, i, j};
  }

private:
  Value lastQuery, lastKey;
};

/// Sequence `s` of packed variable-length sequences, whose `sequences` + 1
/// offsets are `offsets` (cu_seqlens, clamped to [0, tokens]): its first
/// row and row count. s = S stands for the rows past the last offset
/// (`restRows`: tokens - offsets[S] of them; else none).
struct PackedSpan {
  Value first, count;
};
inline PackedSpan buildPackedSpan(OpBuilder &b, Location loc, Value offsets,
                                  Value tokens, Value s, Value sequences,
                                  bool restRows) {
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value next = b.createOrFold<arith::MinUIOp>(
      loc, b.createOrFold<arith::AddIOp>(loc, s, one), sequences);
  auto at = [&](Value i) {
    return clampedIndexValue(
        b, loc, tensor::ExtractOp::create(b, loc, offsets, i), tokens);
  };
  Value first = at(s);
  Value count = b.createOrFold<arith::MaxSIOp>(
      loc, b.createOrFold<arith::SubIOp>(loc, at(next), first),
      arith::ConstantIndexOp::create(b, loc, 0));
  Value rest = restRows ? b.createOrFold<arith::SubIOp>(loc, tokens, first)
                        : arith::ConstantIndexOp::create(b, loc, 0);
  Value last = b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, s,
                                             sequences);
  return {first, b.createOrFold<arith::SelectOp>(loc, last, rest, count)};
}

/// Row `local` of a packed sequence as a row of the operands: from the
/// sequence's first row `offset` (null: no packing, rows as they are),
/// clamped to the operands' `total` rows so that the empty slices of blocks
/// past a sequence's end stay within the tensor.
inline Value buildPackedRow(OpBuilder &b, Location loc, Value offset,
                            Value total, Value local) {
  if (!offset)
    return local;
  return b.createOrFold<arith::MinSIOp>(
      loc, b.createOrFold<arith::AddIOp>(loc, offset, local), total);
}

/// The rows of a block of `blockRows` from `start` in a packed sequence of
/// `count` rows: 0 for a block past its end, whose `other` (the count of the
/// other side, keys for a query block) becomes 0 too so that its loops are
/// empty.
inline Value buildPackedBlockRows(OpBuilder &b, Location loc, int64_t blockRows,
                                  Value start, Value count, Value &other) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value rows = b.createOrFold<arith::MinSIOp>(
      loc, arith::ConstantIndexOp::create(b, loc, blockRows),
      b.createOrFold<arith::SubIOp>(loc, count, start));
  rows = b.createOrFold<arith::MaxSIOp>(loc, rows, zero);
  other = b.createOrFold<arith::SelectOp>(
      loc,
      b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::sgt, rows, zero),
      other, zero);
  return rows;
}

/// Marks the rest of the iteration that `b` builds as empty when its tile has
/// no `rows` (flash.skip_tile): a packed sequence's block past its end.
inline void buildSkipEmptyTile(OpBuilder &b, Location loc, Value rows) {
  flash::SkipTileOp::create(
      b, loc,
      b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, rows,
                                    arith::ConstantIndexOp::create(b, loc, 0)));
}

/// The most rows any of the packed sequences has (buildPackedSpan's counts
/// over s = 0 ... S, with or without the rest): a scalar loop over the
/// offsets, the parallel iterations a nest over those rows needs.
inline Value buildMostPackedRows(OpBuilder &b, Location loc, Value offsets,
                                 Value tokens, Value sequences, bool restRows) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  auto loop = scf::ForOp::create(
      b, loc, zero, b.createOrFold<arith::AddIOp>(loc, sequences, one), one,
      ValueRange{zero});
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  PackedSpan span = buildPackedSpan(
      b, loc, offsets, tokens, loop.getInductionVar(), sequences, restRows);
  scf::YieldOp::create(b, loc,
                       b.createOrFold<arith::MaxSIOp>(
                           loc, loop.getRegionIterArgs()[0], span.count));
  return loop.getResult(0);
}

/// grad_sinks of a rank-4 backward op with sinks, from its LSE and the
/// tiling's D = rowsum(dO O) [B, Hq, M] in f32 (SinkGradient.cpp).
Value buildSinkGradient(OpBuilder &b, Location loc, AttentionBackwardOp op,
                        Value rowDot);

/// The slice of `source` at `offsets`/`sizes` (shape `sliceShape`), padded at
/// the high end to the static `padded` shape with `padValue` (zero when
/// null).
inline Value buildPaddedTile(OpBuilder &b, Location loc, Value source,
                             ArrayRef<OpFoldResult> offsets,
                             ArrayRef<OpFoldResult> sizes,
                             ArrayRef<int64_t> sliceShape,
                             ArrayRef<int64_t> padded,
                             TypedAttr padValue = {}) {
  Type et = cast<RankedTensorType>(source.getType()).getElementType();
  auto sliceType = RankedTensorType::get(sliceShape, et);
  SmallVector<OpFoldResult> strides(sizes.size(), b.getIndexAttr(1));
  Value slice = tensor::ExtractSliceOp::create(b, loc, sliceType, source,
                                               offsets, sizes, strides);
  auto paddedType = RankedTensorType::get(padded, et);
  if (paddedType == sliceType)
    return slice;
  Value pad = arith::ConstantOp::create(
      b, loc, padValue ? padValue : cast<TypedAttr>(b.getZeroAttr(et)));
  return tensor::createPadHighOp(paddedType, slice, pad, /*nofold=*/false, loc,
                                 b);
}

/// Whether `type` has a static size of 0: there is nothing to read or write,
/// and no slice of it can be built (the slice verifier rejects every static
/// offset into a size-0 dimension, 0 included).
inline bool isStaticallyEmpty(ShapedType type) {
  return llvm::is_contained(type.getShape(), 0);
}

/// Where a Br x Bc score tile sits in [B, Hq, M, N].
struct ScoreTile {
  Value batch, head, rowStart, rows, keyStart, cols;
  int64_t br, bc;
};

/// The slice of a bias or mask operand (right-aligned to [B, Hq, M, N], size-1
/// dimensions broadcast) seen by one score tile, and its map from the tile's
/// (i, j).
inline std::pair<Value, AffineMap> buildScoreOperandTile(OpBuilder &b,
                                                         Location loc,
                                                         Value operand,
                                                         const ScoreTile &t) {
  MLIRContext *ctx = b.getContext();
  auto type = cast<RankedTensorType>(operand.getType());
  int64_t rank = type.getRank();
  SmallVector<OpFoldResult> offsets, sizes;
  SmallVector<int64_t> sliceShape, padded;
  SmallVector<AffineExpr> exprs;
  for (int64_t i = 0; i < rank; ++i) {
    int64_t logical = 4 - rank + i;
    bool broadcast = type.getDimSize(i) == 1;
    if (broadcast) {
      offsets.push_back(b.getIndexAttr(0));
      sizes.push_back(b.getIndexAttr(1));
    } else {
      Value offset[] = {t.batch, t.head, t.rowStart, t.keyStart};
      offsets.push_back(offset[logical]);
      sizes.push_back(logical < 2
                          ? OpFoldResult(b.getIndexAttr(1))
                          : OpFoldResult(logical == 2 ? t.rows : t.cols));
    }
    // The tile keeps the query and key dimensions the operand has.
    if (logical < 2)
      continue;
    unsigned tileDim = logical - 2;
    if (broadcast) {
      sliceShape.push_back(1);
      padded.push_back(1);
      exprs.push_back(getAffineConstantExpr(0, ctx));
    } else {
      sliceShape.push_back(ShapedType::kDynamic);
      padded.push_back(tileDim == 0 ? t.br : t.bc);
      exprs.push_back(getAffineDimExpr(tileDim, ctx));
    }
  }
  Value tile =
      buildPaddedTile(b, loc, operand, offsets, sizes, sliceShape, padded);
  return {tile, AffineMap::get(2, 0, exprs, ctx)};
}

/// Whether the score of query `i` and key `j` is hidden from the backward's
/// recomputed P: past the keys (`j >= keySeq`), causal (`j > i + diagonal`),
/// outside the window (`j < i + diagonal - window`, `window` the clamped
/// size or null), masked by the i1 `keep` (when given), or on a fully masked
/// row (`lse == -inf`, when `lse` is given).
inline Value buildHiddenScore(OpBuilder &b, Location loc, Value i, Value j,
                              Value keySeq, Value diagonal, bool causal,
                              Value window, Value keep, Value lse) {
  Value hidden =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, j, keySeq);
  auto hide = [&](Value h) {
    hidden = arith::OrIOp::create(b, loc, hidden, h);
  };
  Value lastVisible = arith::AddIOp::create(b, loc, i, diagonal);
  if (causal)
    hide(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, j,
                               lastVisible));
  if (window)
    hide(arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::slt, j,
        arith::SubIOp::create(b, loc, lastVisible, window)));
  if (keep)
    hide(arith::XOrIOp::create(
        b, loc, keep, arith::ConstantOp::create(b, loc, b.getBoolAttr(true))));
  if (lse)
    hide(arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, lse,
                               negInfF32(b, loc)));
  return hidden;
}

/// What the forward and backward tilers build with: signed index arithmetic
/// (block bounds can go below zero before clamping), maps, and f32 tensors;
/// the shapes of the rank-4 op's query and value.
class TilerBase {
protected:
  TilerBase(OpBuilder &b, Location loc, RankedTensorType query,
            RankedTensorType value)
      : b(b), loc(loc), ctx(b.getContext()), f32(b.getF32Type()),
        elementType(query.getElementType()), headDim(query.getDimSize(3)),
        valueDim(value.getDimSize(3)) {}

  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value add(Value x, Value y) {
    return b.createOrFold<arith::AddIOp>(loc, x, y);
  }
  Value sub(Value x, Value y) {
    return b.createOrFold<arith::SubIOp>(loc, x, y);
  }
  Value mul(Value x, Value y) {
    return b.createOrFold<arith::MulIOp>(loc, x, y);
  }
  Value min(Value x, Value y) {
    return b.createOrFold<arith::MinSIOp>(loc, x, y);
  }
  Value max(Value x, Value y) {
    return b.createOrFold<arith::MaxSIOp>(loc, x, y);
  }
  Value floorDiv(Value x, int64_t y) {
    return b.createOrFold<arith::FloorDivSIOp>(loc, x, idx(y));
  }
  Value ceilDiv(Value x, int64_t y) {
    return b.createOrFold<arith::CeilDivSIOp>(loc, x, idx(y));
  }
  Value dim(Value v, int64_t d) {
    return b.createOrFold<tensor::DimOp>(loc, v, d);
  }
  /// The key blocks of `bc` keys that query rows [rowStart, rowStart + rows)
  /// see, [begin, end), and among them [fullBegin, fullEnd), the whole blocks
  /// every row sees entirely (no mask needed): row i sees keys
  /// [i + windowStart, i + diagonal] when causal (windowStart null: from 0;
  /// else to N - 1).
  struct KeyBlocks {
    Value begin, fullBegin, fullEnd, end;
  };
  KeyBlocks keyBlocksOf(Value rowStart, Value rows, Value keySeq,
                        Value diagonal, bool causal, Value windowStart,
                        int64_t bc) {
    Value lastRow = sub(add(rowStart, rows), idx(1));
    Value lastKey = sub(keySeq, idx(1));
    auto lastVisible = [&](Value row) {
      return causal ? min(add(row, diagonal), lastKey) : lastKey;
    };
    auto firstVisible = [&](Value row) {
      return windowStart ? max(add(row, windowStart), idx(0)) : idx(0);
    };
    KeyBlocks k;
    k.begin = floorDiv(firstVisible(rowStart), bc);
    k.end = max(ceilDiv(add(lastVisible(lastRow), idx(1)), bc), k.begin);
    k.fullBegin =
        windowStart
            ? min(max(ceilDiv(firstVisible(lastRow), bc), k.begin), k.end)
            : k.begin;
    k.fullEnd =
        min(max(floorDiv(add(lastVisible(rowStart), idx(1)), bc), k.fullBegin),
            k.end);
    return k;
  }
  AffineMap map(unsigned n, ArrayRef<unsigned> dims) {
    return dimsMap(ctx, n, dims);
  }
  AffineMap id(unsigned n) { return AffineMap::getMultiDimIdentityMap(n, ctx); }
  Value empty(ArrayRef<int64_t> shape, Type t) {
    return tensor::EmptyOp::create(b, loc, shape, t);
  }
  /// An f32 tensor of static `shape` filled with `v`.
  Value filled(ArrayRef<int64_t> shape, double v) {
    SmallVector<OpFoldResult> sizes;
    for (int64_t s : shape)
      sizes.push_back(b.getIndexAttr(s));
    return buildFilled(b, loc, sizes, f32, v);
  }
  Value generic(ValueRange ins, Value init, ArrayRef<AffineMap> maps,
                ArrayRef<IteratorType> iters, BodyFn body) {
    return buildGeneric(b, loc, ins, init, maps, iters, body);
  }
  /// C += A B over the last loop; maps over (i, j, k); tagged with its
  /// role for the GPU mapping.
  Value contract(Contraction role, Value a, AffineMap aMap, Value bT,
                 AffineMap bMap, Value c) {
    Value r =
        generic({a, bT}, c, {aMap, bMap, map(3, {0, 1})}, {kPar, kPar, kRed},
                [&](OpBuilder &nb, Location nl, ValueRange x) -> Value {
                  Value p = arith::MulFOp::create(nb, nl,
                                                  extendToF32(nb, nl, x[0]),
                                                  extendToF32(nb, nl, x[1]));
                  return arith::AddFOp::create(nb, nl, x[2], p);
                });
    setContraction(r.getDefiningOp(), role);
    return r;
  }
  /// `tile` (f32) rounded to the element type, as the tensor-core operands
  /// of the GPU kernels are.
  Value rounded(Value tile) {
    if (elementType == f32)
      return tile;
    auto type = cast<RankedTensorType>(tile.getType());
    return generic(tile, empty(type.getShape(), elementType), {id(2), id(2)},
                   {kPar, kPar},
                   [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                     return arith::TruncFOp::create(nb, nl, elementType, a[0]);
                   });
  }
  /// `scale * x` in the element type.
  /// `tile` (read through `input`, the identity if null) times `factor`
  /// in the element type.
  Value finish(Value tile, float factor, ArrayRef<int64_t> shape,
               AffineMap input = {}) {
    return generic(
        tile, empty(shape, elementType),
        {input ? input : id(shape.size()), id(shape.size())},
        SmallVector<IteratorType>(shape.size(), kPar),
        [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
          Value x = a[0];
          if (factor != 1.0f)
            x = arith::MulFOp::create(
                nb, nl, x,
                arith::ConstantOp::create(nb, nl, nb.getF32FloatAttr(factor)));
          if (elementType != f32)
            x = arith::TruncFOp::create(nb, nl, elementType, x);
          return x;
        });
  }

  OpBuilder &b;
  Location loc;
  MLIRContext *ctx;
  FloatType f32;
  Type elementType;
  int64_t headDim, valueDim;
};

/// Checks the tile sizes, brings `op` to rank 4 and replaces it with the loop
/// nest `Tiler(rewriter, op, br, bc).build()` makes (cast back to the op's
/// result types where they were more static).
template <typename Tiler, typename OpTy, typename... Extra>
LogicalResult replaceWithTiles(RewriterBase &rewriter, OpTy op, int64_t br,
                               int64_t bc, Extra... extra) {
  if (br <= 0 || bc <= 0)
    return op.emitOpError("tile sizes must be positive, got Br = ")
           << br << ", Bc = " << bc;
  FailureOr<OpTy> normalized = normalizeToRank4(rewriter, op);
  if (failed(normalized))
    return failure();
  op = *normalized;
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  SmallVector<Value> results = Tiler(rewriter, op, br, bc, extra...).build();
  for (auto [result, old] : llvm::zip(results, op->getResults()))
    if (result.getType() != old.getType())
      result =
          tensor::CastOp::create(rewriter, op.getLoc(), old.getType(), result);
  rewriter.replaceOp(op, results);
  return success();
}

} // namespace mlir::flash::detail

#endif // FLASH_LIB_TRANSFORMS_TILEBUILDERS_H
