//===- AsyncTileLoads.h - tile loads with cp.async --------------*- C++ -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_LIB_CONVERSION_FLASHTOGPU_ASYNCTILELOADS_H
#define FLASH_LIB_CONVERSION_FLASHTOGPU_ASYNCTILELOADS_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace mlir::flash {

/// Turns the zero-padded loads of global tiles into shared memory (a
/// `linalg.map` zero fill, then a `memref.copy` of the valid rows) into
/// 16-byte `nvgpu.device_async_copy` chunks spread over the block's `threads`
/// threads, zero-filling the rows past the end, one async group per tile.
/// Each tile is waited for (and the block synchronised) just before the first
/// op that reads it, so that later loads stay in flight meanwhile; in loops,
/// FlashAttention-2's schedule (a tile read early loaded one iteration
/// ahead). The kernel then requires contiguous, 16-byte aligned rows in
/// every loaded tensor, checked at entry (trap otherwise).
///
/// With `stages` = 2 the tiles loaded in a key-block loop instead get two
/// copies each, used in turn, all issued one iteration ahead, where the
/// copies fit `sharedLimit` bytes (the launch's shared-memory size grows).
///
/// With `tensorMapLoads` (and two stages) a loop whose tiles all come from
/// kernel arguments as whole 64-column panels of 16-bit elements loads them
/// with TMA instead: one thread issues each tile's boxes against an mbarrier
/// per tile and copy, every thread waits for the mbarrier's phase, and the
/// function gets a last argument holding the tensor maps
/// (`flash.tensor_maps`). The loop must run once per launch, or once per
/// iteration of the scf.for whose body holds it with the same bounds each
/// time (the waits' phases are then known). The other loads stay on
/// cp.async.
///
/// With `warpSpecialize` as well, where the launch's key-block loops run one
/// after another over consecutive key blocks with the same TMA tiles, a
/// producer warpgroup (threads `threads` ... `threads` + 127, an `scf.if`
/// tagged `flash.warp_role = "producer"` near the body's start) issues every
/// iteration's boxes into a ring of two copies guarded by `full` and `empty`
/// mbarriers, and the loops (the consumers' code, `threads` threads) only
/// wait and release; the launch is tagged `flash.warp_specialized` for
/// `--flash-gpu-split-warp-roles` (`splitWarpRoles`), which completes it.
///
/// With `rowVectors` padded loads of f32 row vectors (a step's LSE and D
/// rows) are cp.async copies too, one 4-byte element per thread (their
/// tensors need a unit inner stride, not 16-byte rows), or with tensor maps
/// one unswizzled TMA box each (their rows then 16-byte aligned).
///
/// With `raggedTails` a key-block tile whose valid rows end before its
/// tensor's (a KV cache's length, a packed sequence's end) loads by TMA too,
/// where its readers are the forward's products: the box brings whatever
/// the tensor holds past the valid rows, S = Q Kᵀ selects those keys' scores
/// away, and where O += P V reads a ragged block (`flash.ragged_keys`) the
/// consumers zero V's rows past the valid ones once the box is in (a fence
/// towards the async proxy, then a barrier of the consumers); where a
/// backward product reads it, in every block. Not in a
/// persistent launch (its tiles' key loops differ per sequence; unbuilt),
/// and untried with `--flash-gpu-async-mma`'s pipelined key loops.
///
/// With `perIterationRows` the cp.async copies of tiles inside a loop take
/// the thread index through `flashgpu.per_iteration`: each thread's rows
/// and columns, and the addresses built from them, are recomputed in each
/// iteration instead of held across the loop (one 64-bit register per row).
LogicalResult
lowerAsyncTileLoads(gpu::LaunchOp launch, int64_t threads, int64_t stages,
                    int64_t sharedLimit, bool tensorMapLoads = false,
                    bool warpSpecialize = false, bool rowVectors = false,
                    bool raggedTails = false, bool perIterationRows = false);

} // namespace mlir::flash

#endif // FLASH_LIB_CONVERSION_FLASHTOGPU_ASYNCTILELOADS_H
