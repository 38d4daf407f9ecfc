//===- TileAttentionBackwardSplit.cpp - backward as two kernels -*- C++ -*-===//
//
// Part of the flash-mlir project.
//
// The FlashAttention-2 backward in the form the GPU mapping takes: two
// forward-shaped nests whose register tiles are indexed by the rows each
// parallel iteration owns.
//
//   dQ nest, scf.forall (b, h, query block):
//     D = rowsum(dO * O) (written out for the second nest)
//     for key block: S = Q Kᵀ; P = exp2(S c - LSE log2 e); dP = dO Vᵀ;
//                    dS = P (dP - D); dQ += dS K
//   dK/dV nest, scf.forall (b, kv head, key block):
//     for query head of the group, query block that sees the keys:
//       Sᵀ = K Qᵀ; Pᵀ = exp2(Sᵀ c - LSE[col] log2 e); dPᵀ = V dOᵀ;
//       dSᵀ = Pᵀ (dPᵀ - D[col]); dV += Pᵀ dO; dK += dSᵀ Q
//
// No accumulation crosses parallel iterations (deterministic, no atomics);
// S and P are recomputed once per nest. Nothing is M x N.
//
// Not deterministic (FlashAttention-2's own form): S and P once per tile
// pair, dQ added by every key block with atomics into an f32 accumulator.
//
//   pre-pass, scf.forall (b, h, query block):
//     D = rowsum(dO * O); dQ accumulator rows = 0
//   dK/dV nest as above, and per step: dQ[rows] += dS K (flash.atomic_add)
//   dQ = scale * accumulator, scf.forall (b, h, query block)
//
//===----------------------------------------------------------------------===//

#include "flash/Dialect/Flash/IR/FlashOps.h"
#include "flash/Dialect/Flash/Transforms/Passes.h"
#include "flash/Dialect/Flash/Transforms/Transforms.h"

#include "LinalgBuilders.h"
#include "TileBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::detail;

namespace {
constexpr double kLog2e = 1.4426950408889634;


class SplitBackwardTiler : TilerBase {
public:
  /// dQ nest: `br` query rows x `bc` keys per step; dK/dV nest: `kvRows`
  /// key rows x `kvCols` queries per step.
  SplitBackwardTiler(OpBuilder &b, AttentionBackwardOp op, int64_t br,
                     int64_t bc, int64_t kvRows, int64_t kvCols,
                     bool deterministic, bool overlapProducts,
                     int64_t fragmentMajor, MaskFreeBlocks maskFree,
                     PackedBounds bounds)
      : TilerBase(b, op.getLoc(), op.getQuery().getType(),
                  op.getValue().getType()),
        op(op), dqRows(br), dqCols(bc), kvRows(kvRows), kvCols(kvCols), br(br),
        bc(bc), deterministic(deterministic), overlapProducts(overlapProducts),
        fragmentMajor(fragmentMajor),
        maskFreeBlocks(maskFree != MaskFreeBlocks::None),
        maskUnderBranch(maskFree == MaskFreeBlocks::Branch), bounds(bounds) {}

  SmallVector<Value> build();

private:
  Value zeros(int64_t rows, int64_t cols) { return filled({rows, cols}, 0.0); }
  /// P = exp2(S scale log2e + bias log2e - LSE log2e), 0 on a fully masked
  /// row (LSE = -inf) and where the op's mask hides the score; with
  /// `masked` also past the keys and outside the causal band or window.
  /// `transposed`: the tile is Sᵀ (key rows, query columns) and the LSE a
  /// column vector.
  Value probabilities(Value scores, Value lse, bool transposed, Value head,
                      Value rowStart, Value rows, bool masked);
  /// P of a loop that holds the blocks that need a mask and those that need
  /// none (`maskUnderBranch`): the unmasked P, and where the i1 `needsMask`
  /// holds (uniform over the tile) P with the scores past the keys and
  /// outside the causal band or window set to 0.
  Value probabilitiesMaskedWhen(Value needsMask, Value scores, Value lse,
                                bool transposed, Value head, Value rowStart,
                                Value rows);
  /// Whether block `block` of a nest's inner loop lies outside the blocks
  /// [fullBegin, fullEnd) that need no mask.
  Value outsideMaskFree(Value block, Value fullBegin, Value fullEnd) {
    return arith::OrIOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, block,
                              fullBegin),
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, block,
                              fullEnd));
  }
  Value queryRowTile(Value source, Value head, Value rowStart, Value rows,
                     int64_t width) {
    OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1);
    return buildPaddedTile(b, loc, source,
                           {batchIdx, head, queryRow(rowStart), zero},
                           {one, one, rows, b.getIndexAttr(width)},
                           {ShapedType::kDynamic, width}, {br, width});
  }
  Value rowVector(Value source, Value head, Value rowStart, Value rows,
                  float pad) {
    OpFoldResult one = b.getIndexAttr(1);
    return buildPaddedTile(b, loc, source, {batchIdx, head, queryRow(rowStart)},
                           {one, one, rows}, {ShapedType::kDynamic}, {br},
                           b.getF32FloatAttr(pad));
  }
  Value keyRowTile(Value source, Value kvHead, int64_t width) {
    OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1);
    return buildPaddedTile(b, loc, source,
                           {batchIdx, kvHead, keyRow(keyStart), zero},
                           {one, one, cols, b.getIndexAttr(width)},
                           {ShapedType::kDynamic, width}, {bc, width});
  }

  /// dS = P (dP - D) in the element type (the tensor-core operand), with D
  /// read along loop `queryLoop`.
  /// With a score_mod also times mod'(scale S) at the tile's `scores`.
  Value softmaxGradient(Value probs, Value gradProbs, Value rowDot,
                        unsigned queryLoop, Value scores, Value head,
                        Value rowStart) {
    auto type = cast<RankedTensorType>(probs.getType());
    SmallVector<Value> ins = {probs, gradProbs, rowDot};
    SmallVector<AffineMap> maps = {id(2), id(2), map(2, {queryLoop})};
    if (op.hasScoreMod()) {
      ins.push_back(scores);
      maps.push_back(id(2));
    }
    maps.push_back(id(2));
    return generic(
        ins, empty(type.getShape(), elementType), maps, {kPar, kPar},
        [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
          Value diff = arith::SubFOp::create(nb, nl, a[1], a[2]);
          Value ds = arith::MulFOp::create(nb, nl, a[0], diff);
          if (op.hasScoreMod()) {
            Value s = arith::MulFOp::create(
                nb, nl, a[3],
                arith::ConstantOp::create(
                    nb, nl, nb.getF32FloatAttr(op.getEffectiveScale())));
            Value slope = op.buildScoreModDerivative(
                nb, s, scoreModIndices(nb, nl, head, rowStart, queryLoop));
            ds = arith::MulFOp::create(nb, nl, ds, slope);
          }
          if (elementType != f32)
            ds = arith::TruncFOp::create(nb, nl, elementType, ds);
          return ds;
        });
  }
  /// (b, h, i, j) of a score tile's element inside a generic whose loop
  /// `queryLoop` runs over the query rows from `rowStart` (the other over
  /// the keys from keyStart).
  SmallVector<Value> scoreModIndices(OpBuilder &nb, Location nl, Value head,
                                     Value rowStart, unsigned queryLoop) {
    Value i = arith::AddIOp::create(
        nb, nl, rowStart, linalg::IndexOp::create(nb, nl, queryLoop));
    Value j = arith::AddIOp::create(
        nb, nl, keyStart, linalg::IndexOp::create(nb, nl, 1 - queryLoop));
    return scoreModClamp.indices(nb, nl, sequenceIdx ? sequenceIdx : batchIdx,
                                 head, i, j);
  }
  /// Rows of this iteration's sequence as rows of the operands (with
  /// cu_seqlens offset by where the sequence starts).
  Value queryRow(Value local) {
    return buildPackedRow(b, loc, queryOffset, totalQueries, local);
  }
  Value keyRow(Value local) {
    return buildPackedRow(b, loc, keyOffset, totalKeys, local);
  }
  /// The parallel iteration's problem: batch `s`, or with cu_seqlens
  /// sequence `s`'s queries and keys (the rows past the last sequence as
  /// sequence S with `restQueries` or `restKeys`) and their alignment.
  void enterProblem(Value s, bool restQueries, bool restKeys);
  /// The causal diagonal N - M, the window and the score_mod's index bounds
  /// of the problem's sizes.
  void alignToKeys();
  /// How many blocks of `rows` rows the longest sequence has (with the
  /// rest; `bound` where the caller gave it), or all rows of `tokens`
  /// without cu_seqlens.
  Value blocksOf(Value offsets, Value tokens, Value bound, int64_t rows) {
    if (!op.isVarlen())
      return ceilDiv(tokens, rows);
    return ceilDiv(bound ? bound
                         : buildMostPackedRows(b, loc, offsets, tokens,
                                               sequences, /*restRows=*/true),
                   rows);
  }
  /// One parallel iteration of a nest over (batch, head, query block).
  struct QueryBlock {
    scf::ForallOp forall;
    /// The rows [rowStart, rowStart + rows) of the sequence, which are the
    /// operands' rows from `firstRow`.
    Value head, rowStart, rows, firstRow;
  };
  /// A forall over (batch, head, query block of `br` rows) with `outs`,
  /// `b` left before its terminator (the caller holds an insertion guard).
  QueryBlock buildQueryBlockNest(ValueRange outs);
  /// `tile`'s valid rows into `into` (rank 3, or rank 4 from column 0) at
  /// the iteration's (batch, head, first row), in the forall's terminator.
  void insertRows(Value tile, Value into, QueryBlock at, Value rows = {});
  Value buildGradQuery(Value &rowDot);
  /// With `accumulator` (the f32 dQ buffer [B, Hq, M, D]) the steps also add
  /// their dS K to it.
  SmallVector<Value> buildGradKeyValue(Value rowDot, Value accumulator = {});
  /// The pre-pass of the atomic form: D, and the accumulator's zeros.
  std::pair<Value, Value> buildRowDotAndZeros();
  /// dQ = scale * accumulator in the element type.
  Value buildGradQueryFromAccumulator(Value accumulator);
  /// A [B, Hq, M] (or [B, Hq, M, width]) f32 workspace tensor tagged `tag`;
  /// `rows` instead of M where given.
  Value workspace(StringRef tag, std::optional<int64_t> width, Value rows = {});
  /// The accumulator's rows that `rows` query rows take: `rows` rounded up
  /// to whole strips of 16 when it is fragment-major.
  Value accumulatorRows(Value rows) {
    if (!fragmentMajor)
      return rows;
    Value strip = idx(kFragmentStripRows);
    return mul(b.createOrFold<arith::CeilDivUIOp>(loc, rows, strip), strip);
  }
  /// An empty tensor shaped like `result`, its dynamic sizes those of `like`.
  Value emptyLike(Value result, Value like);
  /// D = rowsum(dO * O) of [br, Dv] tiles of dO and O.
  Value blockRowDot(Value gradOutTile, Value outTile);
  /// The first `rows` rows of a [R] or [R, width] tile.
  Value validRows(Value tile, Value rows);
  /// `gradients` with grad_sinks appended when the op has sinks, from the
  /// nests' D = rowsum(dO O).
  SmallVector<Value> withSinkGradient(SmallVector<Value> gradients,
                                      Value rowDot) {
    if (op.getSinks())
      gradients.push_back(buildSinkGradient(b, loc, op, rowDot));
    return gradients;
  }

  AttentionBackwardOp op;
  int64_t dqRows, dqCols, kvRows, kvCols;
  /// The query and key blocks of the nest being built.
  int64_t br, bc;
  bool deterministic;
  /// The atomic dK/dV nest builds dPᵀ right after Sᵀ.
  bool overlapProducts;
  /// The dQ accumulator's fragment-major group (flash.atomic_add's
  /// `fragment_major`), 0 for rows.
  int64_t fragmentMajor;
  /// Blocks that need no mask take a P without a per-element select (see
  /// tileAttentionBackwardSplit): in loops of their own, or with
  /// `maskUnderBranch` in the nest's one loop, the mask under a branch.
  bool maskFreeBlocks, maskUnderBranch;
  PackedBounds bounds;
  Value querySeq, keySeq, diagonal, group, batch, heads, kvHeads;
  // The op's M and N, and with cu_seqlens the number of sequences S and the
  // size of the nests' first axis (S + 1; else B).
  Value totalQueries, totalKeys, sequences, outer;
  // With cu_seqlens, per parallel iteration: the sequence and where its
  // queries and keys start.
  Value sequenceIdx, queryOffset, keyOffset;
  /// The window clamped to M + N (null without a window).
  Value windowSize;
  // Of the current parallel iteration and key block.
  Value batchIdx, keyStart, cols;
  ScoreModIndexClamp scoreModClamp;
};
} // namespace

Value SplitBackwardTiler::probabilities(Value scores, Value lse,
                                        bool transposed, Value head,
                                        Value rowStart, Value rows,
                                        bool masked) {
  int64_t tr = transposed ? bc : br, tc = transposed ? br : bc;
  unsigned queryLoop = transposed ? 1 : 0, keyLoop = transposed ? 0 : 1;
  SmallVector<Value> ins = {scores, lse};
  SmallVector<AffineMap> maps = {id(2), map(2, {queryLoop})};
  ScoreTile where{batchIdx, head, rowStart, rows, keyStart, cols, br, bc};
  auto swap = [&](AffineMap m) {
    return transposed ? m.compose(map(2, {1, 0})) : m;
  };
  int biasArg = -1, maskArg = -1;
  if (Value bias = op.getBias()) {
    auto [tile, tileMap] = buildScoreOperandTile(b, loc, bias, where);
    biasArg = ins.size();
    ins.push_back(tile);
    maps.push_back(swap(tileMap));
  }
  if (Value mask = op.getMask()) {
    auto [tile, tileMap] = buildScoreOperandTile(b, loc, mask, where);
    maskArg = ins.size();
    ins.push_back(tile);
    maps.push_back(swap(tileMap));
  }
  maps.push_back(id(2));
  float factor = op.getEffectiveScale() * kLog2e;
  // A scale past the forward's kMaxExponentScale: the forward kept the max
  // and the LSE in natural units, so P = exp2((scale s + bias - LSE) log2 e)
  // subtracts first (c s and LSE log2 e rounded apart differ by about 1e3 at
  // scale 1e10, past exp2's range).
  bool natural = std::fabs(factor) > kMaxExponentScale || op.hasScoreMod();
  return generic(
      ins, empty({tr, tc}, f32), maps, {kPar, kPar},
      [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
        auto cst = [&](float v) {
          return arith::ConstantOp::create(nb, nl, nb.getF32FloatAttr(v));
        };
        Value lse = a[1];
        Value keep = maskArg >= 0 ? a[maskArg] : Value();
        // Hidden past the keys and outside the causal band and window too.
        auto hiddenOrMasked = [&](Value lseOrNull) {
          Value i = arith::AddIOp::create(
              nb, nl, rowStart, linalg::IndexOp::create(nb, nl, queryLoop));
          Value j = arith::AddIOp::create(
              nb, nl, keyStart, linalg::IndexOp::create(nb, nl, keyLoop));
          return buildHiddenScore(nb, nl, i, j, keySeq, diagonal,
                                  op.getCausal(), windowSize, keep, lseOrNull);
        };
        // With mask-free blocks a fully masked row (LSE = -inf) gets P = 0
        // from its exponent: the select depends on the row's LSE alone, so a
        // row's elements share it (per row, not per element). In one masked
        // loop such a row is hidden like a masked score.
        Value fullyMasked =
            maskFreeBlocks
                ? arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OEQ, lse,
                                        negInfF32(nb, nl))
                      .getResult()
                : Value();
        auto perRow = [&](float ifMasked, Value otherwise) -> Value {
          return fullyMasked ? arith::SelectOp::create(nb, nl, fullyMasked,
                                                       cst(ifMasked), otherwise)
                                   .getResult()
                             : otherwise;
        };
        // One masked loop's mask is built before the exponent (the order
        // that kernels assembled with, docs/GPU-NOTES.md 93).
        Value hidden;
        auto hideInOneLoop = [&] {
          if (!maskFreeBlocks)
            hidden = hiddenOrMasked(lse);
        };
        Value exponent;
        if (natural) {
          Value s =
              arith::MulFOp::create(nb, nl, a[0], cst(op.getEffectiveScale()));
          if (op.hasScoreMod())
            s = op.buildScoreMod(
                nb, s, scoreModIndices(nb, nl, head, rowStart, queryLoop));
          if (biasArg >= 0)
            s = arith::AddFOp::create(nb, nl, s,
                                      extendToF32(nb, nl, a[biasArg]));
          hideInOneLoop();
          Value subtrahend =
              perRow(std::numeric_limits<float>::infinity(), lse);
          exponent = arith::MulFOp::create(
              nb, nl, arith::SubFOp::create(nb, nl, s, subtrahend),
              cst(kLog2e));
        } else if (!fullyMasked) {
          Value s = arith::MulFOp::create(nb, nl, a[0], cst(factor));
          if (biasArg >= 0)
            s = math::FmaOp::create(nb, nl, extendToF32(nb, nl, a[biasArg]),
                                    cst(kLog2e), s);
          hideInOneLoop();
          exponent = math::FmaOp::create(nb, nl, lse, cst(-kLog2e), s);
        } else {
          // c s - LSE log2 e in one FMA.
          Value addend =
              perRow(-std::numeric_limits<float>::infinity(),
                     arith::MulFOp::create(nb, nl, lse, cst(-kLog2e)));
          exponent = math::FmaOp::create(nb, nl, a[0], cst(factor), addend);
          if (biasArg >= 0)
            exponent = math::FmaOp::create(
                nb, nl, extendToF32(nb, nl, a[biasArg]), cst(kLog2e), exponent);
        }
        Value e = math::Exp2Op::create(nb, nl, exponent);
        if (!hidden) {
          if (masked)
            hidden = hiddenOrMasked(/*lseOrNull=*/Value());
          else if (keep)
            hidden = arith::XOrIOp::create(
                nb, nl, keep,
                arith::ConstantOp::create(nb, nl, nb.getBoolAttr(true)));
          else
            return e;
        }
        return arith::SelectOp::create(nb, nl, hidden, cst(0.0f), e);
      });
}

Value SplitBackwardTiler::probabilitiesMaskedWhen(Value needsMask, Value scores,
                                                  Value lse, bool transposed,
                                                  Value head, Value rowStart,
                                                  Value rows) {
  Value probs = probabilities(scores, lse, transposed, head, rowStart, rows,
                              /*masked=*/false);
  unsigned queryLoop = transposed ? 1 : 0, keyLoop = transposed ? 0 : 1;
  auto branch = scf::IfOp::create(b, loc, TypeRange{probs.getType()}, needsMask,
                                  /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(branch.thenBlock());
  // In place on P: the branch's result is P's buffer either way.
  Value masked = generic(
      ValueRange{}, probs, {id(2)}, {kPar, kPar},
      [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
        Value i = arith::AddIOp::create(
            nb, nl, rowStart, linalg::IndexOp::create(nb, nl, queryLoop));
        Value j = arith::AddIOp::create(
            nb, nl, keyStart, linalg::IndexOp::create(nb, nl, keyLoop));
        Value hidden =
            buildHiddenScore(nb, nl, i, j, keySeq, diagonal, op.getCausal(),
                             windowSize, /*keep=*/Value(), /*lse=*/Value());
        return arith::SelectOp::create(
            nb, nl, hidden,
            arith::ConstantOp::create(nb, nl, nb.getF32FloatAttr(0.0f)), a[0]);
      });
  scf::YieldOp::create(b, loc, masked);
  b.setInsertionPointToStart(branch.elseBlock());
  scf::YieldOp::create(b, loc, probs);
  return branch.getResult(0);
}

/// The dQ nest; also returns D = rowsum(dO * O) [B, Hq, M] in `rowDot`.
Value SplitBackwardTiler::buildGradQuery(Value &rowDot) {
  OpBuilder::InsertionGuard guard(b);
  QueryBlock at =
      buildQueryBlockNest({emptyLike(op.getGradQuery(), op.getQuery()),
                           workspace("d", std::nullopt)});
  Value head = at.head, rowStart = at.rowStart, rows = at.rows;

  Value queryTile = queryRowTile(op.getQuery(), head, rowStart, rows, headDim);
  Value gradOutTile =
      queryRowTile(op.getGradOutput(), head, rowStart, rows, valueDim);
  Value outTile = queryRowTile(op.getOutput(), head, rowStart, rows, valueDim);
  Value lseTile = rowVector(op.getLse(), head, rowStart, rows,
                            std::numeric_limits<float>::infinity());
  Value rowDotTile = blockRowDot(gradOutTile, outTile);

  // Key blocks the rows see: causal j <= i + N - M; window j >= i + N - M - W.
  // Among them, the blocks of whole keys that every row sees entirely take
  // no mask but the op's.
  KeyBlocks blocks =
      keyBlocksOf(rowStart, rows, keySeq, diagonal, op.getCausal(),
                  windowSize ? sub(diagonal, windowSize) : Value(), bc);
  Value first = blocks.begin, fullBegin = blocks.fullBegin,
        fullEnd = blocks.fullEnd, last = blocks.end;

  Value kvHead = b.createOrFold<arith::DivUIOp>(loc, head, group);
  auto keyLoop = [&](Value from, Value to, Value acc, bool masked) {
    auto loop = scf::ForOp::create(b, loc, from, to, idx(1), ValueRange{acc});
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(loop.getBody());
    keyStart = mul(loop.getInductionVar(), idx(bc));
    cols = min(idx(bc), sub(keySeq, keyStart));
    Value keyTile = keyRowTile(op.getKey(), kvHead, headDim);
    Value valueTile = keyRowTile(op.getValue(), kvHead, valueDim);
    Value scores = contract(Contraction::Scores, queryTile, map(3, {0, 2}),
                            keyTile, map(3, {1, 2}), zeros(br, bc));
    Value probs =
        maskUnderBranch
            ? probabilitiesMaskedWhen(
                  outsideMaskFree(loop.getInductionVar(), fullBegin, fullEnd),
                  scores, lseTile, /*transposed=*/false, head, rowStart, rows)
            : probabilities(scores, lseTile, /*transposed=*/false, head,
                            rowStart, rows, masked);
    Value gradP = contract(Contraction::GradProbs, gradOutTile, map(3, {0, 2}),
                           valueTile, map(3, {1, 2}), zeros(br, bc));
    // dS = P (dP - D), in the element type (the tensor-core operand).
    Value gradS = softmaxGradient(probs, gradP, rowDotTile, /*queryLoop=*/0,
                                  scores, head, rowStart);
    Value sum = contract(Contraction::GradQuery, gradS, map(3, {0, 2}), keyTile,
                         map(3, {2, 1}), loop.getRegionIterArgs()[0]);
    scf::YieldOp::create(b, loc, sum);
    return loop.getResult(0);
  };
  Value acc = zeros(br, headDim);
  if (!maskFreeBlocks || maskUnderBranch) {
    acc = keyLoop(first, last, acc, /*masked=*/true);
  } else {
    if (windowSize)
      acc = keyLoop(first, fullBegin, acc, /*masked=*/true);
    acc = keyLoop(fullBegin, fullEnd, acc, /*masked=*/false);
    acc = keyLoop(fullEnd, last, acc, /*masked=*/true);
  }
  Value gradQ = finish(acc, op.getEffectiveScale(), {br, headDim});

  ValueRange shared = at.forall.getRegionIterArgs();
  Value validQ = validRows(gradQ, rows);
  Value validD = validRows(rowDotTile, rows);
  insertRows(validQ, shared[0], at);
  insertRows(validD, shared[1], at);
  rowDot = at.forall.getResult(1);
  return at.forall.getResult(0);
}

Value SplitBackwardTiler::workspace(StringRef tag, std::optional<int64_t> width,
                                    Value rows) {
  SmallVector<int64_t> shape(3, ShapedType::kDynamic);
  if (width)
    shape.push_back(*width);
  Value t = tensor::EmptyOp::create(
      b, loc, RankedTensorType::get(shape, f32),
      ValueRange{batch, heads, rows ? rows : totalQueries});
  // It lives between the nests only; a kernel compiler gives it a buffer of
  // its own (flash-compile makes it a kernel parameter).
  t.getDefiningOp()->setAttr(kWorkspaceAttr, b.getStringAttr(tag));
  return t;
}

Value SplitBackwardTiler::emptyLike(Value result, Value like) {
  auto type = cast<RankedTensorType>(result.getType());
  SmallVector<Value> dynamicSizes;
  for (int64_t i = 0; i < type.getRank(); ++i)
    if (type.isDynamicDim(i))
      dynamicSizes.push_back(dim(like, i));
  return tensor::EmptyOp::create(b, loc, type, dynamicSizes);
}

Value SplitBackwardTiler::blockRowDot(Value gradOutTile, Value outTile) {
  Value product = generic(
      {gradOutTile, outTile}, empty({br, valueDim}, f32), {id(2), id(2), id(2)},
      {kPar, kPar}, [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
        return arith::MulFOp::create(nb, nl, extendToF32(nb, nl, a[0]),
                                     extendToF32(nb, nl, a[1]));
      });
  return generic(product, filled({br}, 0.0), {id(2), map(2, {0})}, {kPar, kRed},
                 [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                   return arith::AddFOp::create(nb, nl, a[0], a[1]);
                 });
}

Value SplitBackwardTiler::validRows(Value tile, Value rows) {
  auto type = cast<RankedTensorType>(tile.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape[0] = ShapedType::kDynamic;
  SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0)),
      sizes = {rows}, strides(type.getRank(), b.getIndexAttr(1));
  for (int64_t d = 1; d < type.getRank(); ++d)
    sizes.push_back(b.getIndexAttr(type.getDimSize(d)));
  return tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get(shape, type.getElementType()), tile,
      offsets, sizes, strides);
}

std::pair<Value, Value> SplitBackwardTiler::buildRowDotAndZeros() {
  OpBuilder::InsertionGuard guard(b);
  QueryBlock at = buildQueryBlockNest(
      {workspace("d", std::nullopt),
       workspace("dq_accum", headDim, accumulatorRows(totalQueries))});
  Value gradOutTile =
      queryRowTile(op.getGradOutput(), at.head, at.rowStart, at.rows, valueDim);
  Value outTile =
      queryRowTile(op.getOutput(), at.head, at.rowStart, at.rows, valueDim);
  Value validD = validRows(blockRowDot(gradOutTile, outTile), at.rows);
  Value sumRows = accumulatorRows(at.rows);
  Value zeroRows = validRows(zeros(br, headDim), sumRows);
  ValueRange shared = at.forall.getRegionIterArgs();
  insertRows(validD, shared[0], at);
  insertRows(zeroRows, shared[1], at, sumRows);
  return {at.forall.getResult(0), at.forall.getResult(1)};
}

Value SplitBackwardTiler::buildGradQueryFromAccumulator(Value accumulator) {
  OpBuilder::InsertionGuard guard(b);
  QueryBlock at =
      buildQueryBlockNest({emptyLike(op.getGradQuery(), op.getQuery())});
  Value sum = queryRowTile(accumulator, at.head, at.rowStart,
                           accumulatorRows(at.rows), headDim);
  AffineMap sumMap = fragmentMajor ? getFragmentMajorMap(b.getContext(),
                                                         headDim, fragmentMajor)
                                   : AffineMap();
  Value gradQ = finish(sum, op.getEffectiveScale(), {br, headDim}, sumMap);
  insertRows(validRows(gradQ, at.rows), at.forall.getRegionIterArgs()[0], at);
  return at.forall.getResult(0);
}

void SplitBackwardTiler::enterProblem(Value s, bool restQueries,
                                      bool restKeys) {
  batchIdx = s;
  if (!op.isVarlen())
    return;
  sequenceIdx = s;
  batchIdx = idx(0);
  PackedSpan queries = buildPackedSpan(b, loc, op.getCuSeqlensQ(), totalQueries,
                                       s, sequences, restQueries);
  PackedSpan keys = buildPackedSpan(b, loc, op.getCuSeqlensK(), totalKeys, s,
                                    sequences, restKeys);
  queryOffset = queries.first;
  querySeq = queries.count;
  keyOffset = keys.first;
  keySeq = keys.count;
  alignToKeys();
}

void SplitBackwardTiler::alignToKeys() {
  diagonal = sub(keySeq, querySeq);
  scoreModClamp.init(b, loc, op.getScoreMod(), querySeq, keySeq);
  if (std::optional<int64_t> window = op.getWindow())
    windowSize = buildClampedWindow(b, loc, *window, querySeq, keySeq);
}

SplitBackwardTiler::QueryBlock
SplitBackwardTiler::buildQueryBlockNest(ValueRange outs) {
  auto forall = scf::ForallOp::create(
      b, loc,
      ArrayRef<OpFoldResult>{
          outer, heads,
          blocksOf(op.getCuSeqlensQ(), totalQueries, bounds.queries, br)},
      outs, std::nullopt);
  b.setInsertionPoint(forall.getTerminator());
  enterProblem(forall.getInductionVars()[0], /*restQueries=*/true,
               /*restKeys=*/false);
  Value rowStart = mul(forall.getInductionVars()[2], idx(br));
  // A packed sequence's block past its rows computes nothing: no keys.
  Value rows = op.isVarlen() ? buildPackedBlockRows(b, loc, br, rowStart,
                                                    querySeq, keySeq)
                             : min(idx(br), sub(querySeq, rowStart));
  // The grid counts the blocks of the longest sequence; this nest writes
  // only its block's rows.
  if (op.isVarlen())
    buildSkipEmptyTile(b, loc, rows);
  return {forall, forall.getInductionVars()[1], rowStart, rows,
          queryRow(rowStart)};
}

void SplitBackwardTiler::insertRows(Value tile, Value into, QueryBlock at,
                                    Value rows) {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(at.forall.getTerminator().getBody());
  OpFoldResult one = b.getIndexAttr(1);
  auto type = cast<RankedTensorType>(into.getType());
  SmallVector<OpFoldResult> offsets = {batchIdx, at.head, at.firstRow},
                            sizes = {one, one, rows ? rows : at.rows};
  if (type.getRank() == 4) {
    offsets.push_back(b.getIndexAttr(0));
    sizes.push_back(b.getIndexAttr(type.getDimSize(3)));
  }
  tensor::ParallelInsertSliceOp::create(
      b, loc, tile, into, offsets, sizes,
      SmallVector<OpFoldResult>(type.getRank(), one));
}

/// The dK/dV nest.
SmallVector<Value> SplitBackwardTiler::buildGradKeyValue(Value rowDot,
                                                         Value accumulator) {
  OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1);
  Value keyBlocks = blocksOf(op.getCuSeqlensK(), totalKeys, bounds.keys, bc);
  SmallVector<Value> outs = {emptyLike(op.getGradKey(), op.getKey()),
                             emptyLike(op.getGradValue(), op.getValue())};
  auto forall = scf::ForallOp::create(
      b, loc, ArrayRef<OpFoldResult>{outer, kvHeads, keyBlocks}, outs,
      std::nullopt);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(forall.getTerminator());
  enterProblem(forall.getInductionVars()[0], /*restQueries=*/false,
               /*restKeys=*/true);
  // Under a causal mask key block 0 sees the most query blocks: launched
  // first within a head, the grid's tail is short.
  forall->setAttr(kHeaviestFirstAttrName, b.getUnitAttr());
  Value kvHead = forall.getInductionVars()[1];
  keyStart = mul(forall.getInductionVars()[2], idx(bc));
  // A block past its sequence's keys (and the keys past the last sequence)
  // sees no query: its dK and dV rows are 0.
  cols = op.isVarlen()
             ? buildPackedBlockRows(b, loc, bc, keyStart, keySeq, querySeq)
             : min(idx(bc), sub(keySeq, keyStart));
  if (op.isVarlen())
    buildSkipEmptyTile(b, loc, cols);
  Value keyTile = keyRowTile(op.getKey(), kvHead, headDim);
  Value valueTile = keyRowTile(op.getValue(), kvHead, valueDim);

  // Query blocks with a row that sees a key of this block: causal rows
  // i >= j - (N - M); a window's rows i <= j + W - (N - M).
  Value queryBlocks = ceilDiv(querySeq, br);
  Value first = idx(0), last = queryBlocks;
  if (op.getCausal())
    first = floorDiv(max(sub(keyStart, diagonal), idx(0)), br);
  if (windowSize) {
    Value lastKey = sub(add(keyStart, cols), idx(1));
    Value lastRow = add(sub(lastKey, diagonal), windowSize);
    last = min(max(ceilDiv(add(lastRow, idx(1)), br), idx(0)), queryBlocks);
  }
  first = min(first, last);
  // Among them, the blocks whose rows all see every key of this block take
  // no mask but the op's: causal rows i >= (last key) - (N - M), a window's
  // rows i <= (first key) + W - (N - M), and only for a block of whole keys
  // (the rows of K past the keys may hold anything).
  Value fullBegin = first, fullEnd = last;
  if (op.getCausal())
    fullBegin =
        min(max(ceilDiv(sub(add(keyStart, idx(bc - 1)), diagonal), br), first),
            last);
  if (windowSize)
    fullEnd = min(
        max(floorDiv(add(sub(add(keyStart, windowSize), diagonal), idx(1)), br),
            fullBegin),
        last);
  Value wholeKeys =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, cols, idx(bc));
  fullBegin = arith::SelectOp::create(b, loc, wholeKeys, fullBegin, last);
  fullEnd = arith::SelectOp::create(b, loc, wholeKeys, fullEnd, last);

  auto headLoop =
      scf::ForOp::create(b, loc, idx(0), group, idx(1),
                         ValueRange{zeros(bc, headDim), zeros(bc, valueDim)});
  headLoop->setAttr(kFreshTilesAttrName, b.getUnitAttr());
  {
    OpBuilder::InsertionGuard h(b);
    b.setInsertionPointToStart(headLoop.getBody());
    Value head = add(mul(kvHead, group), headLoop.getInductionVar());
    auto queryBlockLoop = [&](Value from, Value to, ValueRange init,
                              bool masked) -> ValueRange {
      auto queryLoop = scf::ForOp::create(b, loc, from, to, idx(1), init);
      OpBuilder::InsertionGuard qg(b);
      b.setInsertionPointToStart(queryLoop.getBody());
      Value rowStart = mul(queryLoop.getInductionVar(), idx(br));
      Value rows = min(idx(br), sub(querySeq, rowStart));
      Value queryTile =
          queryRowTile(op.getQuery(), head, rowStart, rows, headDim);
      Value gradOutTile =
          queryRowTile(op.getGradOutput(), head, rowStart, rows, valueDim);
      // The atomic form pads the LSE with 0, not +inf, so that both row
      // vectors are zero-padded loads (cp.async on the GPU): padded query
      // rows have Q = 0 and dO = 0, so their P is finite, their dS is 0 and
      // they add nothing to dK and dV either way.
      Value lseTile = rowVector(
          op.getLse(), head, rowStart, rows,
          deterministic ? std::numeric_limits<float>::infinity() : 0.0f);
      Value rowDotTile = rowVector(rowDot, head, rowStart, rows, 0.0f);
      // Sᵀ = K Qᵀ and dPᵀ = V dOᵀ over (key row, query column).
      Value scoresT = contract(Contraction::ScoresTransposed, keyTile, map(3, {0, 2}), queryTile,
                               map(3, {1, 2}), zeros(bc, br));
      // With `overlapProducts` dPᵀ comes right after Sᵀ: both depend on the
      // loaded tiles only, so with warpgroup MMAs waited for at first use
      // (--flash-gpu-async-mma) dPᵀ runs under Pᵀ's exponentials and dV
      // under dSᵀ's arithmetic (FlashAttention-3's order; measured 1.03-1.05x
      // at D = 128, docs/GPU-NOTES.md 72). Otherwise dV first, so that the
      // rounded Pᵀ is dead before dPᵀ is live (fewer registers at the peak).
      auto gradProbsT = [&] {
        return contract(Contraction::GradProbsTransposed, valueTile,
                        map(3, {0, 2}), gradOutTile, map(3, {1, 2}),
                        zeros(bc, br));
      };
      Value gradPT = overlapProducts && accumulator ? gradProbsT() : Value();
      Value probsT =
          maskUnderBranch
              ? probabilitiesMaskedWhen(
                    outsideMaskFree(queryLoop.getInductionVar(), fullBegin,
                                    fullEnd),
                    scoresT, lseTile, /*transposed=*/true, head, rowStart, rows)
              : probabilities(scoresT, lseTile, /*transposed=*/true, head,
                              rowStart, rows, masked);
      ValueRange carried = queryLoop.getRegionIterArgs();
      Value probsTRounded = rounded(probsT);
      Value gradV = contract(Contraction::GradValue, probsTRounded, map(3, {0, 2}), gradOutTile,
                             map(3, {2, 1}), carried[1]);
      if (!gradPT)
        gradPT = gradProbsT();
      Value gradST = softmaxGradient(probsT, gradPT, rowDotTile,
                                     /*queryLoop=*/1, scoresT, head, rowStart);
      Value gradK = contract(Contraction::GradKey, gradST, map(3, {0, 2}), queryTile, map(3, {2, 1}),
                             carried[0]);
      if (accumulator) {
        // dQ rows += dS K = (dSᵀ)ᵀ K, unscaled (the last pass scales).
        // (Its rows in the accumulator first: the GPU mapping takes the
        // contraction and the addition only with views between them.)
        Value sumRows = accumulatorRows(rows);
        Value gradQBlock =
            contract(Contraction::GradQueryBlock, gradST, map(3, {2, 0}),
                     keyTile, map(3, {2, 1}), zeros(br, headDim));
        Value valid = validRows(gradQBlock, rows);
        auto rowsType = memref::SubViewOp::inferRankReducedResultType(
            {ShapedType::kDynamic, headDim},
            cast<MemRefType>(accumulator.getType()),
            ArrayRef<OpFoldResult>{batchIdx, head, queryRow(rowStart), zero},
            ArrayRef<OpFoldResult>{one, one, sumRows, b.getIndexAttr(headDim)},
            SmallVector<OpFoldResult>(4, one));
        Value into = memref::SubViewOp::create(
            b, loc, cast<MemRefType>(rowsType), accumulator,
            ArrayRef<OpFoldResult>{batchIdx, head, queryRow(rowStart), zero},
            ArrayRef<OpFoldResult>{one, one, sumRows, b.getIndexAttr(headDim)},
            SmallVector<OpFoldResult>(4, one));
        AtomicAddOp::create(b, loc, valid, into,
                            fragmentMajor ? b.getI64IntegerAttr(fragmentMajor)
                                          : IntegerAttr());
      }
      scf::YieldOp::create(b, loc, ValueRange{gradK, gradV});
      return queryLoop.getResults();
    };
    ValueRange sums = headLoop.getRegionIterArgs();
    if (!maskFreeBlocks || maskUnderBranch) {
      sums = queryBlockLoop(first, last, sums, /*masked=*/true);
    } else {
      sums = queryBlockLoop(first, fullBegin, sums, /*masked=*/true);
      sums = queryBlockLoop(fullBegin, fullEnd, sums, /*masked=*/false);
      if (windowSize)
        sums = queryBlockLoop(fullEnd, last, sums, /*masked=*/true);
    }
    scf::YieldOp::create(b, loc, sums);
  }
  Value gradK =
      finish(headLoop.getResult(0), op.getEffectiveScale(), {bc, headDim});
  Value gradV = finish(headLoop.getResult(1), 1.0f, {bc, valueDim});

  ValueRange shared = forall.getRegionIterArgs();
  Value firstKey = keyRow(keyStart);
  SmallVector<Value> valid;
  for (auto [tile, width] :
       {std::pair(gradK, headDim), std::pair(gradV, valueDim)})
    valid.push_back(tensor::ExtractSliceOp::create(
        b, loc,
        RankedTensorType::get({ShapedType::kDynamic, width}, elementType), tile,
        ArrayRef<OpFoldResult>{zero, zero},
        ArrayRef<OpFoldResult>{cols, b.getIndexAttr(width)},
        ArrayRef<OpFoldResult>{one, one}));
  b.setInsertionPointToStart(forall.getTerminator().getBody());
  for (auto [tile, width, into] : {std::tuple(valid[0], headDim, shared[0]),
                                   std::tuple(valid[1], valueDim, shared[1])}) {
    tensor::ParallelInsertSliceOp::create(
        b, loc, tile, into,
        ArrayRef<OpFoldResult>{batchIdx, kvHead, firstKey, zero},
        ArrayRef<OpFoldResult>{one, one, cols, b.getIndexAttr(width)},
        SmallVector<OpFoldResult>(4, one));
  }
  return SmallVector<Value>(forall.getResults());
}

SmallVector<Value> SplitBackwardTiler::build() {
  Value q = op.getQuery(), k = op.getKey();
  batch = dim(q, 0);
  heads = dim(q, 1);
  kvHeads = dim(k, 1);
  totalQueries = querySeq = dim(q, 2);
  totalKeys = keySeq = dim(k, 2);
  outer = batch;
  if (op.isVarlen()) {
    // One parallel iteration per sequence and one for the rows past the
    // last sequence (whose gradients are 0).
    sequences = sub(dim(op.getCuSeqlensQ(), 0), idx(1));
    outer = add(sequences, idx(1));
  } else {
    alignToKeys();
  }
  group = b.createOrFold<arith::DivUIOp>(loc, heads, kvHeads);
  if (!deterministic) {
    br = dqRows;
    auto [rowDot, zeroed] = buildRowDotAndZeros();
    // The accumulator is updated in memory by parallel iterations: a buffer
    // from here to the last pass. `restrict` below holds because `zeroed`
    // has no use but this one.
    auto accType = bufferization::getMemRefTypeWithFullyDynamicLayout(
        cast<TensorType>(zeroed.getType()));
    Value accumulator = bufferization::ToBufferOp::create(
        b, loc, cast<BaseMemRefType>(accType), zeroed);
    br = kvCols;
    bc = kvRows;
    SmallVector<Value> gradKV = buildGradKeyValue(rowDot, accumulator);
    br = dqRows;
    Value sums = bufferization::ToTensorOp::create(
        b, loc, zeroed.getType(), accumulator, /*restrict=*/true,
        /*writable=*/false);
    Value gradQ = buildGradQueryFromAccumulator(sums);
    return withSinkGradient({gradQ, gradKV[0], gradKV[1]}, rowDot);
  }
  Value rowDot;
  br = dqRows;
  bc = dqCols;
  Value gradQ = buildGradQuery(rowDot);
  br = kvCols;
  bc = kvRows;
  SmallVector<Value> gradKV = buildGradKeyValue(rowDot);
  return withSinkGradient({gradQ, gradKV[0], gradKV[1]}, rowDot);
}

LogicalResult mlir::flash::tileAttentionBackwardSplit(
    RewriterBase &rewriter, AttentionBackwardOp op, int64_t blockRows,
    int64_t blockCols, int64_t kvBlockRows, int64_t kvBlockCols,
    bool deterministic, bool overlapProducts, int64_t fragmentMajor,
    MaskFreeBlocks maskFree, PackedBounds bounds) {
  // Strips of 16 rows from each sequence's first row: packed sequences
  // (whose next one starts at any row) keep rows.
  if (op.isVarlen() || deterministic)
    fragmentMajor = 0;
  if (fragmentMajor && (op.getQuery().getType().getShape().back() % 64 != 0 ||
                        blockRows % 16 != 0 || kvBlockCols % 16 != 0))
    return op.emitError("a fragment-major dQ accumulator needs D a multiple "
                        "of 64 and query blocks of whole 16-row strips");
  return replaceWithTiles<SplitBackwardTiler>(
      rewriter, op, blockRows, blockCols, kvBlockRows, kvBlockCols,
      deterministic, overlapProducts, fragmentMajor, maskFree, bounds);
}
