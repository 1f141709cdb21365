// Package presence implements PresenceInput, the consensus-visible
// per-block present set of CIP-11 §7.2: the PresenceInputV1 codec, its
// registry index basis (§7.2, §8.5) and the flag- and mode-scoped validity
// rules that give a block its presence.
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
// # Related packages
//
// The other presence concepts live in nested packages, which this package
// never imports: [github.com/cip11/cip11/presence/validators]
// (§5 validator-set snapshots, Sub(R), epoch-paired admission),
// [github.com/cip11/cip11/presence/local] (§7.4 local presence and the
// runner schedules of §6.6, §10.3, §11.3) and
// [github.com/cip11/cip11/presence/modea] (§8.3 Mode-A certificates and the
// state-derived read point).
//
// The package is pure: no I/O, no clock, no goroutines, no globals besides
// its sentinel errors.
package presence
