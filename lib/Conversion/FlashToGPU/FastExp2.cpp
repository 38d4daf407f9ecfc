//===- FastExp2.cpp - exp2 of the online softmax on MUFU --------*- C++ -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#include "flash/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Builders.h"

namespace mlir::flash {
#define GEN_PASS_DEF_FLASHGPUFASTEXP2PASS
#include "flash/Conversion/Passes.h.inc"
} // namespace mlir::flash

using namespace mlir;

/// 2^x on the FMA pipes for x <= 0 (or -inf): x clamped to -127, split
/// into an integer j (round to nearest, by adding and subtracting 1.5 * 2^23)
/// and f = x - j in [-0.5, 0.5]; 2^f by a degree-4 polynomial whose constant
/// term is exactly 1 (relative error below 3e-6 over [-0.5, 0.5], fitted to
/// minimise the relative error); j added to the result's exponent bits. At
/// x = -127 (so for -inf) f = 0, 2^f = 1 and the exponent bits become 0:
/// the result is exactly 0, as ex2.approx.ftz gives.
static Value emulateExp2(OpBuilder &b, Location loc, Value x) {
  Type f32 = b.getF32Type(), i32 = b.getI32Type();
  auto constant = [&](float v) -> Value {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  };
  Value clamped = arith::MaximumFOp::create(b, loc, x, constant(-127.0f));
  // In f32, 1.5 * 2^23 + x for |x| < 2^22 has no fraction bits left: the
  // sum is rounded to an integer, held in the low mantissa bits.
  Value shifter = constant(12582912.0f);
  Value shifted = arith::AddFOp::create(b, loc, clamped, shifter);
  Value rounded = arith::SubFOp::create(b, loc, shifted, shifter);
  Value fraction = arith::SubFOp::create(b, loc, clamped, rounded);
  const float coefficients[] = {0.009582852944731712f, 0.055906426161527634f,
                                0.24024099111557007f, 0.6931241750717163f,
                                1.0f};
  Value poly = constant(coefficients[0]);
  for (float c : ArrayRef<float>(coefficients).drop_front())
    poly = math::FmaOp::create(b, loc, poly, fraction, constant(c));
  // j's two's complement sits in the low bits of `shifted`; shifted left by
  // 23 it adds j to the exponent (the bits above drop out).
  Value exponent = arith::ShLIOp::create(
      b, loc, arith::BitcastOp::create(b, loc, i32, shifted),
      arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(23)));
  Value bits = arith::AddIOp::create(
      b, loc, arith::BitcastOp::create(b, loc, i32, poly), exponent);
  return arith::BitcastOp::create(b, loc, f32, bits);
}

namespace {
struct FlashGpuFastExp2Pass
    : flash::impl::FlashGpuFastExp2PassBase<FlashGpuFastExp2Pass> {
  using Base::Base;
  void runOnOperation() override {
    // The tiler writes exp2 only for the online softmax, whose arguments
    // are x - m <= 0: results below 2^-126 (flushed to 0) are far below
    // what the probabilities' bf16/f16 rounding keeps.
    llvm::DenseMap<Block *, int64_t> seen;
    getOperation()->walk([&](gpu::LaunchOp launch) {
      launch.getBody().walk([&](math::Exp2Op exp2) {
        if (!exp2.getType().isF32())
          return;
        OpBuilder b(exp2);
        int64_t index = seen[exp2->getBlock()]++;
        Value fast =
            emulateEvery > 0 && index % emulateEvery == emulateEvery - 1
                ? emulateExp2(b, exp2.getLoc(), exp2.getOperand())
                : LLVM::CallIntrinsicOp::create(
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
