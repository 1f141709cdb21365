package blockexec

import (
	"encoding/binary"
	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/chainlog"
)

// TestDigestEmptyState pins the docs/chainlog.md worked example: the digest
// of the empty state is keccak256(domain ‖ u64be(0) ×4 ‖ keccak256("")).
func TestDigestEmptyState(t *testing.T) {
	x, err := New(chainlog.Header{Reputation: chainlog.ReputationConfig{Normalizer: 1}, Params: cip11.DefaultParams()}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	pre := []byte("cip11-chainlog/state-digest/v2")
	for range 4 { // pending records, job records, MRU records, runners
		pre = binary.BigEndian.AppendUint64(pre, 0)
	}
	empty := cip11.Keccak256()
	pre = append(pre, empty[:]...)
	want := cip11.Keccak256(pre)
	got, err := x.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	t.Logf("empty-state digest %s", want)
}
