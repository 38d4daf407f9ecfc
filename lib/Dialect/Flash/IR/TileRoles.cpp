//===- TileRoles.cpp - what the tiler's contractions compute ----*- C++ -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#include "flash/Dialect/Flash/IR/TileRoles.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace mlir::flash;

static constexpr std::pair<Contraction, llvm::StringLiteral> kNames[] = {
    {Contraction::Scores, "scores"},
    {Contraction::Output, "output"},
    {Contraction::GradProbs, "grad_probs"},
    {Contraction::GradQuery, "grad_query"},
    {Contraction::ScoresTransposed, "scores_transposed"},
    {Contraction::GradValue, "grad_value"},
    {Contraction::GradProbsTransposed, "grad_probs_transposed"},
    {Contraction::GradKey, "grad_key"},
    {Contraction::GradQueryBlock, "grad_query_block"},
};

StringRef flash::stringifyContraction(Contraction c) {
  for (auto [role, name] : kNames)
    if (role == c)
      return name;
  llvm_unreachable("unknown contraction");
}

std::optional<Contraction> flash::symbolizeContraction(StringRef name) {
  for (auto [role, known] : kNames)
    if (known == name)
      return role;
  return std::nullopt;
}

std::optional<Contraction> flash::getContraction(Operation *op) {
  auto name = op->getAttrOfType<StringAttr>(kContractionAttrName);
  return name ? symbolizeContraction(name.getValue()) : std::nullopt;
}

void flash::setContraction(Operation *op, Contraction c) {
  op->setAttr(kContractionAttrName,
              StringAttr::get(op->getContext(), stringifyContraction(c)));
}

bool flash::isAccumulating(Contraction c) {
  return c == Contraction::Output || c == Contraction::GradQuery ||
         c == Contraction::GradValue || c == Contraction::GradKey;
}

bool flash::hasRaggedKeys(Operation *op) {
  return op->hasAttr(kRaggedKeysAttrName);
}

void flash::setRaggedKeys(Operation *op) {
  op->setAttr(kRaggedKeysAttrName, UnitAttr::get(op->getContext()));
}
