//===- TensorMaps.h - a kernel's TMA tensor maps ----------------*- C++ -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_LIB_CONVERSION_FLASHTOGPU_TENSORMAPS_H
#define FLASH_LIB_CONVERSION_FLASHTOGPU_TENSORMAPS_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include <optional>

namespace mlir::flash {

/// The tensor maps a kernel's TMA copies use: one 128-byte CUtensorMap per
/// (tensor, box), in a buffer the runtime fills and passes as an argument
/// of the function (appended when the launch first needs one), which
/// `flash.tensor_maps` describes entry by entry (tensor argument, row
/// dimension, box rows and columns, swizzle).
/// Each launch of a function has a buffer of its own; a second instance over
/// the same launch (a later pass) appends to the maps the first one made.
class TensorMaps {
public:
  explicit TensorMaps(gpu::LaunchOp launch);

  /// The descriptor of the map of kernel argument `tensor` with boxes of
  /// `rows` rows along `rowDim` by one 128-byte swizzled panel of columns
  /// (64 of 16 bits, 32 of f32) -- for a `rowVector`, the `rows` elements
  /// of its innermost dimension, unswizzled --, as an
  /// `!nvgpu.tensormap.descriptor` at the start of the launch body.
  Value descriptor(BlockArgument tensor, int64_t rowDim, int64_t rows,
                   Type elementType, bool rowVector);

  /// The generic address of that map (what the NVVM dialect's TMA ops
  /// take), at the start of the launch body.
  Value address(BlockArgument tensor, int64_t rowDim, int64_t rows,
                Type elementType, bool rowVector);

  /// Columns of a box of `elementType` (one 128-byte panel).
  static int64_t panelColumns(Type elementType);

private:
  int64_t indexOf(BlockArgument tensor, int64_t rowDim, int64_t rows,
                  Type elementType, bool rowVector);
  Value buffer();
  void describe();

  struct Map {
    int64_t arg, rowDim, rows, cols;
    bool rowVector;
    bool operator==(const Map &other) const {
      return arg == other.arg && rowDim == other.rowDim && rows == other.rows &&
             cols == other.cols && rowVector == other.rowVector;
    }
  };
  gpu::LaunchOp launch;
  BlockArgument argument;
  SmallVector<Map> maps;
  /// Per map, its address and descriptor in this launch (null until asked
  /// for).
  SmallVector<Value> addresses, descriptors;
};

/// A slice that TMA boxes of whole rows can cover: a unit-stride subview of
/// kernel argument `tensor` (rank 2 to 5) over all `cols` columns of its
/// innermost dimension, a point in every other dimension but `rowDim`,
/// whose size there is `rows`; `offsets` per dimension.
struct TensorSlice {
  BlockArgument tensor;
  SmallVector<OpFoldResult> offsets;
  int64_t rowDim;
  Value rows;
};
std::optional<TensorSlice> matchTensorSlice(memref::SubViewOp sub,
                                            int64_t cols);

/// Whether `size` is `min(dim(arg, rowDim) - offset, rows)` for a kernel
/// argument `arg`: a tile's rows inside the tensor, so that a TMA box of
/// `rows` rows at `offset` covers exactly them (TMA reads zeros and writes
/// nothing past the tensor's end). `arg` may be another argument than
/// `tensor` of the same size along `rowDim` (the runtime's contract).
bool clipsAtTensorEnd(Value size, BlockArgument tensor, int64_t rowDim,
                      Value offset, int64_t rows);

} // namespace mlir::flash

#endif // FLASH_LIB_CONVERSION_FLASHTOGPU_TENSORMAPS_H
