// Package validators implements who may talk to whom in CIP-11 (§5, §6.2):
// the §5.4 validator-set snapshot consumed from consensus, its
// validator_set_hash (§5.1), the connectivity subset Sub(R) with k from
// [cip11.Params.SubsetSize] (§5.1–§5.2), and the epoch-paired admission rule
// across a reconfiguration's OVERLAP_BLOCKS window (§5.3, §6.2).
//
// # Snapshots (§5.4, §8.3)
//
// [Snapshot] is immutable and built by [NewSnapshot], which requires the
// participants in the canonical order §5.4 prescribes — strictly ascending
// raw peer_pubkey bytes — and rejects any other order with
// [ErrParticipantsNotCanonical] instead of sorting it. [SetHash] hashes the
// ordered raw peer_pubkeys with stake excluded; [NextSnapshot] applies a
// consensus epoch advance, which is a CIP-11 reconfiguration only when the
// ordered identity list changes.
//
// # Subsets and admission (§5.1–§5.3, §6.2)
//
// [Snapshot.Sub] is Sub(R); [Epochs] holds the current snapshot and, across
// a reconfiguration, its predecessor, and [Epochs.Admit] applies the
// epoch-paired rule: the offered (subset_epoch, validator_set_hash) selects
// exactly one snapshot in force at the height, and membership and subset
// resolve in that same snapshot, with a height-tied cutoff at
// activation_height(E+1) + OVERLAP_BLOCKS.
//
// # History (§5.3–§5.4, DECISIONS D25)
//
// [History] is the chain's sequence of activated snapshots; [History.Active]
// returns the snapshot in force at a height and [History.ParticipantsAt] its
// |participants|, from which the block engine derives multi_validator and
// effective_k.
//
// The package is pure: no I/O, no clock, no goroutines, no globals besides
// its sentinel errors.
package validators
