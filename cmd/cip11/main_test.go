package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/conformance"
	"github.com/cip11/cip11/replay"
	"github.com/cip11/cip11/synth"
)

// cli runs the command line and returns its exit code, stdout and stderr.
func cli(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// raceEnabled reports whether the test binary runs under the race detector.
func raceEnabled() bool {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-race" {
				return s.Value == "true"
			}
		}
	}
	return false
}

// genFile writes `cip11 gen` output for args to a file in a temp dir.
func genFile(t *testing.T, name string, args ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if code, _, errOut := cli(append(append([]string{"gen"}, args...), "-o", path)...); code != 0 {
		t.Fatalf("gen %q: exit %d: %s", args, code, errOut)
	}
	return path
}

// summaryLine returns the value of the text summary line "label: value".
func summaryLine(t *testing.T, out, label string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(label) + `:\s+(.*)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("summary lacks %q:\n%s", label, out)
	}
	return m[1]
}

func vectorFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../../conformance/testdata/vectors/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no vector files found: %v", err)
	}
	return files
}

func TestVectorsCheckAgree(t *testing.T) {
	code, out, errOut := cli(append([]string{"vectors", "check"}, vectorFiles(t)...)...)
	if code != 0 {
		t.Fatalf("exit %d, want 0:\n%s%s", code, out, errOut)
	}
	if n := strings.Count(out, ": agree\n"); n == 0 || strings.Contains(out, "disagree:") {
		t.Fatalf("want only agreeing vectors, got %d agree:\n%s", n, out)
	}
}

// tamper rewrites the first output field of the first positive vector of
// the vector file at src and returns the tampered file's bytes and the
// vector's name.
func tamper(t *testing.T, src string) ([]byte, string) {
	t.Helper()
	raw, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var file conformance.File
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	fn, err := conformance.Lookup(file.Function)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range file.Vectors {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(v, &fields); err != nil {
			t.Fatal(err)
		}
		if _, neg := fields["error"]; neg {
			continue
		}
		outs, err := fn.Eval(v)
		if err != nil || len(outs) == 0 {
			continue
		}
		var key string
		for k := range outs {
			if key == "" || k < key {
				key = k
			}
		}
		fields[key] = json.RawMessage(`"tampered"`)
		if file.Vectors[i], err = json.Marshal(fields); err != nil {
			t.Fatal(err)
		}
		var name string
		_ = json.Unmarshal(fields["name"], &name)
		b, err := json.Marshal(file)
		if err != nil {
			t.Fatal(err)
		}
		return b, name
	}
	t.Fatalf("%s has no positive vector with outputs", src)
	return nil, ""
}

func TestVectorsCheckTampered(t *testing.T) {
	files := vectorFiles(t)
	b, name := tamper(t, files[0])
	dir := t.TempDir()
	bad := filepath.Join(dir, "tampered.json")
	if err := os.WriteFile(bad, b, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ := cli("vectors", "check", files[0], bad)
	if code == 0 {
		t.Fatalf("tampered file accepted:\n%s", out)
	}
	if !strings.Contains(out, name+": disagree:") {
		t.Fatalf("vector %q not reported as disagreeing:\n%s", name, out)
	}
	unknown := filepath.Join(dir, "unknown.json")
	if err := os.WriteFile(unknown, []byte(`{"function":"no_such_function","vectors":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{unknown, filepath.Join(dir, "missing.json")} {
		if code, out, _ := cli("vectors", "check", f); code != 1 {
			t.Errorf("%s: exit %d, want 1:\n%s", f, code, out)
		}
	}
}

// TestUsage: a bad command line is exit 2 with the complaint on stderr and
// nothing on stdout.
func TestUsage(t *testing.T) {
	for _, args := range [][]string{
		nil, {"frobnicate"}, {"vectors"}, {"vectors", "check"},
		{"gen", "-runners", "0"}, {"gen", "-blocks", "0"}, {"gen", "-runners", "-3"}, {"gen", "-blocks", "-1"},
		{"gen", "extra"}, {"gen", "-seed", "-1"}, {"gen", "-no-such-flag"},
		{"replay", "a", "b"}, {"replay", "-blocks", "-1"}, {"replay", "-blocks", "x"}, {"replay", "-no-such-flag"},
	} {
		code, out, errOut := cli(args...)
		if code != 2 || out != "" || errOut == "" {
			t.Errorf("%q: exit %d, want 2 with stdout empty and stderr not (stdout %q, stderr %q)", args, code, out, errOut)
		}
	}
	if code, out, _ := cli("help"); code != 0 || !strings.Contains(out, "cip11 replay") {
		t.Errorf("help: exit %d:\n%s", code, out)
	}
}

// TestReplayNegativeBlocks: -blocks below 0 is a usage error, even with a
// file that would replay.
func TestReplayNegativeBlocks(t *testing.T) {
	path := genFile(t, "c.jsonl", "-runners", "20", "-blocks", "5")
	for _, args := range [][]string{{"replay", "-blocks", "-1"}, {"replay", "-blocks", "-5", path}, {"replay", "-json", "-blocks=-2", path}} {
		code, out, errOut := cli(args...)
		if code != 2 || out != "" || !strings.Contains(errOut, "-blocks") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and a usage line naming -blocks", args, code, out, errOut)
		}
	}
}

// TestReplaySamplePrefix replays the first blocks of the embedded sample:
// exit 0, the summary on stdout, nothing on stderr (stderr is no terminal,
// so no progress bar).
func TestReplaySamplePrefix(t *testing.T) {
	code, out, errOut := cli("replay", "-blocks", "40")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d:\n%s%s", code, out, errOut)
	}
	if got := summaryLine(t, out, "blocks"); got != "40" {
		t.Errorf("blocks: %s, want 40", got)
	}
	if got := summaryLine(t, out, "replayed"); !strings.Contains(got, "embedded sample") {
		t.Errorf("replayed: %s", got)
	}
	if !regexp.MustCompile(`(?m)^final state digest: [0-9a-f]{64}$`).MatchString(out) || !strings.Contains(out, "blocks/s") {
		t.Errorf("summary lacks digest or rate:\n%s", out)
	}
	if !strings.HasSuffix(out, "OK: every block's outputs and state digest agree with the log\n") {
		t.Errorf("summary does not end in OK:\n%s", out)
	}
}

// TestReplaySampleFull replays the whole embedded sample through the CLI;
// under the race detector a prefix, so `go test -race` stays fast.
func TestReplaySampleFull(t *testing.T) {
	if testing.Short() {
		t.Skip("full sample replay")
	}
	args, want := []string{"replay", "-json"}, 1000
	if raceEnabled() {
		args, want = append(args, "-blocks", "150"), 150
	}
	code, out, errOut := cli(args...)
	if code != 0 {
		t.Fatalf("exit %d:\n%s%s", code, out, errOut)
	}
	var r report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Blocks != want || r.Assignments == 0 || r.PendingConsumed == 0 {
		t.Fatalf("replayed %+v", r)
	}
	if want == 1000 && (r.Reselections == 0 || r.Expired == 0 || r.MRUWrites == 0) {
		t.Fatalf("the sample must exercise re-selection, expiry and MRU: %+v", r)
	}
}

// TestReplayJSON: -json prints exactly one JSON object, with exactly the
// documented keys, whose counts are replay.Run's summary of the same log.
func TestReplayJSON(t *testing.T) {
	path := genFile(t, "c.jsonl.gz", "-seed", "4", "-runners", "120", "-blocks", "60")
	code, out, errOut := cli("replay", "-json", "-blocks", "50", path)
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d:\n%s%s", code, out, errOut)
	}
	if strings.Count(out, "\n") != 1 || !strings.HasPrefix(out, "{") || !strings.HasSuffix(out, "}\n") {
		t.Fatalf("stdout is not one JSON object on one line:\n%s", out)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &keys); err != nil {
		t.Fatal(err)
	}
	want := []string{"file", "seconds", "blocks_per_second"}
	st := reflect.TypeFor[replay.Summary]()
	for i := range st.NumField() {
		name, _, _ := strings.Cut(st.Field(i).Tag.Get("json"), ",")
		want = append(want, name)
	}
	var got []string
	for k := range keys {
		got = append(got, k)
	}
	sort.Strings(got)
	sort.Strings(want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("keys %v, want %v", got, want)
	}
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	var r report
	if err := dec.Decode(&r); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := replay.Run(f, replay.Config{Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	if r.Summary != s || r.File != path || r.Blocks != 50 || r.Seconds <= 0 || r.BlocksPerSec <= 0 {
		t.Fatalf("-json %+v\nreplay.Run %+v", r, s)
	}

	// The text summary of the same run shows the same numbers.
	code, text, _ := cli("replay", "-blocks", "50", path)
	if code != 0 {
		t.Fatalf("text replay exit %d", code)
	}
	for label, v := range map[string]string{
		"blocks":             strconv.Itoa(s.Blocks),
		"jobs submitted":     fmt.Sprintf("%d (M == 1: %d, M > 1: %d)", s.Jobs, s.JobsM1, s.Jobs-s.JobsM1),
		"assignments":        fmt.Sprintf("%d (timeout re-selections: %d)", s.Assignments, s.Reselections),
		"expired":            strconv.Itoa(s.Expired),
		"pending written":    strconv.Itoa(s.PendingWritten),
		"pending consumed":   strconv.Itoa(s.PendingConsumed),
		"MRU writes":         strconv.Itoa(s.MRUWrites),
		"final state digest": s.FinalDigest,
	} {
		if got := summaryLine(t, text, label); got != v {
			t.Errorf("text %s: %q, want %q", label, got, v)
		}
	}
}

// TestReplayNoCacheSameDigest: -no-cache changes speed, never results.
func TestReplayNoCacheSameDigest(t *testing.T) {
	path := genFile(t, "c.jsonl", "-seed", "6", "-runners", "80", "-blocks", "40")
	var reports [2]report
	for i, args := range [][]string{{"replay", "-json", path}, {"replay", "-json", "-no-cache", path}} {
		code, out, errOut := cli(args...)
		if code != 0 {
			t.Fatalf("%q: exit %d: %s", args, code, errOut)
		}
		if err := json.Unmarshal([]byte(out), &reports[i]); err != nil {
			t.Fatal(err)
		}
	}
	if reports[0].Summary != reports[1].Summary {
		t.Fatalf("cache %+v\nno cache %+v", reports[0].Summary, reports[1].Summary)
	}
}

// tamperedLog returns a generated log with committee[0] of an assignment
// changed, the block's height and the error text replay must report.
func tamperedLog(t *testing.T) ([]byte, uint64, string) {
	t.Helper()
	var buf bytes.Buffer
	if err := synth.Generate(synth.GenConfig{Seed: 9, Runners: 150, Blocks: 60}, &buf, nil); err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
	for i := 20; i < len(lines); i++ {
		b, err := chainlog.DecodeBlock(lines[i])
		if err != nil {
			t.Fatal(err)
		}
		for k := 1; k < len(b.Out.Assignments); k++ {
			c := b.Out.Assignments[k].Committee
			if len(c) == 0 {
				continue
			}
			orig := c[0].String()
			c[0][19] ^= 0xff
			want := fmt.Sprintf("block %d: assignments[%d].committee[0]: want %s got %s", b.Height, k, c[0], orig)
			line, err := chainlog.EncodeBlock(&b)
			if err != nil {
				t.Fatal(err)
			}
			lines[i] = line
			return append(bytes.Join(lines, []byte("\n")), '\n'), uint64(b.Height), want
		}
	}
	t.Fatal("generated chain has no block to tamper")
	return nil, 0, ""
}

// TestReplayTamperedCommittee: a changed committee member is a divergence
// naming the block, the field and both values, on stderr, exit 1.
func TestReplayTamperedCommittee(t *testing.T) {
	log, _, want := tamperedLog(t)
	path := filepath.Join(t.TempDir(), "tampered.jsonl")
	if err := os.WriteFile(path, log, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := cli("replay", path)
	if code != 1 {
		t.Fatalf("exit %d, want 1:\n%s%s", code, out, errOut)
	}
	if !strings.Contains(errOut, want) {
		t.Fatalf("divergence not reported as\n  %s\ngot:\n%s", want, errOut)
	}
}

// TestReplayFailurePrintsNoSummary: every failed replay prints nothing on
// stdout (no summary a script could mistake for a result, also with
// -json), one FAILED line on stderr that names the problem once, and
// exits 1.
func TestReplayFailurePrintsNoSummary(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tampered, height, divergence := tamperedLog(t)
	lines := bytes.Split(bytes.TrimSpace(tampered), []byte("\n"))
	hostile := bytes.Replace(lines[height], []byte(`"consumed_seeds":"`), []byte(`"consumed_seeds":"ff`), 1)
	if bytes.Equal(hostile, lines[height]) {
		t.Fatal("hostile mutation did not apply")
	}
	v1 := bytes.Replace(lines[0], []byte(`"version":2`), []byte(`"version":1`), 1)
	cases := map[string]struct {
		path string
		want string // on stderr
	}{
		"divergence": {write("tampered.jsonl", tampered), divergence},
		"malformed line": {write("malformed.jsonl", append(append(bytes.Clone(lines[0]), '\n'), `{"height":"1"}`...)),
			"line 2: chainlog: malformed log"},
		"version 1":     {write("v1.jsonl", append(v1, '\n')), "unsupported format version"},
		"invalid block": {write("hostile.jsonl", bytes.Join(append(append([][]byte{}, lines[:height]...), hostile), []byte("\n"))), fmt.Sprintf("block %d: engine: ConsumedSeedsV1 invalid", height)},
		"missing file":  {filepath.Join(dir, "missing.jsonl"), "missing.jsonl"},
		"empty file":    {write("empty.jsonl", nil), "empty log"},
	}
	blockRe, lineRe := regexp.MustCompile(`\bblock \d+`), regexp.MustCompile(`\bline \d+`)
	for name, c := range cases {
		for _, extra := range [][]string{nil, {"-json"}} {
			code, out, errOut := cli(append(append([]string{"replay"}, extra...), c.path)...)
			if code != 1 || out != "" {
				t.Errorf("%s %v: exit %d, stdout %q; want exit 1 and nothing on stdout", name, extra, code, out)
			}
			if !strings.Contains(errOut, c.want) || strings.Count(errOut, "\n") != 1 {
				t.Errorf("%s %v: stderr %q, want one line containing %q", name, extra, errOut, c.want)
			}
			if name != "missing file" && !strings.Contains(errOut, "FAILED") {
				t.Errorf("%s: stderr does not say FAILED: %q", name, errOut)
			}
			for _, re := range []*regexp.Regexp{blockRe, lineRe} {
				if m := re.FindAllString(errOut, -1); len(m) > 1 {
					t.Errorf("%s: stderr names %q %d times: %s", name, m[0], len(m), errOut)
				}
			}
			if strings.Count(errOut, c.path) > 1 {
				t.Errorf("%s: stderr repeats the file name: %s", name, errOut)
			}
		}
	}
}

// TestGenDeterministicAndReplays: gen to stdout is the same bytes for the
// same flags, other bytes for another seed, and replays.
func TestGenDeterministicAndReplays(t *testing.T) {
	args := []string{"gen", "-seed", "7", "-runners", "300", "-blocks", "60", "-o", "-"}
	code, a, errOut := cli(args...)
	if code != 0 || errOut != "" {
		t.Fatalf("gen exit %d: %s", code, errOut)
	}
	if _, b, _ := cli(args...); a != b {
		t.Fatal("same seed, different chain")
	}
	if _, c, _ := cli("gen", "-seed", "8", "-runners", "300", "-blocks", "60", "-o", "-"); a == c {
		t.Fatal("different seeds, same chain")
	}
	if !strings.HasPrefix(a, `{"format":"cip11-chainlog","version":2,`) {
		t.Fatalf("stdout is not a plain version 2 chain log: %.80s", a)
	}
	path := filepath.Join(t.TempDir(), "c.jsonl")
	if err := os.WriteFile(path, []byte(a), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := cli("replay", path)
	if code != 0 || summaryLine(t, out, "blocks") != "60" {
		t.Fatalf("replay exit %d:\n%s%s", code, out, errOut)
	}
}

// TestGenWritesGzipFile: -o NAME.gz writes gzip, another name plain JSON
// Lines; both replay.
func TestGenWritesGzipFile(t *testing.T) {
	dir := t.TempDir()
	for name, gz := range map[string]bool{"c.jsonl.gz": true, "c.jsonl": false} {
		path := filepath.Join(dir, name)
		code, out, errOut := cli("gen", "-seed", "3", "-runners", "50", "-blocks", "30", "-o", path)
		if code != 0 || out != "" || errOut != "wrote "+path+"\n" {
			t.Fatalf("gen exit %d: stdout %q stderr %q", code, out, errOut)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if isGz := len(b) > 2 && b[0] == 0x1f && b[1] == 0x8b; isGz != gz {
			t.Errorf("%s: gzip %v, want %v", name, isGz, gz)
		}
		code, out, errOut = cli("replay", path)
		if code != 0 || summaryLine(t, out, "blocks") != "30" {
			t.Fatalf("replay %s exit %d:\n%s%s", name, code, out, errOut)
		}
	}
}

// TestGen19Runners: -runners 19 -blocks 19 registers all 19 runners (the
// registrations are spread over min(20, blocks) blocks), the header records
// the command line, and the chain replays.
func TestGen19Runners(t *testing.T) {
	path := genFile(t, "c.jsonl.gz", "-runners", "19", "-blocks", "19")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cr, err := chainlog.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	if g := cr.Header().Generator; g != "cip11 gen -seed 1 -runners 19 -blocks 19" {
		t.Errorf("generator %q", g)
	}
	registered, blocks := 0, 0
	for {
		b, err := cr.Next()
		if err != nil {
			break
		}
		blocks++
		for _, op := range b.Registry {
			if op.Op == chainlog.OpRegister {
				registered++
			}
		}
	}
	if registered != 19 || blocks != 19 {
		t.Fatalf("%d runners registered in %d blocks, want 19 in 19", registered, blocks)
	}
	code, out, errOut := cli("replay", "-json", path)
	var r report
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || r.Blocks != 19 {
		t.Fatalf("replay exit %d:\n%s%s", code, out, errOut)
	}
}

// TestGenMultiValidatorFlag: -multi-validator writes a 4-participant
// validator set and M > 1 committees take full_set.
func TestGenMultiValidatorFlag(t *testing.T) {
	code, out, errOut := cli("gen", "-seed", "2", "-runners", "100", "-blocks", "40", "-multi-validator", "-o", "-")
	if code != 0 {
		t.Fatalf("gen exit %d: %s", code, errOut)
	}
	first, _, _ := strings.Cut(out, "\n")
	if !strings.Contains(first, `"validator_sets":[{"activation_height":"0","participants":4}]`) ||
		!strings.Contains(first, "-multi-validator") {
		t.Errorf("header: %s", first)
	}
	if !strings.Contains(out, `"branch":"full_set"`) {
		t.Error("no full_set assignment")
	}
}

// TestGenFailureMessage: an unwritable output is exit 1 with one message
// that names the file once.
func TestGenFailureMessage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no", "such", "dir", "c.jsonl")
	code, out, errOut := cli("gen", "-runners", "5", "-blocks", "2", "-o", path)
	if code != 1 || out != "" || strings.Count(errOut, path) != 1 || strings.Count(errOut, "\n") != 1 {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestReplayStore: `replay -store DIR` prints the in-memory run's digest,
// resumes a second run after the blocks the store holds, and fails on a
// directory that is not a store.
func TestReplayStore(t *testing.T) {
	path := genFile(t, "s.jsonl.gz", "-seed", "4", "-runners", "120", "-blocks", "60")
	digest := func(out string) string {
		var r struct {
			Final   string `json:"final_state_digest"`
			Blocks  int    `json:"blocks"`
			Resumed int    `json:"resumed"`
			Store   string `json:"store"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return fmt.Sprintf("%s %d %d %v", r.Final, r.Blocks, r.Resumed, r.Store != "")
	}
	_, mem, _ := cli("replay", "-json", path)
	dir := filepath.Join(t.TempDir(), "st")
	code, part, errOut := cli("replay", "-json", "-fsync=false", "-blocks", "25", "-store", dir, path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	code, rest, errOut := cli("replay", "-json", "-store", dir, path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	m, p, r := digest(mem), digest(part), digest(rest)
	if want := strings.Replace(m, " 60 0 false", " 35 25 true", 1); r != want || !strings.HasSuffix(p, " 25 0 true") {
		t.Fatalf("in memory %q, first 25 blocks %q, resumed %q", m, p, r)
	}
	code, _, errOut = cli("replay", "-store", "", "-blocks", "5", path)
	if code != 0 {
		t.Fatalf("-store '': exit %d: %s", code, errOut)
	}
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, "x"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := cli("replay", "-store", bad, path); code != 1 || out != "" || !strings.Contains(errOut, "not a cip11 store") {
		t.Fatalf("not a store: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
