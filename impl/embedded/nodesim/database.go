package nodesim

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// databases are the simulated PostgreSQL servers and the password each
// accepts, so that a pod presenting another one fails as on a cluster
// (docs/decisions.md, "Database passwords are checked").
type databases struct {
	mu       sync.Mutex
	accepted map[string][32]byte // namespace/server → hash of the password it accepts
}

const (
	serverPasswordVar = "POSTGRES_PASSWORD"
	// NewPasswordVar is the rotation's new password (see databases).
	NewPasswordVar = "NEW_PASSWORD"
)

// secretValue is the value a Secret key reference names, read from the API
// server (the cache holds no values); false when it cannot be read.
func (s *Simulator) secretValue(ctx context.Context, ns string, ref *corev1.EnvVarSource) ([32]byte, bool) {
	if ref == nil || ref.SecretKeyRef == nil {
		return [32]byte{}, false
	}
	sec := &corev1.Secret{}
	if err := s.api.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.SecretKeyRef.Name}, sec); err != nil {
		return [32]byte{}, false
	}
	v, ok := sec.Data[ref.SecretKeyRef.Key]
	return sha256.Sum256(v), ok
}

func envSource(c *corev1.Container, match func(name string) bool) *corev1.EnvVarSource {
	for _, e := range c.Env {
		if match(e.Name) && e.ValueFrom != nil {
			return e.ValueFrom
		}
	}
	return nil
}

// serverStarts records the password a server accepts when its container
// c first starts under this simulator.
func (s *Simulator) serverStarts(ctx context.Context, p *corev1.Pod, c *corev1.Container) {
	set := owner(p, "apps/v1", "StatefulSet")
	ref := envSource(c, func(n string) bool { return n == serverPasswordVar })
	if set == "" || ref == nil {
		return
	}
	key := p.Namespace + "/" + set
	s.db.mu.Lock()
	_, known := s.db.accepted[key]
	s.db.mu.Unlock()
	if known {
		return
	}
	h, ok := s.secretValue(ctx, p.Namespace, ref)
	if !ok {
		return // the kubelet's rules keep the container waiting
	}
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	if _, known := s.db.accepted[key]; !known {
		s.db.accepted[key] = h
	}
}

// serverOf is the known server c's environment names ("" for none).
func (s *Simulator) serverOf(ns string, c *corev1.Container) string {
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	for key := range s.db.accepted {
		server, found := strings.CutPrefix(key, ns+"/")
		if !found {
			continue
		}
		for _, e := range c.Env {
			if e.Value == server || strings.Contains(e.Value, fmt.Sprintf("serverName = %q", server)) {
				return key
			}
		}
	}
	return ""
}

// authError is the server's refusal of client c ("" when it accepts c, or
// c is no client of a known server); a rotation that succeeds changes the
// password the server accepts.
func (s *Simulator) authError(ctx context.Context, p *corev1.Pod, c *corev1.Container) string {
	key := s.serverOf(p.Namespace, c)
	password := envSource(c, func(n string) bool { return n == "PGPASSWORD" || strings.HasSuffix(n, "_POSTGRES_PASSWORD") })
	if key == "" || password == nil {
		return ""
	}
	presented, ok := s.secretValue(ctx, p.Namespace, password)
	if !ok {
		return "" // the kubelet's rules keep the container waiting
	}
	next, rotates := s.secretValue(ctx, p.Namespace, envSource(c, func(n string) bool { return n == NewPasswordVar }))
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	switch accepted := s.db.accepted[key]; {
	case rotates && accepted == next:
		return ""
	case accepted == presented:
		if rotates {
			s.db.accepted[key] = next
		}
		return ""
	}
	return fmt.Sprintf("FATAL: password authentication failed for user %q", databaseUser(c))
}

// databaseUser is the user c's environment names (PGUSER, *_POSTGRES_USER),
// else postgres.
func databaseUser(c *corev1.Container) string {
	for _, e := range c.Env {
		if e.Value != "" && (e.Name == "PGUSER" || strings.HasSuffix(e.Name, "_POSTGRES_USER")) {
			return e.Value
		}
	}
	return "postgres"
}
