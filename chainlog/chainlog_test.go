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
		Validators:    []ValidatorSet{{ActivationHeight: 0, Participants: 1}, {ActivationHeight: 50, Participants: 4}},
		Reputation:    ReputationConfig{Normalizer: 1_000_000_000, WMinFloorX1e6: 100_000},
	}
}

func u64p(v uint64) *U64 { return (*U64)(&v) }

// sampleBlock has every key set, all three transaction kinds, a
// re-selection and an expired job.
func sampleBlock(h uint64) Block {
	health := Paused
	stake := cip11.U128{Lo: 1 << 40}
	pres := Bytes{1, 0, 0xff}
	return Block{
		Height: U64(h), Round: Round{Epoch: 0, View: U64(h)},
		ParentBeacon:  &Beacon{Epoch: 0, View: U64(h - 1), Signature: Signature{7}},
		Finalized:     u64p(h - 1),
		Presence:      &pres,
		ConsumedSeeds: Bytes{0x80},
		Registry: []RegistryOp{
			{Op: OpRegister, Address: cip11.Address{1}, Stake: &stake, ReputationX1e9: u64p(1e9)},
			{Op: OpUpdate, Address: cip11.Address{2}, Health: &health},
		},
		Heartbeats: []uint32{0, 5},
		Txs: []Tx{
			{ResultSubmit: &ResultSubmit{JobID: cip11.Hash{2}, Runner: cip11.Address{5}}},
			{Submit: &Submit{JobID: cip11.Hash{1}, Submitter: cip11.Address{3}, JobKind: 2, CommitteeSize: 3, TimeoutBlocks: 50}},
			{Verified: &Verified{JobID: cip11.Hash{2}, Matching: []cip11.Address{{5}}, RunnersToSlash: []cip11.Address{{4}},
				RunnersUnrewarded: []cip11.Address{}}},
		},
		Out: Output{
			Assignments: []Assignment{
				{JobID: cip11.Hash{1}, SubmittedAt: U64(h), AssignmentHeight: U64(h), DeadlineBlock: U64(h + 50),
					Mode: 0, Branch: "present_first", Seed: cip11.Hash{8}, Committee: []cip11.Address{{6}}},
				{JobID: cip11.Hash{9}, SubmittedAt: 1, AssignmentHeight: U64(h), DeadlineBlock: U64(h + 30),
					Mode: 1, Branch: "full_set", Seed: cip11.Hash{10}, Committee: []cip11.Address{{5}, {7}}, Reselection: 2},
			},
			PendingWritten:  []Bytes{{0xa1, 0, 1}},
			PendingConsumed: []cip11.Hash{{3}},
			Expired:         []cip11.Hash{{11}, {12}},
			MRUWrites:       []MRUWrite{{Submitter: cip11.Address{3}, JobKind: 2, Runner: cip11.Address{5}, SetAtBlock: U64(h)}},
			StateDigest:     cip11.Hash{0xaa},
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
			b.Registry, b.Txs, b.Out.Assignments, b.Out.Expired = nil, nil, nil, nil
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

// TestRoundTripV2Fields: the transaction list keeps its order and kinds,
// and reselection and expired survive a round trip.
func TestRoundTripV2Fields(t *testing.T) {
	b := sampleBlock(7)
	line, err := EncodeBlock(&b)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeBlock(line)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Txs) != 3 || got.Txs[0].ResultSubmit == nil || got.Txs[1].Submit == nil || got.Txs[2].Verified == nil {
		t.Fatalf("transaction order or kinds lost: %+v", got.Txs)
	}
	if got.Txs[0].Submit != nil || got.Txs[0].Verified != nil {
		t.Fatalf("a result_submit gained another kind: %+v", got.Txs[0])
	}
	if r := got.Out.Assignments[1].Reselection; r != 2 || got.Out.Assignments[0].Reselection != 0 {
		t.Fatalf("reselection: got %d and %d, want 0 and 2", got.Out.Assignments[0].Reselection, r)
	}
	if !reflect.DeepEqual(got.Out.Expired, []cip11.Hash{{11}, {12}}) {
		t.Fatalf("expired: %v", got.Out.Expired)
	}
	// An empty verified result's sets decode as empty, not nil.
	b.Txs = []Tx{{Verified: &Verified{JobID: cip11.Hash{2}}}}
	line, err = EncodeBlock(&b)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(line), `"matching":[],"runners_to_slash":[],"runners_unrewarded":[]`) {
		t.Fatalf("nil sets not written as []: %s", line)
	}
	got, err = DecodeBlock(line)
	if err != nil {
		t.Fatal(err)
	}
	if v := got.Txs[0].Verified; v.Matching == nil || v.RunnersToSlash == nil || v.RunnersUnrewarded == nil {
		t.Fatalf("decoded sets are nil: %+v", v)
	}
}

func TestWireForm(t *testing.T) {
	b := sampleBlock(7)
	line, err := EncodeBlock(&b)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"height":"7"`, `"timeout_blocks":"50"`, `"stake":"1099511627776"`,
		`"presence":"0100ff"`, `"health":"paused"`, `"heartbeats":[0,5]`, `"job_kind":2`, `"reputation_x1e9":"1000000000"`,
		`"txs":[{"result_submit":{"job_id":"02`, `},{"submit":{"job_id":"01`, `},{"verified":{"job_id":"02`,
		`"runner":"0500000000000000000000000000000000000000"}}`,
		`"reselection":0}`, `"reselection":2}`, `"expired":["0b00`, `"committee_size":3`} {
		if !strings.Contains(string(line), want) {
			t.Errorf("line lacks %s: %s", want, line)
		}
	}
	for _, gone := range []string{`"submits"`, `"results"`} {
		if strings.Contains(string(line), gone) {
			t.Errorf("version 2 line writes the version 1 key %s: %s", gone, line)
		}
	}
	hl, err := EncodeHeader(sampleHeader())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"MRU_ACTIVATION_HEIGHT":"100"`, `"CIP11_PRESENT_FIRST_ENABLED":true`, `"MIN_STAKE_CBY_WEI":"18446744073709551621"`,
		`"validator_sets":[{"activation_height":"0","participants":1},{"activation_height":"50","participants":4}]`} {
		if !strings.Contains(string(hl), want) {
			t.Errorf("header lacks %s: %s", want, hl)
		}
	}
	for _, gone := range []string{"MAX_SUBSET", `"multi_validator"`, `"effective_k"`} {
		if strings.Contains(string(hl), gone) {
			t.Errorf("header writes %s: %s", gone, hl)
		}
	}
	var buf bytes.Buffer
	cw, err := NewWriter(&buf, sampleHeader())
	if err != nil || cw.Flush() != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(buf.String(), `{"format":"cip11-chainlog","version":2,`) {
		t.Errorf("writer header: %s", buf.String())
	}
}

func TestDecodeBlockRejects(t *testing.T) {
	b := sampleBlock(7)
	good, err := EncodeBlock(&b)
	if err != nil {
		t.Fatal(err)
	}
	const rs = `{"result_submit":{"job_id":"0200000000000000000000000000000000000000000000000000000000000000","runner":"0500000000000000000000000000000000000000"}}`
	const sub = `"submit":{"job_id":"0100000000000000000000000000000000000000000000000000000000000000","submitter":"0300000000000000000000000000000000000000","job_kind":2,"committee_size":3,"timeout_blocks":"50"}`
	if !strings.Contains(string(good), rs) || !strings.Contains(string(good), sub) {
		t.Fatalf("fixture drifted: %s", good)
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
		"uppercase address":  func(s string) string { return strings.Replace(s, `"runner":"05`, `"runner":"0A`, 1) },
		"long job_id":        func(s string) string { return strings.Replace(s, `"job_id":"01`, `"job_id":"0101`, 1) },
		"bad health":         func(s string) string { return strings.Replace(s, `"paused"`, `"sleepy"`, 1) },
		"bad branch":         func(s string) string { return strings.Replace(s, `"present_first"`, `"other"`, 1) },
		"null array":         func(s string) string { return strings.Replace(s, `"heartbeats":[0,5]`, `"heartbeats":null`, 1) },
		"trailing data":      func(s string) string { return s + ` {}` },
		"zero committee":     func(s string) string { return strings.Replace(s, `"committee_size":3`, `"committee_size":0`, 1) },
		"register no stake":  func(s string) string { return strings.Replace(s, `"stake":"1099511627776",`, ``, 1) },
		"index out of range": func(s string) string { return strings.Replace(s, `[0,5]`, `[0,-5]`, 1) },
		// Version 2 rules.
		"tx with no kind":   func(s string) string { return strings.Replace(s, rs, `{}`, 1) },
		"tx with two kinds": func(s string) string { return strings.Replace(s, `{`+sub+`}`, `{`+sub+`,`+rs[1:], 1) },
		"tx with null kind": func(s string) string { return strings.Replace(s, rs, `{"submit":null}`, 1) },
		"unknown tx kind":   func(s string) string { return strings.Replace(s, rs, `{"result":{}}`, 1) },
		"tx not an object":  func(s string) string { return strings.Replace(s, rs, `"submit"`, 1) },
		"null txs":          func(s string) string { return replaceBetween(s, `"txs":`, `,"out":`, `null`) },
		"missing txs":       func(s string) string { return replaceBetween(s, `,"txs":`, `,"out":`, ``) },
		"v1 submits":        func(s string) string { return replaceBetween(s, `"txs":`, `,"out":`, `[],"submits":[]`) },
		"v1 results":        func(s string) string { return replaceBetween(s, `"txs":`, `,"out":`, `[],"results":[]`) },
		"result_submit no runner": func(s string) string {
			return strings.Replace(s, `,"runner":"0500000000000000000000000000000000000000"}}`, `}}`, 1)
		},
		"verified no matching": func(s string) string { return strings.Replace(s, `"matching":["05`, `"matchin":["05`, 1) },
		"verified null set": func(s string) string {
			return strings.Replace(s, `"runners_unrewarded":[]`, `"runners_unrewarded":null`, 1)
		},
		"missing reselection":   func(s string) string { return strings.Replace(s, `,"reselection":0}`, `}`, 1) },
		"string reselection":    func(s string) string { return strings.Replace(s, `"reselection":2`, `"reselection":"2"`, 1) },
		"negative reselection":  func(s string) string { return strings.Replace(s, `"reselection":2`, `"reselection":-1`, 1) },
		"reselection over u32":  func(s string) string { return strings.Replace(s, `"reselection":2`, `"reselection":4294967296`, 1) },
		"missing expired":       func(s string) string { return replaceBetween(s, `,"expired":`, `,"mru_writes":`, ``) },
		"null expired":          func(s string) string { return replaceBetween(s, `"expired":`, `,"mru_writes":`, `null`) },
		"short expired job_id":  func(s string) string { return strings.Replace(s, `"expired":["0b00`, `"expired":["0b`, 1) },
		"expired not a hash":    func(s string) string { return strings.Replace(s, `"expired":["`, `"expired":[1,"`, 1) },
		"deadline not a string": func(s string) string { return strings.Replace(s, `"deadline_block":"57"`, `"deadline_block":57`, 1) },
	}
	for name, mutate := range cases {
		line := mutate(string(good))
		if line == string(good) {
			t.Fatalf("%s: mutation did not apply", name)
		}
		_, err := DecodeBlock([]byte(line))
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: got %v, want ErrMalformed", name, err)
		}
		t.Logf("%s: %v", name, err)
	}
}

// replaceBetween replaces the text between the first start and the next
// end after it (both kept) by repl; it removes start too when repl is "".
func replaceBetween(s, start, end, repl string) string {
	i := strings.Index(s, start)
	if i < 0 {
		return s
	}
	j := strings.Index(s[i+len(start):], end)
	if j < 0 {
		return s
	}
	if repl == "" {
		return s[:i] + s[i+len(start)+j:]
	}
	return s[:i+len(start)] + repl + s[i+len(start)+j:]
}

// TestTxKinds: a transaction must set exactly one kind, on encode and on
// decode, and the error names the block and the transaction.
func TestTxKinds(t *testing.T) {
	sub := &Submit{JobID: cip11.Hash{1}, CommitteeSize: 1}
	rs := &ResultSubmit{JobID: cip11.Hash{1}}
	ver := &Verified{JobID: cip11.Hash{1}}
	for name, tx := range map[string]Tx{
		"none":                   {},
		"submit+result_submit":   {Submit: sub, ResultSubmit: rs},
		"submit+verified":        {Submit: sub, Verified: ver},
		"result_submit+verified": {ResultSubmit: rs, Verified: ver},
		"all three":              {Submit: sub, ResultSubmit: rs, Verified: ver},
	} {
		b := sampleBlock(7)
		b.Txs = append(b.Txs, tx)
		_, err := EncodeBlock(&b)
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: encode got %v, want ErrMalformed", name, err)
			continue
		}
		if !strings.Contains(err.Error(), "block 7: txs[3]") {
			t.Errorf("%s: error does not name block and tx: %v", name, err)
		}
		if err := b.Validate(); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: Validate got %v", name, err)
		}
	}
	for name, tx := range map[string]Tx{"submit": {Submit: sub}, "result_submit": {ResultSubmit: rs}, "verified": {Verified: ver}} {
		b := sampleBlock(7)
		b.Txs = []Tx{tx}
		if _, err := EncodeBlock(&b); err != nil {
			t.Errorf("%s alone: %v", name, err)
		}
	}
}

// TestValidatorSets covers the header's validator_sets rules and the
// participant count it yields at each height (D25).
func TestValidatorSets(t *testing.T) {
	h := sampleHeader()
	h.Validators = []ValidatorSet{{ActivationHeight: 0, Participants: 1}, {ActivationHeight: 10, Participants: 4}, {ActivationHeight: 11, Participants: 2}, {ActivationHeight: 1 << 40, Participants: 7}}
	for _, c := range []struct {
		height uint64
		want   int
	}{{0, 1}, {1, 1}, {9, 1}, {10, 4}, {11, 2}, {1<<40 - 1, 2}, {1 << 40, 7}, {^uint64(0), 7}} {
		if got, err := h.ParticipantsAt(c.height); err != nil || got != c.want {
			t.Errorf("ParticipantsAt(%d) = %d, %v; want %d", c.height, got, err, c.want)
		}
	}
	line, err := EncodeHeader(withFormat(h))
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeHeader(line)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Validators, h.Validators) {
		t.Fatalf("validator_sets round trip: %+v", back.Validators)
	}

	bad := map[string][]ValidatorSet{
		"empty":              {},
		"nil":                nil,
		"first not at 0":     {{ActivationHeight: 1, Participants: 1}},
		"zero participants":  {{ActivationHeight: 0, Participants: 0}},
		"later zero":         {{ActivationHeight: 0, Participants: 1}, {ActivationHeight: 5, Participants: 0}},
		"equal activation":   {{ActivationHeight: 0, Participants: 1}, {ActivationHeight: 5, Participants: 2}, {ActivationHeight: 5, Participants: 3}},
		"descending":         {{ActivationHeight: 0, Participants: 1}, {ActivationHeight: 9, Participants: 2}, {ActivationHeight: 5, Participants: 3}},
		"two at activation0": {{ActivationHeight: 0, Participants: 1}, {ActivationHeight: 0, Participants: 2}},
	}
	for name, vs := range bad {
		h := withFormat(sampleHeader())
		h.Validators = vs
		if _, err := EncodeHeader(h); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: EncodeHeader got %v, want ErrMalformed", name, err)
		}
		if _, err := NewWriter(io.Discard, h); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: NewWriter got %v, want ErrMalformed", name, err)
		}
		// The same header forced onto the wire must not decode.
		good, err := EncodeHeader(withFormat(sampleHeader()))
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := marshalCompact(vs)
		if vs == nil {
			raw = []byte("null")
		}
		wire := replaceBetween(string(good), `"validator_sets":`, `,"reputation_config":`, string(raw))
		if wire == string(good) {
			t.Fatalf("%s: mutation did not apply", name)
		}
		_, err = DecodeHeader([]byte(wire))
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: DecodeHeader got %v, want ErrMalformed", name, err)
		}
		t.Logf("%s: %v", name, err)
	}

	good, err := EncodeHeader(withFormat(sampleHeader()))
	if err != nil {
		t.Fatal(err)
	}
	wireCases := map[string]string{
		"missing validator_sets": replaceBetween(string(good), `,"validator_sets":`, `,"reputation_config":`, ``),
		"v1 multi_validator":     strings.Replace(string(good), `"validator_sets"`, `"multi_validator":false,"validator_sets"`, 1),
		"v1 effective_k":         strings.Replace(string(good), `"validator_sets"`, `"effective_k":1,"validator_sets"`, 1),
		"string participants":    strings.Replace(string(good), `"participants":1`, `"participants":"1"`, 1),
		"number activation":      strings.Replace(string(good), `"activation_height":"50"`, `"activation_height":50`, 1),
		"negative participants":  strings.Replace(string(good), `"participants":4`, `"participants":-4`, 1),
		"unknown set key":        strings.Replace(string(good), `"participants":4`, `"participants":4,"weight":1`, 1),
		"missing participants":   strings.Replace(string(good), `,"participants":4`, ``, 1),
	}
	for name, wire := range wireCases {
		if wire == string(good) {
			t.Fatalf("%s: mutation did not apply", name)
		}
		_, err := DecodeHeader([]byte(wire))
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: got %v, want ErrMalformed", name, err)
		}
		t.Logf("%s: %v", name, err)
	}
}

func withFormat(h Header) Header {
	h.Format, h.Version = FormatName, Version
	return h
}

// v1Header is a version 1 header line (the format before validator_sets).
const v1Header = `{"format":"cip11-chainlog","version":1,"chain_id":"c","generator":"g","params":{},"namespace":"6e73",` +
	`"threshold_keys":[],"genesis_beacon":null,"schedule":{"views_per_epoch":"100","first_view":"1","last_known_epoch":"5"},` +
	`"multi_validator":false,"effective_k":1,"reputation_config":{"normalizer":"1000000000","w_min_floor_x1e6":"100000"}}`

func TestReaderRejects(t *testing.T) {
	var buf bytes.Buffer
	writeLog(t, &buf, 3)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")

	for name, hdr := range map[string]string{
		"version 1":         v1Header,
		"version 1 (as v2)": strings.Replace(lines[0], `"version":2`, `"version":1`, 1),
		"version 3":         strings.Replace(lines[0], `"version":2`, `"version":3,"future":true`, 1),
		"version 0":         strings.Replace(lines[0], `"version":2`, `"version":0`, 1),
	} {
		if hdr == lines[0] {
			t.Fatalf("%s: mutation did not apply", name)
		}
		_, err := NewReader(strings.NewReader(hdr + "\n" + lines[1]))
		if !errors.Is(err, ErrUnsupportedVersion) || errors.Is(err, ErrMalformed) {
			t.Errorf("%s: got %v, want only ErrUnsupportedVersion", name, err)
		}
		if _, err := DecodeHeader([]byte(hdr)); !errors.Is(err, ErrUnsupportedVersion) {
			t.Errorf("%s: DecodeHeader got %v", name, err)
		}
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
	// A version 1 block line (submits/results) under a version 2 header.
	v1Block := replaceBetween(lines[2], `"txs":`, `,"out":`, `[],"submits":[],"results":[]`)
	v1Block = strings.Replace(v1Block, `"txs":[],`, ``, 1)
	cr, err = NewReader(strings.NewReader(lines[0] + "\n" + lines[1] + "\n" + v1Block))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cr.Next(); err != nil {
		t.Fatal(err)
	}
	if _, err := cr.Next(); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("v1 block line: got %v", err)
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

// TestHeightSchedule: a schedule with activations (D30) round-trips with
// its literal wire form, and a schedule mixing both forms, activations not
// rising or a horizon before the last activation is malformed.
func TestHeightSchedule(t *testing.T) {
	h := withFormat(sampleHeader())
	h.Schedule = Schedule{Activations: []U64{1, 40}, KnownThrough: 1 << 40}
	b, err := EncodeHeader(h)
	if err != nil {
		t.Fatal(err)
	}
	const want = `"schedule":{"views_per_epoch":"0","first_view":"0","last_known_epoch":"0","activations":["1","40"],"known_through":"1099511627776"}`
	if !strings.Contains(string(b), want) {
		t.Fatalf("wire form %s lacks %s", b, want)
	}
	back, err := DecodeHeader(b)
	if err != nil || !back.Schedule.Height() || len(back.Schedule.Activations) != 2 || back.Schedule.KnownThrough != 1<<40 {
		t.Fatalf("round trip: %+v, %v", back.Schedule, err)
	}
	fixed, err := EncodeHeader(withFormat(sampleHeader()))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(fixed), "activations") || strings.Contains(string(fixed), "known_through") {
		t.Fatalf("a fixed schedule writes the new keys: %s", fixed)
	}
	for name, s := range map[string]Schedule{
		"both forms":          {ViewsPerEpoch: 10, Activations: []U64{1}, KnownThrough: 5},
		"not rising":          {Activations: []U64{1, 1}, KnownThrough: 5},
		"horizon before last": {Activations: []U64{1, 9}, KnownThrough: 8},
		"horizon alone":       {ViewsPerEpoch: 10, KnownThrough: 5},
	} {
		h := withFormat(sampleHeader())
		h.Schedule = s
		if _, err := EncodeHeader(h); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: EncodeHeader got %v, want ErrMalformed", name, err)
		}
	}
}
