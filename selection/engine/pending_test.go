package engine

import (
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/cip11/cip11/internal/dcbor"
)

// goldenPending is PendingSelectionV1{version 1, job_id aa00…00, S = T = 300,
// M = 3, rounds 0, K 0, root 00…bb} in the §12.6 profile, written out by hand:
// a map of 11 (0xab), keys 0…10 ascending, 300 = 0x19012c.
var goldenPending = "ab" +
	"0001" +
	"01" + "5820" + "aa" + strings.Repeat("00", 31) +
	"02" + "19012c" + "03" + "19012c" + "0403" +
	"0500" + "0600" + "0700" + "0800" + "0900" +
	"0a" + "5820" + strings.Repeat("00", 31) + "bb"

func goldenRecord() PendingSelectionV1 {
	r := PendingSelectionV1{Version: 1, SubmittedAt: 300, SelectionStateHeight: 300, CommitteeSize: 3}
	r.JobID[0] = 0xaa
	r.CandidatesSnapshotRoot[31] = 0xbb
	return r
}

func TestPendingGolden(t *testing.T) {
	if got := hex.EncodeToString(goldenRecord().Encode()); got != goldenPending {
		t.Fatalf("encode:\n got %s\nwant %s", got, goldenPending)
	}
	b, _ := hex.DecodeString(goldenPending)
	r, err := DecodePending(b)
	if err != nil || r != goldenRecord() {
		t.Fatalf("decode: %v %+v", err, r)
	}
}

// TestPendingRejects: every D9 malformation and every §9.2 field rule has a
// typed error (and never a panic).
func TestPendingRejects(t *testing.T) {
	g := goldenPending
	cases := []struct {
		name, hex string
		want      error
	}{
		{"empty", "", dcbor.ErrTruncated},
		{"non_shortest_int", strings.Replace(g, "0219012c", "021a0000012c", 1), dcbor.ErrNonShortestInt},
		{"unsorted_keys", strings.Replace(g, "0500060007000800", "0600050007000800", 1), dcbor.ErrKeyOrder},
		{"duplicate_key", strings.Replace(g, "0500", "0600", 1), dcbor.ErrDuplicateKey},
		{"missing_key", "aa" + strings.Replace(g[2:], "0900", "", 1), dcbor.ErrMissingKey},
		{"extra_key", "ac" + g[2:] + "0b00", dcbor.ErrUnknownKey},
		{"short_byte_string", strings.Replace(g, "015820aa"+strings.Repeat("00", 31), "01581faa"+strings.Repeat("00", 30), 1), dcbor.ErrByteLength},
		{"indefinite_map", "bf" + g[2:] + "ff", dcbor.ErrIndefiniteLength},
		{"tag", "c0" + g, dcbor.ErrTag},
		{"trailing_byte", g + "00", dcbor.ErrTrailingBytes},
		{"truncated", g[:len(g)-2], dcbor.ErrTruncated},
		{"version_2", strings.Replace(g, "ab0001", "ab0002", 1), ErrPendingVersion},
		{"state_height_not_S", strings.Replace(g, "0319012c", "0319012d", 1), ErrPendingStateHeight},
		{"committee_size_1", strings.Replace(g, "0403", "0401", 1), ErrPendingCommitteeSize},
		{"version_over_u8", strings.Replace(g, "ab0001", "ab00190100", 1), dcbor.ErrIntRange},
		{"null_root", strings.Replace(g, "0a5820"+strings.Repeat("00", 31)+"bb", "0af6", 1), dcbor.ErrUnexpectedType},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := hex.DecodeString(c.hex)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := DecodePending(b); !errors.Is(err, c.want) {
				t.Fatalf("got %v want %v", err, c.want)
			}
		})
	}
}

// TestPendingKeys pins the two §9.2 storage keys.
func TestPendingKeys(t *testing.T) {
	r := goldenRecord()
	r.SeedEpoch, r.SeedView = 2, 7
	want := hex.EncodeToString([]byte("cip11:pending-selection:v1:due-round")) +
		"0000000000000002" + "0000000000000007" + "000000000000012c" + "aa" + strings.Repeat("00", 31)
	if got := hex.EncodeToString(PendingDueRoundKey(r)); got != want {
		t.Fatalf("due key %s", got)
	}
	if PendingByJobKey(r.JobID) == PendingByJobKey([32]byte{}) {
		t.Fatal("job key ignores job_id")
	}
}

func FuzzDecodePending(f *testing.F) {
	b, _ := hex.DecodeString(goldenPending)
	f.Add(b)
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := DecodePending(in)
		if err != nil {
			for _, s := range []error{ErrPendingVersion, ErrPendingStateHeight, ErrPendingCommitteeSize,
				dcbor.ErrTruncated, dcbor.ErrTrailingBytes, dcbor.ErrMalformed, dcbor.ErrNonShortestInt,
				dcbor.ErrIndefiniteLength, dcbor.ErrTag, dcbor.ErrUnexpectedType, dcbor.ErrIntRange, dcbor.ErrInvalidUTF8,
				dcbor.ErrKeyOrder, dcbor.ErrDuplicateKey, dcbor.ErrUnknownKey, dcbor.ErrMissingKey, dcbor.ErrByteLength,
				dcbor.ErrNotCanonical} {
				if errors.Is(err, s) {
					return
				}
			}
			t.Fatalf("%x: error wraps no sentinel: %v", in, err)
		}
		if out := r.Encode(); string(out) != string(in) {
			t.Fatalf("decode→encode differs:\n in %x\nout %x", in, out)
		}
	})
}
