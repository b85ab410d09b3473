// Package embedded holds the embedded default's stand-ins for a cluster and
// a network: engine (etcd, kube-apiserver and kube-controller-manager as
// child processes on loopback), nodesim (scheduler and kubelet of one
// simulated node) and sandbox (each validator's simulated upstreams). They
// never run on a real cluster: there the same controllers and gateway talk
// to the cluster's API server, nodes and the validators' own nodes.
package embedded
