//===- Passes.h - flash conversion passes -----------------------*- C++ -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_CONVERSION_PASSES_H
#define FLASH_CONVERSION_PASSES_H

#include "flash/Dialect/FlashGPU/IR/FlashGPUDialect.h"
#include "flash/Target/TargetOptions.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/Pass.h"

namespace mlir::flash {

#define GEN_PASS_DECL
#include "flash/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "flash/Conversion/Passes.h.inc"

} // namespace mlir::flash

#endif // FLASH_CONVERSION_PASSES_H
