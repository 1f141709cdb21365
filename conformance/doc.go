// Package conformance holds CIP-11's language-neutral golden vectors
// (DECISIONS D18), the generator that writes them, and the evaluator that
// checks any vector file against this implementation.
//
// Each consensus-critical function is described by a [Function]: its name (the
// file's top-level "function" and file name), the spec section it pins, a
// generator, and an evaluator that recomputes a vector's outputs from its
// inputs. Negative vectors carry "error": "<ExportedSentinelName>", where the
// name is the Go identifier of the sentinel the evaluator's error wraps
// (see [SentinelName]).
//
// Vectors are written by `cip11 vectors gen` (`go generate ./conformance`)
// and verified by this package's tests and by `cip11 vectors check FILE...`.
// docs/vectors.md describes every file for implementers in other languages.
package conformance

//go:generate go run ../cmd/cip11 vectors gen -dir testdata/vectors
