package localfleet

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// StopHubAPIServer stops the hub's kube-apiserver (etcd and bin/hub keep running): the hub's
// storage goes away under a running bin/hub until StartHubAPIServer. bin/hub may exit
// meanwhile (a manager whose API server is gone can give up, or lose a leader lease), which
// Exited does not report until StartHubAPIServer.
func (f *Fleet) StopHubAPIServer() error {
	f.mu.Lock()
	hub := f.Hub
	if hub != nil {
		// The replicas' exits from now on are this fault's doing, as with KillHubReplica.
		if f.hubKilled == nil {
			f.hubKilled = map[int]bool{}
		}
		for i := range f.HubProcesses {
			f.hubKilled[i] = true
		}
	}
	f.mu.Unlock()
	if hub == nil {
		return errors.New("the fleet has no hub control plane")
	}
	hub.StopAPIServer()
	return nil
}

// StartHubAPIServer ends the outage StopHubAPIServer began: it starts the hub's kube-apiserver
// again on the same port, etcd and certificates (every kubeconfig of the hub stays valid) and
// waits until it serves. Every bin/hub replica that exited meanwhile is started again with its
// flags, as a supervisor (the kubelet, in a real hub) would restart it; restarted counts them.
// From then on Exited reports the replicas' exits again.
func (f *Fleet) StartHubAPIServer(ctx context.Context) (restarted int, err error) {
	f.mu.Lock()
	hub, procs := f.Hub, slices.Clone(f.HubProcesses)
	f.mu.Unlock()
	if hub == nil {
		return 0, errors.New("the fleet has no hub control plane")
	}
	if err := hub.StartAPIServer(ctx); err != nil {
		return 0, fmt.Errorf("hub: %w", err)
	}
	for i, proc := range procs {
		if proc == nil {
			continue
		}
		if exited, _ := proc.Exited(); exited {
			// StartHubReplica clears the replica's mark once it runs again.
			if err := f.StartHubReplica(ctx, i); err != nil {
				return restarted, fmt.Errorf("restarting bin/hub after its API server came back: %w", err)
			}
			restarted++
			continue
		}
		f.mu.Lock()
		delete(f.hubKilled, i)
		f.mu.Unlock()
	}
	return restarted, nil
}

// HubExits counts the bin/hub replicas that have exited now, whatever the cause (Exited leaves
// out the exits a fault such as StopHubAPIServer or KillHub caused).
func (f *Fleet) HubExits() int {
	f.mu.Lock()
	procs := slices.Clone(f.HubProcesses)
	f.mu.Unlock()
	n := 0
	for _, p := range procs {
		if p == nil {
			continue
		}
		if exited, _ := p.Exited(); exited {
			n++
		}
	}
	return n
}
