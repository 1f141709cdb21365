package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/internal/dcbor"
	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/sha3"
)

const maxFrame = 2 << 20 // MAX_FRAME_BYTES default (§13)

// TestEnumTablePin pins the §12.6 discriminant bytes, written out here
// independently of the constants.
func TestEnumTablePin(t *testing.T) {
	pins := []struct {
		name string
		got  byte
		want byte
	}{
		{"Role::Runner", byte(RoleRunner), 0x01}, {"Role::Validator", byte(RoleValidator), 0x02},
		{"AckStatus::Accepted", byte(AckAccepted), 0x00}, {"AckStatus::Duplicate", byte(AckDuplicate), 0x01}, {"AckStatus::Reject", byte(AckReject), 0x02},
		{"RejectReason::AtCapacity", byte(RejectAtCapacity), 0x00}, {"RejectReason::MissingEntitlement", byte(RejectMissingEntitlement), 0x01},
		{"RejectReason::MissingCapability", byte(RejectMissingCapability), 0x02}, {"RejectReason::UnverifiableAssignment", byte(RejectUnverifiableAssignment), 0x03},
		{"RejectReason::Other", byte(RejectOther), 0x04}, {"RejectReason::not-applicable", byte(RejectNotApplicable), 0xFF},
		{"CancelReason::Reassigned", byte(CancelReassigned), 0x00}, {"CancelReason::Expired", byte(CancelExpired), 0x01}, {"CancelReason::Failed", byte(CancelFailed), 0x02},
		{"GoodbyeReason::UnsupportedVersion", byte(GoodbyeUnsupportedVersion), 0x00}, {"GoodbyeReason::WrongChain", byte(GoodbyeWrongChain), 0x01},
		{"GoodbyeReason::AuthFailed", byte(GoodbyeAuthFailed), 0x02}, {"GoodbyeReason::NotInSubset", byte(GoodbyeNotInSubset), 0x03},
		{"GoodbyeReason::OverlapExpired", byte(GoodbyeOverlapExpired), 0x04}, {"GoodbyeReason::RateLimited", byte(GoodbyeRateLimited), 0x05},
		{"GoodbyeReason::ProtocolError", byte(GoodbyeProtocolError), 0x06}, {"GoodbyeReason::Draining", byte(GoodbyeDraining), 0x07},
		{"GoodbyeReason::Shutdown", byte(GoodbyeShutdown), 0x08},
		{"scheme secp256k1", byte(SchemeSecp256k1), 0x01}, {"scheme Ed25519", byte(SchemeEd25519), 0x02},
	}
	for _, p := range pins {
		if p.got != p.want {
			t.Errorf("%s = 0x%02x, §12.6 says 0x%02x", p.name, p.got, p.want)
		}
	}
	types := map[FrameType]byte{TypeHello: 0x01, TypeHelloAck: 0x02, TypeHeartbeatPing: 0x10, TypeHeartbeatPong: 0x11,
		TypeBackpressureSignal: 0x12, TypeCapabilityDelta: 0x13, TypeJobAssignment: 0x20, TypeJobAck: 0x21, TypeJobProgress: 0x22,
		TypeJobResult: 0x23, TypeJobCancel: 0x24, TypeJobResultCommit: 0x25, TypeGoodbye: 0xF0}
	// At 0x0100 exactly the §12.2 table; 0x0101 adds the two receipt
	// frames of SPEC-NOTES N18 and nothing else.
	minor1 := map[FrameType]byte{TypePresenceReceiptRequest: 0x14, TypePresenceReceipt: 0x15}
	for _, v := range []struct {
		version uint16
		want    int
	}{{Version, 13}, {VersionReceipts, 15}} {
		n := 0
		for b := 0; b < 256; b++ {
			f, err := NewFrameAt(FrameType(b), v.version)
			if err != nil {
				continue
			}
			n++
			want, ok := types[f.Type()]
			if !ok && v.version >= VersionReceipts {
				want, ok = minor1[f.Type()]
			}
			if !ok || want != byte(b) {
				t.Errorf("version %#04x: type byte 0x%02x yields %T", v.version, b, f)
			}
		}
		if n != v.want {
			t.Errorf("version %#04x: %d frame types, want %d", v.version, n, v.want)
		}
	}
}

// TestRunnerAddress checks D4 against the well-known Ethereum address of
// private key 1.
func TestRunnerAddress(t *testing.T) {
	var one [32]byte
	one[31] = 1
	k, err := NewRunnerKey(one)
	if err != nil {
		t.Fatal(err)
	}
	a, err := k.PubKey().RunnerAddress()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := a.String(), "7e5f4552091a69125d5dfcb7b8c2659029395bdf"; got != want {
		t.Fatalf("address %s, want %s", got, want)
	}
	if k.PubKey().String() != "01"+"0279be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798" {
		t.Fatalf("tagged key %s", k.PubKey())
	}
	d := cip11.Keccak256([]byte("digest"))
	sig, err := k.Sign(d)
	if err != nil {
		t.Fatal(err)
	}
	if err := VerifyRunnerAddress(d, sig, a); err != nil {
		t.Fatal(err)
	}
	if err := VerifyRunnerAddress(d, sig, cip11.Address{}); !errors.Is(err, ErrSigSignerMismatch) {
		t.Fatalf("other address: %v", err)
	}
}

func TestRunnerSignatureRules(t *testing.T) {
	k, _ := NewRunnerKey(cip11.Keccak256([]byte("r")))
	d := cip11.Keccak256([]byte("d"))
	sig, err := k.Sign(d)
	if err != nil {
		t.Fatal(err)
	}
	if sig[64] > 1 {
		t.Fatalf("v = %d", sig[64])
	}
	if err := VerifyRunner(d, sig, k.PubKey()); err != nil {
		t.Fatal(err)
	}
	// The malleated twin (r, N−s, v⊕1) is mathematically valid; low-s rejects it.
	var s secp256k1.ModNScalar
	s.SetByteSlice(sig[32:64])
	s.Negate()
	hi := sig
	b := s.Bytes()
	copy(hi[32:64], b[:])
	hi[64] ^= 1
	if err := VerifyRunner(d, hi, k.PubKey()); !errors.Is(err, ErrSigHighS) {
		t.Fatalf("high s: %v", err)
	}
	for _, v := range []byte{2, 3, 27, 28, 31} {
		bad := sig
		bad[64] = v
		if err := VerifyRunner(d, bad, k.PubKey()); !errors.Is(err, ErrSigRecoveryID) {
			t.Fatalf("v=%d: %v", v, err)
		}
	}
	vk := NewValidatorKey(cip11.Keccak256([]byte("v")))
	if err := VerifySig(RoleRunner, vk.PubKey(), d, sig.Sig()); !errors.Is(err, ErrPubKeyRole) {
		t.Fatalf("role/scheme: %v", err)
	}
	if err := VerifySig(RoleValidator, vk.PubKey(), d, sig.Sig()); !errors.Is(err, ErrSigLength) {
		t.Fatalf("role/length: %v", err)
	}
	if err := VerifySig(RoleValidator, vk.PubKey(), d, vk.Sign(d).Sig()); err != nil {
		t.Fatal(err)
	}
}

// independentDigest rebuilds a preimage with plain byte concatenation and a
// fresh Keccak, sharing nothing with the package's preimage builder.
func independentDigest(parts ...[]byte) string {
	h := sha3.NewLegacyKeccak256()
	for _, p := range parts {
		h.Write(p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func be(n uint64, width int) []byte {
	b := binary.BigEndian.AppendUint64(nil, n)
	return b[8-width:]
}

func TestDigestsIndependent(t *testing.T) {
	rk, _ := NewRunnerKey(cip11.Keccak256([]byte("r")))
	vk := NewValidatorKey(cip11.Keccak256([]byte("v")))
	rp, vp := rk.PubKey().Bytes(), vk.PubKey().Bytes()
	vsh, cb := cip11.Keccak256([]byte("vsh")), cip11.Keccak256([]byte("cb"))
	s, err := NewSession(Conn{ChainID: 9, Version: 0x0100, RunnerPubKey: rk.PubKey(), ValidatorPubKey: vk.PubKey(), ValidatorSetHash: vsh, SubsetEpoch: 3, ChannelBinding: cb})
	if err != nil {
		t.Fatal(err)
	}
	cid := independentDigest([]byte("cowboy-cip11-connection-v1"), be(9, 8), be(0x0100, 2), rp, vp, vsh[:], be(3, 8), cb[:])
	if s.ID.String() != cid {
		t.Fatalf("connection_id %s, want %s", s.ID, cid)
	}
	id := s.ID[:]
	runner, validator := []byte{1, 1}, []byte{2, 2}
	job, ah := cip11.Keccak256([]byte("job")), cip11.Keccak256([]byte("ah"))
	empty := []byte{0x60}
	reason := append([]byte{0x63}, "why"...)
	kh := func(b []byte) []byte { h := cip11.Keccak256(b); return h[:] }
	str := func(x string) *string { return &x }
	u := func(x uint64) *uint64 { return &x }
	bp := &BackpressureSignal{BlockHeight: 5, ActiveJobs: 1, MaxConcurrent: 2, AcceptingNew: true}
	bpBody := []byte{0xa5, 0, 5, 1, 1, 2, 2, 3, 0xf5, 4, 0xf6}
	bpDigest, _ := bp.Digest(s)
	cd := &CapabilityDelta{BlockHeight: 5, AddedCapabilities: []string{"a"}}
	cdBody := []byte{0xa5, 0, 5, 1, 0x81, 0x61, 'a', 2, 0x80, 3, 0x80, 4, 0x80}
	cdDigest, _ := cd.Digest(s)
	a := &JobAssignment{JobID: job, JobSpecHash: ah, AssignmentHeight: 7, DeadlineBlock: 8, RunnerPubKey: rk.PubKey(), ValidatorPubKey: vk.PubKey()}
	aDigest, _ := a.Digest(9)
	g1, _ := (&Goodbye{Reason: GoodbyeDraining}).Digest(s, RoleRunner)
	g2, _ := (&Goodbye{Reason: GoodbyeDraining, Detail: str(""), RetryAfterBlocks: u(0)}).Digest(s, RoleRunner)
	g3, _ := (&Goodbye{Reason: GoodbyeDraining, Detail: str("why"), RetryAfterBlocks: u(4)}).Digest(s, RoleValidator)
	pr := &PresenceReceipt{ValidatorPubKey: vk.PubKey(), RunnerPubKey: rk.PubKey(), SubsetEpoch: 3, ValidatorSetHash: vsh, BlockHeight: 5, NonceEcho: 6, AcceptingNew: true}
	prDigest, _ := pr.Digest(9)
	hello := &Hello{Version: 0x0100, PartyPubKey: vk.PubKey(), PartyRole: RoleValidator, ChallengeNonce: job}
	ack := &HelloAck{Version: 0x0100, ChainID: 9, ValidatorSetHash: vsh, SubsetEpoch: 3, PartyPubKey: rk.PubKey(), PartyRole: RoleRunner, BlockHeight: 99}
	ackDigest, _ := ack.Digest(hello, cb)
	// D28: the preimage carries the connection's version, the lower of the
	// ack's and the answered Hello's, whichever side is higher.
	ackHigher := *ack
	ackHigher.Version = 0x0107
	ackHigherDigest, _ := ackHigher.Digest(hello, cb)
	helloHigher := *hello
	helloHigher.Version = 0x0105
	helloHigherDigest, _ := ack.Digest(&helloHigher, cb)
	cases := []struct {
		name string
		got  cip11.Hash
		want string
	}{
		{"HelloAck", ackDigest, independentDigest([]byte("cowboy-cip11-hello-ack-v1"), runner, be(9, 8), be(0x0100, 2), []byte{1}, rp, []byte{2}, vp, vsh[:], be(3, 8), job[:], cb[:])},
		{"HelloAck ack 0x0107 to Hello 0x0100", ackHigherDigest, independentDigest([]byte("cowboy-cip11-hello-ack-v1"), runner, be(9, 8), be(0x0100, 2), []byte{1}, rp, []byte{2}, vp, vsh[:], be(3, 8), job[:], cb[:])},
		{"HelloAck ack 0x0100 to Hello 0x0105", helloHigherDigest, independentDigest([]byte("cowboy-cip11-hello-ack-v1"), runner, be(9, 8), be(0x0100, 2), []byte{1}, rp, []byte{2}, vp, vsh[:], be(3, 8), job[:], cb[:])},
		{"HeartbeatPing", (&HeartbeatPing{BlockHeight: 5, Nonce: 6}).Digest(s), independentDigest([]byte("cowboy-cip11-heartbeat-ping-v1"), runner, id, rp, vp, be(5, 8), be(6, 8))},
		{"HeartbeatPong", (&HeartbeatPong{BlockHeight: 5, NonceEcho: 6, AcceptingNew: true}).Digest(s), independentDigest([]byte("cowboy-cip11-heartbeat-pong-v1"), validator, id, vp, rp, be(5, 8), be(6, 8), []byte{1})},
		{"PresenceReceipt", prDigest, independentDigest([]byte("cowboy-cip11-presence-receipt-v1"), validator, be(9, 8), vp, rp, be(3, 8), vsh[:], be(5, 8), be(6, 8), []byte{1})},
		{"BackpressureSignal", bpDigest, independentDigest([]byte("cowboy-cip11-control-v1"), runner, id, rp, vp, []byte{0x12}, be(5, 8), kh(bpBody))},
		{"CapabilityDelta", cdDigest, independentDigest([]byte("cowboy-cip11-control-v1"), runner, id, rp, vp, []byte{0x13}, be(5, 8), kh(cdBody))},
		{"JobAssignment", aDigest, independentDigest([]byte("cowboy-cip11-job-assignment-v1"), validator, be(9, 8), job[:], ah[:], be(7, 8), be(8, 8), rp, vp)},
		{"JobAck Accepted", (&JobAck{JobID: job, AssignmentHash: ah, Status: Accepted()}).Digest(s), independentDigest([]byte("cowboy-cip11-job-ack-v1"), runner, id, job[:], ah[:], rp, vp, []byte{0, 0xff}, kh(empty))},
		{"JobAck Reject", (&JobAck{JobID: job, AssignmentHash: ah, Status: Reject(RejectOther), Reason: str("why")}).Digest(s), independentDigest([]byte("cowboy-cip11-job-ack-v1"), runner, id, job[:], ah[:], rp, vp, []byte{2, 4}, kh(reason))},
		{"JobCancel", (&JobCancel{JobID: job, AssignmentHash: ah, Reason: CancelExpired}).Digest(s), independentDigest([]byte("cowboy-cip11-job-cancel-v1"), validator, id, job[:], ah[:], vp, rp, []byte{1})},
		{"Goodbye None/None", g1, independentDigest([]byte("cowboy-cip11-goodbye-v1"), runner, id, rp, vp, []byte{7}, be(0, 8), kh(empty))},
		{"Goodbye \"\"/0 ≡ None/None", g2, independentDigest([]byte("cowboy-cip11-goodbye-v1"), runner, id, rp, vp, []byte{7}, be(0, 8), kh(empty))},
		{"Goodbye validator", g3, independentDigest([]byte("cowboy-cip11-goodbye-v1"), validator, id, vp, rp, []byte{7}, be(4, 8), kh(reason))},
	}
	for _, c := range cases {
		if c.got.String() != c.want {
			t.Errorf("%s: got %s, want %s", c.name, c.got, c.want)
		}
	}
	if body, _ := bp.CanonicalBody(); !bytes.Equal(body, bpBody) {
		t.Errorf("canonical_frame_body %x", body)
	}
}

// TestJobSpecHashFixture is the §12.6 frozen job_spec_hash fixture (D16).
func TestJobSpecHashFixture(t *testing.T) {
	got := JobSpecHash([]byte("cip11/vectors/job-spec-1"))
	if got.String() != "0fe984e863775e4b341f29dbe691bf4a4f912d74d68159c39ba5a57f3acc894b" {
		t.Fatalf("job_spec_hash moved: %s", got)
	}
}

func TestReader(t *testing.T) {
	a, _ := Encode(&Goodbye{Reason: GoodbyeShutdown})
	b, _ := Encode(&JobProgress{Fraction: 50})
	r := NewReader(bytes.NewReader(append(append([]byte{}, a...), b...)), maxFrame)
	f1, err := r.ReadFrame()
	if err != nil || f1.Type() != TypeGoodbye {
		t.Fatal(f1, err)
	}
	f2, err := r.ReadFrame()
	if err != nil || f2.(*JobProgress).Fraction != 50 {
		t.Fatal(f2, err)
	}
	if _, err := r.ReadFrame(); err != io.EOF {
		t.Fatalf("clean end: %v", err)
	}
	for name, c := range map[string]struct {
		in   []byte
		want error
	}{
		"empty length":     {[]byte{0, 0, 0, 0}, ErrFrameEmpty},
		"too large":        {[]byte{0, 0x20, 0, 1, 0x10}, ErrFrameTooLarge},
		"header truncated": {[]byte{0, 0}, ErrFrameTruncated},
		"type missing":     {[]byte{0, 0, 0, 2}, ErrFrameTruncated},
		"body truncated":   {a[:len(a)-1], ErrFrameTruncated},
		"unknown type":     {[]byte{0, 0, 0, 1, 0x99}, ErrFrameUnknownType},
	} {
		if _, err := NewReader(bytes.NewReader(c.in), maxFrame).ReadFrame(); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	var buf bytes.Buffer
	w := NewWriter(&buf, maxFrame)
	if err := w.WriteFrame(&Goodbye{Reason: GoodbyeShutdown}); err != nil || !bytes.Equal(buf.Bytes(), a) {
		t.Fatalf("writer: %v %x", err, buf.Bytes())
	}
	if err := NewWriter(io.Discard, 64).WriteFrame(&JobResult{TxBytes: make([]byte, 64)}); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("writer ceiling: %v", err)
	}
}

// endless yields a 2 MiB + 1 header followed by an unbounded stream.
type endless struct{ hdr []byte }

func (e *endless) Read(p []byte) (int, error) {
	if len(e.hdr) > 0 {
		n := copy(p, e.hdr)
		e.hdr = e.hdr[n:]
		return n, nil
	}
	clear(p)
	return len(p), nil
}

// TestOversizeRejectedWithoutAllocation: §13 "reject larger frames before
// payload allocation".
func TestOversizeRejectedWithoutAllocation(t *testing.T) {
	res := testing.Benchmark(BenchmarkReadOversizeFrame)
	if res.AllocedBytesPerOp() > 1024 {
		t.Fatalf("rejecting a 2 MiB + 1 frame allocated %d bytes/op", res.AllocedBytesPerOp())
	}
}

// TestDecodeLeavesReceiverUntouched: a failed decode never half-fills a frame.
func TestDecodeLeavesReceiverUntouched(t *testing.T) {
	good := &HeartbeatPing{BlockHeight: 1, Nonce: 2, Signed: RunnerSig(rep(9, 65))}
	f := *good
	bad, _ := hex.DecodeString("a300" + "05" + "01" + "06" + "02" + "5840" + strings.Repeat("11", 64))
	if err := decodeInto(dcbor.New(), &f, bad); !errors.Is(err, dcbor.ErrByteLength) {
		t.Fatal(err)
	}
	if diff := cmp.Diff(*good, f); diff != "" {
		t.Fatal(diff)
	}
}

func TestAckAndGoodbyeMapping(t *testing.T) {
	if AckFor(ErrJobSpecHashMismatch) != Reject(RejectUnverifiableAssignment) || AckFor(nil) != Accepted() {
		t.Fatal("AckFor")
	}
	for err, want := range map[error]GoodbyeReason{
		ErrUnsupportedVersion: GoodbyeUnsupportedVersion, ErrWrongChain: GoodbyeWrongChain, ErrNotInSubset: GoodbyeNotInSubset,
		ErrSigInvalid: GoodbyeAuthFailed, dcbor.ErrIndefiniteLength: GoodbyeProtocolError, ErrFrameTooLarge: GoodbyeProtocolError,
	} {
		if got := GoodbyeReasonFor(err); got != want {
			t.Errorf("%v → %s, want %s", err, got, want)
		}
	}
}

func TestSessionForNegotiatedVersion(t *testing.T) {
	rk, _ := NewRunnerKey(cip11.Keccak256([]byte("r")))
	vk := NewValidatorKey(cip11.Keccak256([]byte("v")))
	ours := &Hello{Version: 0x0102, ChainID: 5, PartyPubKey: rk.PubKey(), PartyRole: RoleRunner}
	peers := &Hello{Version: 0x0100, ChainID: 5, PartyPubKey: vk.PubKey(), PartyRole: RoleValidator}
	a, err := SessionFor(ours, peers, cip11.Hash{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := SessionFor(peers, ours, cip11.Hash{})
	if a.Version != 0x0100 || a.ID != b.ID || a.RunnerPubKey != rk.PubKey() || a.ValidatorPubKey != vk.PubKey() {
		t.Fatalf("sessions disagree: %+v %+v", a.Conn, b.Conn)
	}
}

// TestPingEncoderMatchesDcbor: the hand-written HeartbeatPing encoder of
// ping.go writes exactly the profile encoding dcbor writes, at every
// integer width boundary.
func TestPingEncoderMatchesDcbor(t *testing.T) {
	c := dcbor.New()
	for _, n := range []uint64{0, 23, 24, 0xff, 0x100, 0xffff, 0x10000, 0xffffffff, 0x100000000, ^uint64(0)} {
		p := &HeartbeatPing{BlockHeight: n, Nonce: ^n, Signed: RunnerSig(rep(byte(n), 65))}
		want, err := c.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.appendPayload(nil); !bytes.Equal(got, want) {
			t.Fatalf("%d: hand-written %x, dcbor %x", n, got, want)
		}
		var back HeartbeatPing
		if err := back.decodePayload(c, want); err != nil || back != *p {
			t.Fatalf("%d: decode %v", n, err)
		}
	}
}
