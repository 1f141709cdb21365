package wire

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/internal/dcbor"
)

// Frames 0x14 and 0x15 (§8.3, §12.3 minor 0x0101, SPEC-NOTES N18).

// secpG is the secp256k1 generator in compressed form (SEC 2 §2.4.1): a
// valid curve point whose bytes are known without this package.
const secpG = "0279be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798"

// TestReceiptFramesFrozen pins the two receipt frames as literal bytes,
// written by hand from §12.1 and the D7/D8 profile (keys = §8.3 field
// positions), and checks decode→encode is the identity on them.
func TestReceiptFramesFrozen(t *testing.T) {
	vpk := "02" + strings.Repeat("11", 32) // Ed25519 scheme tag + 32 bytes (no point check, W4)
	cases := []struct {
		name string
		hex  string
		want Frame
	}{
		// len 5 = type + a1 {0: 24} (24 needs the one-byte argument 0x1818)
		{"request nonce 24", "00000005" + "14" + "a1" + "00" + "1818", &PresenceReceiptRequest{Nonce: 24}},
		// len 4 = type + a1 {0: 0}
		{"request nonce 0", "00000004" + "14" + "a1" + "00" + "00", &PresenceReceiptRequest{}},
		// len 187 = type 1 + map head 1 + key0 36 (00 5821 ‖ 33) + key1 37
		// (01 5822 ‖ 34) + key2 2 + key3 35 (03 5820 ‖ 32) + key4 4 (04 1903e8)
		// + key5 2 + key6 2 + key7 67 (07 5840 ‖ 64)
		{"receipt", "000000bb" + "15" + "a8" +
			"00" + "5821" + vpk +
			"01" + "5822" + "01" + secpG +
			"02" + "01" +
			"03" + "5820" + strings.Repeat("33", 32) +
			"04" + "1903e8" +
			"05" + "07" +
			"06" + "f5" +
			"07" + "5840" + strings.Repeat("44", 64),
			nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := hex.DecodeString(c.hex)
			if err != nil {
				t.Fatal(err)
			}
			f, err := Decode(b, 1<<16)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if c.want != nil {
				if got, _ := Encode(c.want); !bytes.Equal(got, b) {
					t.Fatalf("encode: got %x, want %s", got, c.hex)
				}
			}
			again, err := Encode(f)
			if err != nil || !bytes.Equal(again, b) {
				t.Fatalf("decode→encode: %x, %v", again, err)
			}
		})
	}
	b, _ := hex.DecodeString(cases[2].hex)
	f, _ := Decode(b, 1<<16)
	r, ok := f.(*PresenceReceipt)
	if !ok {
		t.Fatalf("0x15 decodes as %T", f)
	}
	if r.SubsetEpoch != 1 || r.BlockHeight != 1000 || r.NonceEcho != 7 || !r.AcceptingNew ||
		r.ValidatorSetHash != cip11.Hash(rep(0x33, 32)) || r.ValidatorSigned != ValidatorSig(rep(0x44, 64)) ||
		hex.EncodeToString(r.RunnerPubKey.Bytes()) != "01"+secpG || hex.EncodeToString(r.ValidatorPubKey.Bytes()) != vpk {
		t.Fatalf("decoded fields: %+v", r)
	}
}

// TestReceiptFrameDefects: every defect of a receipt frame is a protocol
// error with its sentinel (§12.1: exactly the body's fields).
func TestReceiptFrameDefects(t *testing.T) {
	vpk := "5821" + "02" + strings.Repeat("11", 32)
	rpk := "5822" + "01" + secpG
	body := func(k0, k1 string, rest ...string) string {
		return "00" + k0 + "01" + k1 + "0201" + "035820" + strings.Repeat("33", 32) + "041903e8" + "0507" + "06f5" + strings.Join(rest, "")
	}
	sig := "075840" + strings.Repeat("44", 64)
	cases := []struct {
		name    string
		t       FrameType
		payload string
		want    error
	}{
		{"receipt seven fields", TypePresenceReceipt, "a7" + body(vpk, rpk), dcbor.ErrMissingKey},
		{"receipt nine fields", TypePresenceReceipt, "a9" + body(vpk, rpk, sig, "0800"), dcbor.ErrUnknownKey},
		{"validator key 31 bytes", TypePresenceReceipt, "a8" + body("5820"+"02"+strings.Repeat("11", 31), rpk, sig), ErrPubKeyLength},
		{"validator key secp256k1", TypePresenceReceipt, "a8" + body(rpk, rpk, sig), ErrPubKeyRole},
		{"runner key ed25519", TypePresenceReceipt, "a8" + body(vpk, vpk, sig), ErrPubKeyRole},
		{"runner key not on curve", TypePresenceReceipt, "a8" + body(vpk, "5822"+"0102"+strings.Repeat("00", 31)+"05", sig), ErrPubKeyPoint},
		{"signature 65 bytes", TypePresenceReceipt, "a8" + body(vpk, rpk, "075841"+strings.Repeat("44", 65)), dcbor.ErrByteLength},
		{"accepting_new as int", TypePresenceReceipt, "a8" + strings.Replace(body(vpk, rpk, sig), "06f5", "0601", 1), dcbor.ErrUnexpectedType},
		{"request empty map", TypePresenceReceiptRequest, "a0", dcbor.ErrMissingKey},
		{"request extra key", TypePresenceReceiptRequest, "a2" + "0000" + "0100", dcbor.ErrUnknownKey},
		{"request nonce non-shortest", TypePresenceReceiptRequest, "a1" + "00" + "1817", dcbor.ErrNonShortestInt},
		{"request nonce negative", TypePresenceReceiptRequest, "a1" + "00" + "20", dcbor.ErrUnexpectedType},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := hex.DecodeString(c.payload)
			if err != nil {
				t.Fatal(err)
			}
			f, err := DecodePayload(c.t, p)
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v (%v), want %v", err, f, c.want)
			}
		})
	}
	// Encoders refuse what decoders refuse: a receipt without keys.
	if _, err := Encode(&PresenceReceipt{}); !errors.Is(err, ErrPubKeyRole) && !errors.Is(err, ErrPubKeyScheme) && !errors.Is(err, ErrPubKeyLength) {
		t.Fatalf("zero receipt encodes: %v", err)
	}
}

// TestReceiptTypesNeedMinor1: on a 0x0100 connection 0x14 and 0x15 stay
// unknown types, refused by the Reader before their payload is read and
// never written by the Writer; at 0x0101 they pass (§12.3, SPEC-NOTES N18).
func TestReceiptTypesNeedMinor1(t *testing.T) {
	req, err := Encode(&PresenceReceiptRequest{Nonce: 1})
	if err != nil {
		t.Fatal(err)
	}
	// A Reader at 0x0100 stops at the type byte: the payload is left unread.
	src := bytes.NewReader(req)
	r := NewReader(src, 1<<16)
	if _, err := r.ReadFrame(); !errors.Is(err, ErrFrameUnknownType) {
		t.Fatalf("0x0100 reader: %v", err)
	}
	if src.Len() != len(req)-HeaderLen-1 {
		t.Fatalf("reader consumed %d payload bytes", len(req)-HeaderLen-1-src.Len())
	}
	r = NewReader(bytes.NewReader(req), 1<<16)
	r.SetVersion(VersionReceipts)
	if f, err := r.ReadFrame(); err != nil || f.(*PresenceReceiptRequest).Nonce != 1 {
		t.Fatalf("0x0101 reader: %v %v", f, err)
	}
	var out bytes.Buffer
	w := NewWriter(&out, 1<<16)
	if err := w.WriteFrame(&PresenceReceiptRequest{Nonce: 1}); !errors.Is(err, ErrFrameUnknownType) || out.Len() != 0 {
		t.Fatalf("0x0100 writer: %v, %d bytes", err, out.Len())
	}
	if err := w.WriteFrame(&HeartbeatPong{}); err != nil {
		t.Fatalf("0x0100 writer, a 0x0100 frame: %v", err)
	}
	out.Reset()
	w.SetVersion(VersionReceipts)
	if err := w.WriteFrame(&PresenceReceiptRequest{Nonce: 1}); err != nil || !bytes.Equal(out.Bytes(), req) {
		t.Fatalf("0x0101 writer: %v %x", err, out.Bytes())
	}
	for _, c := range []struct {
		t       FrameType
		version uint16
		ok      bool
	}{
		{TypePresenceReceiptRequest, 0x0100, false}, {TypePresenceReceipt, 0x0100, false},
		{TypePresenceReceiptRequest, 0x0101, true}, {TypePresenceReceipt, 0x0107, true},
		{TypePresenceReceipt, 0x0201, false}, {TypeHello, 0x0100, true}, {TypeGoodbye, 0x0101, true},
	} {
		_, err := NewFrameAt(c.t, c.version)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrFrameUnknownType)) {
			t.Errorf("NewFrameAt(%s, %#04x): %v", c.t, c.version, err)
		}
	}
	if TypePresenceReceipt.String() != "PresenceReceipt" || TypePresenceReceiptRequest.String() != "PresenceReceiptRequest" {
		t.Fatal("type names")
	}
}

// TestCheckReceipt: the runner keeps only a receipt from the connection's
// validator, for its own key, under the connection's epoch pair, that
// verifies for the connection's chain_id (§8.3, SPEC-NOTES N18).
func TestCheckReceipt(t *testing.T) {
	rk, err := NewRunnerKey(cip11.Keccak256([]byte("receipt/runner")))
	if err != nil {
		t.Fatal(err)
	}
	rk2, err := NewRunnerKey(cip11.Keccak256([]byte("receipt/runner-2")))
	if err != nil {
		t.Fatal(err)
	}
	vk := NewValidatorKey(cip11.Keccak256([]byte("receipt/validator")))
	vk2 := NewValidatorKey(cip11.Keccak256([]byte("receipt/validator-2")))
	s, err := NewSession(Conn{ChainID: 77, Version: VersionReceipts, RunnerPubKey: rk.PubKey(), ValidatorPubKey: vk.PubKey(),
		ValidatorSetHash: cip11.Keccak256([]byte("vsh")), SubsetEpoch: 4, ChannelBinding: cip11.Keccak256([]byte("cb"))})
	if err != nil {
		t.Fatal(err)
	}
	good := func() *PresenceReceipt {
		return &PresenceReceipt{ValidatorPubKey: vk.PubKey(), RunnerPubKey: rk.PubKey(), SubsetEpoch: 4, ValidatorSetHash: s.ValidatorSetHash,
			BlockHeight: 50, NonceEcho: 9, AcceptingNew: true}
	}
	signed := func(chain uint64, k *ValidatorKey, edit func(*PresenceReceipt)) *PresenceReceipt {
		r := good()
		edit(r)
		if err := r.Sign(chain, k); err != nil {
			t.Fatal(err)
		}
		return r
	}
	none := func(*PresenceReceipt) {}
	cases := []struct {
		name string
		r    *PresenceReceipt
		want error
	}{
		{"valid", signed(77, vk, none), nil},
		{"valid not accepting", signed(77, vk, func(r *PresenceReceipt) { r.AcceptingNew = false }), nil},
		{"other validator", signed(77, vk2, func(r *PresenceReceipt) { r.ValidatorPubKey = vk2.PubKey() }), ErrValidatorNotPeer},
		{"other runner", signed(77, vk, func(r *PresenceReceipt) { r.RunnerPubKey = rk2.PubKey() }), ErrRunnerKeyNotOwn},
		{"other epoch", signed(77, vk, func(r *PresenceReceipt) { r.SubsetEpoch = 5 }), ErrValidatorSetMismatch},
		{"other set hash", signed(77, vk, func(r *PresenceReceipt) { r.ValidatorSetHash = cip11.Hash{} }), ErrValidatorSetMismatch},
		{"signed for another chain", signed(78, vk, none), ErrSigInvalid},
		{"height altered after signing", func() *PresenceReceipt { r := signed(77, vk, none); r.BlockHeight++; return r }(), ErrSigInvalid},
		{"accepting_new flipped after signing", func() *PresenceReceipt {
			r := signed(77, vk, func(r *PresenceReceipt) { r.AcceptingNew = false })
			r.AcceptingNew = true
			return r
		}(), ErrSigInvalid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := CheckReceipt(s, c.r)
			if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
		})
	}
}
