//===- TileAttention.cpp - FlashAttention-2 online-softmax tiling -*- C++
//-*-===//
//
// Part of the flash-mlir project.
//
// flash.attention -> scf.forall over (batch, query head, query block) around
// scf.for loops over key blocks that carry the running row max m, the
// running row sum l and the un-normalised accumulator. Scores are kept in
// the log2 domain (scale * log2(e) folded in) so every exponential is an
// exp2, as on GPUs.
//
//===----------------------------------------------------------------------===//

#include "flash/Dialect/Flash/Transforms/Passes.h"
#include "flash/Dialect/Flash/Transforms/Transforms.h"
#include "flash/Target/AttentionTarget.h"

#include "LinalgBuilders.h"
#include "SizeChecks.h"
#include "TileBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Utils/Utils.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <numeric>

namespace mlir::flash {
#define GEN_PASS_DEF_FLASHTILEATTENTIONPASS
#include "flash/Dialect/Flash/Transforms/Passes.h.inc"
} // namespace mlir::flash

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::detail;

/// The sink joined to a row with running max `mRow` and sum `lRow` (in the
/// units `expRel` takes: exp(x - ref) there, a ref of -inf taken as 0):
/// m_f = max(m, sink), l_f = l e(m - m_f) + e(sink - m_f). Returns
/// (e(m - m_f), m_f, l_f): O's factor is e(m - m_f) / l_f.
static std::array<Value, 3>
foldSink(OpBuilder &b, Location loc, Value mRow, Value lRow, Value sink,
         function_ref<Value(OpBuilder &, Location, Value, Value)> expRel) {
  Value mFinal = arith::MaximumFOp::create(b, loc, mRow, sink);
  Value alpha = expRel(b, loc, mRow, mFinal);
  Value lFinal =
      arith::AddFOp::create(b, loc, arith::MulFOp::create(b, loc, lRow, alpha),
                            expRel(b, loc, sink, mFinal));
  return {alpha, mFinal, lFinal};
}

namespace {
constexpr double kLog2e = 1.4426950408889634;
/// Split-KV's merge: query rows per iteration of its nest (four: a decode
/// step's rows of one KV head under GQA packing at a group of 4), columns
/// of a row that one iteration of its loop (a thread) merges together, and
/// splits whose partial results that iteration loads at once.
constexpr int64_t kMergeRows = 4;
constexpr int64_t kMergeColumns = 4;
constexpr int64_t kMergeSplits = 16;
constexpr double kLn2 = 0.6931471805599453;

/// Builds the loop nest of one rank-4 attention op.
class AttentionTiler : TilerBase {
public:
  AttentionTiler(OpBuilder &b, AttentionOp op, int64_t br, int64_t bc,
                 bool causalRowsFromEnd, KeySplits splits, PackedBounds bounds)
      : TilerBase(b, op.getLoc(), op.getQuery().getType(),
                  op.getValue().getType()),
        op(op), br(br), bc(bc), causalRowsFromEnd(causalRowsFromEnd),
        splits(splits), bounds(bounds) {}

  SmallVector<Value> build();

private:
  /// The nest over (batch, head, query block [x split]) writing into `outs`:
  /// O and LSE, or with key splits each split's partial O and LSE.
  SmallVector<Value> buildKeyNest(ValueRange outs);

  /// The nest over (batch, head, query block) that merges the splits'
  /// partial results by their LSE into `outs` (O and, if the op has it, LSE).
  SmallVector<Value> buildSplitCombine(Value partialOut, Value partialLse,
                                       ValueRange outs);

  /// Every split's part of a partial result for rows [rowAt, rowAt +
  /// rowCount), read in place: splits x rows (x Dv).
  Value partialRows(Value partial, Value batchAt, Value headAt, Value rowAt,
                    Value rowCount);

  /// The slice `source[offsets][sizes]` of rank-reduced shape `sliceShape`,
  /// zero-padded at the high end to the static shape `padded`.
  Value paddedTile(Value source, ArrayRef<OpFoldResult> offsets,
                   ArrayRef<OpFoldResult> sizes, ArrayRef<int64_t> sliceShape,
                   ArrayRef<int64_t> padded);

  /// The slice of a bias or mask operand (right-aligned to [B, Hq, M, N])
  /// seen by one Br x Bc score tile, and its map from the tile's (i, j).
  std::pair<Value, AffineMap> scoreOperandTile(Value operand, Value n0,
                                               Value cols);

  /// O rows = acc [rows, Dv] times a factor per row, in `outType`.
  Value scaledRows(Value acc, Value factor, int64_t rowCount, Type outType) {
    return generic({acc, factor}, empty({rowCount, valueDim}, outType),
                   {id(2), map(2, {0}), id(2)}, {kPar, kPar},
                   [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                     Value o = arith::MulFOp::create(nb, nl, a[0], a[1]);
                     if (outType != f32)
                       o = arith::TruncFOp::create(nb, nl, outType, o);
                     return o;
                   });
  }

  /// A row of this iteration's sequence as a row of the operands: with
  /// cu_seqlens offset by where the sequence starts.
  Value queryRow(Value local) {
    return buildPackedRow(b, loc, queryOffset, totalQueries, local);
  }
  Value keyRow(Value local) {
    return buildPackedRow(b, loc, keyOffset, maxKeys, local);
  }

  /// The causal diagonal N - M and the window's first key offset for the
  /// keys `keySeq`.
  void alignToKeys() {
    diagonal = sub(keySeq, querySeq);
    if (std::optional<int64_t> window = op.getWindow())
      windowStart =
          sub(diagonal, buildClampedWindow(b, loc, *window, querySeq, keySeq));
  }

  /// exp2(x - rowRef) in a body, with a row that is still fully masked
  /// (rowRef = -inf) taken relative to 0, so that it stays 0 instead of NaN.
  Value expRelative(OpBuilder &nb, Location nl, Value x, Value rowRef);

  /// One key block: returns the updated (m, l, acc).
  SmallVector<Value> keyBlockStep(Value kb, ValueRange carried, bool masked);

  /// scf.for over key blocks [lb, ub) doing keyBlockStep.
  SmallVector<Value> keyBlockLoop(Value lb, Value ub, ValueRange init,
                                  bool masked);

  AttentionOp op;
  int64_t br, bc;
  /// Under a causal mask, row blocks aligned to the last row.
  bool causalRowsFromEnd;
  KeySplits splits;
  PackedBounds bounds;
  /// With key splits: how many (run time) and which one this iteration runs.
  Value splitCount, splitIdx;

  /// runtime_scale * log2(e), when the scale comes at run time.
  Value runtimeScaleLog2;
  /// A constant scale with |scale log2(e)| above kMaxExponentScale keeps the
  /// scores, the running max and the LSE in natural units, each exponent
  /// exp2((s - m) log2(e)) taken after the subtraction: m is then one of
  /// the scores as rounded, and the LSE (m + ln l) is what the backward's
  /// exp(scale s - LSE) needs to recompute P without an exp overflow (at
  /// scale 1e10, c m and c s rounded apart differed by about 1e3).
  bool naturalUnits = false;
  ScoreModIndexClamp scoreModIndices;

  /// Row i sees keys from i + windowStart = i + N - M - window, the window
  /// clamped to M + N (null without a window).
  Value windowStart;
  // Per query block, set inside the forall: the rows it computes
  // [rowStart, rowStart + rows) and, of those, the first `ownRows` that are
  // its part of the result; its sequence's query and key counts.
  Value batchIdx, headIdx, kvHeadIdx, rowStart, rows, ownRows, querySeq, keySeq,
      diagonal;
  Value queryTile;
  // With cu_seqlens: the sequence (S for the rows past the last one) and
  // where its queries and keys start in the packed tokens.
  Value sequenceIdx, queryOffset, keyOffset;
  // The op's sizes: batch, query heads, M, Hq / Hkv, query blocks (ceil(M /
  // Br), with cu_seqlens those of the longest sequence), the most keys a
  // sequence has, and with cu_seqlens the number of sequences S.
  Value batch, heads, totalQueries, group, queryBlocks, maxKeys, sequences;
};
} // namespace

Value AttentionTiler::paddedTile(Value source, ArrayRef<OpFoldResult> offsets,
                                 ArrayRef<OpFoldResult> sizes,
                                 ArrayRef<int64_t> sliceShape,
                                 ArrayRef<int64_t> padded) {
  return buildPaddedTile(b, loc, source, offsets, sizes, sliceShape, padded);
}

std::pair<Value, AffineMap>
AttentionTiler::scoreOperandTile(Value operand, Value n0, Value cols) {
  return buildScoreOperandTile(
      b, loc, operand,
      ScoreTile{batchIdx, headIdx, rowStart, rows, n0, cols, br, bc});
}

Value AttentionTiler::expRelative(OpBuilder &nb, Location nl, Value x,
                                  Value rowRef) {
  Value ninf = negInfF32(nb, nl);
  Value zero = arith::ConstantOp::create(nb, nl, nb.getF32FloatAttr(0.0f));
  Value empty =
      arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OEQ, rowRef, ninf);
  Value ref = arith::SelectOp::create(nb, nl, empty, zero, rowRef);
  Value d =
      arith::SubFOp::create(nb, nl, x, ref, arith::FastMathFlags::contract);
  if (naturalUnits)
    d = arith::MulFOp::create(
        nb, nl, d,
        arith::ConstantOp::create(
            nb, nl, nb.getF32FloatAttr(static_cast<float>(kLog2e))));
  return math::Exp2Op::create(nb, nl, d);
}

SmallVector<Value> AttentionTiler::keyBlockStep(Value kb, ValueRange carried,
                                                bool masked) {
  Value m = carried[0], l = carried[1], acc = carried[2];
  Value keyStart = mul(kb, idx(bc));
  Value cols = min(idx(bc), sub(keySeq, keyStart));
  Value k = op.getKey(), v = op.getValue();
  // Where the block's rows are: the sequence's own K and V, or with a block
  // table rows of the page that holds them (Bc divides the page size, so a
  // block never straddles two pages).
  OpFoldResult source = batchIdx, row = keyRow(keyStart);
  if (Value table = op.getBlockTable()) {
    Value pageSize = dim(k, 2);
    Value slot = b.createOrFold<arith::DivUIOp>(loc, keyStart, pageSize);
    source = b.createOrFold<arith::IndexCastOp>(
        loc, b.getIndexType(),
        tensor::ExtractOp::create(b, loc, table, ValueRange{batchIdx, slot}));
    row = b.createOrFold<arith::RemUIOp>(loc, keyStart, pageSize);
  }
  Value keyTile = paddedTile(
      k, {source, kvHeadIdx, row, b.getIndexAttr(0)},
      {b.getIndexAttr(1), b.getIndexAttr(1), cols, b.getIndexAttr(headDim)},
      {ShapedType::kDynamic, headDim}, {bc, headDim});
  Value valueTile = paddedTile(
      v, {source, kvHeadIdx, row, b.getIndexAttr(0)},
      {b.getIndexAttr(1), b.getIndexAttr(1), cols, b.getIndexAttr(valueDim)},
      {ShapedType::kDynamic, valueDim}, {bc, valueDim});

  // S = Q Kᵀ over the head dimension, in f32.
  auto multiplyAdd = [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
    Value x = extendToF32(nb, nl, a[0]);
    Value y = extendToF32(nb, nl, a[1]);
    Value prod = arith::MulFOp::create(nb, nl, x, y);
    return arith::AddFOp::create(nb, nl, a[2], prod);
  };
  Value scores = generic({queryTile, keyTile}, filled({br, bc}, 0.0),
                         {map(3, {0, 2}), map(3, {1, 2}), map(3, {0, 1})},
                         {kPar, kPar, kRed}, multiplyAdd);
  setContraction(scores.getDefiningOp(), Contraction::Scores);
  if (masked)
    setRaggedKeys(scores.getDefiningOp());

  // Scale into the log2 domain, add the bias, mask.
  SmallVector<Value> ins = {scores};
  SmallVector<AffineMap> maps = {id(2)};
  int biasArg = -1, maskArg = -1;
  if (Value bias = op.getBias()) {
    auto [tile, tileMap] = scoreOperandTile(bias, keyStart, cols);
    biasArg = ins.size();
    ins.push_back(tile);
    maps.push_back(tileMap);
  }
  if (Value mask = op.getMask()) {
    auto [tile, tileMap] = scoreOperandTile(mask, keyStart, cols);
    maskArg = ins.size();
    ins.push_back(tile);
    maps.push_back(tileMap);
  }
  maps.push_back(id(2));
  // A run-time scale is multiplied by log2(e) once, outside the nest.
  float scale = runtimeScaleLog2 ? 0.0f : op.getEffectiveScale();
  auto scaleLog2 = [&](OpBuilder &nb, Location nl) -> Value {
    if (runtimeScaleLog2)
      return runtimeScaleLog2;
    return arith::ConstantOp::create(
        nb, nl, nb.getF32FloatAttr(static_cast<float>(scale * kLog2e)));
  };
  // Without a bias, a positive scale commutes with the row max: it is
  // applied in the exponent, exp2(c s - c m) as one FMA per score, and the
  // unmasked blocks need no pass over the scores before the max. The FMA
  // rounds c s but m' = c m is rounded, so the row max's exponent is off by
  // up to 2^-24 |m'|. That shift cancels in O and the LSE while exp2 stays
  // in range (|m'| < 2^30: a shift below 64), which holds for scores below
  // 2^20 when c <= 2^10. A larger scale (1e10: the shift overflowed exp2 to
  // inf, O = NaN) is applied to the scores before the max instead, so that
  // the max's exponent is exactly 0. Such a scale also keeps the scores and
  // the running max in natural units (see naturalUnits).
  bool scaleInExponent = biasArg < 0 && !op.hasScoreMod() && scale > 0 &&
                         scale * kLog2e <= kMaxExponentScale;
  auto contract = arith::FastMathFlags::contract;
  Value logits = scores;
  if (!scaleInExponent || masked || maskArg >= 0)
    logits = generic(
        ins, empty({br, bc}, f32), maps, {kPar, kPar},
        [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
          Value s = a[0];
          auto queryIndex = [&] {
            return arith::AddIOp::create(nb, nl, rowStart,
                                         linalg::IndexOp::create(nb, nl, 0));
          };
          auto keyIndex = [&] {
            return arith::AddIOp::create(nb, nl, keyStart,
                                         linalg::IndexOp::create(nb, nl, 1));
          };
          if (op.hasScoreMod()) {
            // The modification sees natural-log scores; padded rows and
            // columns (their scores are dropped) read in-range indices.
            Value natural = runtimeScaleLog2
                                ? op.getRuntimeScale()
                                : arith::ConstantOp::create(
                                      nb, nl, nb.getF32FloatAttr(scale))
                                      .getResult();
            s = arith::MulFOp::create(nb, nl, s, natural);
            s = op.buildScoreMod(
                nb, s,
                scoreModIndices.indices(nb, nl,
                                        sequenceIdx ? sequenceIdx : batchIdx,
                                        headIdx, queryIndex(), keyIndex()));
            Value log2e = arith::ConstantOp::create(
                nb, nl, nb.getF32FloatAttr(static_cast<float>(kLog2e)));
            s = arith::MulFOp::create(nb, nl, s, log2e);
          } else if (naturalUnits) {
            s = arith::MulFOp::create(
                nb, nl, s,
                arith::ConstantOp::create(nb, nl, nb.getF32FloatAttr(scale)));
          } else if (!scaleInExponent) {
            s = arith::MulFOp::create(nb, nl, s, scaleLog2(nb, nl));
          }
          if (biasArg >= 0) {
            Value bias = extendToF32(nb, nl, a[biasArg]);
            if (!naturalUnits)
              bias = arith::MulFOp::create(
                  nb, nl, bias,
                  arith::ConstantOp::create(
                      nb, nl, nb.getF32FloatAttr(static_cast<float>(kLog2e))));
            s = arith::AddFOp::create(nb, nl, s, bias);
          }
          Value hidden;
          auto hide = [&](Value h) {
            hidden = hidden
                         ? arith::OrIOp::create(nb, nl, hidden, h).getResult()
                         : h;
          };
          if (maskArg >= 0) {
            Value one = arith::ConstantOp::create(nb, nl, nb.getBoolAttr(true));
            hide(arith::XOrIOp::create(nb, nl, a[maskArg], one));
          }
          if (masked) {
            Value i = queryIndex(), j = keyIndex();
            hide(arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::sge, j,
                                       keySeq));
            if (op.getCausal()) {
              Value last = arith::AddIOp::create(nb, nl, i, diagonal);
              hide(arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::sgt, j,
                                         last));
            }
            if (windowStart) {
              Value first = arith::AddIOp::create(nb, nl, i, windowStart);
              hide(arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::slt, j,
                                         first));
            }
          }
          if (hidden)
            s = arith::SelectOp::create(nb, nl, hidden, negInfF32(nb, nl), s);
          return s;
        });

  // The running state is updated in place (outs = the loop-carried value),
  // so that bufferization keeps one buffer per state across iterations.
  Value rowMax =
      generic(logits, filled({br}, -std::numeric_limits<double>::infinity()),
              {id(2), map(2, {0})}, {kPar, kRed},
              [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                return arith::MaximumFOp::create(nb, nl, a[0], a[1]);
              });
  // The row max in the log2 domain.
  if (scaleInExponent)
    rowMax =
        generic(rowMax, empty({br}, f32), {id(1), id(1)}, {kPar},
                [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                  return arith::MulFOp::create(nb, nl, a[0], scaleLog2(nb, nl));
                });
  // alpha = exp2(m - m'), m' = max(m, rowmax S).
  Value alpha = generic({m, rowMax}, empty({br}, f32), {id(1), id(1), id(1)},
                        {kPar}, [&](OpBuilder &nb, Location nl, ValueRange a) {
                          Value next =
                              arith::MaximumFOp::create(nb, nl, a[0], a[1]);
                          return expRelative(nb, nl, a[0], next);
                        });
  Value mNew = generic(rowMax, m, {id(1), id(1)}, {kPar},
                       [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                         return arith::MaximumFOp::create(nb, nl, a[0], a[1]);
                       });
  Value probs = generic(
      {logits, mNew}, empty({br, bc}, f32), {id(2), map(2, {0}), id(2)},
      {kPar, kPar}, [&](OpBuilder &nb, Location nl, ValueRange a) {
        Value x = a[0];
        if (scaleInExponent)
          x = arith::MulFOp::create(nb, nl, x, scaleLog2(nb, nl), contract);
        return expRelative(nb, nl, x, a[1]);
      });
  auto scaleBy = [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
    return arith::MulFOp::create(nb, nl, a[1], a[0]);
  };
  // l' = alpha l + rowsum P.
  Value lScaled = generic(alpha, l, {id(1), id(1)}, {kPar}, scaleBy);
  Value lNew = generic(probs, lScaled, {id(2), map(2, {0})}, {kPar, kRed},
                       [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                         return arith::AddFOp::create(nb, nl, a[0], a[1]);
                       });
  // acc' = alpha acc + P V, with P rounded to V's element type first (before
  // the rescale, so that the f32 P is dead while the accumulator is updated).
  if (elementType != f32) {
    probs = generic(probs, empty({br, bc}, elementType), {id(2), id(2)},
                    {kPar, kPar},
                    [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                      return arith::TruncFOp::create(nb, nl, elementType, a[0]);
                    });
  }
  Value accScaled =
      generic(alpha, acc, {map(2, {0}), id(2)}, {kPar, kPar}, scaleBy);
  Value accNew = generic({probs, valueTile}, accScaled,
                         {map(3, {0, 2}), map(3, {2, 1}), map(3, {0, 1})},
                         {kPar, kPar, kRed}, multiplyAdd);
  setContraction(accNew.getDefiningOp(), Contraction::Output);
  if (masked)
    setRaggedKeys(accNew.getDefiningOp());
  return {mNew, lNew, accNew};
}

SmallVector<Value> AttentionTiler::keyBlockLoop(Value lb, Value ub,
                                                ValueRange init, bool masked) {
  auto loop = scf::ForOp::create(b, loc, lb, ub, idx(1), init);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  SmallVector<Value> next =
      keyBlockStep(loop.getInductionVar(), loop.getRegionIterArgs(), masked);
  scf::YieldOp::create(b, loc, next);
  return SmallVector<Value>(loop.getResults());
}

SmallVector<Value> AttentionTiler::build() {
  Value q = op.getQuery(), k = op.getKey();
  naturalUnits = !op.getRuntimeScale() && !op.hasScoreMod() &&
                 std::fabs(op.getEffectiveScale() * kLog2e) > kMaxExponentScale;
  if (Value scale = op.getRuntimeScale())
    runtimeScaleLog2 = arith::MulFOp::create(
        b, loc, scale,
        arith::ConstantOp::create(
            b, loc, b.getF32FloatAttr(static_cast<float>(kLog2e))));
  batch = dim(q, 0);
  heads = dim(q, 1);
  totalQueries = querySeq = dim(q, 2);
  // The most keys a sequence has: N, or P pages of page_size keys.
  maxKeys = dim(k, 2);
  if (Value table = op.getBlockTable())
    maxKeys = mul(dim(table, 1), maxKeys);
  keySeq = maxKeys;
  group = b.createOrFold<arith::DivUIOp>(loc, heads, dim(k, 1));
  if (op.isVarlen()) {
    sequences = sub(dim(op.getCuSeqlensQ(), 0), idx(1));
    // Every sequence gets the query blocks of the longest (the rows past
    // the last one included).
    queryBlocks =
        ceilDiv(bounds.queries ? bounds.queries
                               : buildMostPackedRows(b, loc, op.getCuSeqlensQ(),
                                                     totalQueries, sequences,
                                                     /*restRows=*/true),
                br);
  } else {
    queryBlocks = ceilDiv(totalQueries, br);
  }

  // Results: O [B, Hq, M, Dv] and LSE [B, Hq, M] share their leading sizes.
  SmallVector<Value, 3> leading = {batch, heads, totalQueries};
  SmallVector<Value> outs;
  for (Value result : op->getResults()) {
    auto type = cast<RankedTensorType>(result.getType());
    SmallVector<Value> dynamicSizes;
    for (auto [i, size] : llvm::enumerate(leading))
      if (type.isDynamicDim(i))
        dynamicSizes.push_back(size);
    outs.push_back(tensor::EmptyOp::create(b, loc, type, dynamicSizes));
  }
  // With key_lengths or cu_seqlens each sequence aligns to its own keys
  // and clamps its own indices (buildKeyNest).
  if (!op.getKeyLengths() && !op.isVarlen()) {
    scoreModIndices.init(b, loc, op.getScoreMod(), querySeq, keySeq);
    alignToKeys();
  }

  if (!splits.enabled())
    return buildKeyNest(outs);
  Value partialOut = splits.partialOut, partialLse = splits.partialLse;
  if (!partialOut) {
    // [S, B, Hq, M, Dv] and [S, B, Hq, M] in f32, allocated here.
    SmallVector<Value> sizes = {idx(splits.count), batch, heads, totalQueries};
    auto workspace = [&](StringRef tag, ArrayRef<Value> dims,
                         ArrayRef<int64_t> inner) {
      SmallVector<int64_t> shape(dims.size(), ShapedType::kDynamic);
      shape[0] = splits.count;
      llvm::append_range(shape, inner);
      auto e = tensor::EmptyOp::create(b, loc, shape, f32, dims.drop_front());
      e->setAttr(kWorkspaceAttr, b.getStringAttr(tag));
      return e.getResult();
    };
    partialOut = workspace("o_split", sizes, {valueDim});
    partialLse = workspace("lse_split", sizes, {});
  }
  splitCount = dim(partialOut, 0);
  SmallVector<Value> partials = buildKeyNest({partialOut, partialLse});
  return buildSplitCombine(partials[0], partials[1], outs);
}

SmallVector<Value> AttentionTiler::buildKeyNest(ValueRange outs) {
  Value q = op.getQuery();
  bool splitting = splits.enabled();
  Value iterations = splitting ? mul(queryBlocks, splitCount) : queryBlocks;
  // With cu_seqlens one iteration per sequence and one for the rows past the
  // last sequence (which see no keys: O = 0, LSE = -inf or the sink).
  Value outer = op.isVarlen() ? add(sequences, idx(1)) : batch;
  auto forall = scf::ForallOp::create(
      b, loc, ArrayRef<OpFoldResult>{outer, heads, iterations}, outs,
      std::nullopt);
  // Only where query block q owns rows [q Br, (q + 1) Br) of its (batch,
  // head): not packed sequences' blocks (from each sequence's offset) nor
  // causal blocks aligned to the last row.
  if (splitting && !op.isVarlen() && !(op.getCausal() && causalRowsFromEnd))
    forall->setAttr(kKeySplitRowsAttrName, b.getI64IntegerAttr(br));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(forall.getTerminator());
  SmallVector<Value> ivs = forall.getInductionVars();
  batchIdx = ivs[0];
  headIdx = ivs[1];
  kvHeadIdx = b.createOrFold<arith::DivUIOp>(loc, headIdx, group);
  if (op.isVarlen()) {
    sequenceIdx = ivs[0];
    batchIdx = idx(0);
    PackedSpan queries =
        buildPackedSpan(b, loc, op.getCuSeqlensQ(), totalQueries, sequenceIdx,
                        sequences, /*restRows=*/true);
    PackedSpan keys = buildPackedSpan(b, loc, op.getCuSeqlensK(), maxKeys,
                                      sequenceIdx, sequences,
                                      /*restRows=*/false);
    queryOffset = queries.first;
    querySeq = queries.count;
    keyOffset = keys.first;
    keySeq = keys.count;
  }
  if (Value lengths = op.getKeyLengths()) {
    // This sequence's keys: the loops, the masks and the causal diagonal
    // (and window) end at N_b; keys past it are never loaded. With
    // cu_seqlens at most the sequence's own keys (and none past the last).
    auto lengthOf = [&](OpBuilder &nb, Location nl) -> Value {
      return clampedIndexValue(
          nb, nl,
          tensor::ExtractOp::create(nb, nl, lengths,
                                    sequenceIdx ? sequenceIdx : batchIdx),
          keySeq);
    };
    keySeq = sequenceIdx ? buildIfElse(b, loc,
                                       b.createOrFold<arith::CmpIOp>(
                                           loc, arith::CmpIPredicate::ult,
                                           sequenceIdx, sequences),
                                       lengthOf, keySeq)
                         : lengthOf(b, loc);
  }
  Value queryBlock = ivs[2];
  if (splitting) {
    // The splits of a query block are adjacent iterations.
    queryBlock = b.createOrFold<arith::DivUIOp>(loc, ivs[2], splitCount);
    splitIdx = b.createOrFold<arith::RemUIOp>(loc, ivs[2], splitCount);
  }
  rowStart = mul(queryBlock, idx(br));
  // Packed sequences have blocks from their first row (their blocks past
  // the end are empty).
  if (op.getCausal() && causalRowsFromEnd && !op.isVarlen()) {
    // The block with fewer than Br rows is then the first, whose key loop is
    // the shortest, instead of the last, whose loop is the longest (at 4096
    // rows in blocks of 192 the last block's empty two thirds are 5.6% of
    // the work; measured on the H200 +1.1-1.4% at 4096 but -1% at 3000 and
    // 6144, so flash-compile leaves it off: docs/GPU-NOTES.md 71). Block q
    // ends at row M - (blocks - q - 1) Br; the first
    // block computes rows [0, Br) and owns the first M - (blocks - 1) Br of
    // them (the rest are the next block's, computed again and not
    // written), so that every tile is a plain slice of Q, padded only past
    // the tensor's end. In 32 bits (sizes are below 2^31): the 64-bit form
    // made the persistent kernels' producer warpgroup spill.
    Type i32 = b.getI32Type();
    auto narrow = [&](Value v) {
      return b.createOrFold<arith::IndexCastOp>(loc, i32, v);
    };
    Value shifted = b.createOrFold<arith::IndexCastOp>(
        loc, b.getIndexType(),
        b.createOrFold<arith::SubIOp>(
            loc, narrow(querySeq),
            b.createOrFold<arith::MulIOp>(
                loc,
                b.createOrFold<arith::SubIOp>(loc, narrow(queryBlocks),
                                              narrow(queryBlock)),
                arith::ConstantIntOp::create(b, loc, i32, br))));
    rowStart = max(shifted, idx(0));
    rows = min(idx(br), sub(querySeq, rowStart));
    ownRows = sub(add(shifted, idx(br)), rowStart);
  } else {
    // A packed sequence's block past its rows computes nothing: no keys.
    rows = op.isVarlen()
               ? buildPackedBlockRows(b, loc, br, rowStart, querySeq, keySeq)
               : min(idx(br), sub(querySeq, rowStart));
    ownRows = rows;
  }
  // The grid counts the blocks of the longest sequence: a shorter one's
  // blocks past its rows end here (FlashAttention-2's early return).
  if (op.isVarlen())
    buildSkipEmptyTile(b, loc, rows);
  if (op.getKeyLengths() || op.isVarlen()) {
    alignToKeys();
    scoreModIndices.init(b, loc, op.getScoreMod(), querySeq, keySeq);
  }
  queryTile = paddedTile(
      q, {batchIdx, headIdx, queryRow(rowStart), b.getIndexAttr(0)},
      {b.getIndexAttr(1), b.getIndexAttr(1), rows, b.getIndexAttr(headDim)},
      {ShapedType::kDynamic, headDim}, {br, headDim});

  // Key blocks the rows can see, and among them the blocks every row sees
  // entirely (no mask needed).
  KeyBlocks blocks = keyBlocksOf(rowStart, rows, keySeq, diagonal,
                                 op.getCausal(), windowStart, bc);
  Value begin = blocks.begin, fullBegin = blocks.fullBegin,
        fullEnd = blocks.fullEnd, end = blocks.end;

  SmallVector<Value> state = {
      filled({br}, -std::numeric_limits<double>::infinity()), filled({br}, 0.0),
      filled({br, valueDim}, 0.0)};
  // With key splits, split s takes the s-th of S equal runs of the visible
  // blocks [begin, end): the loops' bounds clamped to it (each loop still
  // starting where the previous one ends, which the GPU's load ring needs).
  if (splitting) {
    Value chunk =
        b.createOrFold<arith::CeilDivSIOp>(loc, sub(end, begin), splitCount);
    Value splitBegin = min(add(begin, mul(splitIdx, chunk)), end);
    Value splitEnd = min(add(splitBegin, chunk), end);
    auto clamp = [&](Value bound) {
      return min(max(bound, splitBegin), splitEnd);
    };
    begin = clamp(begin);
    fullBegin = clamp(fullBegin);
    fullEnd = clamp(fullEnd);
    end = clamp(end);
  }
  auto loop = [&](Value from, Value to, bool masked) {
    state = keyBlockLoop(from, to, state, masked);
  };
  if (windowStart)
    loop(begin, fullBegin, /*masked=*/true);
  loop(fullBegin, fullEnd, /*masked=*/false);
  loop(fullEnd, end, /*masked=*/true);
  Value m = state[0], l = state[1], acc = state[2];
  // A split's partial result leaves the sink to the combination.
  Value sinks = splitting ? Value() : op.getSinks();

  // The sink joins each row as one more score whose value row is zero:
  // m_f = max(m, sink), l_f = l exp2(m - m_f) + exp2(sink - m_f), and O is
  // acc exp2(m - m_f) / l_f. Folding it in after the key loop instead of
  // starting the loop from it keeps the loop's state initialised by
  // constants. Returns (exp2(m - m_f), m_f, l_f) inside a body.
  auto withSink = [&](OpBuilder &nb, Location nl, Value mRow,
                      Value lRow) -> std::array<Value, 3> {
    Value sink = tensor::ExtractOp::create(nb, nl, sinks, headIdx);
    sink = extendToF32(nb, nl, sink);
    if (!naturalUnits)
      sink = arith::MulFOp::create(
          nb, nl, sink,
          arith::ConstantOp::create(
              nb, nl, nb.getF32FloatAttr(static_cast<float>(kLog2e))));
    return foldSink(nb, nl, mRow, lRow, sink,
                    [&](OpBuilder &eb, Location el, Value x, Value ref) {
                      return expRelative(eb, el, x, ref);
                    });
  };

  // O = acc · (1 / l) (0 for a fully masked row): one reciprocal per row,
  // then a multiply per element. LSE = m ln 2 + ln l.
  SmallVector<Value> rowState = {l};
  if (sinks)
    rowState.push_back(m);
  Value inverse = generic(
      rowState, empty({br}, f32),
      SmallVector<AffineMap>(rowState.size() + 1, id(1)), {kPar},
      [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
        Value zero = arith::ConstantOp::create(nb, nl, nb.getF32FloatAttr(0));
        Value numerator =
            arith::ConstantOp::create(nb, nl, nb.getF32FloatAttr(1));
        Value sum = a[0];
        if (sinks) {
          auto [alpha, mFinal, lFinal] = withSink(nb, nl, a[1], a[0]);
          numerator = alpha;
          sum = lFinal;
        }
        Value none =
            arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OEQ, sum, zero);
        Value rcp = arith::DivFOp::create(nb, nl, numerator, sum);
        return arith::SelectOp::create(nb, nl, none, zero, rcp);
      });
  // A split's partial O stays in f32.
  Type outType = splitting ? f32 : elementType;
  SmallVector<Value> tiles = {scaledRows(acc, inverse, br, outType)};
  if (op.getLse() || splitting) {
    tiles.push_back(
        generic({m, l}, empty({br}, f32), {id(1), id(1), id(1)}, {kPar},
                [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                  Value mNat = a[0], sum = a[1];
                  if (sinks) {
                    auto [alpha, mFinal, lFinal] = withSink(nb, nl, a[0], a[1]);
                    mNat = mFinal;
                    sum = lFinal;
                  }
                  if (!naturalUnits)
                    mNat = arith::MulFOp::create(
                        nb, nl, mNat,
                        arith::ConstantOp::create(
                            nb, nl,
                            nb.getF32FloatAttr(static_cast<float>(kLn2))));
                  return arith::AddFOp::create(
                      nb, nl, mNat, math::LogOp::create(nb, nl, sum));
                }));
  }

  // The first `rows` rows of each tile are this block's part of the result.
  SmallVector<Value> parts;
  for (Value tile : tiles) {
    auto type = cast<RankedTensorType>(tile.getType());
    SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
    SmallVector<OpFoldResult> sizes = {ownRows};
    SmallVector<int64_t> shape = {ShapedType::kDynamic};
    if (type.getRank() == 2) {
      sizes.push_back(b.getIndexAttr(valueDim));
      shape.push_back(valueDim);
    }
    SmallVector<OpFoldResult> strides(type.getRank(), b.getIndexAttr(1));
    parts.push_back(tensor::ExtractSliceOp::create(
        b, loc, RankedTensorType::get(shape, type.getElementType()), tile,
        offsets, sizes, strides));
  }
  Value firstRow = queryRow(rowStart);
  b.setInsertionPointToStart(forall.getTerminator().getBody());
  for (auto [part, shared] : llvm::zip(parts, forall.getRegionIterArgs())) {
    auto type = cast<RankedTensorType>(shared.getType());
    SmallVector<OpFoldResult> offsets = {batchIdx, headIdx, firstRow};
    SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1), b.getIndexAttr(1),
                                       ownRows};
    if (splitting) {
      offsets.insert(offsets.begin(), splitIdx);
      sizes.insert(sizes.begin(), b.getIndexAttr(1));
    }
    if (type.getRank() == 4 + splitting) {
      offsets.push_back(b.getIndexAttr(0));
      sizes.push_back(b.getIndexAttr(valueDim));
    }
    SmallVector<OpFoldResult> strides(type.getRank(), b.getIndexAttr(1));
    tensor::ParallelInsertSliceOp::create(b, loc, part, shared, offsets, sizes,
                                          strides);
  }
  return SmallVector<Value>(forall.getResults());
}

Value AttentionTiler::partialRows(Value partial, Value batchAt, Value headAt,
                                  Value rowAt, Value rowCount) {
  OpFoldResult one = b.getIndexAttr(1);
  bool withColumns = cast<RankedTensorType>(partial.getType()).getRank() == 5;
  SmallVector<OpFoldResult> offsets = {b.getIndexAttr(0), batchAt, headAt,
                                       rowAt};
  SmallVector<OpFoldResult> sizes = {splitCount, one, one, rowCount};
  SmallVector<int64_t> sliceShape = {ShapedType::kDynamic,
                                     ShapedType::kDynamic};
  if (withColumns) {
    offsets.push_back(b.getIndexAttr(0));
    sizes.push_back(b.getIndexAttr(valueDim));
    sliceShape.push_back(valueDim);
  }
  SmallVector<OpFoldResult> strides(offsets.size(), one);
  return tensor::ExtractSliceOp::create(b, loc,
                                        RankedTensorType::get(sliceShape, f32),
                                        partial, offsets, sizes, strides);
}

SmallVector<Value> AttentionTiler::buildSplitCombine(Value partialOut,
                                                     Value partialLse,
                                                     ValueRange outs) {
  auto forall = scf::ForallOp::create(
      b, loc,
      ArrayRef<OpFoldResult>{batch, heads, ceilDiv(totalQueries, kMergeRows)},
      outs, std::nullopt);
  // It reads only what the split nest wrote: its launch may start before
  // that one's ends (programmatic dependent launch on sm_90).
  forall->setAttr(kDependentLaunchAttrName, b.getUnitAttr());
  forall->setAttr(kMergeRowsAttrName, b.getI64IntegerAttr(kMergeRows));
  // A thread per `width` columns of each merged row (whole warps).
  int64_t width = valueDim % kMergeColumns == 0 ? kMergeColumns : 1;
  int64_t groups = valueDim / width;
  forall->setAttr(kBlockThreadsAttrName,
                  b.getI64IntegerAttr(std::min<int64_t>(
                      1024, llvm::alignTo(kMergeRows * groups, 32))));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(forall.getTerminator());
  SmallVector<Value> ivs = forall.getInductionVars();
  Value rowAt = mul(ivs[2], idx(kMergeRows));
  Value rowCount = min(idx(kMergeRows), sub(totalQueries, rowAt));
  // exp(x - ref) in natural units, a ref of -inf (no split saw a key)
  // taken as 0.
  auto expFrom = [&](OpBuilder &nb, Location nl, Value x, Value ref) {
    Value zero = arith::ConstantOp::create(nb, nl, nb.getF32FloatAttr(0.0f));
    Value none = arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OEQ, ref,
                                       negInfF32(nb, nl));
    ref = arith::SelectOp::create(nb, nl, none, zero, ref);
    Value d = arith::SubFOp::create(nb, nl, x, ref);
    d = arith::MulFOp::create(
        nb, nl, d,
        arith::ConstantOp::create(
            nb, nl, nb.getF32FloatAttr(static_cast<float>(kLog2e))));
    return math::Exp2Op::create(nb, nl, d).getResult();
  };

  // One pass over the splits, the partial results read where the splits
  // wrote them: each (row, group of kMergeColumns columns) of the merged
  // rows (a parallel loop; a thread each on the GPU) walks the splits with
  // the row's running max m and sum l (FlashAttention's online softmax over
  // the partial LSEs), in chunks of kMergeSplits whose loads are all issued
  // before any is used, so that a thread waits for memory about once a
  // chunk (docs/Rationale.md, "The split-KV merge"). Per split s:
  // m' = max(m, LSE_s), a = exp(m - m'), w = exp(LSE_s - m'),
  // acc' = a acc + w O_s, l' = a l + w.
  Value lse = partialRows(partialLse, ivs[0], ivs[1], rowAt, rowCount);
  Value out = partialRows(partialOut, ivs[0], ivs[1], rowAt, rowCount);
  Value sinks = op.getSinks();
  // The sink joins the merged row as in the unsplit epilogue, in natural
  // units: m_f = max(max, sink), l_f = l exp(max - m_f) + exp(sink - m_f).
  // Returns (numerator of O's factor, m_f, l_f).
  auto finalRow = [&](OpBuilder &nb, Location nl, Value mRow,
                      Value lRow) -> std::array<Value, 3> {
    Value one = arith::ConstantOp::create(nb, nl, nb.getF32FloatAttr(1.0f));
    if (!sinks)
      return {one, mRow, lRow};
    Value sink =
        extendToF32(nb, nl, tensor::ExtractOp::create(nb, nl, sinks, ivs[1]));
    return foldSink(nb, nl, mRow, lRow, sink, expFrom);
  };
  OpFoldResult zeroIndex = b.getIndexAttr(0), one = b.getIndexAttr(1);
  // The first rowCount rows of a [kMergeRows, cols] tile.
  auto validRows = [&](Value tile, int64_t cols) -> Value {
    auto type = cast<RankedTensorType>(tile.getType());
    return tensor::ExtractSliceOp::create(
        b, loc,
        RankedTensorType::get({ShapedType::kDynamic, cols},
                              type.getElementType()),
        tile, ArrayRef<OpFoldResult>{zeroIndex, zeroIndex},
        ArrayRef<OpFoldResult>{rowCount, b.getIndexAttr(cols)},
        ArrayRef<OpFoldResult>{one, one});
  };
  // Column c of a group's O in tile c mod width, then each row's LSE. All
  // kMergeRows rows are merged (static tiles: a slice of an empty tensor
  // would fold into a dynamic one); rows past rowCount read the last valid
  // row and are not written out.
  SmallVector<Value> groupOuts;
  for (int64_t c = 0; c < width; ++c)
    groupOuts.push_back(empty({kMergeRows, groups}, elementType));
  groupOuts.push_back(empty({kMergeRows, groups}, f32));
  auto merge = linalg::GenericOp::create(
      b, loc, ValueRange(groupOuts).getTypes(), ValueRange{}, groupOuts,
      SmallVector<AffineMap>(groupOuts.size(), id(2)),
      ArrayRef<IteratorType>{kPar, kPar},
      [&](OpBuilder &nb, Location nl, ValueRange) {
        auto index = [&](int64_t v) -> Value {
          return arith::ConstantIndexOp::create(nb, nl, v);
        };
        Value row = arith::MinSIOp::create(
            nb, nl, linalg::IndexOp::create(nb, nl, 0),
            arith::SubIOp::create(nb, nl, rowCount, index(1)));
        Value group = linalg::IndexOp::create(nb, nl, 1);
        Value zero = arith::ConstantOp::create(nb, nl, nb.getF32FloatAttr(0));
        Value firstColumn = arith::MulIOp::create(nb, nl, group, index(width));
        SmallVector<Value> columns;
        for (int64_t c = 0; c < width; ++c)
          columns.push_back(
              arith::AddIOp::create(nb, nl, firstColumn, index(c)));
        Value last = arith::SubIOp::create(nb, nl, splitCount, index(1));
        // (acc per column, m, l).
        SmallVector<Value> start(width, zero);
        start.append({negInfF32(nb, nl), zero});
        auto chunks = scf::ForOp::create(
            nb, nl, index(0), splitCount, index(kMergeSplits), start,
            [&](OpBuilder &cb, Location cl, Value first, ValueRange carried) {
              // The chunk's loads first: splits past the last read the
              // last one's, then weigh nothing (their LSE taken as -inf).
              SmallVector<Value> lseAt;
              SmallVector<SmallVector<Value>> outAt(kMergeSplits);
              for (int64_t j = 0; j < kMergeSplits; ++j) {
                Value split = arith::AddIOp::create(cb, cl, first, index(j));
                Value valid = arith::CmpIOp::create(
                    cb, cl, arith::CmpIPredicate::slt, split, splitCount);
                Value at = arith::MinSIOp::create(cb, cl, split, last);
                Value x =
                    tensor::ExtractOp::create(cb, cl, lse, ValueRange{at, row});
                lseAt.push_back(arith::SelectOp::create(cb, cl, valid, x,
                                                        negInfF32(cb, cl)));
                for (Value column : columns)
                  outAt[j].push_back(tensor::ExtractOp::create(
                      cb, cl, out, ValueRange{at, row, column}));
              }
              SmallVector<Value> acc(carried.take_front(width));
              Value m = carried[width], l = carried[width + 1];
              for (int64_t j = 0; j < kMergeSplits; ++j) {
                Value mNew = arith::MaximumFOp::create(cb, cl, m, lseAt[j]);
                Value alpha = expFrom(cb, cl, m, mNew);
                Value w = expFrom(cb, cl, lseAt[j], mNew);
                for (int64_t c = 0; c < width; ++c)
                  acc[c] = arith::AddFOp::create(
                      cb, cl, arith::MulFOp::create(cb, cl, acc[c], alpha),
                      arith::MulFOp::create(cb, cl, w, outAt[j][c]));
                l = arith::AddFOp::create(
                    cb, cl, arith::MulFOp::create(cb, cl, l, alpha), w);
                m = mNew;
              }
              SmallVector<Value> next(acc);
              next.append({m, l});
              scf::YieldOp::create(cb, cl, next);
            });
        // O = acc (numerator / l_f), 0 where no split and no sink saw a key;
        // LSE = m_f + ln l_f (m_f taken as 0 when -inf).
        auto [numerator, mFinal, lFinal] = finalRow(
            nb, nl, chunks.getResult(width), chunks.getResult(width + 1));
        Value none = arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OEQ,
                                           lFinal, zero);
        Value factor = arith::SelectOp::create(
            nb, nl, none, zero,
            arith::DivFOp::create(nb, nl, numerator, lFinal));
        SmallVector<Value> results;
        for (int64_t c = 0; c < width; ++c) {
          Value o = arith::MulFOp::create(nb, nl, chunks.getResult(c), factor);
          if (elementType != f32)
            o = arith::TruncFOp::create(nb, nl, elementType, o);
          results.push_back(o);
        }
        Value unseen = arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OEQ,
                                             mFinal, negInfF32(nb, nl));
        Value ref = arith::SelectOp::create(nb, nl, unseen, zero, mFinal);
        results.push_back(arith::AddFOp::create(
            nb, nl, ref, math::LogOp::create(nb, nl, lFinal)));
        linalg::YieldOp::create(nb, nl, results);
      });

  // The merged rows go straight into O and LSE: each result is a slice of
  // the nest's output that the terminator inserts where it was taken, so
  // that bufferization writes them in place.
  auto rowsOfOutput = [&](Value shared) {
    auto type = cast<RankedTensorType>(shared.getType());
    SmallVector<OpFoldResult> offsets = {ivs[0], ivs[1], rowAt};
    SmallVector<OpFoldResult> sizes = {one, one, rowCount};
    SmallVector<int64_t> shape = {ShapedType::kDynamic};
    if (type.getRank() == 4) {
      offsets.push_back(b.getIndexAttr(0));
      sizes.push_back(b.getIndexAttr(valueDim));
      shape.push_back(valueDim);
    }
    return std::make_tuple(
        tensor::ExtractSliceOp::create(
            b, loc, RankedTensorType::get(shape, type.getElementType()), shared,
            offsets, sizes, SmallVector<OpFoldResult>(sizes.size(), one))
            .getResult(),
        offsets, sizes);
  };
  ValueRange shared = forall.getRegionIterArgs();
  // O[r, c] = group tile c mod width at (r, c / width).
  AffineMap groupOf = AffineMap::get(
      2, 0, {b.getAffineDimExpr(0), b.getAffineDimExpr(1).floorDiv(width)},
      ctx);
  auto [oRows, oOffsets, oSizes] = rowsOfOutput(shared[0]);
  SmallVector<AffineMap> oMaps(width, groupOf);
  oMaps.push_back(id(2));
  SmallVector<Value> groupRows;
  for (Value result : merge.getResults())
    groupRows.push_back(validRows(result, groups));
  SmallVector<Value> parts = {generic(
      ArrayRef<Value>(groupRows).take_front(width), oRows, oMaps, {kPar, kPar},
      [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
        Value column = arith::RemUIOp::create(
            nb, nl, linalg::IndexOp::create(nb, nl, 1),
            arith::ConstantIndexOp::create(nb, nl, width));
        Value o = a[0];
        for (int64_t c = 1; c < width; ++c)
          o = arith::SelectOp::create(
              nb, nl,
              arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::eq, column,
                                    arith::ConstantIndexOp::create(nb, nl, c)),
              a[c], o);
        return o;
      })};
  SmallVector<SmallVector<OpFoldResult>> offsets = {oOffsets}, sizes = {oSizes};
  if (op.getLse()) {
    // Group 0's LSE.
    AffineMap firstGroup = AffineMap::get(
        1, 0, {b.getAffineDimExpr(0), b.getAffineConstantExpr(0)}, ctx);
    auto [lseRows, lseOffsets, lseSizes] = rowsOfOutput(shared[1]);
    parts.push_back(generic(
        {groupRows[width]}, lseRows, {firstGroup, id(1)}, {kPar},
        [&](OpBuilder &, Location, ValueRange a) -> Value { return a[0]; }));
    offsets.push_back(lseOffsets);
    sizes.push_back(lseSizes);
  }
  b.setInsertionPointToStart(forall.getTerminator().getBody());
  for (auto [part, into, at, size] : llvm::zip(parts, shared, offsets, sizes))
    tensor::ParallelInsertSliceOp::create(
        b, loc, part, into, at, size,
        SmallVector<OpFoldResult>(size.size(), one));
  return SmallVector<Value>(forall.getResults());
}

LogicalResult mlir::flash::tileAttention(RewriterBase &rewriter, AttentionOp op,
                                         int64_t blockRows, int64_t blockCols,
                                         bool causalRowsFromEnd,
                                         KeySplits splits,
                                         PackedBounds bounds) {
  if (splits.partialOut && op.getQuery().getType().getRank() != 4)
    return op.emitOpError("takes partial results for its key splits only in "
                          "the rank-4 form");
  if (op.getBlockTable() && blockCols > 0) {
    // A key block lies within one page: Bc divides the page size.
    int64_t pageSize = op.getKey().getType().getDimSize(2);
    if (ShapedType::isDynamic(pageSize))
      return op.emitOpError("cannot be tiled with a block_table whose pages "
                            "have a dynamic size: the key blocks must divide "
                            "it");
    if (pageSize > 0)
      blockCols = std::gcd(blockCols, pageSize);
  }
  return replaceWithTiles<AttentionTiler>(rewriter, op, blockRows, blockCols,
                                          causalRowsFromEnd, splits, bounds);
}

namespace {
/// The tile rules divide by the head dims and multiply them into byte
/// counts: D and Dv of 0, or so large that one row of Q, K or V does not fit
/// the target's on-chip memory, get a located error instead.
static LogicalResult checkHeadDims(Operation *op, const AttentionTarget &tgt,
                                   int64_t d, int64_t dv, int64_t bytes) {
  for (auto [name, size] : {std::pair<const char *, int64_t>{"D", d},
                            std::pair<const char *, int64_t>{"Dv", dv}}) {
    if (size < 1)
      return op->emitOpError("cannot be tiled with head dimension ")
             << name << " = " << size << ": it must be at least 1";
    if (size > tgt.sramBytes / (4 * bytes))
      return op->emitOpError("cannot be tiled with head dimension ")
             << name << " = " << size << ": four rows of " << size
             << " elements exceed the " << tgt.sramBytes
             << " on-chip bytes of target " << tgt.name;
  }
  return success();
}

struct FlashTileAttentionPass
    : flash::impl::FlashTileAttentionPassBase<FlashTileAttentionPass> {
  using Base::Base;

  void runOnOperation() override {
    // Every target= value is a known target (the option is an enum).
    std::optional<AttentionTarget> tgt = getAttentionTarget(target);
    // Blocks beyond 2^16 rows or keys are no tiling; bounding them keeps the
    // tile arithmetic (and the GPU mapping's unrolled tiles) in range.
    constexpr int64_t kMaxBlock = int64_t(1) << 16;
    if (blockRows < 0 || blockCols < 0 || kvBlockRows < 0 || kvBlockCols < 0 ||
        blockRows > kMaxBlock || blockCols > kMaxBlock ||
        kvBlockRows > kMaxBlock || kvBlockCols > kMaxBlock) {
      emitError(getOperation()->getLoc(),
                "flash-tile-attention: block-rows, block-cols, kv-block-rows "
                "and kv-block-cols must be between 1 and 65536 (or 0 for the "
                "target's choice)");
      return signalPassFailure();
    }
    if (keySplits < 0 || keySplits > kMaxBlock) {
      emitError(getOperation()->getLoc(),
                "flash-tile-attention: key-splits must be between 0 (no "
                "split-KV) and 65536");
      return signalPassFailure();
    }
    SmallVector<AttentionOp> ops;
    getOperation()->walk([&](AttentionOp op) { ops.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (AttentionOp op : ops) {
      int64_t d = op.getQuery().getType().getShape().back();
      int64_t dv = op.getValue().getType().getShape().back();
      int64_t bytes =
          op.getQuery().getType().getElementType().getIntOrFloatBitWidth() / 8;
      if (failed(checkHeadDims(op, *tgt, d, dv, bytes)) ||
          failed(checkAttentionSizes(op, /*scores=*/false)))
        return signalPassFailure();
      AttentionTiles tiles = chooseAttentionTiles(*tgt, d, dv, bytes);
      if (blockRows > 0 || blockCols > 0) {
        tiles.blockRows = blockRows > 0 ? blockRows : tiles.blockRows;
        tiles.blockCols = blockCols > 0 ? blockCols : tiles.blockCols;
        tiles.rule = "forced";
        tiles.sramBytes = attentionTileBytes(*tgt, tiles.blockRows,
                                             tiles.blockCols, d, dv, bytes);
      }
      if (report)
        emitReport(op, *tgt, tiles, d, dv, bytes);
      FailureOr<KeySplits> split = keySplitsOf(op);
      FailureOr<PackedBounds> bounds = packedBoundsOf(op);
      if (failed(split) || failed(bounds) ||
          failed(tileAttention(rewriter, op, tiles.blockRows, tiles.blockCols,
                               causalRowsFromEnd, *split, *bounds)))
        return signalPassFailure();
    }
    SmallVector<AttentionBackwardOp> backward;
    getOperation()->walk(
        [&](AttentionBackwardOp op) { backward.push_back(op); });
    for (AttentionBackwardOp op : backward) {
      int64_t d = op.getQuery().getType().getShape().back();
      int64_t dv = op.getValue().getType().getShape().back();
      int64_t bytes =
          op.getQuery().getType().getElementType().getIntOrFloatBitWidth() / 8;
      if (failed(checkHeadDims(op, *tgt, d, dv, bytes)) ||
          failed(checkAttentionSizes(op, /*scores=*/false)))
        return signalPassFailure();
      BackwardTiles tiles = chooseBackwardTiles(
          *tgt, d, dv, bytes, {blockRows, blockCols, kvBlockRows, kvBlockCols});
      int64_t br = tiles.blockRows, bc = tiles.blockCols;
      int64_t kvRows = tiles.kvRows, kvCols = tiles.kvCols;
      // The CPU form walks each sequence's own blocks: no bounds.
      FailureOr<PackedBounds> bounds =
          tgt->tensorCores ? packedBoundsOf(op) : PackedBounds{};
      if (failed(bounds))
        return signalPassFailure();
      MaskFreeBlocks maskFree = !maskFreeBlocks   ? MaskFreeBlocks::None
                                : maskUnderBranch ? MaskFreeBlocks::Branch
                                                  : MaskFreeBlocks::Loops;
      LogicalResult tiled =
          tgt->tensorCores
              ? tileAttentionBackwardSplit(rewriter, op, br, bc, kvRows, kvCols,
                                           deterministic, overlapProducts,
                                           dqFragmentMajor, maskFree, *bounds)
              : tileAttentionBackward(rewriter, op, br, bc);
      if (failed(tiled))
        return signalPassFailure();
    }
  }

  /// The op's key splits: the partial results its function passes (tagged
  /// "o_split" and "lse_split"), else the option's count.
  FailureOr<KeySplits> keySplitsOf(AttentionOp op) {
    KeySplits split;
    split.count = keySplits;
    auto func = op->getParentOfType<FunctionOpInterface>();
    if (!func || func.isExternal())
      return split;
    for (BlockArgument arg : func.getArguments()) {
      auto tag =
          func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kWorkspaceAttr);
      if (tag && tag.getValue() == "o_split")
        split.partialOut = arg;
      else if (tag && tag.getValue() == "lse_split")
        split.partialLse = arg;
    }
    if (!split.partialOut && !split.partialLse)
      return split;
    auto expect = [&](Value v, StringRef tag, int64_t rank) -> bool {
      auto type = v ? dyn_cast<RankedTensorType>(v.getType()) : nullptr;
      if (type && type.getRank() == rank && type.getElementType().isF32())
        return true;
      op.emitOpError("is split by its function's \"")
          << tag << "\" argument, which must be a rank-" << rank
          << " f32 tensor (with the other partial result beside it)";
      return false;
    };
    if (!expect(split.partialOut, "o_split", 5) ||
        !expect(split.partialLse, "lse_split", 4))
      return failure();
    split.count = 0;
    return split;
  }

  /// The packed sequences' bounds the op's function passes (arguments
  /// tagged kMaxQueryRowsAttr / kMaxKeyRowsAttr, index or integer scalars),
  /// as index values created before the op; null where there is none.
  FailureOr<PackedBounds> packedBoundsOf(Operation *op) {
    PackedBounds bounds;
    auto func = op->getParentOfType<FunctionOpInterface>();
    bool varlen = TypeSwitch<Operation *, bool>(op)
                      .Case<AttentionOp, AttentionBackwardOp>(
                          [](auto attention) { return attention.isVarlen(); })
                      .Default([](Operation *) { return false; });
    if (!varlen || !func || func.isExternal())
      return bounds;
    for (BlockArgument arg : func.getArguments()) {
      for (auto [tag, into] : {std::pair(kMaxQueryRowsAttr, &bounds.queries),
                               std::pair(kMaxKeyRowsAttr, &bounds.keys)}) {
        if (!func.getArgAttr(arg.getArgNumber(), tag))
          continue;
        Type type = arg.getType();
        if (!type.isIndex() && !type.isSignlessInteger()) {
          op->emitOpError("takes the function argument tagged ")
              << tag << " as a bound on its packed sequences' rows, which "
              << "must be an index or integer scalar, got " << type;
          return failure();
        }
        OpBuilder b(op);
        *into = type.isIndex() ? Value(arg)
                               : arith::IndexCastOp::create(
                                     b, op->getLoc(), b.getIndexType(), arg)
                                     .getResult();
      }
    }
    return bounds;
  }

  void emitReport(AttentionOp op, const AttentionTarget &tgt,
                  const AttentionTiles &tiles, int64_t d, int64_t dv,
                  int64_t bytes) {
    InFlightDiagnostic diag = op.emitRemark();
    diag << "tiled with Br = " << tiles.blockRows
         << ", Bc = " << tiles.blockCols << " (" << tiles.rule
         << " rule, target " << tgt.name << "); tiles use " << tiles.sramBytes
         << " of " << tgt.sramBytes << " on-chip bytes; ";
    ArrayRef<int64_t> qShape = op.getQuery().getType().getShape();
    ArrayRef<int64_t> kShape = op.getKey().getType().getShape();
    int64_t m = qShape[qShape.size() - 2], n = kShape[kShape.size() - 2];
    if (ShapedType::isDynamic(m) || ShapedType::isDynamic(n)) {
      diag << "HBM traffic per (batch, head): Theta(N^2 d^2 / M_sram) tiled "
              "vs Theta(N d + N^2) naive (sequence lengths are dynamic)";
      return;
    }
    HbmTraffic t = estimateHbmTraffic(m, n, d, dv, tiles.blockRows, bytes);
    diag << "HBM bytes per (batch, head): "
         << static_cast<int64_t>(t.tiledBytes) << " tiled vs "
         << static_cast<int64_t>(t.naiveBytes) << " naive (naive / tiled = "
         << llvm::formatv("{0:f1}", t.naiveBytes / t.tiledBytes).str() << ")";
  }
};
} // namespace
