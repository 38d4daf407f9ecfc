//===- LowerTileMma.cpp - tile contractions onto tensor cores ---*- C++ -*-===//
//
// Part of the flash-mlir project.
//
// --flash-gpu-lower-tile-mma: the tile contractions the warp rewrite left
// (those on shared-memory tiles, and the atomic backward's dS K) become
// warpgroup MMA, mma.sync or WMMA code, each warp taking output tiles in
// turn.
//
//===----------------------------------------------------------------------===//

#include "flash/Conversion/Passes.h"

#include "GpuMapping.h"
#include "MmaSyncFragments.h"
#include "StagedReductions.h"
#include "TensorMaps.h"
#include "TileContraction.h"
#include "WarpRegisterTiles.h"

#include "flash/Dialect/Flash/IR/FlashOps.h"
#include "flash/Dialect/Flash/IR/TileRoles.h"
#include "flash/Dialect/FlashGPU/IR/FlashGPUOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::flash {
#define GEN_PASS_DEF_FLASHGPULOWERTILEMMAPASS
#include "flash/Conversion/Passes.h.inc"
} // namespace mlir::flash

using namespace mlir;
using flash::Chip;
using flash::TensorCores;

namespace {
class TileMmaLowering {
public:
  TileMmaLowering(gpu::LaunchOp launch, int64_t threads,
                  TensorCores tensorCores, bool perIterationLanes)
      : launch(launch), loc(launch.getLoc()), threads(threads),
        tensorCores(tensorCores), perIterationLanes(perIterationLanes) {}

  LogicalResult run();

private:
  std::tuple<scf::ForOp, Value, Value>
  warpTiles(OpBuilder &b, Value tid, int64_t m, int64_t n, int64_t tileCols);
  bool emitWarpMatmul(linalg::GenericOp op, Value tid);
  bool emitWarpMmaSync(linalg::GenericOp op, Value tid);
  bool emitWarpMmaReduce(linalg::GenericOp op, Value tid);
  bool emitWarpgroupMmaReduce(linalg::GenericOp op, Value tid);
  /// What one warpgroup computes of a GradQueryBlock contraction: rows
  /// [firstRow, + 64 slices), columns [firstCol, + cols); the lane's first
  /// row and column in it.
  struct StagedShare {
    Value group, firstRow, firstCol, warpRow, laneCol;
    int64_t slices, cols;
  };
  void emitStagedReductions(
      OpBuilder &b, Value stage, const flash::StagedReduction &dest, Value tid,
      const StagedShare &share,
      llvm::function_ref<Value(OpBuilder &, int64_t, int64_t, int64_t)> pairOf);

  gpu::LaunchOp launch;
  Location loc;
  int64_t threads;
  TensorCores tensorCores;
  bool perIterationLanes;
};
} // namespace

/// A loop in which each warp takes the 16 x `tileCols` tiles of an m x n
/// result in turn; returns it with the tile's origin, `b` inside its body.
std::tuple<scf::ForOp, Value, Value>
TileMmaLowering::warpTiles(OpBuilder &b, Value tid, int64_t m, int64_t n,
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
bool TileMmaLowering::emitWarpMatmul(linalg::GenericOp op, Value tid) {
  auto operands = flash::matchTileContraction(op);
  if (!operands || !operands->hasIdentityLayouts() || operands->transposeA ||
      !cast<MemRefType>(operands->a.getType()).getElementType().isF16() ||
      flash::isSwizzledTile(operands->a) || flash::isSwizzledTile(operands->b))
    return false; // WMMA fragments exist for f16 only, in row-major tiles
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

namespace {
/// mma.sync.m16n8k16.row.col (f16 or bf16 in, f32 accumulate) on the
/// operands of one tile contraction: A and B fragments read from their
/// buffers, with ldmatrix where both are shared tiles, and the MMA. Fragment
/// layout (PTX ISA, lane = 4 g + t): A holds rows g and g+8, columns 2t,
/// 2t+1 and 2t+8, 2t+9 of the 16x16 A tile; B holds rows 2t, 2t+1, 2t+8,
/// 2t+9 of column g; C holds rows g and g+8, columns 2t and 2t+1.
class MmaSyncFragments {
public:
  /// Lane-dependent values are built at `b`'s insertion point, from a
  /// per-iteration lane (`mma_sync::perIterationCoordinate`) with
  /// `perIterationLane`.
  MmaSyncFragments(OpBuilder &b, Location loc,
                   const flash::TileContraction &operands, Value tid,
                   bool perIterationLane)
      : b(b), loc(loc), m(operands) {
    Type et = cast<MemRefType>(m.a.getType()).getElementType();
    bf16 = et.isBF16();
    pairType = VectorType::get({2}, et);
    Value lane = arith::RemUIOp::create(b, loc, tid, idx(32));
    if (perIterationLane)
      lane = flash::mma_sync::perIterationCoordinate(b, loc, lane);
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
    using flash::mma_sync::LaneCoordinate;
    LaneCoordinate aRow, aCol;
    if (m.transposeA) {
      aRow = {add(right, lane8), step};
      aCol = {add(row, upper)};
    } else {
      aRow = {add(add(row, lane8), upper)};
      aCol = {right, step, 16};
    }
    return flash::mma_sync::ldmatrix(b, loc, m.a, aRow, aCol, 4, m.transposeA);
  }

  /// The 16 x 8 B tile at K [step, step + 16), columns [col, col + 8); with
  /// `tiles` = 2 also the next one, [col + 8, col + 16), by the same
  /// ldmatrix.x4 (matrices K 0-7 | 8-15 x the two tiles, as the register
  /// tiles read theirs): b0, b1 of the first tile, then of the second.
  SmallVector<Value> loadB(Value col, int64_t step, int64_t tiles = 1) {
    if (!ldmatrix()) {
      SmallVector<Value> regs;
      for (int64_t t = 0; t < tiles; ++t) {
        Value colB = add(add(col, 8 * t), g), kb = add(t2, step);
        regs.append({pack(loadB(kb, colB), loadB(add(kb, 1), colB)),
                     pack(loadB(add(kb, 8), colB), loadB(add(kb, 9), colB))});
      }
      return regs;
    }
    // K 0-7 and 8-15 of the 8 columns; Kᵀ is read straight, V transposed.
    using flash::mma_sync::LaneCoordinate;
    Value c = tiles == 2 ? add(col, right) : col;
    LaneCoordinate bRow, bCol;
    if (m.transposeB) {
      bRow = {add(c, lane8)};
      bCol = {upper, step, 16};
    } else {
      bRow = {add(lane8, upper), step};
      bCol = {c};
    }
    return flash::mma_sync::ldmatrix(b, loc, m.b, bRow, bCol, 2 * tiles,
                                     !m.transposeB);
  }

  /// acc + A B for one 16 x 8 tile of C.
  SmallVector<Value> mma(ArrayRef<Value> fa, ArrayRef<Value> fb,
                         ArrayRef<Value> acc) {
    Value d = flash::mma_sync::mma(b, loc, fa, fb, acc, bf16);
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
  Value pack(Value x, Value y) {
    return flash::mma_sync::operandRegister(
        b, loc,
        vector::FromElementsOp::create(b, loc, pairType, ValueRange{x, y}));
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
bool TileMmaLowering::emitWarpMmaSync(linalg::GenericOp op, Value tid) {
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
  MmaSyncFragments frag(b, loc, *operands, tid, perIterationLanes);
  OpBuilder::InsertionGuard guard(b);
  auto [tiles, row, col] = warpTiles(b, tid, m, n, 8);
  Value rowLo = frag.add(row, frag.g), rowHi = frag.add(rowLo, 8);
  Value colC = frag.add(col, frag.t2), colC1 = frag.add(colC, 1);
  auto load = [&](Value r, Value cc) -> Value {
    return memref::LoadOp::create(b, loc, c, ValueRange{r, cc});
  };
  // C zero-filled just before: the fill is dropped and the accumulators
  // start at zero.
  linalg::FillOp zeroFill = flash::findZeroFill(op, c);
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

/// Adds accumulator fragments into a `flash.atomic_add` destination with
/// `fragment_major` (strips of 16 rows in fragment order): a lane's element
/// (g + 8 half, t2 + e) of 8-column block j of the strip at (blockRow,
/// blockCol) goes to element blockRow W + 16 blockCol + 128 j + 64 half +
/// (32 e + lane | 2 lane + e) of the destination's rows for groups 1 and 2,
/// and + 128 (j - j mod 2) + 128 half + 4 lane + 2 (j mod 2) + e for group
/// 4, so one reduction per fragment register (group 1), pair (2) or two
/// pairs (4) covers 128, 256 or 512 contiguous bytes of a warp. The lane's
/// offset is built once; the block's and the element's terms are constants
/// added last, which become the reductions' immediate offsets.
struct FragmentMajorAdds {
  FragmentMajorAdds(OpBuilder &b, Location loc, flash::AtomicAddOp atomic)
      : loc(loc), group(*atomic.getFragmentMajor()),
        cols(cast<MemRefType>(atomic.getDest().getType()).getDimSize(1)),
        flat(flash::flatRowsView(b, loc, atomic.getDest())) {}

  /// The lane's element offset in the strip at (blockRow, blockCol), the
  /// lane given by its fragment coordinates g and t2 (2 (lane mod 4)).
  Value laneOffset(OpBuilder &b, Value blockRow, Value blockCol, Value g,
                   Value t2) const {
    auto idx = [&](int64_t v) -> Value {
      return arith::ConstantIndexOp::create(b, loc, v);
    };
    // lane = 4 g + t2 / 2; group w > 1 takes w lane = 4 w g + (w / 2) t2.
    Value fLane =
        group == 1
            ? arith::AddIOp::create(b, loc,
                                    arith::MulIOp::create(b, loc, g, idx(4)),
                                    arith::DivUIOp::create(b, loc, t2, idx(2)))
            : arith::AddIOp::create(
                  b, loc, arith::MulIOp::create(b, loc, g, idx(4 * group)),
                  arith::MulIOp::create(b, loc, t2, idx(group / 2)));
    Value block = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, blockRow, idx(cols)),
        arith::MulIOp::create(b, loc, blockCol, idx(16)));
    return arith::AddIOp::create(b, loc, block, fLane);
  }

  /// The 8-column blocks one reduction takes: `group` / 2 (one for group 1).
  int64_t blocksPerAdd() const { return group == 4 ? 2 : 1; }

  /// Adds the lane's pairs (columns t2, t2 + 1 of row g + 8 `half`) of the
  /// 8-column blocks `block`, block + 1, ... (blocksPerAdd() of them) at
  /// `laneOffset` plus `constant` (the strip's constant terms).
  void add(OpBuilder &b, Value laneOffset, int64_t constant, int64_t half,
           int64_t block, ArrayRef<std::pair<Value, Value>> pairs) const {
    auto at = [&](int64_t c) -> Value {
      return arith::AddIOp::create(
          b, loc, laneOffset,
          arith::ConstantIndexOp::create(
              b, loc,
              constant + 128 * block + (group == 4 ? 128 : 64) * half + c));
    };
    auto f32 = b.getF32Type();
    if (group == 1) {
      flashgpu::ReduceAddOp::create(b, loc, pairs[0].first, flat,
                                    ValueRange{at(0)});
      flashgpu::ReduceAddOp::create(b, loc, pairs[0].second, flat,
                                    ValueRange{at(32)});
      return;
    }
    SmallVector<Value> elements;
    for (auto [first, second] : pairs)
      elements.append({first, second});
    Value v = vector::FromElementsOp::create(
        b, loc, VectorType::get({(int64_t)elements.size()}, f32), elements);
    flashgpu::ReduceAddOp::create(b, loc, v, flat, ValueRange{at(0)});
  }

  Location loc;
  int64_t group, cols;
  Value flat;
};

/// A contraction whose zero-filled C goes only to a `flash.atomic_add`
/// (FlashAttention-2's dQ += dS K): mma.sync with the accumulators in
/// registers and the reductions straight from them, as FA2 adds its dQ, so
/// C never goes to shared memory. Each warp takes 16-row strips of C times
/// column chunks of at most 64 (as many chunks per strip as make the warps
/// busy), holds a chunk's accumulators over the whole K loop, reads each A
/// fragment once per chunk, and adds its two adjacent columns per row with
/// one reduction (rows past the tile's valid ones are skipped).
bool TileMmaLowering::emitWarpMmaReduce(linalg::GenericOp op, Value tid) {
  auto operands = flash::matchTileContraction(op);
  if (!operands)
    return false;
  Value a = operands->a, c = operands->c;
  linalg::FillOp zeroFill = flash::findZeroFill(op, c);
  flash::AtomicAddOp atomic = flash::findAtomicAddOfResult(op, c);
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
  Value valid = b.createOrFold<memref::DimOp>(loc, atomic.getTile(), 0);
  std::optional<FragmentMajorAdds> fragmentMajor;
  if (atomic.getFragmentMajor())
    fragmentMajor.emplace(b, loc, atomic);
  else
    flash::trapUnlessUnitInnerStride(b, loc, dest);
  MmaSyncFragments frag(b, loc, *operands, tid, perIterationLanes);
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0));
  {
    OpBuilder::InsertionGuard guard(b);
    auto [tiles, row, col] = warpTiles(b, tid, m, n, chunkCols);
    SmallVector<SmallVector<Value>> acc(chunkCols / 8,
                                        SmallVector<Value>(4, zero));
    SmallVector<Value> cols;
    for (int64_t j = 0; j < chunkCols / 8; ++j)
      cols.push_back(frag.add(col, 8 * j));
    // B two 8-column tiles per ldmatrix.x4 (half the instructions of one
    // .x2 per tile; chunks are a multiple of 16 columns where there are two).
    for (int64_t step = 0; step < k; step += 16) {
      SmallVector<Value> fa = frag.loadA(row, step);
      for (int64_t j = 0; j < chunkCols / 8; j += 2) {
        if (j + 1 == chunkCols / 8) {
          acc[j] = frag.mma(fa, frag.loadB(cols[j], step), acc[j]);
          continue;
        }
        SmallVector<Value> fb = frag.loadB(cols[j], step, /*tiles=*/2);
        acc[j] = frag.mma(fa, ArrayRef<Value>(fb).take_front(2), acc[j]);
        acc[j + 1] =
            frag.mma(fa, ArrayRef<Value>(fb).drop_front(2), acc[j + 1]);
      }
    }
    auto pairType = VectorType::get({2}, b.getF32Type());
    Value laneOffset =
        fragmentMajor ? fragmentMajor->laneOffset(b, row, col, frag.g, frag.t2)
                      : Value();
    for (int64_t half = 0; half < 2; ++half) {
      Value r = frag.add(frag.add(row, frag.g), 8 * half);
      Value inside =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, r, valid);
      auto guarded =
          scf::IfOp::create(b, loc, inside, /*withElseRegion=*/false);
      OpBuilder in = guarded.getThenBodyBuilder();
      if (fragmentMajor) {
        int64_t step = fragmentMajor->blocksPerAdd();
        for (int64_t j = 0; j < chunkCols / 8; j += step) {
          SmallVector<std::pair<Value, Value>> pairs;
          for (int64_t block = j; block < j + step; ++block)
            pairs.push_back({acc[block][2 * half], acc[block][2 * half + 1]});
          fragmentMajor->add(in, laneOffset, 0, half, j, pairs);
        }
        continue;
      }
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
bool TileMmaLowering::emitWarpgroupMmaReduce(linalg::GenericOp op, Value tid) {
  auto operands = flash::matchTileContraction(op);
  if (!operands || !operands->transposeA ||
      flash::getContraction(op) != flash::Contraction::GradQueryBlock)
    return false;
  Value a = operands->a, bTile = operands->b, c = operands->c;
  linalg::FillOp zeroFill = flash::findZeroFill(op, c);
  flash::AtomicAddOp atomic = flash::findAtomicAddOfResult(op, c);
  if (!zeroFill || !atomic || !flash::isSwizzledTile(a) ||
      !flash::isSwizzledTile(bTile))
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
  flash::trapUnlessUnitInnerStride(b, loc, dest);
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
  // The lane's two adjacent columns of 8-column group j in the row of
  // `slice` and `half` (rows 8 apart) it holds.
  auto pairOf = [&](OpBuilder &at, int64_t slice, int64_t half,
                    int64_t j) -> Value {
    int64_t e = slice * perSlice + 4 * j + 2 * half;
    return vector::FromElementsOp::create(
        at, loc, pairType,
        ValueRange{
            vector::ExtractOp::create(at, loc, acc, ArrayRef<int64_t>{e}),
            vector::ExtractOp::create(at, loc, acc, ArrayRef<int64_t>{e + 1})});
  };
  // The stage's two copies: the [2, m, n] shared view whose first the
  // tile is (carve-shared-memory's contract).
  auto stage = c.getDefiningOp<memref::MemorySpaceCastOp>();
  auto firstCopy = stage && stage->hasAttr(flash::kReductionStageAttr)
                       ? stage.getSource().getDefiningOp<memref::SubViewOp>()
                       : memref::SubViewOp();
  std::optional<flash::StagedReduction> staged;
  if (firstCopy &&
      firstCopy.getSourceType().getShape() == ArrayRef<int64_t>{2, m, n})
    staged = flash::matchStagedReduction(atomic, c, warpgroups);
  if (staged) {
    StagedShare share{group,   firstRow,      firstCol,   warpRow,
                      laneCol, split->slices, split->cols};
    emitStagedReductions(b, firstCopy.getSource(), *staged, tid, share,
                         pairOf);
  } else {
    std::optional<FragmentMajorAdds> fragmentMajor;
    Value laneOffset;
    if (atomic.getFragmentMajor()) {
      fragmentMajor.emplace(b, loc, atomic);
      Value blockRow = arith::AddIOp::create(
          b, loc, firstRow, arith::MulIOp::create(b, loc, warp, idx(16)));
      laneOffset = fragmentMajor->laneOffset(b, blockRow, firstCol, g, t2);
    }
    int64_t cols = fragmentMajor ? fragmentMajor->cols : 0;
    for (int64_t slice = 0; slice < split->slices; ++slice)
      for (int64_t half = 0; half < 2; ++half) {
        Value r =
            arith::AddIOp::create(b, loc, warpRow, idx(64 * slice + 8 * half));
        Value inside =
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, r, valid);
        auto guarded =
            scf::IfOp::create(b, loc, inside, /*withElseRegion=*/false);
        OpBuilder in = guarded.getThenBodyBuilder();
        if (fragmentMajor) {
          int64_t step = fragmentMajor->blocksPerAdd();
          for (int64_t j = 0; j < split->cols / 8; j += step) {
            SmallVector<std::pair<Value, Value>> pairs;
            for (int64_t block = j; block < j + step; ++block) {
              Value pair = pairOf(in, slice, half, block);
              pairs.push_back({vector::ExtractOp::create(in, loc, pair,
                                                         ArrayRef<int64_t>{0}),
                               vector::ExtractOp::create(
                                   in, loc, pair, ArrayRef<int64_t>{1})});
            }
            fragmentMajor->add(in, laneOffset, 64 * slice * cols, half, j,
                               pairs);
          }
          continue;
        }
        for (int64_t j = 0; j < split->cols / 8; ++j) {
          Value cc = arith::AddIOp::create(
              in, loc, laneCol, arith::ConstantIndexOp::create(in, loc, 8 * j));
          flashgpu::ReduceAddOp::create(in, loc, pairOf(in, slice, half, j),
                                        dest, ValueRange{r, cc});
        }
      }
  }
  atomic->erase();
  op->erase();
  zeroFill->erase();
  return true;
}

/// FlashAttention-3's dQ sums: the warpgroup stores its accumulators into
/// one of the two copies of `stage` ([2, m, n]: that of the step's parity in
/// the loop
/// around the contraction), in 128-byte swizzled panels of 32 columns (a
/// panel p is rows x 32 f32 at p x rows x 128 bytes, each row's 16-byte
/// units permuted by the row's index mod 8, as TMA's 128-byte swizzle
/// reads them: a warp's pair stores fall in distinct banks), and one of
/// its threads adds each panel of its share to the destination with one
/// TMA tensor reduction, then commits them as one bulk group. Only the
/// warpgroup's own threads synchronise (named barrier
/// kStagedReductionBarrier + g): before the stores, once the reductions of
/// the step before the last (the same copy's) have read the stage; after
/// them, once every store is fenced towards the async proxy. After the
/// loop the stage is drained, so no later tile that shares its bytes is
/// written while the copy engine still reads them, and the next run of the
/// loop starts with no reduction in flight.
void TileMmaLowering::emitStagedReductions(
    OpBuilder &b, Value stage, const flash::StagedReduction &dest, Value tid,
    const StagedShare &share,
    llvm::function_ref<Value(OpBuilder &, int64_t, int64_t, int64_t)> pairOf) {
  auto idx = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  auto i32 = [&](int64_t v) -> Value {
    return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(v));
  };
  auto stageType = cast<MemRefType>(stage.getType());
  int64_t m = stageType.getDimSize(1), n = stageType.getDimSize(2);
  constexpr int64_t kPanelCols = 32;
  // Both copies as one vector.
  auto meta = memref::ExtractStridedMetadataOp::create(b, loc, stage);
  auto flatType = MemRefType::get(
      {2 * m * n}, stageType.getElementType(),
      StridedLayoutAttr::get(b.getContext(), ShapedType::kDynamic, {1}),
      stageType.getMemorySpace());
  Value flat = memref::ReinterpretCastOp::create(
      b, loc, flatType, meta.getBaseBuffer(), OpFoldResult(meta.getOffset()),
      {b.getIndexAttr(2 * m * n)}, {b.getIndexAttr(1)});
  // The step's copy: the parity of the iteration of the loop around.
  Value copy = idx(0);
  auto loop = b.getInsertionPoint()->getParentOfType<scf::ForOp>();
  if (loop && launch->isAncestor(loop)) {
    Value relative = arith::SubIOp::create(b, loc, loop.getInductionVar(),
                                           loop.getLowerBound());
    Value ordinal = arith::DivUIOp::create(b, loc, relative, loop.getStep());
    copy = arith::RemUIOp::create(b, loc, ordinal, idx(2));
  }
  Value copyBase = arith::MulIOp::create(b, loc, copy, idx(m * n));

  Value firstBarrier = i32(flash::kStagedReductionBarrier);
  Value barrierId = arith::AddIOp::create(
      b, loc, firstBarrier,
      arith::IndexCastUIOp::create(b, loc, b.getI32Type(), share.group));
  Value warpgroupThreads = i32(128);
  auto warpgroupBarrier = [&]() {
    NVVM::BarrierOp::create(b, loc, Type(), barrierId, warpgroupThreads,
                            NVVM::BarrierReductionAttr(), Value());
  };
  // Only the issuing thread has groups; the copy of two steps back is free
  // once all but the last have read.
  NVVM::CpAsyncBulkWaitGroupOp::create(b, loc, b.getI32IntegerAttr(1),
                                       b.getUnitAttr());
  warpgroupBarrier();
  // The lane's rows lie multiples of 8 below its first (one swizzle
  // phase): a column pair's offset in the first row, computed once, plus a
  // constant per row added last, so that the rows share one address per
  // column pair (LLVM hoists each distinct one out of the loop).
  Value rowSwizzle = arith::RemUIOp::create(b, loc, share.warpRow, idx(8));
  Value firstRowBase =
      arith::MulIOp::create(b, loc, share.warpRow, idx(kPanelCols));
  SmallVector<Value> inFirstRow;
  for (int64_t j = 0; j < share.cols / 8; ++j) {
    Value cc = arith::AddIOp::create(b, loc, share.laneCol, idx(8 * j));
    Value panel = arith::DivUIOp::create(b, loc, cc, idx(kPanelCols));
    Value inPanel = arith::RemUIOp::create(b, loc, cc, idx(kPanelCols));
    Value unitInRow = arith::DivUIOp::create(b, loc, inPanel, idx(4));
    Value unit = arith::XOrIOp::create(b, loc, unitInRow, rowSwizzle);
    Value panelBase = arith::AddIOp::create(
        b, loc, firstRowBase,
        arith::MulIOp::create(b, loc, panel, idx(m * kPanelCols)).getResult());
    Value unitBase = arith::MulIOp::create(b, loc, unit, idx(4));
    Value inUnit = arith::RemUIOp::create(b, loc, inPanel, idx(4));
    inFirstRow.push_back(arith::AddIOp::create(
        b, loc, panelBase,
        arith::AddIOp::create(b, loc, unitBase, inUnit).getResult()));
  }
  for (int64_t slice = 0; slice < share.slices; ++slice)
    for (int64_t half = 0; half < 2; ++half) {
      Value rowOffset = arith::AddIOp::create(
          b, loc, copyBase, idx((64 * slice + 8 * half) * kPanelCols));
      for (auto [j, offset] : llvm::enumerate(inFirstRow)) {
        Value at = arith::AddIOp::create(b, loc, offset, rowOffset);
        vector::StoreOp::create(b, loc, pairOf(b, slice, half, j), flat,
                                ValueRange{at}, /*nontemporal=*/false,
                                llvm::Align(8));
      }
    }
  NVVM::FenceProxyOp::create(
      b, loc, NVVM::ProxyKind::async_shared,
      NVVM::SharedSpaceAttr::get(b.getContext(),
                                 NVVM::SharedSpace::shared_cta));
  warpgroupBarrier();
  // The warpgroup's first thread adds its share, one box per panel.
  int64_t rows = 64 * share.slices;
  flash::TensorMaps maps(launch);
  Value map = maps.address(dest.tensor, dest.rowDim, rows,
                           stageType.getElementType(), /*rowVector=*/false);
  Value inGroup = arith::RemUIOp::create(b, loc, tid, idx(128));
  Value issues = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                       inGroup, idx(0));
  auto guarded = scf::IfOp::create(b, loc, issues, /*withElseRegion=*/false);
  OpBuilder in = guarded.getThenBodyBuilder();
  auto idxIn = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(in, loc, v);
  };
  auto toI32 = [&](Value v) -> Value {
    return arith::IndexCastOp::create(in, loc, in.getI32Type(), v);
  };
  Value stageAddress = arith::IndexCastOp::create(
      in, loc, in.getI64Type(),
      memref::ExtractAlignedPointerAsIndexOp::create(in, loc, stage));
  auto sharedPtr = LLVM::LLVMPointerType::get(
      in.getContext(), static_cast<unsigned>(NVVM::NVVMMemorySpace::Shared));
  for (int64_t p = 0; p < share.cols / kPanelCols; ++p) {
    // Bytes into the stage: the copy, the panel, the share's first row.
    Value firstPanel =
        arith::DivUIOp::create(in, loc, share.firstCol, idxIn(kPanelCols));
    Value panel = arith::AddIOp::create(in, loc, firstPanel, idxIn(p));
    Value copyBytes = arith::MulIOp::create(in, loc, copyBase, idxIn(4));
    Value panelBytes = arith::MulIOp::create(in, loc, panel, idxIn(m * 128));
    Value rowBytes = arith::MulIOp::create(in, loc, share.firstRow, idxIn(128));
    Value bytes = arith::AddIOp::create(
        in, loc, copyBytes,
        arith::AddIOp::create(in, loc, panelBytes, rowBytes).getResult());
    Value src = LLVM::IntToPtrOp::create(
        in, loc, sharedPtr,
        arith::AddIOp::create(
            in, loc, stageAddress,
            arith::IndexCastOp::create(in, loc, in.getI64Type(), bytes))
            .getResult());
    // Coordinates innermost first.
    SmallVector<Value> coords;
    for (int64_t d = dest.offsets.size() - 1; d >= 0; --d) {
      Value c = getValueOrCreateConstantIndexOp(in, loc, dest.offsets[d]);
      if (d == dest.rowDim)
        c = arith::AddIOp::create(in, loc, c, share.firstRow);
      else if (d + 1 == static_cast<int64_t>(dest.offsets.size()))
        c = arith::AddIOp::create(in, loc, c,
                                  arith::AddIOp::create(in, loc, share.firstCol,
                                                        idxIn(p * kPanelCols)));
      coords.push_back(toI32(c));
    }
    NVVM::CpAsyncBulkTensorReduceOp::create(
        in, loc, map, src, NVVM::TMAReduxKind::ADD, NVVM::TMAStoreMode::TILE,
        coords, /*l2CacheHint=*/Value());
  }
  NVVM::CpAsyncBulkCommitGroupOp::create(in, loc);
  // Drained after the loop around the contraction (or right after it).
  OpBuilder drain(b.getContext());
  if (loop && launch->isAncestor(loop))
    drain.setInsertionPointAfter(loop);
  else
    drain.setInsertionPoint(b.getInsertionBlock(), b.getInsertionPoint());
  NVVM::CpAsyncBulkWaitGroupOp::create(drain, loc, drain.getI32IntegerAttr(0),
                                       drain.getUnitAttr());
  gpu::BarrierOp::create(drain, loc);
}

LogicalResult TileMmaLowering::run() {
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
    auto operands = flash::matchTileContraction(generic);
    bool readsSwizzled = flash::isSwizzledTile(operands->a) ||
                         flash::isSwizzledTile(operands->b);
    if (!(launch->hasAttr(flash::kWgmmaAttr) &&
          emitWarpgroupMmaReduce(generic, tid)) &&
        !(mmaSync && emitWarpMmaReduce(generic, tid)) &&
        !(wmma && emitWarpMatmul(generic, tid)) &&
        !(mmaSync && emitWarpMmaSync(generic, tid))) {
      tid.getDefiningOp()->erase();
      // The element-wise fallback would read a swizzled tile row-major.
      if (readsSwizzled)
        return generic.emitError(
            "flash-gpu-lower-tile-mma: a contraction reads a swizzled tile "
            "and no MMA lowering that reads that layout took it (mma.sync "
            "or wgmma: tensor-cores=mma-sync, auto or wgmma)");
    }
  }
  // The Cs that the reductions kept in registers (never carved).
  SmallVector<memref::AllocOp> accumulators;
  launch.getBody().walk([&](memref::AllocOp alloc) {
    if (flash::getTileStorage(alloc) == flash::TileStorage::Accumulators)
      accumulators.push_back(alloc);
  });
  for (memref::AllocOp alloc : accumulators) {
    for (Operation *user : llvm::make_early_inc_range(alloc->getUsers()))
      if (isa<memref::DeallocOp>(user) ||
          (isa<ViewLikeOpInterface>(user) && user->use_empty()))
        user->erase();
    if (!alloc->use_empty())
      return alloc->emitError("flash-gpu-lower-tile-mma: a tile kept in "
                              "accumulators is still used");
    alloc->erase();
  }
  return success();
}

namespace {
struct FlashGpuLowerTileMmaPass
    : flash::impl::FlashGpuLowerTileMmaPassBase<FlashGpuLowerTileMmaPass> {
  using Base::Base;
  void runOnOperation() override {
    TensorCores cores = flash::resolveTensorCores(tensorCores, chip);
    for (gpu::LaunchOp launch : flash::collectLaunches(getOperation())) {
      FailureOr<int64_t> threads =
          flash::launchThreads(launch, "flash-gpu-lower-tile-mma");
      if (failed(threads) ||
          failed(TileMmaLowering(launch, *threads, cores, perIterationLanes)
                     .run()))
        return signalPassFailure();
    }
  }
};
} // namespace
