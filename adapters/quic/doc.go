// Package quic is the CIP-11 r1.3.1 QUIC transport (§4.2, §6, §10, §11,
// §12.5): the validator [Server] and the runner [Client], built on
// github.com/quic-go/quic-go. It only moves frames and time. Every
// decision — frame checks and signature domains (package wire), local
// presence and the reconnect schedule (package presence/local), validator
// sets, Sub(R) and epoch-paired admission (package presence/validators) —
// is made by the pure packages, which this package drives the way raft's
// node.go drives RawNode.
//
// # Transport (DECISIONS D27)
//
// The runner is the QUIC client and the validator the server, each on one
// UDP socket (a quic-go Transport). TLS 1.3 with ALPN "cip11/1" and a
// self-signed certificate that the runner does not verify: identity is the
// role key, proven by HelloAck over the channel binding
// TLS-Exporter("cowboy-cip11-handshake-v1", "", 32) (§6.2). The control
// stream is the runner's first bidirectional stream (id 0) and carries
// Hello, HelloAck, heartbeats, backpressure, capability deltas and
// Goodbye; every JobAssignment opens its own validator-initiated
// bidirectional stream that also carries that job's JobAck, JobProgress,
// JobResultCommit, JobResult and JobCancel. Frames are §12.1 envelopes back
// to back, read by wire.Reader, which rejects an oversized length before
// allocating it.
//
// # Handshake (§6.2, DECISIONS D28)
//
// The runner opens the control stream and sends Hello; the validator
// checks it (version, chain, role, epoch pair, Sub(runner)) and answers
// with its own Hello, offering the same epoch pair, then its HelloAck.
// The runner sends its HelloAck as soon as it has the validator's Hello,
// verifying the validator's HelloAck meanwhile. A HelloAck repeats its
// sender's Hello but block_height (a mismatch is Goodbye{ProtocolError});
// a different major version is Goodbye{UnsupportedVersion}, and otherwise
// the lower of the two Hello versions is the connection's, in
// connection_id and in every preimage, the HelloAck's included (D28; the
// HelloAck's version field still repeats its sender's Hello). The
// validator admits after verifying the runner's HelloAck and the
// registration rule; every refusal is a Goodbye with the §12.5 reason
// ([wire.GoodbyeReasonFor]), unsigned before mutual authentication and
// signed after. Only then does the runner exist for local presence. The
// tests d27_test.go and d28_test.go check D27 and D28 sentence by
// sentence at both ends.
//
// # Reconfiguration (§5.3)
//
// A connection lives under the one (subset_epoch, validator_set_hash)
// pair its Hello offered. From activation_height(E+1) the [Client] holds
// a link per validator of Sub_E(R) under E's pair and one per validator
// of Sub_{E+1}(R) under E+1's — two to a validator in both, so delivery
// never gaps — and a [Server] admits one connection per runner per pair,
// counting the runner once in local presence and pushing over the
// current epoch's connection. At activation_height(E+1) + OVERLAP_BLOCKS
// whichever side ticks there first closes every epoch-E connection with
// Goodbye{OverlapExpired}; the validator abandons the pushes in flight on
// it (SoftFailure, [ErrPushAbandoned]; a held reveal is still released)
// and refuses a later Hello under E's pair with OverlapExpired, and the
// runner never dials under E's pair again. [Client.Links] lists the
// links a runner holds; ServerStats and ClientStats count Goodbyes by
// reason. See TestOverlap* in overlap_test.go.
//
// # Mode-A receipts (§8.3, SPEC-NOTES N18)
//
// A runner with ClientConfig.ModeAReceipts offers version 0x0101
// ([wire.VersionReceipts]) and, on every link negotiated at 0x0101, sends
// a PresenceReceiptRequest (0x14) after each HeartbeatPing. The validator,
// which accepts minors 0 and 1 and answers with the lower of the runner's
// version and 0x0101, signs at most one PresenceReceipt (0x15) per
// connection and height (§6.4: accepting_new false while backpressured).
// The runner keeps the newest receipt per validator that passes
// [wire.CheckReceipt] ([Client.Receipts]) for a SubmitPresenceCertificate.
// On a 0x0100 connection both types stay unknown: a protocol error.
//
// # Time
//
// Block heights come from the node: [Server.Tick] and [Client.Tick], as in
// raft's Tick; a client also ticks to a verified HeartbeatPong's height
// when it is ahead (§6.3). Wall-clock time is used only for QUIC and
// handshake timeouts, the pre-authentication Hello rate limit, Goodbye
// linger, push pacing, log rate limits and the §11.3 reconnect backoff
// (which the spec gives in milliseconds).
//
// # Lifecycle
//
// [NewServer] and [NewClient] take a context; cancelling it shuts down as
// Close does. Every goroutine either starts (accept loop, connections,
// pushes and job streams; links, job execution, backpressure) is tracked
// and waited for by Close, which is idempotent and safe to call
// concurrently. [Server.Push] and [Server.Applied] never touch the
// network: they route at once and the server's goroutines send, reporting
// to ServerConfig.OnPushed and OnPushError. Callbacks run on those
// goroutines and must not block.
//
// # Chain views
//
// The node enters through small interfaces: [CommittedRegistry] for
// registration (§6.2) and the parent-block index basis (§8.1),
// [ValidatorSets] for the §5.3 epochs, [wire.TxDecoder] and [Mempool] for
// §10.3 results, [Executor] and [ResultSubmitter] on the runner. In-memory
// implementations ([StaticValidatorSets], [MemMempool]) sit beside them.
package quic
