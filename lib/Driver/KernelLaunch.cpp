//===- KernelLaunch.cpp - launches of a lowered kernel module ---*- C++ -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#include "KernelLaunch.h"

#include "flash/Conversion/Passes.h"
#include "flash/Dialect/Flash/IR/TileRoles.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <optional>

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::driver;

/// The parameter that holds a kernel's tensor maps (flash.tensor_maps): a
/// byte buffer of one 128-byte, 64-byte aligned CUtensorMap per entry, each
/// over the whole tensor named, dimensions innermost first.
static llvm::json::Object describeTensorMaps(ArrayAttr maps,
                                             ArrayRef<Param> params) {
  namespace json = llvm::json;
  json::Array entries;
  for (auto map : maps.getAsRange<DictionaryAttr>()) {
    auto get = [&](StringRef key) {
      return cast<IntegerAttr>(map.get(key)).getInt();
    };
    entries.push_back(json::Object{{"tensor", params[get("tensor")].name},
                                   {"row_dim", get("row_dim")},
                                   {"box_rows", get("box_rows")},
                                   {"box_cols", get("box_cols")},
                                   {"swizzle_bytes", get("swizzle_bytes")}});
  }
  return json::Object{
      {"name", "tensor_maps"},
      {"kind", "tensor_maps"},
      {"rank", 1},
      {"maps", std::move(entries)},
      {"abi", "memref of i8 (allocated ptr, aligned ptr, i64 offset, i64 size, "
              "i64 stride) over 128 bytes per map, 64-byte aligned"}};
}
namespace json = llvm::json;
namespace sys = llvm::sys;

KernelBuild driver::runKernelPipeline(ModuleOp module,
                                      const FlashGpuPipelineOptions &options,
                                      bool tryingTiles) {
  MLIRContext *ctx = module.getContext();
  PassManager kernels(ctx);
  buildFlashGpuKernelPipeline(kernels, options);
  // Held back until it is known whether the failure is the one a tile
  // search expects.
  SmallVector<Diagnostic> diagnostics;
  LogicalResult result = failure();
  {
    ScopedDiagnosticHandler hold(ctx, [&](Diagnostic &d) {
      diagnostics.push_back(std::move(d));
      return success();
    });
    result = kernels.run(module);
  }
  if (failed(result) && tryingTiles &&
      exceedsSharedMemory(module, options.chip))
    return KernelBuild::TooLarge;
  for (Diagnostic &d : diagnostics)
    ctx->getDiagEngine().emit(std::move(d));
  return succeeded(result) ? KernelBuild::Built : KernelBuild::Failed;
}

FailureOr<SmallVector<Launch>>
driver::describeLaunches(Operation *op, ModuleOp module, ArrayRef<Param> params,
                         bool describeGrid, bool abi) {
  SmallVector<Launch> launches;
  std::string problem;
  module->walk([&](gpu::LaunchFuncOp launch) {
    Launch info;
    info.entry = launch.getKernelName().str();
    info.kernelModule = launch.getKernelModuleName().str();
    for (Value v : launch.getKernelOperands()) {
      auto argument = dyn_cast<BlockArgument>(v);
      if (!argument) {
        problem = "a kernel parameter is not a tensor";
        return WalkResult::interrupt();
      }
      unsigned n = argument.getArgNumber();
      auto func = dyn_cast<func::FuncOp>(argument.getOwner()->getParentOp());
      auto maps = func ? func.getArgAttrOfType<ArrayAttr>(n, kTensorMapsAttr)
                       : ArrayAttr();
      if (maps) {
        info.params.push_back(describeTensorMaps(maps, params));
        continue;
      }
      if (n >= params.size()) {
        problem = "a kernel parameter is not a tensor";
        return WalkResult::interrupt();
      }
      json::Object param = describeParam(params[n]);
      if (abi)
        param["abi"] = "memref: allocated ptr, aligned ptr, i64 offset, i64 "
                       "sizes[rank], i64 strides[rank] (strides in elements)";
      info.params.push_back(std::move(param));
    }
    if (describeGrid) {
      gpu::KernelDim3 grid = launch.getGridSizeOperandValues();
      for (Value g : {grid.x, grid.y, grid.z}) {
        std::optional<json::Object> d = describeGridDim(g, params);
        if (!d) {
          problem = "a grid size is not a tensor size over a constant";
          return WalkResult::interrupt();
        }
        info.grid.push_back(std::move(*d));
      }
    }
    // The block as launched (a warp-specialised kernel's includes its
    // producer warpgroup).
    gpu::KernelDim3 block = launch.getBlockSizeOperandValues();
    for (Value t : {block.x, block.y, block.z}) {
      IntegerAttr c;
      if (!matchPattern(t, m_Constant(&c))) {
        problem = "a block size is not a constant";
        return WalkResult::interrupt();
      }
      info.block.push_back(c.getInt());
    }
    IntegerAttr smem;
    if (Value size = launch.getDynamicSharedMemorySize())
      matchPattern(size, m_Constant(&smem));
    info.sharedMemory = smem ? smem.getInt() : 0;
    if (auto kernel = SymbolTable::lookupNearestSymbolFrom<gpu::GPUFuncOp>(
            launch, launch.getKernel()))
      kernel.walk([&](NVVM::GriddepcontrolOp op) {
        if (op.getKind() == NVVM::GridDepActionKind::wait)
          info.waitsForPrevious = true;
      });
    launches.push_back(std::move(info));
    return WalkResult::advance();
  });
  if (!problem.empty())
    return op->emitError("flash-compile: ") << problem;
  if (launches.empty())
    return op->emitError("flash-compile: no kernel was produced");
  module->walk([&](gpu::GPUModuleOp m) {
    for (Launch &l : launches)
      if (l.kernelModule == m.getName())
        m.walk([&](Operation *nested) {
          l.registerTiles |= isa<gpu::ShuffleOp>(nested) &&
                             nested->hasAttr(kWarpRegisterTilesAttr);
          if (auto load = dyn_cast<nvgpu::LdMatrixOp>(nested))
            l.swizzledLdmatrix |= load->hasAttr(flash::kSwizzledAttrName);
          if (auto a = dyn_cast<LLVM::InlineAsmOp>(nested))
            l.wgmma |= a.getAsmString().contains("wgmma.mma_async");
        });
  });
  return launches;
}

bool driver::requiresAlignedRows(ModuleOp module) {
  return module
      ->walk([](Operation *op) {
        return isa<nvgpu::DeviceAsyncCopyOp, nvgpu::TmaAsyncLoadOp>(op)
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      })
      .wasInterrupted();
}

namespace {
/// Sets LLVM's NVPTX option `nvptx-short-ptr` (32-bit pointers to the
/// shared, const and local spaces: the data layout of the NVPTX target
/// machine that gpu-module-to-binary creates) while alive. It is a process
/// option, not one a target attribute carries, hence the scope. `option`
/// stays null where this LLVM does not register it.
class ShortPointersScope {
public:
  ShortPointersScope() {
    auto &registered = llvm::cl::getRegisteredOptions();
    auto it = registered.find("nvptx-short-ptr");
    if (it == registered.end())
      return;
    option = static_cast<llvm::cl::opt<bool> *>(it->second);
    saved = *option;
    option->setValue(true);
  }
  ~ShortPointersScope() {
    if (option)
      option->setValue(saved);
  }
  llvm::cl::opt<bool> *option = nullptr;

private:
  bool saved = false;
};
} // namespace

LogicalResult driver::lowerToPtx(Operation *op, ModuleOp module,
                                 const FlashGpuPipelineOptions &options,
                                 MutableArrayRef<Launch> launches,
                                 bool sharedPointers32) {
  PassManager binary(module.getContext());
  buildFlashGpuBinaryPipeline(binary, options);
  std::optional<ShortPointersScope> shortPointers;
  if (sharedPointers32 && !shortPointers.emplace().option)
    return op->emitError("flash-compile: this LLVM has no NVPTX option "
                         "nvptx-short-ptr (32-bit shared-memory addresses)");
  if (failed(binary.run(module)))
    return op->emitError("flash-compile: lowering the kernels to PTX failed");
  for (Launch &l : launches) {
    module->walk([&](gpu::BinaryOp bin) {
      if (bin.getSymName() == l.kernelModule)
        l.ptx = cast<gpu::ObjectAttr>(bin.getObjects()[0])
                    .getObject()
                    .getValue()
                    .str();
    });
    if (l.ptx.empty())
      return op->emitError("flash-compile: no PTX for ") << l.entry;
  }
  return success();
}

std::string driver::kernelPath(StringRef outputDir, StringRef base,
                               StringRef extension) {
  llvm::SmallString<128> path(outputDir);
  sys::path::append(path, base + extension);
  return path.str().str();
}

FailureOr<PtxasReport>
driver::writeKernel(Operation *op, StringRef ptx, StringRef outputDir,
                    StringRef base, const KernelCompileOptions &compile) {
  std::string ptxPath = kernelPath(outputDir, base, ".ptx");
  std::string cubinPath = kernelPath(outputDir, base, ".cubin");
  if (failed(writeFile(ptxPath, ptx)))
    return failure();
  PtxasReport report =
      assemble(compile.ptxas, stringifyChip(compile.chip), ptxPath, cubinPath);
  if (!sys::fs::can_execute(compile.ptxas))
    return report;
  if (!report.ran) {
    llvm::errs() << report.log;
    return op->emitError("flash-compile: ptxas rejected ") << ptxPath;
  }
  // A manifest must not name a cubin that is not there.
  if (!report.wroteCubin)
    return op->emitError("flash-compile: ")
           << compile.ptxas << " exited 0 but wrote no cubin at " << cubinPath;
  return report;
}
