//===- MmaSyncFragments.cpp - mma.sync m16n8k16 operand registers -*- C++ -*-//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#include "MmaSyncFragments.h"
#include "TileContraction.h"
#include "WarpRegisterTiles.h"

#include "flash/Dialect/FlashGPU/IR/FlashGPUOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;

Value flash::mma_sync::operandRegister(OpBuilder &b, Location loc,
                                       Value pair) {
  if (!cast<VectorType>(pair.getType()).getElementType().isBF16())
    return pair;
  Value word = vector::BitCastOp::create(
      b, loc, VectorType::get({1}, b.getI32Type()), pair);
  return vector::ExtractOp::create(b, loc, word, ArrayRef<int64_t>{0});
}

/// The element offset of `row`, `col` in a swizzled tile of `rows` rows. The
/// lane's own swizzled offset is computed once; a step of whole 8-row groups
/// keeps the swizzle phase (an immediate), and a column step whose 16-byte
/// chunks are disjoint from the lane's (lane < laneBound, a power of two)
/// flips chunk bits after the swizzle (an xor with a constant) and adds
/// whole panels.
static Value swizzledLaneOffset(OpBuilder &b, Location loc,
                                flash::mma_sync::LaneCoordinate row,
                                flash::mma_sync::LaneCoordinate col,
                                int64_t rows) {
  auto idx = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  auto plus = [&](Value v, int64_t c) -> Value {
    if (!v)
      return idx(c);
    return c ? arith::AddIOp::create(b, loc, v, idx(c)).getResult() : v;
  };
  int64_t chunkStep = (col.step % 64) / 8;
  bool afterSwizzle = row.step % 8 == 0 && col.step % 8 == 0 &&
                      col.laneBound > 0 && col.laneBound <= 64 &&
                      llvm::isPowerOf2_64(col.laneBound) &&
                      (chunkStep & (col.laneBound / 8 - 1)) == 0;
  auto lanePart = [&](const flash::mma_sync::LaneCoordinate &c) -> Value {
    if (!c.then)
      return plus(c.lane, 0);
    return c.lane ? arith::AddIOp::create(b, loc, c.lane, c.then).getResult()
                  : c.then;
  };
  if (!afterSwizzle)
    return flash::swizzledOffset(b, loc, plus(lanePart(row), row.step),
                                 plus(lanePart(col), col.step), rows);
  Value lane =
      flash::swizzledOffset(b, loc, lanePart(row), lanePart(col), rows);
  if (chunkStep)
    lane = arith::XOrIOp::create(b, loc, lane, idx(8 * chunkStep));
  return plus(lane, (col.step / 64) * rows * 64 + row.step * 64);
}

SmallVector<Value> flash::mma_sync::ldmatrix(OpBuilder &b, Location loc,
                                             Value tile, LaneCoordinate row,
                                             LaneCoordinate col, int64_t count,
                                             bool transpose) {
  auto type = cast<MemRefType>(tile.getType());
  Type et = type.getElementType();
  Value shared = flash::getWorkgroupView(tile);
  auto at = [&](const LaneCoordinate &c) -> Value {
    Value v = c.lane;
    if (!v || c.step)
      v = v ? arith::AddIOp::create(
                  b, loc, v, arith::ConstantIndexOp::create(b, loc, c.step))
                  .getResult()
            : arith::ConstantIndexOp::create(b, loc, c.step).getResult();
    return c.then ? arith::AddIOp::create(b, loc, v, c.then).getResult() : v;
  };
  SmallVector<Value> indices;
  bool swizzled = flash::isSwizzledTile(tile);
  if (swizzled) {
    shared = memref::CollapseShapeOp::create(
        b, loc, shared, ArrayRef<ReassociationIndices>{{0, 1}});
    indices.push_back(swizzledLaneOffset(b, loc, row, col, type.getDimSize(0)));
  } else {
    indices = {at(row), at(col)};
  }
  auto load = nvgpu::LdMatrixOp::create(
      b, loc, VectorType::get({count, 2}, et), shared, indices,
      b.getBoolAttr(transpose), b.getI32IntegerAttr(count));
  if (swizzled)
    load->setAttr(flash::kSwizzledAttr, b.getUnitAttr());
  Value matrices = load;
  SmallVector<Value> regs;
  for (int64_t i = 0; i < count; ++i)
    regs.push_back(operandRegister(
        b, loc,
        vector::ExtractOp::create(b, loc, matrices, ArrayRef<int64_t>{i})));
  return regs;
}

Value flash::mma_sync::perIterationCoordinate(OpBuilder &b, Location loc,
                                              Value laneCoordinate) {
  Block *block = b.getInsertionBlock();
  if (!block || !block->getParentOp() ||
      !(isa<scf::ForOp>(block->getParentOp()) ||
        block->getParentOp()->getParentOfType<scf::ForOp>()))
    return laneCoordinate;
  return flashgpu::PerIterationOp::create(b, loc, laneCoordinate);
}

Value flash::mma_sync::mma(OpBuilder &b, Location loc, ArrayRef<Value> a,
                           ArrayRef<Value> bRegs, ArrayRef<Value> c,
                           bool bf16) {
  Type f32 = b.getF32Type();
  Type resultType =
      LLVM::LLVMStructType::getLiteral(b.getContext(), {f32, f32, f32, f32});
  NVVM::MMATypes ptxType = bf16 ? NVVM::MMATypes::bf16 : NVVM::MMATypes::f16;
  return NVVM::MmaOp::create(
      b, loc, resultType, a, bRegs, c, {16, 8, 16}, std::nullopt, std::nullopt,
      std::array<NVVM::MMATypes, 2>{ptxType, ptxType},
      std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                     NVVM::MMALayout::col});
}
