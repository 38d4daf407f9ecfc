//===- MapTilesToGPU.cpp - tiled attention onto GPU blocks ------*- C++ -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#include "flash/Conversion/Passes.h"

#include "AsyncTileLoads.h"
#include "BufferLiveness.h"
#include "TileContraction.h"
#include "WarpRegisterTiles.h"

#include "flash/Dialect/Flash/IR/FlashOps.h"
#include "flash/Dialect/Flash/IR/TileRoles.h"
#include "flash/Dialect/FlashGPU/IR/FlashGPUOps.h"
#include "flash/Target/AttentionTarget.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir::flash {
#define GEN_PASS_DEF_FLASHMAPTILESTOGPUPASS
#include "flash/Conversion/Passes.h.inc"
} // namespace mlir::flash

using namespace mlir;
using flash::Chip;
using flash::stringifyChip;
using flash::TensorCores;

namespace {
class TileMapper {
public:
  TileMapper(scf::ForallOp forall, Chip chip, int64_t threads,
             TensorCores tensorCores, bool registerTiles, bool asyncCopies,
             int64_t loadStages, bool tmaLoads, bool warpSpecialize,
             bool persistent)
      : forall(forall), loc(forall.getLoc()), chip(chip), threads(threads),
        tensorCores(tensorCores), registerTiles(registerTiles),
        asyncCopies(asyncCopies), loadStages(loadStages), tmaLoads(tmaLoads),
        warpSpecialize(warpSpecialize), persistent(persistent) {}

  LogicalResult run();

private:
  LogicalResult sinkValuesDefinedAbove(gpu::LaunchOp launch);
  LogicalResult buildTileLoop(gpu::LaunchOp launch, ArrayRef<Value> ubs);
  int64_t carveSharedMemory(gpu::LaunchOp launch,
                            const flash::WarpRegisterTiles &inRegisters,
                            const llvm::SmallPtrSet<Operation *, 2> &skip);
  void distribute(Operation *op, OpBuilder &b, Value tid);
  LogicalResult lowerLinalg(gpu::LaunchOp launch);
  std::tuple<scf::ForOp, Value, Value>
  warpTiles(OpBuilder &b, Value tid, int64_t m, int64_t n, int64_t tileCols);
  bool emitWarpMatmul(linalg::GenericOp op, Value tid);
  bool emitWarpMmaSync(linalg::GenericOp op, Value tid);
  bool emitWarpMmaReduce(linalg::GenericOp op, Value tid);
  bool emitWarpgroupMmaReduce(linalg::GenericOp op, Value tid);

  scf::ForallOp forall;
  Location loc;
  Chip chip;
  int64_t threads;
  TensorCores tensorCores;
  bool registerTiles, asyncCopies;
  int64_t loadStages;
  bool tmaLoads, warpSpecialize, persistent;
  /// Allocations left out of shared memory: the reductions' Cs.
  llvm::SmallPtrSet<Operation *, 2> uncarved;
};
} // namespace

static linalg::FillOp findZeroFill(linalg::GenericOp op, Value c);
static flash::AtomicAddOp findAtomicAddOfResult(linalg::GenericOp op, Value c);

/// The Cs of the contractions whose zero-filled result goes only to a
/// `flash.atomic_add` (the atomic backward's dS K): the mapping keeps them
/// in registers (emitWarpMmaReduce, emitWarpgroupMmaReduce), so they get no
/// shared memory (32 KiB at D = 128).
static llvm::SmallPtrSet<Operation *, 2>
reducedInRegisters(gpu::LaunchOp launch) {
  llvm::SmallPtrSet<Operation *, 2> allocs;
  launch.getBody().walk([&](linalg::GenericOp op) {
    auto m = flash::matchTileContraction(op);
    if (!m)
      return;
    auto alloc = m->c.getDefiningOp<memref::AllocOp>();
    if (alloc && findZeroFill(op, m->c) && findAtomicAddOfResult(op, m->c))
      allocs.insert(alloc);
  });
  return allocs;
}

/// A contraction reads a transposed A (the nondeterministic backward's
/// dS = (dSᵀ)ᵀ) from shared memory only, with ldmatrix.trans: its A is
/// first copied into a shared tile of its own, then every thread waits (in
/// a register-tile kernel the lanes that own the rows write them).
static void stageTransposedOperands(gpu::LaunchOp launch) {
  SmallVector<linalg::GenericOp> ops;
  launch.getBody().walk([&](linalg::GenericOp op) {
    if (auto m = flash::matchTileContraction(op); m && m->transposeA)
      ops.push_back(op);
  });
  for (linalg::GenericOp op : ops) {
    OpOperand *a = op.getDpsInputOperand(0);
    auto type = cast<MemRefType>(a->get().getType());
    // Allocated where A is (the loops were hoisted out of its buffer).
    OpBuilder b(op);
    if (Operation *def = a->get().getDefiningOp<memref::AllocOp>())
      b.setInsertionPointAfter(def);
    Value staged = memref::AllocOp::create(
        b, op.getLoc(),
        MemRefType::get(type.getShape(), type.getElementType()));
    b.setInsertionPoint(op);
    memref::CopyOp::create(b, op.getLoc(), a->get(), staged);
    gpu::BarrierOp::create(b, op.getLoc());
    a->set(staged);
  }
}

/// Traps unless `dest`'s innermost stride is 1 (vector reductions need
/// adjacent elements).
static void trapUnlessUnitInnerStride(OpBuilder &b, Location loc, Value dest) {
  auto meta = memref::ExtractStridedMetadataOp::create(b, loc, dest);
  Value strided = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::ne, meta.getStrides().back(),
      arith::ConstantIndexOp::create(b, loc, 1));
  auto guard = scf::IfOp::create(b, loc, strided, /*withElseRegion=*/false);
  OpBuilder trap = guard.getThenBodyBuilder();
  LLVM::Trap::create(trap, loc);
}

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
    int64_t width = !ShapedType::isDynamic(cols) && cols % 4 == 0 ? 4 : 1;
    auto idx = [&](int64_t v) -> Value {
      return arith::ConstantIndexOp::create(b, loc, v);
    };
    if (width > 1)
      trapUnlessUnitInnerStride(b, loc, dest);
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
          flashgpu::ReduceAddOp::create(nb, nl, v, dest, at);
        });
    op.erase();
  }
}

/// Whether the kernel adds into global memory (`flash.atomic_add`: the
/// nondeterministic backward's dK/dV kernel).
static bool addsAtomically(gpu::LaunchOp launch) {
  return launch.getBody()
      .walk([](flash::AtomicAddOp) { return WalkResult::interrupt(); })
      .wasInterrupted();
}

/// Bufferization gives equal constant tiles one buffer (CSE merged their
/// fills) and copies it into each user's buffer: the dK, dV and dS K
/// accumulators' zero starts at D = 64 are copies of one zero tile. A copy
/// from a buffer that only a constant fill before it writes becomes a fill of
/// the target, so that each accumulator's start is visible where it is used
/// (the mma.sync lowerings start zero-filled accumulators in registers).
/// Done only in kernels that add into global memory (the nondeterministic
/// backward's dK/dV kernel) so far: in the others it frees the shared bytes of
/// the merged tile and so changes kernels measured as they are.
static void fillCopiesOfConstants(gpu::LaunchOp launch) {
  if (!addsAtomically(launch))
    return;
  SmallVector<memref::CopyOp> copies;
  launch.getBody().walk([&](memref::CopyOp copy) { copies.push_back(copy); });
  for (memref::CopyOp copy : copies) {
    auto alloc = copy.getSource().getDefiningOp<memref::AllocOp>();
    if (!alloc)
      continue;
    linalg::FillOp fill;
    bool onlyFilled = true;
    for (Operation *user : alloc->getUsers()) {
      if (auto f = dyn_cast<linalg::FillOp>(user);
          f && !fill && f.getDpsInitOperand(0)->get() == alloc.getResult()) {
        fill = f;
        continue;
      }
      // Reads only: copies from it, or ops that read it as an input.
      if (auto other = dyn_cast<memref::CopyOp>(user);
          other && other.getSource() == alloc.getResult())
        continue;
      if (isa<memref::DeallocOp>(user))
        continue;
      onlyFilled = false;
    }
    if (!onlyFilled || !fill ||
        !matchPattern(fill.getDpsInputOperand(0)->get(), m_Constant()))
      continue;
    Operation *at = fill->getBlock()->findAncestorOpInBlock(*copy);
    if (!at || !fill->isBeforeInBlock(at))
      continue;
    OpBuilder b(copy);
    linalg::FillOp::create(b, copy.getLoc(), fill.getDpsInputOperand(0)->get(),
                           copy.getTarget());
    copy->erase();
  }
}

/// One-shot bufferization can leave a guarded region (a pipelined loop's
/// prologue, loop and epilogue under lb < ub) with buffer results: the then
/// branch yields its own buffer for a running state (allocated in it), the
/// else branch the initial one. With the then branch's allocation moved
/// before the region and the else branch copying the initial state into it,
/// both branches yield that buffer, which then is the result: the register
/// tiles see one buffer per state (the copy is a rename there).
static void foldIfBufferResults(gpu::LaunchOp launch) {
  SmallVector<scf::IfOp> guarded;
  launch.getBody().walk([&](scf::IfOp op) {
    if (op.getNumResults() && op.elseBlock())
      guarded.push_back(op);
  });
  for (scf::IfOp op : guarded) {
    auto thenYield = cast<scf::YieldOp>(op.thenBlock()->getTerminator());
    auto elseYield = cast<scf::YieldOp>(op.elseBlock()->getTerminator());
    bool foldable = llvm::all_of(op.getResults(), [&](OpResult r) {
      Value thenValue = thenYield.getOperand(r.getResultNumber());
      auto alloc = thenValue.getDefiningOp<memref::AllocOp>();
      return isa<MemRefType>(r.getType()) && alloc &&
             alloc->getBlock() == op.thenBlock() && alloc->getNumOperands() == 0 &&
             thenValue.getType() ==
                 elseYield.getOperand(r.getResultNumber()).getType();
    });
    if (!foldable)
      continue;
    OpBuilder eb(elseYield);
    for (OpResult r : op.getResults()) {
      Value thenValue = thenYield.getOperand(r.getResultNumber());
      thenValue.getDefiningOp()->moveBefore(op);
      memref::CopyOp::create(eb, op.getLoc(),
                             elseYield.getOperand(r.getResultNumber()),
                             thenValue);
      r.replaceAllUsesWith(thenValue);
    }
    OpBuilder rb(op);
    auto bare = scf::IfOp::create(rb, op.getLoc(), TypeRange{},
                                  op.getCondition(), /*withElseRegion=*/true);
    for (auto [from, to] :
         {std::pair{&op.getThenRegion(), &bare.getThenRegion()},
          std::pair{&op.getElseRegion(), &bare.getElseRegion()}}) {
      to->front().erase();
      to->takeBody(*from);
      Operation *yield = to->front().getTerminator();
      OpBuilder yb(yield);
      scf::YieldOp::create(yb, op.getLoc());
      yield->erase();
    }
    op.erase();
  }
}

LogicalResult TileMapper::run() {
  // Up to three parallel dims (batch, head, row block); canonicalization
  // drops those of static size 1, which become grid dims of size 1.
  if (forall.getRank() > 3 || !forall.getOutputs().empty())
    return forall.emitError(
               "flash-map-tiles-to-gpu maps a bufferized scf.forall over at "
               "most three dims (batch, head, row block) of a tiled attention; "
               "this one has rank ")
           << forall.getRank()
           << (forall.getOutputs().empty() ? "" : " and tensor outputs");
  for (OpFoldResult lb : forall.getMixedLowerBound())
    if (getConstantIntValue(lb) != 0)
      return forall.emitError("expected zero lower bounds");
  for (OpFoldResult st : forall.getMixedStep())
    if (getConstantIntValue(st) != 1)
      return forall.emitError("expected unit steps");

  OpBuilder b(forall);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  // Grid (x, y, z) = the forall's dims from the last; missing ones are 1.
  SmallVector<Value> ubs = forall.getUpperBound(b);
  while (ubs.size() < 3)
    ubs.insert(ubs.begin(), one);
  Value blockSize = arith::ConstantIndexOp::create(b, loc, threads);
  auto launch = gpu::LaunchOp::create(b, loc, ubs[2], ubs[1], ubs[0], blockSize,
                                      one, one);
  Block &body = launch.getBody().front();
  Block *src = forall.getBody();
  // A copy: getInductionVars() returns a temporary vector.
  SmallVector<Value> ivs = forall.getInductionVars();
  gpu::KernelDim3 blocks = launch.getBlockIds();
  unsigned rank = ivs.size();
  if (persistent) {
    if (failed(buildTileLoop(launch, ubs)))
      return failure();
  } else {
    body.getOperations().splice(body.end(), src->getOperations(), src->begin(),
                                std::prev(src->end()));
    if (rank >= 3)
      ivs[rank - 3].replaceAllUsesWith(blocks.z);
    if (rank >= 2)
      ivs[rank - 2].replaceAllUsesWith(blocks.y);
    // Row blocks last to first: under a causal mask the last query blocks
    // see the most keys, and starting them first shortens the tail of the
    // grid.
    if (rank >= 1) {
      OpBuilder first = OpBuilder::atBlockBegin(&body);
      Value last =
          arith::SubIOp::create(first, loc, launch.getGridSize().x,
                                arith::ConstantIndexOp::create(first, loc, 1));
      ivs[rank - 1].replaceAllUsesWith(
          arith::SubIOp::create(first, loc, last, blocks.x).getResult());
    }
  }
  OpBuilder end = OpBuilder::atBlockEnd(&body);
  gpu::TerminatorOp::create(end, loc);
  forall.erase();

  if (failed(sinkValuesDefinedAbove(launch)))
    return failure();
  foldIfBufferResults(launch);
  fillCopiesOfConstants(launch);
  stageTransposedOperands(launch);
  flash::WarpRegisterTiles inRegisters(launch, threads / 32);
  if (registerTiles && threads % 32 == 0 && tensorCores != TensorCores::None)
    inRegisters.analyze(tensorCores == TensorCores::Wgmma && asyncCopies);
  // Only where the mma.sync or wgmma reduction will take them.
  bool mmaSync = tensorCores == TensorCores::MmaSync ||
                 tensorCores == TensorCores::Auto ||
                 tensorCores == TensorCores::Wgmma;
  if (mmaSync)
    uncarved = reducedInRegisters(launch);
  int64_t bytes = carveSharedMemory(launch, inRegisters, uncarved);
  OpBuilder smem(launch);
  launch->setAttr(flash::kSharedMemoryBytesAttr, smem.getI64IntegerAttr(bytes));
  // Checked before the register tiles are unrolled and the loads expanded:
  // a kernel over the limit never launches, and with head dims in the
  // thousands building it is what takes minutes and gigabytes.
  if (int64_t limit = flash::maxSharedMemoryPerBlock(chip); bytes > limit)
    return launch.emitError("flash-map-tiles-to-gpu: the tiles need ")
           << bytes << " B of shared memory, more than the " << limit
           << " B a CTA may use on "
           << (chip == Chip::Any ? StringRef("any chip") : stringifyChip(chip));
  Value size =
      arith::ConstantOp::create(smem, loc, smem.getI32IntegerAttr(bytes));
  launch.getDynamicSharedMemorySizeMutable().assign(size);

  OpBuilder start = OpBuilder::atBlockBegin(&body);
  Value tid = gpu::ThreadIdOp::create(start, loc, gpu::Dimension::x);
  if (!inRegisters.empty()) {
    if (failed(inRegisters.rewrite(tid, /*pairStores=*/asyncCopies)))
      return failure();
    launch->setAttr("flash.warp_register_tiles", start.getUnitAttr());
    if (inRegisters.usesWgmma())
      launch->setAttr("flash.wgmma", start.getUnitAttr());
  }
  // The LSE and D rows by cp.async too, so far in the atomic backward's
  // dK/dV kernel only (docs/GPU-NOTES.md 56; the other kernels unmeasured).
  bool rowVectors = addsAtomically(launch);
  if (asyncCopies &&
      failed(flash::lowerAsyncTileLoads(
          launch, threads, loadStages, flash::maxSharedMemoryPerBlock(chip),
          tmaLoads && launch->hasAttr("flash.wgmma"), warpSpecialize,
          rowVectors)))
    return failure();
  if (failed(lowerLinalg(launch)))
    return failure();
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
      return par.emitError("flash-map-tiles-to-gpu cannot distribute a "
                           "parallel loop with reductions");
    OpBuilder ob(op);
    distribute(op, ob, gpu::ThreadIdOp::create(ob, loc, gpu::Dimension::x));
  }
  return success();
}

/// The persistent form: the launch body is one loop over the tiles (row
/// block fastest, batch slowest, row blocks last to first as in the plain
/// grid), tile t = this CTA's linear index + k * the grid's CTAs. With the
/// grid as built (one CTA per tile) every CTA runs one tile; a caller may
/// launch fewer CTAs (`flash.persistent`: any count from 1 up), each then
/// walking its share, so that a CTA's end of one tile overlaps the start
/// of its next. The tiles' buffers are allocated once, before the loop
/// (each tile writes them before it reads them).
LogicalResult TileMapper::buildTileLoop(gpu::LaunchOp launch,
                                        ArrayRef<Value> ubs) {
  Block &body = launch.getBody().front();
  Block *src = forall.getBody();
  SmallVector<Value> ivs = forall.getInductionVars();
  unsigned rank = ivs.size();
  OpBuilder b = OpBuilder::atBlockEnd(&body);
  gpu::KernelDim3 blocks = launch.getBlockIds();
  gpu::KernelDim3 grid = launch.getGridSize();
  // ubs: (batch, head, row block), padded with leading ones.
  Value linear = arith::AddIOp::create(
      b, loc, blocks.x,
      arith::MulIOp::create(
          b, loc, grid.x,
          arith::AddIOp::create(
              b, loc, blocks.y,
              arith::MulIOp::create(b, loc, grid.y, blocks.z))));
  Value stride = arith::MulIOp::create(
      b, loc, grid.x, arith::MulIOp::create(b, loc, grid.y, grid.z));
  Value tiles = arith::MulIOp::create(
      b, loc, ubs[2], arith::MulIOp::create(b, loc, ubs[1], ubs[0]));
  auto tileLoop = scf::ForOp::create(b, loc, linear, tiles, stride);
  tileLoop->setAttr(flash::kTileLoopAttr, b.getUnitAttr());
  launch->setAttr(flash::kPersistentAttr, b.getUnitAttr());
  Block *loopBody = tileLoop.getBody();
  loopBody->getOperations().splice(loopBody->begin(), src->getOperations(),
                                   src->begin(), std::prev(src->end()));
  OpBuilder in = OpBuilder::atBlockBegin(loopBody);
  // Every thread is done with the previous tile's buffers.
  gpu::BarrierOp::create(in, loc);
  Value t = tileLoop.getInductionVar();
  Value rowBlock = arith::RemUIOp::create(in, loc, t, ubs[2]);
  Value rest = arith::DivUIOp::create(in, loc, t, ubs[2]);
  Value one = arith::ConstantIndexOp::create(in, loc, 1);
  if (rank >= 3)
    ivs[rank - 3].replaceAllUsesWith(
        arith::DivUIOp::create(in, loc, rest, ubs[1]).getResult());
  if (rank >= 2)
    ivs[rank - 2].replaceAllUsesWith(
        arith::RemUIOp::create(in, loc, rest, ubs[1]).getResult());
  if (rank >= 1)
    ivs[rank - 1].replaceAllUsesWith(
        arith::SubIOp::create(
            in, loc, arith::SubIOp::create(in, loc, ubs[2], one), rowBlock)
            .getResult());
  for (Operation &op : llvm::make_early_inc_range(*loopBody))
    if (auto alloc = dyn_cast<memref::AllocOp>(&op)) {
      if (!alloc.getType().hasStaticShape())
        return alloc.emitError("flash-map-tiles-to-gpu{persistent}: a tile "
                               "of dynamic shape");
      alloc->moveBefore(tileLoop);
      alloc->setAttr(flash::kTileBufferAttr, b.getUnitAttr());
    }
  return success();
}

LogicalResult TileMapper::sinkValuesDefinedAbove(gpu::LaunchOp launch) {
  // Everything but the tensors' memrefs is recomputed inside, so that the
  // kernel's parameters are exactly the function's memref arguments.
  llvm::SetVector<Value> above;
  getUsedValuesDefinedAbove(launch.getBody(), above);
  Block &body = launch.getBody().front();
  IRMapping mapping;
  OpBuilder b = OpBuilder::atBlockBegin(&body);
  std::function<LogicalResult(Value)> materialize =
      [&](Value v) -> LogicalResult {
    if (mapping.contains(v) || isa<BlockArgument>(v))
      return success();
    Operation *def = v.getDefiningOp();
    if (!isMemoryEffectFree(def) || def->getNumRegions())
      return launch.emitError("flash-map-tiles-to-gpu: the kernel needs ")
             << v << " which is not a pure computation of its arguments";
    for (Value operand : def->getOperands())
      if (failed(materialize(operand)))
        return failure();
    b.clone(*def, mapping);
    return success();
  };
  for (Value v : above) {
    if (isa<MemRefType>(v.getType())) {
      if (!isa<BlockArgument>(v))
        return launch.emitError("flash-map-tiles-to-gpu: the kernel reads a "
                                "buffer that is not a function argument");
      continue;
    }
    if (failed(materialize(v)))
      return failure();
  }
  for (auto [from, to] : mapping.getValueMap())
    replaceAllUsesInRegionWith(from, to, launch.getBody());
  return success();
}

int64_t
TileMapper::carveSharedMemory(gpu::LaunchOp launch,
                              const flash::WarpRegisterTiles &inRegisters,
                              const llvm::SmallPtrSet<Operation *, 2> &skip) {
  SmallVector<memref::AllocOp> allocs;
  launch.getBody().walk([&](memref::AllocOp a) {
    if (!inRegisters.contains(a.getResult()) && !skip.contains(a))
      allocs.push_back(a);
  });
  if (allocs.empty())
    return 0;
  Block &body = launch.getBody().front();
  OpBuilder b = OpBuilder::atBlockBegin(&body);
  auto workgroup =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  Value base = gpu::DynamicSharedMemoryOp::create(
      b, loc,
      MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                      MemRefLayoutAttrInterface(), workgroup));
  // Swizzled tiles sit at 1024-byte offsets from a base that must itself be
  // 1024-byte aligned in the shared window (it is: nothing else is there).
  if (inRegisters.usesWgmma()) {
    Value address = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, base);
    Value misaligned = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::ne,
        arith::RemUIOp::create(b, loc, address,
                               arith::ConstantIndexOp::create(b, loc, 1024)),
        arith::ConstantIndexOp::create(b, loc, 0));
    auto guard = scf::IfOp::create(b, loc, misaligned, /*withElseRegion=*/false);
    OpBuilder trap = guard.getThenBodyBuilder();
    LLVM::Trap::create(trap, loc);
  }
  // Buffers whose live ranges do not overlap share bytes.
  flash::BufferLiveness liveness(launch);
  struct Placed {
    int64_t first, last, offset, bytes;
  };
  // Live ranges first: creating the views below shifts op positions.
  SmallVector<std::pair<int64_t, int64_t>> ranges;
  for (memref::AllocOp alloc : allocs)
    ranges.push_back(liveness.range(alloc.getResult()));
  SmallVector<Placed> placed;
  int64_t total = 0;
  for (auto [alloc, range] : llvm::zip(allocs, ranges)) {
    auto [first, last] = range;
    MemRefType type = alloc.getType();
    int64_t elementBytes = llvm::divideCeil(type.getElementTypeBitWidth(), 8);
    // ldmatrix reads eight 16-byte row segments at once: they fall in
    // distinct banks only when the row stride is an odd number of 16-byte
    // units (128-byte rows would conflict 8 ways, 192-byte rows 2 ways).
    // With the warp mapping (whose shared-memory reads all take strided
    // layouts), even strides get 16 bytes of padding.
    // Tiles read by wgmma are swizzled instead (the descriptors name the
    // layout; the swizzle pattern repeats every 1024 bytes).
    bool swizzled = inRegisters.isSwizzled(alloc.getResult());
    SmallVector<int64_t> allocated(type.getShape());
    int64_t rowBytes =
        type.getRank() == 2 ? type.getDimSize(1) * elementBytes : 0;
    if (!inRegisters.empty() && !swizzled && rowBytes % 16 == 0 &&
        (rowBytes / 16) % 2 == 0)
      allocated[1] += 16 / elementBytes;
    int64_t alignment = swizzled ? 1024 : 128;
    int64_t bytes = elementBytes;
    for (int64_t d : allocated)
      bytes *= d;
    // Lowest aligned offset (WMMA fragment loads need 32-byte aligned rows)
    // free during [first, last].
    int64_t offset = 0;
    for (bool moved = true; moved;) {
      moved = false;
      for (const Placed &p : placed) {
        bool liveTogether = p.first <= last && first <= p.last;
        bool overlap = p.offset < offset + bytes && offset < p.offset + p.bytes;
        if (liveTogether && overlap) {
          offset = llvm::alignTo(p.offset + p.bytes, alignment);
          moved = true;
        }
      }
    }
    placed.push_back({first, last, offset, bytes});
    total = std::max(total, offset + bytes);

    Value shift = arith::ConstantIndexOp::create(b, loc, offset);
    auto shared = MemRefType::get(allocated, type.getElementType(),
                                  MemRefLayoutAttrInterface(), workgroup);
    Value view =
        memref::ViewOp::create(b, loc, shared, base, shift, ValueRange{});
    if (allocated != type.getShape()) {
      SmallVector<OpFoldResult> zeros(2, b.getIndexAttr(0)),
          ones(2, b.getIndexAttr(1));
      view = memref::SubViewOp::create(
          b, loc, view, zeros,
          getAsIndexOpFoldResult(b.getContext(), type.getShape()), ones);
    }
    auto viewType = cast<MemRefType>(view.getType());
    Value generic = memref::MemorySpaceCastOp::create(
        b, loc,
        MemRefType::get(viewType.getShape(), viewType.getElementType(),
                        viewType.getLayout()),
        view);
    if (swizzled)
      generic.getDefiningOp()->setAttr(flash::kSwizzledAttr, b.getUnitAttr());
    for (Operation *user : llvm::make_early_inc_range(alloc->getUsers())) {
      if (isa<memref::DeallocOp>(user)) {
        user->erase();
      } else if (auto sub = dyn_cast<memref::SubViewOp>(user);
                 sub && generic.getType() != type) {
        // Views of a padded tile have its row stride.
        OpBuilder vb(sub);
        Value padded = memref::SubViewOp::create(
            vb, sub.getLoc(), generic, sub.getMixedOffsets(),
            sub.getMixedSizes(), sub.getMixedStrides());
        sub.replaceAllUsesWith(padded);
        sub.erase();
      }
    }
    alloc.replaceAllUsesWith(generic);
    alloc.erase();
  }
  return total;
}

void TileMapper::distribute(Operation *op, OpBuilder &b, Value tid) {
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

/// A loop in which each warp takes the 16 x `tileCols` tiles of an m x n
/// result in turn; returns it with the tile's origin, `b` inside its body.
std::tuple<scf::ForOp, Value, Value> TileMapper::warpTiles(OpBuilder &b,
                                                           Value tid, int64_t m,
                                                           int64_t n,
                                                           int64_t tileCols) {
  auto idx = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  Value warp = arith::DivUIOp::create(b, loc, tid, idx(32));
  int64_t tilesN = n / tileCols;
  auto tiles = scf::ForOp::create(b, loc, warp, idx((m / 16) * tilesN),
                                  idx(threads / 32));
  b.setInsertionPointToStart(tiles.getBody());
  Value t = tiles.getInductionVar();
  Value row = arith::MulIOp::create(
      b, loc, arith::DivUIOp::create(b, loc, t, idx(tilesN)), idx(16));
  Value col = arith::MulIOp::create(
      b, loc, arith::RemUIOp::create(b, loc, t, idx(tilesN)), idx(tileCols));
  return {tiles, row, col};
}

/// C += A * B on tensor cores: each warp takes 16x16 tiles of C in turn and
/// accumulates over K in steps of 16 with WMMA fragments.
bool TileMapper::emitWarpMatmul(linalg::GenericOp op, Value tid) {
  auto operands = flash::matchTileContraction(op);
  if (!operands || !operands->hasIdentityLayouts() || operands->transposeA ||
      !cast<MemRefType>(operands->a.getType()).getElementType().isF16())
    return false; // WMMA fragments exist for f16 only
  auto [a, bm, c, transposeB, transposeA] = *operands;
  auto aType = cast<MemRefType>(a.getType());
  auto cType = cast<MemRefType>(c.getType());
  int64_t m = cType.getDimSize(0), n = cType.getDimSize(1),
          k = aType.getDimSize(1);
  int64_t ldb = cast<MemRefType>(bm.getType()).getDimSize(1);
  OpBuilder b(op);
  Type f16 = b.getF16Type(), f32 = b.getF32Type();
  auto frag = [&](Type t, StringRef kind) {
    return gpu::MMAMatrixType::get({16, 16}, t, kind);
  };
  auto idx = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  {
    OpBuilder::InsertionGuard g(b);
    auto [tiles, row, col] = warpTiles(b, tid, m, n, 16);
    Value acc = gpu::SubgroupMmaLoadMatrixOp::create(
        b, loc, frag(f32, "COp"), c, ValueRange{row, col}, b.getIndexAttr(n),
        UnitAttr());
    // K is a compile-time multiple of 16: the steps are unrolled (fragments
    // cannot be loop-carried through the NVVM lowering).
    for (int64_t step = 0; step < k; step += 16) {
      Value kk = idx(step);
      Value fa = gpu::SubgroupMmaLoadMatrixOp::create(
          b, loc, frag(f16, "AOp"), a, ValueRange{row, kk}, b.getIndexAttr(k),
          UnitAttr());
      // B[kk.., col..] of a [K, N] buffer, or of an [N, K] buffer read
      // column-major when the contraction uses Bᵀ.
      Value fb = transposeB
                     ? gpu::SubgroupMmaLoadMatrixOp::create(
                           b, loc, frag(f16, "BOp"), bm, ValueRange{col, kk},
                           b.getIndexAttr(ldb), b.getUnitAttr())
                     : gpu::SubgroupMmaLoadMatrixOp::create(
                           b, loc, frag(f16, "BOp"), bm, ValueRange{kk, col},
                           b.getIndexAttr(ldb), UnitAttr());
      acc = gpu::SubgroupMmaComputeOp::create(b, loc, fa, fb, acc, UnitAttr(),
                                              UnitAttr());
    }
    gpu::SubgroupMmaStoreMatrixOp::create(b, loc, acc, c, ValueRange{row, col},
                                          b.getIndexAttr(n), UnitAttr());
  }
  gpu::BarrierOp::create(b, loc);
  op->erase();
  return true;
}

/// The zero fill of `c` that contraction `op` is the first to read: found
/// back in `op`'s block past ops that name no view of `c`'s tile; null if
/// none.
static linalg::FillOp findZeroFill(linalg::GenericOp op, Value c) {
  // The buffer a view is of, up to the carved tile (a view of the shared
  // window that tiles live apart in).
  auto tileOf = [](Value v) {
    while (Operation *def = v.getDefiningOp()) {
      auto view = dyn_cast<ViewLikeOpInterface>(def);
      if (!view || isa<memref::MemorySpaceCastOp>(def))
        break;
      v = view.getViewSource();
    }
    return v;
  };
  Value tile = tileOf(c);
  auto names = [&](Operation *p) {
    return p
        ->walk([&](Operation *q) {
          return llvm::any_of(q->getOperands(),
                              [&](Value v) {
                                return isa<MemRefType>(v.getType()) &&
                                       tileOf(v) == tile;
                              })
                     ? WalkResult::interrupt()
                     : WalkResult::advance();
        })
        .wasInterrupted();
  };
  for (Operation *p = op->getPrevNode(); p; p = p->getPrevNode()) {
    if (auto fill = dyn_cast<linalg::FillOp>(p);
        fill && fill.getDpsInitOperand(0)->get() == c)
      return matchPattern(fill.getDpsInputOperand(0)->get(), m_AnyZeroFloat())
                 ? fill
                 : nullptr;
    if (names(p))
      return nullptr;
  }
  return nullptr;
}

namespace {
/// mma.sync.m16n8k16.row.col (f16 or bf16 in, f32 accumulate) on the
/// operands of one tile contraction: A and B fragments read from their
/// buffers, with ldmatrix where both are shared tiles, and the MMA. Fragment
/// layout (PTX ISA, lane = 4 g + t): A holds rows g and g+8, columns 2t,
/// 2t+1 and 2t+8, 2t+9 of the 16x16 A tile; B holds rows 2t, 2t+1, 2t+8,
/// 2t+9 of column g; C holds rows g and g+8, columns 2t and 2t+1.
class MmaSyncFragments {
public:
  /// Lane-dependent values are built at `b`'s insertion point.
  MmaSyncFragments(OpBuilder &b, Location loc,
                   const flash::TileContraction &operands, Value tid)
      : b(b), loc(loc), m(operands) {
    Type et = cast<MemRefType>(m.a.getType()).getElementType();
    bf16 = et.isBF16();
    pairType = VectorType::get({2}, et);
    Value lane = arith::RemUIOp::create(b, loc, tid, idx(32));
    g = arith::DivUIOp::create(b, loc, lane, idx(4));
    t2 = arith::MulIOp::create(
        b, loc, arith::RemUIOp::create(b, loc, lane, idx(4)), idx(2));
    // ldmatrix: lane l gives the address of row l % 8 of 8x8 matrix l / 8.
    sharedA = flash::getWorkgroupView(m.a);
    sharedB = flash::getWorkgroupView(m.b);
    lane8 = arith::RemUIOp::create(b, loc, lane, idx(8));
    Value matrix = arith::DivUIOp::create(b, loc, lane, idx(8));
    upper = arith::MulIOp::create(
        b, loc, arith::RemUIOp::create(b, loc, matrix, idx(2)), idx(8));
    right = arith::MulIOp::create(
        b, loc, arith::DivUIOp::create(b, loc, matrix, idx(2)), idx(8));
  }

  /// The 16 x 16 A tile at rows [row, row + 16), K [step, step + 16).
  SmallVector<Value> loadA(Value row, int64_t step) {
    if (!ldmatrix()) {
      Value rowLo = add(row, g), rowHi = add(rowLo, 8);
      Value ka = add(t2, step);
      return {pack(loadA(rowLo, ka), loadA(rowLo, add(ka, 1))),
              pack(loadA(rowHi, ka), loadA(rowHi, add(ka, 1))),
              pack(loadA(rowLo, add(ka, 8)), loadA(rowLo, add(ka, 9))),
              pack(loadA(rowHi, add(ka, 8)), loadA(rowHi, add(ka, 9)))};
    }
    // Matrices (rows 0-7 | 8-15) x (k 0-7 | 8-15) -> a0..a3. A stored
    // [K, M]: the same matrices from rows k of the buffer, transposed.
    Value aRow, aCol;
    if (m.transposeA) {
      aRow = add(add(right, lane8), step);
      aCol = add(row, upper);
    } else {
      aRow = add(add(row, lane8), upper);
      aCol = add(right, step);
    }
    return registers(nvgpu::LdMatrixOp::create(
                         b, loc,
                         VectorType::get({4, 2}, pairType.getElementType()),
                         sharedA, ValueRange{aRow, aCol},
                         b.getBoolAttr(m.transposeA), b.getI32IntegerAttr(4)),
                     4);
  }

  /// The 16 x 8 B tile at K [step, step + 16), columns [col, col + 8).
  SmallVector<Value> loadB(Value col, int64_t step) {
    if (!ldmatrix()) {
      Value colB = add(col, g), kb = add(t2, step);
      return {pack(loadB(kb, colB), loadB(add(kb, 1), colB)),
              pack(loadB(add(kb, 8), colB), loadB(add(kb, 9), colB))};
    }
    // K 0-7 and 8-15 of the 8 columns; Kᵀ is read straight, V transposed.
    Value bRow, bCol;
    if (m.transposeB) {
      bRow = add(col, lane8);
      bCol = add(upper, step);
    } else {
      bRow = add(add(lane8, upper), step);
      bCol = col;
    }
    return registers(nvgpu::LdMatrixOp::create(
                         b, loc,
                         VectorType::get({2, 2}, pairType.getElementType()),
                         sharedB, ValueRange{bRow, bCol},
                         b.getBoolAttr(!m.transposeB), b.getI32IntegerAttr(2)),
                     2);
  }

  /// acc + A B for one 16 x 8 tile of C.
  SmallVector<Value> mma(ArrayRef<Value> fa, ArrayRef<Value> fb,
                         ArrayRef<Value> acc) {
    Type f32 = b.getF32Type();
    Type resultType =
        LLVM::LLVMStructType::getLiteral(b.getContext(), {f32, f32, f32, f32});
    NVVM::MMATypes ptxType = bf16 ? NVVM::MMATypes::bf16 : NVVM::MMATypes::f16;
    Value d = NVVM::MmaOp::create(
        b, loc, resultType, fa, fb, acc, {16, 8, 16}, std::nullopt,
        std::nullopt, std::array<NVVM::MMATypes, 2>{ptxType, ptxType},
        std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                       NVVM::MMALayout::col});
    SmallVector<Value> out;
    for (int64_t i = 0; i < 4; ++i)
      out.push_back(
          LLVM::ExtractValueOp::create(b, loc, d, ArrayRef<int64_t>{i}));
    return out;
  }

  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value add(Value x, int64_t v) {
    return v == 0 ? x : arith::AddIOp::create(b, loc, x, idx(v)).getResult();
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }

  /// lane / 4 and 2 (lane % 4): C's rows g, g + 8 and columns 2t, 2t + 1.
  Value g, t2;

private:
  bool ldmatrix() const { return sharedA && sharedB; }
  Value load(Value buf, Value r, Value c) {
    return memref::LoadOp::create(b, loc, buf, ValueRange{r, c});
  }
  Value loadA(Value mm, Value kk) {
    return m.transposeA ? load(m.a, kk, mm) : load(m.a, mm, kk);
  }
  Value loadB(Value kk, Value nn) {
    return m.transposeB ? load(m.b, nn, kk) : load(m.b, kk, nn);
  }
  /// As an mma.sync operand register: two 16-bit elements as vector<2xf16>,
  /// or as i32 for bf16.
  Value word(Value pair) {
    if (!bf16)
      return pair;
    Value w = vector::BitCastOp::create(
        b, loc, VectorType::get({1}, b.getI32Type()), pair);
    return vector::ExtractOp::create(b, loc, w, ArrayRef<int64_t>{0});
  }
  Value pack(Value x, Value y) {
    return word(
        vector::FromElementsOp::create(b, loc, pairType, ValueRange{x, y}));
  }
  SmallVector<Value> registers(Value tiles, int64_t count) {
    SmallVector<Value> regs;
    for (int64_t i = 0; i < count; ++i)
      regs.push_back(
          word(vector::ExtractOp::create(b, loc, tiles, ArrayRef<int64_t>{i})));
    return regs;
  }

  OpBuilder &b;
  Location loc;
  flash::TileContraction m;
  bool bf16;
  VectorType pairType;
  Value sharedA, sharedB, lane8, upper, right;
};
} // namespace

/// C += A * B with mma.sync: each warp takes 16x8 tiles of C in turn.
bool TileMapper::emitWarpMmaSync(linalg::GenericOp op, Value tid) {
  // Any layout matchTileContraction takes (rows of unit stride): the
  // fragments are read element by element or by ldmatrix row addresses, so
  // the padded rows of a register-tile kernel's shared tiles work too.
  auto operands = flash::matchTileContraction(op);
  if (!operands)
    return false;
  Value a = operands->a, c = operands->c;
  auto cType = cast<MemRefType>(c.getType());
  int64_t m = cType.getDimSize(0), n = cType.getDimSize(1),
          k = cast<MemRefType>(a.getType())
                  .getDimSize(operands->transposeA ? 0 : 1);
  OpBuilder b(op);
  MmaSyncFragments frag(b, loc, *operands, tid);
  OpBuilder::InsertionGuard guard(b);
  auto [tiles, row, col] = warpTiles(b, tid, m, n, 8);
  Value rowLo = frag.add(row, frag.g), rowHi = frag.add(rowLo, 8);
  Value colC = frag.add(col, frag.t2), colC1 = frag.add(colC, 1);
  auto load = [&](Value r, Value cc) -> Value {
    return memref::LoadOp::create(b, loc, c, ValueRange{r, cc});
  };
  // C zero-filled just before: the fill is dropped and the accumulators
  // start at zero.
  linalg::FillOp zeroFill = findZeroFill(op, c);
  SmallVector<Value> acc;
  if (zeroFill) {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPoint(tiles);
    acc.assign(4, arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0)));
  } else {
    acc = {load(rowLo, colC), load(rowLo, colC1), load(rowHi, colC),
           load(rowHi, colC1)};
  }
  for (int64_t step = 0; step < k; step += 16)
    acc = frag.mma(frag.loadA(row, step), frag.loadB(col, step), acc);
  memref::StoreOp::create(b, loc, acc[0], c, ValueRange{rowLo, colC});
  memref::StoreOp::create(b, loc, acc[1], c, ValueRange{rowLo, colC1});
  memref::StoreOp::create(b, loc, acc[2], c, ValueRange{rowHi, colC});
  memref::StoreOp::create(b, loc, acc[3], c, ValueRange{rowHi, colC1});
  b.setInsertionPoint(op);
  gpu::BarrierOp::create(b, loc);
  op->erase();
  if (zeroFill)
    zeroFill->erase();
  return true;
}

/// The `flash.atomic_add` that adds contraction `op`'s C, zero-filled before
/// it, into global memory right after it (past views only) and so is C's
/// only reader: the nondeterministic backward's dS K of one step. Null if
/// the IR has another shape.
static flash::AtomicAddOp findAtomicAddOfResult(linalg::GenericOp op, Value c) {
  for (Operation *p = op->getNextNode(); p; p = p->getNextNode()) {
    if (auto add = dyn_cast<flash::AtomicAddOp>(p)) {
      Value tile = add.getTile();
      if (auto view = tile.getDefiningOp<memref::SubViewOp>();
          view && view.getSource() == c && view.hasZeroOffset() &&
          view.hasUnitStride() &&
          view.getStaticSizes().back() ==
              cast<MemRefType>(c.getType()).getDimSize(1))
        return add;
      return tile == c ? add : nullptr;
    }
    if (!isa<memref::SubViewOp, arith::ConstantOp>(p))
      return nullptr;
  }
  return nullptr;
}

/// A contraction whose zero-filled C goes only to a `flash.atomic_add`
/// (FlashAttention-2's dQ += dS K): mma.sync with the accumulators in
/// registers and the reductions straight from them, as FA2 adds its dQ, so
/// C never goes to shared memory. Each warp takes 16-row strips of C times
/// column chunks of at most 64 (as many chunks per strip as make the warps
/// busy), holds a chunk's accumulators over the whole K loop, reads each A
/// fragment once per chunk, and adds its two adjacent columns per row with
/// one reduction (rows past the tile's valid ones are skipped).
bool TileMapper::emitWarpMmaReduce(linalg::GenericOp op, Value tid) {
  auto operands = flash::matchTileContraction(op);
  if (!operands)
    return false;
  Value a = operands->a, c = operands->c;
  linalg::FillOp zeroFill = findZeroFill(op, c);
  flash::AtomicAddOp atomic = findAtomicAddOfResult(op, c);
  if (!zeroFill || !atomic)
    return false;
  auto cType = cast<MemRefType>(c.getType());
  int64_t m = cType.getDimSize(0), n = cType.getDimSize(1),
          k = cast<MemRefType>(a.getType())
                  .getDimSize(operands->transposeA ? 0 : 1);
  int64_t warps = threads / 32, strips = m / 16, tilesN = n / 8;
  // Chunks per strip: enough to give every warp one, dividing the 8-column
  // tiles, each at most 64 columns wide (32 accumulators per lane).
  int64_t chunks = std::max<int64_t>(1, warps / strips);
  while (tilesN % chunks)
    --chunks;
  while (tilesN / chunks > 8 && tilesN % (2 * chunks) == 0)
    chunks *= 2;
  int64_t chunkCols = n / chunks;

  // Built where the addition is: its views are defined by then, and
  // nothing between the contraction and it writes A or B.
  OpBuilder b(atomic);
  Value dest = atomic.getDest();
  trapUnlessUnitInnerStride(b, loc, dest);
  Value valid = b.createOrFold<memref::DimOp>(loc, atomic.getTile(), 0);
  MmaSyncFragments frag(b, loc, *operands, tid);
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0));
  {
    OpBuilder::InsertionGuard guard(b);
    auto [tiles, row, col] = warpTiles(b, tid, m, n, chunkCols);
    SmallVector<SmallVector<Value>> acc(chunkCols / 8,
                                        SmallVector<Value>(4, zero));
    SmallVector<Value> cols;
    for (int64_t j = 0; j < chunkCols / 8; ++j)
      cols.push_back(frag.add(col, 8 * j));
    for (int64_t step = 0; step < k; step += 16) {
      SmallVector<Value> fa = frag.loadA(row, step);
      for (auto [j, colJ] : llvm::enumerate(cols))
        acc[j] = frag.mma(fa, frag.loadB(colJ, step), acc[j]);
    }
    auto pairType = VectorType::get({2}, b.getF32Type());
    for (int64_t half = 0; half < 2; ++half) {
      Value r = frag.add(frag.add(row, frag.g), 8 * half);
      Value inside =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, r, valid);
      auto guarded =
          scf::IfOp::create(b, loc, inside, /*withElseRegion=*/false);
      OpBuilder in = guarded.getThenBodyBuilder();
      for (auto [j, colJ] : llvm::enumerate(cols)) {
        Value pair = vector::FromElementsOp::create(
            in, loc, pairType,
            ValueRange{acc[j][2 * half], acc[j][2 * half + 1]});
        Value cc = arith::AddIOp::create(in, loc, colJ, frag.t2);
        flashgpu::ReduceAddOp::create(in, loc, pair, dest, ValueRange{r, cc});
      }
    }
  }
  atomic->erase();
  op->erase();
  zeroFill->erase();
  return true;
}
/// The same contraction (role GradQueryBlock, A the staged dSᵀ) on
/// Hopper's warpgroup MMA, in kernels whose tiles are swizzled for it: each
/// warpgroup computes its share (`splitWarpgroupReduce`) with A read m-major
/// and B ([keys, D] rows) through descriptors, the accumulators held in
/// registers over the whole key range, then adds its two adjacent columns
/// per row with one reduction, as the mma.sync form does (wgmma's
/// accumulator layout is mma.sync's per warp: warp w of the warpgroup holds
/// rows 16 w + g and 16 w + g + 8 of each 64-row slice).
bool TileMapper::emitWarpgroupMmaReduce(linalg::GenericOp op, Value tid) {
  auto operands = flash::matchTileContraction(op);
  if (!operands || !operands->transposeA ||
      flash::getContraction(op) != flash::Contraction::GradQueryBlock)
    return false;
  Value a = operands->a, bTile = operands->b, c = operands->c;
  auto swizzledTile = [](Value v) {
    Operation *def = v.getDefiningOp();
    return def && def->hasAttr(flash::kSwizzledAttr);
  };
  linalg::FillOp zeroFill = findZeroFill(op, c);
  flash::AtomicAddOp atomic = findAtomicAddOfResult(op, c);
  if (!zeroFill || !atomic || !swizzledTile(a) || !swizzledTile(bTile))
    return false;
  auto cType = cast<MemRefType>(c.getType());
  auto aType = cast<MemRefType>(a.getType());
  auto bType = cast<MemRefType>(bTile.getType());
  int64_t m = cType.getDimSize(0), n = cType.getDimSize(1);
  int64_t keys = aType.getDimSize(0), warpgroups = threads / 128;
  std::optional<flash::WarpgroupReduceSplit> split =
      flash::splitWarpgroupReduce(m, n, warpgroups);
  if (!split)
    return false;

  OpBuilder b(atomic);
  auto idx = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  auto i32 = [&](int64_t v) -> Value {
    return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(v));
  };
  // The staged dSᵀ was written by the generic proxy: fenced towards the
  // async proxy by every writer before the barrier that publishes it.
  for (Operation *p = op->getPrevNode(); p; p = p->getPrevNode())
    if (auto barrier = dyn_cast<gpu::BarrierOp>(p)) {
      OpBuilder fb(barrier);
      NVVM::FenceProxyOp::create(
          fb, loc, NVVM::ProxyKind::async_shared,
          NVVM::SharedSpaceAttr::get(b.getContext(),
                                     NVVM::SharedSpace::shared_cta));
      break;
    }
  Value dest = atomic.getDest();
  trapUnlessUnitInnerStride(b, loc, dest);
  Value valid = b.createOrFold<memref::DimOp>(loc, atomic.getTile(), 0);

  // This warpgroup's share: slices [firstSlice, + split->slices), columns
  // [firstCol, + split->cols).
  Value group = arith::DivUIOp::create(b, loc, tid, idx(128));
  int64_t sliceGroups = (m / 64) / split->slices;
  Value sliceGroup = arith::RemUIOp::create(b, loc, group, idx(sliceGroups));
  Value colGroup = arith::DivUIOp::create(b, loc, group, idx(sliceGroups));
  Value firstRow =
      arith::MulIOp::create(b, loc, sliceGroup, idx(64 * split->slices));
  Value firstCol = arith::MulIOp::create(b, loc, colGroup, idx(split->cols));
  auto toI32 = [&](Value v) -> Value {
    return arith::IndexCastUIOp::create(b, loc, b.getI32Type(), v);
  };
  // A [keys, m]: slice s is panel s (keys * 128 bytes); B [keys, n]: the
  // share's first panel likewise.
  Value aDesc = arith::AddIOp::create(
      b, loc, flash::wgmmaDescriptorLow(b, loc, a, keys * 128),
      arith::MulIOp::create(b, loc, toI32(sliceGroup),
                            i32(split->slices * keys * 128 / 16)));
  int64_t bRows = bType.getDimSize(0);
  Value bDesc = arith::AddIOp::create(
      b, loc, flash::wgmmaDescriptorLow(b, loc, bTile, bRows * 128),
      arith::MulIOp::create(b, loc, toI32(colGroup),
                            i32((split->cols / 64) * bRows * 128 / 16)));
  int64_t perSlice = split->cols / 2;
  auto accType = VectorType::get({split->slices * perSlice}, b.getF32Type());
  Type et = aType.getElementType();
  Value acc = flashgpu::WarpgroupMmaOp::create(
      b, loc, accType, /*accumulator=*/Value(), aDesc, /*a_fragments=*/Value(),
      bDesc, split->cols, keys / 16, split->slices, et,
      b.getI64IntegerAttr(keys), bRows, /*b_k_major=*/false,
      /*a_m_major=*/true);
  if (std::optional<flash::Contraction> role = flash::getContraction(op))
    flash::setContraction(acc.getDefiningOp(), *role);

  Value lane = arith::RemUIOp::create(b, loc, tid, idx(32));
  Value g = arith::DivUIOp::create(b, loc, lane, idx(4));
  Value t2 = arith::MulIOp::create(
      b, loc, arith::RemUIOp::create(b, loc, lane, idx(4)), idx(2));
  Value warp = arith::RemUIOp::create(
      b, loc, arith::DivUIOp::create(b, loc, tid, idx(32)), idx(4));
  Value warpRow = arith::AddIOp::create(
      b, loc, firstRow,
      arith::AddIOp::create(b, loc,
                            arith::MulIOp::create(b, loc, warp, idx(16)), g));
  Value laneCol = arith::AddIOp::create(b, loc, firstCol, t2);

  auto pairType = VectorType::get({2}, b.getF32Type());
  for (int64_t slice = 0; slice < split->slices; ++slice)
    for (int64_t half = 0; half < 2; ++half) {
      Value r =
          arith::AddIOp::create(b, loc, warpRow, idx(64 * slice + 8 * half));
      Value inside =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, r, valid);
      auto guarded =
          scf::IfOp::create(b, loc, inside, /*withElseRegion=*/false);
      OpBuilder in = guarded.getThenBodyBuilder();
      for (int64_t j = 0; j < split->cols / 8; ++j) {
        int64_t e = slice * perSlice + 4 * j + 2 * half;
        Value pair = vector::FromElementsOp::create(
            in, loc, pairType,
            ValueRange{
                vector::ExtractOp::create(in, loc, acc, ArrayRef<int64_t>{e}),
                vector::ExtractOp::create(in, loc, acc,
                                          ArrayRef<int64_t>{e + 1})});
        Value cc = arith::AddIOp::create(
            in, loc, laneCol, arith::ConstantIndexOp::create(in, loc, 8 * j));
        flashgpu::ReduceAddOp::create(in, loc, pair, dest, ValueRange{r, cc});
      }
    }
  atomic->erase();
  op->erase();
  zeroFill->erase();
  return true;
}

LogicalResult TileMapper::lowerLinalg(gpu::LaunchOp launch) {
  // auto: WMMA where it exists (f16: its vector fragment loads measured
  // 1.7x faster than this mma.sync lowering's scalar ones), mma.sync else.
  bool wmma =
      tensorCores == TensorCores::Wmma || tensorCores == TensorCores::Auto;
  bool mmaSync = tensorCores == TensorCores::MmaSync ||
                 tensorCores == TensorCores::Auto ||
                 tensorCores == TensorCores::Wgmma;
  // Contractions first (each op is replaced where it is, so the order does
  // not matter): the mma.sync lowering may take over the zero fill of its
  // C, which then is not lowered on its own.
  SmallVector<linalg::GenericOp> contractions;
  launch.getBody().walk([&](linalg::GenericOp op) {
    if (flash::matchTileContraction(op))
      contractions.push_back(op);
  });
  for (linalg::GenericOp generic : contractions) {
    OpBuilder tb(generic);
    Value tid = gpu::ThreadIdOp::create(tb, loc, gpu::Dimension::x);
    if (!(launch->hasAttr("flash.wgmma") &&
          emitWarpgroupMmaReduce(generic, tid)) &&
        !(mmaSync && emitWarpMmaReduce(generic, tid)) &&
        !(wmma && emitWarpMatmul(generic, tid)) &&
        !(mmaSync && emitWarpMmaSync(generic, tid)))
      tid.getDefiningOp()->erase();
  }
  // The Cs that the reductions kept in registers (never carved).
  for (Operation *alloc : uncarved) {
    for (Operation *user : llvm::make_early_inc_range(alloc->getUsers()))
      if (isa<memref::DeallocOp>(user) ||
          (isa<ViewLikeOpInterface>(user) && user->use_empty()))
        user->erase();
    if (!alloc->use_empty())
      return alloc->emitError("flash-map-tiles-to-gpu: a tile without "
                              "shared memory is still used");
    alloc->erase();
  }
  uncarved.clear();
  SmallVector<linalg::LinalgOp> ops;
  launch.getBody().walk([&](linalg::LinalgOp op) { ops.push_back(op); });
  IRRewriter rewriter(launch.getContext());
  for (linalg::LinalgOp op : ops) {
    rewriter.setInsertionPoint(op);
    if (failed(linalg::linalgOpToParallelLoops(rewriter, op)))
      return op.emitError("flash-map-tiles-to-gpu: cannot lower to loops");
    rewriter.eraseOp(op);
  }
  return success();
}

bool flash::exceedsSharedMemory(Operation *op, Chip chip) {
  int64_t limit = maxSharedMemoryPerBlock(chip);
  return op
      ->walk([&](gpu::LaunchOp launch) {
        auto bytes = launch->getAttrOfType<IntegerAttr>(kSharedMemoryBytesAttr);
        return bytes && bytes.getInt() > limit ? WalkResult::interrupt()
                                               : WalkResult::advance();
      })
      .wasInterrupted();
}

namespace {
struct FlashMapTilesToGPUPass
    : flash::impl::FlashMapTilesToGPUPassBase<FlashMapTilesToGPUPass> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<scf::ForallOp> foralls;
    getOperation().walk([&](scf::ForallOp forall) {
      if (!forall->getParentOfType<scf::ForallOp>())
        foralls.push_back(forall);
    });
    // CUDA launches at most 1024 threads per block; a larger .maxntid makes
    // a kernel that never runs. Below a whole warp every distributed loop
    // runs on fewer lanes than the hardware has (and LLVM took 28 s to
    // unroll the one-thread backward's), so blocks are whole warps.
    if (threads <= 0 || threads > 1024 || threads % 32 != 0) {
      emitError(getOperation().getLoc(),
                "flash-map-tiles-to-gpu: threads must be a multiple of 32 (whole "
                "warps) between 32 and 1024 (CUDA's limit per block), not ")
          << static_cast<int64_t>(threads);
      return signalPassFailure();
    }
    if (loadStages != 1 && loadStages != 2) {
      emitError(getOperation().getLoc(),
                "flash-map-tiles-to-gpu: load-stages must be 1 or 2 (copies of "
                "each key-block tile), not ")
          << static_cast<int64_t>(loadStages);
      return signalPassFailure();
    }
    // Hopper's warpgroup MMA exists on sm_90a only.
    TensorCores cores = flash::resolveTensorCores(tensorCores, chip);
    if (cores == TensorCores::Wgmma && chip != Chip::Any &&
        chip != Chip::Sm90a && !foralls.empty()) {
      foralls.front().emitError("flash-map-tiles-to-gpu: tensor-cores=wgmma "
                                "needs chip=sm_90a (Hopper's warpgroup MMA), "
                                "not ")
          << stringifyChip(chip);
      return signalPassFailure();
    }
    for (scf::ForallOp forall : foralls)
      if (failed(TileMapper(forall, chip, threads, cores, registerTiles,
                            asyncCopies, loadStages, tmaLoads, warpSpecialize,
                            persistent)
                     .run()))
        return signalPassFailure();
  }
};
} // namespace
