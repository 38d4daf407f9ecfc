//===- SinkGradient.cpp - the gradient of attention sinks -------*- C++ -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#include "TileBuilders.h"

#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::detail;

Value mlir::flash::detail::buildSinkGradient(OpBuilder &b, Location loc,
                                             AttentionBackwardOp op,
                                             Value rowDot) {
  // d sink[h] = -sum_{b,i} exp(sink[h] - LSE[b,h,i]) D[b,h,i]: the sink's
  // probability times dP - D with dP = 0 (its value row is zero). One pass
  // over the [B, Hq, M] rows, outside the tiled nests.
  MLIRContext *ctx = b.getContext();
  Value sinks = op.getSinks();
  auto type = cast<RankedTensorType>(sinks.getType());
  Value init = buildFilled(b, loc, tensor::getMixedSizes(b, loc, sinks),
                           b.getF32Type(), 0.0);
  auto dims = [&](ArrayRef<unsigned> d) { return dimsMap(ctx, 3, d); };
  // Packed sequences: the rows past the last one are in no sequence (and
  // their LSE and D are not read).
  Value rowsEnd;
  if (Value offsets = op.getCuSeqlensQ()) {
    Value last =
        arith::SubIOp::create(b, loc, tensor::DimOp::create(b, loc, offsets, 0),
                              arith::ConstantIndexOp::create(b, loc, 1));
    rowsEnd = clampedIndexValue(
        b, loc, tensor::ExtractOp::create(b, loc, offsets, last),
        tensor::DimOp::create(b, loc, op.getLse(), 2));
  }
  Value sum = buildGeneric(
      b, loc, {sinks, op.getLse(), rowDot}, init,
      {dims({1}), dims({0, 1, 2}), dims({0, 1, 2}), dims({1})},
      {kRed, kPar, kRed},
      [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
        Value zero = arith::ConstantOp::create(nb, nl, nb.getF32FloatAttr(0));
        Value none = arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OEQ,
                                           a[1], negInfF32(nb, nl));
        Value prob = math::ExpOp::create(
            nb, nl,
            arith::SubFOp::create(nb, nl, extendToF32(nb, nl, a[0]), a[1]));
        Value term = arith::SelectOp::create(
            nb, nl, none, zero, arith::MulFOp::create(nb, nl, prob, a[2]));
        if (rowsEnd)
          term = arith::SelectOp::create(
              nb, nl,
              arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::slt,
                                    linalg::IndexOp::create(nb, nl, 2),
                                    rowsEnd),
              term, zero);
        return arith::SubFOp::create(nb, nl, a[3], term);
      });
  Type elementType = type.getElementType();
  Value result = sum;
  if (!elementType.isF32())
    result = buildGeneric(
        b, loc, sum,
        tensor::EmptyOp::create(b, loc, tensor::getMixedSizes(b, loc, sinks),
                                elementType),
        {dimsMap(ctx, 1, {0}), dimsMap(ctx, 1, {0})}, {kPar},
        [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
          return arith::TruncFOp::create(nb, nl, elementType, a[0]);
        });
  Type resultType = op.getGradSinks().getType();
  if (result.getType() != resultType)
    result = tensor::CastOp::create(b, loc, resultType, result);
  return result;
}
