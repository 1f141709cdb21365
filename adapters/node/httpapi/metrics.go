package httpapi

import "github.com/prometheus/client_golang/prometheus"

var _ prometheus.Registerer = (*prometheus.Registry)(nil)
