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
#include "llvm/ADT/TypeSwitch.h"

namespace mlir::flash {
#define GEN_PASS_DEF_FLASHGPUDISTRIBUTETOTHREADSPASS
#include "flash/Conversion/Passes.h.inc"
} // namespace mlir::flash

using namespace mlir;

/// Threads per warp.
static constexpr int64_t kLanes = 32;

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

/// Thread t of the block takes iterations t, t + threads, ... of the
/// iteration space `counts` (row-major, the outermost first), given the
/// indices of one iteration by `body`.
static void
forEachOwnIteration(OpBuilder &b, Location loc, Value tid, int64_t threads,
                    ArrayRef<Value> counts,
                    function_ref<void(OpBuilder &, ArrayRef<Value>)> body) {
  Value total = arith::ConstantIndexOp::create(b, loc, 1);
  for (Value n : counts)
    total = b.createOrFold<arith::MulIOp>(loc, total, n);
  Value stride = arith::ConstantIndexOp::create(b, loc, threads);
  auto loop = scf::ForOp::create(b, loc, tid, total, stride);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  SmallVector<Value> at(counts.size());
  Value rest = loop.getInductionVar();
  for (int64_t d = counts.size() - 1; d >= 0; --d) {
    // What is left for the outermost dimension is below its count already.
    at[d] =
        d == 0 ? rest : b.createOrFold<arith::RemUIOp>(loc, rest, counts[d]);
    if (d > 0)
      rest = b.createOrFold<arith::DivUIOp>(loc, rest, counts[d]);
  }
  body(b, at);
}

/// Elements of `copy` moved per 16-byte vector where its rows allow it: a
/// store of a tile out of the launch (into memory its kernel is passed; the
/// loads into tiles that the earlier steps left keep element copies, as the
/// general kernels' register budgets were searched with them), the
/// innermost size static and a multiple of 16 bytes; 1 otherwise.
static int64_t copyVectorWidth(memref::CopyOp copy) {
  Value into = flash::viewRoot(copy.getTarget());
  auto launch = copy->getParentOfType<gpu::LaunchOp>();
  if (!launch || launch.getBody().isAncestor(into.getParentRegion()))
    return 1;
  auto type = cast<MemRefType>(copy.getSource().getType());
  int64_t bits = type.getElementTypeBitWidth();
  if (type.getRank() == 0 || bits > 128 || 128 % bits)
    return 1;
  int64_t width = 128 / bits, cols = type.getShape().back();
  return width > 1 && !ShapedType::isDynamic(cols) && cols % width == 0 ? width
                                                                        : 1;
}

/// `memref` as a view whose innermost stride is statically 1 (a reinterpret
/// cast of its own metadata), for vector loads and stores; only where the
/// stride is 1 at run time.
static Value unitInnerStrideView(OpBuilder &b, Location loc, Value memref) {
  auto type = cast<MemRefType>(memref.getType());
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) || strides.back() == 1)
    return memref;
  strides.back() = 1;
  auto meta = memref::ExtractStridedMetadataOp::create(b, loc, memref);
  SmallVector<OpFoldResult> sizes;
  for (auto [size, value] : llvm::zip(type.getShape(), meta.getSizes()))
    sizes.push_back(ShapedType::isDynamic(size) ? OpFoldResult(value)
                                                : b.getIndexAttr(size));
  SmallVector<OpFoldResult> strideValues = getAsOpFoldResult(meta.getStrides());
  strideValues.back() = b.getIndexAttr(1);
  auto viewType =
      MemRefType::get(type.getShape(), type.getElementType(),
                      StridedLayoutAttr::get(b.getContext(), offset, strides),
                      type.getMemorySpace());
  return memref::ReinterpretCastOp::create(
      b, loc, viewType, meta.getBaseBuffer(),
      getAsOpFoldResult(meta.getOffset()), sizes, strideValues);
}

/// An element copy over the block's threads: 16 bytes per thread and
/// iteration where both sides' rows are contiguous and 16-byte aligned at
/// run time (a uniform branch; element by element otherwise).
static void distributeCopy(memref::CopyOp copy, OpBuilder &b, Location loc,
                           Value tid, int64_t threads) {
  Value source = copy.getSource(), target = copy.getTarget();
  auto type = cast<MemRefType>(source.getType());
  SmallVector<Value> counts;
  for (int64_t d = 0; d < type.getRank(); ++d)
    counts.push_back(b.createOrFold<memref::DimOp>(loc, source, d));
  auto elementwise = [&](OpBuilder &eb) {
    forEachOwnIteration(eb, loc, tid, threads, counts,
                        [&](OpBuilder &ib, ArrayRef<Value> at) {
                          Value v = memref::LoadOp::create(ib, loc, source, at);
                          memref::StoreOp::create(ib, loc, v, target, at);
                        });
  };
  int64_t width = copyVectorWidth(copy);
  if (width == 1) {
    elementwise(b);
    return;
  }
  Value sourceAligned = flash::rowsAreAligned(b, loc, source, width);
  Value targetAligned = flash::rowsAreAligned(b, loc, target, width);
  Value aligned = arith::AndIOp::create(b, loc, sourceAligned, targetAligned);
  auto branch = scf::IfOp::create(b, loc, aligned, /*withElseRegion=*/true);
  OpBuilder vb = branch.getThenBodyBuilder();
  Value from = unitInnerStrideView(vb, loc, source);
  Value into = unitInnerStrideView(vb, loc, target);
  SmallVector<Value> vectorCounts = counts;
  vectorCounts.back() =
      arith::ConstantIndexOp::create(vb, loc, type.getShape().back() / width);
  auto vectorType = VectorType::get({width}, type.getElementType());
  forEachOwnIteration(
      vb, loc, tid, threads, vectorCounts,
      [&](OpBuilder &ib, ArrayRef<Value> vectorAt) {
        SmallVector<Value> at(vectorAt);
        at.back() = arith::MulIOp::create(
            ib, loc, at.back(), arith::ConstantIndexOp::create(ib, loc, width));
        Value v =
            vector::LoadOp::create(ib, loc, vectorType, from, at,
                                   /*nontemporal=*/false, llvm::Align(16));
        vector::StoreOp::create(ib, loc, v, into, at, /*nontemporal=*/false,
                                llvm::Align(16));
      });
  OpBuilder eb = branch.getElseBodyBuilder();
  elementwise(eb);
}

/// Thread t of the block takes iterations t, t + threads, ... of `op`
/// (a parallel loop or an element copy); then the block synchronises.
static void distribute(Operation *op, OpBuilder &b, Location loc, Value tid,
                       int64_t threads) {
  if (auto copy = dyn_cast<memref::CopyOp>(op)) {
    distributeCopy(copy, b, loc, tid, threads);
  } else {
    auto par = cast<scf::ParallelOp>(op);
    SmallVector<Value> lbs(par.getLowerBound()), steps(par.getStep()), counts;
    for (auto [lb, ub, st] :
         llvm::zip(par.getLowerBound(), par.getUpperBound(), par.getStep())) {
      Value extent = b.createOrFold<arith::SubIOp>(loc, ub, lb);
      counts.push_back(b.createOrFold<arith::CeilDivUIOp>(loc, extent, st));
    }
    forEachOwnIteration(
        b, loc, tid, threads, counts, [&](OpBuilder &ib, ArrayRef<Value> at) {
          IRMapping mapping;
          for (auto [iv, i, lb, st] :
               llvm::zip(par.getInductionVars(), at, lbs, steps))
            mapping.map(
                iv, ib.createOrFold<arith::AddIOp>(
                        loc, lb, ib.createOrFold<arith::MulIOp>(loc, i, st)));
          for (Operation &inner : par.getBody()->without_terminator())
            ib.clone(inner, mapping);
        });
  }
  gpu::BarrierOp::create(b, loc);
  op->erase();
}

/// A linalg reduction whose lanes can split its reduced loop: the last of
/// its loops the only reduction, of static size; one output indexed by the
/// other loops in order; the body yielding `combine(x, out)` for the
/// output's f32 block argument `out` used nowhere else, `combine` an
/// addition or a maximum (associative: the lanes' partial results combine
/// in any order).
struct LastLoopReduction {
  Operation *combiner;
  arith::AtomicRMWKind kind;
  /// The value combined per element of the reduced loop.
  Value element;
  int64_t size;
};

static std::optional<LastLoopReduction>
matchLastLoopReduction(linalg::GenericOp op) {
  unsigned loops = op.getNumLoops();
  if (op.getNumDpsInits() != 1 || op.getNumResults() != 0 || loops < 2 ||
      op.getNumReductionLoops() != 1 ||
      !linalg::isReductionIterator(op.getIteratorTypesArray().back()))
    return std::nullopt;
  SmallVector<int64_t, 4> ranges = op.getStaticLoopRanges();
  if (ShapedType::isDynamic(ranges.back()))
    return std::nullopt;
  OpOperand *init = op.getDpsInitOperand(0);
  if (op.getMatchingIndexingMap(init) !=
      AffineMap::getMultiDimIdentityMap(loops, op.getContext())
          .dropResult(loops - 1))
    return std::nullopt;
  BlockArgument out = op.getMatchingBlockArgument(init);
  if (!out.getType().isF32() || !out.hasOneUse())
    return std::nullopt;
  Operation *combiner =
      op.getBlock()->getTerminator()->getOperand(0).getDefiningOp();
  if (!combiner || combiner->getNumOperands() != 2 ||
      !llvm::is_contained(combiner->getOperands(), Value(out)))
    return std::nullopt;
  std::optional<arith::AtomicRMWKind> kind =
      TypeSwitch<Operation *, std::optional<arith::AtomicRMWKind>>(combiner)
          .Case([](arith::AddFOp) { return arith::AtomicRMWKind::addf; })
          .Case(
              [](arith::MaximumFOp) { return arith::AtomicRMWKind::maximumf; })
          .Case([](arith::MaxNumFOp) { return arith::AtomicRMWKind::maxnumf; })
          .Default([](Operation *) { return std::nullopt; });
  if (!kind)
    return std::nullopt;
  Value element = combiner->getOperand(0) == out ? combiner->getOperand(1)
                                                 : combiner->getOperand(0);
  return LastLoopReduction{combiner, *kind, element, ranges.back()};
}

/// `reduction` of `op` over the block's warps: warp w takes the outputs
/// w, w + warps, ..., its lanes a strided share of the reduced loop each
/// (consecutive lanes consecutive elements: no shared-memory bank conflict
/// where a thread per output would read down a column), combined by xor
/// shuffles; lane 0 combines the result into the output. Then the block
/// synchronises.
static void distributeOverWarps(linalg::GenericOp op,
                                const LastLoopReduction &reduction,
                                OpBuilder &b, Location loc, Value tid,
                                int64_t threads) {
  auto idx = [&](OpBuilder &ib, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(ib, loc, v);
  };
  SmallVector<Range, 4> ranges =
      cast<linalg::LinalgOp>(op.getOperation()).createLoopRanges(b, loc);
  SmallVector<Value> counts;
  for (Range r : ArrayRef(ranges).drop_back())
    counts.push_back(getValueOrCreateConstantIndexOp(b, loc, r.size));
  Value warp = arith::DivUIOp::create(b, loc, tid, idx(b, kLanes));
  Value lane = arith::RemUIOp::create(b, loc, tid, idx(b, kLanes));
  Type f32 = b.getF32Type();
  forEachOwnIteration(
      b, loc, warp, threads / kLanes, counts,
      [&](OpBuilder &ib, ArrayRef<Value> outer) {
        Value start = arith::getIdentityValue(reduction.kind, f32, ib, loc);
        auto inner = scf::ForOp::create(
            ib, loc, lane, idx(ib, reduction.size), idx(ib, kLanes),
            ValueRange{start},
            [&](OpBuilder &lb, Location ll, Value k, ValueRange acc) {
              SmallVector<Value> ivs(outer);
              ivs.push_back(k);
              IRMapping mapping;
              for (OpOperand *in : op.getDpsInputOperands()) {
                SmallVector<Value> at = *affine::expandAffineMap(
                    lb, ll, op.getMatchingIndexingMap(in), ivs);
                mapping.map(op.getMatchingBlockArgument(in),
                            memref::LoadOp::create(lb, ll, in->get(), at));
              }
              for (Operation &body : op.getBlock()->without_terminator()) {
                if (&body == reduction.combiner)
                  continue;
                if (auto index = dyn_cast<linalg::IndexOp>(body)) {
                  mapping.map(index.getResult(), ivs[index.getDim()]);
                  continue;
                }
                lb.clone(body, mapping);
              }
              Value x = mapping.lookupOrDefault(reduction.element);
              scf::YieldOp::create(
                  lb, ll,
                  arith::getReductionOp(reduction.kind, lb, ll, acc[0], x));
            });
        Value total = inner.getResult(0);
        for (int64_t offset = kLanes / 2; offset > 0; offset /= 2) {
          Value other = gpu::ShuffleOp::create(
                            ib, loc, total,
                            arith::ConstantIntOp::create(ib, loc, offset, 32),
                            arith::ConstantIntOp::create(ib, loc, kLanes, 32),
                            gpu::ShuffleMode::XOR)
                            .getShuffleResult();
          total = arith::getReductionOp(reduction.kind, ib, loc, total, other);
        }
        Value first = arith::CmpIOp::create(ib, loc, arith::CmpIPredicate::eq,
                                            lane, idx(ib, 0));
        auto write =
            scf::IfOp::create(ib, loc, first, /*withElseRegion=*/false);
        OpBuilder wb = write.getThenBodyBuilder();
        Value dest = op.getDpsInitOperand(0)->get();
        Value old = memref::LoadOp::create(wb, loc, dest, outer);
        memref::StoreOp::create(
            wb, loc, arith::getReductionOp(reduction.kind, wb, loc, old, total),
            dest, outer);
      });
  gpu::BarrierOp::create(b, loc);
}

static LogicalResult distributeToThreads(gpu::LaunchOp launch,
                                         int64_t threads) {
  Location loc = launch.getLoc();
  SmallVector<linalg::LinalgOp> ops;
  launch.getBody().walk([&](linalg::LinalgOp op) { ops.push_back(op); });
  IRRewriter rewriter(launch.getContext());
  for (linalg::LinalgOp op : ops) {
    rewriter.setInsertionPoint(op);
    auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
    if (std::optional<LastLoopReduction> reduction =
            generic ? matchLastLoopReduction(generic) : std::nullopt) {
      distributeOverWarps(
          generic, *reduction, rewriter, loc,
          gpu::ThreadIdOp::create(rewriter, loc, gpu::Dimension::x), threads);
      rewriter.eraseOp(op);
      continue;
    }
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
