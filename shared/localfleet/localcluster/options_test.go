//go:build e2e

package localcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

// TestFixedPortLogDirAndOnStart checks the options rayfleet dev relies on: the API server on
// the given port, every log in LogDir named <cluster>-<component>.log, and OnStart told about
// every process, user processes included.
func TestFixedPortLogDirAndOnStart(t *testing.T) {
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	logDir := filepath.Join(t.TempDir(), "logs")
	var mu sync.Mutex
	started := map[string]int{}
	c, err := Start(context.Background(), Options{
		Name: "m1", APIServerPort: port, LogDir: logDir,
		OnStart: func(p *Process) {
			mu.Lock()
			defer mu.Unlock()
			started[p.Name] = p.PID()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	if want := fmt.Sprintf("https://127.0.0.1:%d", port); c.Host() != want || c.Config.Host != want {
		t.Errorf("Host() = %s, Config.Host = %s, want %s", c.Host(), c.Config.Host, want)
	}
	p, err := c.StartProcess("true", "/bin/true", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	mu.Lock()
	defer mu.Unlock()
	for _, proc := range append(c.Components(), p) {
		if started[proc.Name] != proc.PID() {
			t.Errorf("OnStart saw %s as pid %d, want %d", proc.Name, started[proc.Name], proc.PID())
		}
		if want := filepath.Join(logDir, "m1-"+proc.Name+".log"); proc.LogPath != want {
			t.Errorf("%s logs to %s, want %s", proc.Name, proc.LogPath, want)
		}
	}
	logs, _ := filepath.Glob(filepath.Join(logDir, "*.log"))
	for i := range logs {
		logs[i] = filepath.Base(logs[i])
	}
	slices.Sort(logs)
	if want := []string{"m1-etcd.log", "m1-kube-apiserver.log", "m1-true.log"}; !slices.Equal(logs, want) {
		t.Errorf("logs %v, want %v", logs, want)
	}
	if _, err := os.Stat(filepath.Join(c.Dir, "etcd.log")); !os.IsNotExist(err) {
		t.Errorf("a log in the state dir too: %v", err)
	}
}
