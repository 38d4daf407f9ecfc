//===- BufferizableOpInterfaceImpl.cpp - flash ops in bufferization -------===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#include "flash/Dialect/Flash/Transforms/BufferizableOpInterfaceImpl.h"

#include "flash/Dialect/Flash/IR/FlashOps.h"

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/IR/DialectRegistry.h"

using namespace mlir;
using namespace mlir::bufferization;
using namespace mlir::flash;

namespace {
/// `flash.atomic_add %tile, %dest`: reads the tile, writes nothing that a
/// tensor aliases (the destination is a memref already).
struct AtomicAddOpInterface
    : public BufferizableOpInterface::ExternalModel<AtomicAddOpInterface,
                                                    AtomicAddOp> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return true;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const AnalysisState &) const {
    return false;
  }
  AliasingValueList getAliasingValues(Operation *, OpOperand &,
                                      const AnalysisState &) const {
    return {};
  }
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto add = cast<AtomicAddOp>(op);
    FailureOr<Value> tile = getBuffer(rewriter, add.getTile(), options, state);
    if (failed(tile))
      return failure();
    rewriter.setInsertionPoint(op);
    AtomicAddOp::create(rewriter, add.getLoc(), *tile, add.getDest(),
                        add.getFragmentMajorAttr());
    rewriter.eraseOp(op);
    return success();
  }
};
} // namespace

void flash::registerBufferizableOpInterfaceExternalModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, FlashDialect *) {
    AtomicAddOp::attachInterface<AtomicAddOpInterface>(*ctx);
  });
}
