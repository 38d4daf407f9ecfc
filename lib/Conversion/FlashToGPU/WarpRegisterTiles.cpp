//===- WarpRegisterTiles.cpp - tiles held in warp registers -----*- C++ -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#include "WarpRegisterTiles.h"
#include "BufferLiveness.h"
#include "GpuMapping.h"
#include "MmaSyncFragments.h"
#include "TileContraction.h"

#include "flash/Conversion/Passes.h"
#include "flash/Dialect/Flash/IR/TileRoles.h"
#include "flash/Dialect/FlashGPU/IR/FlashGPUOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir::flash {
#define GEN_PASS_DEF_FLASHGPUWARPREGISTERTILESPASS
#include "flash/Conversion/Passes.h.inc"
} // namespace mlir::flash

using namespace mlir;
using namespace mlir::flash;

/// The single combiner `in (op) out` of a row-reduction body, or null.
/// `v` of the lane `offset` away by xor, tagged as the register tiles'
/// exchange (the driver reads the tag: outlining keeps no launch attribute).
static Value shuffleXor(OpBuilder &b, Location loc, Value v, int32_t offset) {
  auto shuffle =
      gpu::ShuffleOp::create(b, loc, v, offset, 32, gpu::ShuffleMode::XOR);
  shuffle->setAttr(kWarpRegisterTilesAttr, b.getUnitAttr());
  return shuffle.getShuffleResult();
}

static Operation *getReductionCombiner(linalg::GenericOp op) {
  Block *body = op.getBody();
  if (body->getOperations().size() != 2)
    return nullptr;
  Operation *combiner = &body->front();
  if (!isa<arith::AddFOp, arith::MulFOp, arith::MaximumFOp, arith::MinimumFOp,
           arith::MaxNumFOp, arith::MinNumFOp>(combiner) ||
      body->getTerminator()->getOperand(0) != combiner->getResult(0))
    return nullptr;
  Value lhs = combiner->getOperand(0), rhs = combiner->getOperand(1);
  Value in = body->getArgument(0), out = body->getArgument(1);
  if (!((lhs == in && rhs == out) || (lhs == out && rhs == in)))
    return nullptr;
  return combiner;
}

static bool isRowReduction(linalg::GenericOp op) {
  MLIRContext *ctx = op.getContext();
  auto rowMap = AffineMap::get(2, 0, getAffineDimExpr(0, ctx), ctx);
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  return op.getNumLoops() == 2 && op.getNumDpsInputs() == 1 &&
         op.getIteratorTypesArray()[1] == utils::IteratorType::reduction &&
         op.getIteratorTypesArray()[0] == utils::IteratorType::parallel &&
         maps[0].isIdentity() && maps[1] == rowMap && getReductionCombiner(op);
}

WarpRegisterTiles::WarpRegisterTiles(gpu::LaunchOp launch, int64_t warps)
    : launch(launch), warps(warps) {}

void WarpRegisterTiles::analyze(bool withWgmma, bool swizzleLdmatrix) {
  tiles.clear();
  swizzled.clear();
  rows = 0;
  wgmma = false;
  SmallVector<memref::AllocOp> allocs;
  launch.getBody().walk([&](memref::AllocOp a) { allocs.push_back(a); });
  // The rows the block owns: those of the nest's accumulators (O, dQ, dK,
  // dV), the Cs of the contractions the tiler tagged as accumulating; all
  // must agree (else no register tiles).
  bool agree = true;
  launch.getBody().walk([&](linalg::GenericOp op) {
    std::optional<Contraction> role = getContraction(op);
    auto c = dyn_cast<MemRefType>(op.getDpsInits()[0].getType());
    if (!role || !isAccumulating(*role))
      return;
    if (!c || c.getRank() != 2 || !c.hasStaticShape() ||
        (rows && rows != c.getDimSize(0)))
      agree = false;
    else
      rows = c.getDimSize(0);
  });
  if (!agree)
    rows = 0;
  if (warps <= 0 || rows == 0 || rows % (16 * warps) != 0)
    return;
  for (memref::AllocOp a : allocs) {
    MemRefType t = a.getType();
    Type e = t.getElementType();
    if (!t.hasStaticShape() || !t.getLayout().isIdentity() ||
        t.getMemorySpace() || t.getDimSize(0) != rows)
      continue;
    if ((t.getRank() == 1 && e.isF32()) ||
        (t.getRank() == 2 && t.getDimSize(1) % 8 == 0 &&
         (e.isF32() || e.isF16() || e.isBF16())))
      tiles.insert(a.getResult());
  }
  // Tiles loaded from global memory, and B operands, are shared-memory tiles
  // whatever their shape (K and V when Bc equals Br).
  auto loadedOrReadAsB = [&](Value tile) {
    for (Operation *user : tile.getUsers()) {
      if (isa<linalg::MapOp>(user))
        return true;
      if (auto view = dyn_cast<memref::SubViewOp>(user))
        for (Operation *viewUser : view->getUsers())
          if (auto copy = dyn_cast<memref::CopyOp>(viewUser);
              copy && copy.getTarget() == view.getResult())
            return true;
      if (auto copy = dyn_cast<memref::CopyOp>(user);
          copy && copy.getTarget() == tile &&
          !copy.getSource().getDefiningOp<memref::AllocOp>())
        return true;
      if (auto generic = dyn_cast<linalg::GenericOp>(user))
        if (auto m = matchTileContraction(generic); m && m->b == tile)
          return true;
    }
    return false;
  };
  tiles.remove_if(loadedOrReadAsB);
  // A tile that another tile's op cannot take from registers stays in shared
  // memory, which may in turn exclude the tiles it is copied to or from.
  for (bool changed = true; changed;) {
    changed = false;
    for (Value tile : SmallVector<Value>(tiles.begin(), tiles.end()))
      if (!supports(tile)) {
        tiles.remove(tile);
        changed = true;
      }
  }
  // Tiles that cannot fit a lane's registers (255 of 32 bits) even twice
  // over would only spill: a D = 512 backward on one warp holds 512 words of
  // dQ per lane, and LLVM took seconds to unroll it. Such blocks keep their
  // tiles in shared memory (or are rejected by its limit). Counted where the
  // most tiles are live at once (a pipelined loop's prologue and epilogue
  // tiles are dead during the loop).
  if (maxLiveWords() > 2 * 255 * 32 * warps) {
    tiles.clear();
    return;
  }
  if (withWgmma && !tiles.empty() && !canUseWgmma())
    swizzled.clear();
  wgmma = !swizzled.empty();
  if (!wgmma && swizzleLdmatrix && !tiles.empty())
    swizzleLdmatrixOperands();
}

void WarpRegisterTiles::record() {
  if (tiles.empty())
    return;
  Builder b(launch.getContext());
  for (Value tile : tiles)
    setTileStorage(tile.getDefiningOp(), TileStorage::Registers);
  for (Value tile : swizzled)
    setTileStorage(tile.getDefiningOp(), TileStorage::Swizzled);
  launch->setAttr(kRegisterRowsAttr, b.getI64IntegerAttr(rows));
  if (wgmma)
    launch->setAttr(kWgmmaAttr, b.getUnitAttr());
}

WarpRegisterTiles WarpRegisterTiles::recorded(gpu::LaunchOp launch,
                                              int64_t warps) {
  WarpRegisterTiles recorded(launch, warps);
  auto rows = launch->getAttrOfType<IntegerAttr>(kRegisterRowsAttr);
  if (!rows)
    return recorded;
  recorded.rows = rows.getInt();
  recorded.wgmma = launch->hasAttr(kWgmmaAttr);
  launch.getBody().walk([&](memref::AllocOp alloc) {
    if (getTileStorage(alloc) == TileStorage::Registers)
      recorded.tiles.insert(alloc.getResult());
  });
  return recorded;
}

int64_t WarpRegisterTiles::maxLiveWords() {
  BufferLiveness liveness(launch);
  // +words where a tile's range starts, -words past its end.
  SmallVector<std::pair<int64_t, int64_t>> events;
  for (Value tile : tiles) {
    auto type = cast<MemRefType>(tile.getType());
    int64_t words = type.getNumElements() * type.getElementTypeBitWidth() / 32;
    auto [first, last] = liveness.range(tile);
    events.push_back({first, words});
    events.push_back({last + 1, -words});
  }
  llvm::sort(events);
  int64_t live = 0, most = 0;
  for (auto [at, words] : events)
    most = std::max(most, live += words);
  return most;
}

/// Every contraction of the launch on register tiles, each shared operand
/// tile in 64-column panels (the 128-byte swizzle of 16-bit elements) and
/// written only by its cp.async load.
bool WarpRegisterTiles::canUseWgmma() {
  if (warps % 4 != 0 || rows % (64 * (warps / 4)) != 0)
    return false;
  auto panels = [](Value tile) {
    auto t = cast<MemRefType>(tile.getType());
    return t.getElementTypeBitWidth() == 16 && t.getDimSize(1) % 64 == 0;
  };
  bool ok = true;
  launch.getBody().walk([&](linalg::GenericOp op) {
    auto m = matchTileContraction(op);
    if (!m)
      return;
    auto shape = [](Value v) { return cast<MemRefType>(v.getType()).getShape(); };
    int64_t n = shape(m->c)[1];
    // The atomic backward's dS K, outside the register tiles: A the staged
    // dSᵀ ([keys, query rows], read m-major), B K ([keys, D]), both swizzled;
    // the mapping's warpgroup reduction takes it (its C never exists).
    if (getContraction(op) == Contraction::GradQueryBlock && m->transposeA) {
      if (!panels(m->a) || !panels(m->b) || tiles.contains(m->a) ||
          tiles.contains(m->b) ||
          !splitWarpgroupReduce(shape(m->c)[0], n, warps / 4)) {
        ok = false;
        return;
      }
      swizzled.insert(m->a);
      swizzled.insert(m->b);
      return;
    }
    bool fits = tiles.contains(m->c) && n <= 256 && !tiles.contains(m->b) &&
                panels(m->b) && (tiles.contains(m->a) || panels(m->a));
    if (!fits) {
      ok = false;
      return;
    }
    if (!tiles.contains(m->a))
      swizzled.insert(m->a);
    swizzled.insert(m->b);
  });
  if (!ok)
    return false;
  // A swizzled tile is only zero-filled, loaded, read by the MMAs and read
  // element by element (at swizzled offsets) by the register tiles' ops.
  auto isOperand = [](linalg::GenericOp op) { return true; };
  return llvm::all_of(swizzled, [&](Value tile) {
    return keepsSwizzledLayout(tile, isOperand, /*registerReaders=*/false);
  });
}

/// The 16-bit shared operand tiles of 64-column panels whose every
/// contraction reads them with ldmatrix: the register tiles' (B, or A of
/// the block's rows) and the shared-memory ones with both operands shared.
void WarpRegisterTiles::swizzleLdmatrixOperands() {
  auto shared = [&](Value v) {
    return v.getDefiningOp<memref::AllocOp>() && !tiles.contains(v);
  };
  auto readsByLdmatrix = [&](linalg::GenericOp op) {
    auto m = matchTileContraction(op);
    return tiles.contains(m->c) ? supports(op) : shared(m->a) && shared(m->b);
  };
  llvm::SetVector<Value> candidates;
  launch.getBody().walk([&](linalg::GenericOp op) {
    auto m = matchTileContraction(op);
    if (!m || !readsByLdmatrix(op))
      return;
    for (Value operand : {m->a, m->b}) {
      auto type = cast<MemRefType>(operand.getType());
      if (shared(operand) && type.getRank() == 2 &&
          type.getElementTypeBitWidth() == 16 && type.getDimSize(0) % 8 == 0 &&
          type.getDimSize(1) % 64 == 0)
        candidates.insert(operand);
    }
  });
  for (Value tile : candidates)
    if (keepsSwizzledLayout(tile, readsByLdmatrix, /*registerReaders=*/true))
      swizzled.insert(tile);
}

bool WarpRegisterTiles::keepsSwizzledLayout(
    Value tile, function_ref<bool(linalg::GenericOp)> readsSwizzled,
    bool registerReaders) {
  for (Operation *user : tile.getUsers()) {
    if (isa<memref::DeallocOp, linalg::MapOp>(user))
      continue;
    if (auto generic = dyn_cast<linalg::GenericOp>(user)) {
      if (auto m = matchTileContraction(generic)) {
        if (m->c != tile && readsSwizzled(generic))
          continue;
        return false;
      }
      bool written =
          llvm::any_of(generic.getDpsInitsMutable(),
                       [&](OpOperand &o) { return o.get() == tile; });
      bool readWhole =
          llvm::all_of(generic.getDpsInputOperands(), [&](OpOperand *in) {
            return in->get() != tile ||
                   generic.getMatchingIndexingMap(in).isIdentity();
          });
      if (!written && readWhole && (!registerReaders || supports(generic)))
        continue;
      return false;
    }
    // Written whole from a register tile (the staged dSᵀ).
    if (auto copy = dyn_cast<memref::CopyOp>(user);
        copy && copy.getTarget() == tile && tiles.contains(copy.getSource()))
      continue;
    // Loaded: copies into its first rows, whole.
    auto view = dyn_cast<memref::SubViewOp>(user);
    if (!view || view.getType().getRank() != 2 ||
        !llvm::all_of(view.getStaticOffsets(),
                      [](int64_t o) { return o == 0; }) ||
        !llvm::all_of(view.getStaticStrides(),
                      [](int64_t s) { return s == 1; }) ||
        view.getStaticSizes()[1] !=
            cast<MemRefType>(tile.getType()).getDimSize(1) ||
        !llvm::all_of(view->getUsers(), [&](Operation *u) {
          auto copy = dyn_cast<memref::CopyOp>(u);
          return copy && copy.getTarget() == view.getResult();
        }))
      return false;
  }
  return true;
}

Value flash::swizzledOffset(OpBuilder &b, Location loc, Value row, Value col,
                            int64_t rows) {
  auto idx = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  Value panel = arith::DivUIOp::create(b, loc, col, idx(64));
  Value chunk = arith::DivUIOp::create(
      b, loc, arith::RemUIOp::create(b, loc, col, idx(64)), idx(8));
  Value swizzledChunk = arith::XOrIOp::create(
      b, loc, chunk, arith::RemUIOp::create(b, loc, row, idx(8)));
  Value offset = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, panel, idx(rows * 64)),
      arith::MulIOp::create(b, loc, row, idx(64)));
  offset = arith::AddIOp::create(
      b, loc, offset, arith::MulIOp::create(b, loc, swizzledChunk, idx(8)));
  return arith::AddIOp::create(b, loc, offset,
                               arith::RemUIOp::create(b, loc, col, idx(8)));
}

bool WarpRegisterTiles::supports(Value tile) {
  auto type = cast<MemRefType>(tile.getType());
  for (Operation *user : tile.getUsers()) {
    for (Operation *p = user->getParentOp(); p != launch; p = p->getParentOp())
      if (!isa<scf::ForOp, scf::IfOp>(p))
        return false;
    if (isa<memref::DeallocOp>(user))
      continue;
    if (auto fill = dyn_cast<linalg::FillOp>(user)) {
      if (!fill.hasPureBufferSemantics() ||
          fill.getDpsInitOperand(0)->get() != tile)
        return false;
      continue;
    }
    if (auto copy = dyn_cast<memref::CopyOp>(user)) {
      Value other =
          copy.getTarget() == tile ? copy.getSource() : copy.getTarget();
      if (other.getType() != type)
        return false;
      // Into a tile only from another tile; out of one into any buffer.
      if (copy.getTarget() == tile && !tiles.contains(other))
        return false;
      continue;
    }
    if (auto view = dyn_cast<memref::SubViewOp>(user)) {
      // The valid rows of the output tile, copied out.
      if (view.getType().getRank() != type.getRank() ||
          !llvm::all_of(view.getStaticOffsets(),
                        [](int64_t o) { return o == 0; }) ||
          !llvm::all_of(view.getStaticStrides(),
                        [](int64_t s) { return s == 1; }) ||
          (type.getRank() == 2 &&
           view.getStaticSizes()[1] != type.getDimSize(1)))
        return false;
      for (Operation *viewUser : view->getUsers()) {
        auto copy = dyn_cast<memref::CopyOp>(viewUser);
        if (!copy || copy.getSource() != view.getResult() ||
            tiles.contains(copy.getTarget()))
          return false;
      }
      continue;
    }
    auto generic = dyn_cast<linalg::GenericOp>(user);
    if (!generic || !supports(generic))
      return false;
  }
  return true;
}

bool WarpRegisterTiles::supports(linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInits() != 1)
    return false;
  if (auto m = matchTileContraction(op)) {
    // A from registers (P) or shared memory (Q), B from shared memory; a
    // transposed A only from shared memory, into a C there.
    if (m->transposeA)
      return false;
    auto isSharedTile = [&](Value v) {
      return v.getDefiningOp<memref::AllocOp>() && !tiles.contains(v);
    };
    return tiles.contains(m->c) && isSharedTile(m->b) &&
           (tiles.contains(m->a) ||
            (isSharedTile(m->a) &&
             cast<MemRefType>(m->a.getType()).getDimSize(0) == rows));
  }
  Value out = op.getDpsInitOperand(0)->get();
  if (!tiles.contains(out))
    return false;
  if (isRowReduction(op))
    return tiles.contains(op.getDpsInputOperand(0)->get());
  auto outType = cast<MemRefType>(out.getType());
  int64_t loops = op.getNumLoops();
  if (op.getNumReductionLoops() != 0 || loops != outType.getRank() ||
      !op.getIndexingMapsArray().back().isIdentity())
    return false;
  MLIRContext *ctx = op.getContext();
  auto rowMap = AffineMap::get(2, 0, getAffineDimExpr(0, ctx), ctx);
  auto colMap = AffineMap::get(2, 0, getAffineDimExpr(1, ctx), ctx);
  for (OpOperand *input : op.getDpsInputOperands()) {
    Value in = input->get();
    AffineMap map = op.getMatchingIndexingMap(input);
    auto inType = dyn_cast<MemRefType>(in.getType());
    if (!inType)
      continue; // a scalar
    bool sameShape = map.isIdentity() && inType.getRank() == loops;
    // A vector along the rows (a register tile, or read from shared memory
    // per row) or along the columns (read from shared memory per column:
    // the transposed tiles of the backward's dK/dV kernel).
    bool rowBroadcast =
        loops == 2 && map == rowMap &&
        (tiles.contains(in) || (inType.getRank() == 1 &&
                                inType.getDimSize(0) == outType.getDimSize(0)));
    bool colBroadcast = loops == 2 && map == colMap && !tiles.contains(in) &&
                        inType.getRank() == 1 &&
                        inType.getDimSize(0) == outType.getDimSize(1);
    if (!sameShape && !rowBroadcast && !colBroadcast)
      return false;
    if (sameShape && !tiles.contains(in) &&
        inType.getShape() != outType.getShape())
      return false;
  }
  for (Operation &inner : op.getBody()->without_terminator()) {
    // A score modification's reads of a kernel argument (ALiBi's slope per
    // head) are loads from global memory, the same in every lane's copy.
    if (auto load = dyn_cast<memref::LoadOp>(inner);
        load && !launch.getBody().isAncestor(load.getMemRef().getParentRegion()))
      continue;
    if (inner.getNumRegions() || !isMemoryEffectFree(&inner))
      return false;
  }
  return true;
}

namespace {
/// Rewrites the ops on the register tiles of one launch, in program order,
/// with the tiles' current per-lane values as SSA vectors (loop-carried
/// through the scf.for loops that write them).
class TileRewriter {
public:
  TileRewriter(gpu::LaunchOp launch, int64_t warps, int64_t rows,
               const llvm::SetVector<Value> &tiles, bool wgmma,
               const WarpRegisterTiles::RewriteOptions &options)
      : launch(launch), loc(launch.getLoc()), warps(warps), rows(rows),
        tiles(tiles), wgmma(wgmma), pairStores(options.pairStores),
        lazyRescale(options.lazyRescale), wideStores(options.wideStores),
        raggedKeys(options.raggedKeys),
        perIterationLanes(options.perIterationLanes) {}

  LogicalResult run(Value tid);

private:
  /// The lane coordinates below, from the thread index `tid`.
  void computeLaneCoordinates(OpBuilder &b, Value tid);
  /// Erases the register tiles once nothing uses them.
  LogicalResult finish();
  LogicalResult process(Block &block);
  LogicalResult processLoop(scf::ForOp loop);
  /// A loop's body, with per-iteration lane coordinates where asked for.
  LogicalResult processBody(Block &body);
  LogicalResult processIf(scf::IfOp ifOp);
  LogicalResult rewrite(OpBuilder &b, Operation *op);
  LogicalResult rewriteOp(OpBuilder &b, Operation *op);
  void rewriteElementwise(OpBuilder &b, linalg::GenericOp op);
  Value emitElementwise(OpBuilder &b, linalg::GenericOp op);
  bool isRowRescale(linalg::GenericOp op) const;
  void rewriteRowReduction(OpBuilder &b, linalg::GenericOp op);
  bool isDeferredSum(Value tile);
  bool writesDeferredSum(Operation *op, Value tile) const;
  Value sumOverQuad(OpBuilder &b, Value partial);
  Value transposeQuad(OpBuilder &b, Value v, int64_t first);
  LogicalResult rewriteContraction(OpBuilder &b, linalg::GenericOp op);
  LogicalResult rewriteWarpgroupContraction(OpBuilder &b, linalg::GenericOp op);
  Value descriptor(OpBuilder &b, Value tile, int64_t leadingBytes);
  void store(OpBuilder &b, Value tile, Value validRows, Value target);

  bool touchesTile(Operation *op) const;
  bool touchesTileInside(Operation *op) const;
  /// Row slots (16-row slices x 2 halves) of each lane.
  int64_t slots() const { return 2 * rows / (16 * warps); }
  /// Elements of a lane per row slot: 1 for a row vector, a quarter of the
  /// columns for a 2-D tile.
  int64_t perSlot(MemRefType t) const {
    return t.getRank() == 1 ? 1 : t.getDimSize(1) / 4;
  }
  VectorType vectorType(MemRefType t) const {
    return VectorType::get({slots() * perSlot(t)}, t.getElementType());
  }
  Value current(OpBuilder &b, Value tile);
  Value idx(OpBuilder &b, int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v);
  }
  Value plus(OpBuilder &b, Value x, int64_t v) {
    return v == 0 ? x : arith::AddIOp::create(b, loc, x, idx(b, v)).getResult();
  }
  /// Rows between a warp's 16-row slices: adjacent with mma.sync, one
  /// warpgroup slice (64 rows) apart with wgmma.
  int64_t sliceStride() const { return wgmma ? 64 : 16; }
  /// Tile-local row of slot r and column of in-slot element q of this lane.
  Value rowOf(OpBuilder &b, int64_t r) {
    return plus(b, rowBase, rowDeltaOf(r));
  }
  int64_t rowDeltaOf(int64_t r) const {
    return sliceStride() * (r / 2) + 8 * (r % 2);
  }
  Value colOf(OpBuilder &b, int64_t q) {
    return plus(b, colBase, colDeltaOf(q));
  }
  int64_t colDeltaOf(int64_t q) const { return 8 * (q / 2) + q % 2; }
  /// The offset of slot r's element q in a 128-byte-swizzled tile of `rows`
  /// rows (`swizzledOffset`), built so that LLVM keeps one address per
  /// 8-column group of a panel and adds the rest as immediates: the slot's
  /// rows lie multiples of 8 below the lane's first (the same swizzle
  /// phase) and its columns whole panels right of the first panel's
  /// (colBase < 8), so both are constants added after the swizzle's xor.
  /// (Otherwise LLVM hoists one address per slot and column pair out of the
  /// key loop: 16 live 64-bit addresses in the dK/dV step's staged dSᵀ.)
  Value swizzledSlotOffset(OpBuilder &b, int64_t r, int64_t q, int64_t rows) {
    int64_t col = colDeltaOf(q);
    Value inFirstPanel =
        swizzledOffset(b, loc, rowBase, plus(b, colBase, col % 64), rows);
    return plus(b, inFirstPanel, (col / 64) * rows * 64 + rowDeltaOf(r) * 64);
  }
  Value extract(OpBuilder &b, Value vec, int64_t pos) {
    return vector::ExtractOp::create(b, loc, vec, ArrayRef<int64_t>{pos});
  }
  Value insert(OpBuilder &b, Value v, Value vec, int64_t pos) {
    return vector::InsertOp::create(b, loc, v, vec, ArrayRef<int64_t>{pos});
  }

  gpu::LaunchOp launch;
  Location loc;
  int64_t warps, rows;
  const llvm::SetVector<Value> &tiles;
  bool wgmma, pairStores, lazyRescale, wideStores, raggedKeys,
      perIterationLanes;
  DenseMap<Value, Value> values;
  /// Row sums held as per-lane partials (`isDeferredSum`).
  llvm::SmallPtrSet<Value, 4> deferredSums;
  // Lane coordinates: first row of the warp, the lane's first row and
  // column in the accumulator layout, and its ldmatrix row address parts.
  Value tid, lane, warpIndex, warpRow, rowBase, colBase, quadLane, lane8, upper,
      right;
};
} // namespace

LogicalResult WarpRegisterTiles::rewrite(Value tid,
                                         const RewriteOptions &options) {
  return TileRewriter(launch, warps, rows, tiles, usesWgmma(), options)
      .run(tid);
}

LogicalResult TileRewriter::run(Value tid) {
  OpBuilder b(launch.getContext());
  b.setInsertionPointAfter(tid.getDefiningOp());
  this->tid = tid;
  computeLaneCoordinates(b, tid);

  for (Value tile : tiles)
    if (isDeferredSum(tile))
      deferredSums.insert(tile);
  if (failed(process(launch.getBody().front())))
    return failure();
  return finish();
}

void TileRewriter::computeLaneCoordinates(OpBuilder &b, Value tid) {
  lane = arith::RemUIOp::create(b, loc, tid, idx(b, 32));
  Value warp = arith::DivUIOp::create(b, loc, tid, idx(b, 32));
  warpIndex = warp;
  warpRow = arith::MulIOp::create(b, loc, warp, idx(b, rows / warps));
  if (wgmma) {
    // Warpgroup g (warps 4 g .. 4 g + 3) takes rows/groups rows; its warp i
    // owns rows 16 i + 64 s of each 64-row slice s.
    int64_t groupRows = rows / (warps / 4);
    warpRow = arith::AddIOp::create(
        b, loc,
        arith::MulIOp::create(
            b, loc, arith::DivUIOp::create(b, loc, warp, idx(b, 4)),
            idx(b, groupRows)),
        arith::MulIOp::create(
            b, loc, arith::RemUIOp::create(b, loc, warp, idx(b, 4)),
            idx(b, 16)));
  }
  Value g = arith::DivUIOp::create(b, loc, lane, idx(b, 4));
  quadLane = arith::RemUIOp::create(b, loc, lane, idx(b, 4));
  rowBase = arith::AddIOp::create(b, loc, warpRow, g);
  colBase = arith::MulIOp::create(b, loc, quadLane, idx(b, 2));
  lane8 = arith::RemUIOp::create(b, loc, lane, idx(b, 8));
  Value matrix = arith::DivUIOp::create(b, loc, lane, idx(b, 8));
  upper = arith::MulIOp::create(
      b, loc, arith::RemUIOp::create(b, loc, matrix, idx(b, 2)), idx(b, 8));
  right = arith::MulIOp::create(
      b, loc, arith::DivUIOp::create(b, loc, matrix, idx(b, 2)), idx(b, 8));
}

LogicalResult TileRewriter::finish() {
  for (Value tile : tiles) {
    for (Operation *user : llvm::make_early_inc_range(tile.getUsers())) {
      if (auto view = dyn_cast<memref::SubViewOp>(user);
          view && view->use_empty())
        view->erase();
      else if (isa<memref::DeallocOp>(user))
        user->erase();
      else
        return user->emitError("flash-gpu-warp-register-tiles: register "
                               "tile still used after the warp rewrite");
    }
    tile.getDefiningOp()->erase();
  }
  return success();
}

bool TileRewriter::touchesTile(Operation *op) const {
  return llvm::any_of(op->getOperands(), [&](Value v) {
    if (tiles.contains(v))
      return true;
    auto view = v.getDefiningOp<memref::SubViewOp>();
    return view && tiles.contains(view.getSource());
  });
}

bool TileRewriter::touchesTileInside(Operation *op) const {
  return op
      ->walk([&](Operation *inner) {
        return touchesTile(inner) ? WalkResult::interrupt()
                                  : WalkResult::advance();
      })
      .wasInterrupted();
}

Value TileRewriter::current(OpBuilder &b, Value tile) {
  if (Value v = values.lookup(tile))
    return v;
  VectorType type = vectorType(cast<MemRefType>(tile.getType()));
  return arith::ConstantOp::create(b, loc,
                                   cast<TypedAttr>(b.getZeroAttr(type)));
}

LogicalResult TileRewriter::process(Block &block) {
  for (Operation &op : llvm::make_early_inc_range(block)) {
    if (auto loop = dyn_cast<scf::ForOp>(&op)) {
      if (failed(processLoop(loop)))
        return failure();
      continue;
    }
    if (auto ifOp = dyn_cast<scf::IfOp>(&op); ifOp && touchesTileInside(&op)) {
      if (failed(processIf(ifOp)))
        return failure();
      continue;
    }
    if (isa<memref::SubViewOp, memref::DeallocOp>(&op) || !touchesTile(&op))
      continue;
    OpBuilder b(&op);
    if (failed(rewrite(b, &op)))
      return failure();
    op.erase();
  }
  return success();
}

/// How `op` first touches `tile`: read (its old value matters), written
/// (overwritten whole), or not at all. Ops with regions other than loops
/// count as reads.
enum class Access { None, Read, Write };
static Access accessOf(Operation *op, Value tile) {
  auto touches = [&](Value v) {
    if (v == tile)
      return true;
    auto view = v.getDefiningOp<memref::SubViewOp>();
    return view && view.getSource() == tile;
  };
  if (auto loop = dyn_cast<scf::ForOp>(op)) {
    // A loop that overwrites the tile first may run zero times: what
    // follows it decides then.
    for (Operation &inner : *loop.getBody()) {
      Access a = accessOf(&inner, tile);
      if (a != Access::None)
        return a == Access::Read ? Access::Read : Access::None;
    }
    return Access::None;
  }
  if (op->getNumRegions() && !isa<linalg::LinalgOp>(op)) {
    bool any = false;
    op->walk([&](Operation *inner) {
      any |= llvm::any_of(inner->getOperands(), touches);
    });
    return any ? Access::Read : Access::None;
  }
  if (auto copy = dyn_cast<memref::CopyOp>(op)) {
    if (touches(copy.getSource()))
      return Access::Read;
    return copy.getTarget() == tile ? Access::Write : Access::None;
  }
  if (auto fill = dyn_cast<linalg::FillOp>(op))
    return fill.getDpsInitOperand(0)->get() == tile ? Access::Write
                                                    : Access::None;
  if (auto generic = dyn_cast<linalg::GenericOp>(op)) {
    for (OpOperand *in : generic.getDpsInputOperands())
      if (in->get() == tile)
        return Access::Read;
    OpOperand *init = generic.getDpsInitOperand(0);
    if (init->get() != tile)
      return Access::None;
    return generic.payloadUsesValueFromOperand(init) ? Access::Read
                                                     : Access::Write;
  }
  return llvm::any_of(op->getOperands(), touches) ? Access::Read : Access::None;
}

/// Whether the value of `tile` before `op` is read by `op` or what follows
/// it (to the end of its block, then of the enclosing blocks up to `limit`).
static bool isLiveAt(Operation *op, Value tile, Operation *limit) {
  for (Block *block = op->getBlock(); op;) {
    for (; op; op = op->getNextNode()) {
      Access a = accessOf(op, tile);
      if (a != Access::None)
        return a == Access::Read;
    }
    Operation *parent = block->getParentOp();
    if (parent == limit)
      return false;
    // Inside an enclosing loop the next iteration starts again at the front
    // of this block (the dK/dV kernel's query loop inside its loop over the
    // group's heads): live if that reads the tile before writing it.
    if (isa<LoopLikeOpInterface>(parent) &&
        isLiveAt(&block->front(), tile, parent))
      return true;
    op = parent->getNextNode();
    block = parent->getBlock();
  }
  return false;
}

LogicalResult TileRewriter::processBody(Block &body) {
  // Warpgroup MMA launches read no fragments by ldmatrix, and there the
  // coordinates rebuilt per iteration cost the atomic dK/dV step's
  // overlapped products their fit (causal D = 128: 16 bytes of spill,
  // docs/GPU-NOTES.md 90).
  if (!perIterationLanes || wgmma)
    return process(body);
  auto coordinates = [&] {
    return std::tie(lane, warpIndex, warpRow, rowBase, colBase, quadLane, lane8,
                    upper, right);
  };
  auto outside = std::make_tuple(lane, warpIndex, warpRow, rowBase, colBase,
                                 quadLane, lane8, upper, right);
  OpBuilder b = OpBuilder::atBlockBegin(&body);
  computeLaneCoordinates(b, mma_sync::perIterationCoordinate(b, loc, tid));
  LogicalResult result = process(body);
  coordinates() = outside;
  return result;
}

LogicalResult TileRewriter::processLoop(scf::ForOp loop) {
  llvm::SetVector<Value> written;
  bool refills = false;
  loop.getBody()->walk([&](Operation *op) {
    if (auto dps = dyn_cast<DestinationStyleOpInterface>(op)) {
      for (OpOperand &init : dps.getDpsInitsMutable()) {
        if (tiles.contains(init.get()))
          written.insert(init.get());
        else
          refills = true;
      }
    }
    if (auto copy = dyn_cast<memref::CopyOp>(op)) {
      if (tiles.contains(copy.getTarget()))
        written.insert(copy.getTarget());
      else
        refills = true;
    }
  });
  // Carried: the tiles whose value on entry to an iteration, or after the
  // loop, is read. The others (scores, probabilities) are redefined before
  // any use in each iteration.
  SmallVector<Value> redefined;
  written.remove_if([&](Value tile) {
    bool carried =
        isLiveAt(&loop.getBody()->front(), tile, loop) ||
        (loop->getNextNode() && isLiveAt(loop->getNextNode(), tile, launch));
    if (!carried)
      redefined.push_back(tile);
    return !carried;
  });
  // Their values inside the loop do not dominate what follows it.
  auto forgetRedefined = [&] {
    for (Value tile : redefined)
      values.erase(tile);
  };
  forgetRedefined();
  if (written.empty()) {
    LogicalResult result = processBody(*loop.getBody());
    forgetRedefined();
    return result;
  }

  OpBuilder b(loop);
  SmallVector<Value> inits(loop.getInitArgs());
  unsigned carried = inits.size();
  for (Value tile : written)
    inits.push_back(current(b, tile));
  auto newLoop =
      scf::ForOp::create(b, loc, loop.getLowerBound(), loop.getUpperBound(),
                         loop.getStep(), inits);
  Block *oldBody = loop.getBody(), *newBody = newLoop.getBody();
  if (!newBody->empty())
    newBody->getTerminator()->erase();
  newBody->getOperations().splice(newBody->end(), oldBody->getOperations());
  for (auto [from, to] :
       llvm::zip(oldBody->getArguments(), newBody->getArguments()))
    from.replaceAllUsesWith(to);
  for (auto [i, tile] : llvm::enumerate(written))
    values[tile] = newBody->getArgument(1 + carried + i);
  if (failed(processBody(*newBody)))
    return failure();

  auto yield = cast<scf::YieldOp>(newBody->getTerminator());
  OpBuilder yb(yield);
  SmallVector<Value> yielded(yield.getOperands());
  for (Value tile : written)
    yielded.push_back(current(yb, tile));
  scf::YieldOp::create(yb, loc, yielded);
  yield.erase();
  // The next iteration refills shared tiles that the warps of this one may
  // still be reading.
  if (refills) {
    OpBuilder start = OpBuilder::atBlockBegin(newBody);
    gpu::BarrierOp::create(start, loc);
  }
  for (unsigned i = 0; i < carried; ++i)
    loop.getResult(i).replaceAllUsesWith(newLoop.getResult(i));
  for (auto [i, tile] : llvm::enumerate(written))
    values[tile] = newLoop.getResult(carried + i);
  forgetRedefined();
  loop.erase();
  return success();
}

/// A guarded region (a pipelined loop's prologue, loop and epilogue): the
/// tiles it writes that are read after it become results of the rewritten
/// `scf.if`, each branch yielding its values (the else branch, the values
/// from before).
LogicalResult TileRewriter::processIf(scf::IfOp ifOp) {
  if (ifOp.getNumResults())
    return ifOp.emitError("flash-gpu-warp-register-tiles: a guarded region "
                          "with results around register tiles");
  llvm::SetVector<Value> written;
  ifOp->walk([&](Operation *op) {
    if (auto dps = dyn_cast<DestinationStyleOpInterface>(op))
      for (OpOperand &init : dps.getDpsInitsMutable())
        if (tiles.contains(init.get()))
          written.insert(init.get());
    if (auto copy = dyn_cast<memref::CopyOp>(op);
        copy && tiles.contains(copy.getTarget()))
      written.insert(copy.getTarget());
  });
  SmallVector<Value> carried;
  for (Value tile : written)
    if (ifOp->getNextNode() && isLiveAt(ifOp->getNextNode(), tile, launch))
      carried.push_back(tile);

  DenseMap<Value, Value> before = values;
  OpBuilder b(ifOp);
  SmallVector<Type> types;
  for (Value tile : carried)
    types.push_back(vectorType(cast<MemRefType>(tile.getType())));
  auto newIf = scf::IfOp::create(b, loc, types, ifOp.getCondition(),
                                 /*withElseRegion=*/true);
  auto moveBranch = [&](Region &from, Region &to) -> LogicalResult {
    Block *target = &to.front();
    if (!target->empty())
      target->getTerminator()->erase();
    if (!from.empty()) {
      Block *source = &from.front();
      source->getTerminator()->erase();
      target->getOperations().splice(target->end(), source->getOperations());
    }
    values = before;
    if (failed(process(*target)))
      return failure();
    OpBuilder yb = OpBuilder::atBlockEnd(target);
    SmallVector<Value> yielded;
    for (Value tile : carried)
      yielded.push_back(current(yb, tile));
    scf::YieldOp::create(yb, loc, yielded);
    return success();
  };
  if (failed(moveBranch(ifOp.getThenRegion(), newIf.getThenRegion())) ||
      failed(moveBranch(ifOp.getElseRegion(), newIf.getElseRegion())))
    return failure();
  values = before;
  for (auto [i, tile] : llvm::enumerate(carried))
    values[tile] = newIf.getResult(i);
  // Written inside and dead after: their values inside do not dominate.
  for (Value tile : written)
    if (!llvm::is_contained(carried, tile))
      values.erase(tile);
  ifOp.erase();
  return success();
}

LogicalResult TileRewriter::rewrite(OpBuilder &b, Operation *op) {
  // A read of a row sum held as lane partials, other than the ops that build
  // it, sees the quad's total.
  SmallVector<std::pair<Value, Value>> partials;
  for (Value operand : op->getOperands())
    if (deferredSums.contains(operand) && !writesDeferredSum(op, operand) &&
        !llvm::is_contained(llvm::make_first_range(partials), operand)) {
      Value partial = current(b, operand);
      partials.push_back({operand, partial});
      values[operand] = sumOverQuad(b, partial);
    }
  LogicalResult result = rewriteOp(b, op);
  for (auto [tile, partial] : partials)
    values[tile] = partial;
  return result;
}

LogicalResult TileRewriter::rewriteOp(OpBuilder &b, Operation *op) {
  if (auto fill = dyn_cast<linalg::FillOp>(op)) {
    Value tile = fill.getDpsInitOperand(0)->get();
    values[tile] = vector::BroadcastOp::create(
        b, loc, vectorType(cast<MemRefType>(tile.getType())),
        fill.getDpsInputOperand(0)->get());
    return success();
  }
  if (auto copy = dyn_cast<memref::CopyOp>(op)) {
    Value source = copy.getSource(), target = copy.getTarget();
    if (tiles.contains(target)) {
      values[target] = current(b, source);
      return success();
    }
    Value validRows = idx(b, rows);
    if (auto view = source.getDefiningOp<memref::SubViewOp>()) {
      validRows =
          getValueOrCreateConstantIndexOp(b, loc, view.getMixedSizes()[0]);
      source = view.getSource();
    }
    store(b, source, validRows, target);
    return success();
  }
  auto generic = cast<linalg::GenericOp>(op);
  if (matchTileContraction(generic))
    return wgmma ? rewriteWarpgroupContraction(b, generic)
                 : rewriteContraction(b, generic);
  if (isRowReduction(generic))
    rewriteRowReduction(b, generic);
  else
    rewriteElementwise(b, generic);
  return success();
}

/// `acc *= alpha` broadcast over columns, in place.
bool TileRewriter::isRowRescale(linalg::GenericOp op) const {
  if (op.getNumLoops() != 2 || op.getNumDpsInputs() != 1)
    return false;
  Value in = op.getDpsInputOperand(0)->get();
  if (!tiles.contains(in) || cast<MemRefType>(in.getType()).getRank() != 1)
    return false;
  Block *body = op.getBody();
  if (body->getOperations().size() != 2)
    return false;
  auto mul = dyn_cast<arith::MulFOp>(body->front());
  return mul && body->getTerminator()->getOperand(0) == mul.getResult() &&
         llvm::is_contained(mul->getOperands(), body->getArgument(0)) &&
         llvm::is_contained(mul->getOperands(), body->getArgument(1));
}

void TileRewriter::rewriteElementwise(OpBuilder &b, linalg::GenericOp op) {
  Value out = op.getDpsInitOperand(0)->get();
  // With wgmma the rescale is always done: measured faster there (the
  // branch joins the accumulator through a phi into the next MMA), and it
  // keeps 128 x 64 tiles on one warpgroup within 255 registers. On mma.sync
  // too where it fits the registers (GPU-NOTES 60).
  if (wgmma || !lazyRescale || !isRowRescale(op) || !values.lookup(out)) {
    values[out] = emitElementwise(b, op);
    return;
  }
  // Once the row maxima settle, alpha is exactly 1 on most blocks: a warp
  // vote skips the multiply of the whole accumulator then.
  Value alpha = current(b, op.getDpsInputOperand(0)->get());
  Value one = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(1.0f));
  Value moved = arith::ConstantOp::create(b, loc, b.getBoolAttr(false));
  for (int64_t r = 0; r < slots(); ++r)
    moved = arith::OrIOp::create(
        b, loc, moved,
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE,
                              extract(b, alpha, r), one));
  Value allLanes = arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(-1));
  Value anyMoved = NVVM::VoteSyncOp::create(b, loc, b.getI1Type(), allLanes,
                                            moved, NVVM::VoteSyncKind::any);
  Value before = values.lookup(out);
  auto branch = scf::IfOp::create(b, loc, before.getType(), anyMoved,
                                  /*withElseRegion=*/true);
  OpBuilder then = OpBuilder::atBlockEnd(branch.thenBlock());
  scf::YieldOp::create(then, loc, emitElementwise(then, op));
  OpBuilder otherwise = OpBuilder::atBlockEnd(branch.elseBlock());
  scf::YieldOp::create(otherwise, loc, before);
  values[out] = branch.getResult(0);
}

Value TileRewriter::emitElementwise(OpBuilder &b, linalg::GenericOp op) {
  Value out = op.getDpsInitOperand(0)->get();
  auto outType = cast<MemRefType>(out.getType());
  bool rank2 = outType.getRank() == 2;
  int64_t per = perSlot(outType);
  Block *body = op.getBody();
  // Register inputs as their current vectors; swizzled shared tiles (wgmma
  // operands) through a flat view, read at swizzled offsets.
  SmallVector<Value> inputs, flat;
  for (OpOperand *input : op.getDpsInputOperands()) {
    Value in = input->get();
    inputs.push_back(tiles.contains(in) ? current(b, in) : Value());
    flat.push_back(isSwizzledTile(in)
                       ? memref::CollapseShapeOp::create(
                             b, loc, in, ArrayRef<ReassociationIndices>{{0, 1}})
                       : Value());
  }
  SmallVector<Value> rowIdx, colIdx;
  for (int64_t r = 0; r < slots(); ++r)
    rowIdx.push_back(rowOf(b, r));
  for (int64_t q = 0; rank2 && q < per; ++q)
    colIdx.push_back(colOf(b, q));
  BlockArgument outArg = body->getArgument(op.getNumDpsInputs());
  Value result = current(b, out);
  Value initial = result;
  for (int64_t r = 0; r < slots(); ++r) {
    for (int64_t q = 0; q < per; ++q) {
      int64_t e = r * per + q;
      Value row = rowIdx[r], col = rank2 ? colIdx[q] : Value();
      IRMapping map;
      for (auto [i, input] : llvm::enumerate(op.getDpsInputOperands())) {
        Value in = input->get();
        BlockArgument arg = body->getArgument(i);
        if (!isa<MemRefType>(in.getType())) {
          map.map(arg, in);
        } else if (inputs[i]) {
          bool broadcast =
              cast<MemRefType>(in.getType()).getRank() == 1 && rank2;
          map.map(arg, extract(b, inputs[i], broadcast ? r : e));
        } else {
          // From shared memory: the element, or a row or column vector's.
          auto inType = cast<MemRefType>(in.getType());
          AffineMap inMap = op.getMatchingIndexingMap(input);
          SmallVector<Value> at;
          if (flat[i]) {
            at = {swizzledSlotOffset(b, r, q, inType.getDimSize(0))};
            in = flat[i];
          } else if (inType.getRank() == 2)
            at = {row, col};
          else if (rank2 && inMap.getResult(0) == b.getAffineDimExpr(1))
            at = {col};
          else
            at = {row};
          map.map(arg, memref::LoadOp::create(b, loc, in, at));
        }
      }
      if (!outArg.use_empty())
        map.map(outArg, extract(b, initial, e));
      for (Operation &inner : body->without_terminator()) {
        if (auto index = dyn_cast<linalg::IndexOp>(inner)) {
          map.map(index.getResult(), index.getDim() == 0 ? row : col);
          continue;
        }
        b.clone(inner, map);
      }
      Value y = map.lookupOrDefault(body->getTerminator()->getOperand(0));
      result = insert(b, y, result, e);
    }
  }
  return result;
}

void TileRewriter::rewriteRowReduction(OpBuilder &b, linalg::GenericOp op) {
  Value in = current(b, op.getDpsInputOperand(0)->get());
  Value out = op.getDpsInitOperand(0)->get();
  int64_t per =
      perSlot(cast<MemRefType>(op.getDpsInputOperand(0)->get().getType()));
  Operation *combiner = getReductionCombiner(op);
  Block *body = op.getBody();
  auto combine = [&](Value element, Value acc) {
    IRMapping map;
    map.map(body->getArgument(0), element);
    map.map(body->getArgument(1), acc);
    return b.clone(*combiner, map)->getResult(0);
  };
  Value init = values.lookup(out);
  Value result = current(b, out);
  // A row sum kept as lane partials skips the quad's shuffles: they are done
  // once, where the sum is read (FlashAttention-2's and -3's row sum).
  bool deferred = deferredSums.contains(out);
  for (int64_t r = 0; r < slots(); ++r) {
    // This lane's columns, then the other three lanes of the quad. (A
    // pairwise tree over the columns measured 7-18% slower on wgmma and 1-5%
    // on mma.sync than this chain: GPU-NOTES 61.)
    Value partial = extract(b, in, r * per);
    for (int64_t q = 1; q < per; ++q)
      partial = combine(extract(b, in, r * per + q), partial);
    for (int32_t offset : {1, 2}) {
      if (deferred)
        break;
      Value other = shuffleXor(b, loc, partial, offset);
      partial = combine(other, partial);
    }
    if (init)
      partial = combine(partial, extract(b, init, r));
    result = insert(b, partial, result, r);
  }
  values[out] = result;
}

/// A row vector written only by zero fills, row reductions with an addf
/// combiner and in-place rescales by another row vector (the online
/// softmax's l), and read otherwise only by ops of the launch's body (after
/// its loops): each lane can keep its own columns' partial sum, every
/// writer being linear in it, and the quad's shuffles happen once per read
/// instead of once per key block.
bool TileRewriter::isDeferredSum(Value tile) {
  auto type = cast<MemRefType>(tile.getType());
  if (type.getRank() != 1 || !type.getElementType().isF32())
    return false;
  bool reduced = false;
  for (Operation *user : tile.getUsers()) {
    if (isa<memref::DeallocOp>(user))
      continue;
    if (writesDeferredSum(user, tile)) {
      if (auto generic = dyn_cast<linalg::GenericOp>(user))
        reduced |= isRowReduction(generic);
      continue;
    }
    auto dps = dyn_cast<DestinationStyleOpInterface>(user);
    bool writes = dps ? llvm::any_of(dps.getDpsInits(),
                                     [&](Value v) { return v == tile; })
                      : !isa<memref::CopyOp>(user) ||
                            cast<memref::CopyOp>(user).getTarget() == tile;
    if (writes || user->getBlock() != &launch.getBody().front())
      return false;
  }
  return reduced;
}

/// Whether `op` is one of the writers that keep `tile` a sum of lane
/// partials: a zero fill, a row reduction with an addf combiner, or
/// `tile *= v` for another row vector v.
bool TileRewriter::writesDeferredSum(Operation *op, Value tile) const {
  if (auto fill = dyn_cast<linalg::FillOp>(op))
    return fill.getDpsInitOperand(0)->get() == tile &&
           matchPattern(fill.getDpsInputOperand(0)->get(), m_AnyZeroFloat());
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic || generic.getNumDpsInits() != 1 ||
      generic.getDpsInitOperand(0)->get() != tile)
    return false;
  if (isRowReduction(generic))
    return isa<arith::AddFOp>(getReductionCombiner(generic)) &&
           generic.getDpsInputOperand(0)->get() != tile;
  if (generic.getNumLoops() != 1 || generic.getNumDpsInputs() != 1 ||
      generic.getDpsInputOperand(0)->get() == tile ||
      !llvm::all_of(generic.getIndexingMapsArray(),
                    [](AffineMap m) { return m.isIdentity(); }))
    return false;
  Block *body = generic.getBody();
  auto mul = dyn_cast<arith::MulFOp>(body->front());
  return body->getOperations().size() == 2 && mul &&
         body->getTerminator()->getOperand(0) == mul.getResult() &&
         llvm::is_contained(mul->getOperands(), body->getArgument(0)) &&
         llvm::is_contained(mul->getOperands(), body->getArgument(1));
}

/// The quad's total of each row slot of a row vector of lane partials.
Value TileRewriter::sumOverQuad(OpBuilder &b, Value partial) {
  Value total = partial;
  for (int64_t r = 0; r < slots(); ++r) {
    Value v = extract(b, partial, r);
    for (int32_t offset : {1, 2}) {
      Value other = shuffleXor(b, loc, v, offset);
      v = arith::AddFOp::create(b, loc, other, v);
    }
    total = insert(b, v, total, r);
  }
  return total;
}

LogicalResult TileRewriter::rewriteContraction(OpBuilder &b,
                                               linalg::GenericOp op) {
  TileContraction m = *matchTileContraction(op);
  auto aType = cast<MemRefType>(m.a.getType());
  auto cType = cast<MemRefType>(m.c.getType());
  int64_t n = cType.getDimSize(1), k = aType.getDimSize(1);
  Type et = aType.getElementType();
  bool bf16 = et.isBF16();
  Value aRegs = tiles.contains(m.a) ? current(b, m.a) : Value();
  Value sharedA = aRegs ? Value() : getWorkgroupView(m.a);
  Value sharedB = getWorkgroupView(m.b);
  if (!sharedB || (!aRegs && !sharedA))
    return op.emitError("flash-gpu-warp-register-tiles: contraction operands "
                        "are neither register tiles nor shared-memory tiles");
  Value acc = current(b, m.c);
  int64_t cPer = n / 4, aPer = k / 4, mTiles = slots() / 2;
  auto operand = [&](Value pair) {
    return mma_sync::operandRegister(b, loc, pair);
  };
  using mma_sync::LaneCoordinate;
  auto ldmatrix = [&](Value tile, LaneCoordinate r, LaneCoordinate c,
                      int64_t count, bool trans) {
    return mma_sync::ldmatrix(b, loc, tile, r, c, count, trans);
  };
  // The ldmatrix lanes' parts: rows lane8 (+ upper, + right), columns
  // upper or right (0 or 8).
  VectorType pairType = VectorType::get({2}, et);
  for (int64_t kk = 0; kk < k / 16; ++kk) {
    // A fragments (a0..a3: rows g | g + 8 x k 2t | 2t + 8) of each 16-row
    // slice: from the accumulator layout of P (n8 tiles 2kk and 2kk + 1 are
    // one k16 step), or ldmatrix.x4 from shared memory.
    SmallVector<SmallVector<Value>> fa;
    for (int64_t mi = 0; mi < mTiles; ++mi) {
      if (aRegs) {
        auto pair = [&](int64_t half, int64_t j) {
          int64_t e = (2 * mi + half) * aPer + 2 * j;
          Value v = vector::FromElementsOp::create(
              b, loc, pairType,
              ValueRange{extract(b, aRegs, e), extract(b, aRegs, e + 1)});
          return operand(v);
        };
        fa.push_back({pair(0, 2 * kk), pair(1, 2 * kk), pair(0, 2 * kk + 1),
                      pair(1, 2 * kk + 1)});
      } else {
        LaneCoordinate r = {warpRow, sliceStride() * mi, 0,
                            arith::AddIOp::create(b, loc, lane8, upper)};
        fa.push_back(ldmatrix(m.a, r, {right, 16 * kk, 16}, 4, false));
      }
    }
    // B fragments of two n8 tiles per ldmatrix.x4 (one with .x2 at an odd
    // end): Kᵀ straight from the [N, K] tile, V transposed from [K, N].
    for (int64_t j = 0; j < n / 8; j += 2) {
      bool pairOfTiles = j + 1 < n / 8;
      SmallVector<Value> fb;
      if (m.transposeB) {
        LaneCoordinate r = {pairOfTiles ? right : Value(), 8 * j, 0, lane8};
        fb = ldmatrix(m.b, r, {upper, 16 * kk, 16}, pairOfTiles ? 4 : 2, false);
      } else {
        LaneCoordinate r = {arith::AddIOp::create(b, loc, upper, lane8),
                            16 * kk};
        LaneCoordinate c = {pairOfTiles ? right : Value(), 8 * j, 16};
        fb = ldmatrix(m.b, r, c, pairOfTiles ? 4 : 2, true);
      }
      for (int64_t jj = j; jj < std::min(j + 2, n / 8); ++jj) {
        ArrayRef<Value> b01 = ArrayRef<Value>(fb).slice(2 * (jj - j), 2);
        for (int64_t mi = 0; mi < mTiles; ++mi) {
          int64_t lo = 2 * mi * cPer + 2 * jj, hi = lo + cPer;
          SmallVector<int64_t> at = {lo, lo + 1, hi, hi + 1};
          SmallVector<Value> c;
          for (int64_t e : at)
            c.push_back(extract(b, acc, e));
          Value d = mma_sync::mma(b, loc, fa[mi], b01, c, bf16);
          for (auto [i, e] : llvm::enumerate(at))
            acc = insert(b,
                         LLVM::ExtractValueOp::create(
                             b, loc, d, ArrayRef<int64_t>{(int64_t)i}),
                         acc, e);
        }
      }
    }
  }
  values[m.c] = acc;
  return success();
}

std::optional<WarpgroupReduceSplit>
flash::splitWarpgroupReduce(int64_t m, int64_t n, int64_t warpgroups) {
  if (warpgroups <= 0 || m % 64 != 0 || n % 64 != 0)
    return std::nullopt;
  int64_t slices = m / 64, panels = n / 64;
  std::optional<WarpgroupReduceSplit> split;
  if (slices % warpgroups == 0)
    split = WarpgroupReduceSplit{slices / warpgroups, n};
  else if (panels % warpgroups == 0)
    split = WarpgroupReduceSplit{slices, n / warpgroups};
  if (split && split->cols > 256)
    return std::nullopt;
  return split;
}

Value TileRewriter::descriptor(OpBuilder &b, Value tile, int64_t leadingBytes) {
  return wgmmaDescriptorLow(b, loc, tile, leadingBytes);
}

Value flash::wgmmaDescriptorLow(OpBuilder &b, Location loc, Value tile,
                                int64_t leadingBytes) {
  Value view = getWorkgroupView(tile);
  Value address = arith::IndexCastUIOp::create(
      b, loc, b.getI32Type(),
      memref::ExtractAlignedPointerAsIndexOp::create(b, loc, view));
  auto i32 = [&](uint32_t v) -> Value {
    return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(v));
  };
  Value start = arith::ShRUIOp::create(
      b, loc, arith::AndIOp::create(b, loc, address, i32(0x3FFFF)), i32(4));
  return arith::OrIOp::create(
      b, loc, start, i32((uint32_t(leadingBytes >> 4) & 0x3FFF) << 16));
}
/// C += A B as one flashgpu.warpgroup_mma (m64nNk16 per 64-row slice and k
/// step; printed as PTX by --convert-flashgpu-to-llvm). A is a swizzled
/// shared tile (K-major) or P in registers; B is a swizzled shared tile,
/// K-major for Kᵀ ([N, K] rows) or [K, N] rows for V. The op's accumulator
/// is slice-major in wgmma's order; here it is gathered from and scattered
/// back to the warp's mma.sync fragment layout.
LogicalResult TileRewriter::rewriteWarpgroupContraction(OpBuilder &b,
                                                        linalg::GenericOp op) {
  TileContraction m = *matchTileContraction(op);
  auto aType = cast<MemRefType>(m.a.getType());
  auto bType = cast<MemRefType>(m.b.getType());
  int64_t n = cast<MemRefType>(m.c.getType()).getDimSize(1);
  int64_t k = aType.getDimSize(1), steps = k / 16, mTiles = slots() / 2;
  int64_t cPer = n / 4, aPer = k / 4, perSlice = n / 2;
  Type et = aType.getElementType(), i32 = b.getI32Type();
  Value aRegs = tiles.contains(m.a) ? current(b, m.a) : Value();
  Value acc = current(b, m.c);

  int64_t outputs = mTiles * perSlice;
  auto accElement = [&](int64_t mi, int64_t i) {
    return (2 * mi + (i / 2) % 2) * cPer + 2 * (i / 4) + i % 2;
  };
  auto accType = VectorType::get({outputs}, b.getF32Type());
  // A freshly zeroed accumulator (the scores) is not read.
  auto broadcast = acc.getDefiningOp<vector::BroadcastOp>();
  bool zeroed = matchPattern(acc, m_AnyZeroFloat()) ||
                (broadcast && matchPattern(broadcast.getSource(),
                                           m_AnyZeroFloat()));
  Value accIn;
  if (!zeroed) {
    SmallVector<Value> elements;
    for (int64_t mi = 0; mi < mTiles; ++mi)
      for (int64_t i = 0; i < perSlice; ++i)
        elements.push_back(extract(b, acc, accElement(mi, i)));
    accIn = vector::FromElementsOp::create(b, loc, accType, elements);
  }
  // A fragments from P's accumulator layout (as for mma.sync), one i32 per
  // element pair.
  Value aDescriptor;
  IntegerAttr aRows;
  SmallVector<Value> words;
  if (aRegs) {
    VectorType pairType = VectorType::get({2}, et);
    for (int64_t mi = 0; mi < mTiles; ++mi)
      for (int64_t kk = 0; kk < steps; ++kk)
        for (auto [half, j] : {std::pair<int64_t, int64_t>{0, 2 * kk},
                               {1, 2 * kk},
                               {0, 2 * kk + 1},
                               {1, 2 * kk + 1}}) {
          int64_t e = (2 * mi + half) * aPer + 2 * j;
          Value pair = vector::FromElementsOp::create(
              b, loc, pairType,
              ValueRange{extract(b, aRegs, e), extract(b, aRegs, e + 1)});
          Value word = vector::BitCastOp::create(
              b, loc, VectorType::get({1}, i32), pair);
          words.push_back(extract(b, word, 0));
        }
  } else {
    // This warpgroup's first row.
    int64_t groupRows = rows / (warps / 4);
    Value groupOffset = arith::IndexCastUIOp::create(
        b, loc, b.getI32Type(),
        arith::MulIOp::create(
            b, loc, arith::DivUIOp::create(b, loc, warpIndex, idx(b, 4)),
            idx(b, groupRows * 128 / 16)));
    aDescriptor =
        arith::AddIOp::create(b, loc, descriptor(b, m.a, 16), groupOffset);
    aRows = b.getI64IntegerAttr(aType.getDimSize(0));
  }
  Value bDescriptor = descriptor(
      b, m.b, m.transposeB ? 16 : bType.getDimSize(0) * 128);
  // The product over `count` of B's rows from `first` (a multiple of 64):
  // output columns [first, first + count) of a K-major B, k steps
  // [first / 16, (first + count) / 16) of a [k, n] B.
  auto buildMma = [&](OpBuilder &nb, Value accumulator, int64_t first,
                      int64_t count) -> Value {
    int64_t width = m.transposeB ? count : n;
    int64_t kFirst = m.transposeB ? 0 : first / 16;
    int64_t kSteps = m.transposeB ? steps : count / 16;
    Value fragments;
    if (aRegs) {
      SmallVector<Value> used;
      for (int64_t mi = 0; mi < mTiles; ++mi)
        llvm::append_range(used, ArrayRef<Value>(words).slice(
                                     4 * (mi * steps + kFirst), 4 * kSteps));
      fragments = vector::FromElementsOp::create(
          nb, loc, VectorType::get({(int64_t)used.size()}, i32), used);
    }
    // 64 rows of a 128-byte-swizzled tile are 8 whole swizzle atoms.
    Value bFirst = bDescriptor;
    if (first)
      bFirst = arith::AddIOp::create(
          nb, loc, bFirst,
          arith::ConstantOp::create(nb, loc,
                                    nb.getI32IntegerAttr(first * 128 / 16)));
    auto mma = flashgpu::WarpgroupMmaOp::create(
        nb, loc, VectorType::get({mTiles * width / 2}, nb.getF32Type()),
        accumulator, aDescriptor, fragments, bFirst, width, kSteps, mTiles, et,
        aRows, bType.getDimSize(0), /*b_k_major=*/m.transposeB);
    if (std::optional<Contraction> role = getContraction(op))
      setContraction(mma, *role);
    if (hasRaggedKeys(op))
      setRaggedKeys(mma);
    return mma;
  };
  // `then` when B has valid rows past its first 64, else `otherwise`.
  auto ifRowsPast64 = [&](Value validRows, Type type,
                          function_ref<Value(OpBuilder &)> then,
                          function_ref<Value(OpBuilder &)> otherwise) {
    Value more = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt,
                                       validRows, idx(b, 64));
    auto branch = scf::IfOp::create(b, loc, TypeRange{type}, more,
                                    /*withElseRegion=*/true);
    OpBuilder thenBuilder = branch.getThenBodyBuilder();
    scf::YieldOp::create(thenBuilder, loc, then(thenBuilder));
    OpBuilder elseBuilder = branch.getElseBodyBuilder();
    scf::YieldOp::create(elseBuilder, loc, otherwise(elseBuilder));
    return branch.getResult(0);
  };
  // A ragged key block (at most 64 keys in the last block of a loop that
  // reaches past the last key) leaves V's zero rows from 64 on out of P V:
  // the k steps past the fourth are a second MMA, accumulating, in a branch
  // taken only when the block has more keys (a branch inside one wgmma
  // sequence makes ptxas serialise every wgmma of the kernel). Only blocks
  // of 128 keys or more: below, the branch's registers cost more than the
  // rows saved. S = Q Kᵀ is not split: narrowing it needs MMAs of different
  // widths, which ptxas serialises too when one branch merges them, and two
  // halves (n = 64, then the rest in a branch) cost 1-3.6% at 1-2k keys,
  // where the last block holds more than 64 keys, for 0.4% at 4k
  // (docs/GPU-NOTES.md 77).
  Value validRows = raggedKeys && hasRaggedKeys(op)
                        ? paddedTileValidRows(m.b, op->getBlock())
                        : Value();
  Value mma;
  if (validRows && !m.transposeB && aRegs && k >= 128) {
    Value head = buildMma(b, accIn, 0, 64);
    mma = ifRowsPast64(
        validRows, accType,
        [&](OpBuilder &nb) { return buildMma(nb, head, 64, k - 64); },
        [&](OpBuilder &) { return head; });
  } else {
    mma = buildMma(b, accIn, 0, m.transposeB ? n : k);
  }
  for (int64_t mi = 0; mi < mTiles; ++mi)
    for (int64_t i = 0; i < perSlice; ++i)
      acc = insert(b, extract(b, mma, mi * perSlice + i), acc,
                   accElement(mi, i));
  values[m.c] = acc;
  return success();
}

/// The 4 x 4 transpose, over the lanes of a quad, of the 2-element pairs of
/// `v` from `first` on (lane l's pair j: columns 8 j + 2 l, 8 j + 2 l + 1
/// of four adjacent 8-column blocks): lane l gets block l's pairs from
/// lanes 0-3, i.e. its 8 columns in order, as vector<4 x i32>. Two
/// butterfly steps: lanes l and l ^ 2 swap the off-diagonal 2 x 2 blocks,
/// then lanes l and l ^ 1 the off-diagonal elements of each block.
Value TileRewriter::transposeQuad(OpBuilder &b, Value v, int64_t first) {
  Type i32 = b.getI32Type();
  Type element = cast<VectorType>(v.getType()).getElementType();
  SmallVector<Value> a;
  for (int64_t j = 0; j < 4; ++j) {
    Value pair = vector::FromElementsOp::create(
        b, loc, VectorType::get({2}, element),
        ValueRange{extract(b, v, first + 2 * j),
                   extract(b, v, first + 2 * j + 1)});
    a.push_back(extract(
        b, vector::BitCastOp::create(b, loc, VectorType::get({1}, i32), pair),
        0));
  }
  auto bit = [&](int64_t mask) -> Value {
    return arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::ne,
        arith::AndIOp::create(b, loc, quadLane, idx(b, mask)), idx(b, 0));
  };
  // Step (partner l ^ mask): in each pair (low, high) of registers whose
  // indices differ by `span`, a lane with the bit set sends `low` and keeps
  // `high`; the other sends `high` and keeps `low`; the received value takes
  // the sent one's place.
  auto step = [&](int32_t mask, int64_t span) {
    Value set = bit(mask);
    for (int64_t low = 0; low < 4; ++low) {
      if (low & span)
        continue;
      int64_t high = low + span;
      Value send = arith::SelectOp::create(b, loc, set, a[low], a[high]);
      Value got = shuffleXor(b, loc, send, mask);
      Value newLow = arith::SelectOp::create(b, loc, set, got, a[low]);
      Value newHigh = arith::SelectOp::create(b, loc, set, a[high], got);
      a[low] = newLow;
      a[high] = newHigh;
    }
  };
  step(2, 2);
  step(1, 1);
  return vector::FromElementsOp::create(b, loc, VectorType::get({4}, i32), a);
}

void TileRewriter::store(OpBuilder &b, Value tile, Value validRows,
                         Value target) {
  auto type = cast<MemRefType>(tile.getType());
  bool rank2 = type.getRank() == 2;
  int64_t per = perSlot(type);
  Value v = current(b, tile);
  SmallVector<Value> colIdx;
  for (int64_t q = 0; rank2 && q < per; ++q)
    colIdx.push_back(colOf(b, q));
  // A row vector is replicated over the quad: its first lane writes it.
  Value firstOfQuad = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                            quadLane, idx(b, 0));
  // Element by element, or in pairs (the fragments' adjacent columns
  // 2c, 2c + 1) through `pairTarget`, a view of the target with contiguous
  // rows: one store and one address per pair instead of two, and column
  // offsets that are immediates off a row's address (at seq 1k, 39% of the
  // forward's stall samples were the element stores' 64-bit address
  // arithmetic, docs/GPU-NOTES.md 52).
  int64_t bytes = type.getElementTypeBitWidth() / 8;
  // Into a swizzled shared tile (the staged dSᵀ that warpgroup MMA reads):
  // the whole tile, each pair of adjacent columns at its swizzled offset
  // (the swizzle moves 16-byte chunks, so a pair stays together).
  if (isSwizzledTile(target) && rank2 && per % 2 == 0) {
    Value flat = memref::CollapseShapeOp::create(
        b, loc, target, ArrayRef<ReassociationIndices>{{0, 1}});
    for (int64_t r = 0; r < slots(); ++r) {
      for (int64_t q = 0; q < per; q += 2) {
        Value pair = vector::FromElementsOp::create(
            b, loc, VectorType::get({2}, type.getElementType()),
            ValueRange{extract(b, v, r * per + q),
                       extract(b, v, r * per + q + 1)});
        Value at = swizzledSlotOffset(b, r, q, type.getDimSize(0));
        vector::StoreOp::create(b, loc, pair, flat, ValueRange{at},
                                /*nontemporal=*/false, llvm::Align(2 * bytes));
      }
    }
    return;
  }
  // 16-byte elements (2-byte types, whole groups of four 8-column blocks):
  // the quad's lanes exchange their pairs so that each holds 8 adjacent
  // columns, and a warp's store writes 64 contiguous bytes of each of its 8
  // rows instead of 16 (a quarter of the stores and of the L1 wavefronts:
  // the epilogue's pair stores were 2-4% of the forward at 4k keys,
  // docs/GPU-NOTES.md 66).
  bool quadStores = wideStores && bytes == 2 && per % 8 == 0;
  auto storeRows = [&](OpBuilder &at, Value pairTarget) {
    for (int64_t r = 0; r < slots(); ++r) {
      Value row = rowOf(at, r);
      Value valid = arith::CmpIOp::create(at, loc, arith::CmpIPredicate::ult,
                                          row, validRows);
      if (!rank2)
        valid = arith::AndIOp::create(at, loc, valid, firstOfQuad);
      // Every lane of the warp shuffles: before the row's guard.
      SmallVector<Value> chunks;
      if (pairTarget && quadStores)
        for (int64_t q = 0; q < per; q += 8)
          chunks.push_back(transposeQuad(at, v, r * per + q));
      auto guard = scf::IfOp::create(at, loc, valid, /*withElseRegion=*/false);
      OpBuilder then = guard.getThenBodyBuilder();
      if (!chunks.empty()) {
        // Lane l of the quad holds columns 32 k + 8 l ... + 7.
        Value lanes = arith::MulIOp::create(then, loc, quadLane, idx(then, 8));
        for (auto [k, chunk] : llvm::enumerate(chunks)) {
          Value col = plus(then, lanes, 32 * static_cast<int64_t>(k));
          vector::StoreOp::create(
              then, loc,
              vector::BitCastOp::create(
                  then, loc, VectorType::get({8}, type.getElementType()),
                  chunk),
              pairTarget, ValueRange{row, col}, /*nontemporal=*/false,
              llvm::Align(16));
        }
        continue;
      }
      for (int64_t q = 0; q < per; q += pairTarget ? 2 : 1) {
        if (pairTarget) {
          Value pair = vector::FromElementsOp::create(
              then, loc, VectorType::get({2}, type.getElementType()),
              ValueRange{extract(then, v, r * per + q),
                         extract(then, v, r * per + q + 1)});
          vector::StoreOp::create(
              then, loc, pair, pairTarget, ValueRange{row, colIdx[q]},
              /*nontemporal=*/false, llvm::Align(2 * bytes));
          continue;
        }
        SmallVector<Value> index = {row};
        if (rank2)
          index.push_back(colIdx[q]);
        memref::StoreOp::create(then, loc, extract(then, v, r * per + q),
                                target, index);
      }
    }
  };
  auto targetType = cast<MemRefType>(target.getType());
  bool global = !targetType.getMemorySpace();
  if (!pairStores || !rank2 || per % 2 != 0 || !global ||
      (bytes != 2 && bytes != 4) ||
      targetType.getElementType() != type.getElementType()) {
    storeRows(b, Value());
    return;
  }
  // Pairs: the kernel is for contiguous, aligned rows (the caller takes the
  // general kernel otherwise) and stops here rather than write a misaligned
  // pair. No element-store fallback: the values stored are computed before
  // the branch and both branches would keep them live at once (D = 256
  // spilled 384 bytes).
  auto meta = memref::ExtractStridedMetadataOp::create(b, loc, target);
  auto isMultiple = [&](Value x, int64_t m) -> Value {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                 arith::RemUIOp::create(b, loc, x, idx(b, m)),
                                 idx(b, 0));
  };
  int64_t elements = quadStores ? 8 : 2;
  Value ok = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                   meta.getStrides()[1], idx(b, 1));
  ok = arith::AndIOp::create(b, loc, ok,
                             isMultiple(meta.getStrides()[0], elements));
  ok =
      arith::AndIOp::create(b, loc, ok, isMultiple(meta.getOffset(), elements));
  ok = arith::AndIOp::create(
      b, loc, ok,
      isMultiple(memref::ExtractAlignedPointerAsIndexOp::create(b, loc, target),
                 elements * bytes));
  Value misaligned = arith::XOrIOp::create(
      b, loc, ok, arith::ConstantOp::create(b, loc, b.getBoolAttr(true)));
  auto guard = scf::IfOp::create(b, loc, misaligned, /*withElseRegion=*/false);
  OpBuilder trap = guard.getThenBodyBuilder();
  LLVM::Trap::create(trap, loc);
  auto rowsType = MemRefType::get(
      targetType.getShape(), targetType.getElementType(),
      StridedLayoutAttr::get(b.getContext(), ShapedType::kDynamic,
                             {ShapedType::kDynamic, 1}));
  Value rowsView = memref::ReinterpretCastOp::create(
      b, loc, rowsType, meta.getBaseBuffer(), OpFoldResult(meta.getOffset()),
      memref::getMixedSizes(b, loc, target),
      ArrayRef<OpFoldResult>{meta.getStrides()[0], b.getIndexAttr(1)});
  storeRows(b, rowsView);
}

namespace {
struct FlashGpuWarpRegisterTilesPass
    : flash::impl::FlashGpuWarpRegisterTilesPassBase<
          FlashGpuWarpRegisterTilesPass> {
  using Base::Base;
  void runOnOperation() override {
    for (gpu::LaunchOp launch : collectLaunches(getOperation())) {
      if (!launch->hasAttr(kRegisterRowsAttr))
        continue;
      FailureOr<int64_t> threads =
          launchThreads(launch, "flash-gpu-warp-register-tiles");
      if (failed(threads))
        return signalPassFailure();
      OpBuilder start = OpBuilder::atBlockBegin(&launch.getBody().front());
      Value tid =
          gpu::ThreadIdOp::create(start, launch.getLoc(), gpu::Dimension::x);
      WarpRegisterTiles::RewriteOptions options;
      options.pairStores = pairStores;
      options.wideStores = wideStores;
      options.lazyRescale = lazyRescale;
      options.raggedKeys = raggedKeys;
      options.perIterationLanes = perIterationLanes;
      if (failed(WarpRegisterTiles::recorded(launch, *threads / 32)
                     .rewrite(tid, options)))
        return signalPassFailure();
      launch->setAttr(kWarpRegisterTilesAttr, start.getUnitAttr());
    }
  }
};
} // namespace
