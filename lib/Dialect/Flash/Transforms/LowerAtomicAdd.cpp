//===- LowerAtomicAdd.cpp - flash.atomic_add -> memref.atomic_rmw ---------===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#include "flash/Dialect/Flash/IR/FlashOps.h"
#include "flash/Dialect/Flash/Transforms/Passes.h"

#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace mlir::flash {
#define GEN_PASS_DEF_FLASHLOWERATOMICADDPASS
#include "flash/Dialect/Flash/Transforms/Passes.h.inc"
} // namespace mlir::flash

using namespace mlir;
using namespace mlir::flash;

namespace {
struct FlashLowerAtomicAddPass
    : flash::impl::FlashLowerAtomicAddPassBase<FlashLowerAtomicAddPass> {
  void runOnOperation() override {
    SmallVector<AtomicAddOp> ops;
    getOperation()->walk([&](AtomicAddOp op) { ops.push_back(op); });
    for (AtomicAddOp op : ops) {
      if (!isa<MemRefType>(op.getTile().getType())) {
        op.emitError("flash-lower-atomic-add: the tile is not bufferized");
        return signalPassFailure();
      }
      OpBuilder b(op);
      Location loc = op.getLoc();
      auto type = cast<MemRefType>(op.getTile().getType());
      AffineMap destination = op.getDestinationMap();
      Value zero = arith::ConstantIndexOp::create(b, loc, 0);
      Value one = arith::ConstantIndexOp::create(b, loc, 1);
      SmallVector<Value> lbs(type.getRank(), zero), steps(type.getRank(), one),
          ubs;
      for (int64_t d = 0; d < type.getRank(); ++d)
        ubs.push_back(b.createOrFold<memref::DimOp>(loc, op.getTile(), d));
      scf::ParallelOp::create(
          b, loc, lbs, ubs, steps,
          [&](OpBuilder &nb, Location nl, ValueRange ivs) {
            Value v = memref::LoadOp::create(nb, nl, op.getTile(), ivs);
            SmallVector<Value> into(ivs);
            if (!destination.isIdentity())
              into = *affine::expandAffineMap(nb, nl, destination, ivs);
            memref::AtomicRMWOp::create(nb, nl, arith::AtomicRMWKind::addf, v,
                                        op.getDest(), into);
          });
      op.erase();
    }
  }
};
} // namespace
