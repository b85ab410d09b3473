package sandbox

import "net"

// Owns tells whether hostport (127.0.0.1:port) is one of the network's own
// listeners: the outbound address policy of the embedded default allows
// these and nothing else by default.
func (n *Network) Owns(hostport string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	is := func(ln net.Listener) bool { return ln.Addr().String() == hostport }
	if is(n.scan.ln) {
		return true
	}
	for _, nd := range n.nodes {
		if is(nd.ledger.ln) || is(nd.app.ln) || is(nd.admin.ln) {
			return true
		}
	}
	return false
}
