//===- compile-kernels.cpp - the kernel driver as a library -----*- C++ -*-===//
//
// Part of the flash-mlir project.
//
// compile-kernels INPUT.mlir DIR: what flash-compile does, through the
// installed FlashMLIR::FlashDriver (flash/Driver/Driver.h), with the driver's
// progress lines on stdout. Built against the installed package by
// test/Install.
//
//===----------------------------------------------------------------------===//

#include "flash/Dialect/Flash/IR/FlashDialect.h"
#include "flash/Driver/Driver.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

int main(int argc, char **argv) {
  if (argc != 3) {
    llvm::errs() << "usage: compile-kernels INPUT.mlir DIR\n";
    return 1;
  }
  // The GPU pipeline uses upstream dialects, extensions and translations.
  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllToLLVMIRTranslations(registry);
  registry.insert<flash::FlashDialect>();
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  llvm::SourceMgr sources;
  SourceMgrDiagnosticHandler handler(sources, &context);
  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(argv[1], sources, &context);
  if (!module)
    return 1;
  flash::KernelCompileOptions options;
  options.chip = flash::Chip::Sm80;
  if (std::string error = flash::checkKernelCompileOptions(options);
      !error.empty()) {
    llvm::errs() << error << "\n";
    return 1;
  }
  return failed(flash::compileAttentionKernels(*module, argv[2], options));
}
