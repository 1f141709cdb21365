package chain

import "github.com/cip11/cip11/nodetx"

// The node's transaction and job-spec codec lives in the pure package
// nodetx (shared with the CometBFT block layout and the conformance
// vectors); these aliases keep the chain core's names.
type (
	Tx        = nodetx.Tx
	TxKind    = nodetx.TxKind
	TxCodec   = nodetx.TxCodec
	JobSpec   = nodetx.JobSpec
	SpecCodec = nodetx.SpecCodec
)

const (
	TxDomain      = nodetx.TxDomain
	TxHeartbeat   = nodetx.TxHeartbeat
	TxRegister    = nodetx.TxRegister
	TxCommit      = nodetx.TxCommit
	TxReveal      = nodetx.TxReveal
	TxCertificate = nodetx.TxCertificate
	TxReconfigure = nodetx.TxReconfigure
	MaxTxBytes    = nodetx.MaxTxBytes
	// MaxCertificateReceipts bounds one TxCertificate's receipts.
	MaxCertificateReceipts = nodetx.MaxCertificateReceipts
	HeartbeatWindow        = nodetx.HeartbeatWindow
	JobIDDomain            = nodetx.JobIDDomain
	MaxPayload             = nodetx.MaxPayload
	MaxOutput              = nodetx.MaxOutput
)

var (
	ErrTx         = nodetx.ErrTx
	ErrWrongChain = nodetx.ErrWrongChain
	ErrStaleTx    = nodetx.ErrStaleTx
	// ErrRevealOutput: a reveal's output is too long or not its result's
	// preimage (nodetx.CheckReveal).
	ErrRevealOutput = nodetx.ErrRevealOutput
	// ErrHeartbeatSpent and ErrHeartbeatEarly: nodetx.HeartbeatCounts.
	ErrHeartbeatSpent = nodetx.ErrHeartbeatSpent
	ErrHeartbeatEarly = nodetx.ErrHeartbeatEarly
)

var (
	SignTx = nodetx.SignTx
	// HeartbeatCounts is the §7.1 anti-replay rule for heartbeats (SPEC-NOTES C7).
	HeartbeatCounts = nodetx.HeartbeatCounts
	DecodeTx        = nodetx.DecodeTx
	Commitment      = nodetx.Commitment
	RevealPayload   = nodetx.RevealPayload
	SplitReveal     = nodetx.SplitReveal
	CheckReveal     = nodetx.CheckReveal
	CertPayload     = nodetx.CertificatePayload
	DecodeJobSpec   = nodetx.DecodeJobSpec
)
