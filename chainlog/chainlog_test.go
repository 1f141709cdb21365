package chainlog

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/cip11/cip11"
)

func sampleHeader() Header {
	p := cip11.DefaultParams()
	p.MRUActivationHeight = 100
	p.PresentFirstEnabled = true
	p.MinStakeCBYWei = cip11.U128{Hi: 1, Lo: 5}
	return Header{
		ChainID: "test", Generator: "unit test", Params: p,
		Namespace:     Bytes("ns"),
		ThresholdKeys: []EpochKey{{Epoch: 0, PublicKey: PublicKey{1, 2}}, {Epoch: 1, PublicKey: PublicKey{3}}},
		GenesisBeacon: &Beacon{Epoch: 0, View: 0, Signature: Signature{9}},
		Schedule:      Schedule{ViewsPerEpoch: 100, FirstView: 1, LastKnownEpoch: 5},
		EffectiveK:    3,
		Reputation:    ReputationConfig{Normalizer: 1_000_000_000, WMinFloorX1e6: 100_000},
	}
}

func u64p(v uint64) *U64 { return (*U64)(&v) }

func sampleBlock(h uint64) Block {
	health := Paused
	stake := U128{Lo: 1 << 40}
	pres := Bytes{1, 0, 0xff}
	return Block{
		Height: U64(h), Round: Round{Epoch: 0, View: U64(h)},
		ParentBeacon:  &Beacon{Epoch: 0, View: U64(h - 1), Signature: Signature{7}},
		Finalized:     u64p(h - 1),
		Presence:      &pres,
		ConsumedSeeds: Bytes{0x80},
		Registry: []RegistryOp{
			{Op: OpRegister, Address: Address{1}, Stake: &stake, ReputationX1e9: u64p(1e9)},
			{Op: OpUpdate, Address: Address{2}, Health: &health},
		},
		Heartbeats: []uint32{0, 5},
		Submits:    []Submit{{JobID: Hash{1}, Submitter: Address{3}, JobKind: 2, CommitteeSize: 3, TimeoutBlocks: 50}},
		Results: []Result{{JobID: Hash{2}, Submitter: Address{3}, JobKind: 2,
			Committee: []Address{{4}, {5}}, Matching: []Address{{5}}, RunnersToSlash: []Address{{4}}, RunnersUnrewarded: []Address{}}},
		Out: Output{
			Assignments: []Assignment{{JobID: Hash{1}, SubmittedAt: U64(h), AssignmentHeight: U64(h), DeadlineBlock: 60,
				Mode: 0, Branch: "present_first", Seed: Hash{8}, Committee: []Address{{6}}}},
			PendingWritten:  []Bytes{{0xa1, 0, 1}},
			PendingConsumed: []Hash{{3}},
			MRUWrites:       []MRUWrite{{Submitter: Address{3}, JobKind: 2, Runner: Address{5}, SetAtBlock: U64(h)}},
			StateDigest:     Hash{0xaa},
		},
	}
}

func writeLog(t *testing.T, w io.Writer, n int) []Block {
	t.Helper()
	cw, err := NewWriter(w, sampleHeader())
	if err != nil {
		t.Fatal(err)
	}
	var blocks []Block
	for h := uint64(1); h <= uint64(n); h++ {
		b := sampleBlock(h)
		if h == 1 {
			b.ParentBeacon, b.Finalized, b.Presence = nil, nil, nil
			b.Registry, b.Results, b.Out.Assignments = nil, nil, nil
		}
		if err := cw.WriteBlock(&b); err != nil {
			t.Fatal(err)
		}
		b.normalize()
		blocks = append(blocks, b)
	}
	if err := cw.Flush(); err != nil {
		t.Fatal(err)
	}
	return blocks
}

func readAll(t *testing.T, r io.Reader) (Header, []Block) {
	t.Helper()
	cr, err := NewReader(r)
	if err != nil {
		t.Fatal(err)
	}
	var out []Block
	for {
		b, err := cr.Next()
		if err == io.EOF {
			return cr.Header(), out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
}

func TestRoundTrip(t *testing.T) {
	for _, gz := range []bool{false, true} {
		var buf bytes.Buffer
		var w io.Writer = &buf
		var zw *gzip.Writer
		if gz {
			zw = gzip.NewWriter(&buf)
			w = zw
		}
		want := writeLog(t, w, 3)
		if zw != nil {
			if err := zw.Close(); err != nil {
				t.Fatal(err)
			}
		}
		h, got := readAll(t, &buf)
		wantH := sampleHeader()
		wantH.Format, wantH.Version = FormatName, Version
		if !reflect.DeepEqual(h, wantH) {
			t.Fatalf("gzip=%v header:\n got %+v\nwant %+v", gz, h, wantH)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("gzip=%v blocks differ:\n got %+v\nwant %+v", gz, got, want)
		}
		if got[0].Presence != nil || got[1].Presence == nil {
			t.Fatal("null presence must stay distinct from a present field")
		}
	}
}

func TestWireForm(t *testing.T) {
	b := sampleBlock(7)
	line, err := EncodeBlock(&b)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"height":"7"`, `"timeout_blocks":"50"`, `"stake":"1099511627776"`,
		`"presence":"0100ff"`, `"health":"paused"`, `"heartbeats":[0,5]`, `"job_kind":2`, `"reputation_x1e9":"1000000000"`} {
		if !strings.Contains(string(line), want) {
			t.Errorf("line lacks %s: %s", want, line)
		}
	}
	hl, err := EncodeHeader(sampleHeader())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"MRU_ACTIVATION_HEIGHT":"100"`, `"CIP11_PRESENT_FIRST_ENABLED":true`, `"MIN_STAKE_CBY_WEI":"18446744073709551621"`} {
		if !strings.Contains(string(hl), want) {
			t.Errorf("header lacks %s: %s", want, hl)
		}
	}
	if strings.Contains(string(hl), "MAX_SUBSET") {
		t.Errorf("header writes a default-valued parameter: %s", hl)
	}
}

func TestDecodeBlockRejects(t *testing.T) {
	b := sampleBlock(7)
	good, err := EncodeBlock(&b)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]func(string) string{
		"unknown key":        func(s string) string { return strings.Replace(s, `"height"`, `"extra":1,"height"`, 1) },
		"duplicate key":      func(s string) string { return strings.Replace(s, `"height":"7"`, `"height":"7","height":"8"`, 1) },
		"nested duplicate":   func(s string) string { return strings.Replace(s, `"epoch":"0"`, `"epoch":"0","epoch":"0"`, 1) },
		"missing key":        func(s string) string { return strings.Replace(s, `"heartbeats":[0,5],`, ``, 1) },
		"wrong-case key":     func(s string) string { return strings.Replace(s, `"height"`, `"Height"`, 1) },
		"leading zero":       func(s string) string { return strings.Replace(s, `"height":"7"`, `"height":"07"`, 1) },
		"u64 overflow":       func(s string) string { return strings.Replace(s, `"height":"7"`, `"height":"18446744073709551616"`, 1) },
		"number for u64":     func(s string) string { return strings.Replace(s, `"height":"7"`, `"height":7`, 1) },
		"uppercase hex":      func(s string) string { return strings.Replace(s, `"0100ff"`, `"0100FF"`, 1) },
		"odd hex":            func(s string) string { return strings.Replace(s, `"0100ff"`, `"0100f"`, 1) },
		"short address":      func(s string) string { return strings.Replace(s, `"submitter":"03`, `"submitter":"`, 1) },
		"bad health":         func(s string) string { return strings.Replace(s, `"paused"`, `"sleepy"`, 1) },
		"bad branch":         func(s string) string { return strings.Replace(s, `"present_first"`, `"other"`, 1) },
		"null array":         func(s string) string { return strings.Replace(s, `"heartbeats":[0,5]`, `"heartbeats":null`, 1) },
		"trailing data":      func(s string) string { return s + ` {}` },
		"zero committee":     func(s string) string { return strings.Replace(s, `"committee_size":3`, `"committee_size":0`, 1) },
		"register no stake":  func(s string) string { return strings.Replace(s, `"stake":"1099511627776",`, ``, 1) },
		"index out of range": func(s string) string { return strings.Replace(s, `[0,5]`, `[0,-5]`, 1) },
	}
	for name, mutate := range cases {
		line := mutate(string(good))
		if line == string(good) {
			t.Fatalf("%s: mutation did not apply", name)
		}
		if _, err := DecodeBlock([]byte(line)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: got %v, want ErrMalformed", name, err)
		}
	}
}

func TestReaderRejects(t *testing.T) {
	var buf bytes.Buffer
	writeLog(t, &buf, 3)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")

	v2 := strings.Replace(lines[0], `"version":1`, `"version":2,"future":true`, 1)
	if _, err := NewReader(strings.NewReader(v2)); !errors.Is(err, ErrUnsupportedVersion) {
		t.Errorf("version 2: got %v", err)
	}
	if _, err := NewReader(strings.NewReader("")); !errors.Is(err, ErrMalformed) {
		t.Errorf("empty: got %v", err)
	}
	badParam := strings.Replace(lines[0], `"params":{`, `"params":{"NOT_A_CONSTANT":"1",`, 1)
	if _, err := NewReader(strings.NewReader(badParam)); !errors.Is(err, ErrMalformed) {
		t.Errorf("unknown param: got %v", err)
	}
	invalid := strings.Replace(lines[0], `"params":{`, `"params":{"K_HARD_MIN":"3",`, 1)
	if _, err := NewReader(strings.NewReader(invalid)); !errors.Is(err, cip11.ErrInvalidParams) {
		t.Errorf("invalid params: got %v", err)
	}
	skip := strings.Join([]string{lines[0], lines[1], lines[3]}, "\n")
	cr, err := NewReader(strings.NewReader(skip))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cr.Next(); err != nil {
		t.Fatal(err)
	}
	if _, err := cr.Next(); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("height gap: got %v", err)
	}
	if _, err := NewReader(bytes.NewReader([]byte{0x1f, 0x8b, 0, 1})); !errors.Is(err, ErrMalformed) {
		t.Errorf("broken gzip: got %v", err)
	}
}

func TestWriterRejectsGap(t *testing.T) {
	cw, err := NewWriter(io.Discard, sampleHeader())
	if err != nil {
		t.Fatal(err)
	}
	b := sampleBlock(2)
	if err := cw.WriteBlock(&b); !errors.Is(err, ErrMalformed) {
		t.Fatalf("got %v", err)
	}
}
