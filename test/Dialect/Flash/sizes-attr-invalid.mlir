// flash.sizes on function arguments: one entry per dimension, a symbol for
// each dynamic size and the size itself for each static one.
// RUN: flash-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{'flash.sizes' of argument 0 must be an array with one entry per dimension of a ranked tensor or memref}}
func.func @count(%q: tensor<?x8xf32> {flash.sizes = ["s0"]}) {
  return
}

// -----

// expected-error @+1 {{'flash.sizes' of argument 0: a symbol names a dynamic dimension, but dimension 1 is 8}}
func.func @symbol_for_static(%q: tensor<?x8xf32> {flash.sizes = ["s0", "s1"]}) {
  return
}

// -----

// expected-error @+1 {{'flash.sizes' of argument 1: dimension 0 is dynamic (name it)}}
func.func @number_for_dynamic(%q: tensor<4xf32>, %k: tensor<?xf32> {flash.sizes = [4]}) {
  return
}

// -----

// expected-error @+1 {{'flash.sizes' of argument 0: dimension 0 is 4}}
func.func @wrong_number(%q: tensor<4xf32> {flash.sizes = [5]}) {
  return
}

// -----

// expected-error @+1 {{'flash.sizes' of argument 0 must be an array with one entry per dimension of a ranked tensor or memref}}
func.func @not_shaped(%s: f32 {flash.sizes = ["s0"]}) {
  return
}

// -----

// expected-error @+1 {{unknown flash argument attribute 'flash.size'}}
func.func @unknown(%q: tensor<?xf32> {flash.size = ["s0"]}) {
  return
}

// -----

// expected-error @+1 {{'flash.sizes' of argument 0: dimension 0 is dynamic (name it)}}
func.func @kdynamic_number(%q: tensor<?xf32> {flash.sizes = [-9223372036854775808]}) {
  return
}
