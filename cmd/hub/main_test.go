package main

import (
	"flag"
	"io"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
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
		{nil, defaultQPS, defaultMemberQPS, defaultBurst, defaultMemberBurst},
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
		if f.qps != tt.qps || f.burst != tt.burst || f.memberQPS != tt.memberQPS || f.memberBurst != tt.memberBurstArg {
			t.Errorf("%v: qps %v burst %d member qps %v burst %d", tt.args, f.qps, f.burst, f.memberQPS, f.memberBurst)
		}
	}
}

func TestCacheOptions(t *testing.T) {
	tests := []struct {
		name           string
		watch          string
		wantNamespaces []string
		wantErr        bool
	}{
		{name: "all namespaces", watch: ""},
		{name: "some namespaces", watch: "a, b", wantNamespaces: []string{"a", "b"}},
		{name: "empty entry", watch: "a,,b", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts, err := cacheOptions(tt.watch, "fleet")
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
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
