package engine

// WithPlaintextSecrets has the engine run as engines before encryption at
// rest did: the migration tests start a data directory that way first.
func WithPlaintextSecrets(o *Options) { o.plaintextSecrets = true }

// EtcdURL is etcd's client URL (its certificate: pki/apiserver-etcd-client).
func (e *Engine) EtcdURL() string { return e.etcdURL }

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
