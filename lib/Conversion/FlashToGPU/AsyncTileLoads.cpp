//===- AsyncTileLoads.cpp - tile loads with cp.async ------------*- C++ -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#include "AsyncTileLoads.h"
#include "GpuMapping.h"
#include "MmaSyncFragments.h"
#include "TensorMaps.h"
#include "TileContraction.h"
#include "WarpRegisterTiles.h"
#include "WarpSpecialization.h"

#include "flash/Conversion/Passes.h"
#include "flash/Dialect/Flash/IR/TileRoles.h"
#include "flash/Target/AttentionTarget.h"

#include "mlir/Analysis/TopologicalSortUtils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir::flash {
#define GEN_PASS_DEF_FLASHGPUASYNCTILELOADSPASS
#include "flash/Conversion/Passes.h.inc"
} // namespace mlir::flash

using namespace mlir;

using flash::clipsAtTensorEnd;
using flash::PaddedTileLoad;
using flash::TensorMaps;

/// The tile's buffers and the values computed from them without reading
/// memory: views, and the addresses and wgmma descriptors made from them.
static llvm::DenseSet<Value> addressesOf(const PaddedTileLoad &load) {
  llvm::DenseSet<Value> derived;
  SmallVector<Value> work = {load.shared, load.tile};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!derived.insert(v).second)
      continue;
    for (Operation *user : v.getUsers())
      if (isMemoryEffectFree(user) && user->getNumRegions() == 0)
        llvm::append_range(work, user->getResults());
  }
  return derived;
}

/// Whether `op` or an op nested in it reads the tile: uses one of its
/// `addresses` (an asm block reading it through a descriptor counts).
static bool readsTile(Operation *op, const llvm::DenseSet<Value> &addresses) {
  return op
      ->walk([&](Operation *inner) {
        return llvm::any_of(inner->getOperands(),
                            [&](Value v) { return addresses.contains(v); })
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      })
      .wasInterrupted();
}

/// The ops of `block` that `root` (and the ops nested in it) depend on, in
/// block order.
static SmallVector<Operation *> blockSlice(Operation *root, Block *block) {
  llvm::SetVector<Operation *> slice;
  SmallVector<Operation *> work = {root};
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    op->walk([&](Operation *inner) {
      for (Value v : inner->getOperands()) {
        Operation *def = v.getDefiningOp();
        if (def && def->getBlock() == block && def != root &&
            slice.insert(def))
          work.push_back(def);
      }
    });
  }
  SmallVector<Operation *> ordered(slice.begin(), slice.end());
  llvm::sort(ordered, [](Operation *a, Operation *b) {
    return a->isBeforeInBlock(b);
  });
  return ordered;
}

/// Clones `branch` (a tile load) with its slice for the iteration `iv`
/// under a guard `iv < ub` at `b`'s insertion point.
static void issueFor(OpBuilder &b, scf::ForOp loop, scf::ExecuteRegionOp branch,
                     Value iv) {
  Location loc = branch.getLoc();
  Value inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, iv,
                                        loop.getUpperBound());
  auto guard = scf::IfOp::create(b, loc, inRange, /*withElseRegion=*/false);
  OpBuilder inner = guard.getThenBodyBuilder();
  IRMapping map;
  map.map(loop.getInductionVar(), iv);
  for (Operation *op : blockSlice(branch, loop.getBody()))
    inner.clone(*op, map);
  inner.clone(*branch, map);
}

/// FlashAttention-2's load schedule for a key-block loop: a tile whose
/// readers all come before another tile's first reader (K, read by Q Kᵀ,
/// before V, read by P V) is loaded one iteration ahead, right after its
/// last reader; the others (V) are issued at the top of the iteration. Two
/// barriers per iteration: at the top, once the ahead-loaded tiles are in
/// (and the previous iteration's readers are done), and after the last
/// reader of the ahead-loaded tiles, once the others are in.
static void pipelineLoop(scf::ForOp loop,
                         MutableArrayRef<scf::ExecuteRegionOp> issued,
                         ArrayRef<PaddedTileLoad> loads,
                         llvm::SmallPtrSetImpl<Operation *> &pipelined) {
  Block *body = loop.getBody();
  struct Entry {
    scf::ExecuteRegionOp branch;
    size_t load;
    Operation *first = nullptr, *last = nullptr;
  };
  SmallVector<Entry> entries;
  for (auto [k, constBranch, load] : llvm::enumerate(issued, loads)) {
    scf::ExecuteRegionOp branch = constBranch;
    if (!branch || branch->getBlock() != body)
      continue;
    Entry e{branch, k};
    llvm::DenseSet<Value> addresses = addressesOf(load);
    for (Operation &op : *body) {
      if (&op == branch.getOperation() || &op == load.validRows ||
          !readsTile(&op, addresses) || isMemoryEffectFree(&op))
        continue;
      if (!e.first)
        e.first = &op;
      e.last = &op;
    }
    if (!e.first || e.first->isBeforeInBlock(branch))
      return;
    entries.push_back(e);
  }
  SmallVector<Entry> ahead, atTop;
  for (const Entry &e : entries) {
    bool early = llvm::any_of(entries, [&](const Entry &other) {
      return other.branch != e.branch && e.last->isBeforeInBlock(other.first);
    });
    (early ? ahead : atTop).push_back(e);
  }
  if (ahead.empty())
    return;
  // The readers of the tiles loaded at the top come after every reader of
  // the tiles loaded ahead.
  Operation *split = ahead.front().last;
  for (const Entry &e : ahead)
    if (split->isBeforeInBlock(e.last))
      split = e.last;
  for (const Entry &e : atTop)
    if (e.first->isBeforeInBlock(split))
      return;

  Location loc = loop.getLoc();
  Value token;
  {
    OpBuilder b(loop);
    for (const Entry &e : ahead)
      issueFor(b, loop, e.branch, loop.getLowerBound());
    // cp.async.wait_group counts groups, not tokens: any token will do as
    // the operand of the waits below.
    token = nvgpu::DeviceAsyncCreateGroupOp::create(
        b, loc, nvgpu::DeviceAsyncTokenType::get(loop.getContext()), {});
  }
  {
    OpBuilder b(split->getBlock(), std::next(split->getIterator()));
    nvgpu::DeviceAsyncWaitOp::create(b, loc, token, b.getI32IntegerAttr(0));
    gpu::BarrierOp::create(b, loc);
    Value next = arith::AddIOp::create(b, loc, loop.getInductionVar(),
                                       loop.getStep());
    for (const Entry &e : ahead)
      issueFor(b, loop, e.branch, next);
  }
  {
    OpBuilder b = OpBuilder::atBlockBegin(body);
    nvgpu::DeviceAsyncWaitOp::create(b, loc, token, b.getI32IntegerAttr(0));
    if (!isa<gpu::BarrierOp>(b.getInsertionPoint()))
      gpu::BarrierOp::create(b, loc);
  }
  // An erased load's slot is cleared: nothing may reach it again.
  for (const Entry &e : ahead) {
    e.branch->erase();
    issued[e.load] = nullptr;
  }
  for (const Entry &e : entries)
    if (issued[e.load])
      pipelined.insert(e.branch);
}

/// The suspend-time hint of each mbarrier try_wait round, in nanoseconds.
static constexpr int64_t kWaitTicks = 10'000'000;

/// Where a tile load reads, for a TMA copy: a kernel argument whose
/// innermost dimension is the tile's (whole) columns, one other dimension
/// along which the tile's rows run, every other one indexed at a single
/// point, and the tile's first element in it (outermost first).
struct TmaSource {
  BlockArgument tensor;
  SmallVector<Value> offsets;
  int64_t rowDim;
  /// With a ragged tail: how many of the box's rows are the tile's (null
  /// when the tile ends with the tensor, whose zero fill is the tile's).
  /// The rest hold whatever the tensor has there (a stale KV cache, the
  /// next packed sequence) and, where a reader needs zeros (`zeroTail`),
  /// the consumers clear them once the box is in.
  Value validRows = {};
  bool zeroTail = false;
};

/// With `raggedTails`, a 2-D tile whose valid rows end before the tensor
/// does (a ragged KV cache's length, a packed sequence's end) is a TMA
/// source too, its valid count recorded (see TmaSource::validRows).
static std::optional<TmaSource> matchTmaSource(PaddedTileLoad load,
                                               bool raggedTails) {
  auto sub = load.copy.getSource().getDefiningOp<memref::SubViewOp>();
  auto tensor =
      sub ? dyn_cast<BlockArgument>(sub.getSource()) : BlockArgument();
  if (!tensor || !isa<func::FuncOp>(tensor.getOwner()->getParentOp()))
    return std::nullopt;
  auto type = cast<MemRefType>(tensor.getType());
  auto tileType = cast<MemRefType>(load.tile.getType());
  int64_t rank = type.getRank();
  // An f32 row vector (the backward's LSE and D): one unswizzled box along
  // the tensor's innermost dimension, every other one indexed at a point.
  if (tileType.getRank() == 1) {
    int64_t n = tileType.getDimSize(0);
    SmallVector<OpFoldResult> sizes = sub.getMixedSizes();
    if (rank > 5 || !tileType.getElementType().isF32() || n > 256 ||
        (n * 4) % 16 != 0 ||
        !llvm::all_of(sub.getStaticStrides(),
                      [](int64_t s) { return s == 1; }) ||
        !llvm::all_of(ArrayRef(sizes).drop_back(), [](OpFoldResult size) {
          return getConstantIntValue(size) == 1;
        }))
      return std::nullopt;
    TmaSource source{tensor, {}, rank - 1};
    OpBuilder b(load.copy);
    for (OpFoldResult o : sub.getMixedOffsets())
      source.offsets.push_back(
          getValueOrCreateConstantIndexOp(b, load.copy.getLoc(), o));
    Value size = dyn_cast<Value>(sizes.back());
    if (!size ||
        !clipsAtTensorEnd(size, tensor, rank - 1, source.offsets.back(), n))
      return std::nullopt;
    return source;
  }
  int64_t cols = tileType.getDimSize(1);
  // The 128-byte swizzle that wgmma reads: 64 columns of 16 bits per box.
  if (tileType.getElementTypeBitWidth() != 16 || cols % 64 != 0 ||
      !flash::isSwizzledTile(load.tile))
    return std::nullopt;
  std::optional<flash::TensorSlice> slice = flash::matchTensorSlice(sub, cols);
  if (!slice)
    return std::nullopt;
  TmaSource source{tensor, {}, slice->rowDim};
  OpBuilder b(load.copy);
  for (OpFoldResult o : slice->offsets)
    source.offsets.push_back(
        getValueOrCreateConstantIndexOp(b, load.copy.getLoc(), o));
  Value size = slice->rows;
  if (!clipsAtTensorEnd(size, tensor, source.rowDim,
                        source.offsets[source.rowDim],
                        tileType.getDimSize(0))) {
    if (!raggedTails)
      return std::nullopt;
    source.validRows = size;
  }
  return source;
}

/// For a TMA source with a ragged tail: whether the readers of its tile
/// (in the load's block: its loop's body) take rows past the valid ones as
/// they are (nullopt when one may not: the tail is then no TMA box) and, if
/// they do, whether one needs them zero.
/// - The forward's products: S = Q Kᵀ selects the scores of keys past the
///   valid ones to -inf (a K tail may hold anything; a Q tail only makes
///   rows that are never stored), O += P V meets them with P = 0, NaN for
///   a NaN V row: V's tail is zeroed where the tiler says the block may be
///   ragged (`flash.ragged_keys`; the unmasked loop's blocks are whole).
/// - The backward's: zeros in every block (the zeroing skips whole tiles
///   at run time), the zero fill the cp.async copy gave them. Their
///   arithmetic relies on it: a query row past a sequence's end has S = 0
///   and a finite P (from its zero-filled LSE), which dV += Pᵀ dO and
///   dK += dSᵀ Q meet with zero rows of dO and Q; a key past it has P = 0,
///   which dQ += dS K meets with a zero row of K.
static std::optional<bool> tailNeedsZeros(PaddedTileLoad load) {
  llvm::DenseSet<Value> addresses = addressesOf(load);
  Block *home = load.copy->getBlock();
  bool ragged = false, onlyScores = true, seen = false, unknown = false,
       backward = false;
  home->walk([&](Operation *op) {
    ragged |= flash::hasRaggedKeys(op);
    if (op == load.copy.getOperation() || op == load.zeroFill.getOperation() ||
        isMemoryEffectFree(op) ||
        llvm::none_of(op->getOperands(),
                      [&](Value v) { return addresses.contains(v); }))
      return;
    std::optional<flash::Contraction> role = flash::getContraction(op);
    seen = true;
    onlyScores &= role == flash::Contraction::Scores;
    if (!role)
      unknown = true;
    else if (role != flash::Contraction::Scores &&
             role != flash::Contraction::Output)
      backward = true;
  });
  if (unknown)
    return std::nullopt;
  if (backward)
    return true;
  // In a ragged block, zeros unless the tile is seen read by S = Q Kᵀ
  // alone: a reader not traced through the tile's addresses then gets
  // zeros too.
  return ragged && !(seen && onlyScores);
}

/// Zeroes rows [valid, R) of `tile` (R x C, 16-bit, in the 128-byte swizzle
/// that wgmma reads: row r of 64-column panel p is the 128 contiguous bytes
/// at (p R + r) 128, the swizzle only permuting 16-byte chunks inside a
/// row), `threads` threads storing 16 bytes each per step, then fences the
/// stores towards the async proxy (wgmma, and the next TMA into the copy)
/// and meets at a barrier: every thread reads every row of the tile.
static void zeroTailRows(OpBuilder &b, Location loc, Value tile, Value valid,
                         int64_t threads) {
  auto type = cast<MemRefType>(tile.getType());
  int64_t rows = type.getDimSize(0), panels = type.getDimSize(1) / 64;
  auto idx = [&](OpBuilder &at, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(at, loc, v);
  };
  Value ragged = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, valid,
                                       idx(b, rows));
  auto guard = scf::IfOp::create(b, loc, ragged, /*withElseRegion=*/false);
  OpBuilder t = guard.getThenBodyBuilder();
  Value flat = memref::CollapseShapeOp::create(
      t, loc, tile, ArrayRef<ReassociationIndices>{{0, 1}});
  auto chunkType = VectorType::get({8}, type.getElementType());
  Value zero = arith::ConstantOp::create(t, loc, t.getZeroAttr(chunkType));
  // Chunks [0, (R - valid) 8) of each panel, thread tid taking every
  // `threads`-th.
  Value perPanel = arith::MulIOp::create(
      t, loc, arith::SubIOp::create(t, loc, idx(t, rows), valid), idx(t, 8));
  Value tid = gpu::ThreadIdOp::create(t, loc, gpu::Dimension::x);
  auto loop = scf::ForOp::create(t, loc, tid, perPanel, idx(t, threads));
  {
    OpBuilder in = OpBuilder::atBlockTerminator(loop.getBody());
    Value chunk = loop.getInductionVar();
    Value first = arith::AddIOp::create(
        in, loc, arith::MulIOp::create(in, loc, valid, idx(in, 64)),
        arith::MulIOp::create(in, loc, chunk, idx(in, 8)));
    for (int64_t p = 0; p < panels; ++p)
      vector::StoreOp::create(in, loc, zero, flat,
                              ValueRange{arith::AddIOp::create(
                                  in, loc, first, idx(in, p * rows * 64))},
                              /*nontemporal=*/false, llvm::MaybeAlign(16));
  }
  NVVM::FenceProxyOp::create(
      t, loc, NVVM::ProxyKind::async_shared,
      NVVM::SharedSpaceAttr::get(b.getContext(),
                                 NVVM::SharedSpace::shared_cta));
  gpu::BarrierOp::create(t, loc);
}

/// The descriptor of `source`'s map with boxes of one panel of `tile` (its
/// rows along the source's row dimension; a row vector whole).
static Value descriptorOf(TensorMaps &maps, const TmaSource &source,
                          MemRefType tile) {
  return maps.descriptor(source.tensor, source.rowDim, tile.getDimSize(0),
                         tile.getElementType(), tile.getRank() == 1);
}

/// Ring position `iv - origin`, plus `base` (the positions of the earlier
/// runs of the loop) when there is one.
static Value ringPosition(OpBuilder &b, Location loc, Value iv, Value origin,
                          Value base) {
  Value relative = arith::SubIOp::create(b, loc, iv, origin);
  return base ? arith::AddIOp::create(b, loc, relative, base) : relative;
}

/// How many iterations of `loop` came before the current one:
/// (iv - lb) / step, divided in 32 bits (the loops count tiles, heads and
/// key blocks; a 64-bit division costs the persistent producer registers it
/// does not have).
static Value iterationIndex(OpBuilder &b, Location loc, scf::ForOp loop) {
  Type i32 = b.getI32Type();
  auto narrow = [&](Value v) -> Value {
    return arith::IndexCastUIOp::create(b, loc, i32, v);
  };
  Value relative = arith::SubIOp::create(b, loc, loop.getInductionVar(),
                                         loop.getLowerBound());
  Value index =
      arith::DivUIOp::create(b, loc, narrow(relative), narrow(loop.getStep()));
  return arith::IndexCastUIOp::create(b, loc, b.getIndexType(), index);
}

/// One thread (`leader`) expects the bytes of `load`'s whole tile on
/// mbarrier `barrier` of `barriers` and issues one 64-column box per
/// 128-byte panel of the swizzled tile (a row vector: one box), read
/// through `desc`; TMA zero-fills the rows past the tensor's end.
static void issueTmaBoxes(OpBuilder &t, Location loc,
                          const PaddedTileLoad &load, const TmaSource &source,
                          Value desc, Value barriers, Value barrier,
                          Value leader) {
  auto tileType = cast<MemRefType>(load.tile.getType());
  bool rowVector = tileType.getRank() == 1;
  int64_t rows = tileType.getDimSize(0),
          panels = rowVector ? 1 : tileType.getDimSize(1) / 64;
  auto idx = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(t, loc, v);
  };
  nvgpu::MBarrierArriveExpectTxOp::create(
      t, loc, barriers,
      idx(tileType.getNumElements() * tileType.getElementTypeBitWidth() / 8),
      barrier, leader);
  auto meta = memref::ExtractStridedMetadataOp::create(t, loc, load.shared);
  auto boxType =
      cast<nvgpu::TensorMapDescriptorType>(desc.getType()).getTensor();
  SmallVector<OpFoldResult> sizes, strides;
  for (int64_t s : boxType.getShape())
    sizes.push_back(t.getIndexAttr(s));
  for (int64_t s : computeStrides(boxType.getShape()))
    strides.push_back(t.getIndexAttr(s));
  auto dstType = MemRefType::get(
      boxType.getShape(), boxType.getElementType(),
      StridedLayoutAttr::get(t.getContext(), ShapedType::kDynamic,
                             computeStrides(boxType.getShape())),
      boxType.getMemorySpace());
  for (int64_t panel = 0; panel < panels; ++panel) {
    Value offset = rowVector ? meta.getOffset()
                             : arith::AddIOp::create(t, loc, meta.getOffset(),
                                                     idx(panel * rows * 64))
                                   .getResult();
    Value dst =
        memref::ReinterpretCastOp::create(t, loc, dstType, meta.getBaseBuffer(),
                                          OpFoldResult(offset), sizes, strides);
    // Coordinates innermost first.
    SmallVector<Value> coords(source.offsets.rbegin(), source.offsets.rend());
    coords.front() =
        arith::AddIOp::create(t, loc, coords.front(), idx(panel * 64));
    nvgpu::TmaAsyncLoadOp::create(t, loc, dst, barriers, desc, coords, barrier,
                                  /*multicastMask=*/Value(), leader);
  }
}

/// The TMA form of a tile load in a key-block loop with two copies, built at
/// the cp.async branch's place, from the same iteration-dependent values, so
/// that it is cloned the same way; the copy is that of ring position
/// `iv - origin (+ base)`, and its mbarrier `firstBarrier` + the copy.
static scf::ExecuteRegionOp
buildTmaBranch(OpBuilder &b, scf::ForOp loop, Value origin, Value base,
               PaddedTileLoad load, const TmaSource &source, Value desc,
               Value barriers, int64_t firstBarrier, Value leader) {
  Location loc = loop.getLoc();
  auto branch = scf::ExecuteRegionOp::create(b, loc, TypeRange{});
  OpBuilder t = OpBuilder::atBlockEnd(&branch.getRegion().emplaceBlock());
  auto idx = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(t, loc, v);
  };
  Value copy = arith::RemUIOp::create(
      t, loc, ringPosition(t, loc, loop.getInductionVar(), origin, base),
      idx(2));
  Value barrier = arith::AddIOp::create(t, loc, copy, idx(firstBarrier));
  issueTmaBoxes(t, loc, load, source, desc, barriers, barrier, leader);
  scf::YieldOp::create(t, loc);
  return branch;
}

/// The `memref.view` of the dynamic shared memory that `shared` (a tile's
/// workgroup view, maybe a padded subview of it) was carved as.
static memref::ViewOp carvedViewOf(Value shared) {
  while (shared) {
    if (auto view = shared.getDefiningOp<memref::ViewOp>())
      return view;
    auto viewLike = shared.getDefiningOp<ViewLikeOpInterface>();
    shared = viewLike ? viewLike.getViewSource() : Value();
  }
  return nullptr;
}

/// Whether `op` comes before `loop` in a block that holds it (so that its
/// value is available anywhere in the loop).
static bool dominatesLoop(Operation *op, scf::ForOp loop) {
  Operation *ancestor = op->getBlock()->findAncestorOpInBlock(*loop);
  return ancestor && op->isBeforeInBlock(ancestor);
}

namespace {
/// The launch's mbarriers, carved from its dynamic shared memory after the
/// tiles rather than made by `nvgpu.mbarrier.create`: that op's storage is a
/// static shared variable, and the NVVM lowering declares the dynamic window
/// as one too (a demoted 1-byte `.shared` symbol at the start of the static
/// ones), so the tiles carved from it would overlap the barriers. Each group
/// is a view of 8-byte words cast to the group type that the nvgpu ops take
/// (both lower to the same memref descriptor); its place is fixed once every
/// tile's is (`place`).
class BarrierSpace {
public:
  /// Barriers are created and initialised right after `leader` (thread 0's
  /// predicate, at the start of the launch body), in order.
  explicit BarrierSpace(Value leader) : leader(leader) {
    cursor = leader.getDefiningOp();
    OpBuilder b(cursor->getBlock(), cursor->getBlock()->begin());
    window = gpu::DynamicSharedMemoryOp::create(
        b, cursor->getLoc(),
        MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                        MemRefLayoutAttrInterface(),
                        gpu::AddressSpaceAttr::get(
                            b.getContext(), gpu::AddressSpace::Workgroup)));
  }

  /// `n` mbarriers initialised with `count` arrivals each.
  Value allocate(Location loc, int64_t n, int64_t count) {
    MLIRContext *ctx = leader.getContext();
    OpBuilder b(ctx);
    b.setInsertionPointAfter(cursor);
    auto workgroup =
        gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
    auto words = MemRefType::get({n}, b.getI64Type(),
                                 MemRefLayoutAttrInterface(), workgroup);
    auto view = memref::ViewOp::create(
        b, loc, words, window.getResultMemref(),
        arith::ConstantIndexOp::create(b, loc, bytes), ValueRange{});
    views.push_back({view, bytes});
    bytes += 8 * n;
    Value group = UnrealizedConversionCastOp::create(
                      b, loc, nvgpu::MBarrierGroupType::get(ctx, workgroup, n),
                      view.getResult())
                      .getResult(0);
    for (int64_t i = 0; i < n; ++i)
      cursor = nvgpu::MBarrierInitOp::create(
          b, loc, group, arith::ConstantIndexOp::create(b, loc, count),
          arith::ConstantIndexOp::create(b, loc, i), leader);
    return group;
  }

  /// The last op that creates or initialises a barrier.
  Operation *initialised() const { return cursor; }

  /// Places the barriers from `end` (the tiles' end) on; returns their end.
  int64_t place(int64_t end) {
    int64_t at = llvm::alignTo(end, 8);
    for (auto [view, offset] : views) {
      OpBuilder b(view);
      view.getByteShiftMutable().assign(
          arith::ConstantIndexOp::create(b, view.getLoc(), at + offset));
    }
    return views.empty() ? end : at + bytes;
  }

private:
  Value leader;
  Operation *cursor;
  gpu::DynamicSharedMemoryOp window;
  SmallVector<std::pair<memref::ViewOp, int64_t>> views;
  int64_t bytes = 0;
};

/// One tile of a key-block loop with two copies: its load, the view it was
/// carved as, and the byte shifts of its two copies.
struct TileCopies {
  scf::ExecuteRegionOp branch;
  memref::ViewOp view;
  int64_t shift, copyShift;
  size_t load;
  /// The view of the current iteration's copy (set in the body).
  Value current = {};
};

/// A warp-specialised launch's key-block loops (one after another, each
/// starting where the previous one ends) share one ring of two copies per
/// tile: ring position r = iv - origin of any of them uses copy r mod 2. The
/// producer warpgroup issues position r's boxes once `empty[r mod 2]` says
/// the consumers released position r - 2 (its phase (r / 2 + 1) mod 2
/// completed); the consumers wait for `full[2 i + r mod 2]` (tile i) and
/// arrive on `empty[r mod 2]` at the end of their iteration.
///
/// When the loops run once per iteration of an `outer` loop (the dK/dV
/// kernel's loop over a GQA group's query heads) the positions run on across
/// its iterations: r = iv - origin + base, where `base` (an iteration
/// argument of `outer`, 0 at first) counts the positions of the earlier
/// iterations. The producer walks the same outer loop with its own count.
///
/// When the first copies share bytes with tiles the consumers use before the
/// loops (the buffer liveness gives a tile dead before the key loop its
/// bytes), the producer must not fill them before the consumers are past
/// those uses: they arrive on both `empty` barriers once, right before the
/// loops (`released`), and the producer's position r waits for phase r / 2
/// of its copy's barrier instead of r / 2 - 1.
struct WarpRing {
  Value origin, full, empty;
  scf::ForOp outer;
  Value base;
  bool startsReleased = false;
  /// Each loop with its TMA branches, which the producer clones per
  /// iteration.
  SmallVector<std::pair<scf::ForOp, SmallVector<scf::ExecuteRegionOp>>>
      templates;
  /// The tiles loaded once before the loops (per tile of a persistent
  /// launch): their TMA branches, which the producer issues before the
  /// ring's first position, the `headFull` mbarriers (one per tile) and, in
  /// a persistent launch, `headEmpty` (the consumers' release).
  SmallVector<scf::ExecuteRegionOp> heads;
  Value headFull, headEmpty;
};
} // namespace

/// The tiles loaded in `loop`'s body and where their second copies go (from
/// `extraStart` on, each 1024-byte aligned; `end` is past the last), or
/// nothing when a tile is not a plain carved load read after its load.
static std::optional<SmallVector<TileCopies>>
copiesOf(scf::ForOp loop, ArrayRef<scf::ExecuteRegionOp> issued,
         ArrayRef<PaddedTileLoad> loads, int64_t extraStart, int64_t &end) {
  Block *body = loop.getBody();
  SmallVector<TileCopies> entries;
  int64_t offset = extraStart;
  for (auto [k, constBranch, load] : llvm::enumerate(issued, loads)) {
    scf::ExecuteRegionOp branch = constBranch;
    if (!branch || branch->getBlock() != body)
      continue;
    memref::ViewOp view = carvedViewOf(load.shared);
    std::optional<int64_t> shift =
        view ? getConstantIntValue(view.getByteShift()) : std::nullopt;
    auto type = view ? view.getType() : MemRefType();
    if (!shift || !type.hasStaticShape() || !dominatesLoop(view, loop))
      return std::nullopt;
    // Every reader of the tile in the body comes after its load.
    llvm::DenseSet<Value> addresses = addressesOf(load);
    for (Operation &op : *body) {
      if (&op == branch.getOperation())
        break;
      if (&op != load.validRows && readsTile(&op, addresses) &&
          !isMemoryEffectFree(&op))
        return std::nullopt;
    }
    int64_t bytes = type.getNumElements() *
                    llvm::divideCeil(type.getElementTypeBitWidth(), 8);
    offset = llvm::alignTo(offset, 1024);
    entries.push_back({branch, view, *shift, offset, k});
    offset += bytes;
  }
  if (entries.empty())
    return std::nullopt;
  end = offset;
  return entries;
}

/// Whether an op of `body` other than the tile loads of `entries` and the
/// mbarrier operations may write workgroup memory (a memref without an
/// address space may be a shared tile cast to a generic one).
static bool writesSharedMemory(Block *body, ArrayRef<TileCopies> entries) {
  auto isWorkgroup = [](Value v) {
    auto type = dyn_cast<MemRefType>(v.getType());
    if (!type)
      return false;
    auto space = dyn_cast_or_null<gpu::AddressSpaceAttr>(type.getMemorySpace());
    return !type.getMemorySpace() ||
           (space && space.getValue() == gpu::AddressSpace::Workgroup);
  };
  for (Operation &op : *body) {
    if (llvm::any_of(entries, [&](const TileCopies &e) {
          return scf::ExecuteRegionOp(e.branch).getOperation() == &op;
        }))
      continue;
    WalkResult found = op.walk([&](Operation *inner) {
      if (isa<nvgpu::MBarrierArriveOp, nvgpu::MBarrierArriveExpectTxOp,
              nvgpu::MBarrierTryWaitParityOp>(inner))
        return WalkResult::advance();
      auto effects = dyn_cast<MemoryEffectOpInterface>(inner);
      if (!effects)
        return WalkResult::advance();
      SmallVector<MemoryEffects::EffectInstance> list;
      effects.getEffects(list);
      for (const MemoryEffects::EffectInstance &effect : list)
        if (isa<MemoryEffects::Write>(effect.getEffect()) &&
            effect.getValue() && isWorkgroup(effect.getValue()))
          return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (found.wasInterrupted())
      return true;
  }
  return false;
}

/// Every tile loaded in a key-block loop gets `stages` = 2 copies in shared
/// memory, used in turn: the tiles of iteration j + 1 are issued at the top
/// of iteration j, once the block is past iteration j - 1 (the last reader of
/// that copy), so each load has a whole iteration to land and the loop has
/// one wait and one barrier per iteration instead of two (FlashAttention-3's
/// two K/V stages, with cp.async). The copy of iteration j is chosen by the
/// parity of j - lb: its view is recomputed at the top of the body, so a load
/// issued for iteration j + 1 (the view's slice cloned for j + 1) writes the
/// other copy. The second copies are placed from `extraStart` on (shared by
/// the launch's loops, which run one after the other); `extraEnd` grows to
/// cover them. Returns false, changing nothing, when the loop's tiles are
/// not all plain carved loads read after their load, or when the copies
/// would pass `limit` bytes.
///
/// With a `ring` (a warp-specialised launch; every tile by TMA) the copies
/// are those of ring position iv - origin, nothing is issued here and the
/// body has no barrier: it waits for its position's `full` phase and
/// releases the position on `empty` at its end; its TMA branches are left
/// in the body for the producer (`ring.templates`).
static bool multiBufferLoop(scf::ForOp loop,
                            MutableArrayRef<scf::ExecuteRegionOp> issued,
                            ArrayRef<PaddedTileLoad> loads, int64_t extraStart,
                            int64_t &extraEnd, int64_t limit,
                            TensorMaps *tensorMaps,
                            ArrayRef<std::optional<TmaSource>> tmaSources,
                            Value leader, BarrierSpace *barrierSpace,
                            int64_t threads, WarpRing *ring = nullptr) {
  Block *body = loop.getBody();
  int64_t end = 0;
  std::optional<SmallVector<TileCopies>> found =
      copiesOf(loop, issued, loads, extraStart, end);
  if (!found || end > limit)
    return false;
  SmallVector<TileCopies> &entries = *found;
  extraEnd = std::max(extraEnd, end);

  Location loc = loop.getLoc();
  auto idx = [&](OpBuilder &b, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  // With tensor maps: one mbarrier per tile and copy, initialised once at
  // the launch's start, whose phases run on for the whole launch. A loop
  // that runs more than once per launch (the dK/dV kernel's query loop, in
  // its loop over a group's query heads) may use them when it sits directly
  // in the body of one scf.for whose iterations do not change its bounds:
  // each iteration of that loop runs it once with the same trip count, so
  // run k's phases are known (below). Other loops stay on cp.async.
  SmallVector<Operation *> enclosing;
  for (Operation *p = loop->getParentOp(); p && !isa<gpu::LaunchOp>(p);
       p = p->getParentOp())
    if (isa<LoopLikeOpInterface>(p))
      enclosing.push_back(p);
  auto outer = enclosing.size() == 1 && !ring
                   ? dyn_cast<scf::ForOp>(enclosing.front())
                   : scf::ForOp();
  bool phasesKnown =
      ring || enclosing.empty() ||
      (outer && loop->getParentOp() == outer.getOperation() &&
       llvm::all_of(ValueRange{loop.getLowerBound(), loop.getUpperBound(),
                               loop.getStep()},
                    [&](Value v) { return outer.isDefinedOutsideOfLoop(v); }));
  // Every tile of the loop by TMA, or none: a loop with a tile TMA cannot
  // load (a bias or mask tile narrower than its tensor's rows) stays on
  // cp.async as a whole, the schedule measured on the device.
  SmallVector<std::pair<TileCopies *, TmaSource>> viaTma;
  for (TileCopies &e : entries)
    if (tensorMaps && phasesKnown && tmaSources[e.load])
      viaTma.push_back({&e, *tmaSources[e.load]});
  if (viaTma.size() < entries.size())
    viaTma.clear();
  bool tma = !viaTma.empty();
  assert((!ring || tma) && "a warp-specialised loop loads by TMA");
  Value origin = ring ? ring->origin : loop.getLowerBound();
  Value base = ring ? ring->base : Value();
  Value barriers;
  if (tma) {
    barriers =
        ring ? ring->full : barrierSpace->allocate(loc, 2 * viaTma.size(), 1);
    for (auto [i, entryAndSource] : llvm::enumerate(viaTma)) {
      auto &[entry, source] = entryAndSource;
      TileCopies &e = *entry;
      const PaddedTileLoad &load = loads[e.load];
      Value desc = descriptorOf(*tensorMaps, source,
                                cast<MemRefType>(load.tile.getType()));
      OpBuilder at(e.branch);
      scf::ExecuteRegionOp branch = buildTmaBranch(
          at, loop, origin, base, load, source, desc, barriers, 2 * i, leader);
      e.branch->erase();
      e.branch = issued[e.load] = branch;
    }
  }
  // The top of the body: the copies of iteration j are in (and every thread
  // is past iteration j - 1); then the views of this iteration's copies.
  // A TMA tile's mbarrier is waited for once the next iteration's tiles are
  // issued.
  OpBuilder b = OpBuilder::atBlockBegin(body);
  if (!tma) {
    // cp.async.wait_group counts groups: any token does as the operand.
    OpBuilder before(loop);
    Value token = nvgpu::DeviceAsyncCreateGroupOp::create(
        before, loc, nvgpu::DeviceAsyncTokenType::get(loop.getContext()), {});
    nvgpu::DeviceAsyncWaitOp::create(b, loc, token, b.getI32IntegerAttr(0));
  }
  // In a ring the empty mbarriers keep the producer from refilling a copy
  // still read: the body needs no barrier (the warp tiles' one, before
  // shared tiles are refilled, goes) unless its threads also write shared
  // memory that others read (the dK/dV kernel's LSE and D columns): then
  // the next iteration's writes wait for this one's readers.
  if (auto barrier = dyn_cast<gpu::BarrierOp>(*b.getInsertionPoint())) {
    b.setInsertionPointAfter(barrier);
    if (ring && !writesSharedMemory(body, entries))
      barrier->erase();
  } else if (!ring) {
    gpu::BarrierOp::create(b, loc);
  }
  Value relative = ringPosition(b, loc, loop.getInductionVar(), origin, base);
  Value parity = arith::RemUIOp::create(b, loc, relative, idx(b, 2));
  for (TileCopies &e : entries) {
    Value shift = arith::AddIOp::create(
        b, loc, idx(b, e.shift),
        arith::MulIOp::create(b, loc, parity, idx(b, e.copyShift - e.shift)));
    Value view = memref::ViewOp::create(b, loc, e.view.getType(),
                                        e.view.getSource(), shift,
                                        e.view.getSizes());
    e.current = view;
    // The views, addresses and descriptors made from the tile before the
    // loop, made again from this iteration's copy for the body's uses.
    IRMapping map;
    map.map(e.view.getResult(), view);
    llvm::SetVector<Operation *> derived;
    SmallVector<Value> work = {e.view.getResult()};
    while (!work.empty()) {
      Value v = work.pop_back_val();
      for (Operation *user : v.getUsers())
        if (isMemoryEffectFree(user) && user->getNumRegions() == 0 &&
            dominatesLoop(user, loop) && derived.insert(user))
          llvm::append_range(work, user->getResults());
    }
    SmallVector<Value> originals = {e.view.getResult()};
    for (Operation *op : topologicalSort(derived)) {
      b.clone(*op, map);
      llvm::append_range(originals, op->getResults());
    }
    for (Value original : originals)
      original.replaceUsesWithIf(map.lookup(original), [&](OpOperand &use) {
        return loop->isProperAncestor(use.getOwner());
      });
  }
  // Next iteration's tiles into the other copies, issued now (measured
  // faster than after S = Q Kᵀ: docs/GPU-NOTES.md, 41).
  if (!ring) {
    Value next =
        arith::AddIOp::create(b, loc, loop.getInductionVar(), loop.getStep());
    for (const TileCopies &e : entries)
      issueFor(b, loop, e.branch, next);
  }
  if (tma) {
    // Iteration j's copy c = (j - lb) mod 2 completes its mbarrier's phase
    // (j - lb) / 2: wait for that phase's parity.
    Value copy = arith::RemUIOp::create(b, loc, relative, idx(b, 2));
    Value phase = arith::DivUIOp::create(b, loc, relative, idx(b, 2));
    if (outer) {
      // Run k of the loop (T iterations each) starts after k runs that used
      // copy 0 ceil(T / 2) times and copy 1 floor(T / 2) times.
      Value trips = arith::CeilDivUIOp::create(
          b, loc,
          arith::SubIOp::create(b, loc, loop.getUpperBound(),
                                loop.getLowerBound()),
          loop.getStep());
      Value run = iterationIndex(b, loc, outer);
      Value uses = arith::DivUIOp::create(
          b, loc,
          arith::SubIOp::create(
              b, loc, arith::AddIOp::create(b, loc, trips, idx(b, 1)), copy),
          idx(b, 2));
      phase = arith::AddIOp::create(b, loc, phase,
                                    arith::MulIOp::create(b, loc, run, uses));
    }
    phase = arith::RemUIOp::create(b, loc, phase, idx(b, 2));
    Value parity = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                         phase, idx(b, 0));
    Operation *lastWait = nullptr;
    for (int64_t i = 0, e = viaTma.size(); i < e; ++i)
      lastWait = nvgpu::MBarrierTryWaitParityOp::create(
          b, loc, barriers, parity, idx(b, kWaitTicks),
          arith::AddIOp::create(b, loc, copy, idx(b, 2 * i)));
    // Ragged tails that a reader needs zero, cleared once the box is in and
    // its valid count known (the count is computed in the body).
    for (auto &[entry, source] : viaTma) {
      if (!source.zeroTail)
        continue;
      Operation *after = lastWait;
      if (Operation *def = source.validRows.getDefiningOp();
          def && def->getBlock() == body && after->isBeforeInBlock(def))
        after = def;
      OpBuilder z(body, std::next(after->getIterator()));
      zeroTailRows(z, loc, entry->current, source.validRows, threads);
    }
    if (ring) {
      // Every thread is done with the position's copies once its body is:
      // the warpgroup MMAs reading them are waited for inside.
      OpBuilder release = OpBuilder::atBlockTerminator(body);
      nvgpu::MBarrierArriveOp::create(
          release, loc, nvgpu::MBarrierTokenType::get(loop.getContext()),
          ring->empty,
          arith::RemUIOp::create(release, loc, relative, idx(release, 2)));
      SmallVector<scf::ExecuteRegionOp> branches;
      for (TileCopies &e : entries) {
        branches.push_back(e.branch);
        issued[e.load] = nullptr;
      }
      ring->templates.push_back({loop, std::move(branches)});
      return true;
    }
  }
  // The first iteration's, before the loop: once the block is past whatever
  // ran before (the copies may share bytes with an earlier loop's tiles).
  {
    OpBuilder before(loop);
    gpu::BarrierOp::create(before, loc);
    for (const TileCopies &e : entries)
      issueFor(before, loop, e.branch, loop.getLowerBound());
  }
  for (const TileCopies &e : entries) {
    e.branch->erase();
    issued[e.load] = nullptr;
  }
  return true;
}

/// Whether a tile carved from the launch's dynamic shared memory other than
/// the ring's shares bytes with one of `ring` (byte ranges [shift, shift +
/// size)); nullopt when such a tile is used between `first` and `last` (ops
/// of the launch body: the ring's loops), which no start signal can order.
/// Uses after `last` are safe: every box the producer issues is waited for
/// in the loops.
static std::optional<bool>
ringSharesBytes(gpu::LaunchOp launch,
                ArrayRef<std::pair<int64_t, int64_t>> ring, Operation *first,
                Operation *last) {
  Block &body = launch.getBody().front();
  bool shares = false;
  bool unordered = false;
  launch.getBody().walk([&](memref::ViewOp view) {
    if (!view.getSource().getDefiningOp<gpu::DynamicSharedMemoryOp>())
      return;
    std::optional<int64_t> shift = getConstantIntValue(view.getByteShift());
    auto type = view.getType();
    if (!shift || !type.hasStaticShape() ||
        !type.getElementType().isIntOrFloat())
      return;
    int64_t size = type.getNumElements() *
                   llvm::divideCeil(type.getElementTypeBitWidth(), 8);
    bool overlaps = false;
    for (auto [start, bytes] : ring)
      if (*shift == start && size == bytes)
        return; // the ring's own tile
      else if (*shift < start + bytes && start < *shift + size)
        overlaps = true;
    if (!overlaps || type.getElementType().isInteger(64))
      return; // mbarrier words are placed after every tile
    shares = true;
    // Every use, through views, casts and address arithmetic, before
    // `first` or after `last`.
    SmallVector<Value> work = {view.getResult()};
    while (!work.empty()) {
      Value v = work.pop_back_val();
      for (Operation *user : v.getUsers()) {
        Operation *inBody = body.findAncestorOpInBlock(*user);
        if (!inBody ||
            (!inBody->isBeforeInBlock(first) && !last->isBeforeInBlock(inBody)))
          unordered = true;
        // Addresses made from the tile, not values read from it.
        if (isMemoryEffectFree(user))
          llvm::append_range(work, user->getResults());
      }
    }
  });
  if (unordered)
    return std::nullopt;
  return shares;
}

/// The ring of a warp-specialised launch, when its key-block loops allow one:
/// they sit in one block, the launch body's or that of an scf.for directly
/// in it (then `outer` gets an iteration argument counting the positions of
/// its earlier iterations), step by 1, each starts where the previous one
/// ends, and each loads the same tiles (all by TMA) into the same copies.
/// Creates the `full` (one per tile and copy, one arrival: the producer's
/// expect_tx) and `empty` (one per copy, one arrival per consumer thread)
/// mbarriers, initialised by `leader`, then a barrier of the whole block;
/// returns that barrier with the ring.
static std::optional<std::pair<WarpRing, gpu::BarrierOp>>
planWarpRing(gpu::LaunchOp launch, ArrayRef<scf::ForOp> loops,
             ArrayRef<scf::ExecuteRegionOp> issued,
             ArrayRef<PaddedTileLoad> loads,
             ArrayRef<std::optional<TmaSource>> tmaSources, int64_t extraStart,
             int64_t limit, Value leader, int64_t consumers,
             BarrierSpace &barrierSpace) {
  if (loops.empty())
    return std::nullopt;
  Operation *parent = scf::ForOp(loops.front())->getParentOp();
  auto outer = dyn_cast<scf::ForOp>(parent);
  if (parent != launch.getOperation() &&
      (!outer || outer->getParentOp() != launch.getOperation()))
    return std::nullopt;
  using Placement = std::tuple<int64_t, int64_t, MemRefType>;
  SmallVector<Placement> placement;
  for (auto [i, constLoop] : llvm::enumerate(loops)) {
    scf::ForOp loop = constLoop;
    scf::ForOp previous = i > 0 ? loops[i - 1] : scf::ForOp();
    if (loop->getParentOp() != parent ||
        getConstantIntValue(loop.getStep()) != 1 ||
        (previous && (loop.getLowerBound() != previous.getUpperBound() ||
                      !previous->isBeforeInBlock(loop))))
      return std::nullopt;
    int64_t end = 0;
    std::optional<SmallVector<TileCopies>> entries =
        copiesOf(loop, issued, loads, extraStart, end);
    if (!entries || end > limit)
      return std::nullopt;
    SmallVector<Placement> here;
    for (TileCopies &e : *entries) {
      if (!tmaSources[e.load])
        return std::nullopt;
      here.push_back({e.shift, e.copyShift, e.view.getType()});
    }
    if (i == 0)
      placement = here;
    else if (here != placement)
      return std::nullopt;
  }
  // The loops' structure in the launch body: the outer loop or the first.
  Operation *start = outer ? outer.getOperation() : scf::ForOp(loops.front());
  Operation *end = outer ? outer.getOperation() : scf::ForOp(loops.back());
  SmallVector<std::pair<int64_t, int64_t>> ringBytes;
  for (auto &[shift, copyShift, type] : placement)
    ringBytes.push_back(
        {shift, type.getNumElements() *
                    llvm::divideCeil(type.getElementTypeBitWidth(), 8)});
  std::optional<bool> shares = ringSharesBytes(launch, ringBytes, start, end);
  if (!shares)
    return std::nullopt;
  Location loc = launch.getLoc();
  WarpRing ring;
  ring.startsReleased = *shares;
  ring.origin = scf::ForOp(loops.front()).getLowerBound();
  if (outer) {
    // base' = base + (the last loop's ub - origin): this iteration's
    // positions.
    Value last = scf::ForOp(loops.back()).getUpperBound();
    IRRewriter rewriter(launch.getContext());
    rewriter.setInsertionPoint(outer);
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    FailureOr<LoopLikeOpInterface> counted = outer.replaceWithAdditionalYields(
        rewriter, zero, /*replaceInitOperandUsesInLoop=*/false,
        [&](OpBuilder &b, Location at, ArrayRef<BlockArgument> base) {
          Value span = arith::SubIOp::create(b, at, last, ring.origin);
          return SmallVector<Value>{
              arith::AddIOp::create(b, at, base.front(), span)};
        });
    if (failed(counted))
      return std::nullopt;
    ring.outer = cast<scf::ForOp>(counted->getOperation());
    ring.base = ring.outer.getRegionIterArgs().back();
  }
  ring.full = barrierSpace.allocate(loc, 2 * placement.size(), 1);
  ring.empty = barrierSpace.allocate(loc, 2, consumers);
  if (ring.startsReleased) {
    OpBuilder before(start);
    for (int64_t copy : {0, 1})
      nvgpu::MBarrierArriveOp::create(
          before, loc, nvgpu::MBarrierTokenType::get(launch.getContext()),
          ring.empty, arith::ConstantIndexOp::create(before, loc, copy));
  }
  OpBuilder b(launch.getContext());
  b.setInsertionPointAfter(barrierSpace.initialised());
  auto initialised = gpu::BarrierOp::create(b, loc);
  return std::make_pair(std::move(ring), initialised);
}

/// Every consumer thread arrives once per tile on `headEmpty` when it is done
/// with the head tile, whose last reader in the tile loop's body is
/// `lastReader`. When that reader is a key loop that reads the tile in its
/// own body (S = Q Kᵀ), the arrival is in the loop's last iteration, right
/// after that read, so that the producer loads the next tile's Q under this
/// tile's last softmax, P V and epilogue; a loop that runs no iteration
/// arrives after it. Otherwise the arrival follows `lastReader`.
static void releaseHeadTile(Operation *lastReader,
                            const llvm::DenseSet<Value> &addresses,
                            Value headEmpty) {
  Location loc = lastReader->getLoc();
  auto arrive = [&](OpBuilder &b) {
    Value first = arith::ConstantIndexOp::create(b, loc, 0);
    nvgpu::MBarrierArriveOp::create(
        b, loc, nvgpu::MBarrierTokenType::get(b.getContext()), headEmpty,
        first);
  };
  auto loop = dyn_cast<scf::ForOp>(lastReader);
  Operation *lastRead = nullptr;
  if (loop)
    for (Operation &op : loop.getBody()->without_terminator())
      if (readsTile(&op, addresses) && !isMemoryEffectFree(&op))
        lastRead = &op;
  OpBuilder after(lastReader->getBlock(), std::next(lastReader->getIterator()));
  if (!lastRead) {
    arrive(after);
    return;
  }
  auto ifThen = [&](OpBuilder &b, Value cond) {
    auto guard = scf::IfOp::create(b, loc, cond, /*withElseRegion=*/false);
    OpBuilder then = guard.getThenBodyBuilder();
    arrive(then);
  };
  OpBuilder in(lastRead->getBlock(), std::next(lastRead->getIterator()));
  Value next =
      arith::AddIOp::create(in, loc, loop.getInductionVar(), loop.getStep());
  ifThen(in, arith::CmpIOp::create(in, loc, arith::CmpIPredicate::sge, next,
                                   loop.getUpperBound()));
  ifThen(after,
         arith::CmpIOp::create(after, loc, arith::CmpIPredicate::sge,
                               loop.getLowerBound(), loop.getUpperBound()));
}

/// The tiles a warp-specialised launch loads once before its ring loops (the
/// forward's Q), when TMA can load them and no other tile shares their
/// bytes: the producer issues them ahead of the ring's first position, on
/// `headFull` (one mbarrier per tile), and the consumers wait for its phase
/// before the tile's first reader instead of copying it themselves. In a
/// persistent launch they load once per tile of the tile loop: the CTA's
/// k-th tile completes phase k, and the consumers release the copy on
/// `headEmpty` after its last reader so that the producer loads the next
/// tile's while they finish this one (FlashAttention-3's Q, from the
/// producer).
static void
loadHeadTilesByProducer(gpu::LaunchOp launch, WarpRing &ring,
                        MutableArrayRef<scf::ExecuteRegionOp> issued,
                        ArrayRef<PaddedTileLoad> loads,
                        ArrayRef<std::optional<TmaSource>> tmaSources,
                        TensorMaps &tensorMaps, BarrierSpace &barrierSpace,
                        Value leader, int64_t consumers) {
  if (ring.templates.empty())
    return;
  scf::ForOp firstLoop = ring.templates.front().first;
  Block *home = firstLoop->getBlock();
  Block &body = launch.getBody().front();
  bool persistent = ring.outer && ring.outer->hasAttr(flash::kTileLoopAttr);
  if (home != &body && !persistent)
    return;
  struct Head {
    size_t load;
    Operation *firstReader, *lastReader;
  };
  SmallVector<Head> heads;
  Operation *loopsInBody = body.findAncestorOpInBlock(*firstLoop);
  for (auto [k, branch] : llvm::enumerate(issued)) {
    // (A ragged head tile, a packed sequence's Q, stays on cp.async.)
    if (!branch || branch->getBlock() != home ||
        !branch->isBeforeInBlock(firstLoop) || !tmaSources[k] ||
        tmaSources[k]->validRows || !branch->getResult(0).use_empty())
      continue;
    memref::ViewOp view = carvedViewOf(loads[k].shared);
    std::optional<int64_t> shift =
        view ? getConstantIntValue(view.getByteShift()) : std::nullopt;
    if (!shift || !view.getType().hasStaticShape())
      continue;
    int64_t bytes =
        view.getType().getNumElements() *
        llvm::divideCeil(view.getType().getElementTypeBitWidth(), 8);
    std::optional<bool> shares =
        ringSharesBytes(launch, {{*shift, bytes}}, loopsInBody, loopsInBody);
    if (!shares || *shares)
      continue;
    llvm::DenseSet<Value> addresses = addressesOf(loads[k]);
    Head head{k, nullptr, nullptr};
    for (Operation *op = branch->getNextNode(); op; op = op->getNextNode())
      if (readsTile(op, addresses) && !isMemoryEffectFree(op)) {
        if (!head.firstReader)
          head.firstReader = op;
        head.lastReader = op;
      }
    if (head.firstReader)
      heads.push_back(head);
  }
  if (heads.empty())
    return;
  Location loc = launch.getLoc();
  auto idx = [&](OpBuilder &b, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  ring.headFull = barrierSpace.allocate(loc, heads.size(), 1);
  if (persistent)
    ring.headEmpty = barrierSpace.allocate(loc, 1, consumers);
  for (auto [i, head] : llvm::enumerate(heads)) {
    scf::ExecuteRegionOp copy = issued[head.load];
    const PaddedTileLoad &load = loads[head.load];
    Value desc = descriptorOf(tensorMaps, *tmaSources[head.load],
                              cast<MemRefType>(load.tile.getType()));
    OpBuilder at(copy);
    auto tma = scf::ExecuteRegionOp::create(at, loc, TypeRange{});
    OpBuilder t = OpBuilder::atBlockEnd(&tma.getRegion().emplaceBlock());
    issueTmaBoxes(t, loc, load, *tmaSources[head.load], desc, ring.headFull,
                  idx(t, i), leader);
    scf::YieldOp::create(t, loc);
    ring.heads.push_back(tma);

    OpBuilder wait(head.firstReader);
    Value parity;
    if (persistent) {
      // The CTA's k-th tile.
      Value k = iterationIndex(wait, loc, ring.outer);
      parity = arith::CmpIOp::create(
          wait, loc, arith::CmpIPredicate::ne,
          arith::RemUIOp::create(wait, loc, k, idx(wait, 2)), idx(wait, 0));
    } else {
      parity = arith::ConstantOp::create(wait, loc, wait.getBoolAttr(false));
    }
    nvgpu::MBarrierTryWaitParityOp::create(wait, loc, ring.headFull, parity,
                                           idx(wait, kWaitTicks), idx(wait, i));
    // The consumers meet once the tile is in, as after a cp.async wait:
    // without it their warpgroups leave the wait at different times and
    // their ping-pong settles 12-16% slower (docs/GPU-NOTES.md 62).
    gpu::BarrierOp::create(wait, loc);
    if (persistent)
      releaseHeadTile(head.lastReader, addressesOf(load), ring.headEmpty);
    copy->erase();
    issued[head.load] = nullptr;
  }
}

/// Whether `op` reads a kernel argument that nothing in `launch` writes (a
/// KV cache's lengths, a block table, packed sequences' offsets): reading
/// it again anywhere in the launch gives the same value. Kernel arguments
/// do not alias (the ABI's inputs and outputs are distinct tensors), so
/// only an op that takes the buffer or a view of it may write it: one that
/// writes memory, whose effects are unknown, or that takes its address.
static bool readsConstantInput(gpu::LaunchOp launch, Operation *op) {
  auto load = dyn_cast<memref::LoadOp>(op);
  if (!load)
    return false;
  Value root = flash::viewRoot(load.getMemRef());
  auto arg = dyn_cast<BlockArgument>(root);
  if (!arg || launch->isAncestor(arg.getOwner()->getParentOp()))
    return false;
  return !launch.getBody()
              .walk([&](Operation *inner) {
                if (isa<memref::LoadOp>(inner) ||
                    llvm::none_of(inner->getOperands(), [&](Value v) {
                      return isa<MemRefType>(v.getType()) &&
                             flash::viewRoot(v) == root;
                    }))
                  return WalkResult::advance();
                if (isa<memref::ExtractAlignedPointerAsIndexOp,
                        memref::ExtractStridedMetadataOp>(inner))
                  return WalkResult::interrupt();
                if (isa<ViewLikeOpInterface>(inner))
                  return WalkResult::advance();
                auto effects = dyn_cast<MemoryEffectOpInterface>(inner);
                if (!effects)
                  return WalkResult::interrupt();
                return effects.hasEffect<MemoryEffects::Write>()
                           ? WalkResult::interrupt()
                           : WalkResult::advance();
              })
              .wasInterrupted();
}

/// Makes `region` (the producer's, or its walk over an outer loop) compute
/// again at its start the values it uses from `home` (a block of the
/// consumers' code that is not its ancestor): their pure defining ops,
/// operands first, cloned through `again` (which may map induction
/// variables already), and loads of kernel arguments that the launch never
/// writes. Values defined before `before` in `home`, or outside
/// `home` when `before` is null, are left. Fails on an op with other effects
/// or regions (`where` says where it was looked for).
static LogicalResult recomputeInRegion(gpu::LaunchOp launch, Region &region,
                                       Block *home, Operation *before,
                                       IRMapping &again, StringRef where) {
  // (Not getUsedValuesDefinedAbove: `home` is no ancestor of `region`.)
  llvm::SetVector<Value> used;
  region.walk([&](Operation *op) {
    for (Value v : op->getOperands())
      if (!region.isAncestor(v.getParentRegion()))
        used.insert(v);
  });
  OpBuilder at = OpBuilder::atBlockBegin(&region.front());
  std::function<LogicalResult(Value)> recompute =
      [&](Value v) -> LogicalResult {
    Operation *def = v.getDefiningOp();
    if (!def || again.contains(v))
      return success();
    bool inHome = def->getBlock() == home;
    if ((!inHome && !before) ||
        (inHome && before && def->isBeforeInBlock(before)))
      return success();
    if (!inHome ||
        !(isMemoryEffectFree(def) || readsConstantInput(launch, def)) ||
        def->getNumRegions())
      return launch.emitError("flash-gpu-async-tile-loads: the TMA producer "
                              "needs ")
             << v << ", which is not a pure computation " << where;
    for (Value operand : def->getOperands())
      if (failed(recompute(operand)))
        return failure();
    at.clone(*def, again);
    return success();
  };
  for (Value v : used)
    if (failed(recompute(v)))
      return failure();
  for (auto [from, to] : again.getValueMap())
    replaceAllUsesInRegionWith(from, to, region);
  return success();
}

/// The producer warpgroup of a warp-specialised launch, right after
/// `initialised`: threads `consumers` ... `consumers` + 127; the first of
/// them walks the ring loops' iterations in order and, for each, waits until
/// the consumers released the position's copies and issues the iteration's
/// TMA branches (cloned from the consumer loops, which then drop them). The
/// values the clones need from the launch body are computed again inside
/// (pure index and view arithmetic), so that the producer depends only on
/// what precedes it. The consumers are the rest of the body, which
/// `--flash-gpu-split-warp-roles` wraps once the mapping is complete.
static LogicalResult buildProducer(gpu::LaunchOp launch, WarpRing &ring,
                                   gpu::BarrierOp initialised, Value leader,
                                   int64_t consumers) {
  Location loc = launch.getLoc();
  OpBuilder b(initialised->getBlock(), std::next(initialised->getIterator()));
  auto idx = [&](OpBuilder &at, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(at, loc, v);
  };
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  auto producer =
      scf::IfOp::create(b, loc,
                        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge,
                                              tid, idx(b, consumers)),
                        /*withElseRegion=*/false);
  producer->setAttr(flash::kWarpRoleAttr, b.getStringAttr("producer"));
  OpBuilder p = producer.getThenBodyBuilder();
  auto issuer =
      scf::IfOp::create(p, loc,
                        arith::CmpIOp::create(p, loc, arith::CmpIPredicate::eq,
                                              tid, idx(p, consumers)),
                        /*withElseRegion=*/false);
  OpBuilder ib = issuer.getThenBodyBuilder();
  Value on = arith::ConstantOp::create(ib, loc, ib.getBoolAttr(true));
  // With an outer loop the producer walks it too, counting its own
  // positions; the values its iterations need from the consumers' outer
  // body are computed again in its own (below).
  scf::ForOp runs;
  Value base;
  if (ring.outer) {
    runs = scf::ForOp::create(ib, loc, ring.outer.getLowerBound(),
                              ring.outer.getUpperBound(), ring.outer.getStep(),
                              ValueRange{idx(ib, 0)});
    base = runs.getRegionIterArgs().front();
    ib.setInsertionPointToStart(runs.getBody());
  }
  // The tiles loaded before the loops, once the consumers released the
  // previous tile's copies (the k-th tile's wait passes phase k - 1; the
  // first passes at once).
  if (ring.headEmpty) {
    Value k = iterationIndex(ib, loc, runs);
    Value parity = arith::CmpIOp::create(
        ib, loc, arith::CmpIPredicate::ne,
        arith::RemUIOp::create(
            ib, loc, arith::AddIOp::create(ib, loc, k, idx(ib, 1)), idx(ib, 2)),
        idx(ib, 0));
    nvgpu::MBarrierTryWaitParityOp::create(ib, loc, ring.headEmpty, parity,
                                           idx(ib, kWaitTicks), idx(ib, 0));
  }
  for (scf::ExecuteRegionOp head : ring.heads) {
    IRMapping map;
    map.map(leader, on);
    ib.clone(*head, map);
    head->erase();
  }
  for (auto &[loop, branches] : ring.templates) {
    auto copies = scf::ForOp::create(ib, loc, loop.getLowerBound(),
                                     loop.getUpperBound(), loop.getStep());
    OpBuilder lb = OpBuilder::atBlockTerminator(copies.getBody());
    Value r =
        ringPosition(lb, loc, copies.getInductionVar(), ring.origin, base);
    Value copy = arith::RemUIOp::create(lb, loc, r, idx(lb, 2));
    // Position r - 2's release completed phase r / 2 - 1 of empty[copy];
    // the first two positions pass at once (phase parity 1 of a fresh
    // barrier). With the consumers' start arrivals every phase is one later.
    Value half = arith::DivUIOp::create(lb, loc, r, idx(lb, 2));
    Value released = arith::RemUIOp::create(
        lb, loc,
        ring.startsReleased ? half
                            : arith::AddIOp::create(lb, loc, half, idx(lb, 1)),
        idx(lb, 2));
    // The boxes' coordinates: computed after the wait, but where they need
    // a load from global memory (a paged cache's table entry) before it,
    // so that its latency passes during the wait (that producer has the
    // registers: kLoadingProducerRegisters; the others spill at 24 when
    // their coordinates live across the wait).
    IRMapping map;
    map.map(loop.getInductionVar(), copies.getInductionVar());
    map.map(leader, on);
    if (base)
      map.map(ring.base, base);
    SmallVector<SmallVector<Operation *>> slices;
    llvm::SmallPtrSet<Operation *, 16> checked;
    bool loads = false;
    for (scf::ExecuteRegionOp branch : branches) {
      slices.push_back(blockSlice(branch, loop.getBody()));
      for (Operation *op : slices.back()) {
        loads |= isa<memref::LoadOp>(op);
        if (!checked.insert(op).second || isMemoryEffectFree(op) ||
            readsConstantInput(launch, op))
          continue;
        return launch.emitError("flash-gpu-async-tile-loads: the TMA "
                                "producer's coordinates need ")
               << *op << ", which reads memory the launch may write";
      }
    }
    auto cloneSlice = [&](ArrayRef<Operation *> slice) {
      for (Operation *op : slice)
        if (!map.contains(op->getResult(0)))
          lb.clone(*op, map);
    };
    if (loads)
      for (ArrayRef<Operation *> slice : slices)
        cloneSlice(slice);
    nvgpu::MBarrierTryWaitParityOp::create(
        lb, loc, ring.empty,
        arith::CmpIOp::create(lb, loc, arith::CmpIPredicate::ne, released,
                              idx(lb, 0)),
        idx(lb, kWaitTicks), copy);
    for (auto [branch, slice] : llvm::zip_equal(branches, slices)) {
      if (!loads)
        cloneSlice(slice);
      lb.clone(*branch, map);
    }
    for (scf::ExecuteRegionOp branch : branches)
      branch->erase();
  }
  if (runs) {
    OpBuilder end = OpBuilder::atBlockEnd(runs.getBody());
    Value span = arith::SubIOp::create(
        end, loc, ring.templates.back().first.getUpperBound(), ring.origin);
    scf::YieldOp::create(
        end, loc, ValueRange{arith::AddIOp::create(end, loc, base, span)});
    // What the iterations use from the consumers' outer body: pure values,
    // computed again from the producer's own induction variable.
    IRMapping again;
    again.map(ring.outer.getInductionVar(), runs.getInductionVar());
    if (failed(recomputeInRegion(launch, runs.getRegion(), ring.outer.getBody(),
                                 /*before=*/nullptr, again,
                                 "in the outer loop")))
      return failure();
  }

  // What the clones use from the launch body after the producer, computed
  // again at its start.
  IRMapping again;
  if (failed(recomputeInRegion(launch, producer.getThenRegion(),
                               &launch.getBody().front(), producer, again,
                               "before the loops")))
    return failure();
  launch->setAttr(flash::kWarpSpecializedAttr, b.getI64IntegerAttr(consumers));
  return success();
}

/// The cp.async copies of a padded f32 row vector: thread t copies element
/// t, t + threads, ... (4 bytes; zeros past the valid ones), one group.
static scf::ExecuteRegionOp issueRowVector(OpBuilder &b, PaddedTileLoad &load,
                                           int64_t threads) {
  Location loc = load.copy.getLoc();
  MLIRContext *ctx = b.getContext();
  auto tokenType = nvgpu::DeviceAsyncTokenType::get(ctx);
  auto type = cast<MemRefType>(load.tile.getType());
  int64_t n = type.getDimSize(0);
  auto branch = scf::ExecuteRegionOp::create(b, loc, TypeRange{tokenType});
  OpBuilder t = OpBuilder::atBlockEnd(&branch.getRegion().emplaceBlock());
  auto idx = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(t, loc, v);
  };
  Value tid = gpu::ThreadIdOp::create(t, loc, gpu::Dimension::x);
  auto meta =
      memref::ExtractStridedMetadataOp::create(t, loc, load.copy.getSource());
  auto unitStride =
      MemRefType::get({ShapedType::kDynamic}, type.getElementType(),
                      StridedLayoutAttr::get(ctx, ShapedType::kDynamic, {1}));
  Value source = memref::ReinterpretCastOp::create(
      t, loc, unitStride, meta.getBaseBuffer(), OpFoldResult(meta.getOffset()),
      ArrayRef<OpFoldResult>{meta.getSizes()[0]},
      ArrayRef<OpFoldResult>{t.getIndexAttr(1)});
  Value valid = getValueOrCreateConstantIndexOp(
      t, loc, load.validRows.getMixedSizes()[0]);
  for (int64_t first = 0; first < n; first += threads) {
    Value e = arith::AddIOp::create(t, loc, tid, idx(first));
    Value inTile =
        arith::CmpIOp::create(t, loc, arith::CmpIPredicate::ult, e, idx(n));
    auto guard = scf::IfOp::create(t, loc, inTile, /*withElseRegion=*/false);
    OpBuilder in = guard.getThenBodyBuilder();
    Value inside =
        arith::CmpIOp::create(in, loc, arith::CmpIPredicate::ult, e, valid);
    Value src = arith::SelectOp::create(
        in, loc, inside, e, arith::ConstantIndexOp::create(in, loc, 0));
    Value count = arith::SelectOp::create(
        in, loc, inside, arith::ConstantIndexOp::create(in, loc, 1),
        arith::ConstantIndexOp::create(in, loc, 0));
    nvgpu::DeviceAsyncCopyOp::create(in, loc, tokenType, load.shared,
                                     ValueRange{e}, source, ValueRange{src},
                                     in.getIndexAttr(1), count, UnitAttr());
  }
  // The group commits this thread's copies; the token orders nothing else.
  Value group =
      nvgpu::DeviceAsyncCreateGroupOp::create(t, loc, tokenType, ValueRange{});
  scf::YieldOp::create(t, loc, group);
  return branch;
}

LogicalResult flash::lowerAsyncTileLoads(gpu::LaunchOp launch, int64_t threads,
                                         int64_t stages, int64_t sharedLimit,
                                         bool tensorMapLoads,
                                         bool warpSpecialize, bool rowVectors,
                                         bool raggedTails,
                                         bool perIterationRows) {
  SmallVector<PaddedTileLoad> loads;
  memref::CopyOp intoSwizzled;
  launch.getBody().walk([&](memref::CopyOp copy) {
    if (auto load = flash::matchPaddedTileLoad(copy, rowVectors)) {
      loads.push_back(*load);
      return;
    }
    // Only these loads place a swizzled tile's bytes: another copy into it
    // would write rows in order.
    Value target = copy.getTarget();
    if (auto view = target.getDefiningOp<memref::SubViewOp>())
      target = view.getSource();
    if (flash::isSwizzledTile(target))
      intoSwizzled = copy;
  });
  if (intoSwizzled)
    return intoSwizzled.emitError(
        "flash-gpu-async-tile-loads: a copy into a swizzled shared tile that "
        "is not a load of whole rows (cp.async or TMA would place its bytes)");
  if (loads.empty())
    return success();
  MLIRContext *ctx = launch.getContext();
  Location loc = launch.getLoc();
  auto tokenType = nvgpu::DeviceAsyncTokenType::get(ctx);

  // cp.async moves 16 aligned bytes: the kernel requires every loaded row to
  // be contiguous and 16-byte aligned (the manifest says so, and names a
  // general kernel for other strides). A kernel called with other rows stops
  // with a trap at entry rather than reading misaligned memory.
  Block &body = launch.getBody().front();
  {
    OpBuilder b = OpBuilder::atBlockBegin(&body);
    Value aligned = arith::ConstantOp::create(b, loc, b.getBoolAttr(true));
    llvm::SetVector<Value> roots;
    for (PaddedTileLoad &load : loads) {
      Value root = flash::viewRoot(load.copy.getSource());
      if (!roots.insert(root))
        continue;
      auto rootType = cast<MemRefType>(root.getType());
      // Row vectors are copied element by element: a unit stride will do.
      int64_t perChunk = cast<MemRefType>(load.tile.getType()).getRank() == 1
                             ? 1
                             : 128 / rootType.getElementTypeBitWidth();
      aligned = arith::AndIOp::create(
          b, loc, aligned, flash::rowsAreAligned(b, loc, root, perChunk));
    }
    Value misaligned = arith::XOrIOp::create(
        b, loc, aligned, arith::ConstantOp::create(b, loc, b.getBoolAttr(true)));
    auto guard = scf::IfOp::create(b, loc, misaligned, /*withElseRegion=*/false);
    OpBuilder trap = guard.getThenBodyBuilder();
    LLVM::Trap::create(trap, loc);
  }

  // Where each load reads, for TMA, matched before the copies are replaced.
  SmallVector<std::optional<TmaSource>> tmaSources;
  for (PaddedTileLoad &load : loads) {
    std::optional<TmaSource> source;
    if (tensorMapLoads && stages >= 2)
      source = matchTmaSource(
          load, raggedTails && !launch->hasAttr(flash::kPersistentAttr));
    if (source && source->validRows) {
      // The tail is cleared through the carved view: it must be the tile.
      memref::ViewOp view = carvedViewOf(load.shared);
      std::optional<bool> zeros = tailNeedsZeros(load);
      if (zeros && view &&
          view.getType().getShape() ==
              cast<MemRefType>(load.tile.getType()).getShape())
        source->zeroTail = *zeros;
      else
        source.reset();
    }
    tmaSources.push_back(source);
  }
  SmallVector<scf::ExecuteRegionOp> issued;
  for (PaddedTileLoad &load : loads) {
    OpBuilder b(load.copy);
    auto type = cast<MemRefType>(load.tile.getType());
    if (type.getRank() == 1) {
      issued.push_back(issueRowVector(b, load, threads));
      load.copy->erase();
      load.zeroFill->erase();
      continue;
    }
    int64_t rows = type.getDimSize(0), cols = type.getDimSize(1);
    int64_t vec = 128 / type.getElementTypeBitWidth();
    int64_t chunksPerRow = cols / vec, chunks = rows * chunksPerRow;
    auto branch = scf::ExecuteRegionOp::create(b, loc, TypeRange{tokenType});
    {
      OpBuilder t = OpBuilder::atBlockEnd(&branch.getRegion().emplaceBlock());
      auto tIdx = [&](int64_t v) -> Value {
        return arith::ConstantIndexOp::create(t, loc, v);
      };
      Value tid = gpu::ThreadIdOp::create(t, loc, gpu::Dimension::x);
      if (perIterationRows)
        tid = flash::mma_sync::perIterationCoordinate(t, loc, tid);
      auto meta =
          memref::ExtractStridedMetadataOp::create(t, loc, load.copy.getSource());
      auto unitStride = MemRefType::get(
          {ShapedType::kDynamic, cols}, type.getElementType(),
          StridedLayoutAttr::get(ctx, ShapedType::kDynamic,
                                 {ShapedType::kDynamic, 1}));
      Value source = memref::ReinterpretCastOp::create(
          t, loc, unitStride, meta.getBaseBuffer(),
          OpFoldResult(meta.getOffset()),
          ArrayRef<OpFoldResult>{meta.getSizes()[0], t.getIndexAttr(cols)},
          ArrayRef<OpFoldResult>{meta.getStrides()[0], t.getIndexAttr(1)});
      Value valid = getValueOrCreateConstantIndexOp(
          t, loc, load.validRows.getMixedSizes()[0]);
      // A tile read by wgmma is written in its swizzled layout, through a
      // flat view.
      Value target = load.shared;
      bool swizzled = flash::isSwizzledTile(load.tile);
      if (swizzled)
        target = memref::CollapseShapeOp::create(
            t, loc, load.shared, ArrayRef<ReassociationIndices>{{0, 1}});
      SmallVector<Value> tokens;
      // When the block's threads cover whole rows, each pass moves the same
      // columns of rows further down: one column and a row step.
      bool wholeRows = threads % chunksPerRow == 0 && chunks % threads == 0;
      Value firstRow = arith::DivUIOp::create(t, loc, tid, tIdx(chunksPerRow));
      Value laneCol = arith::MulIOp::create(
          t, loc, arith::RemUIOp::create(t, loc, tid, tIdx(chunksPerRow)),
          tIdx(vec));
      for (int64_t first = 0; first < chunks; first += threads) {
        Value row, col;
        if (wholeRows) {
          row = arith::AddIOp::create(t, loc, firstRow,
                                      tIdx(first / chunksPerRow));
          col = laneCol;
        } else {
          // Threads past the end repeat the last chunk (same bytes, same
          // place) rather than branch around the copy.
          Value chunk = arith::MinUIOp::create(
              t, loc, arith::AddIOp::create(t, loc, tid, tIdx(first)),
              tIdx(chunks - 1));
          row = arith::DivUIOp::create(t, loc, chunk, tIdx(chunksPerRow));
          col = arith::MulIOp::create(
              t, loc, arith::RemUIOp::create(t, loc, chunk, tIdx(chunksPerRow)),
              tIdx(vec));
        }
        Value inside =
            arith::CmpIOp::create(t, loc, arith::CmpIPredicate::ult, row, valid);
        // Rows past the valid ones read nothing and are zero-filled.
        Value srcRow = arith::SelectOp::create(t, loc, inside, row, tIdx(0));
        Value count = arith::SelectOp::create(t, loc, inside, tIdx(vec), tIdx(0));
        SmallVector<Value> at = {row, col};
        if (swizzled)
          at = {flash::swizzledOffset(t, loc, row, col, rows)};
        tokens.push_back(nvgpu::DeviceAsyncCopyOp::create(
            t, loc, tokenType, target, at, source,
            ValueRange{srcRow, col}, t.getIndexAttr(vec), count,
            t.getUnitAttr()));
      }
      Value group =
          nvgpu::DeviceAsyncCreateGroupOp::create(t, loc, tokenType, tokens);
      scf::YieldOp::create(t, loc, group);
    }
    load.copy->erase();
    load.zeroFill->erase();
    issued.push_back(branch);
  }

  llvm::SmallPtrSet<Operation *, 8> pipelined;
  SmallVector<scf::ForOp> loops;
  // Key-block loops; a persistent launch's tile loop loads its tiles (Q)
  // once per iteration, as a launch body does.
  for (scf::ExecuteRegionOp branch : issued)
    if (auto loop = dyn_cast<scf::ForOp>(branch->getParentOp());
        loop && !loop->hasAttr(flash::kTileLoopAttr) &&
        !llvm::is_contained(loops, loop))
      loops.push_back(loop);
  auto carved = launch->getAttrOfType<IntegerAttr>(flash::kSharedMemoryBytesAttr);
  int64_t extraStart = llvm::alignTo(carved ? carved.getInt() : 0, 1024);
  int64_t extraEnd = extraStart;
  std::optional<TensorMaps> tensorMaps;
  Value leader;
  if (tensorMapLoads && stages >= 2) {
    tensorMaps.emplace(launch);
    OpBuilder b = OpBuilder::atBlockBegin(&body);
    leader = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::eq,
        gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x),
        arith::ConstantIndexOp::create(b, loc, 0));
  }
  std::optional<BarrierSpace> barrierSpace;
  if (tensorMaps)
    barrierSpace.emplace(leader);
  std::optional<std::pair<WarpRing, gpu::BarrierOp>> ring;
  if (tensorMaps && warpSpecialize)
    ring = planWarpRing(launch, loops, issued, loads, tmaSources, extraStart,
                        sharedLimit, leader, threads, *barrierSpace);
  for (scf::ForOp loop : loops)
    if (stages < 2 ||
        !multiBufferLoop(loop, issued, loads, extraStart, extraEnd, sharedLimit,
                         tensorMaps ? &*tensorMaps : nullptr, tmaSources,
                         leader, barrierSpace ? &*barrierSpace : nullptr,
                         threads, ring ? &ring->first : nullptr))
      pipelineLoop(loop, issued, loads, pipelined);
  if (ring)
    loadHeadTilesByProducer(launch, ring->first, issued, loads, tmaSources,
                            *tensorMaps, *barrierSpace, leader, threads);
  if (barrierSpace)
    extraEnd = barrierSpace->place(extraEnd);
  if (ring &&
      failed(buildProducer(launch, ring->first, ring->second, leader, threads)))
    return failure();
  if (extraEnd > extraStart) {
    OpBuilder b(launch);
    launch->setAttr(flash::kSharedMemoryBytesAttr, b.getI64IntegerAttr(extraEnd));
    launch.getDynamicSharedMemorySizeMutable().assign(
        arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(extraEnd)));
  }

  // Elsewhere each load is waited for (then a barrier, for the other
  // threads' bytes) just before the first op of its block that reads the
  // tile; groups issued after it may stay in flight.
  llvm::SmallPtrSet<Operation *, 8> isLoad;
  for (scf::ExecuteRegionOp branch : issued)
    if (branch)
      isLoad.insert(branch);
  for (auto [branch, load] : llvm::zip(issued, loads)) {
    if (!branch || pipelined.contains(branch))
      continue;
    int64_t later = 0;
    Operation *reader = nullptr;
    llvm::DenseSet<Value> addresses = addressesOf(load);
    for (Operation *next = branch->getNextNode(); next;
         next = next->getNextNode()) {
      if (isLoad.contains(next)) {
        ++later;
        continue;
      }
      if (readsTile(next, addresses) && !isMemoryEffectFree(next)) {
        reader = next;
        break;
      }
    }
    OpBuilder b = reader ? OpBuilder(reader)
                         : OpBuilder::atBlockTerminator(branch->getBlock());
    nvgpu::DeviceAsyncWaitOp::create(b, loc, branch.getResult(0),
                                     b.getI32IntegerAttr(later));
    gpu::BarrierOp::create(b, loc);
  }

  // wgmma reads shared memory through the async proxy: each thread's copies,
  // once complete, are fenced towards it before the barrier that publishes
  // them.
  if (launch->hasAttr(flash::kWgmmaAttr))
    launch.getBody().walk([&](nvgpu::DeviceAsyncWaitOp wait) {
      OpBuilder b(wait->getBlock(), std::next(wait->getIterator()));
      NVVM::FenceProxyOp::create(
          b, loc, NVVM::ProxyKind::async_shared,
          NVVM::SharedSpaceAttr::get(ctx, NVVM::SharedSpace::shared_cta));
    });
  return success();
}

namespace {
struct FlashGpuAsyncTileLoadsPass
    : flash::impl::FlashGpuAsyncTileLoadsPassBase<FlashGpuAsyncTileLoadsPass> {
  using Base::Base;
  void runOnOperation() override {
    if (loadStages != 1 && loadStages != 2) {
      emitError(getOperation()->getLoc(),
                "flash-gpu-async-tile-loads: load-stages must be 1 or 2 "
                "(copies of each key-block tile), not ")
          << static_cast<int64_t>(loadStages);
      return signalPassFailure();
    }
    for (gpu::LaunchOp launch : flash::collectLaunches(getOperation())) {
      FailureOr<int64_t> threads =
          flash::launchThreads(launch, "flash-gpu-async-tile-loads");
      if (failed(threads))
        return signalPassFailure();
      // The LSE and D rows by cp.async or TMA too, so far in the atomic
      // backward's dK/dV kernel only (docs/GPU-NOTES.md 56 and 63; the
      // other kernels unmeasured).
      bool tensorMapLoads = tmaLoads && launch->hasAttr(flash::kWgmmaAttr);
      bool rowVectors =
          flash::addsAtomically(launch) && (!tensorMapLoads || tmaRowVectors);
      if (failed(flash::lowerAsyncTileLoads(
              launch, *threads, loadStages,
              flash::maxSharedMemoryPerBlock(chip), tensorMapLoads,
              warpSpecialize, rowVectors, raggedTma, perIterationLanes)))
        return signalPassFailure();
    }
  }
};
} // namespace
