package main

import (
	"errors"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// cip11 version names the module and the Go version, and the revision
// when the build information has one.
func TestVersion(t *testing.T) {
	code, out, errs := cli("version")
	if code != 0 || !strings.Contains(out, "github.com/cip11/cip11") || !strings.Contains(out, "go go1.") {
		t.Fatalf("cip11 version: %d %q %q", code, out, errs)
	}
	bi := &debug.BuildInfo{GoVersion: "go1.99", Main: debug.Module{Path: "github.com/cip11/cip11", Version: "v1.2.3"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"}, {Key: "vcs.time", Value: "2026-12-06T00:00:00Z"}}}
	want := "cip11 github.com/cip11/cip11 v1.2.3\ngo go1.99\nrevision abc123+dirty (2026-12-06T00:00:00Z)\n"
	if got := versionText(bi, true); got != want {
		t.Errorf("versionText = %q, want %q", got, want)
	}
	if code, _, _ := cli("version", "extra"); code != 2 {
		t.Errorf("cip11 version extra: exit %d, want 2", code)
	}
}

// Every subcommand's -h ends with an Example: section.
func TestHelpEndsWithExample(t *testing.T) {
	for _, cmd := range [][]string{{"devnet"}, {"genesis"}, {"validator"}, {"runner"}, {"reconfigure"}, {"reset"}, {"replay"},
		{"gen"}, {"vectors", "check"}, {"vectors", "gen"}, {"version"}} {
		code, out, _ := cli(append(cmd, "-h")...)
		if code != 0 {
			t.Errorf("%v -h: exit %d", cmd, code)
			continue
		}
		i := strings.LastIndex(out, "\nExample:\n")
		if i < 0 || !strings.Contains(out[i:], "  cip11 "+cmd[0]) {
			t.Errorf("%v -h does not end with an Example: section:\n%s", cmd, out)
		}
	}
}

// A missing genesis, key or home says to run cip11 genesis first and
// names the command line.
func TestMissingGenesisSaysRunGenesis(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"validator", "-genesis", filepath.Join(dir, "d", "genesis.json"), "-key", filepath.Join(dir, "d", "validator.key")}, "run `cip11 genesis -o " + filepath.Join(dir, "d") + "` first"},
		{[]string{"runner", "-genesis", filepath.Join(dir, "d", "genesis.json")}, "run `cip11 genesis -o " + filepath.Join(dir, "d") + "` first"},
		{[]string{"validator", "-home", filepath.Join(dir, "net", "v0")}, "run `cip11 genesis -validators N -o " + filepath.Join(dir, "net") + "` first"},
	} {
		code, _, errs := cli(c.args...)
		if code != 1 || !strings.Contains(errs, c.want) || !strings.Contains(errs, ErrNoGenesis.Error()) {
			t.Errorf("%v: exit %d, stderr %q, want 1 and %q", c.args, code, errs, c.want)
		}
	}
	if err := genesisFirst(errors.New("other"), "x"); errors.Is(err, ErrNoGenesis) {
		t.Errorf("genesisFirst wrapped an error that is not a missing file: %v", err)
	}
}
