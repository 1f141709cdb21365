package node

import "github.com/cip11/cip11/adapters/node/chain"

// The devnet's transaction and job-spec codecs, and the core's counts, live
// in the chain core (adapters/node/chain); these names keep the node's API.
type (
	// Tx is a decoded devnet transaction (chain.Tx).
	Tx = chain.Tx
	// TxKind is the devnet instruction (chain.TxKind).
	TxKind = chain.TxKind
	// TxCodec is the node's Transaction::read and validation (chain.TxCodec).
	TxCodec = chain.TxCodec
	// JobSpec is the devnet's job_spec (chain.JobSpec).
	JobSpec = chain.JobSpec
	// SpecCodec checks job specs for the runner (chain.SpecCodec).
	SpecCodec = chain.SpecCodec
	// Stats are the validator's cumulative counts (chain.Stats).
	Stats = chain.Stats
)

// Transaction kinds (chain.TxKind).
const (
	TxHeartbeat = chain.TxHeartbeat
	TxRegister  = chain.TxRegister
	TxCommit    = chain.TxCommit
	TxReveal    = chain.TxReveal
	TxDomain    = chain.TxDomain
	JobIDDomain = chain.JobIDDomain
	MaxPayload  = chain.MaxPayload
	// MaxOutput bounds the output a reveal carries (nodetx.MaxOutput).
	MaxOutput = chain.MaxOutput
)

// Codec functions (chain).
var (
	SignTx        = chain.SignTx
	DecodeTx      = chain.DecodeTx
	DecodeJobSpec = chain.DecodeJobSpec
	Commitment    = chain.Commitment
	RevealPayload = chain.RevealPayload
	SplitReveal   = chain.SplitReveal
)

// Sentinels shared with the chain core.
var (
	// ErrTx marks bytes that are not a valid devnet transaction.
	ErrTx = chain.ErrTx
	// ErrRevealOutput: a reveal's output is too long or its result is not
	// keccak256 of it (nodetx.CheckReveal).
	ErrRevealOutput = chain.ErrRevealOutput
	// ErrDuplicate: the transaction or job is already known (§10.3: not a
	// failure).
	ErrDuplicate = chain.ErrDuplicate
	// ErrFailed: the chain core failed (a block-log append, state commit or
	// journal write); the validator stops.
	ErrFailed = chain.ErrFailed
)

// chainRunners are the genesis runners in the core's terms.
func (g *Genesis) chainRunners() []chain.GenesisRunner {
	out := make([]chain.GenesisRunner, len(g.Runners))
	for i, r := range g.Runners {
		out[i] = chain.GenesisRunner{Address: r.Address, Stake: r.Stake, ReputationX1e9: r.ReputationX1e9}
	}
	return out
}
