package nodetx

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/wire"
)

func testRunnerKey(t testing.TB, i byte) *wire.RunnerKey {
	t.Helper()
	k, err := wire.NewRunnerKey(cip11.Keccak256([]byte("node test runner"), []byte{i}))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestTxRoundTrip(t *testing.T) {
	k := testRunnerKey(t, 1)
	job := cip11.Keccak256([]byte("job"))
	res, salt := cip11.Keccak256([]byte("r")), cip11.Keccak256([]byte("s"))
	c := Commitment(res, salt)
	for _, tc := range []struct {
		kind    TxKind
		job     cip11.Hash
		payload []byte
		instr   wire.InstructionKind
	}{
		{TxHeartbeat, cip11.Hash{}, nil, wire.InstructionOther},
		{TxRegister, cip11.Hash{}, make([]byte, 16), wire.InstructionOther},
		{TxCommit, job, c[:], wire.InstructionJobResultCommit},
		{TxReveal, job, RevealPayload(res, salt, nil), wire.InstructionJobResultSubmit},
		{TxReveal, job, RevealPayload(cip11.Keccak256([]byte("out")), salt, []byte("out")), wire.InstructionJobResultSubmit},
	} {
		tx, err := SignTx(k, 7011, tc.kind, 9, tc.job, tc.payload)
		if err != nil {
			t.Fatal(tc.kind, err)
		}
		got, err := DecodeTx(tx.Bytes())
		if err != nil {
			t.Fatal(tc.kind, err)
		}
		if got.From != k.Address() || got.Kind != tc.kind || got.Nonce != 9 || got.JobID != tc.job || !bytes.Equal(got.Payload, tc.payload) {
			t.Fatalf("%s: decoded %+v", tc.kind, got)
		}
		if !bytes.Equal(got.Bytes(), tx.Bytes()) || got.Hash() != tx.Hash() {
			t.Fatalf("%s: re-encoding differs", tc.kind)
		}
		if kind, id := got.Instruction(); kind != tc.instr || (tc.instr != wire.InstructionOther && id != tc.job) {
			t.Fatalf("%s: instruction %d %x", tc.kind, kind, id)
		}
		if err := (TxCodec{ChainID: 7011}).ValidateTransaction(got); err != nil {
			t.Fatal(err)
		}
	}
	if r, s, o, ok := SplitReveal(RevealPayload(res, salt, nil)); !ok || r != res || s != salt || o != nil {
		t.Fatal("SplitReveal")
	}
}

// TestRevealOutputRule: a reveal longer than 64 bytes carries an output of
// at most MaxOutput bytes whose keccak256 is the result (SPEC-NOTES C12);
// SignTx, DecodeTx and SplitReveal all refuse anything else with
// ErrRevealOutput.
func TestRevealOutputRule(t *testing.T) {
	k := testRunnerKey(t, 1)
	job, salt := cip11.Hash{7}, cip11.Hash{9}
	out := []byte("HELLO CIP11")
	max := bytes.Repeat([]byte{0xab}, MaxOutput)
	for name, p := range map[string][]byte{
		"no output":   RevealPayload(cip11.Hash{1}, salt, nil),
		"empty slice": RevealPayload(cip11.Hash{1}, salt, []byte{}),
		"output":      RevealPayload(cip11.Keccak256(out), salt, out),
		"one byte":    RevealPayload(cip11.Keccak256([]byte{0}), salt, []byte{0}),
		"at the max":  RevealPayload(cip11.Keccak256(max), salt, max),
	} {
		tx, err := SignTx(k, 7011, TxReveal, 3, job, p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := DecodeTx(tx.Bytes())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		r, s, o, ok := SplitReveal(got.Payload)
		if !ok || r != cip11.Hash(p[:32]) || s != salt || !bytes.Equal(o, p[64:]) || (len(p) > 64) != (o != nil) {
			t.Fatalf("%s: split %x %x %q %v", name, r, s, o, ok)
		}
	}
	over := append(bytes.Clone(max), 1)
	for name, p := range map[string][]byte{
		"hash mismatch":         RevealPayload(cip11.Keccak256([]byte("other")), salt, out),
		"zero result, output":   RevealPayload(cip11.Hash{}, salt, []byte{0}),
		"output over MaxOutput": RevealPayload(cip11.Keccak256(over), salt, over),
	} {
		if _, err := SignTx(k, 7011, TxReveal, 3, job, p); !errors.Is(err, ErrRevealOutput) || !errors.Is(err, ErrTx) {
			t.Errorf("%s: SignTx: %v", name, err)
		}
		if err := CheckReveal(p); !errors.Is(err, ErrRevealOutput) {
			t.Errorf("%s: CheckReveal: %v", name, err)
		}
		if _, _, _, ok := SplitReveal(p); ok {
			t.Errorf("%s: SplitReveal accepted it", name)
		}
		raw := rawSigned(t, k, TxReveal, job, p)
		if _, err := DecodeTx(raw); !errors.Is(err, ErrRevealOutput) || !errors.Is(err, ErrTx) {
			t.Errorf("%s: DecodeTx: %v", name, err)
		}
	}
	if _, _, _, ok := SplitReveal(make([]byte, 63)); ok {
		t.Error("SplitReveal of 63 bytes")
	}
	if err := CheckReveal(make([]byte, 63)); !errors.Is(err, ErrTx) {
		t.Errorf("CheckReveal of 63 bytes: %v", err)
	}
}

// rawSigned signs a transaction byte by byte, past SignTx's checks.
func rawSigned(t *testing.T, k *wire.RunnerKey, kind TxKind, job cip11.Hash, p []byte) []byte {
	t.Helper()
	b := append([]byte(txMagic), txVersion, byte(kind))
	b = binary.BigEndian.AppendUint64(b, 7011)
	a := k.Address()
	b = append(b, a[:]...)
	b = binary.BigEndian.AppendUint64(b, 3)
	b = append(b, job[:]...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(p)))
	b = append(b, p...)
	sig, err := k.Sign(txDigest(b))
	if err != nil {
		t.Fatal(err)
	}
	return append(b, sig[:]...)
}

// Negative transactions (§10.3: the validator decodes tx_bytes with the
// node's Transaction::read and rejects what it would not admit).
func TestTxRejects(t *testing.T) {
	k := testRunnerKey(t, 1)
	good, err := SignTx(k, 7011, TxHeartbeat, 1, cip11.Hash{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := good.Bytes()
	mut := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(b)) }
	cases := map[string][]byte{
		"empty":            nil,
		"truncated":        b[:len(b)-1],
		"trailing byte":    append(bytes.Clone(b), 0),
		"bad magic":        mut(func(b []byte) []byte { b[0] = 'X'; return b }),
		"bad version":      mut(func(b []byte) []byte { b[4] = 1; return b }),
		"tampered chain":   mut(func(b []byte) []byte { b[13] ^= 1; return b }),
		"unknown kind":     mut(func(b []byte) []byte { b[5] = 9; return b }),
		"claimed signer":   mut(func(b []byte) []byte { b[14] ^= 1; return b }),
		"tampered nonce":   mut(func(b []byte) []byte { b[41] ^= 1; return b }),
		"bad signature v":  mut(func(b []byte) []byte { b[len(b)-1] = 7; return b }),
		"job id on a beat": mut(func(b []byte) []byte { b[48] = 1; return b }),
	}
	if c, err := SignTx(k, 7011, TxCommit, 1, cip11.Hash{1}, make([]byte, 32)); err == nil {
		cases["commit payload too short"] = mut2(c.Bytes(), func(b []byte) []byte {
			b[75] = 31 // payload_len 31 but 32 bytes follow
			return b
		})
	}
	if _, err := SignTx(k, 7011, TxReveal, 1, cip11.Hash{1}, make([]byte, 7000)); !errors.Is(err, ErrTx) {
		t.Errorf("oversized payload: %v", err)
	}
	for name, raw := range cases {
		if _, err := DecodeTx(raw); !errors.Is(err, ErrTx) {
			t.Errorf("%s: got %v, want ErrTx", name, err)
		}
	}
	if _, err := SignTx(nil, 7011, TxHeartbeat, 1, cip11.Hash{}, nil); !errors.Is(err, ErrNilKey) {
		t.Errorf("nil key: %v", err)
	}
}

func mut2(b []byte, f func([]byte) []byte) []byte { return f(bytes.Clone(b)) }

// FuzzDecodeTx: no input panics; whatever decodes re-encodes to the same
// bytes and verifies.
func FuzzDecodeTx(f *testing.F) {
	k := testRunnerKey(f, 2)
	for _, kind := range []TxKind{TxHeartbeat, TxRegister, TxCommit, TxReveal, TxCertificate} {
		n := map[TxKind]int{TxRegister: 16, TxCommit: 32, TxReveal: 64, TxCertificate: 8 + 2*ReceiptLen}[kind]
		var job cip11.Hash
		if kind == TxCommit || kind == TxReveal {
			job = cip11.Hash{7}
		}
		tx, err := SignTx(k, 7011, kind, uint64(kind), job, make([]byte, n))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(tx.Bytes())
	}
	out := []byte("hello cip11")
	for _, p := range [][]byte{RevealPayload(cip11.Keccak256(out), cip11.Hash{3}, out), RevealPayload(cip11.Hash{}, cip11.Hash{3}, out)} {
		b := append([]byte(txMagic), txVersion, byte(TxReveal))
		b = binary.BigEndian.AppendUint64(b, 7011)
		a := k.Address()
		b = append(b, a[:]...)
		b = binary.BigEndian.AppendUint64(b, 5)
		b = append(b, make([]byte, 32)...)
		b = binary.BigEndian.AppendUint16(b, uint16(len(p)))
		b = append(b, p...)
		sig, err := k.Sign(txDigest(b))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(append(b, sig[:]...))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		tx, err := DecodeTx(b)
		if err != nil {
			if !errors.Is(err, ErrTx) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if !bytes.Equal(tx.Bytes(), b) {
			t.Fatal("decode/encode differs")
		}
		if a, err := tx.PubKey.RunnerAddress(); err != nil || a != tx.From {
			t.Fatal("recovered key does not match the signer")
		}
	})
}

func TestJobSpecRoundTripAndChecks(t *testing.T) {
	s := &JobSpec{Submitter: cip11.Address{1}, Kind: 2, Runners: 3, TimeoutBlocks: 10, WorkMillis: 5, Nonce: 8, Payload: []byte("hi")}
	got, err := DecodeJobSpec(s.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if got.ID() != s.ID() || !bytes.Equal(got.Encode(), s.Encode()) {
		t.Fatal("round trip")
	}
	for name, bad := range map[string]JobSpec{
		"M = 0":          {Runners: 0, TimeoutBlocks: 1},
		"M = 65":         {Runners: 65, TimeoutBlocks: 1},
		"timeout 0":      {Runners: 1},
		"job kind 200":   {Runners: 1, TimeoutBlocks: 1, Kind: 200},
		"payload 5 KiB":  {Runners: 1, TimeoutBlocks: 1, Payload: make([]byte, 5000)},
		"work 11 minute": {Runners: 1, TimeoutBlocks: 1, WorkMillis: 660_000},
	} {
		if err := bad.Check(); !errors.Is(err, ErrBadRequest) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := DecodeJobSpec(append(s.Encode(), 0)); !errors.Is(err, ErrBadRequest) {
		t.Errorf("trailing byte: %v", err)
	}
}

func FuzzDecodeJobSpec(f *testing.F) {
	f.Add((&JobSpec{Runners: 1, TimeoutBlocks: 3, Payload: []byte{1, 2}}).Encode())
	f.Add((&JobSpec{Runners: 3, TimeoutBlocks: 30, Kind: 1}).Encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeJobSpec(b)
		if err != nil {
			if !errors.Is(err, ErrBadRequest) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if !bytes.Equal(s.Encode(), b) {
			t.Fatal("decode/encode differs")
		}
	})
}

// TestTxChainBound (issue 18 item 10): the chain id is signed, and
// validation for one chain refuses another chain's transaction.
func TestTxChainBound(t *testing.T) {
	k := testRunnerKey(t, 1)
	tx, err := SignTx(k, 9999, TxHeartbeat, 1, cip11.Hash{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeTx(tx.Bytes())
	if err != nil || got.ChainID != 9999 {
		t.Fatalf("decode: %v, chain %d", err, got.ChainID)
	}
	if err := (TxCodec{ChainID: 7011}).ValidateTransaction(got); !errors.Is(err, ErrWrongChain) {
		t.Fatalf("chain 9999's heartbeat validated on chain 7011: %v", err)
	}
	if err := (TxCodec{ChainID: 9999}).ValidateTransaction(got); err != nil {
		t.Fatal(err)
	}
}
