// Package reporter is the spoke's side of membership: it computes the member cluster's
// capacity from its Nodes and Pods and writes it, with a heartbeat and workload counts, to the
// cluster's ClusterReport, which the hub mirrors into the MemberCluster's status.
// Of the repository it imports only the fleet API in shared/: never hub/ (the hub reads the
// report; the spoke never calls the hub), shared/localfleet or, outside tests, shared/testing.
package reporter
