package devfleet

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Layout names what the state directory holds. Only these entries are ever removed, so a
// --state-dir that held something else keeps it.
type Layout struct {
	// Dir is the state directory.
	Dir string
}

// StateFile is fleet.json: the fleet's phase, clusters and error (see State).
func (l Layout) StateFile() string { return filepath.Join(l.Dir, "fleet.json") }

// PIDDir holds <cluster>-<component>.pid and supervisor.pid.
func (l Layout) PIDDir() string { return filepath.Join(l.Dir, "pids") }

// SupervisorPIDFile is the pid file of the process that runs the fleet (`dev up` in the
// foreground, or its detached supervisor).
func (l Layout) SupervisorPIDFile() string { return filepath.Join(l.PIDDir(), "supervisor.pid") }

// PIDFile is the pid file of one process of one cluster.
func (l Layout) PIDFile(cluster, component string) string {
	return filepath.Join(l.PIDDir(), cluster+"-"+component+".pid")
}

// LogDir holds every log: <cluster>-<component>.log, join-<member>.log, supervisor.log.
func (l Layout) LogDir() string { return filepath.Join(l.Dir, "logs") }

// SupervisorLog is where a detached supervisor writes its output.
func (l Layout) SupervisorLog() string { return filepath.Join(l.LogDir(), "supervisor.log") }

// KubeconfigDir holds the admin kubeconfigs <cluster>.kubeconfig.
func (l Layout) KubeconfigDir() string { return filepath.Join(l.Dir, "kubeconfigs") }

// Kubeconfig is the admin kubeconfig of one cluster.
func (l Layout) Kubeconfig(cluster string) string {
	return filepath.Join(l.KubeconfigDir(), cluster+".kubeconfig")
}

// ClustersDir is the local fleet's own state (etcd data, certificates).
func (l Layout) ClustersDir() string { return filepath.Join(l.Dir, "clusters") }

// SampleFile is a copy of the sample the fleet applied, to edit and re-apply.
func (l Layout) SampleFile() string { return filepath.Join(l.Dir, "sample.yaml") }

// TrafficSampleFile is a copy of the traffic sample a fleet with --traffic applied.
func (l Layout) TrafficSampleFile() string { return filepath.Join(l.Dir, "traffic-sample.yaml") }

// RaySampleFile is a copy of the sample a fleet with --ray applied.
func (l Layout) RaySampleFile() string { return filepath.Join(l.Dir, "ray-sample.yaml") }

// entries are everything Remove may delete.
func (l Layout) entries() []string {
	return []string{l.StateFile(), l.PIDDir(), l.LogDir(), l.KubeconfigDir(), l.ClustersDir(), l.SampleFile(), l.TrafficSampleFile(), l.RaySampleFile(), l.StateFile() + ".tmp"}
}

// Exists reports whether the state directory holds anything of a dev fleet.
func (l Layout) Exists() bool {
	for _, e := range l.entries() {
		if _, err := os.Lstat(e); err == nil {
			return true
		}
	}
	return false
}

// Remove deletes the state directory's entries, then the directory itself when nothing else is
// left in it.
func (l Layout) Remove() error {
	var errs []error
	for _, e := range l.entries() {
		if err := os.RemoveAll(e); err != nil {
			errs = append(errs, fmt.Errorf("removing %s: %w", e, err))
		}
	}
	if left, err := os.ReadDir(l.Dir); err == nil && len(left) == 0 {
		if err := os.Remove(l.Dir); err != nil {
			errs = append(errs, fmt.Errorf("removing %s: %w", l.Dir, err))
		}
	}
	return errors.Join(errs...)
}

// Phase is how far the fleet got.
type Phase string

// The phases of State.
const (
	// PhaseStarting: the supervisor is bringing the fleet up.
	PhaseStarting Phase = "starting"
	// PhaseReady: the sample RayService is Ready on the hub.
	PhaseReady Phase = "ready"
	// PhaseFailed: the fleet did not come up; Error says why, and it has been stopped.
	PhaseFailed Phase = "failed"
)

// ClusterInfo is how to reach one cluster.
type ClusterInfo struct {
	// Name is "hub" or the member's name.
	Name string `json:"name"`
	// Server is the API server's URL.
	Server string `json:"server"`
	// Kubeconfig is the admin kubeconfig's path.
	Kubeconfig string `json:"kubeconfig"`
}

// State is fleet.json: what `dev up --detach` waits for and `dev status` shows.
type State struct {
	// Phase is how far the fleet got.
	Phase Phase `json:"phase"`
	// Error says why the fleet failed.
	Error string `json:"error,omitempty"`
	// SupervisorPID is the process running the fleet.
	SupervisorPID int `json:"supervisorPID"`
	// Clusters are the hub, then the members.
	Clusters []ClusterInfo `json:"clusters"`
	// LogDir holds every log.
	LogDir string `json:"logDir"`
	// StartedAt is when the supervisor started.
	StartedAt time.Time `json:"startedAt"`
	// ReadyAt is when the sample RayService became Ready.
	ReadyAt *time.Time `json:"readyAt,omitempty"`
	// Traffic is the traffic path of a fleet started with --traffic.
	Traffic *TrafficInfo `json:"traffic,omitempty"`
}

// TrafficInfo is how traffic reaches a fleet started with --traffic.
type TrafficInfo struct {
	// GatewayURL is where the hub's Gateway gateway/fleet serves.
	GatewayURL string `json:"gatewayURL"`
	// ServeIPs are the members' load balancer addresses by member name.
	ServeIPs map[string]string `json:"serveIPs"`
	// Ray is set for a fleet started with --ray: the gateway answers on the host, from Ray.
	Ray bool `json:"ray,omitempty"`
}

// Cluster returns the named cluster's info.
func (s *State) Cluster(name string) (ClusterInfo, bool) {
	for _, c := range s.Clusters {
		if c.Name == name {
			return c, true
		}
	}
	return ClusterInfo{}, false
}

// WriteState writes s to path atomically (a reader never sees half a file).
func WriteState(path string, s *State) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding %s: %w", path, err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// ReadState reads fleet.json; the error wraps fs.ErrNotExist when there is none.
func ReadState(path string) (*State, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	s := &State{}
	if err := json.Unmarshal(data, s); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", path, err)
	}
	return s, nil
}

// readStateIfAny is ReadState with a missing file as nil, nil.
func readStateIfAny(path string) (*State, error) {
	s, err := ReadState(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return s, err
}
