package main

import (
	"errors"
	"testing"
)

func TestSpokeNamespace(t *testing.T) {
	noFile := func(string) ([]byte, error) { return nil, errors.New("not in a cluster") }
	file := func(string) ([]byte, error) { return []byte("from-file\n"), nil }
	tests := []struct {
		name     string
		flag     string
		env      string
		readFile func(string) ([]byte, error)
		want     string
	}{
		{name: "the leader-election namespace first", flag: "rayfleet-system", env: "pod-ns", readFile: file, want: "rayfleet-system"},
		{name: "then the Pod's namespace from the chart's env", env: "pod-ns", readFile: file, want: "pod-ns"},
		{name: "then the service account's namespace file", readFile: file, want: "from-file"},
		{name: "outside a cluster, default", readFile: noFile, want: fallbackNamespace},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			getenv := func(k string) string {
				if k == "POD_NAMESPACE" {
					return tt.env
				}
				return ""
			}
			if got := spokeNamespace(tt.flag, getenv, tt.readFile); got != tt.want {
				t.Errorf("spokeNamespace = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestClaimName(t *testing.T) {
	host := func() (string, error) { return "rayfleet-spoke-7c9d-x2k4q", nil }
	noHost := func() (string, error) { return "", errors.New("no host name") }
	tests := []struct {
		name        string
		leaderElect bool
		hostname    func() (string, error)
		want        string
	}{
		{name: "with leader election, the replicas share the ID", leaderElect: true, hostname: host, want: "rayfleet-spoke.rayfleet.io"},
		{name: "without, each process is its own", hostname: host, want: "rayfleet-spoke.rayfleet.io/rayfleet-spoke-7c9d-x2k4q"},
		{name: "without, and no host name", hostname: noHost, want: "rayfleet-spoke.rayfleet.io"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := claimName(tt.leaderElect, "rayfleet-spoke.rayfleet.io", tt.hostname); got != tt.want {
				t.Errorf("claimName = %q, want %q", got, tt.want)
			}
		})
	}
}
