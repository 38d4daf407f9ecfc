//===- fuse-with-patterns.cpp - flash patterns in another pass --*- C++ -*-===//
//
// Part of the flash-mlir project.
//
// fuse-with-patterns INPUT.mlir: parses INPUT, runs a pass of its own that
// applies the flash fusion patterns greedily to every function, and prints
// the result. Built against the installed package by test/Install.
//
//===----------------------------------------------------------------------===//

#include "flash/Dialect/Flash/IR/FlashDialect.h"
#include "flash/Dialect/Flash/Transforms/Transforms.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace {
struct MyFusionPass : PassWrapper<MyFusionPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(MyFusionPass)

  StringRef getArgument() const final { return "my-fusion"; }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<flash::FlashDialect>();
  }
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    flash::populateFuseAttentionPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    llvm::errs() << "usage: fuse-with-patterns INPUT.mlir\n";
    return 1;
  }
  DialectRegistry registry;
  registry.insert<arith::ArithDialect, func::FuncDialect, linalg::LinalgDialect,
                  math::MathDialect, tensor::TensorDialect>();
  MLIRContext context(registry);
  llvm::SourceMgr sources;
  SourceMgrDiagnosticHandler handler(sources, &context);
  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(argv[1], sources, &context);
  if (!module)
    return 1;
  PassManager pm(&context);
  pm.addNestedPass<func::FuncOp>(std::make_unique<MyFusionPass>());
  if (failed(pm.run(*module)))
    return 1;
  module->print(llvm::outs());
  llvm::outs() << "\n";
  return 0;
}
