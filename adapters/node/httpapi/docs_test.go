package httpapi

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/cip11/cip11/job"
)

// readDoc returns docs/http-api.md, the section from heading to the next
// heading of the same or a higher level ("" heading: the whole file).
func readDoc(t *testing.T, heading string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "http-api.md"))
	if err != nil {
		t.Fatalf("reading docs/http-api.md: %v", err)
	}
	doc := string(b)
	if heading == "" {
		return doc
	}
	i := strings.Index(doc, "\n"+heading)
	if i < 0 {
		t.Fatalf("docs/http-api.md has no heading %q", heading)
	}
	rest := doc[i+1+len(heading):]
	level := heading[:strings.IndexByte(heading, ' ')+1] // "### "
	for j := 0; j < len(rest); j++ {
		if rest[j] != '\n' || !strings.HasPrefix(rest[j+1:], "#") {
			continue
		}
		line := rest[j+1:]
		hashes := len(line) - len(strings.TrimLeft(line, "#"))
		if hashes <= len(level)-1 {
			return rest[:j]
		}
	}
	return rest
}

// docs/http-api.md documents every job state, event kind and failure kind
// the node emits (a table row each, in its own section), so that a new
// constant cannot ship undocumented.
func TestDocsListEveryStateAndKind(t *testing.T) {
	row := func(section, name string) {
		t.Helper()
		if !strings.Contains(readDoc(t, section), "| `"+name+"` |") {
			t.Errorf("docs/http-api.md section %q has no table row for `%s`", section, name)
		}
	}
	for _, s := range job.States() {
		row("#### Job states", string(s))
	}
	for _, k := range job.EventKinds() {
		row("#### Event kinds", string(k))
	}
	for _, r := range job.ExpiredReasons() {
		row("#### Expired reasons", string(r))
	}
	for _, k := range FailureKinds() {
		row("### GET /dashboard.json", string(k))
	}
	// and the section lists no state the code does not have
	states := readDoc(t, "#### Job states")
	if n := strings.Count(states, "\n| `"); n != len(job.States()) {
		t.Errorf("job states section has %d rows, the code %d states", n, len(job.States()))
	}
	if n := strings.Count(readDoc(t, "#### Event kinds"), "\n| `"); n != len(job.EventKinds()) {
		t.Errorf("event kinds section has %d rows, the code %d kinds", n, len(job.EventKinds()))
	}
}

// docs/http-api.md states the limits the handler enforces with the values
// the code has.
func TestDocsStateTheLimits(t *testing.T) {
	doc := readDoc(t, "")
	for _, want := range []string{
		fmt.Sprintf("`DefaultMaxBodyBytes` = 1 MiB = %d", DefaultMaxBodyBytes),
		fmt.Sprintf("`MaxDashboardBlocks` = %d", MaxDashboardBlocks),
		fmt.Sprintf("`MaxDashboardSamples` = %d", MaxDashboardSamples),
		fmt.Sprintf("`MaxDashboardRunners` = %d", MaxDashboardRunners),
		fmt.Sprintf("`MaxDashboardFailures` = %d", MaxDashboardFailures),
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("docs/http-api.md lacks %q", want)
		}
	}
	// every Dashboard and Totals JSON key is documented
	for _, key := range []string{"now", "started_at", "totals", "failures", "runners", "accepted", "push_failed",
		"soft_failures", "hard_failures", "reselections", "refused", "restarts", "pings_ok", "pings_rejected",
		"last_ping_height", "in_flight", "last_outcome", "last_outcome_height"} {
		if !strings.Contains(doc, "`"+key+"`") {
			t.Errorf("docs/http-api.md does not document `%s`", key)
		}
	}
}

// docs/http-api.md documents every JSON key of GET /status, GET /healthz
// and the dashboard's runner rows (each as `key`), so that a new health
// field cannot ship undocumented; and the /healthz section names every
// health status.
func TestDocsEveryStatusAndHealthKey(t *testing.T) {
	doc := readDoc(t, "")
	for _, v := range []any{Status{}, ValidatorHealth{}, Health{}, RunnerRow{}} {
		rt := reflect.TypeOf(v)
		for i := range rt.NumField() {
			key, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
			if key != "" && key != "-" && !strings.Contains(doc, "`"+key+"`") {
				t.Errorf("docs/http-api.md does not document %s's `%s`", rt.Name(), key)
			}
		}
	}
	hz := readDoc(t, "### GET /healthz")
	for _, s := range []string{HealthOK, HealthFailed, HealthStalled, HealthCatchingUp} {
		if !strings.Contains(hz, "`"+s+"`") {
			t.Errorf("the GET /healthz section does not name status `%s`", s)
		}
	}
}
