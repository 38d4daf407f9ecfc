// RUN: flash-opt %s --split-input-file --verify-diagnostics --flash-tile-attention="block-rows=16 block-cols=16"
// RUN: not flash-opt %s --split-input-file --flash-tile-attention="key-splits=-2" 2>&1 | FileCheck %s --check-prefix=RANGE
// RUN: not flash-opt %s --split-input-file --flash-tile-attention="key-splits=65537" 2>&1 | FileCheck %s --check-prefix=RANGE

// RANGE: error: flash-tile-attention: key-splits must be between 0 (no split-KV) and 65536

func.func @rank(%q: tensor<1x8x4x32xf16>, %k: tensor<1x2x?x32xf16>, %v: tensor<1x2x?x32xf16>, %os: tensor<?x8x4x32xf32> {flash.workspace = "o_split"}, %ls: tensor<?x1x8x4xf32> {flash.workspace = "lse_split"}) -> tensor<1x8x4x32xf16> {
  // expected-error @below {{is split by its function's "o_split" argument, which must be a rank-5 f32 tensor (with the other partial result beside it)}}
  %o = flash.attention %q, %k, %v : tensor<1x8x4x32xf16>, tensor<1x2x?x32xf16>, tensor<1x2x?x32xf16> -> tensor<1x8x4x32xf16>
  return %o : tensor<1x8x4x32xf16>
}

// -----

func.func @alone(%q: tensor<1x8x4x32xf16>, %k: tensor<1x2x?x32xf16>, %v: tensor<1x2x?x32xf16>, %os: tensor<?x1x8x4x32xf32> {flash.workspace = "o_split"}) -> tensor<1x8x4x32xf16> {
  // expected-error @below {{is split by its function's "lse_split" argument, which must be a rank-4 f32 tensor (with the other partial result beside it)}}
  %o = flash.attention %q, %k, %v : tensor<1x8x4x32xf16>, tensor<1x2x?x32xf16>, tensor<1x2x?x32xf16> -> tensor<1x8x4x32xf16>
  return %o : tensor<1x8x4x32xf16>
}

// -----

func.func @rank3(%q: tensor<8x4x32xf16>, %k: tensor<8x?x32xf16>, %v: tensor<8x?x32xf16>, %os: tensor<?x1x8x4x32xf32> {flash.workspace = "o_split"}, %ls: tensor<?x1x8x4xf32> {flash.workspace = "lse_split"}) -> tensor<8x4x32xf16> {
  // expected-error @below {{takes partial results for its key splits only in the rank-4 form}}
  %o = flash.attention %q, %k, %v : tensor<8x4x32xf16>, tensor<8x?x32xf16>, tensor<8x?x32xf16> -> tensor<8x4x32xf16>
  return %o : tensor<8x4x32xf16>
}
