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

namespace mlir::flash {

#define GEN_PASS_DECL
#include "flash/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "flash/Conversion/Passes.h.inc"

/// --flash-map-tiles-to-gpu{persistent}: on the scf.for over a launch's
/// tiles (an outer loop, not a key-block loop), and on the launch, which
/// is correct with any number of CTAs.
constexpr llvm::StringLiteral kTileLoopAttr = "flash.tile_loop";
constexpr llvm::StringLiteral kPersistentAttr = "flash.persistent";
/// On the buffers of a persistent launch's tiles, allocated before its tile
/// loop: each tile writes them before it reads them.
constexpr llvm::StringLiteral kTileBufferAttr = "flash.tile_buffer";

/// The dynamic shared memory of a launch of --flash-map-tiles-to-gpu, in
/// bytes (an i64 attribute on the gpu.launch).
constexpr llvm::StringLiteral kSharedMemoryBytesAttr =
    "flash.shared_memory_bytes";

/// On the function argument that --flash-map-tiles-to-gpu{tma-loads} appends:
/// the CUtensorMaps it holds (128 bytes each, in order), each a dictionary of
/// `tensor` (the argument the map is over), `row_dim` (its dimension the
/// box's rows run along), `box_rows`, `box_cols` and `swizzle_bytes`. The caller encodes each map over the whole tensor, its
/// dimensions innermost first.
constexpr llvm::StringLiteral kTensorMapsAttr = "flash.tensor_maps";

/// Whether --flash-map-tiles-to-gpu failed on `op` (or left in it) a launch
/// whose tiles need more shared memory than a CTA may use on `chip`: the
/// error a search over tile sizes answers with smaller tiles.
bool exceedsSharedMemory(Operation *op, Chip chip);

} // namespace mlir::flash

#endif // FLASH_CONVERSION_PASSES_H
