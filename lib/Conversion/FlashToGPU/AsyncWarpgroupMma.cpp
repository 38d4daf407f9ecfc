//===- AsyncWarpgroupMma.cpp - warpgroup MMAs waited for late ---*- C++ -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#include "flash/Conversion/Passes.h"
#include "flash/Dialect/FlashGPU/IR/FlashGPUOps.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::flash {
#define GEN_PASS_DEF_FLASHGPUASYNCMMAPASS
#include "flash/Conversion/Passes.h.inc"
} // namespace mlir::flash

using namespace mlir;
using flashgpu::WarpgroupMmaOp;
using flashgpu::WarpgroupMmaWaitOp;

/// Whether `op` (or an op nested in it) may write workgroup memory, or lets
/// the other threads of the block go on to write it (a barrier).
static bool mayWriteShared(Operation *op) {
  if (isa<gpu::BarrierOp>(op))
    return true;
  if (isa<WarpgroupMmaOp>(op))
    return false;
  if (auto effects = dyn_cast<MemoryEffectOpInterface>(op)) {
    SmallVector<MemoryEffects::EffectInstance> list;
    effects.getEffects(list);
    for (const MemoryEffects::EffectInstance &effect : list) {
      if (!isa<MemoryEffects::Write, MemoryEffects::Free>(effect.getEffect()))
        continue;
      Value target = effect.getValue();
      auto type = target ? dyn_cast<MemRefType>(target.getType()) : nullptr;
      if (!type)
        return true;
      auto space =
          dyn_cast_or_null<gpu::AddressSpaceAttr>(type.getMemorySpace());
      // A generic pointer may point into shared memory.
      if (!space || space.getValue() == gpu::AddressSpace::Workgroup)
        return true;
    }
    if (!op->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
      return false;
  } else if (!op->hasTrait<OpTrait::HasRecursiveMemoryEffects>()) {
    return true;
  }
  for (Region &region : op->getRegions())
    for (Operation &inner : region.getOps())
      if (mayWriteShared(&inner))
        return true;
  return false;
}

/// Whether `op` or an op nested in it uses one of `values`.
static bool uses(Operation *op, ArrayRef<Value> values) {
  return op
      ->walk([&](Operation *inner) {
        return llvm::any_of(inner->getOperands(),
                            [&](Value v) {
                              return llvm::is_contained(values, v);
                            })
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      })
      .wasInterrupted();
}

/// Element moves: what the warp mapping does to an MMA's result right after
/// it (wgmma's accumulator order to the fragment layout) before anything
/// computes with it.
static bool isElementMove(Operation *op) {
  return isa<vector::ExtractOp, vector::InsertOp, vector::FromElementsOp,
             vector::BroadcastOp, vector::ShuffleOp>(op) &&
         isPure(op);
}

/// The op of `mma`'s block before which it must be complete. The element
/// moves of its result that come first are sunk to there, so that the wait
/// is not held up by them.
static Operation *waitPoint(WarpgroupMmaOp mma) {
  // PTX leaves any access to the accumulators and the A fragment registers
  // of an MMA in flight undefined.
  SmallVector<Value> needed = {mma.getResult()};
  if (Value fragments = mma.getAFragments())
    needed.push_back(fragments);
  SmallVector<Operation *> moves;
  SmallVector<Value> moved;
  auto readsMoved = [&](Operation *op) { return uses(op, moved); };
  Operation *point = mma->getNextNode();
  for (;; point = point->getNextNode()) {
    if (point->hasTrait<OpTrait::IsTerminator>() || mayWriteShared(point))
      break;
    bool direct = uses(point, needed);
    if ((direct || readsMoved(point)) && isElementMove(point) &&
        !llvm::is_contained(point->getOperands(), mma.getAFragments())) {
      moves.push_back(point);
      llvm::append_range(moved, point->getResults());
      continue;
    }
    if (direct || readsMoved(point))
      break;
  }
  for (Operation *op : moves)
    op->moveBefore(point);
  return moves.empty() ? point : moves.front();
}

static void makeAsync(Block &block) {
  SmallVector<std::pair<WarpgroupMmaOp, Operation *>> mmas;
  for (Operation &op : block)
    if (auto mma = dyn_cast<WarpgroupMmaOp>(&op); mma && !mma.getAsync())
      mmas.push_back({mma, waitPoint(mma)});
  for (auto [i, entry] : llvm::enumerate(mmas)) {
    auto [mma, point] = entry;
    // Issued after it and still in flight at its wait.
    int64_t pending = 0;
    for (auto [later, laterPoint] : llvm::drop_begin(mmas, i + 1))
      if (later->isBeforeInBlock(point) &&
          (laterPoint == point || point->isBeforeInBlock(laterPoint)))
        ++pending;
    mma.setAsync(true);
    SmallVector<Value> values = {mma.getResult()};
    if (Value fragments = mma.getAFragments())
      values.push_back(fragments);
    OpBuilder b(point);
    auto wait = WarpgroupMmaWaitOp::create(b, mma.getLoc(), values,
                                           b.getI64IntegerAttr(pending));
    mma.getResult().replaceAllUsesExcept(wait.getResult(0), wait);
    if (values.size() > 1)
      values[1].replaceUsesWithIf(wait.getResult(1), [&](OpOperand &use) {
        Operation *user = use.getOwner();
        Operation *inBlock = block.findAncestorOpInBlock(*user);
        return user != wait && inBlock && wait->isBeforeInBlock(inBlock);
      });
  }
}

namespace {
struct FlashGpuAsyncMmaPass
    : flash::impl::FlashGpuAsyncMmaPassBase<FlashGpuAsyncMmaPass> {
  void runOnOperation() override {
    SmallVector<Block *> blocks;
    getOperation()->walk([&](WarpgroupMmaOp mma) {
      if (!mma.getAsync() && !llvm::is_contained(blocks, mma->getBlock()))
        blocks.push_back(mma->getBlock());
    });
    for (Block *block : blocks)
      makeAsync(*block);
  }
};
} // namespace
