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
    : public PassPipelineOptions<FlashCpuPipelineOptions> {
  PassOptions::Option<bool> tile{
      *this, "tile",
      llvm::cl::desc("Run flash.attention through --flash-tile-attention "
                     "(otherwise through the naive decomposition)"),
      llvm::cl::init(true)};
  PassOptions::Option<std::string> target{
      *this, "target", llvm::cl::desc("Tile-size target: cpu, sm_80, sm_90a"),
      llvm::cl::init("cpu")};
  PassOptions::Option<int64_t> blockRows{
      *this, "block-rows", llvm::cl::desc("Force Br (0: from the target)"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> blockCols{
      *this, "block-cols", llvm::cl::desc("Force Bc (0: from the target)"),
      llvm::cl::init(0)};
};

/// Lowers a module holding func, linalg (linalg.softmax included), tensor,
/// arith, math, memref, bufferization and flash ops to the LLVM dialect, ready
/// for mlir-runner with the MLIR runner-utils libraries. flash.attention is
/// tiled (online softmax) unless `tile=false`; flash.attention_backward and
/// untiled ops go through the naive decomposition.
void buildFlashCpuPipeline(OpPassManager &pm,
                           const FlashCpuPipelineOptions &options);

struct FlashGpuPipelineOptions
    : public PassPipelineOptions<FlashGpuPipelineOptions> {
  PassOptions::Option<std::string> chip{
      *this, "chip", llvm::cl::desc("GPU architecture: sm_80 or sm_90a"),
      llvm::cl::init("sm_90a")};
  PassOptions::Option<std::string> format{
      *this, "format",
      llvm::cl::desc("What gpu-module-to-binary produces: isa (PTX) or bin "
                     "(cubin, through ptxas)"),
      llvm::cl::init("isa")};
  PassOptions::Option<int64_t> blockRows{
      *this, "block-rows", llvm::cl::desc("Query rows per CTA (Br)"),
      llvm::cl::init(32)};
  PassOptions::Option<int64_t> blockCols{*this, "block-cols",
                                         llvm::cl::desc("Keys per step (Bc)"),
                                         llvm::cl::init(32)};
  PassOptions::Option<int64_t> threads{
      *this, "threads", llvm::cl::desc("Threads per CTA"), llvm::cl::init(128)};
  PassOptions::Option<std::string> tensorCores{
      *this, "tensor-cores",
      llvm::cl::desc("Tile contractions on tensor cores: auto (wgmma on "
                     "sm_90a), mma-sync, wgmma (sm_90a), wmma or none"),
      llvm::cl::init("auto")};
  PassOptions::Option<bool> registerTiles{
      *this, "register-tiles",
      llvm::cl::desc("Scores, probabilities and the accumulator in warp "
                     "registers (FlashAttention-2) where the tiles allow"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> asyncCopies{
      *this, "async-copies",
      llvm::cl::desc("Load tiles with 16-byte cp.async: every tensor's rows "
                     "must then be contiguous and 16-byte aligned (the "
                     "kernel traps otherwise)"),
      llvm::cl::init(true)};
};

/// Tiles flash.attention, bufferizes (outputs written in place into
/// writable arguments through bufferization.materialize_in_destination),
/// maps the loop nest onto CTAs and threads, outlines the kernels and lowers
/// them through NVVM to PTX or cubin (gpu.binary): the two halves below.
void buildFlashGpuPipeline(OpPassManager &pm,
                           const FlashGpuPipelineOptions &options);

/// Up to outlined gpu.func kernels launched by gpu.launch_func.
void buildFlashGpuKernelPipeline(OpPassManager &pm,
                                 const FlashGpuPipelineOptions &options);

/// gpu.module kernels through NVVM to gpu.binary.
void buildFlashGpuBinaryPipeline(OpPassManager &pm,
                                 const FlashGpuPipelineOptions &options);

/// Registers every flash pipeline with the global pass registry.
void registerFlashPipelines();

} // namespace mlir::flash

#endif // FLASH_PIPELINES_PIPELINES_H
