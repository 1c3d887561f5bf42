// Package reporter is the spoke's side of membership: it computes the member cluster's
// capacity from its Nodes and Pods and writes it, with a heartbeat and workload counts, to the
// cluster's ClusterReport, which the hub mirrors into the MemberCluster's status.
package reporter
