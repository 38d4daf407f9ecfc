//===- LowerSkipTile.cpp - flash.skip_tile -> scf.if ----------------------===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#include "flash/Dialect/Flash/IR/FlashOps.h"
#include "flash/Dialect/Flash/Transforms/Passes.h"
#include "flash/Dialect/Flash/Transforms/Transforms.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace mlir::flash {
#define GEN_PASS_DEF_FLASHLOWERSKIPTILEPASS
#include "flash/Dialect/Flash/Transforms/Passes.h.inc"
} // namespace mlir::flash

using namespace mlir;
using namespace mlir::flash;

LogicalResult flash::guardRestOfBlock(RewriterBase &rewriter, SkipTileOp op) {
  Block *block = op->getBlock();
  Operation *terminator =
      block->mightHaveTerminator() ? block->getTerminator() : nullptr;
  auto first = std::next(op->getIterator());
  auto last = terminator ? terminator->getIterator() : block->end();
  for (Operation &moved : llvm::make_range(first, last))
    for (Value result : moved.getResults())
      for (Operation *user : result.getUsers()) {
        // Past the moved ops there is only the terminator (or another block).
        Operation *inBlock = block->findAncestorOpInBlock(*user);
        if (!inBlock || inBlock == terminator)
          return op.emitError("flash.skip_tile: the rest of the block defines ")
                 << result << ", used past it (lower after bufferization)";
      }
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  Value notEmpty = arith::XOrIOp::create(
      rewriter, loc, op.getEmpty(),
      arith::ConstantOp::create(rewriter, loc, rewriter.getBoolAttr(true)));
  auto guard = scf::IfOp::create(rewriter, loc, notEmpty,
                                 /*withElseRegion=*/false);
  Block *then = guard.thenBlock();
  then->getOperations().splice(then->getTerminator()->getIterator(),
                               block->getOperations(), first, last);
  rewriter.eraseOp(op);
  return success();
}

namespace {
struct FlashLowerSkipTilePass
    : flash::impl::FlashLowerSkipTilePassBase<FlashLowerSkipTilePass> {
  void runOnOperation() override {
    SmallVector<SkipTileOp> ops;
    getOperation()->walk([&](SkipTileOp op) { ops.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (SkipTileOp op : ops)
      if (failed(guardRestOfBlock(rewriter, op)))
        return signalPassFailure();
  }
};
} // namespace
