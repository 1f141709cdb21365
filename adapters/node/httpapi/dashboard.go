package httpapi

import (
	_ "embed" // dashboard assets
	"net/http"
)

// The dashboard page and its script, embedded at build time. No external
// resources: the script polls /dashboard.json every second and draws with
// the DOM and a canvas.
var (
	//go:embed dashboard.html
	dashboardHTML []byte
	//go:embed dashboard.js
	dashboardJS []byte
)

// dashboardCSP allows only this origin's script and data, and inline styles.
const dashboardCSP = "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'unsafe-inline'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// GET /
func (h *handler) dashboardPage(w http.ResponseWriter, _ *http.Request) {
	serveAsset(w, "text/html; charset=utf-8", dashboardHTML)
}

// GET /dashboard.js
func (h *handler) dashboardScript(w http.ResponseWriter, _ *http.Request) {
	serveAsset(w, "text/javascript; charset=utf-8", dashboardJS)
}

func serveAsset(w http.ResponseWriter, contentType string, body []byte) {
	own(w)
	hd := w.Header()
	hd.Set("Content-Type", contentType)
	hd.Set("Content-Security-Policy", dashboardCSP)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}
