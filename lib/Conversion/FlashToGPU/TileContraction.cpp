//===- TileContraction.cpp - tile matmuls for the GPU mapping ---*- C++ -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#include "TileContraction.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;

std::optional<flash::TileContraction>
flash::matchTileContraction(linalg::GenericOp op) {
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      op.getNumLoops() != 3 || op.getNumReductionLoops() != 1 ||
      !op.hasPureBufferSemantics())
    return std::nullopt;
  Block *body = op.getBody();
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  auto add = yield.getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!add)
    return std::nullopt;
  MLIRContext *ctx = op.getContext();
  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  auto map = [&](std::initializer_list<AffineExpr> e) {
    return AffineMap::get(3, 0, e, ctx);
  };
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  if (op.getIteratorTypesArray()[2] != utils::IteratorType::reduction ||
      maps[2] != map({d(0), d(1)}))
    return std::nullopt;
  TileContraction m;
  m.a = op.getDpsInputOperand(0)->get();
  m.b = op.getDpsInputOperand(1)->get();
  m.c = op.getDpsInitOperand(0)->get();
  if (maps[0] == map({d(0), d(2)}) && maps[1] == map({d(1), d(2)}))
    m.transposeB = true;
  else if (maps[0] == map({d(0), d(2)}) && maps[1] == map({d(2), d(1)}))
    m.transposeB = false;
  else if (maps[0] == map({d(2), d(0)}) && maps[1] == map({d(2), d(1)}))
    m.transposeB = false, m.transposeA = true;
  else
    return std::nullopt;
  for (Value v : {m.a, m.b, m.c}) {
    auto t = dyn_cast<MemRefType>(v.getType());
    if (!t || !t.hasStaticShape() ||
        llvm::any_of(t.getShape(), [](int64_t s) { return s % 16 != 0; }))
      return std::nullopt;
    SmallVector<int64_t> strides;
    int64_t offset;
    if (!t.getLayout().isIdentity() &&
        (failed(t.getStridesAndOffset(strides, offset)) ||
         strides.back() != 1 || ShapedType::isDynamic(strides.front()) ||
         ShapedType::isDynamic(offset)))
      return std::nullopt;
  }
  Type in = cast<MemRefType>(m.a.getType()).getElementType();
  if (!(in.isF16() || in.isBF16()) ||
      cast<MemRefType>(m.b.getType()).getElementType() != in ||
      !cast<MemRefType>(m.c.getType()).getElementType().isF32())
    return std::nullopt;
  return m;
}

Value flash::getWorkgroupView(Value v) {
  auto cast = v.getDefiningOp<memref::MemorySpaceCastOp>();
  return cast ? cast.getSource() : Value();
}

static bool yieldsZero(linalg::MapOp map) {
  Value y = map.getBody()->getTerminator()->getOperand(0);
  return matchPattern(y, m_AnyZeroFloat()) || matchPattern(y, m_Zero());
}

std::optional<flash::PaddedTileLoad>
flash::matchPaddedTileLoad(memref::CopyOp copy, bool rowVectors) {
  PaddedTileLoad load;
  load.copy = copy;
  load.validRows = copy.getTarget().getDefiningOp<memref::SubViewOp>();
  if (!load.validRows)
    return std::nullopt;
  load.tile = load.validRows.getSource();
  load.shared = getWorkgroupView(load.tile);
  auto type = cast<MemRefType>(load.tile.getType());
  int64_t rank = type.getRank();
  bool rowVector = rank == 1 && type.getElementType().isF32();
  if (!load.shared || !(rank == 2 || (rowVector && rowVectors)) ||
      cast<MemRefType>(copy.getSource().getType()).getRank() != rank ||
      type.getElementTypeBitWidth() % 8 != 0 ||
      (rank == 2 &&
       (type.getDimSize(1) * type.getElementTypeBitWidth() / 8) % 16 != 0) ||
      !llvm::all_of(load.validRows.getStaticOffsets(),
                    [](int64_t o) { return o == 0; }) ||
      !llvm::all_of(load.validRows.getStaticStrides(),
                    [](int64_t s) { return s == 1; }) ||
      (rank == 2 && load.validRows.getStaticSizes()[1] != type.getDimSize(1)))
    return std::nullopt;
  // The zero fill of the whole tile, with nothing else on the tile between.
  for (Operation *op = copy->getPrevNode(); op; op = op->getPrevNode()) {
    if (op == load.validRows)
      continue;
    if (auto map = dyn_cast<linalg::MapOp>(op);
        map && map.getDpsInitOperand(0)->get() == load.tile) {
      if (!yieldsZero(map) || map.getNumDpsInputs() != 0)
        return std::nullopt;
      load.zeroFill = map;
      return load;
    }
    if (llvm::is_contained(op->getOperands(), load.tile))
      return std::nullopt;
  }
  return std::nullopt;
}

Value flash::paddedTileValidRows(Value tile, Block *block) {
  for (Operation *user : tile.getUsers()) {
    auto rows = dyn_cast<memref::SubViewOp>(user);
    if (!rows || rows->getBlock() != block)
      continue;
    for (Operation *rowsUser : rows->getUsers()) {
      auto copy = dyn_cast<memref::CopyOp>(rowsUser);
      if (!copy || copy.getTarget() != rows.getResult())
        continue;
      if (std::optional<PaddedTileLoad> load =
              matchPaddedTileLoad(copy, /*rowVectors=*/false);
          load && load->validRows.isDynamicSize(0))
        return load->validRows.getDynamicSize(0);
    }
  }
  return Value();
}
