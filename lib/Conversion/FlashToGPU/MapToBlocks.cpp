//===- MapToBlocks.cpp - a tiled nest's scf.forall as a gpu.launch -*- C++ -*-//
//
// Part of the flash-mlir project.
//
// --flash-gpu-map-to-blocks, the GPU mapping's first step: the bufferized
// scf.forall over (batch, head, query block) becomes a gpu.launch whose body
// needs nothing from outside but the tensors' memrefs.
//
//===----------------------------------------------------------------------===//

#include "flash/Conversion/Passes.h"
#include "flash/Dialect/Flash/IR/TileRoles.h"
#include "flash/Dialect/Flash/Transforms/Transforms.h"
#include "flash/Dialect/FlashGPU/IR/FlashGPUOps.h"

#include "GpuMapping.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir::flash {
#define GEN_PASS_DEF_FLASHGPUMAPTOBLOCKSPASS
#include "flash/Conversion/Passes.h.inc"
} // namespace mlir::flash

using namespace mlir;

namespace {
class LaunchBuilder {
public:
  LaunchBuilder(scf::ForallOp forall, int64_t threads, bool persistent,
                bool exitEmptyTiles)
      : forall(forall), loc(forall.getLoc()), threads(threads),
        persistent(persistent), exitEmptyTiles(exitEmptyTiles) {}

  LogicalResult run();

private:
  LogicalResult sinkValuesDefinedAbove(gpu::LaunchOp launch);
  LogicalResult lowerSkipTiles(gpu::LaunchOp launch);
  LogicalResult buildTileLoop(gpu::LaunchOp launch, ArrayRef<Value> ubs);

  scf::ForallOp forall;
  Location loc;
  int64_t threads;
  bool persistent, exitEmptyTiles;
};
} // namespace

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
  if (!flash::addsAtomically(launch))
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
             alloc->getBlock() == op.thenBlock() &&
             alloc->getNumOperands() == 0 &&
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

LogicalResult LaunchBuilder::run() {
  // Up to three parallel dims (batch, head, row block); canonicalization
  // drops those of static size 1, which become grid dims of size 1.
  if (forall.getRank() > 3 || !forall.getOutputs().empty())
    return forall.emitError(
               "flash-gpu-map-to-blocks maps a bufferized scf.forall over at "
               "most three dims (batch, head, row block) of a tiled attention; "
               "this one has rank ")
           << forall.getRank()
           << (forall.getOutputs().empty() ? "" : " and tensor outputs");
  for (OpFoldResult lb : forall.getMixedLowerBound())
    if (getConstantIntValue(lb) != 0)
      return forall.emitError(
          "flash-gpu-map-to-blocks: expected zero lower bounds");
  for (OpFoldResult st : forall.getMixedStep())
    if (getConstantIntValue(st) != 1)
      return forall.emitError("flash-gpu-map-to-blocks: expected unit steps");

  OpBuilder b(forall);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  // Grid (x, y, z) = the forall's dims from the last; missing ones are 1.
  SmallVector<Value> ubs = forall.getUpperBound(b);
  while (ubs.size() < 3)
    ubs.insert(ubs.begin(), one);
  Value blockSize = arith::ConstantIndexOp::create(b, loc, threads);
  auto launch = gpu::LaunchOp::create(b, loc, ubs[2], ubs[1], ubs[0], blockSize,
                                      one, one);
  if (forall->hasAttr(flash::kDependentLaunchAttrName))
    launch->setAttr(flash::kDependentLaunchAttrName, b.getUnitAttr());
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
    // grid; a nest whose first blocks are the heaviest says so.
    if (rank >= 1 && forall->hasAttr(flash::kHeaviestFirstAttrName)) {
      ivs[rank - 1].replaceAllUsesWith(blocks.x);
    } else if (rank >= 1) {
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
  if (failed(lowerSkipTiles(launch)))
    return failure();

  if (failed(sinkValuesDefinedAbove(launch)))
    return failure();
  foldIfBufferResults(launch);
  fillCopiesOfConstants(launch);
  return success();
}

/// The persistent form: the launch body is one loop over the tiles (row
/// block fastest, batch slowest; the row blocks of a head in folded pairs,
/// last and first, second-to-last and second, ..., each pair to one CTA),
/// tile t = this CTA's linear index + k * the grid's CTAs. With the
/// grid as built (one CTA per tile) every CTA runs one tile; a caller may
/// launch fewer CTAs (`flash.persistent`: any count from 1 up), each then
/// walking its share, so that a CTA's end of one tile overlaps the start
/// of its next. The tiles' buffers are allocated once, before the loop
/// (each tile writes them before it reads them).
LogicalResult LaunchBuilder::buildTileLoop(gpu::LaunchOp launch,
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
  // The walk is 32-bit arithmetic (no tensor that fits a GPU has 2^32
  // tiles): a persistent producer computes it too, and in 64 bits its
  // divisions alone took more registers than it keeps.
  Type i32 = in.getI32Type();
  auto narrow = [&](Value v) -> Value {
    return arith::IndexCastUIOp::create(in, loc, i32, v);
  };
  auto widen = [&](Value v) -> Value {
    return arith::IndexCastUIOp::create(in, loc, in.getIndexType(), v);
  };
  auto constant = [&](int64_t v) -> Value {
    return arith::ConstantOp::create(in, loc, in.getI32IntegerAttr(v));
  };
  Value t = narrow(tileLoop.getInductionVar());
  Value stride32 = narrow(stride), tiles32 = narrow(tiles);
  Value rowBlocks = narrow(ubs[2]), heads = narrow(ubs[1]);
  Value zero = constant(0), one = constant(1), two = constant(2);
  // CTA c's k-th tile is t = c + k G (G CTAs). Tiles are numbered f along
  // the rows of each (batch, head), folded: the even f are the row blocks
  // from the last down, the odd ones from the first up, so that tiles 2u
  // and 2u + 1 see nr + 1 key blocks together under a causal mask (nr row
  // blocks). Each two rounds of G tiles give CTA c one such pair (its heavy
  // tile, then its light one); of the last R < 2 G tiles, the R - G CTAs
  // with two take a pair, the others one tile each.
  auto ult = [&](Value a, Value b) -> Value {
    return arith::CmpIOp::create(in, loc, arith::CmpIPredicate::ult, a, b);
  };
  auto add = [&](Value a, Value b) -> Value {
    return arith::AddIOp::create(in, loc, a, b);
  };
  auto sub = [&](Value a, Value b) -> Value {
    return arith::SubIOp::create(in, loc, a, b);
  };
  auto mul = [&](Value a, Value b) -> Value {
    return arith::MulIOp::create(in, loc, a, b);
  };
  auto div = [&](Value a, Value b) -> Value {
    return arith::DivUIOp::create(in, loc, a, b);
  };
  auto rem = [&](Value a, Value b) -> Value {
    return arith::RemUIOp::create(in, loc, a, b);
  };
  auto select = [&](Value c, Value a, Value b) -> Value {
    return arith::SelectOp::create(in, loc, c, a, b);
  };
  Value pairRounds = mul(stride32, two);
  Value paired = mul(div(tiles32, pairRounds), pairRounds);
  Value round = div(t, stride32);
  Value unit = add(mul(div(round, two), stride32), rem(t, stride32));
  Value folded = add(mul(unit, two), rem(round, two));
  Value q = sub(t, paired);
  Value rest0 = sub(tiles32, paired);
  Value twice = select(ult(stride32, rest0), sub(rest0, stride32), zero);
  Value last = select(ult(q, twice), mul(q, two),
                      select(ult(q, stride32), add(q, twice),
                             add(mul(sub(q, stride32), two), one)));
  Value f = select(ult(t, paired), folded, add(paired, last));
  Value rest = div(f, rowBlocks);
  // With an odd number of row blocks each head's middle one is left over and
  // the next pair would join it to the next head's heaviest (1.4x the
  // average load at 11 row blocks): every second head starts with its
  // middle block, so that the leftovers pair with each other.
  Value r = rem(f, rowBlocks);
  auto isOdd = [&](Value v) {
    return arith::CmpIOp::create(in, loc, arith::CmpIPredicate::ne, rem(v, two),
                                 zero);
  };
  Value shifted = arith::AndIOp::create(in, loc, isOdd(rowBlocks), isOdd(rest));
  Value first =
      arith::CmpIOp::create(in, loc, arith::CmpIPredicate::eq, r, zero);
  Value lastRowBlock = sub(rowBlocks, one);
  r = select(shifted, select(first, lastRowBlock, sub(r, one)), r);
  Value half = div(r, two);
  Value rowBlock =
      select(arith::CmpIOp::create(in, loc, arith::CmpIPredicate::eq,
                                   rem(r, two), zero),
             sub(lastRowBlock, half), half);
  if (rank >= 3)
    ivs[rank - 3].replaceAllUsesWith(widen(div(rest, heads)));
  if (rank >= 2)
    ivs[rank - 2].replaceAllUsesWith(widen(rem(rest, heads)));
  if (rank >= 1)
    ivs[rank - 1].replaceAllUsesWith(widen(rowBlock));
  for (Operation &op : llvm::make_early_inc_range(*loopBody))
    if (auto alloc = dyn_cast<memref::AllocOp>(&op)) {
      if (!alloc.getType().hasStaticShape())
        return alloc.emitError("flash-gpu-map-to-blocks{persistent}: a tile "
                               "of dynamic shape");
      alloc->moveBefore(tileLoop);
      alloc->setAttr(flash::kTileBufferAttr, b.getUnitAttr());
    }
  return success();
}

/// An iteration that may have no rows (`flash.skip_tile`): where the launch
/// body is the iteration, the CTA ends there when it has none (every thread
/// alike: the condition is the CTA's); a persistent CTA's tile loop skips
/// the rest of the tile. Without `exitEmptyTiles` the op goes: the CTA runs
/// its empty tile.
LogicalResult LaunchBuilder::lowerSkipTiles(gpu::LaunchOp launch) {
  SmallVector<flash::SkipTileOp> skips;
  launch.getBody().walk([&](flash::SkipTileOp op) { skips.push_back(op); });
  Block &body = launch.getBody().front();
  IRRewriter rewriter(launch.getContext());
  for (flash::SkipTileOp skip : skips) {
    if (!exitEmptyTiles) {
      rewriter.eraseOp(skip);
      continue;
    }
    if (skip->getBlock() != &body) {
      if (failed(flash::guardRestOfBlock(rewriter, skip)))
        return failure();
      continue;
    }
    rewriter.setInsertionPoint(skip);
    auto exit = scf::IfOp::create(rewriter, skip.getLoc(), skip.getEmpty(),
                                  /*withElseRegion=*/false);
    rewriter.setInsertionPoint(exit.thenBlock()->getTerminator());
    flashgpu::ExitOp::create(rewriter, skip.getLoc());
    rewriter.eraseOp(skip);
  }
  return success();
}

LogicalResult LaunchBuilder::sinkValuesDefinedAbove(gpu::LaunchOp launch) {
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
      return launch.emitError("flash-gpu-map-to-blocks: the kernel needs ")
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
        return launch.emitError("flash-gpu-map-to-blocks: the kernel reads a "
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

namespace {
struct FlashGpuMapToBlocksPass
    : flash::impl::FlashGpuMapToBlocksPassBase<FlashGpuMapToBlocksPass> {
  using Base::Base;
  void runOnOperation() override {
    // CUDA launches at most 1024 threads per block; a larger .maxntid makes
    // a kernel that never runs. Below a whole warp every distributed loop
    // runs on fewer lanes than the hardware has (and LLVM took 28 s to
    // unroll the one-thread backward's), so blocks are whole warps.
    auto wholeWarps = [](int64_t n) {
      return n > 0 && n <= 1024 && n % 32 == 0;
    };
    if (!wholeWarps(threads)) {
      emitError(getOperation()->getLoc(),
                "flash-gpu-map-to-blocks: threads must be a multiple of 32 "
                "(whole warps) between 32 and 1024 (CUDA's limit per block), "
                "not ")
          << static_cast<int64_t>(threads);
      return signalPassFailure();
    }
    SmallVector<scf::ForallOp> foralls;
    getOperation()->walk([&](scf::ForallOp forall) {
      if (!forall->getParentOfType<scf::ForallOp>())
        foralls.push_back(forall);
    });
    for (scf::ForallOp forall : foralls) {
      int64_t blockThreads = threads;
      if (auto own = forall->getAttrOfType<IntegerAttr>(
              flash::kBlockThreadsAttrName)) {
        blockThreads = own.getInt();
        if (!wholeWarps(blockThreads)) {
          forall.emitError("flash-gpu-map-to-blocks: ")
              << flash::kBlockThreadsAttrName
              << " must be a multiple of 32 between 32 and 1024, not "
              << blockThreads;
          return signalPassFailure();
        }
      }
      if (failed(LaunchBuilder(forall, blockThreads, persistent, exitEmptyTiles)
                     .run()))
        return signalPassFailure();
    }
  }
};
} // namespace
