package sandbox

import "google.golang.org/grpc"

// NewAdminServer returns a gRPC server with validator name's admin services
// registered, not yet serving (tests serve it on a bufconn listener).
func (n *Network) NewAdminServer(name string) (*grpc.Server, error) {
	if _, err := n.node(name); err != nil {
		return nil, err
	}
	return n.adminServer(name), nil
}
