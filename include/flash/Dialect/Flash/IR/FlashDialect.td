//===- FlashDialect.td - flash dialect definition ----------*- tablegen -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_DIALECT_FLASH_IR_FLASHDIALECT_TD
#define FLASH_DIALECT_FLASH_IR_FLASHDIALECT_TD

include "mlir/IR/OpBase.td"

def Flash_Dialect : Dialect {
  let name = "flash";
  let cppNamespace = "::mlir::flash";
  let summary = "Fused scaled-dot-product attention and its gradient";
  let description = [{
    The `flash` dialect holds attention as one operation so that the
    compiler can tile it with the online-softmax rewrite (FlashAttention-2)
    instead of materialising the N x N score and probability matrices.

    Its ops carry exact reference semantics, spelled out by the
    `--flash-decompose-attention` pass as naive linalg.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

class Flash_Op<string mnemonic, list<Trait> traits = []> :
    Op<Flash_Dialect, mnemonic, traits>;

#endif // FLASH_DIALECT_FLASH_IR_FLASHDIALECT_TD
