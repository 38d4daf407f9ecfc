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

#include "KernelABI.h"

#include "flash/Dialect/Flash/Transforms/Passes.h"
#include "flash/Pipelines/Pipelines.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
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
      {"threads-per-block", options.threadsPerBlock},
      {"load-stages", options.loadStages}};
  for (auto [name, size] : sizes)
    if (size < 0)
      return (llvm::Twine("--") + name +
              " must be positive (or 0 to choose), not " + llvm::Twine(size))
          .str();
  if (options.emulatedExp2Every < 0)
    return (llvm::Twine("--emulated-exp2 must be 0 (none) or more, not ") +
            llvm::Twine(options.emulatedExp2Every))
        .str();
  if (options.persistentBelowKeys < 0)
    return (llvm::Twine("--persistent-below-keys must be 0 (no persistent "
                        "form) or more, not ") +
            llvm::Twine(options.persistentBelowKeys))
        .str();
  if (options.loadStages > 2)
    return (llvm::Twine("--load-stages must be 1 or 2 (or 0 to choose), not ") +
            llvm::Twine(options.loadStages))
        .str();
  if (options.chip == Chip::Any)
    return "a kernel needs a chip (sm_80 or sm_90a)";
  if (options.tensorCores == TensorCores::Wgmma && options.chip != Chip::Sm90a)
    return "--tensor-cores=wgmma needs --chip=sm_90a";
  if (options.pipelineKeyLoops && options.chip != Chip::Sm90a)
    return "--pipeline-key-loops needs --chip=sm_90a (it overlaps the "
           "softmax with an asynchronous warpgroup MMA)";
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
  // The kernels' parameters are the tensors and their sizes; a scale is
  // compiled into the kernel.
  for (AttentionOp op : ops) {
    if (op.getRuntimeScale())
      return op.emitError("flash-compile: a scale known only at run time "
                          "(runtime_scale) is not supported by the GPU "
                          "kernels; give the scale as a constant");
  }
  auto checkScoreMod = [](Operation *op, Region &scoreMod) -> LogicalResult {
    std::string why;
    if (failed(driver::scoreModTensors(op, scoreMod, why)))
      return op->emitError("flash-compile: ") << why;
    return success();
  };
  for (AttentionOp op : ops)
    if (failed(checkScoreMod(op, op.getScoreMod())))
      return failure();
  for (AttentionBackwardOp op : backwardOps) {
    if (failed(checkScoreMod(op, op.getScoreMod())))
      return failure();
    if (op.getSinks())
      return op.emitError(
          "flash-compile: the gradient of the sinks is not built into GPU "
          "kernels; dQ, dK and dV do not depend on the sinks (the LSE carries "
          "them), so compile the backward without `sinks` and compute "
          "grad_sinks = -sum_{b,i} exp(sinks - LSE) rowsum(dO O) beside it, "
          "as flash_mlir.torch does");
  }
  // Kernels are named after their function, numbered when it has several.
  llvm::DenseMap<Operation *, int> perFunction;
  for (AttentionOp op : ops)
    ++perFunction[op->getParentOfType<FunctionOpInterface>()];
  SmallVector<std::pair<Operation *, std::string>> kernels;
  for (auto [i, op] : llvm::enumerate(ops)) {
    auto func = op->getParentOfType<FunctionOpInterface>();
    std::string name = (func ? func.getName().str() : std::string("module"));
    if (!func || perFunction[func] > 1)
      name += "_" + std::to_string(i);
    kernels.push_back({op, sanitize(name)});
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
    kernels.push_back({op, sanitize(name)});
  }
  // Each op writes <name> and <name>_general: two ops whose files would
  // share a name (@f and @f_general, @"a.b" and @a_b) are an error rather
  // than one kernel's files silently replacing the other's.
  llvm::StringMap<Operation *> owner;
  for (auto &[op, name] : kernels) {
    for (std::string file : {name, name + "_general"}) {
      auto [it, inserted] = owner.try_emplace(file, op);
      if (inserted || it->second == op)
        continue;
      auto describe = [](Operation *o) {
        auto func = o->getParentOfType<FunctionOpInterface>();
        return func ? ("@" + func.getName()).str() : std::string("the module");
      };
      InFlightDiagnostic diag =
          op->emitError("flash-compile: the kernel files '")
          << file << "' of this op in " << describe(op)
          << " would overwrite those of an op in " << describe(it->second)
          << "; rename one of the functions";
      diag.attachNote(it->second->getLoc()) << "the other op";
      return failure();
    }
  }
  if (std::error_code ec = llvm::sys::fs::create_directories(outputDir))
    return emitError(module.getLoc(), "flash-compile: cannot create ")
           << outputDir << ": " << ec.message();
  for (auto &[op, name] : kernels) {
    // A function marked `flash.key_splits` asks for split-KV forwards.
    KernelCompileOptions opOptions = options;
    if (auto func = op->getParentOfType<FunctionOpInterface>())
      opOptions.keySplits |= func->hasAttr(kKeySplitsAttr);
    LogicalResult compiled =
        isa<AttentionOp>(op)
            ? compileAttentionKernel(cast<AttentionOp>(op), name, outputDir,
                                     opOptions)
            : compileAttentionBackwardKernels(cast<AttentionBackwardOp>(op),
                                              name, outputDir, options);
    if (failed(compiled))
      return failure();
  }
  return success();
}
