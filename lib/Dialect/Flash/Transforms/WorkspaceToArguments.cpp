//===- WorkspaceToArguments.cpp - workspaces become arguments ----*- C++
//-*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#include "flash/Dialect/Flash/Transforms/Passes.h"
#include "flash/Dialect/Flash/Transforms/Transforms.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::flash {
#define GEN_PASS_DEF_FLASHWORKSPACETOARGUMENTSPASS
#include "flash/Dialect/Flash/Transforms/Passes.h.inc"
} // namespace mlir::flash

using namespace mlir;
using namespace mlir::flash;

namespace {
struct FlashWorkspaceToArgumentsPass
    : flash::impl::FlashWorkspaceToArgumentsPassBase<
          FlashWorkspaceToArgumentsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    SmallVector<tensor::EmptyOp> workspaces;
    func.walk([&](tensor::EmptyOp empty) {
      if (empty->hasAttr(kWorkspaceAttr))
        workspaces.push_back(empty);
    });
    OpBuilder b(&getContext());
    for (tensor::EmptyOp empty : workspaces) {
      unsigned index = func.getNumArguments();
      DictionaryAttr attrs = b.getDictionaryAttr(
          {b.getNamedAttr("bufferization.writable", b.getBoolAttr(true)),
           b.getNamedAttr(kWorkspaceAttr, empty->getAttr(kWorkspaceAttr))});
      if (failed(func.insertArgument(index, empty.getType(), attrs,
                                     empty.getLoc())))
        return signalPassFailure();
      empty.replaceAllUsesWith(func.getArgument(index));
      empty.erase();
    }
  }
};
} // namespace
