package wire

import (
	"slices"
	"time"

	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/internal/dcbor"
	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/decred/dcrd/dcrec/secp256k1/v4/ecdsa"
)

// The heartbeat benchmarks are read against the bare primitives measured in
// the same run: Sign vs BareSecp256k1Sign, Verify vs BareSecp256k1Recover.
// The issue requires each ratio ≤ 1.1.

func benchFixture(b *testing.B) (*Session, *RunnerKey) {
	rk, err := NewRunnerKey(cip11.Keccak256([]byte("bench/runner")))
	if err != nil {
		b.Fatal(err)
	}
	vk := NewValidatorKey(cip11.Keccak256([]byte("bench/validator")))
	s, err := NewSession(Conn{ChainID: 1, Version: Version, RunnerPubKey: rk.PubKey(), ValidatorPubKey: vk.PubKey()})
	if err != nil {
		b.Fatal(err)
	}
	return s, rk
}

func BenchmarkBareSecp256k1Sign(b *testing.B) {
	secret := cip11.Keccak256([]byte("bench/runner"))
	priv := secp256k1.PrivKeyFromBytes(secret[:])
	d := cip11.Keccak256([]byte("digest"))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		d[0] = byte(i) // a fresh digest each time, as every ping has one
		_ = ecdsa.SignCompact(priv, d[:], true)
	}
}

func BenchmarkHeartbeatPingEncodeSign(b *testing.B) {
	s, rk := benchFixture(b)
	buf := make([]byte, 0, 128)
	p := HeartbeatPing{BlockHeight: 1 << 20}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		p.Nonce = uint64(i)
		if err := p.Sign(s, rk); err != nil {
			b.Fatal(err)
		}
		var err error
		if buf, err = AppendFrame(buf[:0], &p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBareSecp256k1Recover(b *testing.B) {
	secret := cip11.Keccak256([]byte("bench/runner"))
	priv := secp256k1.PrivKeyFromBytes(secret[:])
	d := cip11.Keccak256([]byte("digest"))
	sig := ecdsa.SignCompact(priv, d[:], true)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := ecdsa.RecoverCompact(sig, d[:]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkHeartbeatPingVerifyDecode(b *testing.B) {
	s, rk := benchFixture(b)
	p := &HeartbeatPing{BlockHeight: 1 << 20, Nonce: 7}
	if err := p.Sign(s, rk); err != nil {
		b.Fatal(err)
	}
	frame, _ := Encode(p)
	b.ReportAllocs()
	for b.Loop() {
		f, err := Decode(frame, maxFrame)
		if err != nil {
			b.Fatal(err)
		}
		if err := f.(*HeartbeatPing).Verify(s); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadOversizeFrame: a header announcing MAX_FRAME_BYTES + 1 on an
// endless stream is rejected from the header alone (see bytes/op).
func BenchmarkReadOversizeFrame(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		r := NewReader(&endless{hdr: []byte{0x00, 0x20, 0x00, 0x01}}, maxFrame)
		if _, err := r.ReadFrame(); err == nil {
			b.Fatal("accepted")
		}
	}
}

// The two ratio benchmarks interleave the bare primitive and the full
// heartbeat path op by op (alternating which goes first), so load from other
// processes hits both alike, and report median(ours)/median(bare) as the
// "ratio" metric (issue 3: must be ≤ 1.1). Medians discard the preemption
// outliers that dominate sums on a shared machine.

func median(d []time.Duration) float64 {
	s := slices.Clone(d)
	slices.Sort(s)
	return float64(s[len(s)/2])
}

func reportRatio(b *testing.B, bare, ours []time.Duration) {
	b.ReportMetric(median(bare), "bare-median-ns")
	b.ReportMetric(median(ours), "ours-median-ns")
	b.ReportMetric(median(ours)/median(bare), "ratio")
}

// BenchmarkHeartbeatPingSignRatio also times, in the same interleaved loop,
// the generic dcbor encoder on the same frame: "dcbor-ratio" with a fresh
// Codec per frame (what AppendFrame would pay) and "dcbor-kept-ratio" with
// one Codec kept (what a Writer would pay). They justify the hand-written
// encoder of ping.go: "ratio" must stay about 1.02.
func BenchmarkHeartbeatPingSignRatio(b *testing.B) {
	s, rk := benchFixture(b)
	secret := cip11.Keccak256([]byte("bench/runner"))
	priv := secp256k1.PrivKeyFromBytes(secret[:])
	buf := make([]byte, 0, 128)
	p := HeartbeatPing{BlockHeight: 1 << 20}
	kept := dcbor.New()
	var bare, ours, fresh, keptT []time.Duration
	runBare := func(d cip11.Hash) {
		t0 := time.Now()
		_ = ecdsa.SignCompact(priv, d[:], true)
		bare = append(bare, time.Since(t0))
	}
	run := func(into *[]time.Duration, encode func() error) {
		t0 := time.Now()
		if err := p.Sign(s, rk); err != nil {
			b.Fatal(err)
		}
		if err := encode(); err != nil {
			b.Fatal(err)
		}
		*into = append(*into, time.Since(t0))
	}
	handWritten := func() (err error) { buf, err = AppendFrame(buf[:0], &p); return err }
	generic := func(c dcbor.Codec) (err error) {
		buf = append(buf[:0], 0, 0, 0, 0, byte(TypeHeartbeatPing))
		buf, err = c.Append(buf, &p)
		return err
	}
	runs := []func(d cip11.Hash){
		runBare,
		func(cip11.Hash) { run(&ours, handWritten) },
		func(cip11.Hash) { run(&fresh, func() error { return generic(dcbor.New()) }) },
		func(cip11.Hash) { run(&keptT, func() error { return generic(kept) }) },
	}
	for i := 0; b.Loop(); i++ {
		p.Nonce = uint64(i)
		d := p.Digest(s)      // bare signs a digest it is handed
		for j := range runs { // rotate which goes first: caches favour the later ones
			runs[(i+j)%len(runs)](d)
		}
	}
	reportRatio(b, bare, ours)
	b.ReportMetric(median(fresh)/median(bare), "dcbor-ratio")
	b.ReportMetric(median(keptT)/median(bare), "dcbor-kept-ratio")
}

func BenchmarkHeartbeatPingVerifyRatio(b *testing.B) {
	s, rk := benchFixture(b)
	p := &HeartbeatPing{BlockHeight: 1 << 20, Nonce: 7}
	if err := p.Sign(s, rk); err != nil {
		b.Fatal(err)
	}
	frame, _ := Encode(p)
	d := p.Digest(s)
	compact := append([]byte{31 + p.Signed[64]}, p.Signed[:64]...)
	var bare, ours []time.Duration
	runBare := func() {
		t0 := time.Now()
		if _, _, err := ecdsa.RecoverCompact(compact, d[:]); err != nil {
			b.Fatal(err)
		}
		bare = append(bare, time.Since(t0))
	}
	runOurs := func() {
		t0 := time.Now()
		f, err := Decode(frame, maxFrame)
		if err != nil {
			b.Fatal(err)
		}
		if err := f.(*HeartbeatPing).Verify(s); err != nil {
			b.Fatal(err)
		}
		ours = append(ours, time.Since(t0))
	}
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			runBare()
			runOurs()
		} else {
			runOurs()
			runBare()
		}
	}
	reportRatio(b, bare, ours)
}

// BenchmarkJobAssignmentRoundTrip encodes and decodes a JobAssignment
// (Encode, DecodePayload) with the profile codec every frame shares
// (dcbor.New): before, each call without a stream's codec, and each new
// stream's Reader and Writer, built its own encoder and decoder modes,
// 1.5 KB and 6 allocations more a round trip.
func BenchmarkJobAssignmentRoundTrip(b *testing.B) {
	a := benchAssignment(b)
	b.ReportAllocs()
	for b.Loop() {
		fb, err := Encode(a)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := DecodePayload(TypeJobAssignment, fb[HeaderLen+1:]); err != nil {
			b.Fatal(err)
		}
	}
}

func benchAssignment(b *testing.B) *JobAssignment {
	rk, err := NewRunnerKey(cip11.Keccak256([]byte("bench/runner")))
	if err != nil {
		b.Fatal(err)
	}
	vk := NewValidatorKey(cip11.Keccak256([]byte("bench/validator")))
	return &JobAssignment{JobID: cip11.Keccak256([]byte("job")), JobSpec: make([]byte, 300), JobSpecHash: cip11.Keccak256([]byte("spec")),
		AssignmentHeight: 2000, AssignmentHash: cip11.Keccak256([]byte("a")), DeadlineBlock: 2100, RunnerPubKey: rk.PubKey(), ValidatorPubKey: vk.PubKey()}
}
