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

// The simulated PostgreSQL servers: what password each accepts, so that a
// pod presenting another one fails as on a cluster.
//
//   - A server is a StatefulSet's container with POSTGRES_PASSWORD from a
//     Secret (the postgres image's initialisation), named by its StatefulSet
//     (the Service the clients dial). When it first starts under this
//     simulator it accepts that Secret's value at that time, and keeps
//     accepting it whatever the Secret later says, as an initialised data
//     directory does.
//   - A client is a container with a variable naming a known server of its
//     namespace (PGHOST=<server>, or a JDBC-like serverName = "<server>" in
//     a configuration variable) and a password variable (PGPASSWORD or a
//     name ending in _POSTGRES_PASSWORD) from a Secret. A client whose
//     password the server does not accept fails as its JVM or psql does:
//     its container waits in CrashLoopBackOff, its last state terminated
//     with the server's message (a Job's container: terminated, the Pod
//     Failed).
//   - A client that also presents NEW_PASSWORD from a Secret is the
//     password rotation (ALTER ROLE CURRENT_USER PASSWORD …): it succeeds
//     when the server accepts NEW_PASSWORD already, or accepts its
//     PGPASSWORD, and then the server accepts NEW_PASSWORD only.
//
// A client of a server this simulator has not seen start is not checked.
// The state is the process's: a restarted simulator learns a server's
// password again when it next sees the server's container start.
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
