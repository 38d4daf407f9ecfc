//===- Passes.h - flash conversion passes -----------------------*- C++ -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_CONVERSION_PASSES_H
#define FLASH_CONVERSION_PASSES_H

#include "flash/Dialect/FlashGPU/IR/FlashGPUDialect.h"
#include "flash/Target/TargetOptions.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/Pass.h"

#include <optional>

namespace mlir::flash {

#define GEN_PASS_DECL
#include "flash/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "flash/Conversion/Passes.h.inc"

// The contract between the GPU mapping's steps (--flash-map-tiles-to-gpu is
// the pipeline of them): what each step writes into the IR for the later ones
// to read.

/// --flash-gpu-map-to-blocks{persistent}: on the scf.for over a launch's
/// tiles (an outer loop, not a key-block loop), and on the launch, which
/// is correct with any number of CTAs.
constexpr llvm::StringLiteral kTileLoopAttr = "flash.tile_loop";
constexpr llvm::StringLiteral kPersistentAttr = "flash.persistent";
/// On the buffers of a persistent launch's tiles, allocated before its tile
/// loop: each tile writes them before it reads them.
constexpr llvm::StringLiteral kTileBufferAttr = "flash.tile_buffer";

/// Where --flash-gpu-assign-tile-storage put a tile buffer (a memref.alloc
/// in a launch): `flash.tile_storage` on the allocation. A tile without it
/// is a shared-memory tile.
enum class TileStorage {
  /// Warp registers (--flash-gpu-warp-register-tiles rewrites its ops).
  Registers,
  /// Shared memory in the 128-byte swizzled layout that warpgroup MMA
  /// descriptors name (unpadded, 1024-byte aligned).
  Swizzled,
  /// A contraction's C that its MMA keeps in accumulator registers and
  /// never stores (--flash-gpu-lower-tile-mma erases it).
  Accumulators,
  /// A contraction's C whose results go only to a `flash.atomic_add`,
  /// staged in shared memory (two copies): the MMA lowering stores its
  /// accumulators there and adds them to the destination with TMA tensor
  /// reductions.
  ReductionStage,
};
constexpr llvm::StringLiteral kTileStorageAttr = "flash.tile_storage";
std::optional<TileStorage> getTileStorage(Operation *alloc);
void setTileStorage(Operation *alloc, TileStorage storage);

/// On a launch with register tiles: the rows the block owns (an i64
/// attribute, those of the nest's accumulators).
constexpr llvm::StringLiteral kRegisterRowsAttr = "flash.register_rows";
/// On a launch whose contractions run on Hopper's warpgroup MMA.
constexpr llvm::StringLiteral kWgmmaAttr = "flash.wgmma";
/// On a launch whose register tiles were rewritten into per-lane code.
constexpr llvm::StringLiteral kWarpRegisterTilesAttr =
    "flash.warp_register_tiles";

/// The dynamic shared memory of a launch (--flash-gpu-carve-shared-memory,
/// grown by --flash-gpu-async-tile-loads), in bytes (an i64 attribute on
/// the gpu.launch).
constexpr llvm::StringLiteral kSharedMemoryBytesAttr =
    "flash.shared_memory_bytes";

/// On the function argument that --flash-gpu-async-tile-loads{tma-loads}
/// appends: the CUtensorMaps it holds (128 bytes each, in order), each a
/// dictionary of `tensor` (the argument the map is over), `row_dim` (its
/// dimension the box's rows run along), `box_rows`, `box_cols` and
/// `swizzle_bytes`. The caller encodes each map over the whole tensor, its
/// dimensions innermost first.
constexpr llvm::StringLiteral kTensorMapsAttr = "flash.tensor_maps";

/// Whether --flash-gpu-carve-shared-memory failed on `op` (or left in it) a
/// launch whose tiles need more shared memory than a CTA may use on `chip`:
/// the error a search over tile sizes answers with smaller tiles.
bool exceedsSharedMemory(Operation *op, Chip chip);

} // namespace mlir::flash

#endif // FLASH_CONVERSION_PASSES_H
