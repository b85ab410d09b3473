package engine

import "strings"

// WithPlaintextSecrets has the engine run as engines before encryption at
// rest did: the migration tests start a data directory that way first.
func WithPlaintextSecrets(o *Options) { o.plaintextSecrets = true }

// EtcdURL is etcd's client URL (its certificate: pki/apiserver-etcd-client),
// as its first child was given it.
func (e *Engine) EtcdURL() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, a := range e.procs[0].args {
		if url, ok := strings.CutPrefix(a, "--listen-client-urls="); ok {
			return url
		}
	}
	return ""
}

// Done is closed by Stop.
func (e *Engine) Done() <-chan struct{} { return e.done }

// PIDs are the children's process ids by name (Spawn's too).
func (e *Engine) PIDs() map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]int{}
	for _, p := range e.procs {
		out[p.name] = p.current().cmd.Process.Pid
	}
	return out
}
