//===- AttentionTarget.cpp - attention tile-size rules ----------*- C++ -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#include "flash/Target/AttentionTarget.h"

#include "llvm/ADT/StringSwitch.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::flash;

std::optional<AttentionTarget> flash::lookupAttentionTarget(StringRef name) {
  // sm_80: 164 KiB of shared memory per SM usable by one CTA; sm_90a: 227 KiB.
  // Both give a thread at most 255 registers. The CPU target is one core with
  // a 32 KiB L1 data cache.
  return llvm::StringSwitch<std::optional<AttentionTarget>>(name)
      .Case("cpu", AttentionTarget{"cpu", 32 * 1024, 0, 1, false, 1})
      .Case("sm_80", AttentionTarget{"sm_80", 164 * 1024, 255, 128, true, 2})
      .Case("sm_90a", AttentionTarget{"sm_90a", 227 * 1024, 255, 128, true, 2})
      .Default(std::nullopt);
}

AttentionTarget flash::getAttentionTarget(TileTarget target) {
  std::optional<AttentionTarget> t =
      lookupAttentionTarget(stringifyTileTarget(target));
  assert(t && "the target enum and the target table disagree");
  return *t;
}

int64_t flash::maxSharedMemoryPerBlock(Chip chip) {
  switch (chip) {
  case Chip::Sm80:
    return 163 * 1024;
  case Chip::Sm90a:
  case Chip::Any:
    return 227 * 1024;
  }
  llvm_unreachable("unknown chip");
}

int64_t flash::attentionTileBytes(const AttentionTarget &target,
                                  int64_t blockRows, int64_t blockCols,
                                  int64_t headDim, int64_t valueDim,
                                  int64_t elementBytes) {
  int64_t bytes =
      blockRows * headDim * elementBytes +
      target.kvStages * blockCols * (headDim + valueDim) * elementBytes;
  // Without tensor cores the f32 score tile and accumulator are in memory too.
  if (!target.tensorCores)
    bytes += 4 * blockRows * (blockCols + valueDim);
  return bytes;
}

AttentionTiles flash::paperTiles(const AttentionTarget &target, int64_t headDim,
                                 int64_t valueDim, int64_t elementBytes) {
  int64_t sramElements = target.sramBytes / elementBytes;
  int64_t bc =
      std::max<int64_t>(1, (sramElements + 4 * headDim - 1) / (4 * headDim));
  int64_t br = std::min(bc, headDim);
  return {br, bc, "paper",
          attentionTileBytes(target, br, bc, headDim, valueDim, elementBytes)};
}

std::optional<AttentionTiles>
flash::tensorCoreTiles(const AttentionTarget &target, int64_t headDim,
                       int64_t valueDim, int64_t elementBytes) {
  if (!target.tensorCores)
    return std::nullopt;
  // Addresses, loop state and the softmax statistics take about 48 registers.
  int64_t budget = target.registersPerThread - 48;
  for (int64_t br : {128, 64, 32, 16}) {
    for (int64_t bc : {128, 64, 32, 16}) {
      int64_t regs = (br * valueDim + br * bc) / target.threadsPerBlock;
      int64_t bytes =
          attentionTileBytes(target, br, bc, headDim, valueDim, elementBytes);
      if (regs <= budget && bytes <= target.sramBytes)
        return AttentionTiles{br, bc, "tensor-core", bytes};
    }
  }
  return std::nullopt;
}

AttentionTiles flash::chooseAttentionTiles(const AttentionTarget &target,
                                           int64_t headDim, int64_t valueDim,
                                           int64_t elementBytes) {
  if (std::optional<AttentionTiles> tiles =
          tensorCoreTiles(target, headDim, valueDim, elementBytes))
    return *tiles;
  return paperTiles(target, headDim, valueDim, elementBytes);
}

BackwardTiles flash::chooseBackwardTiles(const AttentionTarget &target,
                                         int64_t headDim, int64_t valueDim,
                                         int64_t elementBytes,
                                         const BackwardTiles &requested) {
  AttentionTiles tiles =
      chooseAttentionTiles(target, headDim, valueDim, elementBytes);
  // Tensor cores: the dQ nest holds dQ [Br, D] and two Br x Bc score tiles
  // in registers, the dK/dV nest dK and dV [rows, D], so its score tiles
  // get 32 query columns above D = 64. Rows are 16 per warp.
  int64_t d = std::max(headDim, valueDim);
  BackwardTiles chosen;
  if (target.tensorCores) {
    tiles.blockRows = tiles.blockCols = d <= 128 ? 64 : 32;
    chosen.kvRows = tiles.blockCols;
    chosen.kvCols = d <= 64 ? 64 : 32;
  }
  chosen.blockRows =
      requested.blockRows > 0 ? requested.blockRows : tiles.blockRows;
  chosen.blockCols =
      requested.blockCols > 0 ? requested.blockCols : tiles.blockCols;
  if (requested.blockRows > 0 || chosen.kvCols == 0)
    chosen.kvCols = chosen.blockRows;
  if (requested.blockCols > 0 || chosen.kvRows == 0)
    chosen.kvRows = chosen.blockCols;
  if (requested.kvRows > 0)
    chosen.kvRows = requested.kvRows;
  if (requested.kvCols > 0)
    chosen.kvCols = requested.kvCols;
  return chosen;
}

HbmTraffic flash::estimateHbmTraffic(int64_t querySeq, int64_t keySeq,
                                     int64_t headDim, int64_t valueDim,
                                     int64_t blockRows, int64_t elementBytes) {
  double m = querySeq, n = keySeq, d = headDim, dv = valueDim, e = elementBytes;
  double io = (m * d + n * d + n * dv + m * dv) * e;
  double naive = io + 4.0 * m * n * e;
  double queryBlocks = (querySeq + blockRows - 1) / blockRows;
  double tiled = (m * d + m * dv) * e + queryBlocks * n * (d + dv) * e;
  return {naive, tiled};
}
