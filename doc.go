// Package cip11 holds the vocabulary shared by every CIP-11 package: the
// 20-byte [Address], the 32-byte [Hash], Keccak-256 (DECISIONS D1), the
// saturating [U128] used for weights and stakes (D3), and [Params], which
// carries every §13 system constant and the five §13/§14 protocol flags.
//
// The package is pure: no I/O, no clock, no goroutines, no globals.
// Implementation of CIP-11 r1.3.1 "Runner Connectivity and Push Job Delivery".
package cip11
