package main

// The control planes' CPU per phase (-sim and -floor): the hub's and the member's
// kube-apiserver and etcd, read from /proc like simhub's. On this machine the API servers,
// not the hub, may be what bounds placement; their CPU over the machine's cores is the least
// time placement can take whatever the hub does.

import (
	"fmt"
	"runtime"
	"time"

	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
)

// The control-plane processes, in cpUsage's order.
const (
	cpHubAPI = iota
	cpHubEtcd
	cpMemberAPI
	cpMemberEtcd
	numCP
)

// cpNames name the control-plane processes in the report.
var cpNames = [numCP]string{"hub kube-apiserver", "hub etcd", "member kube-apiserver", "member etcd"}

// cpUsage is the CPU time each control-plane process has used so far.
type cpUsage [numCP]time.Duration

// controlPlaneProcess is the process of c named name ("etcd" or "kube-apiserver").
func controlPlaneProcess(c *localcluster.Cluster, name string) (*localcluster.Process, error) {
	for _, p := range c.Components() {
		if p.Name == name {
			return p, nil
		}
	}
	return nil, fmt.Errorf("control plane %s has no %s process", c.Name, name)
}

// readControlPlanes reads the CPU time of both control planes' API servers and etcds.
func readControlPlanes(hub, member *localcluster.Cluster) (cpUsage, error) {
	var u cpUsage
	for i, p := range []struct {
		c    *localcluster.Cluster
		name string
	}{{hub, "kube-apiserver"}, {hub, "etcd"}, {member, "kube-apiserver"}, {member, "etcd"}} {
		proc, err := controlPlaneProcess(p.c, p.name)
		if err != nil {
			return u, err
		}
		pu, err := proc.Usage()
		if err != nil {
			return u, fmt.Errorf("CPU of %s: %w", cpNames[i], err)
		}
		u[i] = pu.CPU
	}
	return u, nil
}

// sub is u less before, process by process.
func (u cpUsage) sub(before cpUsage) cpUsage {
	var d cpUsage
	for i := range u {
		d[i] = u[i] - before[i]
	}
	return d
}

// total is the CPU time of all four processes.
func (u cpUsage) total() time.Duration {
	var t time.Duration
	for _, d := range u {
		t += d
	}
	return t
}

// cpPhase is the control planes' CPU in phase, from its start to its end (placement: from
// just before the first create). A phase that did not end has none.
func (r *simRun) cpPhase(phase int) cpUsage {
	if r.cp[phase].total() == 0 {
		return cpUsage{}
	}
	return r.cp[phase].sub(r.cpFrom[phase])
}

// machineFloor is the least wall time the control planes' CPU in placement takes on cores
// cores, were they busy with nothing else and perfectly parallel.
func machineFloor(cp cpUsage, cores int) time.Duration {
	return cp.total() / time.Duration(max(1, cores))
}

// cores is the machine's core count, as the floor divides by.
func cores() int { return runtime.NumCPU() }

// cpFigures are the report's rows of control-plane CPU: per phase its total and each process,
// then placement's machine floor. phases limits them to the phases a mode has.
func cpFigures(phases []int) []simFigure {
	names := [numPhases]string{"placement", "status phase", "steady state"}
	var figs []simFigure
	for _, ph := range phases {
		figs = append(figs, simFigure{name: "control-plane CPU, " + names[ph] + " (s)", format: "%.1f",
			value: func(r *simRun) float64 { return r.cpPhase(ph).total().Seconds() }})
		for i := range numCP {
			figs = append(figs, simFigure{name: "  " + cpNames[i] + " (s)", format: "%.1f",
				value: func(r *simRun) float64 { return r.cpPhase(ph)[i].Seconds() }})
		}
	}
	n := cores()
	return append(figs, simFigure{
		name: fmt.Sprintf("machine floor, placement: control-plane CPU / %d cores (s)", n), format: "%.1f",
		value: func(r *simRun) float64 { return machineFloor(r.cpPhase(phasePlace), n).Seconds() },
	})
}
