// Package node runs CIP-11 as processes: a validator ([Validator]), alone
// or as one member of a network on CometBFT (adapters/cometbft), and
// runners ([Runner]), with the genesis and key files that describe a chain
// (docs/genesis.md) and the HTTP API backend ([Backend], package httpapi).
// The devnets that run them in one process are cmd/internal/devnet (cip11
// devnet).
//
// # Shape
//
// The validator is a driver around the synchronous chain core of package
// chain (block building, CIP-2 result verifier, job tracker, and on one
// validator the mempool), the way etcd raft's node.go drives its RawNode:
//
//   - one goroutine (the loop) owns the core. HTTP requests, the QUIC
//     server's Mempool and the consensus steps reach it as closures on a
//     channel (doCtx: a caller's context bounds the wait for the loop,
//     ErrBusy); the QUIC callbacks (acks, §10.6 outcomes, push errors)
//     post to a bounded mailbox that never blocks them;
//   - block production is one step API (steps.go), called the same way by
//     both drivers: ProposeBlock (from given transactions, or the core's
//     own pool on one validator) → CheckBlock (a block proposed
//     elsewhere) → FinalizeBlock (execute once, keyed by block hash;
//     block log append, fsynced) → CommitBlock (state commit; returns the
//     retain height). The single-validator driver is ProduceBlock with the
//     [Producer] [Solo] (producer.go); the network driver is CometBFT's
//     ABCI++ application in adapters/cometbft, through a [Broadcaster]:
//     there CometBFT's mempool is the only mempool (CheckTx admits,
//     proposals are built from its transactions, a decided block is
//     executed without admitting it again);
//   - the epoch schedule and the seed cache have one owner, [Schedules]:
//     an immutable [Schedule] swapped at the commit that adds an epoch,
//     read without a lock by the QUIC server, the CometBFT application and
//     the runner's view;
//   - a second goroutine (the sender) hands each committed block's pushes
//     (§10.1) and JobCancels (§10.5) to the QUIC server, so a runner that
//     does not read cannot stall block production.
//
// No lock is held across I/O; the mailboxes' locks guard a slice append.
// Lock order: there is none to follow, because no lock is ever taken while
// another is held (the mailboxes', the dashboard record's and the runner's
// are leaves; the chain core has no lock, its loop owns it). Every
// goroutine stops on Close, which waits for them.
//
// # One job, end to end
//
// On one validator:
//
//  1. POST /jobs → Backend.SubmitJob → Validator.SubmitJob → (loop)
//     chain.Core.SubmitJob: checked, journaled in jobs.jsonl, pooled.
//  2. ProduceBlock → (loop) ProposeBlock, FinalizeBlock, CommitBlock: the
//     block includes the submit; selection (§9.2) seats a committee;
//     Commit returns the pushes.
//  3. (sender) quic.Server.Applied pushes a signed JobAssignment to each
//     seated runner; its JobAck comes back through OnAck → mailbox → loop.
//  4. The runner executes and sends its result on the job stream; the
//     server's §10.3 checks forward it to Mempool.Submit → (loop)
//     Core.SubmitTx: the CIP-2 verifier records the commit and the reveal.
//  5. The next block carries ResultSubmit and Verified (D23); Commit marks
//     the job completed; RetainBlocks later it moves to the on-disk archive.
//
// On a network the same, except that step 1 hands the spec to CometBFT
// (Broadcaster.BroadcastJob; CheckTx → AdmitJob on every validator, which
// journals and tracks it), steps 2 and 5 are CometBFT's PrepareProposal
// (built from its mempool's transactions), ProcessProposal, FinalizeBlock
// and Commit, and every validator of the runner's Sub(R) pushes (D33).
//
// # Durability
//
// A block is appended to blocks.jsonl (docs/chainlog.md) before its state
// is committed, so a crash leaves the log at most one block ahead, and that
// block is re-executed from the log at start (§8.1). Recovery streams the
// log through the core. Accepted submissions are journaled before they are
// answered; a failed append is cut back off, and the journal is compacted
// at start to the jobs still open. A block-log, store or journal write that
// fails puts the core into its failed state: the validator accepts nothing
// more and Run returns the error (wrapping [ErrFailed]).
//
// # Spec
//
// §6 (connections, through package quic), §7.1 (heartbeats), §10.1–§10.6
// (delivery), §11.2 (timeouts), §13–§14 (parameters and the poll
// fallback). Every consensus rule is decided by the pure packages.
package node
