//===- TileBuilders.h - tiles of attention operands --------------*- C++ -*-===//
//
// Part of the flash-mlir project.
//
// Shared by the forward and backward tilings of --flash-tile-attention.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_LIB_TRANSFORMS_TILEBUILDERS_H
#define FLASH_LIB_TRANSFORMS_TILEBUILDERS_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Utils/Utils.h"
#include "mlir/IR/Builders.h"

namespace mlir::flash::detail {

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

/// Where a Br x Bc score tile sits in [B, Hq, M, N].
struct ScoreTile {
  Value batch, head, rowStart, rows, keyStart, cols;
  int64_t br, bc;
};

/// The slice of a bias or mask operand (right-aligned to [B, Hq, M, N], size-1
/// dimensions broadcast) seen by one score tile, and its map from the tile's
/// (i, j).
inline std::pair<Value, AffineMap>
buildScoreOperandTile(OpBuilder &b, Location loc, Value operand,
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
      sizes.push_back(logical < 2 ? OpFoldResult(b.getIndexAttr(1))
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

} // namespace mlir::flash::detail

#endif // FLASH_LIB_TRANSFORMS_TILEBUILDERS_H
