// Package httpapi is the validator node's HTTP API: JSON endpoints for job
// submission and inspection, the §14 poll fallback, the §10.3 `/submit`
// transaction-admission path, node status, Prometheus metrics and a live
// dashboard page.
//
// The package knows nothing about the node itself. The node implements
// [Backend] and hands it to [NewHandler]; it reports what it does through a
// [Metrics] built with [PrometheusMetrics] (or [NopMetrics]). docs/http-api.md documents every
// endpoint, body, status code and metric name.
//
// Wire conventions (DECISIONS D18): hashes, addresses and byte strings are
// lowercase hex without 0x; every u64 height, nonce or epoch is a decimal
// string; small counts are JSON numbers. Every response, errors included, is
// application/json (except /metrics, the dashboard page and its script); an
// error body is {"error":"…"}.
//
// The package holds no state besides its exported sentinel errors and its
// embedded dashboard assets.
package httpapi
