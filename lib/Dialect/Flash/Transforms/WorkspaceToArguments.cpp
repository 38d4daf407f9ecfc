//===- WorkspaceToArguments.cpp - workspaces become arguments ---*- C++ -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#include "flash/Dialect/Flash/Transforms/Passes.h"
#include "flash/Dialect/Flash/Transforms/Transforms.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"

#include <functional>

namespace mlir::flash {
#define GEN_PASS_DEF_FLASHWORKSPACETOARGUMENTSPASS
#include "flash/Dialect/Flash/Transforms/Passes.h.inc"
} // namespace mlir::flash

using namespace mlir;
using namespace mlir::flash;

/// The functions of `module`, every callee before its callers (but for the
/// call that closes a cycle of calls).
static SmallVector<func::FuncOp> calleesFirst(ModuleOp module) {
  SymbolTable symbols(module);
  SmallVector<func::FuncOp> order;
  llvm::DenseSet<Operation *> visited;
  std::function<void(func::FuncOp)> visit = [&](func::FuncOp func) {
    if (!visited.insert(func).second)
      return;
    func.walk([&](func::CallOp call) {
      if (auto callee = symbols.lookup<func::FuncOp>(call.getCallee()))
        visit(callee);
    });
    order.push_back(func);
  };
  for (func::FuncOp func : module.getOps<func::FuncOp>())
    visit(func);
  return order;
}

/// Whether `value` is computed by pure ops from the arguments of `func`.
static bool isComputedFromArguments(Value value, func::FuncOp func) {
  if (auto argument = dyn_cast<BlockArgument>(value))
    return argument.getOwner() == &func.getBody().front();
  Operation *def = value.getDefiningOp();
  return isMemoryEffectFree(def) && def->getNumRegions() == 0 &&
         llvm::all_of(def->getOperands(), [&](Value operand) {
           return isComputedFromArguments(operand, func);
         });
}

/// `value`, computed by pure ops from the values that `mapping` knows,
/// recomputed at `b` from what they map to.
static Value recompute(Value value, IRMapping &mapping, OpBuilder &b) {
  if (Value known = mapping.lookupOrNull(value))
    return known;
  Operation *def = value.getDefiningOp();
  for (Value operand : def->getOperands())
    recompute(operand, mapping, b);
  b.clone(*def, mapping);
  return mapping.lookup(value);
}

/// Passes the `workspaces` of `callee` (sized from its arguments) at `call`:
/// each becomes a tensor.empty of the caller with the same tag, a workspace
/// of the caller now, appended to the call's operands.
static void passWorkspaces(func::CallOp call, func::FuncOp callee,
                           ArrayRef<tensor::EmptyOp> workspaces) {
  OpBuilder b(call);
  IRMapping mapping;
  mapping.map(callee.getArguments(), call.getOperands());
  SmallVector<Value> passed;
  for (tensor::EmptyOp workspace : workspaces) {
    SmallVector<Value> sizes;
    for (Value size : workspace.getDynamicSizes())
      sizes.push_back(recompute(size, mapping, b));
    auto empty =
        tensor::EmptyOp::create(b, call.getLoc(), workspace.getType(), sizes);
    empty->setAttr(kWorkspaceAttr, workspace->getAttr(kWorkspaceAttr));
    passed.push_back(empty);
  }
  call.getOperandsMutable().append(passed);
}

/// Makes every use of `func`, a call, pass its `workspaces` (sized from its
/// arguments). Functions in
/// `converted` have had their own workspaces made arguments already: a call
/// from one of them is a recursion, which cannot pass them.
static LogicalResult
passWorkspacesAtCalls(func::FuncOp func, ArrayRef<tensor::EmptyOp> workspaces,
                      SymbolTable::UseRange uses,
                      const llvm::DenseSet<Operation *> &converted) {
  for (const SymbolTable::SymbolUse &use : uses) {
    auto call = dyn_cast<func::CallOp>(use.getUser());
    if (!call)
      return use.getUser()->emitError("flash-workspace-to-arguments: @")
             << func.getName()
             << " takes its tiled backward's workspace as an argument, which "
                "only a func.call can pass";
    if (converted.contains(call->getParentOfType<func::FuncOp>()))
      return call.emitError("flash-workspace-to-arguments: a recursive call "
                            "cannot pass the workspace of @")
             << func.getName();
    passWorkspaces(call, func, workspaces);
  }
  return success();
}

/// Appends one writable argument per workspace to `func`, in order and named
/// by the workspace's tag, and uses it instead of the workspace.
static LogicalResult makeArguments(func::FuncOp func,
                                   ArrayRef<tensor::EmptyOp> workspaces) {
  OpBuilder b(func.getContext());
  for (tensor::EmptyOp workspace : workspaces) {
    unsigned index = func.getNumArguments();
    DictionaryAttr attrs = b.getDictionaryAttr(
        {b.getNamedAttr("bufferization.writable", b.getBoolAttr(true)),
         b.getNamedAttr(kWorkspaceAttr, workspace->getAttr(kWorkspaceAttr))});
    if (failed(func.insertArgument(index, workspace.getType(), attrs,
                                   workspace.getLoc())))
      return failure();
    workspace.replaceAllUsesWith(func.getArgument(index));
    workspace.erase();
  }
  return success();
}

/// Makes the workspaces of `func` its arguments, passed by its callers,
/// where a caller can size them: always in a function the host may call
/// (public, or not called here), otherwise when the size is computed from
/// the arguments. A workspace that is not stays where it is, allocated by
/// `func`.
static LogicalResult
convertWorkspaces(func::FuncOp func, ModuleOp module,
                  const llvm::DenseSet<Operation *> &converted) {
  SmallVector<tensor::EmptyOp> workspaces;
  func.walk([&](tensor::EmptyOp empty) {
    if (empty->hasAttr(kWorkspaceAttr))
      workspaces.push_back(empty);
  });
  if (workspaces.empty())
    return success();
  std::optional<SymbolTable::UseRange> uses =
      SymbolTable::getSymbolUses(func, module);
  if (!uses)
    return func.emitError("flash-workspace-to-arguments: cannot find the "
                          "callers of @")
           << func.getName() << ", which must pass its workspace";
  bool called = !uses->empty();
  bool entry = func.isPublic() || !called;
  SmallVector<tensor::EmptyOp> arguments;
  for (tensor::EmptyOp workspace : workspaces) {
    bool sized = llvm::all_of(workspace.getDynamicSizes(), [&](Value size) {
      return isComputedFromArguments(size, func);
    });
    if (!sized && entry && called) {
      InFlightDiagnostic diag =
          uses->begin()->getUser()->emitError(
              "flash-workspace-to-arguments: cannot allocate the workspace of "
              "@")
          << func.getName()
          << " for this call: its size is not computed from the callee's "
             "arguments";
      diag.attachNote(workspace.getLoc()) << "the workspace";
      return diag;
    }
    if (sized || entry)
      arguments.push_back(workspace);
    else
      workspace->removeAttr(kWorkspaceAttr);
  }
  if (failed(passWorkspacesAtCalls(func, arguments, *uses, converted)))
    return failure();
  return makeArguments(func, arguments);
}

namespace {
struct FlashWorkspaceToArgumentsPass
    : flash::impl::FlashWorkspaceToArgumentsPassBase<
          FlashWorkspaceToArgumentsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Callees first, so that the workspaces a function's calls gained are
    // its own by the time it is converted, up to the entry the host calls.
    llvm::DenseSet<Operation *> converted;
    for (func::FuncOp func : calleesFirst(module)) {
      converted.insert(func);
      if (!func.isExternal() &&
          failed(convertWorkspaces(func, module, converted)))
        return signalPassFailure();
    }
  }
};
} // namespace
