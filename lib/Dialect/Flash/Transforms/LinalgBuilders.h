//===- LinalgBuilders.h - small linalg-on-tensors builders -------*- C++
//-*-===//
//
// Part of the flash-mlir project.
//
// Shared by the passes that spell attention out as linalg on tensors.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_LIB_TRANSFORMS_LINALGBUILDERS_H
#define FLASH_LIB_TRANSFORMS_LINALGBUILDERS_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"

#include <algorithm>

#include <limits>

namespace mlir::flash::detail {

using BodyFn = function_ref<Value(OpBuilder &, Location, ValueRange)>;
using utils::IteratorType;
constexpr IteratorType kPar = IteratorType::parallel;
constexpr IteratorType kRed = IteratorType::reduction;

/// A linalg.generic with one result whose body yields `body(args)`.
inline Value buildGeneric(OpBuilder &b, Location loc, ValueRange ins,
                          Value init, ArrayRef<AffineMap> maps,
                          ArrayRef<utils::IteratorType> iters, BodyFn body) {
  auto op = linalg::GenericOp::create(
      b, loc, TypeRange{init.getType()}, ins, ValueRange{init}, maps, iters,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        linalg::YieldOp::create(nb, nloc, body(nb, nloc, args));
      });
  return op.getResult(0);
}

/// A tensor of `sizes` filled with `value`.
inline Value buildFilled(OpBuilder &b, Location loc,
                         ArrayRef<OpFoldResult> sizes, FloatType type,
                         double value) {
  Value empty = tensor::EmptyOp::create(b, loc, sizes, type);
  Value cst = arith::ConstantOp::create(b, loc, b.getFloatAttr(type, value));
  return linalg::FillOp::create(b, loc, ValueRange{cst}, ValueRange{empty})
      .getResult(0);
}

/// `v` converted to f32 (no-op when it already is).
inline Value extendToF32(OpBuilder &b, Location loc, Value v) {
  if (v.getType().isF32())
    return v;
  return arith::ExtFOp::create(b, loc, b.getF32Type(), v);
}

inline Value negInfF32(OpBuilder &b, Location loc) {
  return arith::ConstantOp::create(
      b, loc, b.getF32FloatAttr(-std::numeric_limits<float>::infinity()));
}

/// An i32 or i64 element (a key count of key_lengths, an offset of
/// cu_seqlens) as an index clamped to [0, bound].
inline Value clampedIndexValue(OpBuilder &b, Location loc, Value value,
                               Value bound) {
  Value n =
      arith::IndexCastOp::create(b, loc, b.getIndexType(), value).getResult();
  n = arith::MaxSIOp::create(b, loc, n,
                             arith::ConstantIndexOp::create(b, loc, 0));
  return arith::MinSIOp::create(b, loc, n, bound);
}

/// `then` built in the then-block of an scf.if on `cond` that yields
/// `otherwise` else: for values that may only be computed where `cond`
/// holds (a score_mod that reads tensors at the pair's indices).
inline Value buildIfElse(OpBuilder &b, Location loc, Value cond,
                         function_ref<Value(OpBuilder &, Location)> then,
                         Value otherwise) {
  auto op = scf::IfOp::create(b, loc, TypeRange{otherwise.getType()}, cond,
                              /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(op.thenBlock());
  scf::YieldOp::create(b, loc, then(b, loc));
  b.setInsertionPointToStart(op.elseBlock());
  scf::YieldOp::create(b, loc, otherwise);
  return op.getResult(0);
}

/// The sliding window `window` clamped to M + N, as the reference clamps it:
/// a wider window hides nothing more, and clamped, the window edge
/// `i + (N - M) - window` cannot overflow (window = INT64_MAX did). M + N of
/// two sizes may exceed INT64_MAX but not UINT64_MAX, hence the unsigned min.
inline Value buildClampedWindow(OpBuilder &b, Location loc, int64_t window,
                                Value querySeq, Value keySeq) {
  std::optional<int64_t> m = getConstantIntValue(querySeq);
  std::optional<int64_t> n = getConstantIntValue(keySeq);
  if (m && n)
    return arith::ConstantIndexOp::create(
        b, loc,
        static_cast<int64_t>(std::min<uint64_t>(
            window, static_cast<uint64_t>(*m) + static_cast<uint64_t>(*n))));
  Value sum = arith::AddIOp::create(b, loc, querySeq, keySeq);
  return arith::MinUIOp::create(
      b, loc, arith::ConstantIndexOp::create(b, loc, window), sum);
}

inline AffineMap dimsMap(MLIRContext *ctx, unsigned numDims,
                         ArrayRef<unsigned> dims) {
  SmallVector<AffineExpr> exprs;
  for (unsigned d : dims)
    exprs.push_back(getAffineDimExpr(d, ctx));
  return AffineMap::get(numDims, 0, exprs, ctx);
}

} // namespace mlir::flash::detail

#endif // FLASH_LIB_TRANSFORMS_LINALGBUILDERS_H
