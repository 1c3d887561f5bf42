package main

import (
	"flag"
	"io"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rayfleet/rayfleet/shared/manageropts"
)

func TestFlagDefaults(t *testing.T) {
	var f flags
	fs := flag.NewFlagSet("hub", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	bindFlags(fs, &f)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if f.hubNamespace != "rayfleet-system" || f.heartbeatTimeout != 40*time.Second || f.resync != 10*time.Second {
		t.Errorf("defaults: hub namespace %q, heartbeat timeout %s, resync %s", f.hubNamespace, f.heartbeatTimeout, f.resync)
	}
	if err := fs.Parse([]string{"--hub-namespace=fleet", "--heartbeat-timeout=1m", "--resync=30s"}); err != nil {
		t.Fatal(err)
	}
	if f.hubNamespace != "fleet" || f.heartbeatTimeout != time.Minute || f.resync != 30*time.Second {
		t.Errorf("parsed: hub namespace %q, heartbeat timeout %s, resync %s", f.hubNamespace, f.heartbeatTimeout, f.resync)
	}
}

func TestRateLimitFlags(t *testing.T) {
	tests := []struct {
		args                  []string
		qps, memberQPS        float64
		burst, memberBurstArg int
	}{
		{nil, manageropts.DefaultQPS, defaultMemberQPS, manageropts.DefaultBurst, defaultMemberBurst},
		{[]string{"--kube-api-qps=50", "--kube-api-burst=60", "--member-api-qps=-1", "--member-api-burst=7"}, 50, -1, 60, 7},
	}
	for _, tt := range tests {
		var f flags
		fs := flag.NewFlagSet("hub", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		bindFlags(fs, &f)
		if err := fs.Parse(tt.args); err != nil {
			t.Fatal(err)
		}
		if f.manager.QPS != tt.qps || f.manager.Burst != tt.burst || f.memberQPS != tt.memberQPS || f.memberBurst != tt.memberBurstArg {
			t.Errorf("%v: qps %v burst %d member qps %v burst %d", tt.args, f.manager.QPS, f.manager.Burst, f.memberQPS, f.memberBurst)
		}
	}
}

func TestCacheOptions(t *testing.T) {
	tests := []struct {
		name           string
		watch          []string
		wantNamespaces []string
	}{
		{name: "all namespaces"},
		{name: "some namespaces", watch: []string{"a", "b"}, wantNamespaces: []string{"a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := cacheOptions(tt.watch, "fleet")
			if len(opts.DefaultNamespaces) != len(tt.wantNamespaces) {
				t.Errorf("namespaces = %v, want %v", opts.DefaultNamespaces, tt.wantNamespaces)
			}
			for _, ns := range tt.wantNamespaces {
				if _, ok := opts.DefaultNamespaces[ns]; !ok {
					t.Errorf("namespace %s not cached", ns)
				}
			}
			var secretOpts []string
			for obj, by := range opts.ByObject {
				if _, ok := obj.(*corev1.Secret); ok {
					for ns := range by.Namespaces {
						secretOpts = append(secretOpts, ns)
					}
				}
			}
			if len(secretOpts) != 1 || secretOpts[0] != "fleet" {
				t.Errorf("Secrets cached in %v, want only the hub namespace", secretOpts)
			}
		})
	}
}

// TestManagerOptions checks what the hub adds to the shared manager options: the Lease lives
// in the hub namespace unless --leader-election-namespace says otherwise, and the worker count
// reaches the controllers.
func TestManagerOptions(t *testing.T) {
	tests := []struct {
		name          string
		args          []string
		wantNamespace string
		wantWorkers   int
	}{
		{name: "defaults", wantNamespace: "rayfleet-system", wantWorkers: 16},
		{name: "another hub namespace", args: []string{"--hub-namespace=fleet"}, wantNamespace: "fleet", wantWorkers: 16},
		{
			name: "an explicit lease namespace", args: []string{"--leader-election-namespace=sys", "--max-concurrent-reconciles=3"},
			wantNamespace: "sys", wantWorkers: 3,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f flags
			fs := flag.NewFlagSet("hub", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			bindFlags(fs, &f)
			if err := fs.Parse(append([]string{"--leader-elect"}, tt.args...)); err != nil {
				t.Fatal(err)
			}
			opts := managerOptions(f, nil, nil)
			if !opts.LeaderElection || opts.LeaderElectionID != "rayfleet-hub.rayfleet.io" || opts.LeaderElectionNamespace != tt.wantNamespace {
				t.Errorf("leader election %v, Lease %s/%s; want true, %s/rayfleet-hub.rayfleet.io",
					opts.LeaderElection, opts.LeaderElectionNamespace, opts.LeaderElectionID, tt.wantNamespace)
			}
			if opts.Controller.MaxConcurrentReconciles != tt.wantWorkers {
				t.Errorf("MaxConcurrentReconciles = %d, want %d", opts.Controller.MaxConcurrentReconciles, tt.wantWorkers)
			}
		})
	}
}
