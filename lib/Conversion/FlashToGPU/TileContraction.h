//===- TileContraction.h - tile matmuls for the GPU mapping -----*- C++ -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_LIB_CONVERSION_FLASHTOGPU_TILECONTRACTION_H
#define FLASH_LIB_CONVERSION_FLASHTOGPU_TILECONTRACTION_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include <optional>

namespace mlir::flash {

/// `C += A * B` of the tiled attention (Q Kᵀ and P V) on buffers.
struct TileContraction {
  Value a, b, c;
  /// B is stored [N, K] and read transposed (Kᵀ), else [K, N] (V).
  bool transposeB;
  /// A is stored [K, M] and read transposed (the nondeterministic
  /// backward's dS = (dSᵀ)ᵀ), else [M, K].
  bool transposeA = false;

  bool hasIdentityLayouts() const {
    return llvm::all_of(ValueRange{a, b, c}, [](Value v) {
      return cast<MemRefType>(v.getType()).getLayout().isIdentity();
    });
  }
};

/// Matches a 2-D multiply-add generic with f16/bf16 operands, an f32
/// accumulator and 16-multiple static shapes on buffers with contiguous rows
/// (identity layouts, or the padded rows of shared-memory tiles).
std::optional<TileContraction> matchTileContraction(linalg::GenericOp op);

/// The workgroup-space view behind a shared-memory tile's generic cast, or
/// null when `v` is not such a tile.
Value getWorkgroupView(Value v);

/// A padded tile load of the tiled form: `linalg.map` fills the tile with
/// zeros, then `memref.copy` writes the valid rows from global memory.
struct PaddedTileLoad {
  linalg::MapOp zeroFill;
  memref::CopyOp copy;
  memref::SubViewOp validRows;
  Value tile, shared;
};

/// `copy` as the padded load of a 2-D shared tile whose rows are 16-byte
/// multiples (with `rowVectors`, of an f32 row vector too).
std::optional<PaddedTileLoad> matchPaddedTileLoad(memref::CopyOp copy,
                                                  bool rowVectors);

/// How many of the 2-D shared `tile`'s rows its padded load in `block`
/// writes (the rest are zero), or null when no such load writes it there.
Value paddedTileValidRows(Value tile, Block *block);

} // namespace mlir::flash

#endif // FLASH_LIB_CONVERSION_FLASHTOGPU_TILECONTRACTION_H
