//===- ForwardKernels.cpp - flash.attention -> kernels ----------*- C++ -*-===//
//
// Part of the flash-mlir project.
//
// One forward op: its kernel module through --flash-gpu-pipeline with each
// candidate tile configuration in turn, the first that fits the chip's
// shared memory and that ptxas assembles without spilling written out.
//
//===----------------------------------------------------------------------===//

#include "flash/Driver/Driver.h"

#include "KernelABI.h"
#include "KernelOutput.h"
#include "TileSearch.h"

#include "flash/Pipelines/Pipelines.h"
#include "flash/Target/AttentionTarget.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::driver;
using llvm::SmallString;
namespace json = llvm::json;
namespace sys = llvm::sys;

namespace {
struct Config {
  int64_t rows, cols, threads;
  /// Worth it only when the contractions take wgmma.
  bool wgmmaOnly = false;
};

struct Kernel {
  std::string ptx, entry;
  json::Array params;
  int64_t sharedMemory = 0;
  /// Scores and accumulator in warp registers (FlashAttention-2 mapping).
  bool registerTiles = false;
  /// Contractions on Hopper's warpgroup MMA.
  bool wgmma = false;
  /// Tiles loaded with 16-byte cp.async: every tensor's rows must be
  /// contiguous and 16-byte aligned.
  bool requiresAlignedRows = false;
};

/// Builds the kernel of `op` with `config` and lowers it to PTX.
FailureOr<Kernel> build(AttentionOp op, StringRef name, const Config &config,
                        bool asyncCopies, const KernelCompileOptions &compile) {
  MLIRContext *ctx = op.getContext();
  SmallVector<Param> params;
  OwningOpRef<ModuleOp> module = buildKernelModule(op, name, params);
  FlashGpuPipelineOptions options;
  options.chip = compile.chip;
  options.format = BinaryFormat::Isa;
  options.blockRows = config.rows;
  options.blockCols = config.cols;
  options.threads = config.threads;
  options.tensorCores = tensorCoreChoice(compile);
  options.asyncCopies = asyncCopies;
  PassManager kernels(ctx);
  buildFlashGpuKernelPipeline(kernels, options);
  if (failed(kernels.run(*module)))
    return op.emitError("flash-compile: building the kernel failed");

  // Which argument each kernel parameter is, and the launch's constants.
  gpu::LaunchFuncOp launch;
  module->walk([&](gpu::LaunchFuncOp l) { launch = l; });
  if (!launch)
    return op.emitError("flash-compile: no kernel was produced");
  Kernel kernel;
  for (Value v : launch.getKernelOperands()) {
    auto argument = dyn_cast<BlockArgument>(v);
    if (!argument)
      return op.emitError("flash-compile: a kernel parameter is not a tensor");
    json::Object param = describeParam(params[argument.getArgNumber()]);
    param["abi"] = "memref: allocated ptr, aligned ptr, i64 offset, i64 "
                   "sizes[rank], i64 strides[rank] (strides in elements)";
    kernel.params.push_back(std::move(param));
  }
  IntegerAttr smem;
  if (Value size = launch.getDynamicSharedMemorySize())
    matchPattern(size, m_Constant(&smem));
  kernel.sharedMemory = smem ? smem.getInt() : 0;
  module->walk([&](gpu::ShuffleOp) { kernel.registerTiles = true; });
  module->walk([&](LLVM::InlineAsmOp a) {
    kernel.wgmma |= a.getAsmString().contains("wgmma.mma_async");
  });
  module->walk(
      [&](nvgpu::DeviceAsyncCopyOp) { kernel.requiresAlignedRows = true; });
  kernel.entry = launch.getKernelName().str();
  std::string kernelModule = launch.getKernelModuleName().str();

  PassManager binary(ctx);
  buildFlashGpuBinaryPipeline(binary, options);
  if (failed(binary.run(*module)))
    return op.emitError("flash-compile: lowering the kernel to PTX failed");
  module->walk([&](gpu::BinaryOp bin) {
    if (bin.getSymName() == kernelModule)
      kernel.ptx = cast<gpu::ObjectAttr>(bin.getObjects()[0])
                       .getObject()
                       .getValue()
                       .str();
  });
  if (kernel.ptx.empty())
    return op.emitError("flash-compile: no PTX was produced");
  return kernel;
}

/// Compiles `op` into DIR/<name>.{ptx,cubin,json}. When the kernel needs
/// aligned rows, its manifest names `general` (if set) as the kernel to use
/// for rows that are not 16-byte aligned.
LogicalResult compileKernel(AttentionOp op, StringRef name, StringRef outputDir,
                            bool asyncCopies, StringRef general,
                            bool &requiresAlignedRows,
                            const KernelCompileOptions &compile) {
  // Forced tiles, or the first of these that fits the chip's shared memory
  // without spilling (measured, docs/GPU-NOTES.md): 32 query rows per warp
  // (each K/V fragment feeds two mma rows), then 16, then smaller tiles;
  // with wgmma, 128 x 48 (the training forward: LSE spills at 128 x 64) and
  // 128 x 128 on two warpgroups before 128 x 32.
  bool wgmma = tensorCoreChoice(compile) == TensorCores::Wgmma && asyncCopies;
  SmallVector<Config> configs;
  if (compile.blockRows || compile.blockCols || compile.threadsPerBlock)
    configs.push_back(
        {compile.blockRows ? compile.blockRows : 32,
         compile.blockCols ? compile.blockCols : 32,
         compile.threadsPerBlock ? compile.threadsPerBlock : 128});
  else if (wgmma)
    configs = {{128, 64, 128}, {128, 48, 128, true}, {128, 128, 256, true},
               {128, 32, 128}, {128, 64, 256},       {128, 32, 256},
               {64, 64, 128},  {64, 32, 128},        {32, 32, 128},
               {16, 16, 128}};
  else
    configs = {{128, 64, 128}, {128, 32, 128}, {128, 64, 256}, {128, 32, 256},
               {64, 64, 128},  {64, 32, 128},  {32, 32, 128},  {16, 16, 128}};
  SmallString<128> ptxPath(outputDir), cubinPath(outputDir),
      jsonPath(outputDir);
  sys::path::append(ptxPath, name + ".ptx");
  sys::path::append(cubinPath, name + ".cubin");
  sys::path::append(jsonPath, name + ".json");
  for (size_t i = 0; i < configs.size(); ++i) {
    Config config = configs[i];
    bool last = i + 1 == configs.size();
    FailureOr<Kernel> kernel = build(op, name, config, asyncCopies, compile);
    if (failed(kernel))
      return failure();
    if (config.wgmmaOnly && !kernel->wgmma && !last)
      continue;
    if (kernel->sharedMemory > maxSharedMemoryPerBlock(compile.chip)) {
      if (last)
        return op.emitError("flash-compile: the tiles need ")
               << kernel->sharedMemory << " B of shared memory, more than "
               << stringifyChip(compile.chip) << " has";
      continue;
    }
    // When only one CTA fits on an SM, give it 16 warps instead of 8
    // (measured: D = 128 at 128 x 32 went from 10.4 to 13.5 TFLOP/s).
    if (!compile.threadsPerBlock && !kernel->registerTiles &&
        config.threads == 256 &&
        2 * kernel->sharedMemory > maxSharedMemoryPerBlock(compile.chip)) {
      Config wider = {config.rows, config.cols, 512};
      FailureOr<Kernel> widened = build(op, name, wider, asyncCopies, compile);
      if (failed(widened))
        return failure();
      config = wider;
      kernel = std::move(widened);
    }
    if (failed(writeFile(ptxPath, kernel->ptx)))
      return failure();
    PtxasReport ptxasReport = assemble(
        compile.ptxas, stringifyChip(compile.chip), ptxPath, cubinPath);
    if (sys::fs::can_execute(compile.ptxas) && !ptxasReport.ran) {
      llvm::errs() << ptxasReport.log;
      return op.emitError("flash-compile: ptxas rejected ") << ptxPath;
    }
    if (ptxasReport.spillBytes > 0 && !last)
      continue;

    json::Object manifest{
        {"kernel", name},
        {"entry", kernel->entry},
        {"chip", stringifyChip(compile.chip)},
        {"ptx", (name + ".ptx").str()},
        {"cubin", ptxasReport.ran ? json::Value((name + ".cubin").str())
                                  : json::Value(nullptr)},
        {"params", std::move(kernel->params)},
        // grid = (ceil(M / Br), Hq, B) from the [B, Hq, M, D] query.
        {"grid", json::Array{json::Object{{"tensor", "q"},
                                          {"dim", 2},
                                          {"ceil_div", config.rows}},
                             json::Object{{"tensor", "q"}, {"dim", 1}},
                             json::Object{{"tensor", "q"}, {"dim", 0}}}},
        {"block", json::Array{config.threads, 1, 1}},
        {"dynamic_shared_memory_bytes", kernel->sharedMemory},
        {"block_rows", config.rows},
        {"block_cols", config.cols},
        {"has_lse", static_cast<bool>(op.getLse())},
        {"mapping", kernel->registerTiles ? "warp-registers" : "shared-tiles"},
        {"mma", kernel->wgmma ? "wgmma" : "mma.sync"},
        {"registers", ptxasReport.registers},
        {"spill_bytes", ptxasReport.spillBytes},
    };
    describeAttention(manifest, op);
    requiresAlignedRows = kernel->requiresAlignedRows;
    if (failed(writeManifest(jsonPath, std::move(manifest), general,
                             requiresAlignedRows)))
      return failure();
    if (compile.log)
      *compile.log << name << ": " << ptxPath << ", tiles " << config.rows
                   << "x" << config.cols << ", " << config.threads
                   << " threads, registers " << ptxasReport.registers
                   << ", spill bytes " << ptxasReport.spillBytes
                   << ", shared memory " << kernel->sharedMemory << " B"
                   << (kernel->registerTiles ? ", warp registers" : "")
                   << (kernel->wgmma ? ", wgmma" : "") << "\n";
    return success();
  }
  return failure();
}

} // namespace

/// The kernel for `op`; when it needs aligned rows (cp.async), also the
/// general kernel (element copies) that the runtime uses otherwise. Two
/// kernels rather than a branch inside one: ptxas allocates registers for the
/// whole kernel, and the element-copy path alone made 128 x 64 tiles spill.
LogicalResult
flash::compileAttentionKernel(AttentionOp op, StringRef name,
                              StringRef outputDir,
                              const KernelCompileOptions &compile) {
  std::string general = (name + "_general").str();
  bool requiresAlignedRows = false;
  if (failed(compileKernel(op, name, outputDir, /*asyncCopies=*/true, general,
                           requiresAlignedRows, compile)))
    return failure();
  // Without a cp.async load the kernel is general already (rare: rows that
  // are not a multiple of 16 bytes), and its manifest names no other.
  if (!requiresAlignedRows)
    return success();
  return compileKernel(op, general, outputDir, /*asyncCopies=*/false, "",
                       requiresAlignedRows, compile);
}
