//===- GpuPipeline.cpp - --flash-gpu-pipeline -------------------*- C++ -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#include "flash/Conversion/Passes.h"
#include "flash/Dialect/Flash/Transforms/Passes.h"
#include "flash/Pipelines/Pipelines.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/Pipelines/Passes.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/FileSystem.h"

#include <cstdlib>

using namespace mlir;

static constexpr const char *kDefaultCuda = "/usr/local/cuda";

void flash::buildFlashGpuPipeline(OpPassManager &pm,
                                  const FlashGpuPipelineOptions &options) {
  buildFlashGpuKernelPipeline(pm, options);
  buildFlashGpuBinaryPipeline(pm, options);
}

void flash::buildFlashGpuKernelPipeline(
    OpPassManager &pm, const FlashGpuPipelineOptions &options) {
  flash::FlashTileAttentionPassOptions tiling;
  tiling.target = tileTargetOf(options.chip);
  tiling.blockRows = options.blockRows;
  tiling.blockCols = options.blockCols;
  tiling.deterministic = options.deterministic;
  tiling.causalRowsFromEnd = options.causalRowsFromEnd;
  tiling.overlapProducts = options.overlapProducts;
  tiling.dqFragmentMajor = options.dqFragmentMajor;
  tiling.maskFreeBlocks = options.maskFreeBlocks;
  tiling.maskUnderBranch = options.maskUnderBranch;
  tiling.kvBlockRows = options.kvBlockRows;
  tiling.kvBlockCols = options.kvBlockCols;
  pm.addPass(flash::createFlashTileAttentionPass(tiling));
  if (options.pipelineKeyLoops)
    pm.addPass(flash::createFlashPipelineKeyLoopsPass());
  pm.addPass(flash::createFlashWorkspaceToArgumentsPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());

  // Outputs are written in place into the kernel's arguments; every layout
  // at the boundary is strided, so [B, H, S, D] and [B, S, H, D] both work.
  pm.addPass(bufferization::createEmptyTensorEliminationPass());
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::FullyDynamicLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  pm.addPass(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(bufferization::createBufferLoopHoistingPass());
  pm.addPass(createCSEPass());

  // CTAs and threads, then the kernels through NVVM.
  flash::FlashMapTilesToGpuOptions mapping;
  mapping.threads = options.threads;
  mapping.chip = options.chip;
  mapping.tensorCores = options.tensorCores;
  mapping.registerTiles = options.registerTiles;
  mapping.asyncCopies = options.asyncCopies;
  mapping.loadStages = options.loadStages;
  mapping.tmaLoads = options.tmaLoads;
  mapping.warpSpecialize = options.warpSpecialize;
  mapping.persistent = options.persistent;
  mapping.lazyRescale = options.lazyRescale;
  mapping.raggedKeys = options.raggedKeys;
  mapping.wideStores = options.wideStores;
  mapping.stagedReductions = options.stagedReductions;
  mapping.perIterationLanes = options.perIterationLanes;
  mapping.swizzleLdmatrix = options.swizzleLdmatrix;
  mapping.exitEmptyTiles = options.exitEmptyTiles;
  mapping.tmaRowVectors = options.tmaRowVectors;
  mapping.raggedTma = options.raggedTma;
  buildFlashMapTilesToGpuPipeline(pm.nest<func::FuncOp>(), mapping);
  flash::FlashGpuSplitWarpRolesPassOptions roles;
  roles.pingPong = options.pingPong;
  pm.addNestedPass<func::FuncOp>(
      flash::createFlashGpuSplitWarpRolesPass(roles));
  if (options.pipelineKeyLoops || options.asyncMma || options.overlapProducts)
    pm.addNestedPass<func::FuncOp>(flash::createFlashGpuAsyncMmaPass());
  flash::FlashGpuFastExp2PassOptions exp2;
  exp2.emulateEvery = options.emulatedExp2Every;
  pm.addNestedPass<func::FuncOp>(flash::createFlashGpuFastExp2Pass(exp2));
  if (options.chip == Chip::Sm90a)
    pm.addNestedPass<func::FuncOp>(
        flash::createFlashGpuDependentLaunchesPass());
  flash::ConvertFlashGPUToLLVMPassOptions toLLVM;
  toLLVM.vectorReductions = options.chip == Chip::Sm90a;
  pm.addNestedPass<func::FuncOp>(
      flash::createConvertFlashGPUToLLVMPass(toLLVM));
  pm.addPass(createGpuKernelOutliningPass());
  pm.addPass(flash::createFlashGpuLaunchBoundsPass());
}

void flash::buildFlashMapTilesToGpuPipeline(
    OpPassManager &pm, const FlashMapTilesToGpuOptions &options) {
  pm.addPass(flash::createFlashGpuMergeSplitsInLastCtaPass());
  flash::FlashGpuMapToBlocksPassOptions blocks;
  blocks.threads = options.threads;
  blocks.persistent = options.persistent;
  blocks.exitEmptyTiles = options.exitEmptyTiles;
  pm.addPass(flash::createFlashGpuMapToBlocksPass(blocks));
  flash::FlashGpuAssignTileStoragePassOptions storage;
  storage.chip = options.chip;
  storage.tensorCores = options.tensorCores;
  storage.registerTiles = options.registerTiles;
  storage.asyncCopies = options.asyncCopies;
  storage.stagedReductions = options.stagedReductions;
  storage.swizzleLdmatrix = options.swizzleLdmatrix;
  pm.addPass(flash::createFlashGpuAssignTileStoragePass(storage));
  flash::FlashGpuCarveSharedMemoryPassOptions carve;
  carve.chip = options.chip;
  pm.addPass(flash::createFlashGpuCarveSharedMemoryPass(carve));
  flash::FlashGpuWarpRegisterTilesPassOptions registers;
  // Kernels for aligned rows (cp.async's precondition) store in pairs.
  registers.pairStores = options.asyncCopies;
  registers.wideStores = options.wideStores;
  registers.lazyRescale = options.lazyRescale;
  registers.raggedKeys = options.raggedKeys;
  registers.perIterationLanes = options.perIterationLanes;
  pm.addPass(flash::createFlashGpuWarpRegisterTilesPass(registers));
  if (options.asyncCopies) {
    flash::FlashGpuAsyncTileLoadsPassOptions loads;
    loads.chip = options.chip;
    loads.loadStages = options.loadStages;
    loads.tmaLoads = options.tmaLoads;
    loads.warpSpecialize = options.warpSpecialize;
    loads.tmaRowVectors = options.tmaRowVectors;
    loads.raggedTma = options.raggedTma;
    loads.perIterationLanes = options.perIterationLanes;
    pm.addPass(flash::createFlashGpuAsyncTileLoadsPass(loads));
  }
  flash::FlashGpuLowerTileMmaPassOptions mma;
  mma.chip = options.chip;
  mma.tensorCores = options.tensorCores;
  mma.perIterationLanes = options.perIterationLanes;
  pm.addPass(flash::createFlashGpuLowerTileMmaPass(mma));
  pm.addPass(flash::createFlashGpuDistributeToThreadsPass());
}

void flash::buildFlashGpuBinaryPipeline(
    OpPassManager &pm, const FlashGpuPipelineOptions &options) {
  // gpu-module-to-binary links libdevice from the CUDA toolkit it finds
  // through CUDA_ROOT / CUDA_HOME / CUDA_PATH; default to the usual place so
  // that the result does not depend on the caller's environment.
  if (!std::getenv("CUDA_ROOT") && !std::getenv("CUDA_HOME") &&
      !std::getenv("CUDA_PATH") && llvm::sys::fs::is_directory(kDefaultCuda))
    ::setenv("CUDA_HOME", kDefaultCuda, /*overwrite=*/0);
  gpu::GPUToNVVMPipelineOptions nvvm;
  nvvm.cubinChip = stringifyChip(options.chip).str();
  // PTX 8.0 is the first to know sm_90a, 8.1 the first with vector `red`
  // (the atomic backward's dQ sums); ptxas 13.0 accepts both. sm_80 code
  // stays at 8.0 for the drivers that JIT it elsewhere.
  nvvm.cubinFeatures = options.chip == Chip::Sm90a ? "+ptx81" : "+ptx80";
  nvvm.cubinFormat = stringifyBinaryFormat(options.format).str();
  nvvm.optLevel = 3;
  gpu::buildLowerToNVVMPassPipeline(pm, nvvm);
}
