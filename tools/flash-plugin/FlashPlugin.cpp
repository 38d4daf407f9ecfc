//===- FlashPlugin.cpp - flash as a plugin of upstream mlir-opt -*- C++ -*-===//
//
// Part of the flash-mlir project.
//
// One shared object that is both a dialect plugin and a pass plugin of
// upstream tools built on MlirOptMain (Debian's mlir-opt-22):
//
//   mlir-opt --load-dialect-plugin=FlashMLIRPlugin.so \
//            --load-pass-plugin=FlashMLIRPlugin.so \
//            --pass-pipeline="builtin.module(flash-fuse-attention)" in.mlir
//
// The dialect plugin registers the flash dialect (to parse flash ops); the
// pass plugin registers every flash pass and pipeline. Passes loaded by a
// plugin are named in --pass-pipeline: mlir-opt builds its --<pass> flags
// before plugins load. It links the libMLIR.so that mlir-opt-22 links, so
// both see one MLIR (one type and pass registry).
//
//===----------------------------------------------------------------------===//

#include "flash/InitAllFlash.h"

#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/Compiler.h"

extern "C" LLVM_ATTRIBUTE_WEAK mlir::DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "Flash", LLVM_VERSION_STRING,
          [](mlir::DialectRegistry *registry) {
            mlir::flash::registerAllFlashDialects(*registry);
          }};
}

extern "C" LLVM_ATTRIBUTE_WEAK mlir::PassPluginLibraryInfo
mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "FlashPasses", LLVM_VERSION_STRING,
          [] { mlir::flash::registerAllFlashPasses(); }};
}
