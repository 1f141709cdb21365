package chainlog

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func sampleReconfigure() Reconfigure {
	r := Reconfigure{Epoch: 1, Activation: 40, GroupKey: PublicKey{0xa0, 1}}
	for i := range 3 {
		r.Set = append(r.Set, SetMember{PeerPubKey: PeerKey{byte(i + 1)}, ThresholdPubKey: PublicKey{0xb0, byte(i)},
			ConsensusPubKey: PeerKey{0xc0, byte(i)}, QUIC: "127.0.0.1:26601", HTTP: "127.0.0.1:26602"})
	}
	return r
}

// TestReconfigureCanonical (SPEC-NOTES C11): the admin transaction's
// payload is the reconfiguration's compact JSON in field order, and only
// those bytes decode; a block line carries it as txs[].reconfigure.
func TestReconfigureCanonical(t *testing.T) {
	r := sampleReconfigure()
	b, err := EncodeReconfigure(&r)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte(`{"epoch":"1","activation_height":"40","group_key":"a001`)) ||
		!bytes.Contains(b, []byte(`"validator_set":[{"peer_pubkey":"01000000`)) {
		t.Fatalf("layout: %s", b)
	}
	back, err := DecodeReconfigure(b)
	if err != nil || back.Activation != 40 || len(back.Set) != 3 || back.Set[2].ConsensusPubKey[1] != 2 {
		t.Fatalf("decode: %+v %v", back, err)
	}
	unsorted := sampleReconfigure()
	unsorted.Set[0], unsorted.Set[1] = unsorted.Set[1], unsorted.Set[0]
	noQUIC := sampleReconfigure()
	noQUIC.Set[1].QUIC = ""
	for name, in := range map[string][]byte{
		"spaced":      bytes.Replace(b, []byte(`,"activation_height"`), []byte(`, "activation_height"`), 1),
		"reordered":   []byte(strings.Replace(string(b), `{"epoch":"1","activation_height":"40",`, `{"activation_height":"40","epoch":"1",`, 1)),
		"unknown key": bytes.Replace(b, []byte(`{"epoch"`), []byte(`{"x":1,"epoch"`), 1),
		"missing set": []byte(`{"epoch":"1","activation_height":"40","group_key":"` + strings.Repeat("00", 96) + `"}`),
		"empty set":   []byte(`{"epoch":"1","activation_height":"40","group_key":"` + strings.Repeat("00", 96) + `","validator_set":[]}`),
		"unsorted":    mustEncodeRaw(t, &unsorted),
		"no quic":     mustEncodeRaw(t, &noQUIC),
		"trailing":    append(bytes.Clone(b), '\n'),
		"not json":    []byte("\x00"),
	} {
		if _, err := DecodeReconfigure(in); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", name, err)
		}
	}
	blk := sampleBlock(9)
	blk.Txs = append(blk.Txs, Tx{Reconfigure: &r})
	line, err := EncodeBlock(&blk)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeBlock(line)
	if err != nil || got.Txs[len(got.Txs)-1].Reconfigure == nil || got.Txs[len(got.Txs)-1].Reconfigure.Set[1].HTTP != "127.0.0.1:26602" {
		t.Fatalf("block round trip: %v", err)
	}
	blk.Txs[len(blk.Txs)-1].Reconfigure = &unsorted
	if _, err := EncodeBlock(&blk); !errors.Is(err, ErrMalformed) {
		t.Errorf("a block with an unsorted set: %v", err)
	}
}

// mustEncodeRaw is compact JSON without EncodeReconfigure's checks.
func mustEncodeRaw(t *testing.T, r *Reconfigure) []byte {
	t.Helper()
	b, err := marshalCompact(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
