package sandbox

import "net"

// Owns tells whether hostport is one of the network's listeners, which the
// embedded default's outbound address policy allows.
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
