// Package chain is the node's synchronous chain core: the mempool, block
// building, the CIP-2 result verifier and the job tracker of a CIP-11
// validator, with no lock, no clock and no goroutine. It is to the node what
// etcd raft's RawNode is to raft's node.go: a driver owns one Core, calls its
// steps from one goroutine, and does the I/O the core cannot.
//
// # Steps
//
// A block's life maps one to one onto a BFT engine's calls (CometBFT's
// ABCI++ PrepareProposal, ProcessProposal, FinalizeBlock, Commit):
//
//   - [Core.Propose] builds block h = Height()+1 from a consensus context
//     ([Consensus]: round, parent beacon R_{h−1}, finalized height,
//     observed seeds, §9.2) and either the core's own pool (one validator)
//     or the transactions the engine's mempool hands it
//     ([Config.ExternalMempool]: CometBFT's mempool is then the only one),
//     and executes it speculatively. The execution is kept open under the
//     block's hash ([BlockHash]), so that applying a block with the same
//     hash (the same *Block or one decoded again) does not execute it
//     twice; any other step discards it. The [Proposal] lists what a
//     network block carries beside its body.
//   - [Core.Check] executes a block proposed by someone else (deterministic,
//     §17), its execution kept open the same way.
//   - [Core.Apply] executes a decided block (or reuses the open execution),
//     learns what it carries that admission did not see ([Carried]: specs,
//     results; nothing is admitted again), appends it to the block log and
//     returns its outputs; nothing is committed yet.
//   - [Core.Commit] commits the applied block's state, advances the job
//     tracker and returns what the driver must send: the pushes of §10.1 for
//     every newly seated runner and the JobCancels of §10.5 for seats that
//     were re-drawn or jobs that expired, with the retention policy's
//     RetainHeight. Pushes are never speculative: only Commit returns them.
//
// Both drivers call these steps the same way: the single-validator driver
// (node.Validator.ProduceBlock) and CometBFT's ABCI++ application
// (PrepareProposal, ProcessProposal, FinalizeBlock, Commit). Admission
// (SubmitJob, SubmitTx) is CheckTx's under an engine.
//
// A failed block-log append or state commit puts the core into a failed
// state: every later step returns an error wrapping [ErrFailed] and the
// cause, which the driver reports before it stops. The core never wedges
// silently.
//
// # Injected I/O
//
// The core reaches disk only through interfaces given in [Config]: the
// [Executor] (the state store, blockexec over Pebble in a validator), the
// [BlockLog] (append-only, fsynced by the driver's implementation), the
// [Journal] of accepted job submissions, and the [Archive] that keeps the
// final view of jobs pruned from memory. In-memory implementations
// ([MemBlockLog], [MemJournal], [MemArchive]) sit beside them. Times enter
// as arguments (the `now` of each step), never from a clock.
//
// # Bounded memory
//
// A long-running validator does not grow: terminal jobs leave memory
// [Config.RetainBlocks] blocks after they end (their final view goes to the
// Archive), per-state counts are kept incrementally, latencies live in
// fixed-size histograms ([job.Histogram]) and rings, the dedupe set rotates
// every 1,024 blocks and learned runner keys are kept only for runners
// registered on chain.
//
// # Spec
//
// Block building follows §7.1 (registrations and on-chain heartbeats),
// §7.2 (PresenceInputV1), §9.2 (ConsumedSeedsV1, the pending pass), D23
// (transaction order) and D26 (Verified only before the deadline). The
// tracker follows §10.1 (push after apply), §10.5 (JobCancel), §10.6
// (outcomes) and §11.2 (timeout re-selection and expiry).
package chain
