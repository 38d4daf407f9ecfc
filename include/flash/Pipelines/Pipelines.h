//===- Pipelines.h - flash pass pipelines -----------------------*- C++ -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_PIPELINES_PIPELINES_H
#define FLASH_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir::flash {

struct FlashCpuPipelineOptions
    : public PassPipelineOptions<FlashCpuPipelineOptions> {};

/// Lowers a module holding func, linalg (linalg.softmax included), tensor,
/// arith, math, memref, bufferization and flash ops to the LLVM dialect, ready
/// for mlir-runner with the MLIR runner-utils libraries.
void buildFlashCpuPipeline(OpPassManager &pm,
                           const FlashCpuPipelineOptions &options);

/// Registers every flash pipeline with the global pass registry.
void registerFlashPipelines();

} // namespace mlir::flash

#endif // FLASH_PIPELINES_PIPELINES_H
