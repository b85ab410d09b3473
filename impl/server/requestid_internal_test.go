package server

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"
)

// TestLogRequestIDs: a line logged with a request's context carries its id,
// once, also through WithAttrs and WithGroup; a line that names an id keeps
// its own; a line without a request has none.
func TestLogRequestIDs(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := slog.New(LogRequestIDs(slog.NewJSONHandler(&buf, nil)))
	ctx := context.WithValue(context.Background(), requestIDKey{}, "req-1")
	cases := []struct {
		name string
		emit func()
		want any
	}{
		{"request context", func() { log.ErrorContext(ctx, "failed") }, "req-1"},
		{"with attrs", func() { log.With("component", "x").WarnContext(ctx, "failed") }, "req-1"},
		{"named by the caller", func() { log.ErrorContext(ctx, "failed", "request_id", "own") }, "own"},
		{"no request", func() { log.Error("failed") }, nil},
	}
	for _, tc := range cases {
		buf.Reset()
		tc.emit()
		var line map[string]any
		if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
			t.Fatalf("%s: %v: %s", tc.name, err, buf.Bytes())
		}
		if got := line["request_id"]; got != tc.want {
			t.Errorf("%s: request_id got %v, want %v (%s)", tc.name, got, tc.want, buf.Bytes())
		}
	}
}
