//===- Passes.h - flash transformation passes -------------------*- C++ -*-===//
//
// Part of the flash-mlir project.
//
// The flash passes (generated from Passes.td). The rewrites they drive, for
// use in other pipelines, are declared in Transforms.h.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_DIALECT_FLASH_TRANSFORMS_PASSES_H
#define FLASH_DIALECT_FLASH_TRANSFORMS_PASSES_H

#include "flash/Dialect/Flash/IR/FlashOps.h"
#include "flash/Target/TargetOptions.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

namespace mlir::flash {

#define GEN_PASS_DECL
#include "flash/Dialect/Flash/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "flash/Dialect/Flash/Transforms/Passes.h.inc"

} // namespace mlir::flash

#endif // FLASH_DIALECT_FLASH_TRANSFORMS_PASSES_H
