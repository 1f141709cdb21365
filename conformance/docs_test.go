package conformance

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestVectorsDocCoversEveryFunctionAndError keeps docs/vectors.md complete
// for implementers who never read Go: every vector file has a section
// "### `function` — spec" naming its spec sections, and that section names
// in backquotes every field key the file's vectors use (a nested key may be
// written as a path, `record.job_id`) and every sentinel they carry ("error"
// values and receipt verdicts). No section may describe a function that has
// no file.
func TestVectorsDocCoversEveryFunctionAndError(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "vectors.md"))
	if err != nil {
		t.Fatal(err)
	}
	sections := docSections(string(doc))
	files, err := filepath.Glob(filepath.Join(vectorDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no vector files: %v", err)
	}
	seen := map[string]bool{}
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var file File
		if err := json.Unmarshal(b, &file); err != nil {
			t.Fatal(err)
		}
		seen[file.Function] = true
		sec, ok := sections[file.Function]
		if !ok {
			t.Errorf("docs/vectors.md has no section \"### `%s`\"", file.Function)
			continue
		}
		if heading, _, _ := strings.Cut(sec, "\n"); !strings.Contains(heading, file.Spec) {
			t.Errorf("%s: heading %q does not name spec %q", file.Function, heading, file.Spec)
		}
		keys, errs := map[string]bool{}, map[string]bool{}
		for _, raw := range file.Vectors {
			var v any
			if err := json.Unmarshal(raw, &v); err != nil {
				t.Fatal(err)
			}
			collectDocTerms(v, keys, errs)
		}
		for _, k := range sortedKeys(keys) {
			if k == "name" || k == "error" {
				continue // common to every file, documented under "File format"
			}
			if !strings.Contains(sec, "`"+k+"`") && !strings.Contains(sec, "."+k+"`") {
				t.Errorf("%s: field `%s` is not documented in its section", file.Function, k)
			}
		}
		for _, e := range sortedKeys(errs) {
			if !strings.Contains(sec, "`"+e+"`") {
				t.Errorf("%s: error `%s` is not documented in its section", file.Function, e)
			}
		}
	}
	for name := range sections {
		if !seen[name] {
			t.Errorf("docs/vectors.md documents %q, which has no vector file", name)
		}
	}
}

var (
	sentinelName = regexp.MustCompile(`^Err[A-Z][A-Za-z0-9]*$`)
	hexMapKey    = regexp.MustCompile(`^[0-9a-f]{64}$`) // data (a job_id), not a field name
)

// collectDocTerms adds every object key in v to keys and every sentinel
// name among its string values to errs.
func collectDocTerms(v any, keys, errs map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if !hexMapKey.MatchString(k) {
				keys[k] = true
			}
			collectDocTerms(e, keys, errs)
		}
	case []any:
		for _, e := range x {
			collectDocTerms(e, keys, errs)
		}
	case string:
		if sentinelName.MatchString(x) {
			errs[x] = true
		}
	}
}

// docSections splits the doc at "### `name`" headings; each section runs
// from its heading line to the next heading of level 2 or 3.
func docSections(doc string) map[string]string {
	out := map[string]string{}
	var name string
	var body strings.Builder
	flush := func() {
		if name != "" {
			out[name] = body.String()
		}
		name = ""
		body.Reset()
	}
	for _, line := range strings.SplitAfter(doc, "\n") {
		if strings.HasPrefix(line, "## ") || strings.HasPrefix(line, "### ") {
			flush()
			if rest, ok := strings.CutPrefix(line, "### `"); ok {
				name, _, _ = strings.Cut(rest, "`")
			}
		}
		if name != "" {
			body.WriteString(line)
		}
	}
	flush()
	return out
}
