package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cip11/cip11/adapters/node"
)

// TestGenesisRefusesOverwrite (issue 18 #13): a second `cip11 genesis -o
// DIR` exits 1 naming the file and -force, and leaves the old genesis and
// keys as they were; with -force it replaces them.
func TestGenesisRefusesOverwrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "net")
	if code, _, errOut := cli("genesis", "-o", dir, "-runners", "2"); code != 0 {
		t.Fatalf("first genesis: exit %d: %s", code, errOut)
	}
	key := filepath.Join(dir, "validator.key")
	before, err := os.ReadFile(key)
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := cli("genesis", "-o", dir, "-runners", "2", "-seed", "2")
	if code != 1 || out != "" || !strings.Contains(errOut, "-force") || !strings.Contains(errOut, "already exist") {
		t.Fatalf("second genesis: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if after, _ := os.ReadFile(key); !bytes.Equal(after, before) {
		t.Fatal("a refused genesis changed validator.key")
	}
	if code, _, errOut := cli("genesis", "-o", dir, "-runners", "2", "-seed", "2", "-force"); code != 0 {
		t.Fatalf("-force: exit %d: %s", code, errOut)
	}
	if after, _ := os.ReadFile(key); bytes.Equal(after, before) {
		t.Fatal("-force kept the old validator.key")
	}
}

// TestGenesisExternalRunners (issue 18 #13): -runner and -runners-file
// register runners without key files; malformed, duplicate or zero-stake
// entries are usage errors.
func TestGenesisExternalRunners(t *testing.T) {
	tmp := t.TempDir()
	a := strings.Repeat("a1", 20)
	b := strings.Repeat("b2", 20)
	c := strings.Repeat("c3", 20)
	file := filepath.Join(tmp, "runners.txt")
	if err := os.WriteFile(file, []byte("# operators\n"+b+" 42\n\n"+c+"   # default stake\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "net")
	code, out, errOut := cli("genesis", "-o", dir, "-runners", "1", "-runner", a+":7", "-runners-file", file)
	if code != 0 || !strings.Contains(out, "3 more runners") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	g, err := node.LoadGenesis(filepath.Join(dir, "genesis.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range g.Runners[1:] {
		got = append(got, r.Address.String()+" "+r.Stake.String())
	}
	want := []string{a + " 7", b + " 42", c + " 1000000000000000"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("runners %q, want %q", got, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "runner-0001.key")); err == nil {
		t.Error("a key file was written for an external runner")
	}

	write := func(name, s string) string {
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-runner", "zz"}, "-runner"},
		{[]string{"-runner", a + ":0"}, "zero"},
		{[]string{"-runner", a, "-runner", a + ":5"}, "twice"},
		{[]string{"-runners-file", write("dup", a+"\n"+a+"\n")}, "line 2"},
		{[]string{"-runners-file", write("zero", a+" 0\n")}, "zero"},
		{[]string{"-runners-file", write("hex", "0xnothex\n")}, "line 1"},
		{[]string{"-runner", a, "-runners-file", write("both", a+"\n")}, "also given by -runner"},
		{[]string{"-runners-file", filepath.Join(tmp, "missing")}, "-runners-file"},
	} {
		args := append([]string{"genesis", "-o", filepath.Join(tmp, "bad")}, tc.args...)
		code, out, errOut := cli(args...)
		if code != 2 || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 naming %q", tc.args, code, out, errOut, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(tmp, "bad")); err == nil {
		t.Error("a rejected genesis wrote files")
	}
}

// TestReplayStoreOtherChain (issue 18 #15): replaying a log over a store
// of another chain says which chain the store holds and which the log is,
// instead of a digest divergence at the first resumed block.
func TestReplayStoreOtherChain(t *testing.T) {
	a := genFile(t, "a.jsonl", "-seed", "4", "-runners", "30", "-blocks", "12")
	b := genFile(t, "b.jsonl", "-seed", "5", "-runners", "30", "-blocks", "12")
	dir := filepath.Join(t.TempDir(), "st")
	if code, _, errOut := cli("replay", "-fsync=false", "-blocks", "6", "-store", dir, a); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	code, out, errOut := cli("replay", "-fsync=false", "-store", dir, b)
	if code != 1 || out != "" || !strings.Contains(errOut, "the store in "+dir+" holds chain") ||
		!strings.Contains(errOut, "but this log is chain") || strings.Contains(errOut, "digest") {
		t.Fatalf("other chain: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// The store is untouched: its own chain still resumes.
	if code, out, errOut := cli("replay", "-fsync=false", "-store", dir, a); code != 0 || !strings.Contains(out, "resumed after:      6 blocks") {
		t.Fatalf("own chain: exit %d: %s%s", code, out, errOut)
	}
}
