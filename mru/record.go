package mru

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cip11/cip11"
)

// KeyPrefix is the mru_key family prefix (§9.4, DECISIONS D15).
const KeyPrefix = "cip11:mru:v1"

// Byte lengths of the D15 layout.
const (
	KeyLen    = len(KeyPrefix) + 20 + 1 // 33
	RecordLen = 20 + 8                  // 28, the spec's "~28-byte record" (§9.4)
)

// ErrRecordLength: a stored MruRecord value (§9.4) is not exactly
// [RecordLen] bytes.
var ErrRecordLength = errors.New("mru: MruRecord is not 28 bytes")

// Record is MruRecord { runner_address, set_at_block } (§9.4).
type Record struct {
	Runner cip11.Address
	SetAt  uint64 // set_at_block: the block whose verified result wrote it
}

// Key returns mru_key(submitter, job_kind) = "cip11:mru:v1" ‖ submitter_20 ‖
// job_kind_u8 (§9.4, DECISIONS D15).
func Key(submitter cip11.Address, kind JobKind) [KeyLen]byte {
	var k [KeyLen]byte
	copy(k[:], KeyPrefix)
	copy(k[len(KeyPrefix):], submitter[:])
	k[KeyLen-1] = byte(kind)
	return k
}

// Encode returns the stored MruRecord value (§9.4) runner_address_20 ‖
// set_at_block_be8 (DECISIONS D15).
func (r Record) Encode() [RecordLen]byte {
	var b [RecordLen]byte
	copy(b[:20], r.Runner[:])
	binary.BigEndian.PutUint64(b[20:], r.SetAt)
	return b
}

// DecodeRecord strictly decodes a stored MruRecord value (§9.4, D15): exactly 28 bytes, else an
// error wrapping [ErrRecordLength]. Every 28-byte value is a valid record.
func DecodeRecord(b []byte) (Record, error) {
	if len(b) != RecordLen {
		return Record{}, fmt.Errorf("%w: %d bytes", ErrRecordLength, len(b))
	}
	var r Record
	copy(r.Runner[:], b[:20])
	r.SetAt = binary.BigEndian.Uint64(b[20:])
	return r, nil
}
