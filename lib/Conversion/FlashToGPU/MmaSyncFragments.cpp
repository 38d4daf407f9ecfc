//===- MmaSyncFragments.cpp - mma.sync m16n8k16 operand registers -*- C++ -*-//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#include "MmaSyncFragments.h"

#include "flash/Dialect/FlashGPU/IR/FlashGPUOps.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

Value flash::mma_sync::operandRegister(OpBuilder &b, Location loc,
                                       Value pair) {
  if (!cast<VectorType>(pair.getType()).getElementType().isBF16())
    return pair;
  Value word = vector::BitCastOp::create(
      b, loc, VectorType::get({1}, b.getI32Type()), pair);
  return vector::ExtractOp::create(b, loc, word, ArrayRef<int64_t>{0});
}

SmallVector<Value> flash::mma_sync::ldmatrix(OpBuilder &b, Location loc,
                                             Value tile, Value row, Value col,
                                             int64_t count, bool transpose) {
  Type et = cast<MemRefType>(tile.getType()).getElementType();
  Value matrices = nvgpu::LdMatrixOp::create(
      b, loc, VectorType::get({count, 2}, et), tile, ValueRange{row, col},
      b.getBoolAttr(transpose), b.getI32IntegerAttr(count));
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
