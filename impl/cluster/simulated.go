// Package cluster is the gateway to the Kubernetes cluster that runs the
// validators: client-go in production, a simulated cluster persisted in the
// data directory for the embedded default.
package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// Simulated is the cluster of the embedded default. Its state lives in a
// directory so that it survives restarts.
type Simulated struct {
	dir string
}

// OpenSimulated opens (creating) the simulated cluster in dir.
func OpenSimulated(dir string) (*Simulated, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("simulated cluster: %w", err)
	}
	return &Simulated{dir: dir}, nil
}

// Ping tells whether the simulated cluster's state can be written.
func (s *Simulated) Ping(context.Context) error {
	f, err := os.CreateTemp(s.dir, ".ping-*")
	if err != nil {
		return fmt.Errorf("simulated cluster is not writable: %w", err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(filepath.Clean(name))
}
