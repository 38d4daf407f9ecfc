//===- SizeChecks.h - sizes the lowerings can address -----------*- C++ -*-===//
//
// Part of the flash-mlir project.
//
// Shared by --flash-tile-attention and --flash-decompose-attention.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_LIB_TRANSFORMS_SIZECHECKS_H
#define FLASH_LIB_TRANSFORMS_SIZECHECKS_H

#include "flash/Dialect/Flash/IR/FlashOps.h"

#include "llvm/Support/MathExtras.h"

#include <optional>

namespace mlir::flash::detail {

/// Bytes of an f32 buffer of `shape` (the lowerings compute in f32), its
/// dynamic sizes and zeros counted as 1: a buffer with a size-0 dimension
/// still has the other dimensions' products as strides. None when they do
/// not fit in int64.
inline std::optional<int64_t> f32BufferBytes(ArrayRef<int64_t> shape) {
  int64_t bytes = 4;
  for (int64_t size : shape)
    if (!ShapedType::isDynamic(size) && size > 1 &&
        llvm::MulOverflow(bytes, size, bytes))
      return std::nullopt;
  return bytes;
}

/// Fails with an error on `op` when an f32 buffer of `shape` cannot be
/// addressed with 64-bit byte offsets; the error names `what` (with its
/// `type`, when given) and the largest size (by `dimNames`, when given).
inline LogicalResult checkAddressable(Operation *op, StringRef what, Type type,
                                      ArrayRef<int64_t> shape,
                                      ArrayRef<StringRef> dimNames = {}) {
  if (f32BufferBytes(shape))
    return success();
  auto largest = llvm::max_element(shape);
  int64_t dimIdx = std::distance(shape.begin(), largest);
  InFlightDiagnostic diag = op->emitOpError("cannot be lowered: ") << what;
  if (type)
    diag << " " << type;
  diag << " would take 2^63 bytes or more in f32, past 64-bit offsets (";
  if (dimNames.empty())
    diag << "dimension " << dimIdx;
  else
    diag << dimNames[dimIdx];
  return diag << " = " << *largest << ")";
}

/// Every tensor of the op, and with `scores` the [B, Hq, M, N] scores (which
/// the decomposition builds), must be addressable: the lowered index and
/// stride arithmetic is 64-bit, and its products wrapped for sizes like 2^62.
template <typename OpTy>
LogicalResult checkAttentionSizes(OpTy op, bool scores) {
  std::pair<StringRef, Value> tensors[] = {
      {"the query", op.getQuery()}, {"the key", op.getKey()},
      {"the value", op.getValue()}, {"the bias", op.getBias()},
      {"the mask", op.getMask()},   {"the output", op.getOutput()}};
  for (auto [name, value] : tensors) {
    if (!value)
      continue;
    auto type = cast<RankedTensorType>(value.getType());
    if (failed(checkAddressable(op, name, type, type.getShape())))
      return failure();
  }
  if (!scores)
    return success();
  // Rank-2 and rank-3 ops have B = 1 (and H = 1).
  auto dimFromEnd = [](Value v, int64_t fromEnd) -> int64_t {
    ArrayRef<int64_t> shape = cast<RankedTensorType>(v.getType()).getShape();
    int64_t i = static_cast<int64_t>(shape.size()) - 1 - fromEnd;
    return i < 0 ? 1 : shape[i];
  };
  Value q = op.getQuery(), k = op.getKey();
  SmallVector<int64_t> shape = {dimFromEnd(q, 3), dimFromEnd(q, 2),
                                dimFromEnd(q, 1), dimFromEnd(k, 1)};
  return checkAddressable(op, "the scores [B, Hq, M, N]", Type(), shape,
                          {"B", "Hq", "M", "N"});
}

} // namespace mlir::flash::detail

#endif // FLASH_LIB_TRANSFORMS_SIZECHECKS_H
