//===- WarpSpecialization.h - producer and consumer warps -------*- C++ -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_LIB_CONVERSION_FLASHTOGPU_WARPSPECIALIZATION_H
#define FLASH_LIB_CONVERSION_FLASHTOGPU_WARPSPECIALIZATION_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace mlir::flash {

/// On a launch: the number of consumer threads of a warp-specialised kernel,
/// whose producer warpgroup `lowerAsyncTileLoads` built.
inline constexpr llvm::StringLiteral kWarpSpecializedAttr =
    "flash.warp_specialized";
/// On the `scf.if` that holds a warp role's code: "producer" or "consumer".
inline constexpr llvm::StringLiteral kWarpRoleAttr = "flash.warp_role";

/// Registers per thread the producer warpgroup keeps (`setmaxnreg.dec`);
/// a persistent one computes each tile's coordinates too (in 32 bits: see
/// `flash-gpu-map-to-blocks`).
inline constexpr int64_t kProducerRegisters = 24;
inline constexpr int64_t kPersistentProducerRegisters = 56;
/// A producer that reads memory for each key block's coordinates (a paged
/// cache's block table), or walks more than two key loops (a sliding
/// window's: its first blocks, the unmasked ones, the diagonal's), whose
/// coordinates outlive 24 registers: at 24 it spills (a window over a
/// ragged cache at 32 too).
inline constexpr int64_t kLoadingProducerRegisters = 40;

/// Completes a launch tagged `flash.warp_specialized` (C consumer threads):
/// everything after the producer's `scf.if` becomes the consumers' `scf.if`
/// (threads 0 ... C - 1), their block barriers become named barrier 1 over
/// C threads (the producer never reaches them), the producer gives registers
/// back (`setmaxnreg.dec` to kProducerRegisters) and the consumers take
/// what that frees (`setmaxnreg.inc`, up to 240 with 1 CTA per SM; the
/// shares add up to at most what the CTA got at launch), and the
/// block grows by the producer's 128 threads.
///
/// With `pingPong` and two or three consumer warpgroups, their S = Q Kᵀ MMAs
/// take turns in order (FlashAttention-3's ping-pong): warpgroup g waits on
/// named barrier 2 + g before each and arrives on the next one's after it,
/// so that a warpgroup's softmax runs while another's MMAs do; the last
/// warpgroup lets warpgroup 0 start, and warpgroup 0 takes the last arrival
/// at its end.
LogicalResult splitWarpRoles(gpu::LaunchOp launch, bool pingPong = false);

} // namespace mlir::flash

#endif // FLASH_LIB_CONVERSION_FLASHTOGPU_WARPSPECIALIZATION_H
