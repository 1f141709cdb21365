// Package presence implements everything that decides who is present and who
// may talk to whom: PresenceInput, the consensus-visible per-block present set
// of CIP-11 §7.2, and its registry index basis (§7.2, §8.5); validator-set
// snapshots, subsets and admission (§5); local presence (§7.4); Mode-A
// certificates (§8.3); and the runner-side schedules (§6.6, §11.3, §10.3).
//
// # Encoding (§7.2 PresenceInputV1)
//
//	version: u8 = 0x01 ‖ kind: u8 ‖ body
//	kind 0x00 (bitmap): exactly ⌈n/8⌉ bytes; bit j of byte b (LSB-first) is
//	                    registry index 8·b+j; every bit at a position ≥ n is 0
//	kind 0x01 (sparse): u32 BE count ‖ count strictly ascending u32 BE indices,
//	                    each < n; body length exactly 4 + 4·count
//
// where n = |registry(H−1)|. Both kinds encode the same abstract set; [Decode]
// accepts either and returns the [Set]. Nodes never re-canonicalize: the
// committed artifact is the proposer's literal bytes, so a valid non-minimal
// kind is as good as the minimal one. [Encode] is the proposer's encoder: the
// shorter kind, bitmap on a tie (DECISIONS D17). [EncodeKind] encodes with a
// chosen kind, so decode→encode reproduces any valid input byte for byte.
//
// Each §7.2 malformation has its own exported sentinel ([ErrUnknownVersion],
// [ErrUnknownKind], [ErrBitmapLength], [ErrSparseLength],
// [ErrBitBeyondRegistry], [ErrSparseNotAscending], [ErrIndexBeyondRegistry]);
// an input shorter than its two header bytes is [ErrTruncatedHeader].
//
// # Index basis (§7.2, §8.5)
//
// Index i is the i-th address of ACTIVE_RUNNERS_KEY — the registry's append
// order — as stored at the end of the parent block H−1, read through
// [state.RegistryView.ActiveRunners]. Health changes never renumber it; new
// runners are appended. [NewView] resolves a decoded set to addresses once per
// block for O(1) membership tests; [FromAddresses] builds a proposer's set.
//
// # Validity (§7.2 rules 1–3)
//
// [ResolveBlockPresence] applies the flag- and mode-scoped rules: no presence
// while CIP11_PRESENT_FIRST_ENABLED is off (shadow decoding only), a required
// well-formed field in active Mode B, and the state-derived set when Mode A is
// effective.
//
// # Who may talk to whom (§5, §6.2, §5.3)
//
// [ValidatorSetSnapshot] holds the §5.4 identity snapshot; [ValidatorSetHash]
// hashes the ordered raw peer_pubkeys (stake excluded); [ValidatorSetSnapshot.Sub]
// is Sub(R) with k from [SubsetSize]; [Epochs] applies the epoch-paired
// admission rule across the OVERLAP_BLOCKS window with a height-tied cutoff.
//
// # Local presence (§6.3–§6.5, §7.4, §10.6, §11.1)
//
// [LocalPresence] is a pure state machine over height-stamped events (pings,
// backpressure, connection open/close, dispatch outcomes) that answers the
// present set, push routing, the accepting_new bit and the proposer's
// PresenceInputV1 for the next block. A restart starts empty.
//
// # Mode A (§8.3–§8.4)
//
// [ProcessCertificate] verifies a SubmitPresenceCertificate in the normative
// evaluation order with injected metering, updating presence_anchor and
// presence_proven_until; [ModeASource] derives PresenceInput(H) from parent
// state for the selection engine.
//
// # Runner schedules (§6.6, §10.3, §11.3)
//
// [HeartbeatPhase] staggers on-chain heartbeats per runner,
// [ReconnectDelayMillis] is the reconnect backoff with injected jitter, and
// [ResultTxRetry] schedules result-transaction rebroadcast.
//
// The package is pure: no I/O, no clock, no goroutines, no globals besides
// its sentinel errors.
package presence
