//===- InitAllFlash.h - register flash dialects and passes ------*- C++ -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_INITALLFLASH_H
#define FLASH_INITALLFLASH_H

#include "flash/Conversion/Passes.h"
#include "flash/Dialect/Flash/IR/FlashDialect.h"
#include "flash/Dialect/Flash/Transforms/BufferizableOpInterfaceImpl.h"
#include "flash/Dialect/Flash/Transforms/Passes.h"
#include "flash/Dialect/FlashGPU/IR/FlashGPUDialect.h"
#include "flash/Pipelines/Pipelines.h"
#include "mlir/IR/DialectRegistry.h"

namespace mlir::flash {

inline void registerAllFlashDialects(DialectRegistry &registry) {
  registry.insert<FlashDialect, flashgpu::FlashGPUDialect>();
  registerBufferizableOpInterfaceExternalModels(registry);
}

inline void registerAllFlashPasses() {
  registerFlashPasses();
  registerFlashConversionPasses();
  registerFlashPipelines();
}

} // namespace mlir::flash

#endif // FLASH_INITALLFLASH_H
