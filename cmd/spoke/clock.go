//go:build !faultinject

package main

import "k8s.io/utils/clock"

// heartbeatClock is the clock the ClusterReport heartbeat is stamped with: the machine's. A
// build with the faultinject tag can offset it (clock_faultinject.go).
func heartbeatClock() (clock.Clock, error) {
	return clock.RealClock{}, nil
}
