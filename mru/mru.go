package mru

import (
	"fmt"

	"github.com/cip11/cip11"
)

// Fresh reports whether a record set at setAt still applies at block h:
// h −(saturating) setAt ≤ ttl (§9.3 lookup_mru, MRU_TTL_BLOCKS). A record set
// after h (only possible in the genesis range or a replayed store) has age 0
// and applies.
func Fresh(setAt, h, ttl uint64) bool {
	var age uint64
	if h > setAt {
		age = h - setAt
	}
	return age <= ttl
}

// Lookup is lookup_mru(submitter, job_kind, H) (§9.3) behind the §9.4
// activation gate. Below p.MRUActivationHeight it returns (zero, false, nil)
// without calling r at all. Otherwise it returns the record and true only if
// one exists under mru_key(submitter, kind) and it is [Fresh] against
// p.MRUTTLBlocks; an expired record is ignored, not deleted (lazy expiry,
// §9.4 read path). Errors: [ErrUnknownJobKind], or r's error.
func Lookup(r Reader, p cip11.Params, submitter cip11.Address, kind JobKind, h uint64) (Record, bool, error) {
	if !p.MRUActive(h) {
		return Record{}, false, nil
	}
	if !kind.Valid() {
		return Record{}, false, fmt.Errorf("%w: 0x%02x", ErrUnknownJobKind, uint8(kind))
	}
	rec, ok, err := r.Get(submitter, kind)
	if err != nil || !ok || !Fresh(rec.SetAt, h, p.MRUTTLBlocks) {
		return Record{}, false, err
	}
	return rec, true, nil
}

// Winner returns the §9.4 write-path runner: the first runner of committee —
// the selected committee in its stored selection order — that is in matching
// (assigned runners whose accepted reveal contributed to the verified result)
// and in neither runnersToSlash nor runnersUnrewarded (the normative
// ineligible union). The order of matching, runnersToSlash and
// runnersUnrewarded never matters; a matching runner outside committee is
// ignored. It returns false if no runner qualifies.
func Winner(committee, matching, runnersToSlash, runnersUnrewarded []cip11.Address) (cip11.Address, bool) {
	ok := make(map[cip11.Address]bool, len(matching))
	for _, a := range matching {
		ok[a] = true
	}
	for _, list := range [][]cip11.Address{runnersToSlash, runnersUnrewarded} {
		for _, a := range list {
			delete(ok, a)
		}
	}
	for _, a := range committee {
		if ok[a] {
			return a, true
		}
	}
	return cip11.Address{}, false
}

// Outcome is what the Result Verifier knows about one verified result
// (§9.4 write path): the job's stored committee order and the verification
// sets of VerifiedResult.
type Outcome struct {
	Committee         []cip11.Address // selected committee, in stored selection order
	Matching          []cip11.Address // runners whose accepted reveal contributed to the result
	RunnersToSlash    []cip11.Address
	RunnersUnrewarded []cip11.Address
}

// RecordResult is the §9.4 write path for a verified result of
// (submitter, kind) at block h: it writes mru_key := { Winner(o), h } and
// returns the record written. Nothing is written — and false is returned —
// below p.MRUActivationHeight or when no runner qualifies. Errors:
// [ErrUnknownJobKind], or w's error.
func RecordResult(w Writer, p cip11.Params, submitter cip11.Address, kind JobKind, o Outcome, h uint64) (Record, bool, error) {
	if !p.MRUActive(h) {
		return Record{}, false, nil
	}
	if !kind.Valid() {
		return Record{}, false, fmt.Errorf("%w: 0x%02x", ErrUnknownJobKind, uint8(kind))
	}
	winner, ok := Winner(o.Committee, o.Matching, o.RunnersToSlash, o.RunnersUnrewarded)
	if !ok {
		return Record{}, false, nil
	}
	rec := Record{Runner: winner, SetAt: h}
	if err := w.Put(submitter, kind, rec); err != nil {
		return Record{}, false, err
	}
	return rec, true, nil
}
