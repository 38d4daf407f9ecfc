//===- DependentLaunches.cpp - programmatic dependent launch ----*- C++ -*-===//
//
// Part of the flash-mlir project.
//
// --flash-gpu-dependent-launches: a launch tagged flash.dependent_launch
// waits for the grid before it at its start, and that grid lets it be
// scheduled as soon as each of its CTAs has started (CUDA's programmatic
// dependent launch, sm_90 and newer).
//
//===----------------------------------------------------------------------===//

#include "flash/Conversion/Passes.h"
#include "flash/Dialect/Flash/IR/TileRoles.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/Builders.h"

namespace mlir::flash {
#define GEN_PASS_DEF_FLASHGPUDEPENDENTLAUNCHESPASS
#include "flash/Conversion/Passes.h.inc"
} // namespace mlir::flash

using namespace mlir;

static void atStart(gpu::LaunchOp launch, NVVM::GridDepActionKind kind) {
  OpBuilder b = OpBuilder::atBlockBegin(&launch.getBody().front());
  NVVM::GriddepcontrolOp::create(b, launch.getLoc(), kind);
}

namespace {
struct FlashGpuDependentLaunchesPass
    : flash::impl::FlashGpuDependentLaunchesPassBase<
          FlashGpuDependentLaunchesPass> {
  void runOnOperation() override {
    SmallVector<gpu::LaunchOp> dependents;
    getOperation()->walk([&](gpu::LaunchOp launch) {
      if (launch->hasAttr(flash::kDependentLaunchAttrName))
        dependents.push_back(launch);
    });
    for (gpu::LaunchOp launch : dependents) {
      gpu::LaunchOp previous;
      for (Operation *op = launch->getPrevNode(); op && !previous;
           op = op->getPrevNode())
        previous = dyn_cast<gpu::LaunchOp>(op);
      if (!previous) {
        launch.emitError("flash-gpu-dependent-launches: a launch tagged ")
            << flash::kDependentLaunchAttrName
            << " needs a launch before it in its block";
        return signalPassFailure();
      }
      atStart(launch, NVVM::GridDepActionKind::wait);
      atStart(previous, NVVM::GridDepActionKind::launch_dependents);
    }
  }
};
} // namespace
