//===- FlashGPUOps.h - flashgpu operations ----------------------*- C++ -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_DIALECT_FLASHGPU_IR_FLASHGPUOPS_H
#define FLASH_DIALECT_FLASHGPU_IR_FLASHGPUOPS_H

#include "flash/Dialect/FlashGPU/IR/FlashGPUDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "flash/Dialect/FlashGPU/IR/FlashGPUOps.h.inc"

#endif // FLASH_DIALECT_FLASHGPU_IR_FLASHGPUOPS_H
