package sandbox

import "strings"

// Owns tells whether hostport (127.0.0.1:port) is one of the network's own
// listeners: the outbound address policy of the embedded default allows
// these and nothing else by default.
func (n *Network) Owns(hostport string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	is := func(l *listener) bool { return l != nil && strings.TrimPrefix(l.url, "http://") == hostport }
	if is(n.scan) {
		return true
	}
	for _, nd := range n.nodes {
		if is(nd.ledger) || is(nd.app) || nd.admin != nil && nd.admin.addr == hostport {
			return true
		}
	}
	return false
}
