package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cip11/cip11/conformance"
)

const vectorDir = "../../conformance/testdata/vectors"

// rewriteVectors writes a copy of the checked-in vector file NAME.json into
// a temp dir with edit applied to every vector, and returns its path.
func rewriteVectors(t *testing.T, name string, edit func(fields map[string]json.RawMessage)) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(vectorDir, name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var file conformance.File
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	for i, v := range file.Vectors {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(v, &fields); err != nil {
			t.Fatal(err)
		}
		edit(fields)
		if file.Vectors[i], err = json.Marshal(fields); err != nil {
			t.Fatal(err)
		}
	}
	b, err := json.Marshal(file)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name+".json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkVectors runs `cip11 vectors check` and returns exit code, stdout, stderr.
func checkVectors(files ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := run(append([]string{"vectors", "check"}, files...), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestVectorsCheckErrorsGoToStderr(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.json")
	code, out, errOut := checkVectors(missing)
	if code != 1 || !strings.Contains(errOut, missing+": error:") || strings.Contains(out, "error:") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "1 files in error") {
		t.Fatalf("summary missing from stdout:\n%s", out)
	}
}

func TestVectorsCheckNoVectorsIsError(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"empty.json":   `{"function":"digest","spec":"§12.6","description":"","vectors":[]}`,
		"absent.json":  `{"function":"digest"}`,
		"nullvec.json": `{"function":"digest","vectors":null}`,
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := checkVectors(path)
		if code != 1 || !strings.Contains(errOut, "no vectors") {
			t.Errorf("%s: exit %d, want 1 with \"no vectors\" on stderr\nstdout:\n%s\nstderr:\n%s", name, code, out, errOut)
		}
	}
}

// TestVectorsCheckOmittedDerivedOutput: presence_input's evaluator also
// returns canonical_encoding; a vector file without it still agrees.
func TestVectorsCheckOmittedDerivedOutput(t *testing.T) {
	path := rewriteVectors(t, "presence_input", func(f map[string]json.RawMessage) { delete(f, "canonical_encoding") })
	code, out, errOut := checkVectors(path)
	if code != 0 || strings.Contains(out, "disagree:") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

// TestVectorsCheckNeedsAnOutput: a positive vector stripped of every output
// checks nothing and must disagree (negative vectors still agree).
func TestVectorsCheckNeedsAnOutput(t *testing.T) {
	positive := 0
	path := rewriteVectors(t, "presence_input", func(f map[string]json.RawMessage) {
		if _, neg := f["error"]; !neg {
			positive++
		}
		delete(f, "canonical_encoding")
		delete(f, "present")
	})
	code, out, _ := checkVectors(path)
	if n := strings.Count(out, "disagree: vector carries no output"); code != 1 || positive == 0 || n != positive {
		t.Fatalf("exit %d, %d of %d output-less vectors disagree:\n%s", code, n, positive, out)
	}
}

func TestVectorsCheckRejectsUnknownField(t *testing.T) {
	path := rewriteVectors(t, "seed_verify", func(f map[string]json.RawMessage) { f["bogus"] = json.RawMessage(`"1"`) })
	code, out, _ := checkVectors(path)
	if code != 1 || strings.Contains(out, ": agree\n") {
		t.Fatalf("exit %d: a vector with an unknown field agreed:\n%s", code, out)
	}
}

// TestVectorsCheckUppercaseHex: D18 hex is lowercase; no vector whose
// signature was uppercased may agree.
func TestVectorsCheckUppercaseHex(t *testing.T) {
	var changed []string
	path := rewriteVectors(t, "seed_verify", func(f map[string]json.RawMessage) {
		if up := bytes.ToUpper(f["signature"]); !bytes.Equal(up, f["signature"]) {
			f["signature"] = up
			var name string
			_ = json.Unmarshal(f["name"], &name)
			changed = append(changed, name)
		}
	})
	code, out, _ := checkVectors(path)
	if code != 1 || len(changed) < 10 {
		t.Fatalf("exit %d with %d signatures uppercased:\n%s", code, len(changed), out)
	}
	for _, name := range changed {
		if !strings.Contains(out, "seed_verify "+name+": disagree:") {
			t.Errorf("vector %s with an uppercased signature did not disagree", name)
		}
	}
}

// TestVectorsGenReproducesCheckedIn: `cip11 vectors gen` writes exactly the
// checked-in files, byte for byte, and nothing else.
func TestVectorsGenReproducesCheckedIn(t *testing.T) {
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	if code := run([]string{"vectors", "gen", "-dir", dir}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	want, _ := filepath.Glob(filepath.Join(vectorDir, "*.json"))
	got, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(got) != len(want) || len(want) != len(conformance.Functions()) {
		t.Fatalf("gen wrote %d files, %d checked in, %d functions", len(got), len(want), len(conformance.Functions()))
	}
	for _, w := range want {
		wb, err := os.ReadFile(w)
		if err != nil {
			t.Fatal(err)
		}
		gb, err := os.ReadFile(filepath.Join(dir, filepath.Base(w)))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(gb, wb) {
			t.Errorf("%s: generated file differs from the checked-in one", filepath.Base(w))
		}
	}
}

func TestVectorsGenUsage(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"vectors", "gen", "extra"}, &out, &errOut); code != 2 {
		t.Errorf("positional argument: exit %d, want 2", code)
	}
	if code := run([]string{"vectors", "frobnicate"}, &out, &errOut); code != 2 {
		t.Errorf("unknown sub-command: exit %d, want 2", code)
	}
	errOut.Reset()
	missing := filepath.Join(t.TempDir(), "no", "such", "dir")
	if code := run([]string{"vectors", "gen", "-dir", missing}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "vectors gen:") {
		t.Errorf("missing dir: exit %d, stderr %q", code, errOut.String())
	}
}
