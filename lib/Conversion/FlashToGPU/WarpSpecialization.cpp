//===- WarpSpecialization.cpp - producer and consumer warps -----*- C++ -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//
//
// FlashAttention-3's warp specialisation: one warpgroup only issues TMA
// copies and holds few registers, the others compute with the registers it
// gave back. The producer's code is built with the loads it issues
// (AsyncTileLoads.cpp); this step separates the roles.
//
//===----------------------------------------------------------------------===//

#include "WarpSpecialization.h"

#include "flash/Conversion/Passes.h"
#include "flash/Dialect/Flash/IR/TileRoles.h"
#include "flash/Dialect/FlashGPU/IR/FlashGPUOps.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::flash {
#define GEN_PASS_DEF_FLASHGPUSPLITWARPROLESPASS
#include "flash/Conversion/Passes.h.inc"
} // namespace mlir::flash

using namespace mlir;

/// The consumer warpgroups of `consumer` (`groups` of them) take turns with
/// their S = Q Kᵀ MMAs, in order: warpgroup g waits on named barrier 2 + g
/// before each and arrives on the next one's after it. Each such barrier
/// counts the 128 threads that wait and the 128 that arrive; the last
/// warpgroup lets warpgroup 0 take the first turn, and warpgroup 0 takes its
/// last arrival at the end, so every barrier ends complete.
static void alternateScoreMmas(scf::IfOp consumer, Value tid, int64_t groups) {
  Location loc = consumer.getLoc();
  SmallVector<flashgpu::WarpgroupMmaOp> scores;
  consumer.getThenRegion().walk([&](flashgpu::WarpgroupMmaOp mma) {
    if (flash::getContraction(mma) == flash::Contraction::Scores)
      scores.push_back(mma);
  });
  if (scores.empty())
    return;
  auto i32 = [&](OpBuilder &b, int64_t v) -> Value {
    return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v);
  };
  Block *inside = consumer.thenBlock();
  OpBuilder start(inside, std::next(inside->begin()));
  Value group = arith::IndexCastUIOp::create(
      start, loc, start.getI32Type(),
      arith::DivUIOp::create(start, loc, tid,
                             arith::ConstantIndexOp::create(start, loc, 128)));
  Value own = arith::AddIOp::create(start, loc, group, i32(start, 2));
  Value next = arith::AddIOp::create(
      start, loc,
      arith::RemUIOp::create(
          start, loc, arith::AddIOp::create(start, loc, group, i32(start, 1)),
          i32(start, groups)),
      i32(start, 2));
  auto ifGroup = [&](OpBuilder &b, int64_t g, auto body) {
    Value is = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, group,
                                     i32(b, g));
    auto guard = scf::IfOp::create(b, loc, is, /*withElseRegion=*/false);
    OpBuilder then = guard.getThenBodyBuilder();
    body(then);
  };
  ifGroup(start, groups - 1, [&](OpBuilder &b) {
    NVVM::BarrierArriveOp::create(b, loc, i32(b, 2), i32(b, 256));
  });
  for (flashgpu::WarpgroupMmaOp mma : scores) {
    OpBuilder before(mma);
    NVVM::BarrierOp::create(before, loc, Type(), own, i32(before, 256),
                            NVVM::BarrierReductionAttr(), Value());
    OpBuilder after(mma->getBlock(), std::next(mma->getIterator()));
    NVVM::BarrierArriveOp::create(after, loc, next, i32(after, 256));
  }
  OpBuilder end = OpBuilder::atBlockTerminator(inside);
  ifGroup(end, 0, [&](OpBuilder &b) {
    NVVM::BarrierOp::create(b, loc, Type(), i32(b, 2), i32(b, 256),
                            NVVM::BarrierReductionAttr(), Value());
  });
}

/// Whether `op` is a CTA's exit (`scf.if %empty { flashgpu.exit }`, from
/// flash.skip_tile: its condition is the CTA's).
static bool isCtaExit(Operation *op) {
  auto guard = dyn_cast<scf::IfOp>(op);
  return guard && guard.getNumResults() == 0 && !guard.elseBlock() &&
         isa<flashgpu::ExitOp>(guard.thenBlock()->front());
}

/// Whether `root` or an op nested in it may write memory (unknown effects
/// count as writes, but a trap's: it ends the kernel).
static bool mayWriteMemory(Operation *root) {
  return root
      ->walk([](Operation *op) {
        if (isa<LLVM::Trap>(op) ||
            op->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
          return WalkResult::advance();
        auto effects = dyn_cast<MemoryEffectOpInterface>(op);
        if (!effects || effects.hasEffect<MemoryEffects::Write>())
          return WalkResult::interrupt();
        return WalkResult::advance();
      })
      .wasInterrupted();
}

/// Moves the CTA's exits that follow the producer before it, with the ops
/// that compute their conditions (pure ops and loads of global memory (no
/// memory space) that nothing before the exit writes, all alike in every
/// thread), so that all threads leave before either role starts: past that
/// point a consumer warpgroup arrives on the ping-pong's first barrier, which a
/// CTA leaving there would leave half-arrived.
static void hoistCtaExits(Block &body, scf::IfOp producer) {
  SmallVector<Operation *> exits;
  for (Operation *op = producer->getNextNode(); op; op = op->getNextNode())
    if (isCtaExit(op))
      exits.push_back(op);
  for (Operation *exit : exits) {
    llvm::SetVector<Operation *> slice;
    BackwardSliceOptions options;
    options.omitBlockArguments = true;
    options.filter = [&](Operation *op) {
      return op->getBlock() == &body && producer->isBeforeInBlock(op);
    };
    if (failed(getBackwardSlice(exit, &slice, options)))
      continue;
    bool movable = llvm::all_of(slice, [](Operation *op) {
      if (op->getNumRegions())
        return false;
      if (auto load = dyn_cast<memref::LoadOp>(op))
        return !load.getMemRefType().getMemorySpace();
      return isMemoryEffectFree(op);
    });
    // Nothing between the producer and the exit may write what the moved
    // loads read.
    bool noWrites = true;
    for (Operation *op = producer->getNextNode(); op != exit;
         op = op->getNextNode())
      noWrites &= !mayWriteMemory(op);
    if (!movable || !noWrites)
      continue;
    for (Operation *op : slice)
      op->moveBefore(producer);
    exit->moveBefore(producer);
  }
}

LogicalResult flash::splitWarpRoles(gpu::LaunchOp launch, bool pingPong) {
  auto tagged = launch->getAttrOfType<IntegerAttr>(kWarpSpecializedAttr);
  if (!tagged)
    return success();
  int64_t consumers = tagged.getInt();
  Block &body = launch.getBody().front();
  scf::IfOp producer;
  for (Operation &op : body)
    if (auto role = op.getAttrOfType<StringAttr>(kWarpRoleAttr);
        role && role.getValue() == "producer")
      producer = cast<scf::IfOp>(op);
  if (!producer)
    return launch.emitError("flash-gpu-split-warp-roles: a warp-specialised "
                            "launch without its producer");
  hoistCtaExits(body, producer);
  Location loc = launch.getLoc();
  auto i32 = [&](OpBuilder &b, int64_t v) -> Value {
    return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v);
  };

  OpBuilder b(body.getTerminator());
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  auto consumer = scf::IfOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, tid,
                            arith::ConstantIndexOp::create(b, loc, consumers)),
      /*withElseRegion=*/false);
  consumer->setAttr(kWarpRoleAttr, b.getStringAttr("consumer"));
  Block *inside = consumer.thenBlock();
  // The consumers' code: everything between the producer and the new if.
  auto first = std::next(producer->getIterator());
  auto last = tid.getDefiningOp()->getIterator();
  inside->getOperations().splice(inside->begin(), body.getOperations(), first,
                                 last);

  SmallVector<gpu::BarrierOp> barriers;
  consumer.getThenRegion().walk(
      [&](gpu::BarrierOp barrier) { barriers.push_back(barrier); });
  for (gpu::BarrierOp barrier : barriers) {
    OpBuilder at(barrier);
    NVVM::BarrierOp::create(at, loc, Type(), i32(at, 1), i32(at, consumers),
                            NVVM::BarrierReductionAttr(), Value());
    barrier->erase();
  }
  consumer.getThenRegion().walk([&](flashgpu::LastArrivalOp arrival) {
    arrival.setBarrierId(1);
    arrival.setBarrierThreads(static_cast<uint32_t>(consumers));
  });

  // The registers of an SM, shared by the CTAs that fit its shared memory:
  // two when each consumer thread still gets kMinConsumerRegisters (one
  // consumer warpgroup: 232 each, the dK/dV kernel's loop fits; two
  // CTAs measured 1.3-1.4x one at 255 registers, docs/GPU-NOTES.md 51),
  // else one. The producer gives back all but kProducerRegisters. When
  // every thread of a lone CTA may have the most a thread can (255) there
  // is nothing to move: `setmaxnreg.inc` below what the launch gave would
  // be no increase.
  constexpr int64_t kRegistersPerSM = 64 * 1024, kRegistersPerThread = 255,
                    kMinConsumerRegisters = 224;
  // Hopper's (setmaxnreg is sm_90a's): 228 KiB per SM, 1 KiB of it
  // reserved per CTA.
  constexpr int64_t kSharedMemoryPerSM = 228 * 1024,
                    kReservedSharedMemoryPerBlock = 1024;
  int64_t block = consumers + 128;
  // A persistent producer walks the tiles too (their order, bounds and
  // coordinates): in 64-bit arithmetic it needed 64 registers, in 32-bit 56
  // (at 32-40 it spills; docs/GPU-NOTES.md 62, 68), which leaves three
  // consumer warpgroups 152 and two 224.
  int64_t producerRegisters = launch->hasAttr(kPersistentAttr)
                                  ? kPersistentProducerRegisters
                                  : kProducerRegisters;
  // (A load per key block, not the lengths read once before its loop.)
  bool loadsPerBlock =
      producer.getThenRegion()
          .walk([&](memref::LoadOp load) {
            auto loop = load->getParentOfType<scf::ForOp>();
            return loop && producer->isAncestor(loop) ? WalkResult::interrupt()
                                                      : WalkResult::advance();
          })
          .wasInterrupted();
  int64_t keyLoops = 0;
  producer.getThenRegion().walk([&](scf::ForOp loop) {
    if (!loop->hasAttr(kTileLoopAttr))
      ++keyLoops;
  });
  if (loadsPerBlock || keyLoops > 2)
    producerRegisters =
        std::max<int64_t>(producerRegisters, kLoadingProducerRegisters);
  // setmaxnreg moves registers within what the CTA got at launch (whole
  // multiples of 8 per thread of the block): the consumers' increase blocks
  // until the producer's decrease has freed all of it, so the shares must
  // add up to no more.
  auto consumerShare = [&](int64_t ctas) {
    int64_t launched = kRegistersPerSM / ctas / block / 8 * 8 * block;
    return std::min<int64_t>(240, (launched - 128 * producerRegisters) /
                                      consumers / 8 * 8);
  };
  auto shared = launch->getAttrOfType<IntegerAttr>(kSharedMemoryBytesAttr);
  int64_t ctas =
      shared &&
              2 * (shared.getInt() + kReservedSharedMemoryPerBlock) <=
                  kSharedMemoryPerSM &&
              consumerShare(2) >= kMinConsumerRegisters
          ? 2
          : 1;
  if (ctas > 1 || block * kRegistersPerThread > kRegistersPerSM) {
    {
      OpBuilder at = OpBuilder::atBlockBegin(producer.thenBlock());
      NVVM::SetMaxRegisterOp::create(at, loc, producerRegisters,
                                     NVVM::SetMaxRegisterAction::decrease);
    }
    {
      OpBuilder at = OpBuilder::atBlockBegin(inside);
      NVVM::SetMaxRegisterOp::create(at, loc, consumerShare(ctas),
                                     NVVM::SetMaxRegisterAction::increase);
    }
  }
  if (ctas > 1) {
    OpBuilder at = OpBuilder::atBlockBegin(&body);
    flashgpu::CtasPerSmOp::create(at, loc, ctas);
  }

  if (pingPong && (consumers == 256 || consumers == 384))
    alternateScoreMmas(consumer, tid, consumers / 128);

  OpBuilder before(launch);
  launch.getBlockSizeXMutable().assign(
      arith::ConstantIndexOp::create(before, loc, consumers + 128));
  launch->removeAttr(kWarpSpecializedAttr);
  return success();
}

namespace {
struct FlashGpuSplitWarpRolesPass
    : flash::impl::FlashGpuSplitWarpRolesPassBase<FlashGpuSplitWarpRolesPass> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<gpu::LaunchOp> launches;
    getOperation()->walk([&](gpu::LaunchOp op) { launches.push_back(op); });
    for (gpu::LaunchOp launch : launches)
      if (failed(flash::splitWarpRoles(launch, pingPong)))
        return signalPassFailure();
  }
};
} // namespace
