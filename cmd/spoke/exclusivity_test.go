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
