//===- KernelLaunch.h - launches of a lowered kernel module -----*- C++ -*-===//
//
// Part of the flash-mlir project.
//
// The one path the forward and the backward kernels take after the kernel
// pipeline (and the tensor-core choice both build with): the kernel
// pipeline itself, what each gpu.launch_func needs from the runtime
// (parameters, grid, block, shared memory, mapping), the PTX of its kernel
// module after the binary pipeline, and the PTX and cubin files.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_LIB_DRIVER_KERNELLAUNCH_H
#define FLASH_LIB_DRIVER_KERNELLAUNCH_H

#include "KernelABI.h"
#include "KernelOutput.h"

#include "flash/Driver/Driver.h"
#include "flash/Pipelines/Pipelines.h"

namespace mlir::flash::driver {

/// The mapping's tensor-core choice: Hopper's warpgroup MMA on sm_90a.
inline TensorCores tensorCoreChoice(const KernelCompileOptions &options) {
  return resolveTensorCores(options.tensorCores, options.chip);
}

/// The copies of each key-block tile: as asked; else two for sm_90a's
/// forward (measured 4-10% faster at D = 64 and 2-4% causal, level at
/// D = 128) and FlashAttention-2's one elsewhere: two copies push the
/// backward's dK/dV kernel into spills and narrower steps, and an sm_80
/// kernel's second copies (104 KiB at D = 128) would leave an A100 one CTA
/// per SM and not launch at all on sm_86/sm_89 (99 KiB per block).
/// docs/GPU-NOTES.md, 41.
/// (The backward tries two stages first where TMA loads them: see
/// compileBackwardPair.)
inline int64_t loadStagesChoice(const KernelCompileOptions &options,
                                bool backward) {
  if (options.loadStages)
    return options.loadStages;
  return !backward && options.chip == Chip::Sm90a ? 2 : 1;
}

/// The atomic backward's dQ accumulator order (--flash-tile-attention's
/// dq-fragment-major): as asked; else fragment-major, in the groups of the
/// chip's reductions (sm_80: scalars, sm_90a: pairs). In rows, a warp's
/// reduction touched 8 lines (8 half-used sectors on sm_80); fragment-major
/// one line and 4 full sectors (sm_80, FlashAttention-2's order) or two
/// lines (sm_90a): the dK/dV launch 1.26-1.37x (sm_80) and 1.10-1.14x
/// (sm_90a) faster, docs/GPU-NOTES.md 91.
/// Head dims that are not a multiple of 64 keep rows, and so do staged
/// reductions (their bulk copies write rows).
inline int64_t dqFragmentMajorChoice(const KernelCompileOptions &options,
                                     int64_t headDim) {
  if (options.dqFragmentMajor >= 0)
    return options.dqFragmentMajor;
  if (headDim % 64 != 0 || options.stagedReductions)
    return 0;
  return options.chip == Chip::Sm80 ? 1 : 2;
}

/// One gpu.launch_func of a kernel module.
struct Launch {
  std::string entry, kernelModule;
  /// Its parameters in kernel-operand order (describeParam).
  llvm::json::Array params;
  /// Grid (describeGridDim, when asked for) and block sizes.
  llvm::json::Array grid, block;
  int64_t sharedMemory = 0;
  /// Scores and accumulator in warp registers (FlashAttention-2 mapping).
  bool registerTiles = false;
  /// Contractions on Hopper's warpgroup MMA.
  bool wgmma = false;
  /// mma.sync fragments read by ldmatrix from swizzled shared tiles (each
  /// lane's address one base per column chunk step: registers).
  bool swizzledLdmatrix = false;
  /// Waits for the grid before it at its start (--flash-gpu-dependent-
  /// launches): the host may launch it with programmatic stream
  /// serialization.
  bool waitsForPrevious = false;
  /// Filled by lowerToPtx.
  std::string ptx;
};

/// What the kernel pipeline made of a kernel module.
enum class KernelBuild {
  Built,
  /// The tiles need more shared memory than a CTA may use on the chip.
  TooLarge,
  Failed,
};

/// Runs the kernel pipeline (--flash-gpu-pipeline up to outlined kernels)
/// on `module`. With `tryingTiles`, tiles that need more shared memory than
/// the chip has are TooLarge without a diagnostic, so that a tile search
/// goes on to smaller ones; every other failure is reported as the pipeline
/// reported it.
KernelBuild runKernelPipeline(ModuleOp module,
                              const FlashGpuPipelineOptions &options,
                              bool tryingTiles);

/// The launches of `module` after the kernel pipeline, in program order;
/// `params` describes the kernel function's arguments. With `describeGrid`
/// also grid and block sizes; with `abi` each parameter says how it is
/// passed. Errors are reported on `op`.
FailureOr<SmallVector<Launch>> describeLaunches(Operation *op, ModuleOp module,
                                                ArrayRef<Param> params,
                                                bool describeGrid, bool abi);

/// Whether any tile of `module` is loaded with cp.async or TMA, so that
/// every tensor's rows must be contiguous and 16-byte aligned.
bool requiresAlignedRows(ModuleOp module);

/// Runs the binary pipeline on `module` and sets each launch's PTX. With
/// `sharedPointers32` the PTX addresses shared memory with 32-bit registers
/// (LLVM's `nvptx-short-ptr`, set for the run).
LogicalResult lowerToPtx(Operation *op, ModuleOp module,
                         const FlashGpuPipelineOptions &options,
                         MutableArrayRef<Launch> launches,
                         bool sharedPointers32 = false);

/// DIR/<base><extension>.
std::string kernelPath(StringRef outputDir, StringRef base,
                       StringRef extension);

/// Writes DIR/<base>.ptx and assembles DIR/<base>.cubin when ptxas runs; a
/// ptxas that runs and rejects the PTX, or exits 0 without writing a
/// non-empty cubin, is an error on `op`.
FailureOr<PtxasReport> writeKernel(Operation *op, StringRef ptx,
                                   StringRef outputDir, StringRef base,
                                   const KernelCompileOptions &compile);

} // namespace mlir::flash::driver

#endif // FLASH_LIB_DRIVER_KERNELLAUNCH_H
