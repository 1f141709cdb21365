package pebble

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/state"
)

// Key families of this backend (docs/storage.md). The §9.2 pending keys
// (engine.PendingByJobKey, engine.PendingDueRoundKey) and the §9.4 mru_key
// (mru.Key, D15) are the spec's bytes and are built by their own packages;
// the families below are this backend's choice. No family's prefix is a
// prefix of another's, and every scan also checks the exact key length, so
// a 32-byte pending_by_job_key hash can never be mistaken for a key of
// another family.
const (
	keyFormat = "cip11:store:v1:format" // → format_version_be4
	keyHeight = "cip11:store:v1:height" // → height_be8 ‖ floor_be8 ‖ crc32c_be4
	keyChain  = "cip11:store:v1:chain"  // → the caller's chain identity (SetChainIdentity)

	pfxActive = "cip11:registry:v1:active:"  // ‖ index_be8 → address_20 ‖ appended_at_be8
	pfxRunner = "cip11:registry:v1:runner:"  // ‖ address_20 ‖ ^height_be8 → runner record
	pfxCur    = "cip11:registry:v1:current:" // ‖ address_20 → written_at_be8 ‖ runner record (newest version)
	pfxRepCfg = "cip11:registry:v1:repcfg:"  // ‖ ^height_be8 → normalizer_be8 ‖ wmin_floor_be8
	pfxGC     = "cip11:store:v1:gc:"         // ‖ superseded_at_be8 ‖ version key → empty

	pfxJob      = "cip11:job:v1:record:"   // ‖ job_id → engine.JobRecord.Encode
	pfxDeadline = "cip11:job:v1:deadline:" // ‖ deadline_be8 ‖ job_id → empty (assigned jobs)
	pfxLive     = "cip11:job:v1:live:"     // ‖ job_id → empty (pending or assigned jobs)

	pfxAnchor = "cip11:modea:v1:anchor:" // ‖ address_20 → presence_anchor_be8 ‖ presence_proven_until_be8 (§8.3)

	pendingDueDomain = "cip11:pending-selection:v1:due-round" // §9.2 index domain
)

// Key lengths, checked on every scan.
const (
	activeKeyLen   = len(pfxActive) + 8
	runnerKeyLen   = len(pfxRunner) + 20 + 8
	curKeyLen      = len(pfxCur) + 20
	repCfgKeyLen   = len(pfxRepCfg) + 8
	jobKeyLen      = len(pfxJob) + 32
	deadlineKeyLen = len(pfxDeadline) + 8 + 32
	liveKeyLen     = len(pfxLive) + 32
	anchorKeyLen   = len(pfxAnchor) + 20
	dueKeyLen      = len(pendingDueDomain) + 8 + 8 + 8 + 32

	heightValueLen = 8 + 8 + 4
	activeValueLen = 20 + 8
	runnerValueLen = 1 + 1 + 8 + 16 + 16 + 8
	repCfgValueLen = 8 + 8
	anchorValueLen = 8 + 8
)

const runnerRecordVersion = 1

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func cat(parts ...[]byte) []byte {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	b := make([]byte, 0, n)
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

func be8(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// prefixEnd is the smallest key greater than every key with prefix p.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil // no upper bound
}

func activeKey(i uint64) []byte { return cat([]byte(pfxActive), be8(i)) }

// runnerKey orders the versions of one runner newest first, so a seek to
// runnerKey(addr, h) lands on the newest version at or below h.
func runnerKey(addr cip11.Address, h uint64) []byte {
	return cat([]byte(pfxRunner), addr[:], be8(^h))
}

func runnerPrefix(addr cip11.Address) []byte { return cat([]byte(pfxRunner), addr[:]) }

// curKey holds the newest version of a runner, so the registry as of the
// last committed block is one pass over 5,000 keys, whatever the history.
func curKey(addr cip11.Address) []byte { return cat([]byte(pfxCur), addr[:]) }

func encodeCur(at uint64, r state.Runner) []byte { return append(be8(at), encodeRunner(r)...) }

func decodeCur(addr cip11.Address, b []byte) (state.Runner, uint64, error) {
	if len(b) != 8+runnerValueLen {
		return state.Runner{}, 0, fmt.Errorf("%w: current runner record %s is %d bytes", ErrCorrupt, addr, len(b))
	}
	r, err := decodeRunner(addr, b[8:])
	return r, binary.BigEndian.Uint64(b), err
}

func repCfgKey(h uint64) []byte { return cat([]byte(pfxRepCfg), be8(^h)) }

func gcKey(supersededAt uint64, versionKey []byte) []byte {
	return cat([]byte(pfxGC), be8(supersededAt), versionKey)
}

func jobKey(id [32]byte) []byte { return appendJobKey(make([]byte, 0, jobKeyLen), id) }

// The append forms build a key in a reused buffer (Commit).
func appendJobKey(b []byte, id [32]byte) []byte { return append(append(b, pfxJob...), id[:]...) }

func appendDeadlineKey(b []byte, deadline uint64, id [32]byte) []byte {
	return append(binary.BigEndian.AppendUint64(append(b, pfxDeadline...), deadline), id[:]...)
}

func appendLiveKey(b []byte, id [32]byte) []byte { return append(append(b, pfxLive...), id[:]...) }

func encodeHeight(h, floor uint64) []byte {
	b := make([]byte, 0, heightValueLen)
	b = binary.BigEndian.AppendUint64(b, h)
	b = binary.BigEndian.AppendUint64(b, floor)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(cat([]byte(keyHeight), b), castagnoli))
}

func decodeHeight(b []byte) (h, floor uint64, err error) {
	if len(b) != heightValueLen {
		return 0, 0, fmt.Errorf("%w: height marker is %d bytes", ErrCorrupt, len(b))
	}
	if crc32.Checksum(cat([]byte(keyHeight), b[:16]), castagnoli) != binary.BigEndian.Uint32(b[16:]) {
		return 0, 0, fmt.Errorf("%w: height marker checksum", ErrCorrupt)
	}
	h, floor = binary.BigEndian.Uint64(b), binary.BigEndian.Uint64(b[8:])
	if floor > h {
		return 0, 0, fmt.Errorf("%w: height marker floor %d above height %d", ErrCorrupt, floor, h)
	}
	return h, floor, nil
}

func encodeRunner(r state.Runner) []byte {
	b := make([]byte, 0, runnerValueLen)
	b = append(b, runnerRecordVersion, byte(r.Health))
	b = binary.BigEndian.AppendUint64(b, r.LastHeartbeat)
	st, dl := r.Stake.BE16(), r.DelegatedActive.BE16()
	b = append(b, st[:]...)
	b = append(b, dl[:]...)
	return binary.BigEndian.AppendUint64(b, r.ReputationX1e9)
}

func decodeRunner(addr cip11.Address, b []byte) (state.Runner, error) {
	if len(b) != runnerValueLen || b[0] != runnerRecordVersion || state.Health(b[1]) > state.Deregistered {
		return state.Runner{}, fmt.Errorf("%w: runner record %s", ErrCorrupt, addr)
	}
	return state.Runner{
		Address:         addr,
		Health:          state.Health(b[1]),
		LastHeartbeat:   binary.BigEndian.Uint64(b[2:]),
		Stake:           cip11.U128{Hi: binary.BigEndian.Uint64(b[10:]), Lo: binary.BigEndian.Uint64(b[18:])},
		DelegatedActive: cip11.U128{Hi: binary.BigEndian.Uint64(b[26:]), Lo: binary.BigEndian.Uint64(b[34:])},
		ReputationX1e9:  binary.BigEndian.Uint64(b[42:]),
	}, nil
}

func encodeRepCfg(c state.ReputationConfig) []byte {
	return binary.BigEndian.AppendUint64(be8(c.Normalizer), c.WMinFloorX1e6)
}

func decodeRepCfg(b []byte) (state.ReputationConfig, error) {
	if len(b) != repCfgValueLen {
		return state.ReputationConfig{}, fmt.Errorf("%w: reputation config is %d bytes", ErrCorrupt, len(b))
	}
	return state.ReputationConfig{Normalizer: binary.BigEndian.Uint64(b), WMinFloorX1e6: binary.BigEndian.Uint64(b[8:])}, nil
}
