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

    Function arguments may carry `flash.sizes`, one entry per dimension of
    a ranked tensor argument: the static size as an integer, or a symbol
    (a string) for a dynamic one. Equal symbols promise equal sizes, as a
    frontend's symbolic shapes know them (torch.compile's `s0`, ...) and
    tensor types cannot say; the fusion reads them where a decision needs
    two dynamic sizes to be equal (a causal mask on `M = N`).
    ```mlir
    func.func @f(%q: tensor<?x8x?x64xf16> {flash.sizes = ["s1", 8, "s0", 64]},
                 %k: tensor<?x8x?x64xf16> {flash.sizes = ["s1", 8, "s0", 64]}, ...)
    ```
  }];
  let hasRegionArgAttrVerify = 1;
  let extraClassDeclaration = [{
    /// The argument attribute naming symbolic sizes.
    static constexpr llvm::StringLiteral kSizesAttrName = "flash.sizes";
    /// The attribute (a string, on an argument or a tensor.empty) naming a
    /// workspace of the tiled backward.
    static constexpr llvm::StringLiteral kWorkspaceAttrName = "flash.workspace";
    /// The unit attributes on an index or integer argument that bound the
    /// query and key rows of packed sequences (FlashAttention's max_seqlen_q
    /// and max_seqlen_k) for the tiling.
    static constexpr llvm::StringLiteral kMaxQueryRowsAttrName =
        "flash.max_seqlen_q";
    static constexpr llvm::StringLiteral kMaxKeyRowsAttrName =
        "flash.max_seqlen_k";
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

class Flash_Op<string mnemonic, list<Trait> traits = []> :
    Op<Flash_Dialect, mnemonic, traits>;

#endif // FLASH_DIALECT_FLASH_IR_FLASHDIALECT_TD
