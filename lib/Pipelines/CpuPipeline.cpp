//===- CpuPipeline.cpp - --flash-cpu-pipeline -------------------*- C++ -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#include "flash/Dialect/Flash/Transforms/Passes.h"
#include "flash/Pipelines/Pipelines.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void flash::buildFlashCpuPipeline(OpPassManager &pm,
                                  const FlashCpuPipelineOptions &options) {
  // Flash ops to loops and linalg on tensors.
  if (options.tile) {
    flash::FlashTileAttentionPassOptions tiling;
    tiling.target = options.target;
    tiling.blockRows = options.blockRows;
    tiling.blockCols = options.blockCols;
    tiling.deterministic = options.deterministic;
    tiling.causalRowsFromEnd = options.causalRowsFromEnd;
    tiling.overlapProducts = options.overlapProducts;
    tiling.dqFragmentMajor = options.dqFragmentMajor;
    tiling.maskFreeBlocks = options.maskFreeBlocks;
    tiling.maskUnderBranch = options.maskUnderBranch;
    pm.addPass(flash::createFlashTileAttentionPass(tiling));
  }
  pm.addPass(flash::createFlashDecomposeAttentionPass());
  pm.addPass(flash::createFlashDecomposeAggregatesPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());

  // Tensors to buffers, with deallocation.
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  // Iterations without rows skip their tiles, before the deallocations are
  // placed (they then free under the same guard).
  pm.addPass(flash::createFlashLowerSkipTilePass());
  // The parallel iterations run one after another here, but the adds stay
  // atomic: the loops are correct under any schedule.
  pm.addPass(flash::createFlashLowerAtomicAddPass());
  bufferization::buildBufferDeallocationPipeline(pm);
  pm.addPass(createConvertBufferizationToMemRefPass());
  pm.addPass(createForallToForLoopPass());

  // Loops, then LLVM. bf16 conversions are expanded to integer arithmetic so
  // that no soft-float runtime routine is needed.
  pm.addPass(createConvertLinalgToLoopsPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true;
  pm.addPass(arith::createArithExpandOpsPass(expand));
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
}

void flash::registerFlashPipelines() {
  PassPipelineRegistration<FlashCpuPipelineOptions>(
      "flash-cpu-pipeline",
      "Lower flash ops and the upstream tensor-level dialects to the LLVM "
      "dialect for execution on the CPU with mlir-runner",
      buildFlashCpuPipeline);
  PassPipelineRegistration<FlashMapTilesToGpuOptions>(
      "flash-map-tiles-to-gpu",
      "Map the bufferized tiled attention loop nest onto GPU blocks, warps "
      "and threads (the --flash-gpu-* mapping steps in order)",
      buildFlashMapTilesToGpuPipeline);
  PassPipelineRegistration<FlashGpuPipelineOptions>(
      "flash-gpu-pipeline",
      "Lower flash.attention to GPU kernels (gpu.module -> NVVM -> PTX or "
      "cubin in gpu.binary)",
      buildFlashGpuPipeline);
  PassPipelineRegistration<FlashTosaToAttentionOptions>(
      "flash-tosa-to-attention",
      "Lower TOSA to linalg and fuse the attention in it into flash.attention",
      buildFlashTosaToAttentionPipeline);
}
