// Package blockexec is the CIP-11 block executor: it drives the block
// engine (selection/engine) over a [store.Store] one chain-log block at a
// time and returns what the block produced, as a chain-log output.
//
// For each block, [Executor.Execute] opens the store's batch at the
// block's height; on a chain whose header has the D30 height schedule
// (schedule.activations) it checks the block's proposal round and parent
// beacon against the schedule (blockheader.CheckSchedule, §9.2: the
// beacon is the seed of Round(epoch_at(h−1), h−1), so it is verified
// under the key of the epoch active there); it runs the engine (the §9.2 pending pass over the
// registry as stored at the end of the previous block, then the §11.2
// timeout re-selections and the block's transactions in order, writing
// job, PendingSelectionV1 and §9.4 mru_key records), applies the block's
// registry changes (appending to ACTIVE_RUNNERS_KEY in order, §7.2) and
// heartbeats, and computes the normative state digest
// ([Executor.Digest], docs/chainlog.md). The caller then makes the block
// durable elsewhere and calls [Executor.Commit], or [Executor.Discard];
// [Executor.Step] is Execute then Commit. An invalid block is discarded
// and the store stays at the previous block. Seed signatures may be
// checked ahead of execution on another goroutine ([Executor.VerifyAhead]).
//
// The live validator (adapters/node) executes the blocks it produces
// through an Executor over its Pebble store and compares recovered blocks
// with [DiffOutput]; package replay drives one from a chain log and
// compares every recorded output; package synth drives one to record a
// synthetic chain's outputs.
//
// The package is pure: no I/O besides the store it is given, no clock; an
// Executor is not safe for concurrent use (VerifyAhead excepted).
package blockexec
