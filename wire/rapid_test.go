package wire

import (
	"bytes"
	"testing"

	"github.com/cip11/cip11"
	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

func genHash(t *rapid.T, label string) cip11.Hash {
	return cip11.Hash(rapid.SliceOfN(rapid.Byte(), 32, 32).Draw(t, label))
}

func genOptText(t *rapid.T, label string) *string {
	if rapid.Bool().Draw(t, label+"?") {
		return nil
	}
	s := rapid.String().Draw(t, label)
	return &s
}

func genKeys(t *rapid.T) (*RunnerKey, *ValidatorKey) {
	rk, err := NewRunnerKey(genHash(t, "runner secret"))
	if err != nil {
		t.Skip("zero secret")
	}
	return rk, NewValidatorKey(genHash(t, "validator seed"))
}

// genFrame draws any valid frame of any of the thirteen types.
func genFrame(t *rapid.T) Frame {
	rk, vk := genKeys(t)
	u64 := func(l string) uint64 { return rapid.Uint64().Draw(t, l) }
	rsig := RunnerSig(rapid.SliceOfN(rapid.Byte(), 65, 65).Draw(t, "rsig"))
	vsig := ValidatorSig(rapid.SliceOfN(rapid.Byte(), 64, 64).Draw(t, "vsig"))
	var party Signer = rk
	if rapid.Bool().Draw(t, "validator party") {
		party = vk
	}
	sig, _ := ParseSig(rapid.SliceOfN(rapid.Byte(), party.Role().Scheme().SigLen(), party.Role().Scheme().SigLen()).Draw(t, "sig"))
	texts := func(l string) []string { return rapid.SliceOf(rapid.String()).Draw(t, l) }
	hashes := func(l string) []cip11.Hash {
		n := rapid.IntRange(0, 3).Draw(t, l)
		out := make([]cip11.Hash, n)
		for i := range out {
			out[i] = genHash(t, l)
		}
		return out
	}
	bytesOf := func(l string) Bytes { return rapid.SliceOf(rapid.Byte()).Draw(t, l) }
	status := rapid.SampledFrom([]AckStatus{Accepted(), Duplicate(), Reject(RejectAtCapacity), Reject(RejectMissingEntitlement),
		Reject(RejectMissingCapability), Reject(RejectUnverifiableAssignment), Reject(RejectOther)}).Draw(t, "status")
	var retry *uint64
	if rapid.Bool().Draw(t, "retry?") {
		r := u64("retry")
		retry = &r
	}
	var bye *Sig
	if rapid.Bool().Draw(t, "bye signed?") {
		bye = &sig
	}
	frames := []Frame{
		&Hello{uint16(u64("v")), u64("chain"), genHash(t, "vsh"), u64("epoch"), party.PubKey(), party.Role(), u64("h"), genHash(t, "nonce")},
		&HelloAck{uint16(u64("v")), u64("chain"), genHash(t, "vsh"), u64("epoch"), party.PubKey(), party.Role(), u64("h"), sig},
		&HeartbeatPing{u64("h"), u64("n"), rsig},
		&HeartbeatPong{u64("h"), u64("n"), rapid.Bool().Draw(t, "acc"), vsig},
		&BackpressureSignal{u64("h"), rapid.Uint32().Draw(t, "a"), rapid.Uint32().Draw(t, "m"), rapid.Bool().Draw(t, "acc"), genOptText(t, "reason"), rsig},
		&CapabilityDelta{u64("h"), texts("add"), texts("rm"), hashes("adde"), hashes("rme"), rsig},
		&JobAssignment{genHash(t, "job"), bytesOf("spec"), genHash(t, "jsh"), u64("ah"), genHash(t, "ahash"), u64("dl"), rk.PubKey(), vk.PubKey(), vsig},
		&JobAck{genHash(t, "job"), genHash(t, "ah"), status, genOptText(t, "reason"), rsig},
		&JobProgress{genHash(t, "job"), uint8(rapid.IntRange(0, 100).Draw(t, "frac")), genOptText(t, "detail")},
		&JobResult{genHash(t, "job"), bytesOf("tx")},
		&JobCancel{genHash(t, "job"), genHash(t, "ah"), CancelReason(rapid.IntRange(0, 2).Draw(t, "cr")), vsig},
		&JobResultCommit{genHash(t, "job"), bytesOf("tx")},
		&Goodbye{GoodbyeReason(rapid.IntRange(0, 8).Draw(t, "gr")), genOptText(t, "detail"), retry, bye},
	}
	return frames[rapid.IntRange(0, len(frames)-1).Draw(t, "type")]
}

// normalize maps nil and empty slices together: the wire cannot tell them
// apart and decoding yields empty, non-nil lists.
var normalize = cmp.Transformer("emptyNil", func(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
})

func TestRoundTripProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f := genFrame(t)
		b, err := Encode(f)
		if err != nil {
			t.Fatalf("encode %s: %v", f.Type(), err)
		}
		back, err := Decode(b, 1<<30)
		if err != nil {
			t.Fatalf("decode %s: %v", f.Type(), err)
		}
		opts := cmp.Options{normalize, cmp.AllowUnexported(PubKey{}, Sig{}),
			cmp.Transformer("emptyHashes", func(s []cip11.Hash) []cip11.Hash {
				if len(s) == 0 {
					return nil
				}
				return s
			}),
			cmp.Transformer("emptyBytes", func(s Bytes) []byte {
				if len(s) == 0 {
					return nil
				}
				return s
			})}
		if d := cmp.Diff(f, back, opts); d != "" {
			t.Fatalf("%s round trip: %s", f.Type(), d)
		}
		again, _ := Encode(back)
		if !bytes.Equal(again, b) {
			t.Fatal("re-encode differs")
		}
	})
}
