//===- FastExp2.cpp - exp2 of the online softmax on MUFU --------*- C++ -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#include "flash/Conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Builders.h"

namespace mlir::flash {
#define GEN_PASS_DEF_FLASHGPUFASTEXP2PASS
#include "flash/Conversion/Passes.h.inc"
} // namespace mlir::flash

using namespace mlir;

namespace {
struct FlashGpuFastExp2Pass
    : flash::impl::FlashGpuFastExp2PassBase<FlashGpuFastExp2Pass> {
  void runOnOperation() override {
    // The tiler writes exp2 only for the online softmax, whose arguments
    // are x - m <= 0: results below 2^-126 (flushed to 0) are far below
    // what the probabilities' bf16/f16 rounding keeps.
    getOperation()->walk([](gpu::LaunchOp launch) {
      launch.getBody().walk([](math::Exp2Op exp2) {
        if (!exp2.getType().isF32())
          return;
        OpBuilder b(exp2);
        Value fast = LLVM::CallIntrinsicOp::create(
                         b, exp2.getLoc(), b.getF32Type(),
                         b.getStringAttr("llvm.nvvm.ex2.approx.ftz.f32"),
                         ValueRange{exp2.getOperand()})
                         .getResult(0);
        exp2.replaceAllUsesWith(fast);
        exp2.erase();
      });
    });
  }
};
} // namespace
