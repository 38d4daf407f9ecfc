//===- FlashGPUToLLVM.h - flashgpu ops as inline PTX ------------*- C++ -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_CONVERSION_FLASHGPUTOLLVM_H
#define FLASH_CONVERSION_FLASHGPUTOLLVM_H

#include "mlir/IR/PatternMatch.h"

namespace mlir::flash {

/// Rewrites every flashgpu op into llvm.inline_asm (plus vector element
/// moves); no type conversion is involved, so any pattern driver applies.
void populateFlashGPUToLLVMPatterns(RewritePatternSet &patterns,
                                    bool vectorReductions = false);

} // namespace mlir::flash

#endif // FLASH_CONVERSION_FLASHGPUTOLLVM_H
