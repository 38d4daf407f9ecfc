//===- flash-opt.cpp - the flash-mlir optimizer driver ----------*- C++ -*-===//
//
// Part of the flash-mlir project.
//
// mlir-opt with the flash dialect, passes and pipelines added: every upstream
// dialect, pass, extension and LLVM IR translation is registered too, so that
// flash passes compose with any upstream pipeline.
//
//===----------------------------------------------------------------------===//

#include "flash/InitAllFlash.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
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
      mlir::MlirOptMain(argc, argv, "flash-mlir optimizer driver\n", registry));
}
