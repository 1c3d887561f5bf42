package devfleet

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

func TestStateRoundTrip(t *testing.T) {
	l := Layout{Dir: t.TempDir()}
	ready := time.Date(2026, 5, 4, 3, 2, 1, 0, time.UTC)
	tests := []struct {
		name  string
		state State
	}{
		{name: "starting", state: State{Phase: PhaseStarting, SupervisorPID: 7, LogDir: l.LogDir(), StartedAt: ready.Add(-time.Minute),
			Clusters: []ClusterInfo{{Name: HubName, Server: "https://127.0.0.1:16443", Kubeconfig: l.Kubeconfig(HubName)}}}},
		{name: "ready", state: State{Phase: PhaseReady, SupervisorPID: 7, StartedAt: ready.Add(-time.Minute), ReadyAt: &ready}},
		{name: "failed", state: State{Phase: PhaseFailed, Error: "etcd: exited\nlast lines", StartedAt: ready}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := WriteState(l.StateFile(), &tt.state); err != nil {
				t.Fatal(err)
			}
			got, err := ReadState(l.StateFile())
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, tt.state) {
				t.Errorf("ReadState = %+v, want %+v", *got, tt.state)
			}
			if _, err := os.Stat(l.StateFile() + ".tmp"); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("temporary file left behind: %v", err)
			}
		})
	}
	if _, err := ReadState(filepath.Join(l.Dir, "none.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadState of a missing file: %v, want fs.ErrNotExist", err)
	}
}

// TestLayoutRemoveKeepsForeignFiles checks that Remove deletes what a dev fleet writes and
// nothing else: a --state-dir pointed at a directory with other files keeps them.
func TestLayoutRemoveKeepsForeignFiles(t *testing.T) {
	tests := []struct {
		name        string
		foreign     bool
		wantDirGone bool
	}{
		{name: "only ours", wantDirGone: true},
		{name: "with someone else's file", foreign: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := Layout{Dir: filepath.Join(t.TempDir(), "state")}
			for _, d := range []string{l.PIDDir(), l.LogDir(), l.KubeconfigDir(), filepath.Join(l.ClustersDir(), "hub")} {
				mkdir(t, d)
			}
			files := []string{l.StateFile(), l.SupervisorPIDFile(), l.SupervisorLog(), l.Kubeconfig(HubName), l.SampleFile()}
			if tt.foreign {
				files = append(files, filepath.Join(l.Dir, "notes.txt"))
			}
			for _, f := range files {
				if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if !l.Exists() {
				t.Fatal("Exists() = false with a full state dir")
			}
			if err := l.Remove(); err != nil {
				t.Fatal(err)
			}
			if l.Exists() {
				t.Error("Exists() = true after Remove")
			}
			_, err := os.Stat(l.Dir)
			if gone := errors.Is(err, fs.ErrNotExist); gone != tt.wantDirGone {
				t.Errorf("state dir gone = %v, want %v", gone, tt.wantDirGone)
			}
			if tt.foreign {
				if _, err := os.Stat(filepath.Join(l.Dir, "notes.txt")); err != nil {
					t.Errorf("foreign file removed: %v", err)
				}
			}
		})
	}
}
