//===- LaunchBounds.cpp - launch bounds stated inside kernels ---*- C++ -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#include "flash/Conversion/Passes.h"
#include "flash/Dialect/FlashGPU/IR/FlashGPUOps.h"

namespace mlir::flash {
#define GEN_PASS_DEF_FLASHGPULAUNCHBOUNDSPASS
#include "flash/Conversion/Passes.h.inc"
} // namespace mlir::flash

using namespace mlir;

namespace {
struct FlashGpuLaunchBoundsPass
    : flash::impl::FlashGpuLaunchBoundsPassBase<FlashGpuLaunchBoundsPass> {
  void runOnOperation() override {
    WalkResult result = getOperation()->walk([&](gpu::GPUFuncOp func) {
      SmallVector<flashgpu::CtasPerSmOp> bounds;
      func.walk([&](flashgpu::CtasPerSmOp op) { bounds.push_back(op); });
      if (bounds.empty())
        return WalkResult::advance();
      uint64_t count = bounds.front().getCount();
      for (flashgpu::CtasPerSmOp op : bounds)
        if (op.getCount() != count) {
          op.emitOpError("states ")
              << op.getCount() << " CTAs per SM where the kernel also states "
              << count;
          return WalkResult::interrupt();
        }
      OpBuilder b(func);
      func->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                    b.getI32IntegerAttr(count));
      for (flashgpu::CtasPerSmOp op : bounds)
        op->erase();
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
