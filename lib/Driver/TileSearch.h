//===- TileSearch.h - the driver's shared choices ---------------*- C++ -*-===//
//
// Part of the flash-mlir project.
//
// What the forward and backward kernel builders share: the tensor-core
// choice for the chip and the pipeline options a kernel is built with.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_LIB_DRIVER_TILESEARCH_H
#define FLASH_LIB_DRIVER_TILESEARCH_H

#include "flash/Driver/Driver.h"

namespace mlir::flash::driver {

/// The mapping's tensor-core choice: Hopper's warpgroup MMA on sm_90a.
inline TensorCores tensorCoreChoice(const KernelCompileOptions &options) {
  if (options.tensorCores == TensorCores::Auto && options.chip == Chip::Sm90a)
    return TensorCores::Wgmma;
  return options.tensorCores;
}

} // namespace mlir::flash::driver

#endif // FLASH_LIB_DRIVER_TILESEARCH_H
