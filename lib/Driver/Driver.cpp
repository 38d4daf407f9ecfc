//===- Driver.cpp - attention in a module -> GPU kernels --------*- C++ -*-===//
//
// Part of the flash-mlir project.
//
// Fusion first (TOSA lowered to linalg; training graphs: the backward that
// reads the saved P becomes flash.attention_backward; then the remaining
// forward attention), then a kernel set per flash op, named after its
// function.
//
//===----------------------------------------------------------------------===//

#include "flash/Driver/Driver.h"

#include "flash/Dialect/Flash/Transforms/Passes.h"
#include "flash/Pipelines/Pipelines.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"

using namespace mlir;
using namespace mlir::flash;

std::string
flash::checkKernelCompileOptions(const KernelCompileOptions &options) {
  std::pair<const char *, int64_t> sizes[] = {
      {"block-rows", options.blockRows},
      {"block-cols", options.blockCols},
      {"kv-block-rows", options.kvBlockRows},
      {"kv-block-cols", options.kvBlockCols},
      {"threads-per-block", options.threadsPerBlock}};
  for (auto [name, size] : sizes)
    if (size < 0)
      return (llvm::Twine("--") + name +
              " must be positive (or 0 to choose), not " + llvm::Twine(size))
          .str();
  if (options.chip == Chip::Any)
    return "a kernel needs a chip (sm_80 or sm_90a)";
  if (options.tensorCores == TensorCores::Wgmma && options.chip != Chip::Sm90a)
    return "--tensor-cores=wgmma needs --chip=sm_90a";
  return "";
}

/// `name` with every character a symbol or file name cannot hold as '_'.
static std::string sanitize(std::string name) {
  for (char &c : name)
    if (!llvm::isAlnum(c) && c != '_')
      c = '_';
  return name;
}

LogicalResult
flash::compileAttentionKernels(ModuleOp module, StringRef outputDir,
                               const KernelCompileOptions &options) {
  PassManager fuse(module.getContext());
  // TOSA programs are lowered to linalg first, the form the fusion matches.
  bool tosa = false;
  module->walk([&](Operation *op) {
    tosa |= isa<tosa::TosaDialect>(op->getDialect());
    return tosa ? WalkResult::interrupt() : WalkResult::advance();
  });
  if (tosa)
    buildTosaToLinalgPipeline(fuse);
  fuse.addPass(createFlashFuseAttentionBackwardPass());
  fuse.addPass(createFlashFuseAttentionPass());
  if (failed(fuse.run(module)))
    return failure();
  SmallVector<AttentionOp> ops;
  module->walk([&](AttentionOp op) { ops.push_back(op); });
  SmallVector<AttentionBackwardOp> backwardOps;
  module->walk([&](AttentionBackwardOp op) { backwardOps.push_back(op); });
  if (ops.empty() && backwardOps.empty())
    return emitError(module.getLoc(), "flash-compile: no attention found");
  if (std::error_code ec = llvm::sys::fs::create_directories(outputDir))
    return emitError(module.getLoc(), "flash-compile: cannot create ")
           << outputDir << ": " << ec.message();
  // Kernels are named after their function, numbered when it has several.
  llvm::DenseMap<Operation *, int> perFunction;
  for (AttentionOp op : ops)
    ++perFunction[op->getParentOfType<FunctionOpInterface>()];
  for (auto [i, op] : llvm::enumerate(ops)) {
    auto func = op->getParentOfType<FunctionOpInterface>();
    std::string name = (func ? func.getName().str() : std::string("module"));
    if (!func || perFunction[func] > 1)
      name += "_" + std::to_string(i);
    if (failed(compileAttentionKernel(op, sanitize(name), outputDir, options)))
      return failure();
  }
  // A backward is named after its function, with "_backward" when the
  // function also has a forward or several backwards.
  llvm::DenseMap<Operation *, int> backwardPerFunction;
  for (AttentionBackwardOp op : backwardOps)
    ++backwardPerFunction[op->getParentOfType<FunctionOpInterface>()];
  for (auto [i, op] : llvm::enumerate(backwardOps)) {
    auto func = op->getParentOfType<FunctionOpInterface>();
    std::string name = (func ? func.getName().str() : std::string("module"));
    if (!func || perFunction.count(func) || backwardPerFunction[func] > 1)
      name += "_backward";
    if (!func || backwardPerFunction[func] > 1)
      name += "_" + std::to_string(i);
    if (failed(compileAttentionBackwardKernels(op, sanitize(name), outputDir,
                                               options)))
      return failure();
  }
  return success();
}
