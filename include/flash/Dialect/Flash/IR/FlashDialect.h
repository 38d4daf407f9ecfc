//===- FlashDialect.h - flash dialect ---------------------------*- C++ -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_DIALECT_FLASH_IR_FLASHDIALECT_H
#define FLASH_DIALECT_FLASH_IR_FLASHDIALECT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dialect.h"

#include "flash/Dialect/Flash/IR/FlashDialect.h.inc"

#endif // FLASH_DIALECT_FLASH_IR_FLASHDIALECT_H
