package replay_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/blockexec"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/replay"
	"github.com/cip11/cip11/seed"
	"github.com/cip11/cip11/selection/engine"
	"github.com/cip11/cip11/synth"
)

var (
	genMu    sync.Mutex
	genCache = map[synth.GenConfig][]byte{}
)

// genLog returns the plain JSON Lines chain cfg describes, generated once
// per test binary.
func genLog(t testing.TB, cfg synth.GenConfig) []byte {
	t.Helper()
	genMu.Lock()
	defer genMu.Unlock()
	if b, ok := genCache[cfg]; ok {
		return b
	}
	var buf bytes.Buffer
	if err := synth.Generate(cfg, &buf, nil); err != nil {
		t.Fatal(err)
	}
	genCache[cfg] = buf.Bytes()
	return buf.Bytes()
}

// smallChain is long enough for timeouts (timeout_blocks ≥ 30) to cause
// re-selections, small enough to generate and replay in well under a second.
// Blocks > 100 (the generator's MRU_ACTIVATION_HEIGHT) for MRU writes.
var smallChain = synth.GenConfig{Seed: 7, Runners: 300, Blocks: 130}

func splitLines(b []byte) [][]byte {
	return bytes.Split(bytes.TrimSpace(b), []byte("\n"))
}

func joinLines(lines ...[][]byte) []byte {
	var all [][]byte
	for _, l := range lines {
		all = append(all, l...)
	}
	return append(bytes.Join(all, []byte("\n")), '\n')
}

func decodeBlock(t testing.TB, line []byte) chainlog.Block {
	t.Helper()
	b, err := chainlog.DecodeBlock(line)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func encodeBlock(t testing.TB, b *chainlog.Block) []byte {
	t.Helper()
	line, err := chainlog.EncodeBlock(b)
	if err != nil {
		t.Fatal(err)
	}
	return line
}

var (
	blockRe = regexp.MustCompile(`\bblock \d+`)
	lineRe  = regexp.MustCompile(`\bline \d+`)
	hexRe   = regexp.MustCompile(`\b[0-9a-f]{40,}\b`)
)

// checkNoRepeat fails if msg names the same block or line twice, repeats
// a 20- or 32-byte value, or repeats a segment (a sentinel wrapped twice, a
// context added twice). One-word segments are package prefixes
// ("presence: … presence: …") and may recur.
func checkNoRepeat(t testing.TB, msg string) {
	t.Helper()
	for _, re := range []*regexp.Regexp{blockRe, lineRe} {
		if m := re.FindAllString(msg, -1); len(m) > 1 {
			t.Errorf("error names %q twice: %s", m[0], msg)
		}
	}
	seen := map[string]bool{}
	for _, h := range hexRe.FindAllString(msg, -1) {
		if seen[h] {
			t.Errorf("error repeats %s: %s", h, msg)
		}
		seen[h] = true
	}
	for _, seg := range strings.Split(msg, ": ") {
		if !strings.Contains(seg, " ") {
			continue
		}
		if seen[seg] {
			t.Errorf("error repeats %q: %s", seg, msg)
		}
		seen[seg] = true
	}
}

// TestTamperedOutputsDiverge changes one recorded output of one block at
// a time: each replay stops at that block with a Divergence naming the
// field, the recorded and the recomputed value, and the summary counts
// only the blocks before it.
func TestTamperedOutputsDiverge(t *testing.T) {
	lines := splitLines(genLog(t, smallChain))
	hexOf := func(v interface{ MarshalText() ([]byte, error) }) string { s, _ := v.MarshalText(); return string(s) }
	// A pick names the Divergence.Field it will tamper and returns the
	// mutation, which reports the tampered and the original text. find
	// returns the first block from height 10 on for which pick applies.
	find := func(pick func(b *chainlog.Block) (string, func() (string, string), bool)) (int, string, func() (string, string), *chainlog.Block) {
		for i := 10; i < len(lines); i++ {
			b := decodeBlock(t, lines[i])
			if field, f, ok := pick(&b); ok {
				return i, field, f, &b
			}
		}
		t.Fatal("generated chain has nothing to tamper")
		return 0, "", nil, nil
	}
	picks := map[string]func(b *chainlog.Block) (string, func() (string, string), bool){
		"committee member": func(b *chainlog.Block) (string, func() (string, string), bool) {
			for k := 1; k < len(b.Out.Assignments); k++ {
				if c := b.Out.Assignments[k].Committee; len(c) > 0 {
					return fmt.Sprintf("assignments[%d].committee[0]", k), func() (string, string) {
						orig := hexOf(c[0])
						c[0][19] ^= 0xff
						return hexOf(c[0]), orig
					}, true
				}
			}
			return "", nil, false
		},
		"deadline_block": func(b *chainlog.Block) (string, func() (string, string), bool) {
			if len(b.Out.Assignments) == 0 {
				return "", nil, false
			}
			a := &b.Out.Assignments[0]
			return "assignments[0].deadline_block", func() (string, string) {
				orig := fmt.Sprint(uint64(a.DeadlineBlock))
				a.DeadlineBlock++
				return fmt.Sprint(uint64(a.DeadlineBlock)), orig
			}, true
		},
		"reselection": func(b *chainlog.Block) (string, func() (string, string), bool) {
			for k := range b.Out.Assignments {
				if a := &b.Out.Assignments[k]; a.Reselection > 0 {
					return fmt.Sprintf("assignments[%d].reselection", k), func() (string, string) {
						orig := fmt.Sprint(a.Reselection)
						a.Reselection = 0
						return "0", orig
					}, true
				}
			}
			return "", nil, false
		},
		"dropped assignment": func(b *chainlog.Block) (string, func() (string, string), bool) {
			n := len(b.Out.Assignments)
			if n == 0 {
				return "", nil, false
			}
			return "assignments length", func() (string, string) {
				b.Out.Assignments = b.Out.Assignments[:n-1]
				return fmt.Sprint(n - 1), fmt.Sprint(n)
			}, true
		},
		"extra expired": func(b *chainlog.Block) (string, func() (string, string), bool) {
			return "expired length", func() (string, string) {
				n := len(b.Out.Expired)
				b.Out.Expired = append(b.Out.Expired, cip11.Hash{0xee})
				return fmt.Sprint(n + 1), fmt.Sprint(n)
			}, true
		},
		"mru runner": func(b *chainlog.Block) (string, func() (string, string), bool) {
			if len(b.Out.MRUWrites) == 0 {
				return "", nil, false
			}
			w := &b.Out.MRUWrites[0]
			return "mru_writes[0].runner", func() (string, string) {
				orig := hexOf(w.Runner)
				w.Runner[0] ^= 1
				return hexOf(w.Runner), orig
			}, true
		},
		"state digest": func(b *chainlog.Block) (string, func() (string, string), bool) {
			return "state_digest", func() (string, string) {
				orig := hexOf(b.Out.StateDigest)
				b.Out.StateDigest[31] ^= 1
				return hexOf(b.Out.StateDigest), orig
			}, true
		},
	}
	for name, pick := range picks {
		i, field, mutate, b := find(pick)
		want, got := mutate()
		log := joinLines(lines[:i], [][]byte{encodeBlock(t, b)}, lines[i+1:])
		s, err := replay.Run(bytes.NewReader(log), replay.Config{})
		var d *blockexec.Divergence
		if !errors.As(err, &d) || !errors.Is(err, blockexec.ErrDivergence) {
			t.Errorf("%s: got %v, want a *Divergence", name, err)
			continue
		}
		if d.Height != uint64(b.Height) || d.Field != field || d.Want != want || d.Got != got {
			t.Errorf("%s: got %+v, want block %d field %s want %s got %s", name, d, b.Height, field, want, got)
		}
		if msg := fmt.Sprintf("block %d: %s: want %s got %s", b.Height, field, want, got); err.Error() != msg {
			t.Errorf("%s: message %q, want %q", name, err.Error(), msg)
		}
		checkNoRepeat(t, err.Error())
		if s.Blocks != i-1 {
			t.Errorf("%s: summary counts %d blocks, want the %d before the divergence", name, s.Blocks, i-1)
		}
	}
}

// TestTamperedInputDiverges: an input change the block still executes
// under (a different submitter) is caught by the outputs it changes.
func TestTamperedInputDiverges(t *testing.T) {
	lines := splitLines(genLog(t, smallChain))
	for i := 10; i < len(lines); i++ {
		b := decodeBlock(t, lines[i])
		if len(b.Registry) == 0 || b.Registry[0].Op != chainlog.OpUpdate || b.Registry[0].Stake == nil {
			continue
		}
		b.Registry[0].Stake.Lo++
		log := joinLines(lines[:i], [][]byte{encodeBlock(t, &b)}, lines[i+1:])
		_, err := replay.Run(bytes.NewReader(log), replay.Config{})
		var d *blockexec.Divergence
		if !errors.As(err, &d) || d.Height < uint64(b.Height) {
			t.Fatalf("changed stake at block %d: got %v, want a divergence at or after it", b.Height, err)
		}
		return
	}
	t.Skip("no stake update in the generated chain")
}

// TestMalformedInputRejected: logs that are not version 2 chain logs are
// rejected before anything executes, with the line named once.
func TestMalformedInputRejected(t *testing.T) {
	lines := splitLines(genLog(t, smallChain))
	v1 := bytes.Replace(lines[0], []byte(`"version":2`), []byte(`"version":1`), 1)
	cases := map[string]struct {
		log  []byte
		want error
	}{
		"empty":              {nil, chainlog.ErrMalformed},
		"not json":           {[]byte("hello\n"), chainlog.ErrMalformed},
		"block line only":    {joinLines(lines[1:2]), chainlog.ErrMalformed},
		"version 1 header":   {joinLines([][]byte{v1}, lines[1:3]), chainlog.ErrUnsupportedVersion},
		"truncated block":    {joinLines(lines[:1], [][]byte{[]byte(`{"height":"1"}`)}), chainlog.ErrMalformed},
		"height gap":         {joinLines(lines[:2], lines[3:5]), chainlog.ErrMalformed},
		"tx with no kind":    {joinLines(lines[:1], [][]byte{bytes.Replace(lines[1], []byte(`"txs":[`), []byte(`"txs":[{},`), 1)}), chainlog.ErrMalformed},
		"v1 block key":       {joinLines(lines[:1], [][]byte{bytes.Replace(lines[1], []byte(`"txs":`), []byte(`"submits":[],"txs":`), 1)}), chainlog.ErrMalformed},
		"cut mid-line":       {joinLines(lines[:3])[:len(joinLines(lines[:3]))-40], chainlog.ErrMalformed},
		"gzip magic garbage": {[]byte{0x1f, 0x8b, 1, 2, 3}, chainlog.ErrMalformed},
	}
	for name, c := range cases {
		s, err := replay.Run(bytes.NewReader(c.log), replay.Config{})
		if !errors.Is(err, c.want) || errors.Is(err, blockexec.ErrDivergence) {
			t.Errorf("%s: got %v, want %v", name, err, c.want)
			continue
		}
		checkNoRepeat(t, err.Error())
		if name == "height gap" && s.Blocks != 1 {
			t.Errorf("height gap: %d blocks replayed before the gap, want 1", s.Blocks)
		}
	}
}

// TestHostileBlocks replaces the last block of a small generated chain by
// hostile variants. Each must be reported as an execution error naming the
// block exactly once: never silently accepted, never a divergence, and
// never a panic (Run does not recover panics, so one crashes this test).
func TestHostileBlocks(t *testing.T) {
	cfg := synth.GenConfig{Seed: 5, Runners: 60, Blocks: 40}
	lines := splitLines(genLog(t, cfg))
	prefix := lines[:len(lines)-1]
	last := decodeBlock(t, lines[len(lines)-1])
	var earlier chainlog.Submit // a job submitted before the last block
	var assigned cip11.Hash     // a job that got a verified result earlier
	for _, l := range lines[1 : len(lines)-1] {
		b := decodeBlock(t, l)
		for _, tx := range b.Txs {
			if tx.Submit != nil && earlier.CommitteeSize == 0 {
				earlier = *tx.Submit
			}
			if tx.Verified != nil {
				assigned = tx.Verified.JobID
			}
		}
	}
	if earlier.CommitteeSize == 0 || assigned == (cip11.Hash{}) {
		t.Fatal("generated chain lacks a submit or a verified result")
	}
	someone := cip11.Address{0xde, 0xad}
	paused := chainlog.Paused
	stake := cip11.U128From64(1)
	rep := chainlog.U64(1)
	cases := map[string]func(b *chainlog.Block){
		"malformed presence":     func(b *chainlog.Block) { p := chainlog.Bytes{1, 0}; b.Presence = &p },
		"absent presence":        func(b *chainlog.Block) { b.Presence = nil },
		"garbage consumed seeds": func(b *chainlog.Block) { b.ConsumedSeeds = chainlog.Bytes{0xff} },
		"forged parent beacon":   func(b *chainlog.Block) { b.ParentBeacon.Signature[5] ^= 1 },
		"parent beacon of an unknown epoch": func(b *chainlog.Block) {
			b.ParentBeacon.Epoch = 1 << 40
		},
		"update unknown runner": func(b *chainlog.Block) {
			b.Registry = append(b.Registry, chainlog.RegistryOp{Op: chainlog.OpUpdate, Address: someone, Health: &paused})
		},
		"register twice": func(b *chainlog.Block) {
			op := chainlog.RegistryOp{Op: chainlog.OpRegister, Address: someone, Stake: &stake, ReputationX1e9: &rep}
			b.Registry = append(b.Registry, op, op)
		},
		"heartbeat beyond list": func(b *chainlog.Block) { b.Heartbeats = append(b.Heartbeats, 1<<20) },
		"duplicate job in block": func(b *chainlog.Block) {
			j := chainlog.Submit{JobID: cip11.Hash{1}, Submitter: someone, CommitteeSize: 1, TimeoutBlocks: 5}
			b.Txs = append(b.Txs, chainlog.Tx{Submit: &j}, chainlog.Tx{Submit: &j})
		},
		"resubmit earlier job": func(b *chainlog.Block) {
			j := earlier
			b.Txs = append(b.Txs, chainlog.Tx{Submit: &j})
		},
		"verified unknown job": func(b *chainlog.Block) {
			b.Txs = append(b.Txs, chainlog.Tx{Verified: &chainlog.Verified{JobID: cip11.Hash{0xab}}})
		},
		"verified completed job": func(b *chainlog.Block) {
			b.Txs = append(b.Txs, chainlog.Tx{Verified: &chainlog.Verified{JobID: assigned}})
		},
		"seed no record consumes": func(b *chainlog.Block) {
			cs := seed.ConsumedSeedsV1{{Round: seed.Round{Epoch: 0, View: 1}, Signature: seed.Signature(b.ParentBeacon.Signature)}}
			enc, err := cs.Encode()
			if err != nil {
				t.Fatal(err)
			}
			b.ConsumedSeeds = enc
		},
	}
	want := fmt.Sprintf("block %d: ", last.Height)
	for name, mutate := range cases {
		line := encodeBlock(t, &last) // a fresh deep copy of the last block
		b := decodeBlock(t, line)
		mutate(&b)
		log := joinLines(prefix, [][]byte{encodeBlock(t, &b)})
		s, err := replay.Run(bytes.NewReader(log), replay.Config{})
		if err == nil || errors.Is(err, blockexec.ErrDivergence) || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: got %v, want an execution error starting %q", name, err, want)
			continue
		}
		checkNoRepeat(t, err.Error())
		if name == "update unknown runner" && !strings.Contains(err.Error(), cip11.Address(someone).String()) {
			t.Errorf("%s: error does not name the runner %s: %v", name, cip11.Address(someone), err)
		}
		if s.Blocks != len(prefix)-1 {
			t.Errorf("%s: summary counts %d blocks, want %d", name, s.Blocks, len(prefix)-1)
		}
		t.Logf("%s: %v", name, err)
	}
	// The engine sentinels survive the wrapping.
	for name, c := range map[string]struct {
		mutate func(b *chainlog.Block)
		want   error
	}{
		"forged parent beacon": {cases["forged parent beacon"], engine.ErrParentBeacon},
		"verified unknown job": {cases["verified unknown job"], engine.ErrJobNotAssigned},
		"seed no record":       {cases["seed no record consumes"], engine.ErrConsumedSeeds},
		"heartbeat":            {cases["heartbeat beyond list"], chainlog.ErrMalformed},
	} {
		b := decodeBlock(t, encodeBlock(t, &last))
		c.mutate(&b)
		_, err := replay.Run(bytes.NewReader(joinLines(prefix, [][]byte{encodeBlock(t, &b)})), replay.Config{})
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v does not wrap %v", name, err, c.want)
		}
	}
}

// TestGenerateDeterministicAndReplays: the same configuration gives the
// same bytes, another seed another chain, and the chain replays with the
// summary Run reports matching the log's own counts.
func TestGenerateDeterministicAndReplays(t *testing.T) {
	a := genLog(t, smallChain)
	var b bytes.Buffer
	if err := synth.Generate(smallChain, &b, nil); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b.Bytes()) {
		t.Fatal("same configuration, different chain")
	}
	other := smallChain
	other.Seed++
	if bytes.Equal(a, genLog(t, other)) {
		t.Fatal("different seeds, same chain")
	}
	var heights []uint64
	s, err := replay.Run(bytes.NewReader(a), replay.Config{Progress: func(h uint64, s *replay.Summary) {
		if s.Blocks != int(h) {
			t.Errorf("progress at height %d with %d blocks counted", h, s.Blocks)
		}
		heights = append(heights, h)
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(heights) != smallChain.Blocks || heights[len(heights)-1] != uint64(smallChain.Blocks) {
		t.Fatalf("progress called for %d heights, want %d", len(heights), smallChain.Blocks)
	}
	if want := countLog(t, a, 0); s != want {
		t.Fatalf("summary %+v\nlog counts %+v", s, want)
	}
	if s.PendingConsumed == 0 || s.MRUWrites == 0 || s.Reselections == 0 || s.JobsM1 == 0 || s.JobsM1 == s.Jobs {
		t.Fatalf("generated chain too thin: %+v", s)
	}
	if s.PendingConsumed > s.PendingWritten || s.Assignments != s.JobsM1+s.PendingConsumed+s.Reselections {
		t.Fatalf("inconsistent counts: %+v", s)
	}
	cached, err := replay.Run(bytes.NewReader(a), replay.Config{Options: blockexec.Options{SnapshotCache: 64}})
	if err != nil || cached != s {
		t.Fatalf("with the candidate cache: %+v, %v\nwithout: %+v", cached, err, s)
	}
}

// decodeLog decodes the header and the first limit blocks of log (all of
// them when limit ≤ 0).
func decodeLog(t testing.TB, log []byte, limit int) (chainlog.Header, []chainlog.Block) {
	t.Helper()
	cr, err := chainlog.NewReader(bytes.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	var blocks []chainlog.Block
	for limit <= 0 || len(blocks) < limit {
		b, err := cr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		blocks = append(blocks, b)
	}
	return cr.Header(), blocks
}

// countLog computes a Summary from the log's recorded outputs alone,
// stopping after limit blocks when limit > 0.
func countLog(t testing.TB, log []byte, limit int) replay.Summary {
	t.Helper()
	_, blocks := decodeLog(t, log, limit)
	return countBlocks(blocks)
}

func countBlocks(blocks []chainlog.Block) replay.Summary {
	var s replay.Summary
	for _, b := range blocks {
		s.Blocks++
		for _, tx := range b.Txs {
			if tx.Submit != nil {
				s.Jobs++
				if tx.Submit.CommitteeSize == 1 {
					s.JobsM1++
				}
			}
		}
		for _, a := range b.Out.Assignments {
			s.Assignments++
			if a.Reselection > 0 {
				s.Reselections++
			}
		}
		s.Expired += len(b.Out.Expired)
		s.PendingWritten += len(b.Out.PendingWritten)
		s.PendingConsumed += len(b.Out.PendingConsumed)
		s.MRUWrites += len(b.Out.MRUWrites)
		s.FinalDigest = b.Out.StateDigest.String()
		s.LastHeight = uint64(b.Height)
	}
	return s
}

// TestRunLimit: Limit stops after that many blocks; a limit past the end
// replays everything.
func TestRunLimit(t *testing.T) {
	log := genLog(t, smallChain)
	for _, limit := range []int{1, 17, smallChain.Blocks, smallChain.Blocks + 5} {
		s, err := replay.Run(bytes.NewReader(log), replay.Config{Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		if want := countLog(t, log, limit); s != want {
			t.Errorf("limit %d: %+v, want %+v", limit, s, want)
		}
	}
}

// TestGenerateRegistersEveryRunner: every requested runner is registered
// within the first min(20, blocks) blocks, including when runners is not a
// multiple of the blocks they are spread over, and the header records the
// command line.
func TestGenerateRegistersEveryRunner(t *testing.T) {
	for _, c := range []struct{ runners, blocks int }{{19, 19}, {1, 1}, {5, 3}, {3, 5}, {41, 20}, {21, 25}, {100, 7}} {
		cfg := synth.GenConfig{Seed: 3, Runners: c.runners, Blocks: c.blocks}
		log := genLog(t, cfg)
		cr, err := chainlog.NewReader(bytes.NewReader(log))
		if err != nil {
			t.Fatal(err)
		}
		if g, want := cr.Header().Generator, fmt.Sprintf("cip11 gen -seed 3 -runners %d -blocks %d", c.runners, c.blocks); g != want {
			t.Errorf("%+v: generator %q, want %q", c, g, want)
		}
		registered := 0
		for {
			b, err := cr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, op := range b.Registry {
				if op.Op == chainlog.OpRegister && uint64(b.Height) <= uint64(min(20, c.blocks)) {
					registered++
				}
			}
		}
		if registered != c.runners {
			t.Errorf("%+v: %d runners registered in the initial blocks, want %d", c, registered, c.runners)
		}
		if _, err := replay.Run(bytes.NewReader(log), replay.Config{}); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
	for _, bad := range []synth.GenConfig{{Runners: 0, Blocks: 5}, {Runners: 5, Blocks: 0}, {Runners: -1, Blocks: -1}} {
		if err := synth.Generate(bad, io.Discard, nil); !errors.Is(err, synth.ErrGenConfig) {
			t.Errorf("%+v: got %v, want ErrGenConfig", bad, err)
		}
	}
}

// TestGenerateMultiValidator: a 4-validator chain records its validator
// set and takes full_set for M > 1 and present_first for M == 1.
func TestGenerateMultiValidator(t *testing.T) {
	log := genLog(t, synth.GenConfig{Seed: 2, Runners: 100, Blocks: 40, MultiValidator: true})
	cr, err := chainlog.NewReader(bytes.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := cr.Header().ParticipantsAt(40); n != 4 {
		t.Fatalf("validator set at 40: %d participants, want 4", n)
	}
	if _, err := replay.Run(bytes.NewReader(log), replay.Config{}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(log, []byte(`"branch":"full_set"`)) || !bytes.Contains(log, []byte(`"branch":"present_first"`)) {
		t.Fatal("multi-validator chain lacks full_set (M > 1) or present_first (M == 1) assignments")
	}
}

// TestValidatorSetChangeMatters: raising the participant count mid-chain
// (D25) changes the branch of later M > 1 assignments, which replay reports
// as a divergence at the first affected block.
func TestValidatorSetChangeMatters(t *testing.T) {
	lines := splitLines(genLog(t, smallChain))
	at := 0
	for i := 30; i < len(lines) && at == 0; i++ {
		b := decodeBlock(t, lines[i])
		for _, a := range b.Out.Assignments {
			if a.Mode == 1 {
				at = i
			}
		}
	}
	if at == 0 {
		t.Fatal("no M > 1 assignment after block 30")
	}
	hdr := bytes.Replace(lines[0], []byte(`"validator_sets":[{"activation_height":"0","participants":1}]`),
		[]byte(fmt.Sprintf(`"validator_sets":[{"activation_height":"0","participants":1},{"activation_height":"%d","participants":4}]`, at)), 1)
	if bytes.Equal(hdr, lines[0]) {
		t.Fatalf("header has another validator_sets: %s", lines[0])
	}
	_, err := replay.Run(bytes.NewReader(joinLines([][]byte{hdr}, lines[1:])), replay.Config{})
	var d *blockexec.Divergence
	if !errors.As(err, &d) || d.Height != uint64(at) || !strings.HasSuffix(d.Field, ".branch") {
		t.Fatalf("got %v, want a branch divergence at block %d", err, at)
	}
	if !strings.Contains(err.Error(), "want present_first got full_set") {
		t.Errorf("unexpected divergence: %v", err)
	}
}

// TestAssignmentDeadlines checks D21 and D26 on a generated chain: every
// assignment's deadline is its assignment block + timeout_blocks, a first
// selection of M == 1 is at S, re-selections number 1..3 and happen at the
// block after the previous deadline, and an expired job had 3.
func TestAssignmentDeadlines(t *testing.T) {
	_, blocks := decodeLog(t, genLog(t, synth.GenConfig{Seed: 11, Runners: 200, Blocks: 300}), 0)
	checkBlockDeadlines(t, blocks)
}

func checkBlockDeadlines(t *testing.T, blocks []chainlog.Block) {
	t.Helper()
	jobs := map[cip11.Hash]chainlog.Submit{}
	last := map[cip11.Hash]chainlog.Assignment{}
	var resel, expired int
	for _, b := range blocks {
		h := uint64(b.Height)
		for _, tx := range b.Txs {
			if tx.Submit != nil {
				jobs[tx.Submit.JobID] = *tx.Submit
			}
		}
		for _, a := range b.Out.Assignments {
			j, ok := jobs[a.JobID]
			if !ok {
				t.Fatalf("block %d: assignment of unknown job %s", h, a.JobID)
			}
			if uint64(a.AssignmentHeight) != h || uint64(a.DeadlineBlock) != h+uint64(j.TimeoutBlocks) {
				t.Fatalf("block %d: assignment %+v, want H = %d and deadline H + %d", h, a, h, j.TimeoutBlocks)
			}
			prev, seen := last[a.JobID]
			switch {
			case a.Reselection == 0 && seen:
				t.Fatalf("block %d: job %s selected twice", h, a.JobID)
			case a.Reselection == 0 && j.CommitteeSize == 1 && uint64(a.SubmittedAt) != h:
				t.Fatalf("block %d: M == 1 job assigned at %d, not at S = %d", h, h, a.SubmittedAt)
			case a.Reselection > 0 && (!seen || prev.Reselection != a.Reselection-1 || uint64(prev.DeadlineBlock)+1 != h):
				t.Fatalf("block %d: re-selection %d of %s after %+v", h, a.Reselection, a.JobID, prev)
			case a.Reselection > engine.MaxReselections:
				t.Fatalf("block %d: re-selection %d", h, a.Reselection)
			}
			if a.Reselection > 0 {
				resel++
			}
			last[a.JobID] = a
		}
		for _, id := range b.Out.Expired {
			prev, ok := last[id]
			if !ok || prev.Reselection != engine.MaxReselections || uint64(prev.DeadlineBlock)+1 != h {
				t.Fatalf("block %d: job %s expired after %+v", h, id, prev)
			}
			expired++
		}
	}
	if resel == 0 {
		t.Error("no re-selection occurred")
	}
	t.Logf("%d re-selections, %d expired", resel, expired)
}
