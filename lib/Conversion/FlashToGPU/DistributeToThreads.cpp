//===- DistributeToThreads.cpp - the SIMT rest of the GPU mapping -*- C++ -*-//
//
// Part of the flash-mlir project.
//
// --flash-gpu-distribute-to-threads, the GPU mapping's last step: what the
// earlier steps left (element copies, atomic additions, every op of a nest
// the warp mapping did not take) becomes loops strided over the block's
// threads, each followed by a barrier.
//
//===----------------------------------------------------------------------===//

#include "flash/Conversion/Passes.h"

#include "GpuMapping.h"

#include "flash/Dialect/Flash/IR/FlashOps.h"
#include "flash/Dialect/FlashGPU/IR/FlashGPUOps.h"

#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::flash {
#define GEN_PASS_DEF_FLASHGPUDISTRIBUTETOTHREADSPASS
#include "flash/Conversion/Passes.h.inc"
} // namespace mlir::flash

using namespace mlir;

/// `flash.atomic_add` of a tile in the CTA's memory: a parallel loop over
/// the tile (distributed over the threads with the rest of the block's
/// work: consecutive threads take consecutive columns) of relaxed f32
/// reductions into the destination, four adjacent columns per iteration
/// where the rows allow (one shared-memory load and one address for four
/// reductions). Those need the destination's rows contiguous (a workspace
/// the runtime allocates is): the kernel traps otherwise.
static void lowerAtomicAdds(gpu::LaunchOp launch) {
  SmallVector<flash::AtomicAddOp> ops;
  launch.getBody().walk([&](flash::AtomicAddOp op) { ops.push_back(op); });
  for (flash::AtomicAddOp op : ops) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    Value tile = op.getTile(), dest = op.getDest();
    auto type = cast<MemRefType>(tile.getType());
    int64_t rank = type.getRank();
    int64_t cols = type.getShape().back();
    // Fragment-major strips (the mma.sync form's contract): one reduction
    // per element at the position the op's map gives.
    AffineMap destination = op.getDestinationMap();
    bool identity = destination.isIdentity();
    int64_t width =
        identity && !ShapedType::isDynamic(cols) && cols % 4 == 0 ? 4 : 1;
    auto idx = [&](int64_t v) -> Value {
      return arith::ConstantIndexOp::create(b, loc, v);
    };
    if (width > 1)
      flash::trapUnlessUnitInnerStride(b, loc, dest);
    // A carved tile's padded rows keep 16-byte alignment: then one vector
    // load per four columns.
    llvm::MaybeAlign alignment;
    SmallVector<int64_t> tileStrides;
    int64_t tileOffset;
    if (width > 1 &&
        succeeded(type.getStridesAndOffset(tileStrides, tileOffset)) &&
        llvm::none_of(tileStrides, ShapedType::isDynamic) &&
        !ShapedType::isDynamic(tileOffset) && tileOffset % 4 == 0 &&
        llvm::all_of(ArrayRef(tileStrides).drop_back(),
                     [](int64_t s) { return s % 4 == 0; }))
      alignment = llvm::Align(16);
    // One loop over the flattened tile, the static trailing sizes dividing
    // it (a distributed loop of rank > 1 takes a remainder by each size,
    // the dynamic row count too: a 64-bit division per iteration).
    SmallVector<Value> sizes;
    Value total = idx(1);
    for (int64_t d = 0; d < rank; ++d) {
      Value size = b.createOrFold<memref::DimOp>(loc, tile, d);
      if (d == rank - 1)
        size = b.createOrFold<arith::DivUIOp>(loc, size, idx(width));
      sizes.push_back(size);
      total = b.createOrFold<arith::MulIOp>(loc, total, size);
    }
    scf::ParallelOp::create(
        b, loc, ValueRange{idx(0)}, ValueRange{total}, ValueRange{idx(1)},
        [&](OpBuilder &nb, Location nl, ValueRange ivs) {
          SmallVector<Value> at(rank);
          Value rest = ivs[0];
          for (int64_t d = rank - 1; d >= 0; --d) {
            at[d] = d == 0
                        ? rest
                        : nb.createOrFold<arith::RemUIOp>(nl, rest, sizes[d]);
            if (d > 0)
              rest = nb.createOrFold<arith::DivUIOp>(nl, rest, sizes[d]);
          }
          at.back() = arith::MulIOp::create(
              nb, nl, at.back(), arith::ConstantIndexOp::create(nb, nl, width));
          Value v = width == 1
                        ? memref::LoadOp::create(nb, nl, tile, at).getResult()
                        : vector::LoadOp::create(
                              nb, nl, VectorType::get({width}, nb.getF32Type()),
                              tile, at, /*nontemporal=*/false, alignment)
                              .getResult();
          SmallVector<Value> into = at;
          if (!identity)
            into = *affine::expandAffineMap(nb, nl, destination, at);
          flashgpu::ReduceAddOp::create(nb, nl, v, dest, into);
        });
    op.erase();
  }
}

/// Thread t of the block takes iterations t, t + threads, ... of `op`
/// (a parallel loop or an element copy); then the block synchronises.
static void distribute(Operation *op, OpBuilder &b, Location loc, Value tid,
                       int64_t threads) {
  // The iteration space: (lower bound, step, count) per dimension.
  SmallVector<Value> lbs, steps, counts;
  Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
  Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
  if (auto par = dyn_cast<scf::ParallelOp>(op)) {
    for (auto [lb, ub, st] :
         llvm::zip(par.getLowerBound(), par.getUpperBound(), par.getStep())) {
      Value extent = b.createOrFold<arith::SubIOp>(loc, ub, lb);
      lbs.push_back(lb);
      steps.push_back(st);
      counts.push_back(b.createOrFold<arith::CeilDivUIOp>(loc, extent, st));
    }
  } else {
    auto copy = cast<memref::CopyOp>(op);
    auto type = cast<MemRefType>(copy.getSource().getType());
    for (int64_t d = 0; d < type.getRank(); ++d) {
      lbs.push_back(c0);
      steps.push_back(c1);
      counts.push_back(b.createOrFold<memref::DimOp>(loc, copy.getSource(), d));
    }
  }
  Value total = c1;
  for (Value n : counts)
    total = b.createOrFold<arith::MulIOp>(loc, total, n);
  Value stride = arith::ConstantIndexOp::create(b, loc, threads);
  auto loop = scf::ForOp::create(b, loc, tid, total, stride);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    SmallVector<Value> ivs(counts.size());
    Value rest = loop.getInductionVar();
    for (int64_t d = counts.size() - 1; d >= 0; --d) {
      Value idx = counts.size() == 1
                      ? rest
                      : b.createOrFold<arith::RemUIOp>(loc, rest, counts[d]);
      if (d > 0)
        rest = b.createOrFold<arith::DivUIOp>(loc, rest, counts[d]);
      Value scaled = b.createOrFold<arith::MulIOp>(loc, idx, steps[d]);
      ivs[d] = b.createOrFold<arith::AddIOp>(loc, lbs[d], scaled);
    }
    if (auto par = dyn_cast<scf::ParallelOp>(op)) {
      IRMapping mapping;
      mapping.map(par.getInductionVars(), ivs);
      for (Operation &inner : par.getBody()->without_terminator())
        b.clone(inner, mapping);
    } else {
      auto copy = cast<memref::CopyOp>(op);
      Value v = memref::LoadOp::create(b, loc, copy.getSource(), ivs);
      memref::StoreOp::create(b, loc, v, copy.getTarget(), ivs);
    }
  }
  gpu::BarrierOp::create(b, loc);
  op->erase();
}

static LogicalResult distributeToThreads(gpu::LaunchOp launch,
                                         int64_t threads) {
  Location loc = launch.getLoc();
  SmallVector<linalg::LinalgOp> ops;
  launch.getBody().walk([&](linalg::LinalgOp op) { ops.push_back(op); });
  IRRewriter rewriter(launch.getContext());
  for (linalg::LinalgOp op : ops) {
    rewriter.setInsertionPoint(op);
    if (failed(linalg::linalgOpToParallelLoops(rewriter, op)))
      return op.emitError("flash-gpu-distribute-to-threads: cannot lower to "
                          "loops");
    rewriter.eraseOp(op);
  }
  // After the contractions: the ones whose result goes only to an addition
  // took it over.
  lowerAtomicAdds(launch);

  // Work of the block, distributed over its threads.
  SmallVector<Operation *> work;
  launch.getBody().walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (isa<scf::ParallelOp, memref::CopyOp>(op)) {
      work.push_back(op);
      return WalkResult::skip();
    }
    return WalkResult::advance();
  });
  for (Operation *op : work) {
    if (auto par = dyn_cast<scf::ParallelOp>(op); par && par.getNumResults())
      return par.emitError("flash-gpu-distribute-to-threads cannot "
                           "distribute a parallel loop with reductions");
    OpBuilder ob(op);
    distribute(op, ob, loc, gpu::ThreadIdOp::create(ob, loc, gpu::Dimension::x),
               threads);
  }
  return success();
}

namespace {
struct FlashGpuDistributeToThreadsPass
    : flash::impl::FlashGpuDistributeToThreadsPassBase<
          FlashGpuDistributeToThreadsPass> {
  using Base::Base;
  void runOnOperation() override {
    for (gpu::LaunchOp launch : flash::collectLaunches(getOperation())) {
      FailureOr<int64_t> threads =
          flash::launchThreads(launch, "flash-gpu-distribute-to-threads");
      if (failed(threads) || failed(distributeToThreads(launch, *threads)))
        return signalPassFailure();
    }
  }
};
} // namespace
