package wire

import (
	"bytes"
	"encoding/hex"
	"sort"
	"strings"
	"testing"

	"github.com/cip11/cip11"
)

// The §12.1 cross-encoder pin: a second, deliberately naive CBOR encoder —
// a generic value tree, RFC 8949 §4.2.1 key sorting by encoded bytes, heads
// by explicit range tables — written only for this test and sharing no code
// with the package, must produce byte-identical frames (length prefix and
// type byte included).

type pinMap map[uint64]any // keys are field positions (D7)
type pinArr []any
type pinNull struct{}

func pinHead(major byte, n uint64) []byte {
	var arg []byte
	var ai byte
	switch {
	case n <= 23:
		ai = byte(n)
	case n <= 255:
		ai, arg = 24, []byte{byte(n)}
	case n <= 65535:
		ai, arg = 25, []byte{byte(n >> 8), byte(n)}
	case n <= 4294967295:
		ai, arg = 26, []byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}
	default:
		ai = 27
		for i := 7; i >= 0; i-- {
			arg = append(arg, byte(n>>(8*i)))
		}
	}
	return append([]byte{major<<5 | ai}, arg...)
}

func pinEnc(v any) []byte {
	switch x := v.(type) {
	case uint64:
		return pinHead(0, x)
	case int:
		return pinHead(0, uint64(x))
	case bool:
		if x {
			return []byte{0xf5}
		}
		return []byte{0xf4}
	case pinNull:
		return []byte{0xf6}
	case []byte:
		return append(pinHead(2, uint64(len(x))), x...)
	case string:
		return append(pinHead(3, uint64(len(x))), x...)
	case pinArr:
		out := pinHead(4, uint64(len(x)))
		for _, e := range x {
			out = append(out, pinEnc(e)...)
		}
		return out
	case pinMap:
		type entry struct{ k, v []byte }
		var es []entry
		for k, e := range x {
			es = append(es, entry{pinHead(0, k), pinEnc(e)})
		}
		sort.Slice(es, func(i, j int) bool { return bytes.Compare(es[i].k, es[j].k) < 0 })
		out := pinHead(5, uint64(len(es)))
		for _, e := range es {
			out = append(append(out, e.k...), e.v...)
		}
		return out
	}
	panic("pinEnc: unsupported value")
}

func pinFrame(typ byte, body pinMap) []byte {
	p := pinEnc(body)
	n := len(p) + 1
	return append([]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n), typ}, p...)
}

func rep(b byte, n int) []byte { return bytes.Repeat([]byte{b}, n) }

func TestCrossEncoderPin(t *testing.T) {
	rk, err := NewRunnerKey(cip11.Keccak256([]byte("pin/runner")))
	if err != nil {
		t.Fatal(err)
	}
	vk := NewValidatorKey(cip11.Keccak256([]byte("pin/validator")))
	rpk, vpk := rk.PubKey().Bytes(), vk.PubKey().Bytes()
	h := func(b byte) cip11.Hash { return cip11.Hash(rep(b, 32)) }
	rsig, vsig := RunnerSig(rep(0x5a, 65)), ValidatorSig(rep(0xa5, 64))
	s := func(v string) *string { return &v }
	u := func(v uint64) *uint64 { return &v }
	sig := func(b []byte) *Sig { x, _ := ParseSig(b); return &x }
	ackSig, _ := ParseSig(rep(0x77, 64))
	tx := []byte("length-prefixed CBOR transaction body, opaque here")
	long := strings.Repeat("x", 300)

	cases := []struct {
		name string
		f    Frame
		want []byte
	}{
		{"Hello", &Hello{Version: 0x0100, ChainID: 1 << 40, ValidatorSetHash: h(1), SubsetEpoch: 24, PartyPubKey: rk.PubKey(), PartyRole: RoleRunner, BlockHeight: 65536, ChallengeNonce: h(2)},
			pinFrame(0x01, pinMap{0: 0x0100, 1: uint64(1 << 40), 2: rep(1, 32), 3: 24, 4: rpk, 5: 1, 6: 65536, 7: rep(2, 32)})},
		{"HelloAck", &HelloAck{Version: 0x0100, ChainID: 7, ValidatorSetHash: h(3), SubsetEpoch: 0, PartyPubKey: vk.PubKey(), PartyRole: RoleValidator, BlockHeight: 255, SignedChallenge: ackSig},
			pinFrame(0x02, pinMap{0: 0x0100, 1: 7, 2: rep(3, 32), 3: 0, 4: vpk, 5: 2, 6: 255, 7: rep(0x77, 64)})},
		{"JobAck{Accepted}", &JobAck{JobID: h(4), AssignmentHash: h(5), Status: Accepted(), Signed: rsig},
			pinFrame(0x21, pinMap{0: rep(4, 32), 1: rep(5, 32), 2: 0, 3: pinNull{}, 4: rep(0x5a, 65)})},
		{"JobAck{Reject(UnverifiableAssignment)}", &JobAck{JobID: h(4), AssignmentHash: h(5), Status: Reject(RejectUnverifiableAssignment), Reason: s("job_spec_hash mismatch"), Signed: rsig},
			pinFrame(0x21, pinMap{0: rep(4, 32), 1: rep(5, 32), 2: pinArr{2, 3}, 3: "job_spec_hash mismatch", 4: rep(0x5a, 65)})},
		{"BackpressureSignal", &BackpressureSignal{BlockHeight: 1 << 32, ActiveJobs: 70000, MaxConcurrent: 300, AcceptingNew: false, Reason: s(long), Signed: rsig},
			pinFrame(0x12, pinMap{0: uint64(1 << 32), 1: 70000, 2: 300, 3: false, 4: long, 5: rep(0x5a, 65)})},
		{"JobAssignment", &JobAssignment{JobID: h(6), JobSpec: rep(0xee, 300), JobSpecHash: h(7), AssignmentHeight: 2000, AssignmentHash: h(8), DeadlineBlock: 2100, RunnerPubKey: rk.PubKey(), ValidatorPubKey: vk.PubKey(), ValidatorSigned: vsig},
			pinFrame(0x20, pinMap{0: rep(6, 32), 1: rep(0xee, 300), 2: rep(7, 32), 3: 2000, 4: rep(8, 32), 5: 2100, 6: rpk, 7: vpk, 8: rep(0xa5, 64)})},
		{"JobResultCommit", &JobResultCommit{JobID: h(9), TxBytes: tx},
			pinFrame(0x25, pinMap{0: rep(9, 32), 1: tx})},
		{"JobResult", &JobResult{JobID: h(9), TxBytes: tx},
			pinFrame(0x23, pinMap{0: rep(9, 32), 1: tx})},
		{"Goodbye{detail null}", &Goodbye{Reason: GoodbyeProtocolError},
			pinFrame(0xf0, pinMap{0: 6, 1: pinNull{}, 2: pinNull{}, 3: pinNull{}})},
		{"Goodbye{detail text}", &Goodbye{Reason: GoodbyeDraining, Detail: s("draining for upgrade"), RetryAfterBlocks: u(600), Signed: sig(rep(0x5a, 65))},
			pinFrame(0xf0, pinMap{0: 7, 1: "draining for upgrade", 2: 600, 3: rep(0x5a, 65)})},
		// Beyond the §12.1 minimum: the remaining frame types.
		{"HeartbeatPing", &HeartbeatPing{BlockHeight: 23, Nonce: 24, Signed: rsig},
			pinFrame(0x10, pinMap{0: 23, 1: 24, 2: rep(0x5a, 65)})},
		{"HeartbeatPong", &HeartbeatPong{BlockHeight: 1, NonceEcho: 24, AcceptingNew: true, ValidatorSigned: vsig},
			pinFrame(0x11, pinMap{0: 1, 1: 24, 2: true, 3: rep(0xa5, 64)})},
		{"CapabilityDelta", &CapabilityDelta{BlockHeight: 9, AddedCapabilities: []string{"llm", ""}, RemovedCapabilities: []string{}, AddedEntitlements: []cip11.Hash{h(1)}, RemovedEntitlements: []cip11.Hash{}, Signed: rsig},
			pinFrame(0x13, pinMap{0: 9, 1: pinArr{"llm", ""}, 2: pinArr{}, 3: pinArr{rep(1, 32)}, 4: pinArr{}, 5: rep(0x5a, 65)})},
		{"JobProgress", &JobProgress{JobID: h(2), Fraction: 100, Detail: s("")},
			pinFrame(0x22, pinMap{0: rep(2, 32), 1: 100, 2: ""})},
		{"JobCancel", &JobCancel{JobID: h(2), AssignmentHash: h(3), Reason: CancelFailed, ValidatorSigned: vsig},
			pinFrame(0x24, pinMap{0: rep(2, 32), 1: rep(3, 32), 2: 2, 3: rep(0xa5, 64)})},
		// The 0x0101 receipt frames (SPEC-NOTES N18).
		{"PresenceReceiptRequest", &PresenceReceiptRequest{Nonce: 1 << 63},
			pinFrame(0x14, pinMap{0: uint64(1 << 63)})},
		{"PresenceReceipt", &PresenceReceipt{ValidatorPubKey: vk.PubKey(), RunnerPubKey: rk.PubKey(), SubsetEpoch: 256, ValidatorSetHash: h(3),
			BlockHeight: 70000, NonceEcho: 23, AcceptingNew: false, ValidatorSigned: vsig},
			pinFrame(0x15, pinMap{0: vpk, 1: rpk, 2: 256, 3: rep(3, 32), 4: 70000, 5: 23, 6: false, 7: rep(0xa5, 64)})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Encode(c.f)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, c.want) {
				t.Fatalf("package encoder:\n %x\nindependent encoder:\n %x", got, c.want)
			}
			back, err := Decode(c.want, 2<<20)
			if err != nil {
				t.Fatalf("decode independent bytes: %v", err)
			}
			again, _ := Encode(back)
			if !bytes.Equal(again, c.want) {
				t.Fatal("decode→encode differs")
			}
		})
	}
}

// TestFrozenFrames pins a few frames as literal bytes, checked by hand
// against §12.1/D7–D8.
func TestFrozenFrames(t *testing.T) {
	cases := []struct {
		f   Frame
		hex string
	}{
		// len 10 = type + a4 {0: 1 (WrongChain), 1: null, 2: null, 3: null}
		{&Goodbye{Reason: GoodbyeWrongChain}, "0000000a" + "f0" + "a4" + "0001" + "01f6" + "02f6" + "03f6"},
		// len 39 = type + a2 {0: bstr32, 1: bstr0}
		{&JobResult{JobID: cip11.Hash(rep(0xab, 32))}, "00000027" + "23" + "a2" + "005820" + strings.Repeat("ab", 32) + "0140"},
		// fraction 24 needs the one-byte argument form 0x1818
		{&JobProgress{JobID: cip11.Hash{}, Fraction: 24}, "0000002a" + "22" + "a3" + "005820" + strings.Repeat("00", 32) + "011818" + "02f6"},
	}
	for _, c := range cases {
		got, err := Encode(c.f)
		if err != nil {
			t.Fatal(err)
		}
		if hex.EncodeToString(got) != c.hex {
			t.Errorf("%s: got %x, want %s", c.f.Type(), got, c.hex)
		}
	}
}
