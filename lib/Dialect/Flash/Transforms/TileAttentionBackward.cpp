//===- TileAttentionBackward.cpp - FlashAttention-2 backward tiling -------===//
//
// Part of the flash-mlir project.
//
// flash.attention_backward -> D = rowsum(dO * O), then scf.forall over
// (batch, KV head) around a loop over key blocks; for each key block, over
// the group's query heads and the query blocks that see the block: recompute
// S and P = exp(S - LSE) from Q, K and the saved log-sum-exp, then
// dV += Pᵀ dO, dP = dO Vᵀ, dS = P (dP - D), dK += dSᵀ Q, dQ += dS K.
// dK and dV of a key block are finished before the next; dQ is accumulated
// across key blocks in a [G, M, D] buffer of the (batch, KV head). Nothing
// is M x N.
//
//===----------------------------------------------------------------------===//

#include "flash/Dialect/Flash/IR/FlashOps.h"
#include "flash/Dialect/Flash/Transforms/Passes.h"
#include "flash/Dialect/Flash/Transforms/Transforms.h"

#include "LinalgBuilders.h"
#include "TileBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

#include <limits>

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::detail;

namespace {
class BackwardTiler : TilerBase {
public:
  BackwardTiler(OpBuilder &b, AttentionBackwardOp op, int64_t br, int64_t bc)
      : TilerBase(b, op.getLoc(), op.getQuery().getType(),
                  op.getValue().getType()),
        op(op), br(br), bc(bc) {}

  SmallVector<Value> build();

private:
  Value zeros(ArrayRef<OpFoldResult> sizes) {
    return buildFilled(b, loc, sizes, f32, 0.0);
  }
  SmallVector<Value> queryBlockStep(Value qb, Value head, ValueRange carried);

  AttentionBackwardOp op;
  int64_t br, bc;
  ScoreModIndexClamp scoreModIndices;

  /// A row of this iteration's sequence as a row of the operands: with
  /// cu_seqlens offset by where the sequence starts.
  Value queryRow(Value local) {
    return buildPackedRow(b, loc, queryOffset, totalQueries, local);
  }
  Value keyRow(Value local) {
    return buildPackedRow(b, loc, keyOffset, totalKeys, local);
  }
  /// The b of a score_mod: the sequence with cu_seqlens.
  Value scoreModBatch() { return sequenceIdx ? sequenceIdx : batchIdx; }

  Value rowDot, querySeq, keySeq, diagonal, group;
  /// The operands' M and N.
  Value totalQueries, totalKeys;
  /// The window clamped to M + N (null without a window).
  Value windowSize;
  // Per (batch, KV head) and key block.
  Value batchIdx, kvHeadIdx, keyStart, cols, keyTile, valueTile;
  // With cu_seqlens, per iteration: the sequence (S for the rows past the
  // last one) and where its queries and keys start.
  Value sequenceIdx, queryOffset, keyOffset;
};
} // namespace

/// One query block of one query head against the current key block; carries
/// (dK, dV, dQ accumulator).
SmallVector<Value> BackwardTiler::queryBlockStep(Value qb, Value head,
                                                 ValueRange carried) {
  Value gradK = carried[0], gradV = carried[1], gradQ = carried[2];
  Value headInGroup = sub(head, mul(kvHeadIdx, group));
  Value rowStart = mul(qb, idx(br));
  Value rows = min(idx(br), sub(querySeq, rowStart));
  OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1);
  auto rowTile = [&](Value source, int64_t width) {
    return buildPaddedTile(b, loc, source,
                           {batchIdx, head, queryRow(rowStart), zero},
                           {one, one, rows, b.getIndexAttr(width)},
                           {ShapedType::kDynamic, width}, {br, width});
  };
  Value queryTile = rowTile(op.getQuery(), headDim);
  Value gradOutTile = rowTile(op.getGradOutput(), valueDim);
  // Rows past M get LSE = +inf, hence P = 0.
  Value lseTile = buildPaddedTile(
      b, loc, op.getLse(), {batchIdx, head, queryRow(rowStart)},
      {one, one, rows}, {ShapedType::kDynamic}, {br},
      b.getF32FloatAttr(std::numeric_limits<float>::infinity()));
  Value rowDotTile =
      buildPaddedTile(b, loc, rowDot, {batchIdx, head, queryRow(rowStart)},
                      {one, one, rows}, {ShapedType::kDynamic}, {br});

  // S = scale Q Kᵀ + bias, masked; P = exp(S - LSE), 0 where masked and on
  // fully masked rows (LSE = -inf).
  Value scores = contract(Contraction::Scores, queryTile, map(3, {0, 2}), keyTile, map(3, {1, 2}),
                          zeros({b.getIndexAttr(br), b.getIndexAttr(bc)}));
  SmallVector<Value> ins = {scores, lseTile};
  SmallVector<AffineMap> maps = {id(2), map(2, {0})};
  ScoreTile where{batchIdx, head, rowStart, rows, keyStart, cols, br, bc};
  int biasArg = -1, maskArg = -1;
  if (Value bias = op.getBias()) {
    auto [tile, tileMap] = buildScoreOperandTile(b, loc, bias, where);
    biasArg = ins.size();
    ins.push_back(tile);
    maps.push_back(tileMap);
  }
  if (Value mask = op.getMask()) {
    auto [tile, tileMap] = buildScoreOperandTile(b, loc, mask, where);
    maskArg = ins.size();
    ins.push_back(tile);
    maps.push_back(tileMap);
  }
  maps.push_back(id(2));
  float scale = op.getEffectiveScale();
  // scale * S at the tile element's (i, j), inside a generic's body.
  auto scaledScore = [&](OpBuilder &nb, Location nl, Value raw, Value &i,
                         Value &j) -> Value {
    Value s = arith::MulFOp::create(
        nb, nl, raw,
        arith::ConstantOp::create(nb, nl, nb.getF32FloatAttr(scale)));
    i = arith::AddIOp::create(nb, nl, rowStart,
                              linalg::IndexOp::create(nb, nl, 0));
    j = arith::AddIOp::create(nb, nl, keyStart,
                              linalg::IndexOp::create(nb, nl, 1));
    return s;
  };
  Value probs = generic(
      ins, empty({br, bc}, f32), maps, {kPar, kPar},
      [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
        Value i, j;
        Value s = scaledScore(nb, nl, a[0], i, j);
        if (op.hasScoreMod())
          s = op.buildScoreMod(
              nb, s,
              scoreModIndices.indices(nb, nl, scoreModBatch(), head, i, j));
        if (biasArg >= 0)
          s = arith::AddFOp::create(nb, nl, s, extendToF32(nb, nl, a[biasArg]));
        Value lse = a[1];
        Value hidden = buildHiddenScore(
            nb, nl, i, j, keySeq, diagonal, op.getCausal(), windowSize,
            maskArg >= 0 ? a[maskArg] : Value(), lse);
        Value p =
            math::ExpOp::create(nb, nl, arith::SubFOp::create(nb, nl, s, lse));
        Value zeroF = arith::ConstantOp::create(nb, nl, nb.getF32FloatAttr(0));
        return arith::SelectOp::create(nb, nl, hidden, zeroF, p);
      });
  Value probsRounded = rounded(probs);
  // dV += Pᵀ dO; dP = dO Vᵀ; dS = P (dP - D).
  gradV = contract(Contraction::GradValue, probsRounded, map(3, {2, 0}), gradOutTile, map(3, {2, 1}),
                   gradV);
  Value gradP = contract(Contraction::GradProbs, gradOutTile, map(3, {0, 2}), valueTile, map(3, {1, 2}),
                         zeros({b.getIndexAttr(br), b.getIndexAttr(bc)}));
  SmallVector<Value> dsIns = {probs, gradP, rowDotTile};
  SmallVector<AffineMap> dsMaps = {id(2), id(2), map(2, {0})};
  if (op.hasScoreMod()) {
    // dS also takes mod'(scale S) at the tile's scores.
    dsIns.push_back(scores);
    dsMaps.push_back(id(2));
  }
  dsMaps.push_back(id(2));
  Value gradS = generic(
      dsIns, empty({br, bc}, f32), dsMaps, {kPar, kPar},
      [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
        Value diff = arith::SubFOp::create(nb, nl, a[1], a[2]);
        Value ds = arith::MulFOp::create(nb, nl, a[0], diff);
        if (!op.hasScoreMod())
          return ds;
        Value i, j;
        Value s = scaledScore(nb, nl, a[3], i, j);
        Value slope = op.buildScoreModDerivative(
            nb, s,
            scoreModIndices.indices(nb, nl, scoreModBatch(), head, i, j));
        return arith::MulFOp::create(nb, nl, ds, slope);
      });
  Value gradSRounded = rounded(gradS);
  // dK += dSᵀ Q; dQ rows += dS K (both scaled once at the end).
  gradK =
      contract(Contraction::GradKey, gradSRounded, map(3, {2, 0}), queryTile, map(3, {2, 1}), gradK);
  Value gradQTile =
      contract(Contraction::GradQueryBlock, gradSRounded, map(3, {0, 2}), keyTile, map(3, {2, 1}),
               zeros({b.getIndexAttr(br), b.getIndexAttr(headDim)}));
  SmallVector<OpFoldResult> at = {headInGroup, rowStart, zero};
  SmallVector<OpFoldResult> size = {one, rows, b.getIndexAttr(headDim)};
  SmallVector<OpFoldResult> unit(3, one);
  auto rowsType = RankedTensorType::get({ShapedType::kDynamic, headDim}, f32);
  Value current =
      tensor::ExtractSliceOp::create(b, loc, rowsType, gradQ, at, size, unit);
  Value update = tensor::ExtractSliceOp::create(
      b, loc, rowsType, gradQTile, ArrayRef<OpFoldResult>{zero, zero},
      ArrayRef<OpFoldResult>{rows, b.getIndexAttr(headDim)},
      ArrayRef<OpFoldResult>{one, one});
  Value sum = generic(update, current, {id(2), id(2)}, {kPar, kPar},
                      [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                        return arith::AddFOp::create(nb, nl, a[1], a[0]);
                      });
  gradQ = tensor::InsertSliceOp::create(b, loc, sum, gradQ, at, size, unit);
  return {gradK, gradV, gradQ};
}

SmallVector<Value> BackwardTiler::build() {
  Value q = op.getQuery(), k = op.getKey();
  Value batch = dim(q, 0), heads = dim(q, 1), kvHeads = dim(k, 1);
  totalQueries = dim(q, 2);
  totalKeys = dim(k, 2);
  querySeq = totalQueries;
  keySeq = totalKeys;
  // The sequences' sizes and alignment, per (sequence, KV head) with
  // cu_seqlens.
  auto alignToKeys = [&] {
    diagonal = sub(keySeq, querySeq);
    scoreModIndices.init(b, loc, op.getScoreMod(), querySeq, keySeq);
    if (std::optional<int64_t> window = op.getWindow())
      windowSize = buildClampedWindow(b, loc, *window, querySeq, keySeq);
  };
  if (!op.isVarlen())
    alignToKeys();
  group = b.createOrFold<arith::DivUIOp>(loc, heads, kvHeads);
  OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1);

  // D = rowsum(dO * O) in f32, [B, Hq, M].
  rowDot = generic({op.getGradOutput(), op.getOutput()},
                   buildFilled(b, loc, {batch, heads, totalQueries}, f32, 0.0),
                   {id(4), id(4), map(4, {0, 1, 2})}, {kPar, kPar, kPar, kRed},
                   [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                     Value p = arith::MulFOp::create(nb, nl,
                                                     extendToF32(nb, nl, a[0]),
                                                     extendToF32(nb, nl, a[1]));
                     return arith::AddFOp::create(nb, nl, a[2], p);
                   });

  Value gradSinks;
  if (op.getSinks())
    gradSinks = buildSinkGradient(b, loc, op, rowDot);

  SmallVector<Value> outs;
  for (Value result : op->getResults()) {
    if (result == op.getGradSinks())
      continue;
    auto type = cast<RankedTensorType>(result.getType());
    SmallVector<Value> dynamicSizes;
    Value like = result == op.getGradQuery() ? q
                 : result == op.getGradKey() ? k
                                             : op.getValue();
    for (int64_t i = 0; i < type.getRank(); ++i)
      if (type.isDynamicDim(i))
        dynamicSizes.push_back(dim(like, i));
    outs.push_back(tensor::EmptyOp::create(b, loc, type, dynamicSizes));
  }
  // With cu_seqlens one iteration per sequence and one more for the query
  // and key rows past the last sequence, whose gradients are 0.
  Value sequences;
  if (op.isVarlen())
    sequences = sub(dim(op.getCuSeqlensQ(), 0), idx(1));
  Value outer = op.isVarlen() ? add(sequences, idx(1)) : batch;
  auto forall = scf::ForallOp::create(
      b, loc, ArrayRef<OpFoldResult>{outer, kvHeads}, outs, std::nullopt);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(forall.getTerminator());
  batchIdx = forall.getInductionVars()[0];
  kvHeadIdx = forall.getInductionVars()[1];
  // The key rows this iteration writes (with cu_seqlens, the rest's keys
  // are written but see no query).
  Value keysOut = keySeq;
  if (op.isVarlen()) {
    sequenceIdx = batchIdx;
    batchIdx = idx(0);
    PackedSpan queries =
        buildPackedSpan(b, loc, op.getCuSeqlensQ(), totalQueries, sequenceIdx,
                        sequences, /*restRows=*/true);
    PackedSpan keys =
        buildPackedSpan(b, loc, op.getCuSeqlensK(), totalKeys, sequenceIdx,
                        sequences, /*restRows=*/true);
    queryOffset = queries.first;
    querySeq = queries.count;
    keyOffset = keys.first;
    keysOut = keys.count;
    Value real = b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::ult,
                                               sequenceIdx, sequences);
    keySeq = b.createOrFold<arith::SelectOp>(loc, real, keysOut, idx(0));
    alignToKeys();
  }

  // Per (batch, KV head): dQ of the group in f32, dK and dV of all keys
  // (zeros first where some are not computed).
  Value gradQ = zeros({group, querySeq, b.getIndexAttr(headDim)});
  auto keysType = [&](int64_t width) {
    return RankedTensorType::get({ShapedType::kDynamic, width}, elementType);
  };
  auto keyRowsInit = [&](int64_t width) -> Value {
    Value init = tensor::EmptyOp::create(b, loc, keysType(width), keysOut);
    if (!op.isVarlen())
      return init;
    Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(elementType));
    return linalg::FillOp::create(b, loc, zero, init).getResult(0);
  };
  Value gradKAll = keyRowsInit(headDim);
  Value gradVAll = keyRowsInit(valueDim);
  Value keyBlocks = ceilDiv(keySeq, bc);
  Value queryBlocks = ceilDiv(querySeq, br);

  auto keyLoop = scf::ForOp::create(b, loc, idx(0), keyBlocks, idx(1),
                                    ValueRange{gradQ, gradKAll, gradVAll});
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(keyLoop.getBody());
    keyStart = mul(keyLoop.getInductionVar(), idx(bc));
    cols = min(idx(bc), sub(keySeq, keyStart));
    auto keyRows = [&](Value source, int64_t width) {
      return buildPaddedTile(b, loc, source,
                             {batchIdx, kvHeadIdx, keyRow(keyStart), zero},
                             {one, one, cols, b.getIndexAttr(width)},
                             {ShapedType::kDynamic, width}, {bc, width});
    };
    keyTile = keyRows(k, headDim);
    valueTile = keyRows(op.getValue(), valueDim);
    // Query blocks with a row that sees a key of this block: causal rows
    // i >= j - (N - M); a window's rows i <= j + W - (N - M).
    Value first = idx(0), last = queryBlocks;
    if (op.getCausal())
      first = floorDiv(max(sub(keyStart, diagonal), idx(0)), br);
    if (windowSize) {
      Value lastKey = sub(add(keyStart, cols), idx(1));
      Value lastRow = add(sub(lastKey, diagonal), windowSize);
      last = min(max(ceilDiv(add(lastRow, idx(1)), br), idx(0)), queryBlocks);
    }
    first = min(first, last);

    SmallVector<Value> carried = {
        zeros({b.getIndexAttr(bc), b.getIndexAttr(headDim)}),
        zeros({b.getIndexAttr(bc), b.getIndexAttr(valueDim)}),
        keyLoop.getRegionIterArgs()[0]};
    auto headLoop = scf::ForOp::create(b, loc, idx(0), group, idx(1), carried);
    {
      OpBuilder::InsertionGuard h(b);
      b.setInsertionPointToStart(headLoop.getBody());
      Value head = add(mul(kvHeadIdx, group), headLoop.getInductionVar());
      auto queryLoop = scf::ForOp::create(b, loc, first, last, idx(1),
                                          headLoop.getRegionIterArgs());
      {
        OpBuilder::InsertionGuard qg(b);
        b.setInsertionPointToStart(queryLoop.getBody());
        SmallVector<Value> next = queryBlockStep(
            queryLoop.getInductionVar(), head, queryLoop.getRegionIterArgs());
        scf::YieldOp::create(b, loc, next);
      }
      scf::YieldOp::create(b, loc, queryLoop.getResults());
    }
    // This key block's dK (scaled) and dV, valid rows, into the (b, hkv)
    // results.
    auto place = [&](Value tile, float factor, int64_t width, Value into) {
      Value done = finish(tile, factor, {bc, width});
      auto type = keysType(width);
      Value valid = tensor::ExtractSliceOp::create(
          b, loc, type, done, ArrayRef<OpFoldResult>{zero, zero},
          ArrayRef<OpFoldResult>{cols, b.getIndexAttr(width)},
          ArrayRef<OpFoldResult>{one, one});
      return tensor::InsertSliceOp::create(
                 b, loc, valid, into, ArrayRef<OpFoldResult>{keyStart, zero},
                 ArrayRef<OpFoldResult>{cols, b.getIndexAttr(width)},
                 ArrayRef<OpFoldResult>{one, one})
          .getResult();
    };
    Value nextK = place(headLoop.getResult(0), op.getEffectiveScale(), headDim,
                        keyLoop.getRegionIterArgs()[1]);
    Value nextV = place(headLoop.getResult(1), 1.0f, valueDim,
                        keyLoop.getRegionIterArgs()[2]);
    scf::YieldOp::create(b, loc,
                         ValueRange{headLoop.getResult(2), nextK, nextV});
  }

  // dQ = scale * accumulated, in the element type.
  Value gradQDone =
      generic(keyLoop.getResult(0),
              tensor::EmptyOp::create(
                  b, loc,
                  RankedTensorType::get(
                      {ShapedType::kDynamic, ShapedType::kDynamic, headDim},
                      elementType),
                  ValueRange{group, querySeq}),
              {id(3), id(3)}, {kPar, kPar, kPar},
              [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                Value x = arith::MulFOp::create(
                    nb, nl, a[0],
                    arith::ConstantOp::create(
                        nb, nl, nb.getF32FloatAttr(op.getEffectiveScale())));
                if (elementType != f32)
                  x = arith::TruncFOp::create(nb, nl, elementType, x);
                return x;
              });

  Value firstHead = mul(kvHeadIdx, group);
  b.setInsertionPointToStart(forall.getTerminator().getBody());
  ValueRange shared = forall.getRegionIterArgs();
  // A gradient with M = 0 or N = 0 (static) has nothing to write.
  auto insert = [&](Value part, Value into, ArrayRef<OpFoldResult> offsets,
                    ArrayRef<OpFoldResult> sizes) {
    if (isStaticallyEmpty(cast<ShapedType>(into.getType())))
      return;
    tensor::ParallelInsertSliceOp::create(b, loc, part, into, offsets, sizes,
                                          SmallVector<OpFoldResult>(4, one));
  };
  OpFoldResult queriesAt = queryOffset ? OpFoldResult(queryOffset) : zero;
  OpFoldResult keysAt = keyOffset ? OpFoldResult(keyOffset) : zero;
  insert(gradQDone, shared[0], {batchIdx, firstHead, queriesAt, zero},
         {one, group, querySeq, b.getIndexAttr(headDim)});
  insert(keyLoop.getResult(1), shared[1], {batchIdx, kvHeadIdx, keysAt, zero},
         {one, one, keysOut, b.getIndexAttr(headDim)});
  insert(keyLoop.getResult(2), shared[2], {batchIdx, kvHeadIdx, keysAt, zero},
         {one, one, keysOut, b.getIndexAttr(valueDim)});
  SmallVector<Value> results(forall.getResults());
  if (gradSinks)
    results.push_back(gradSinks);
  return results;
}

LogicalResult mlir::flash::tileAttentionBackward(RewriterBase &rewriter,
                                                 AttentionBackwardOp op,
                                                 int64_t blockRows,
                                                 int64_t blockCols) {
  return replaceWithTiles<BackwardTiler>(rewriter, op, blockRows, blockCols);
}
