// Package engine executes the CIP-11 part of a block: the one home of block
// execution, the analogue of etcd raft's RawNode. [New] validates a
// [Config] of injected stores and readers and returns an [Engine];
// [Engine.ExecuteBlock] is a synchronous step function over one [Block]:
//
//  1. the block's consensus inputs are verified, every one on every block:
//     the parent beacon R_{H−1} (§9.2, SPEC-NOTES SEL5), ConsumedSeedsV1
//     (§9.2) and PresenceInputV1 against registry(H−1) (§7.2);
//  2. the start-of-block pending pass assigns every M > 1 record whose
//     block S is finalized in the block's context (D22) and whose seed the
//     block commits, in ascending (submitted_at, job_id) (§9.2);
//  3. the timeout pass hands every job past its deadline_block to the
//     [TimeoutPolicy] (§11.2, D26);
//  4. the block's transactions run in order (D23): JobSubmit (M == 1
//     selects immediately, M > 1 writes PendingSelectionV1), included
//     result submissions, and verified results that write mru_key (§9.4).
//
// Topology (multi_validator, effective_k) comes from the validator set
// active at the height (D25). With CIP11_PRESENT_FIRST_ENABLED off there
// is no Mode A, no MRU multiplier and no present set (D24).
//
// The engine keeps no consensus state of its own: job records
// ([JobStore]), pending records ([PendingStore]), mru_key and the registry
// live in the stores it is given, each with an in-memory implementation.
// The only thing it remembers between blocks is an optional non-consensus
// cache of block-S candidate snapshots (§9.2 allows it; results are
// identical without it). The proposer side of the consumed-seed commitment
// is [ProposeConsumedSeeds]. No I/O, clock, goroutines or globals.
package engine
