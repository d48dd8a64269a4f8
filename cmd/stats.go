package cmd

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/nereusctl/nereusctl/internal/store"
)

// statsDoc is the --stats report under -o json: one line on stderr (stdout
// keeps its one document). docs/json-schemas/stats.schema.json.
type statsDoc struct {
	SchemaVersion int       `json:"schema_version"`
	Stats         statsBody `json:"stats"`
}

type statsBody struct {
	// Requests are the store calls by verb (GET, HEAD, LIST, PUT, DELETE),
	// each try of a retried call counted.
	Requests store.Counts `json:"requests"`
	// Retries are the calls tried again (a transient failure, a conflict).
	Retries int64 `json:"retries"`
	// HTTP is present on s3://: what went over the wire.
	HTTP *statsHTTP `json:"http,omitempty"`
}

type statsHTTP struct {
	Requests      int64            `json:"requests"`
	Methods       map[string]int64 `json:"methods"`
	BytesSent     int64            `json:"bytes_sent"`
	BytesReceived int64            `json:"bytes_received"`
}

// isHTTPStore reports an s3:// backend under st's decorators.
func isHTTPStore(st store.Store) bool {
	for st != nil {
		if _, ok := st.(*store.S3); ok {
			return true
		}
		u, ok := st.(interface{ Unwrap() store.Store })
		if !ok {
			return false
		}
		st = u.Unwrap()
	}
	return false
}

// writeStats writes the --stats report to w: a small table, or under -o
// json one statsDoc line.
func (g *globals) writeStats(w io.Writer) {
	m := g.meter.Stats()
	body := statsBody{Requests: g.counter.Counts(), Retries: m.Retries}
	if g.http {
		for _, k := range []string{"GET", "HEAD", "PUT", "DELETE", "POST"} {
			m.Methods[k] += 0
		}
		body.HTTP = &statsHTTP{Requests: m.HTTP, Methods: m.Methods, BytesSent: m.BytesSent, BytesReceived: m.BytesReceived}
	}
	if g.json() {
		b, err := json.Marshal(statsDoc{SchemaVersion: SchemaVersion, Stats: body})
		if err == nil {
			fmt.Fprintf(w, "%s\n", b)
		}
		return
	}
	fmt.Fprintf(w, "requests: %s\n", body.Requests)
	fmt.Fprintf(w, "retries: %d\n", body.Retries)
	if h := body.HTTP; h != nil {
		fmt.Fprintf(w, "http: %s total=%d\n", m.MethodsString(), h.Requests)
		fmt.Fprintf(w, "bytes: sent=%d received=%d\n", h.BytesSent, h.BytesReceived)
	}
}
