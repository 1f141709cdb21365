package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// runVersion prints the module version, the Go version and, when the
// binary was built from a checkout, the VCS revision (and "+dirty" for
// uncommitted changes).
func runVersion(args []string, stdout, stderr io.Writer) int {
	c := newCommand("version", "", `
Print the cip11 module version (from the build information: "(devel)" for a
binary built from a checkout), the Go version and, when built from a
checkout, the VCS revision and its time. No positional arguments.`)
	if code, ok := c.parse(args, stdout, stderr); !ok {
		return code
	}
	if code, ok := c.nargs(stderr, 0, 0); !ok {
		return code
	}
	fmt.Fprint(stdout, versionText(debug.ReadBuildInfo()))
	return 0
}

// versionText formats what runVersion prints.
func versionText(bi *debug.BuildInfo, ok bool) string {
	mod, goVersion := "unknown", runtime.Version()
	var rev, at, dirty string
	if ok && bi != nil {
		mod = bi.Main.Path + " " + bi.Main.Version
		if bi.Main.Path == "" {
			mod = "github.com/cip11/cip11 " + bi.Main.Version
		}
		goVersion = bi.GoVersion
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				at = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = "+dirty"
				}
			}
		}
	}
	out := fmt.Sprintf("cip11 %s\ngo %s\n", mod, goVersion)
	if rev != "" {
		out += fmt.Sprintf("revision %s%s", rev, dirty)
		if at != "" {
			out += " (" + at + ")"
		}
		out += "\n"
	}
	return out
}
