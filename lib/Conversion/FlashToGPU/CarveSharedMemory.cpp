//===- CarveSharedMemory.cpp - shared tiles in the dynamic window -*- C++ -*-//
//
// Part of the flash-mlir project.
//
// --flash-gpu-carve-shared-memory: a launch's shared-memory tiles become
// views of its dynamic shared memory, placed by their live ranges, padded
// or swizzled for the instructions that read them.
//
//===----------------------------------------------------------------------===//

#include "flash/Conversion/Passes.h"

#include "BufferLiveness.h"
#include "GpuMapping.h"
#include "WarpRegisterTiles.h"

#include "flash/Target/AttentionTarget.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace mlir::flash {
#define GEN_PASS_DEF_FLASHGPUCARVESHAREDMEMORYPASS
#include "flash/Conversion/Passes.h.inc"
} // namespace mlir::flash

using namespace mlir;
using flash::Chip;
using flash::stringifyChip;

/// Places every shared tile of `launch` (the allocations without register
/// or accumulator storage) in its dynamic shared memory; returns the bytes
/// used.
static int64_t carveSharedMemory(gpu::LaunchOp launch) {
  Location loc = launch.getLoc();
  SmallVector<memref::AllocOp> allocs;
  launch.getBody().walk([&](memref::AllocOp a) {
    std::optional<flash::TileStorage> storage = flash::getTileStorage(a);
    if (storage != flash::TileStorage::Registers &&
        storage != flash::TileStorage::Accumulators)
      allocs.push_back(a);
  });
  bool registerTiles = launch->hasAttr(flash::kRegisterRowsAttr);
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
  if (launch->hasAttr(flash::kWgmmaAttr)) {
    Value address =
        memref::ExtractAlignedPointerAsIndexOp::create(b, loc, base);
    Value misaligned = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::ne,
        arith::RemUIOp::create(b, loc, address,
                               arith::ConstantIndexOp::create(b, loc, 1024)),
        arith::ConstantIndexOp::create(b, loc, 0));
    auto guard =
        scf::IfOp::create(b, loc, misaligned, /*withElseRegion=*/false);
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
    // A reduction stage is written in 128-byte swizzled panels that TMA
    // reads (the lowering's layout, not the view's) and has two copies:
    // carved as [2, rows, cols], the tile a view of the first.
    bool swizzled =
        flash::getTileStorage(alloc) == flash::TileStorage::Swizzled;
    bool stage =
        flash::getTileStorage(alloc) == flash::TileStorage::ReductionStage;
    SmallVector<int64_t> allocated(type.getShape());
    int64_t rowBytes =
        type.getRank() == 2 ? type.getDimSize(1) * elementBytes : 0;
    if (registerTiles && !swizzled && !stage && rowBytes % 16 == 0 &&
        (rowBytes / 16) % 2 == 0)
      allocated[1] += 16 / elementBytes;
    if (stage)
      allocated.insert(allocated.begin(), 2);
    int64_t alignment = swizzled || stage ? 1024 : 128;
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
      int64_t rank = allocated.size();
      SmallVector<OpFoldResult> zeros(rank, b.getIndexAttr(0)),
          ones(rank, b.getIndexAttr(1));
      SmallVector<int64_t> sizes(type.getShape());
      if (stage)
        sizes.insert(sizes.begin(), 1);
      auto viewType = cast<MemRefType>(view.getType());
      MemRefType tileType = memref::SubViewOp::inferRankReducedResultType(
          type.getShape(), viewType, zeros,
          getAsIndexOpFoldResult(b.getContext(), sizes), ones);
      view = memref::SubViewOp::create(
          b, loc, tileType, view, zeros,
          getAsIndexOpFoldResult(b.getContext(), sizes), ones);
    }
    auto viewType = cast<MemRefType>(view.getType());
    Value generic = memref::MemorySpaceCastOp::create(
        b, loc,
        MemRefType::get(viewType.getShape(), viewType.getElementType(),
                        viewType.getLayout()),
        view);
    if (swizzled)
      generic.getDefiningOp()->setAttr(flash::kSwizzledAttr, b.getUnitAttr());
    if (stage)
      generic.getDefiningOp()->setAttr(flash::kReductionStageAttr,
                                       b.getUnitAttr());
    for (Operation *user : llvm::make_early_inc_range(alloc->getUsers())) {
      if (isa<memref::DeallocOp>(user)) {
        user->erase();
      } else if (auto sub = dyn_cast<memref::SubViewOp>(user);
                 sub && generic.getType() != type) {
        // Views of a padded tile have its row stride (and their rank: a
        // row of a tile may be a rank-1 view).
        OpBuilder vb(sub);
        MemRefType viewOfPadded = memref::SubViewOp::inferRankReducedResultType(
            sub.getType().getShape(), cast<MemRefType>(generic.getType()),
            sub.getMixedOffsets(), sub.getMixedSizes(), sub.getMixedStrides());
        Value padded = memref::SubViewOp::create(
            vb, sub.getLoc(), viewOfPadded, generic, sub.getMixedOffsets(),
            sub.getMixedSizes(), sub.getMixedStrides());
        sub.replaceAllUsesWith(padded);
        sub.erase();
      }
    }
    alloc.replaceAllUsesWith(generic);
  }
  // Erased once every view is made: the builder inserts before the body's
  // first op, which may be one of them.
  for (memref::AllocOp alloc : allocs)
    alloc.erase();
  return total;
}

static LogicalResult carveLaunch(gpu::LaunchOp launch, Chip chip) {
  Location loc = launch.getLoc();
  int64_t bytes = carveSharedMemory(launch);
  OpBuilder smem(launch);
  launch->setAttr(flash::kSharedMemoryBytesAttr, smem.getI64IntegerAttr(bytes));
  // Checked before the register tiles are unrolled and the loads expanded:
  // a kernel over the limit never launches, and with head dims in the
  // thousands building it is what takes minutes and gigabytes.
  if (int64_t limit = flash::maxSharedMemoryPerBlock(chip); bytes > limit)
    return launch.emitError("flash-gpu-carve-shared-memory: the tiles need ")
           << bytes << " B of shared memory, more than the " << limit
           << " B a CTA may use on "
           << (chip == Chip::Any ? StringRef("any chip") : stringifyChip(chip));
  Value size =
      arith::ConstantOp::create(smem, loc, smem.getI32IntegerAttr(bytes));
  launch.getDynamicSharedMemorySizeMutable().assign(size);

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
struct FlashGpuCarveSharedMemoryPass
    : flash::impl::FlashGpuCarveSharedMemoryPassBase<
          FlashGpuCarveSharedMemoryPass> {
  using Base::Base;
  void runOnOperation() override {
    for (gpu::LaunchOp launch : flash::collectLaunches(getOperation()))
      if (failed(carveLaunch(launch, chip)))
        return signalPassFailure();
  }
};
} // namespace
