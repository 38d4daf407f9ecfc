//===- flash-opt.cpp - the flash-mlir optimizer driver ----------*- C++ -*-===//
//
// Part of the flash-mlir project.
//
// mlir-opt with the flash dialect, passes and pipelines added: every upstream
// dialect, pass, extension and LLVM IR translation is registered too, so that
// flash passes compose with any upstream pipeline. --help starts with the
// flash passes and pipelines and leaves out LLVM's code-generation options
// (still listed by --help-hidden). Exit status: 0 on success, 1 on any error.
//
//===----------------------------------------------------------------------===//

#include "flash/InitAllFlash.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

namespace cl = llvm::cl;

/// The flash passes and pipelines, in pipeline order, for the help overview.
static constexpr llvm::StringLiteral kFlashPasses[] = {
    "flash-fuse-attention",
    "flash-fuse-attention-backward",
    "flash-tosa-to-attention",
    "flash-decompose-attention",
    "flash-decompose-aggregates",
    "flash-tile-attention",
    "flash-workspace-to-arguments",
    "flash-map-tiles-to-gpu",
    // The steps of --flash-map-tiles-to-gpu, in order, and the one after.
    "flash-gpu-map-to-blocks",
    "flash-gpu-assign-tile-storage",
    "flash-gpu-carve-shared-memory",
    "flash-gpu-warp-register-tiles",
    "flash-gpu-async-tile-loads",
    "flash-gpu-lower-tile-mma",
    "flash-gpu-distribute-to-threads",
    "flash-gpu-split-warp-roles",
    "flash-cpu-pipeline",
    "flash-gpu-pipeline",
};

/// The overview --help prints first: what each flash pass does, from the
/// pass registry.
static std::string overview() {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "flash-mlir optimizer driver\n\n"
     << "flash-opt is mlir-opt with the flash dialect, passes and pipelines; "
        "every\nupstream dialect, pass and translation is registered too. "
        "Exit status: 0 on\nsuccess, 1 on any error (a diagnostic on "
        "stderr).\n\nflash passes and pipelines (options: "
        "--<pass>=\"opt=value ...\"; all are\nlisted under 'Compiler passes "
        "to run' below):\n";
  for (llvm::StringRef name : kFlashPasses) {
    llvm::StringRef summary;
    if (const mlir::PassInfo *pass = mlir::PassInfo::lookup(name))
      summary = pass->getPassDescription();
    else if (const mlir::PassPipelineInfo *pipeline =
                 mlir::PassPipelineInfo::lookup(name))
      summary = pipeline->getPassDescription();
    else
      continue;
    os << llvm::formatv("  --{0,-31} {1}\n", name, summary);
  }
  return text;
}

/// Hides the options that exist before any MLIR registration: LLVM's static
/// code-generation options from libLLVM.so, unrelated to flash-opt. The
/// generic ones (--help, --version, ...) stay; --help-hidden lists all.
static void hideLLVMOptions() {
  for (auto &entry : cl::getRegisteredOptions()) {
    cl::Option *option = entry.second;
    bool generic = llvm::any_of(option->Categories, [](cl::OptionCategory *c) {
      return c->getName() == "Generic Options";
    });
    if (!generic)
      option->setHiddenFlag(cl::Hidden);
  }
}

int main(int argc, char **argv) {
  hideLLVMOptions();
  mlir::registerAllPasses();
  mlir::flash::registerAllFlashPasses();

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllToLLVMIRTranslations(registry);
  mlir::flash::registerAllFlashDialects(registry);

  llvm::cl::AddExtraVersionPrinter([](llvm::raw_ostream &os) {
    os << "flash-mlir version " FLASH_VERSION "\n"
       << "  built with LLVM/MLIR " LLVM_VERSION_STRING "\n";
  });

  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, overview(), registry));
}
