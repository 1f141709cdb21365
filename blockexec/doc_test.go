package blockexec_test

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/blockexec"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/selection/engine"
)

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDocMatchesCode keeps docs/chainlog.md in step with the code: the
// format version, the digest domain, the empty-state worked example, and the
// job-record layout (copied from JobRecord.Encode's doc comment) and size.
func TestDocMatchesCode(t *testing.T) {
	doc := readFile(t, "../docs/chainlog.md")
	if want := "# CIP-11 chain log, format version " + strconv.Itoa(chainlog.Version) + "\n"; !strings.HasPrefix(doc, want) {
		t.Errorf("doc title is not %q", want)
	}
	if !strings.Contains(doc, `{"format":"cip11-chainlog","version":`+strconv.Itoa(chainlog.Version)+",") {
		t.Error("doc header example has another version")
	}
	if !strings.Contains(doc, `"`+blockexec.DigestDomain+`"`) {
		t.Errorf("doc does not name the digest domain %q", blockexec.DigestDomain)
	}

	m := regexp.MustCompile("(?s)Worked example:.*?`([0-9a-f]{64})`").FindStringSubmatch(doc)
	if m == nil {
		t.Fatal("doc has no worked-example digest")
	}
	x, err := blockexec.New(chainlog.Header{Params: cip11.DefaultParams(), Reputation: chainlog.ReputationConfig{Normalizer: 1}}, blockexec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := x.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if got := d.String(); got != m[1] {
		t.Errorf("empty-state digest: doc says %s, the executor computes %s", m[1], got)
	}

	// The layout block of the doc is the Encode doc comment's.
	src := readFile(t, "../selection/engine/job.go")
	c := regexp.MustCompile(`(?s)// Encode returns the stored form[^\n]*\n//\n((?://\t[^\n]*\n)+)func \(r JobRecord\) Encode`).FindStringSubmatch(src)
	if c == nil {
		t.Fatal("JobRecord.Encode has no layout comment")
	}
	layout := strings.ReplaceAll(c[1], "//\t", "")
	if !strings.Contains(doc, "```\n"+layout+"```\n") {
		t.Errorf("doc's job-record layout differs from JobRecord.Encode's comment:\n%s", layout)
	}
	r := engine.JobRecord{Committee: make([]cip11.Address, 2), Delivered: make([]cip11.Address, 1), TimedOut: make([]cip11.Address, 1)}
	if n := len(r.Encode()); n != 149+20*4 || !strings.Contains(doc, "149 + 20·(|committee| + |delivered| + |timed_out|) bytes") {
		t.Errorf("a record with 4 addresses encodes to %d bytes; the doc must say 149 + 20·(…)", n)
	}
}
