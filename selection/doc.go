// Package selection is the CIP-11 draw (§7.1–§7.3, §9.1–§9.3) as small pure
// functions: the eligibility floor and pluggable CIP-2 filter chain (§9.1),
// the block-T candidate snapshot with its candidates_snapshot_root, the
// CIP-2 v3 base weight (§9.3), the stable present/fallback partition, the
// normative weighted_draw (§9.2 steps 1–7) and the committee loop with its
// three branches (Mode A, multi-validator full set, present-first).
//
// Block execution — pending records, stores, the per-block engine — is in
// package selection/engine.
//
// Everything here is a deterministic function of its inputs: integer
// arithmetic only (u128 saturating per DECISIONS D3), no maps iterated, no
// clock, no goroutines, no globals.
package selection
