//===- AttentionTarget.h - what a target offers attention -------*- C++ -*-===//
//
// Part of the flash-mlir project.
//
// The few numbers of a target that decide attention tile sizes, the rules
// that turn them into Br x Bc, and the HBM-traffic model of the
// FlashAttention paper used to report what a choice buys.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_TARGET_ATTENTIONTARGET_H
#define FLASH_TARGET_ATTENTIONTARGET_H

#include "flash/Target/TargetOptions.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace mlir::flash {

struct AttentionTarget {
  StringRef name;
  /// On-chip memory one unit of work may use: shared memory per CTA on GPUs,
  /// the L1 data cache per core on CPUs.
  int64_t sramBytes;
  /// 32-bit registers per thread (0 on CPUs).
  int64_t registersPerThread;
  /// Threads cooperating on one query block.
  int64_t threadsPerBlock;
  /// Whether scores and accumulators live in registers fed by tensor cores.
  bool tensorCores;
  /// K/V tile buffers kept in flight (multi-stage prefetch).
  int64_t kvStages;
};

/// `cpu`, `sm_80` or `sm_90a`; nullopt for anything else.
std::optional<AttentionTarget> lookupAttentionTarget(StringRef name);

/// The description of a target the option parser accepted.
AttentionTarget getAttentionTarget(TileTarget target);

/// Dynamic shared memory one CTA of a kernel launched on `chip` may use
/// (after opting in): what the kernel driver checks each kernel against.
/// Slightly less than the tile rule's sramBytes on sm_80 (163 of 164 KiB),
/// which the driver's ptxas-checked search absorbs.
int64_t maxSharedMemoryPerBlock(Chip chip);

struct AttentionTiles {
  int64_t blockRows = 0; // Br
  int64_t blockCols = 0; // Bc
  std::string rule;      // which rule chose them
  int64_t sramBytes = 0; // on-chip bytes the tiles occupy
};

/// The FlashAttention paper's rule: Bc = ceil(M / 4d), Br = min(Bc, d), with
/// M the on-chip memory in elements.
AttentionTiles paperTiles(const AttentionTarget &target, int64_t headDim,
                          int64_t valueDim, int64_t elementBytes);

/// The rule for tensor-core targets: the Br x Dv accumulator and the Br x Bc
/// score tile must fit the register budget of the CTA's threads, and Q plus
/// `kvStages` K/V tiles the shared memory; the largest Br wins (K/V are
/// re-read once per query block), then the largest Bc.
std::optional<AttentionTiles> tensorCoreTiles(const AttentionTarget &target,
                                              int64_t headDim, int64_t valueDim,
                                              int64_t elementBytes);

/// The target's default choice: tensorCoreTiles where it applies, else
/// paperTiles.
AttentionTiles chooseAttentionTiles(const AttentionTarget &target,
                                    int64_t headDim, int64_t valueDim,
                                    int64_t elementBytes);

/// The backward's tiles: the dQ nest's Br x Bc, and the dK/dV nest's key
/// rows per CTA (`kvRows`) and query columns per step (`kvCols`). Each
/// request left 0 takes the target's choice: on tensor-core targets 64 x 64
/// (32 x 32 above D = 128), dK/dV CTAs of Bc keys and steps of 64 query
/// columns (32 above D = 64); a requested Br or Bc also sets the dK/dV
/// columns or rows that follow it unless those are requested too.
struct BackwardTiles {
  int64_t blockRows = 0, blockCols = 0, kvRows = 0, kvCols = 0;
};
BackwardTiles chooseBackwardTiles(const AttentionTarget &target,
                                  int64_t headDim, int64_t valueDim,
                                  int64_t elementBytes,
                                  const BackwardTiles &requested = {});

/// On-chip bytes of a Br x Bc choice on `target`.
int64_t attentionTileBytes(const AttentionTarget &target, int64_t blockRows,
                           int64_t blockCols, int64_t headDim, int64_t valueDim,
                           int64_t elementBytes);

/// HBM bytes moved for one (batch, head) of dense attention: the naive
/// algorithm (Q, K, V, O plus S and P written and read back, Theta(Nd + N^2))
/// and the tiled one (Q and O once, K and V once per query block,
/// Theta(N^2 d^2 / M)).
struct HbmTraffic {
  double naiveBytes;
  double tiledBytes;
};
HbmTraffic estimateHbmTraffic(int64_t querySeq, int64_t keySeq, int64_t headDim,
                              int64_t valueDim, int64_t blockRows,
                              int64_t elementBytes);

} // namespace mlir::flash

#endif // FLASH_TARGET_ATTENTIONTARGET_H
