package engine

// WithPlaintextSecrets has the engine run as engines before encryption at
// rest did: the migration tests start a data directory that way first.
func WithPlaintextSecrets(o *Options) { o.plaintextSecrets = true }

// EtcdURL is etcd's client URL (its certificate: pki/apiserver-etcd-client).
func (e *Engine) EtcdURL() string { return e.etcdURL }
