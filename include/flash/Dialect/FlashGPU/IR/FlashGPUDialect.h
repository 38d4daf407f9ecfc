//===- FlashGPUDialect.h - flashgpu dialect ---------------------*- C++ -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_DIALECT_FLASHGPU_IR_FLASHGPUDIALECT_H
#define FLASH_DIALECT_FLASHGPU_IR_FLASHGPUDIALECT_H

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Dialect.h"

#include "flash/Dialect/FlashGPU/IR/FlashGPUDialect.h.inc"

#endif // FLASH_DIALECT_FLASHGPU_IR_FLASHGPUDIALECT_H
