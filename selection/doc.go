// Package selection implements the CIP-11 dispatcher core (§7.1–§7.3, §9):
// the eligibility floor and pluggable CIP-2 filter chain (§9.1), the CIP-2 v3
// base weight (§9.3), the stable present/fallback partition and the normative
// weighted_draw (§9.2 steps 1–7), the committee loop with its three branches
// (Mode A, multi-validator full set, present-first), M==1 immediate selection
// and the M>1 PendingSelectionV1 commit-then-reveal pass (§9.2).
//
// Everything here is a deterministic step function over its inputs and the
// injected readers of package state, mru and seed: integer arithmetic only
// (u128 saturating per DECISIONS D3), no maps iterated, no clock, no
// goroutines, no globals.
package selection
