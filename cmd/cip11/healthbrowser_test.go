package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserNetworkDashboard (issue 28 item 5): a network validator's
// dashboard in headless Chromium, against a four-validator process
// network with four runner processes. It shows the consensus facts (the
// latest block, three peers, every member connected and signing) and the
// health green; a runner whose links are to other validators of its
// Sub(R) (k = 3 of 4: this validator is not in it) is shown healthy,
// "elsewhere" (a peer reports it present), not red "never".
func TestBrowserNetworkDashboard(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four validators, four runners and Chromium")
	}
	var bin string
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		t.Skip("no chromium, chromium-browser or google-chrome on PATH (apt-get install chromium; .ci/run installs it)")
	}
	const runners = 4
	p := newProcNet(t, 4, runners)
	for i := range 4 {
		p.start(i)
	}
	p.waitAll([]int{0, 1, 2, 3}, 3, 120*time.Second)
	for i := range runners {
		start(t, "runner", "-genesis", filepath.Join(p.home(i), "cip11.json"), "-key", filepath.Join(p.dir, fmt.Sprintf("runner-%04d.key", i)),
			"-work", "20ms", "-log", "error")
	}
	// The validator with a runner linked only elsewhere: every runner
	// connected to the network (3 links), one of them not to it.
	type row struct {
		Address   string `json:"address"`
		Connected bool   `json:"connected"`
		Elsewhere bool   `json:"elsewhere"`
	}
	var at int
	var away string
	waitFor(t, "a validator whose dashboard shows a runner linked elsewhere", 60*time.Second, func() bool {
		for i := range 4 {
			var d struct {
				Runners []row `json:"runners"`
			}
			if getJSON(p.api(i)+"/dashboard.json", &d) != nil || len(d.Runners) != runners {
				continue
			}
			for _, r := range d.Runners {
				if !r.Connected && r.Elsewhere {
					at, away = i, r.Address
					return true
				}
			}
		}
		return false
	})
	addr, _ := hex.DecodeString(away)
	t.Logf("validator %d: runner %x is linked to other validators of its Sub(R)", at, addr)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.Flag("disable-gpu", true), chromedp.WindowSize(1400, 1000))...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	if err := chromedp.Do(bctx, chromedp.Navigate(p.api(at)+"/")); err != nil {
		t.Fatalf("navigate: %v", err)
	}
	wait := func(what, expr string, timeout time.Duration) {
		t.Helper()
		if _, err := chromedp.Run(bctx, chromedp.Poll[chromedp.Void](expr,
			chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(timeout))); err != nil {
			text, _ := chromedp.Run(bctx, chromedp.Evaluate[string](`document.body.innerText`))
			t.Fatalf("%s: %v\npage text:\n%s", what, err, text)
		}
	}
	wait("consensus facts", `document.body.dataset.state === 'live' && !document.getElementById('consensusPanel').hidden &&
		document.getElementById('peers').textContent === '3' && document.getElementById('catchingUp').textContent === 'no' &&
		Number(document.getElementById('latestHeight').textContent) >= 3 &&
		document.querySelectorAll('#validatorRows tr').length === 4 &&
		[...document.querySelectorAll('#validatorRows tr')].every(tr => tr.cells[3].textContent === 'yes' && !tr.classList.contains('bad')) &&
		document.querySelector('#validatorRows tr[data-index="`+strconv.Itoa(at)+`"]').cells[0].textContent.includes('(this)')`, 20*time.Second)
	wait("healthy", `document.body.dataset.health === 'ok' && document.getElementById('health').textContent === 'healthy'`, 10*time.Second)
	wait("the runner linked elsewhere shown healthy", `[...document.querySelectorAll('#runnerRows tr')].some(tr => tr.cells[0].textContent === '`+away+`' &&
		tr.dataset.health === 'ok' && !tr.classList.contains('bad') && tr.cells[1].textContent === 'elsewhere' &&
		tr.cells[3].textContent !== 'never' && getComputedStyle(tr.cells[0]).color !== 'rgb(255, 107, 107)')`, 20*time.Second)
	wait("no runner red", `document.querySelectorAll('#runnerRows tr').length === `+strconv.Itoa(runners)+` &&
		[...document.querySelectorAll('#runnerRows tr')].every(tr => tr.dataset.health === 'ok')`, 20*time.Second)
	// $CIP11_DASH_SCREENSHOTS/network.png, for looking at the page
	if dir := os.Getenv("CIP11_DASH_SCREENSHOTS"); dir != "" {
		png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, "network.png"), png, 0o644)
		}
		if err != nil {
			t.Logf("screenshot: %v", err)
		}
	}
}
